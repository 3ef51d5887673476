"""QDQ models (QuantizeLinear -> DequantizeLinear pairs, integer weights behind DequantizeLinear) imported onto
exact fixed types: hlsfuse's reference against onnxruntime, bit for bit, for models written with onnx.helper and
for models quantized by onnxruntime's quantize_static whose scales are then rounded to powers of two; C and RTL
simulation against the reference on the same frames."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
ort = need("onnxruntime")

from onnx_build import feeds  # noqa: E402
from onnx_zoo import cnn, mlp  # noqa: E402
from quant_build import Net, compiled, frames, ort_run, pow2_scales, qdq_cnn, qdq_mlp, static_quantized  # noqa: E402

from hlsfuse import HlsfuseError, reference  # noqa: E402
from hlsfuse.frontend.onnx import ScaleApproximation, from_onnx, to_graph_layout  # noqa: E402


def assert_matches_onnxruntime(proto, graph, inputs, optimized=False):
    out = proto.graph.output[0].name
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]) if optimized \
        else None
    for frame in inputs:
        want = session.run([out], frame)[0] if optimized else ort_run(proto, frame)[out]
        got = reference.run(graph, to_graph_layout(graph, frame))[out]
        assert np.array_equal(got, want), (got, want)


@pytest.fixture(scope="module")
def static(tmp_path_factory):
    """The zoo's MLP and CNN quantized by quantize_static (per-channel weights), as it wrote them."""
    models = {}
    for build in (mlp, cnn):
        proto = build()
        samples = [feeds(proto, seed=s) for s in range(8)]
        models[build.__name__] = static_quantized(proto, tmp_path_factory.mktemp(build.__name__), samples)
    return models


# --------------------------------------------------------------------------
# Whole models against onnxruntime
# --------------------------------------------------------------------------


@pytest.mark.parametrize("build", [qdq_mlp, lambda: qdq_mlp(kind=np.uint8, zero=100), qdq_cnn],
                         ids=["mlp", "mlp_uint8_zero_point", "cnn"])
def test_models_written_with_onnx_helper_are_bit_exact_with_onnxruntime(build):
    proto = build()
    graph = from_onnx(proto)
    assert max(graph.types[n.name].dtype.width for n in graph.nodes) < 24  # onnxruntime's float32 is exact too
    assert_matches_onnxruntime(proto, graph, frames(proto, 8))


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_quantize_static_models_with_power_of_two_scales_are_bit_exact(static, name):
    proto = pow2_scales(static[name])
    graph = from_onnx(proto)
    inputs = [feeds(proto, seed=100 + s) for s in range(8)]
    assert_matches_onnxruntime(proto, graph, inputs)
    assert_matches_onnxruntime(proto, graph, inputs, optimized=True)  # its fused integer kernels agree too


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_quantize_static_float_scales_are_exact_or_approximated(static, name):
    from hlsfuse.frontend.onnx import to_model_outputs

    proto = static[name]
    exact = from_onnx(proto)
    for seed in range(3):
        frame = feeds(proto, seed=seed)
        got = to_model_outputs(exact, reference.run(exact, to_graph_layout(exact, frame)))["output"]
        assert np.array_equal(got, ort_run(proto, frame)["output"])
    if name == "mlp":
        return
    with pytest.warns(ScaleApproximation) as caught:
        graph = from_onnx(proto, approximate_scales=True)
    said = {str(w.message) for w in caught}
    assert all(" approximated by the nearest power of two " in s and "(relative error up to 0." in s for s in said)
    # approximated, the model is still close to onnxruntime's (the scales moved by up to ~41%)
    frame = feeds(proto, seed=3)
    got = reference.run(graph, to_graph_layout(graph, frame))["output"]
    want = ort_run(proto, frame)["output"]
    assert np.abs(got - want).max() < 0.5 * np.abs(want).max()


def test_the_types_are_the_quantizers():
    graph = from_onnx(qdq_cnn())
    types = {name: str(t.dtype) for name, t in graph.types.items()}
    # uint8 with zero point 128 is the integer range [-128, 127] less nothing: a plain signed type, no clip
    assert types["x"] == "fixed<8,3,RND_CONV,SAT>"
    assert types["r1q"] == "ufixed<8,3,RND_CONV,SAT>"
    consts = {c.name: c for c in graph.constants}
    assert consts["w1q"].type.dtype.frac == 6  # per-axis scales 2^-4..2^-6: the finest grid
    assert str(consts["b1q"].type.dtype).startswith("fixed<") and consts["b1q"].type.dtype.frac == 12
    graph = from_onnx(qdq_mlp(kind=np.uint8, zero=100))
    assert str(graph.types["x"].dtype) == "fixed<9,5,RND_CONV,SAT>"  # [-100, 155] in 9 bits, then a clip
    assert graph.nodes[0].op == "clip" and graph.nodes[0].name == "xq"


# --------------------------------------------------------------------------
# What is refused
# --------------------------------------------------------------------------


def refused(proto) -> str:
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_integer_tensors_are_only_read_by_dequantize_linear():
    n = Net()
    n.op("Relu", [n.op("QuantizeLinear", ["x", n.const("s", np.float32(0.25)), n.const("z", np.int8(0))], "q")], "y")
    assert "node 'q' (QuantizeLinear): output 'q' must feed DequantizeLinear nodes only" in refused(
        n.model({"x": [1, 4]}, "y", [1, 4], qonnx=False))
    n = Net()
    n.op("DequantizeLinear", [n.op("Relu", ["x"], "r"), n.const("s", np.float32(0.25))], "y")
    assert "node 'y' (DequantizeLinear): input 'r' must be a constant or the output of a QuantizeLinear" in refused(
        n.model({"x": [1, 4]}, "y", [1, 4], qonnx=False))


def test_a_pair_must_agree():
    n = Net()
    q = n.op("QuantizeLinear", ["x", n.const("s", np.float32(0.25)), n.const("z", np.int8(0))], "q")
    n.op("DequantizeLinear", [q, n.const("s2", np.float32(0.5)), "z"], "y")
    assert "node 'y' (DequantizeLinear): scale and zero point must be those of QuantizeLinear 'q'" in refused(
        n.model({"x": [1, 4]}, "y", [1, 4], qonnx=False))


# --------------------------------------------------------------------------
# C and RTL simulation
# --------------------------------------------------------------------------


@pytest.mark.gxx
def test_csim_of_the_qdq_mlp_matches_onnxruntime(tmp_path):
    from hls_support import csim_both

    out, graph, inputs = compiled(tmp_path, qdq_mlp(kind=np.uint8, zero=100), "hls", assert_matches_onnxruntime)
    result = csim_both(out, inputs=inputs, graph=graph)
    assert result.passed and result.frames == 3, result.report()


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_rtlsim_of_the_qdq_cnn_matches_onnxruntime(tmp_path):
    from hlsfuse.sim.rtlsim import rtlsim

    out, graph, inputs = compiled(tmp_path, qdq_cnn(), "verilog", assert_matches_onnxruntime)
    result = rtlsim(out, inputs=inputs, frames=3, graph=graph)
    assert result.passed, result.report()


def test_a_constant_quantized_by_quantize_linear_folds_per_axis():
    n = Net()
    w = np.array([[-1.0, 9.0], [2.0, 0.1]], np.float32)
    q = n.op("QuantizeLinear", [n.const("w", w), n.const("s", np.array([0.25, 0.0625], np.float32)),
                                n.const("z", np.array([-128, 3], np.int8))], "q", axis=1)
    wq = n.op("DequantizeLinear", [q, "s", "z"], "wq", axis=1)
    n.op("MatMul", [n.qdq("x", "xq", 2.0 ** -3), wq], "y")
    proto = n.model({"x": [1, 2]}, "y", [1, 2], qonnx=False)
    graph = from_onnx(proto)
    # column 0: zero point -128 leaves [0, 255] steps of 1/4; column 1: [-131, 124] steps of 1/16
    (weights,) = [c.values.T.tolist() for c in graph.constants]
    assert weights == [[0.0, 7.75], [2.0, 0.125]]
    assert_matches_onnxruntime(proto, graph, frames(proto, 4))
