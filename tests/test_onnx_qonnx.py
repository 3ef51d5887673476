"""QONNX models (Quant, BipolarQuant, Trunc in the qonnx domain) imported onto exact fixed types:
hlsfuse's reference against qonnx's own execution (the ``qonnx`` package), bit for bit wherever
qonnx's float32 arithmetic is itself exact (every node narrower than 24 bits); C and RTL
simulation against the reference on the same frames."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("qonnx")

from quant_build import Net, compiled, frames, qonnx_cnn, qonnx_mlp, qonnx_run  # noqa: E402

from hlsfuse import HlsfuseError, reference  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import ScaleApproximation, from_onnx, to_graph_layout  # noqa: E402
from hlsfuse.frontend.onnx.quant import ROUNDING  # noqa: E402
from hlsfuse.types import FixedType, parse_dtype  # noqa: E402


def assert_matches_qonnx(proto, graph, inputs):
    out = proto.graph.output[0].name
    for frame in inputs:
        want = qonnx_run(proto, frame)[out]
        got = reference.run(graph, to_graph_layout(graph, frame))[out]
        assert np.array_equal(got, want), (frame, got, want)


def widest(graph) -> int:
    return max(graph.types[n.name].dtype.width for n in graph.nodes)


# --------------------------------------------------------------------------
# Whole models against qonnx
# --------------------------------------------------------------------------


@pytest.mark.parametrize("w_bits, a_bits", [(2, 4), (3, 5), (4, 4), (6, 6), (8, 8)])
@pytest.mark.parametrize("build", [qonnx_mlp, qonnx_cnn], ids=["mlp", "cnn"])
def test_quantized_models_are_bit_exact_with_qonnx(build, w_bits, a_bits):
    proto = build(w_bits, a_bits)
    graph = from_onnx(proto)
    assert widest(graph) < 24  # so qonnx's float32 execution is exact too
    assert_matches_qonnx(proto, graph, frames(proto, 6))


def test_beyond_24_bits_hlsfuse_is_exact_where_qonnxs_float32_rounds():
    rng = np.random.default_rng(4)
    n = Net()
    w = n.quant(n.const("w", rng.uniform(-1, 1, (64, 4)).astype(np.float32)), "wq", 2.0 ** -10, 12)
    n.quant(n.op("MatMul", [n.quant("x", "xq", 2.0 ** -12, 16), w], "h"), "y", 2.0 ** -22, 40)
    proto = n.model({"x": [1, 64]}, "y", [1, 4])
    graph = from_onnx(proto)
    assert graph.types["h"].dtype.width > 24
    wq = np.clip(np.round(n.inits["w"] * 2.0 ** 10), -2048, 2047) / 2.0 ** 10
    differs = 0
    for frame in frames(proto, 8, scale=3.0):
        xq = np.clip(np.round(frame["x"].astype(np.float64) * 2.0 ** 12), -32768, 32767) / 2.0 ** 12
        exact = np.round((xq @ wq) * 2.0 ** 22) / 2.0 ** 22  # float64 holds these exactly
        got = reference.run(graph, frame)["y"]
        want = qonnx_run(proto, frame)["y"]
        assert np.array_equal(got, exact)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        differs += not np.array_equal(got, want)
    assert differs  # float32 rounds the 30-bit sums


@pytest.mark.parametrize("mode", ["FLOOR", "CEIL", "HALF_UP"])
def test_models_with_other_rounding_modes_are_bit_exact(mode):
    for build in (qonnx_mlp, qonnx_cnn):
        proto = build(4, 6, mode=mode)
        assert_matches_qonnx(proto, from_onnx(proto), frames(proto, 4, seed=3))


def test_each_quantizer_gets_its_exact_type():
    graph = from_onnx(qonnx_mlp(4, 4))
    types = {name: str(t.dtype) for name, t in graph.types.items()}
    assert types["x"] == "fixed<4,1,RND_CONV,SAT>"  # the input feeds only a Quant: it has the Quant's type
    assert types["rq"] == "ufixed<4,2,RND_CONV,SAT>"  # 4 bits unsigned, scale 2^-2
    assert types["yq"] == "fixed<8,4,RND_CONV,SAT>"
    assert graph.nodes[[n.name for n in graph.nodes].index("rq")].op == "cast"
    # per-channel weight scales 2^-2..2^-4: the finest grid, and the range the values need
    w1 = next(c for c in graph.constants if c.name == "w1q")
    assert w1.type.dtype.frac == 4 and w1.type.dtype.width <= 6
    # nodes between quantizers hold their exact results (x: F=3, w1: F=4 -> F=7)
    assert graph.types["h"].dtype.frac == 7 and graph.types["h"].dtype.quant == "TRN"


def test_unsigned_weights_keep_an_unsigned_type():
    n = Net()
    w = n.quant(n.const("w", np.array([[0.3, 0.9], [1.4, 0.0]], np.float32)), "wq", 2.0 ** -2, 3, signed=0)
    n.op("MatMul", [n.quant("x", "xq", 2.0 ** -2, 6), w], "y")
    proto = n.model({"x": [1, 2]}, "y", [1, 2])
    graph = from_onnx(proto)
    wq = next(c for c in graph.constants if c.name == "wq")
    assert str(wq.type.dtype) == "ufixed<3,1>" and wq.values.tolist() == [[0.25, 1.5], [1.0, 0.0]]
    assert_matches_qonnx(proto, graph, frames(proto, 4))


def test_a_quantized_weight_moved_by_a_transpose_keeps_its_type():
    n = Net()
    w = n.quant(n.const("w", np.array([[0.3, 1.4], [0.9, 0.0], [-0.4, 0.2]], np.float32)), "wq", 2.0 ** -7, 8)
    n.op("MatMul", [n.quant("x", "xq", 2.0 ** -2, 6), n.op("Transpose", [w], "wt", perm=[1, 0])], "y")
    proto = n.model({"x": [1, 2]}, "y", [1, 3])
    graph = from_onnx(proto, precision="fixed<16,6>")  # not the weights' type: theirs wins where it holds them
    (wt,) = graph.constants
    assert str(wt.type.dtype) == "fixed<8,1>"  # 1.4 saturates to 127/128
    assert wt.values.tolist() == [[0.296875, 0.9921875], [0.8984375, 0.0], [-0.3984375, 0.203125]]


def test_a_fixed_precision_still_applies_between_the_quantizers():
    graph = from_onnx(qonnx_mlp(4, 4), precision="fixed<12,5>")
    assert str(graph.types["h"].dtype) == "fixed<12,5>" and str(graph.types["rq"].dtype) == "ufixed<4,2,RND_CONV,SAT>"


def test_exact_on_a_float_model_stops_where_64_bits_no_longer_hold_a_result():
    from onnx_zoo import cnn

    with pytest.raises(HlsfuseError, match=r"^exact: node '[^']+' \((dense|conv2d)\): the exact accumulation needs a "
                       r"\d+-bit signed exact intermediate, more than the 64 bits"):
        from_onnx(cnn(), precision="exact")


def test_the_float32_import_runs_the_quantizers_too():
    proto = qonnx_cnn(4, 4)
    graph = from_onnx(proto, precision="float32")
    out = proto.graph.output[0].name
    for frame in frames(proto, 3):
        want = qonnx_run(proto, frame)[out]
        got = reference.run(graph, to_graph_layout(graph, frame))[out]
        np.testing.assert_allclose(got, want, atol=1e-6)


# --------------------------------------------------------------------------
# One quantizer: every mode, signedness and narrow range, at ties and beyond the range
# --------------------------------------------------------------------------

TIES = np.arange(-40, 41, dtype=np.float32).reshape(1, 81) / 8  # steps of 1/8 across [-5, 5]: ties of 1/4 included


def one_quant(mode, signed, narrow, bits=3, identity=False, scale=2.0 ** -2):
    n = Net()
    x = n.op("Identity", ["x"], "xi") if identity else "x"
    n.quant(x, "y", scale, bits, signed=signed, narrow=narrow, mode=mode)
    return n.model({"x": [1, 81]}, "y", [1, 81])


@pytest.mark.parametrize("precision", [None, "float32"], ids=["exact", "float32"])
@pytest.mark.parametrize("identity", [False, True], ids=["input", "computed"])
@pytest.mark.parametrize("signed, narrow", [(1, 0), (1, 1), (0, 0), (0, 1)])
@pytest.mark.parametrize("mode", ["ROUND", "FLOOR", "CEIL", "ROUND_TO_ZERO", "HALF_UP", "HALF_DOWN"])
def test_one_quant_matches_qonnx_at_ties(mode, signed, narrow, identity, precision):
    proto = one_quant(mode, signed, narrow, identity=identity)
    graph = from_onnx(proto, precision=precision)
    # qonnx spells ROUND_TO_ZERO as DOWN (Brevitas's name is what hlsfuse reads)
    expected = one_quant("DOWN" if mode == "ROUND_TO_ZERO" else mode, signed, narrow, identity=identity)
    want = qonnx_run(expected, {"x": TIES})["y"]
    assert np.array_equal(reference.run(graph, {"x": TIES})["y"], want)


def test_one_bit_signed_quant_and_bipolar_quant_give_plus_minus_the_scale():
    x = np.array([[-3, -0.5, -1e-3, 0, 1e-3, 0.5, 3]], np.float32)
    for use_bipolar in (False, True):
        n = Net()
        xi = n.op("Identity", ["x"], "xi")
        n.bipolar(xi, "y", 0.5) if use_bipolar else n.quant(xi, "y", 0.5, 1)
        proto = n.model({"x": [1, 7]}, "y", [1, 7])
        want = qonnx_run(proto, {"x": x})["y"]
        assert want.tolist() == [[-0.5, -0.5, -0.5, 0.5, 0.5, 0.5, 0.5]]
        graph = from_onnx(proto)
        assert np.array_equal(reference.run(graph, {"x": x})["y"], want)
        assert str(graph.types["y"].dtype) == "fixed<2,1>"


def test_bipolar_weights_fold_to_plus_minus_the_scale():
    n = Net()
    w = n.bipolar(n.const("w", np.array([[0.3, -0.2], [-1.0, 0.0]], np.float32)), "wq", 0.25)
    n.op("MatMul", [n.quant("x", "xq", 2.0 ** -2, 6), w], "y")
    proto = n.model({"x": [1, 2]}, "y", [1, 2])
    graph = from_onnx(proto)
    wq = next(c for c in graph.constants if c.name == "wq")
    assert wq.values.tolist() == [[0.25, -0.25], [-0.25, 0.25]]  # the sign of each weight, 0 positive
    assert_matches_qonnx(proto, graph, frames(proto, 4))


@pytest.mark.parametrize("out_bits, signed, mode", [(3, 1, "FLOOR"), (4, 0, "ROUND"), (2, 1, "CEIL")])
def test_trunc_v2_drops_low_bits_as_qonnx_does(out_bits, signed, mode):
    n = Net()
    xq = n.quant("x", "xq", 2.0 ** -3, 6)
    inputs = [xq, n.const("s", np.float32(2.0 ** -3)), n.const("z", np.float32(0)), n.const("ib", np.float32(6)),
              n.const("os", np.float32(2.0 ** -1)), n.const("ob", np.float32(out_bits))]
    n.op("Trunc", inputs, "y", "qonnx.custom_op.general", rounding_mode=mode, signed=signed)
    proto = n.model({"x": [1, 81]}, "y", [1, 81])
    proto.opset_import[1].version = 2  # Trunc_v2
    want = qonnx_run(proto, {"x": TIES})["y"]
    for precision in (None, "float32"):
        assert np.array_equal(reference.run(from_onnx(proto, precision=precision), {"x": TIES})["y"], want)


def test_trunc_v1_keeps_the_input_scale_as_qonnx_does():
    n = Net()
    xq = n.quant("x", "xq", 2.0 ** -3, 6)
    inputs = [xq, n.const("s", np.float32(2.0 ** -3)), n.const("z", np.float32(0)), n.const("ib", np.float32(6)),
              n.const("ob", np.float32(4))]
    n.op("Trunc", inputs, "y", "qonnx.custom_op.general", rounding_mode="FLOOR")
    proto = n.model({"x": [1, 81]}, "y", [1, 81])
    want = qonnx_run(proto, {"x": TIES})["y"]
    for precision in (None, "float32"):
        assert np.array_equal(reference.run(from_onnx(proto, precision=precision), {"x": TIES})["y"], want)


def threshold_model(out_scale=1.0, out_bias=0.0, per_channel=True, seed=0):
    """x[1,2,4,4] -> Quant -> Conv 3x3 (3 channels) -> MultiThreshold with 7 thresholds (per channel or one set)."""
    rng = np.random.default_rng(seed)
    n = Net()
    w = n.quant(n.const("w", weights_like(rng, (3, 2, 3, 3))), "wq", 2.0 ** -3, 4)
    c = n.op("Conv", [n.quant("x", "xq", 2.0 ** -2, 5), w], "c", pads=[1, 1, 1, 1])
    limits = np.sort(rng.uniform(-3, 3, size=(3 if per_channel else 1, 7)), axis=1).astype(np.float32)
    n.op("MultiThreshold", [c, n.const("t", limits)], "y", "qonnx.custom_op.general", out_dtype="UINT3",
         out_scale=out_scale, out_bias=out_bias)
    return n.model({"x": [1, 2, 4, 4]}, "y", [1, 3, 4, 4])


def weights_like(rng, shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


@pytest.mark.parametrize("out_scale, out_bias", [(1.0, 0.0), (0.5, -1.75), (2.0, -7.0)])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "global"])
def test_multithreshold_counts_thresholds_as_qonnx_does(out_scale, out_bias, per_channel):
    proto = threshold_model(out_scale, out_bias, per_channel)
    graph = from_onnx(proto)
    assert_matches_qonnx(proto, graph, frames(proto, 6))
    assert graph.nodes[-1].name == "y" and graph.node("y.count").op == "threshold"
    assert graph.types["y.count"].dtype == FixedType(3, 3, False)  # 0..7, the narrowest unsigned type
    assert graph.types["y.thresholds"].shape == (3, 7)  # per channel (a per-tensor set repeated)
    assert "sum" not in {n.op for n in graph.nodes}
    floats = from_onnx(proto, precision="float32")
    for frame in frames(proto, 2, seed=5):
        want = qonnx_run(proto, frame)["y"]
        assert np.array_equal(reference.run(floats, to_graph_layout(floats, frame))["y"], want)


def test_multithreshold_on_a_2d_tensor_at_its_thresholds():
    n = Net()
    limits = np.array([[-0.3, 0.1, 0.77]], np.float32)
    n.op("MultiThreshold", [n.quant("x", "xq", 2.0 ** -3, 6), n.const("t", limits)], "y",
         "qonnx.custom_op.general", out_dtype="UINT2")
    proto = n.model({"x": [1, 81]}, "y", [1, 81])
    graph = from_onnx(proto)
    want = qonnx_run(proto, {"x": TIES})["y"]
    assert sorted(set(want.ravel().tolist())) == [0, 1, 2, 3]
    assert np.array_equal(reference.run(graph, {"x": TIES})["y"], want)


# --------------------------------------------------------------------------
# What is refused, and the approximation flag
# --------------------------------------------------------------------------


def refused(proto) -> str:
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("mode", ["ROUND", "FLOOR", "HALF_UP", "CEIL"])
def test_a_scale_that_is_not_a_power_of_two_is_exact(mode):
    from hlsfuse.frontend.onnx import to_model_outputs

    proto = one_quant(mode, 1, 0, bits=4, scale=0.1)
    graph = from_onnx(proto)
    assert graph.scales["y"].scale == (float(np.float32(0.1)),)  # the input too, unless CEIL (no ap mode)
    shape = graph.inputs[0].type.shape
    rng = np.random.default_rng(0)
    for x in (np.arange(np.prod(shape)) - np.prod(shape) // 2) * np.float32(0.013), rng.normal(0, 0.6, shape):
        frame = {"x": np.asarray(x, np.float32).reshape(shape)}
        got = to_model_outputs(graph, reference.run(graph, to_graph_layout(graph, frame)))["y"]
        assert np.array_equal(got, qonnx_run(proto, frame)["y"])


def test_other_unsupported_quantizers_name_the_node_and_what_is_expected():
    n = Net()
    n.quant("x", "y", 0.25, 4, zero=1.0)
    assert refused(n.model({"x": [1, 4]}, "y", [1, 4])).endswith(
        "node 'y' (Quant): zero point 1 must be 0 (hlsfuse maps symmetric quantizers; a zero point shifts the grid)")
    assert refused(one_quant("NEAREST", 1, 0)).endswith(
        "node 'y' (Quant): attribute 'rounding_mode' is 'NEAREST', expected one of ROUND, HALF_EVEN, FLOOR, "
        "ROUND_TO_ZERO, DOWN, HALF_UP, HALF_DOWN, CEIL")
    n = Net()
    n.op("MultiThreshold", ["x", n.const("t", np.zeros((3, 3), np.float32))], "y", "qonnx.custom_op.general",
         out_dtype="UINT2")
    assert refused(n.model({"x": [1, 4]}, "y", [1, 4])).endswith(
        "node 'y' (MultiThreshold): input 'thresholds' must be finite, of shape [4, n] or [1, n], not [3, 3]")
    n = Net()
    n.op("Celu", ["x"], "y", "qonnx.custom_op.general")
    assert "node 'y' (Celu): unsupported op (domain 'qonnx.custom_op.general')" in refused(
        n.model({"x": [1, 4]}, "y", [1, 4]))


def test_approximated_scales_are_the_nearest_power_of_two_with_a_warning():
    proto = one_quant("ROUND", 1, 0, bits=4, scale=0.3)
    with pytest.warns(ScaleApproximation) as caught:
        graph = from_onnx(proto, approximate_scales=True)
    assert str(caught[0].message) == (
        "node 'y' (Quant): scale 0.3 approximated by the nearest power of two 0.25 (relative error up to 0.167)")
    assert graph.types["y"].dtype == parse_dtype("fixed<4,2,RND_CONV,SAT>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_onnx(one_quant("ROUND", 1, 0, bits=4))  # a power of two: no warning


def test_the_command_line_takes_float_scales_exactly_or_approximates(tmp_path, capsys):
    path = tmp_path / "q.onnx"
    onnx.save(one_quant("ROUND", 1, 0, scale=0.3), path)
    assert main(["convert", str(path), "-o", str(tmp_path / "exact.json")]) == 0
    assert "error" not in capsys.readouterr().err
    from hlsfuse.graph_json import load_graph

    assert load_graph(tmp_path / "exact.json").scales["y"].scale == (float(np.float32(0.3)),)
    assert main(["convert", str(path), "-o", str(tmp_path / "q.json"), "--approximate-scales"]) == 0
    err = capsys.readouterr().err
    assert err == ("hlsfuse: warning: node 'y' (Quant): scale 0.3 approximated by the nearest power of two 0.25 "
                   "(relative error up to 0.167)\n"
                   "hlsfuse: precision exact (the default for quantized models): the quantizers' types, and between "
                   "them each node holds its exact result; --precision chooses others\n")
    assert main(["check", str(tmp_path / "q.json"), "--approximate-scales"]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: --approximate-scales applies to ONNX models (.onnx), not to "
                                       f"{tmp_path / 'q.json'}\n")


def test_types_from_the_command_line_are_the_quantizers(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(qonnx_mlp(4, 4), path)
    assert main(["check", str(path)]) == 0
    assert main(["convert", str(path), "-o", str(tmp_path / "mlp.json")]) == 0
    capsys.readouterr()
    from hlsfuse.graph_json import load_graph

    assert load_graph(tmp_path / "mlp.json").types["rq"].dtype == FixedType(4, 2, False, "RND_CONV", "SAT")


# --------------------------------------------------------------------------
# C and RTL simulation
# --------------------------------------------------------------------------


@pytest.mark.gxx
def test_csim_of_the_quantized_cnn_matches_qonnx(tmp_path):
    from hls_support import csim_both

    out, graph, inputs = compiled(tmp_path, qonnx_cnn(4, 4), "hls", assert_matches_qonnx)
    result = csim_both(out, inputs=inputs, graph=graph)
    assert result.passed and result.frames == 3, result.report()


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_rtlsim_of_the_quantized_mlp_matches_qonnx(tmp_path):
    from hlsfuse.sim.rtlsim import rtlsim

    out, graph, inputs = compiled(tmp_path, qonnx_mlp(4, 4), "verilog", assert_matches_qonnx)
    result = rtlsim(out, inputs=inputs, frames=3, graph=graph)
    assert result.passed, result.report()


# --------------------------------------------------------------------------
# docs/onnx.md
# --------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_worked_example_runs_as_shown_and_as_qonnx_runs_it(capsys):
    section = (DOCS / "onnx.md").read_text().split("### Worked example")[1]
    ((code, shown),) = re.findall(r"```python\n(.*?)```\n\nprints\n\n```\n(.*?)```", section, re.S)
    space = {}
    exec(compile(code, "docs/onnx.md", "exec"), space)
    assert capsys.readouterr().out == shown
    want = qonnx_run(space["model"], {"x": np.array([[0.6, 1.3, 0.9]], np.float32)})["y"]
    assert want.tolist() == [[1.25, 1.0]]


def test_the_rounding_table_is_the_importers():
    text = (DOCS / "onnx.md").read_text()
    table = text.split("| `rounding_mode` | means | Q |")[1].split("\n\n")[0]
    documented = {}
    for row in table.strip().splitlines()[1:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        names, modes = re.findall(r"`(\w+)`", cells[0]), re.findall(r"`(\w+)`", cells[2])
        for name in names:
            documented[name] = "CEIL" if name == "CEIL" else modes[0] if modes else None
    assert {k: v for k, v in documented.items() if v} == ROUNDING
    assert [k for k, v in documented.items() if not v] == ["UP"]
