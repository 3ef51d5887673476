"""FINN's TFC-W1A1 (quant_build.tfc_w1a1: a binary 784-64-64-64-10 MLP as Brevitas's bnn_pynq exports it to QONNX)
for a Pynq-Z2: no DSP, at most 100 cycles per frame, within the board's 53,200 LUTs, and what qonnx computes (its
integers exactly, its float32 output to one unit in the last place). TensorNorm's float scale and bias become the
output's scaling (the host applies them, as FINN's users do), so the hardware ends with the last layer's integers.
A 64-16-16-16-10 TFC is simulated in the shared design (test_hw_shared); the full one's C and RTL simulations run
in the random tier (make test-random) only."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import fresh, need

onnx = need("onnx")
need("qonnx")

from quant_build import image_frames, qonnx_run, tfc_w1a1  # noqa: E402

from hlsfuse import reference  # noqa: E402
from hlsfuse.boards import BOARDS, target_of  # noqa: E402
from hlsfuse.compile import CompileOptions, plan_design  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout, to_model_outputs  # noqa: E402

MACS = 784 * 64 + 2 * 64 * 64 + 64 * 10


def last_weights(proto) -> np.ndarray:
    """The last MatMul's bipolar weights W [k, m] (the BipolarQuant of an initializer)."""
    last = next(n for n in reversed(proto.graph.node) if n.op_type == "MatMul")
    quant = next(n for n in proto.graph.node if last.input[1] in n.output)
    w = next(i for i in proto.graph.initializer if i.name == quant.input[0])
    return np.where(onnx.numpy_helper.to_array(w) >= 0, 1, -1)


def assert_qonnx_exact(proto, graph, frames) -> None:
    """The hardware's integers (the last layer's accumulators) are qonnx's exactly on every frame, and the output
    with its scaling applied is qonnx's float32 TensorNorm to one unit in the last place (qonnx rounds the product
    and the sum apart). The layers read the activations' 1-bit codes b (a = 2 b - 1: the import streams the code and
    each layer absorbs the affine), so the last one's integers are W b, and qonnx's W a = 2 W b - W 1."""
    out = proto.graph.output[0].name
    last = next(n for n in reversed(proto.graph.node) if n.op_type == "MatMul").output[0]
    accumulators = onnx.ModelProto.FromString(proto.SerializeToString())
    accumulators.graph.output.insert(0, onnx.helper.make_tensor_value_info(last, onnx.TensorProto.FLOAT, None))
    w = last_weights(proto)
    for frame in frames:
        run = reference.run(graph, to_graph_layout(graph, frame))
        codes = run[graph.outputs[0]].reshape(-1)
        assert np.array_equal(2 * codes - w.sum(axis=0), qonnx_run(accumulators, frame)[last].reshape(-1))
        got, want = to_model_outputs(graph, run)[out], qonnx_run(proto, frame)[out]
        np.testing.assert_array_max_ulp(got, want, 1)


def small_tfc(count: int):
    """A 64-16-16-16-10 TFC-W1A1, checked against qonnx, and ``count`` image-like frames in the graph's layout."""
    proto = tfc_w1a1(3, widths=(64, 16, 16, 16, 10))
    graph = from_onnx(proto)
    frames = image_frames(proto, count, seed=5)
    assert_qonnx_exact(proto, graph, frames)
    return graph, [to_graph_layout(graph, f) for f in frames]


def test_tfc_import_is_bit_exact_with_qonnx():
    proto = tfc_w1a1()
    graph = from_onnx(proto)
    scaling = graph.scales["y"]  # TensorNorm: y = scale * h3 + bias, on the host
    assert scaling.scale[0] != 1 and scaling.offset[0] != 0
    (x,) = graph.inputs  # the image's 1-bit codes, b = 1 where x >= 0: the host rounds (x + 1) / 2 to ufixed<1,1>
    assert str(x.type.dtype) == "ufixed<1,1,RND,SAT>" and graph.scales["x"].from_real(np.float32(0)) == 0.5
    assert graph.nodes[-1].inputs[0] == "h3" and graph.node("h3").op == "dense"  # the hardware ends with its integers
    assert_qonnx_exact(proto, graph, image_frames(proto, 8, seed=1))


def test_tfc_fits_the_pynq_z2_without_dsps_within_100_cycles():
    """Every layer's products are XNOR-popcounts of 1-bit codes (no multiplier), and the image arrives as its 784
    1-bit codes, many per transfer (a 16-bit port of 49 lanes took 16 transfers before): every layer unrolled, its
    weights wired in, 2 transfers of 392 codes and 2 cycles per frame."""
    graph = from_onnx(tfc_w1a1())
    planned = plan_design(graph, CompileOptions(device=target_of("pynq-z2")))
    report = planned.report
    total = report["total"]
    assert total["dsp"] == 0 and total["bram18"] == 0
    assert total["lut"] <= BOARDS["pynq-z2"].lut and total["ff"] <= BOARDS["pynq-z2"].ff
    assert [s["products"] for s in report["stages"] if s["simd"]] == ["xnor"] * 4
    (port,) = planned.plan.inputs
    assert port.type.dtype.bits == 1 and 784 // port.lanes <= report["cycles_per_frame"] <= 10
    assert report["macs_per_frame"] == MACS
    assert report["macs_per_klut_cycle"] == pytest.approx(MACS / (total["lut"] / 1000) / report["cycles_per_frame"],
                                                          rel=1e-3)


@pytest.mark.gxx
@pytest.mark.verilator
@pytest.mark.skipif(not fresh(), reason="the random tier's (make test-random): about 3 minutes of builds")
def test_the_folded_tfc_simulates_bit_exact_in_c_and_rtl(tmp_path):
    from hls_support import csim_both, write_project
    from rtl_design import simulate

    from hlsfuse.backends.hls import HlsOptions

    proto = tfc_w1a1()
    graph = from_onnx(proto)
    frames = image_frames(proto, 2, seed=2)
    assert_qonnx_exact(proto, graph, frames)
    inputs = [to_graph_layout(graph, f) for f in frames]
    plan = plan_design(graph, CompileOptions(device=target_of("pynq-z2"))).plan
    out = write_project(graph, tmp_path / "hls", plan, HlsOptions())
    result = csim_both(out, inputs, graph=graph)
    assert result.passed, result.report()
    rtl = simulate(graph, tmp_path / "rtl", frames=2, driver="native", plan=plan, inputs=inputs)
    assert rtl.passed, rtl.report()
    assert rtl.compared == 2 * 10
