"""The onnx wheel's backend test cases for reflect and edge Pad and for Gemm with a computed C.

The wheel ships recorded models and data under onnx/backend/test/data: PyTorch's ReflectionPad2d,
ReplicationPad2d (mode 'edge') and a reflect F.pad, and addmm, a Gemm whose C is a graph input followed by
one whose C is the first Gemm's result. Its node cases are generated (seeded) when
onnx.backend.test.case.node.gemm is imported: A, B and C are graph inputs, so C is computed as far as the
importer is concerned. hlsfuse's float32 import must match onnxruntime and the recorded outputs within 1e-5,
and its fixed-point import stay within test_onnx_ops's relative tolerance.

A small model with all of them (reflect and edge pads of an NCHW image, Gemms whose C is computed, through a
dense and through a matmul) is compiled in fixed point and must be the reference bit for bit in C simulation
and in RTL simulation.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from hls_support import csim_both  # noqa: E402
from onnx import numpy_helper, version_converter  # noqa: E402
from onnx_build import feeds, hls_run, model, node, ort_run, weights  # noqa: E402

from hlsfuse.compile import CompileOptions, compile  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout  # noqa: E402

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
SHIPPED = {
    "ReflectionPad2d": "pytorch-converted/test_ReflectionPad2d",
    "ReplicationPad2d": "pytorch-converted/test_ReplicationPad2d",
    "operator_pad": "pytorch-operator/test_operator_pad",
    "operator_addmm": "pytorch-operator/test_operator_addmm",
}
PAD_MODE = {"ReflectionPad2d": "reflect", "ReplicationPad2d": "edge", "operator_pad": "reflect"}
FIXED = "fixed<18,6,RND,SAT>"


def _node_cases() -> dict:
    """The wheel's Gemm node cases by name: importing the module runs its exports (numpy seeded 0 for
    each), which append to onnx.backend.test.case.node's list (the public ``collect_testcases`` would
    import and run every op's exports, several seconds)."""
    cases = importlib.import_module("onnx.backend.test.case.node")
    importlib.import_module("onnx.backend.test.case.node.gemm")
    return {c.name: c for c in cases._NodeTestCases if c.name.startswith("test_gemm_")}


NODE_CASES = sorted(_node_cases())


def load(case: str):
    """(model, inputs by name, recorded outputs by name) of a shipped case or a node case."""
    if case in SHIPPED:
        folder = DATA / SHIPPED[case]
        proto = onnx.load(folder / "model.onnx")
        data = folder / "test_data_set_0"
        arrays = [
            [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(data.glob(f"{kind}_*.pb"))]
            for kind in ("input", "output")
        ]
    else:
        test = _node_cases()[case]
        proto, arrays = test.model, test.data_sets[0]
    inits = {t.name for t in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    return proto, dict(zip(names, arrays[0])), dict(zip([o.name for o in proto.graph.output], arrays[1]))


def onnxruntime_outputs(proto, inputs):
    # onnxruntime runs Gemm from opset 7 on; the opset 6 models (PyTorch's) are upgraded for it only
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    return ort_run(proto if opset >= 7 else version_converter.convert_version(proto, 7), inputs)


def test_the_wheel_has_the_cases():
    assert all((DATA / path / "model.onnx").is_file() for path in SHIPPED.values())
    assert {
        "test_gemm_default_matrix_bias",
        "test_gemm_default_scalar_bias",
        "test_gemm_all_attributes",
        "test_gemm_beta",
    } <= set(NODE_CASES)


@pytest.mark.parametrize("case", sorted(SHIPPED) + NODE_CASES)
def test_float_import_matches_onnxruntime(case):
    proto, inputs, recorded = load(case)
    graph = from_onnx(proto, precision="float32")
    got = hls_run(graph, inputs)
    expected = onnxruntime_outputs(proto, inputs)
    assert set(got) == set(expected) == set(recorded)
    for name, want in expected.items():
        assert got[name].shape == want.shape == recorded[name].shape
        assert float(np.max(np.abs(got[name] - want))) <= 1e-5, name
        assert float(np.max(np.abs(got[name] - recorded[name]))) <= 1e-5, name
    ops = {(n.op, n.attrs.get("mode")) for n in graph.nodes}
    if case in PAD_MODE:
        assert ("pad", PAD_MODE[case]) in ops
    elif case != "test_gemm_default_no_bias":
        assert ("add", None) in ops  # alpha * A * B + beta * C


@pytest.mark.parametrize("case", sorted(SHIPPED) + NODE_CASES)
def test_fixed_import_is_close_to_onnxruntime(case):
    proto, inputs, _ = load(case)
    graph = from_onnx(proto, precision=FIXED)
    assert all(not graph.types[n.name].dtype.is_float for n in graph.nodes)
    got = hls_run(graph, inputs)
    for name, want in onnxruntime_outputs(proto, inputs).items():
        scale = max(1.0, float(np.max(np.abs(want))))
        assert float(np.max(np.abs(got[name] - want))) <= 0.01 * scale, name


# --------------------------------------------------------------------------
# C and RTL simulation: bit for bit the reference
# --------------------------------------------------------------------------


def small_model():
    """Reflect and edge pads of an NCHW image (H and W padded, channel-last inside), a Gemm whose C is a
    computed [1, N] row scaled by beta (a dense), and one whose B and C are both computed (a matmul)."""
    rng = np.random.default_rng(11)
    i64 = np.int64
    nodes = [
        node("Pad", ["x", "p_reflect"], ["reflect"], mode="reflect"),
        node("Relu", ["x"], ["r"]),
        node("Pad", ["r", "p_edge"], ["edge"], mode="edge"),
        node("ReduceMean", ["a"], ["row"], axes=[0], keepdims=1),
        node("Gemm", ["row", "w", "c"], ["bias"], transB=1),
        node("Gemm", ["a", "w", "bias"], ["dense"], transB=1, alpha=0.75, beta=0.5),
        node("Neg", ["a"], ["n"]),
        node("Gemm", ["a", "n", "dense"], ["matmul"], transB=1, beta=-1.0),
    ]
    inits = {
        "p_reflect": np.array([0, 0, 2, 1, 0, 0, 1, 3], i64),
        "p_edge": np.array([0, 0, 1, 0, 0, 0, 2, 2], i64),
        "w": weights(rng, 3, 5),
        "c": weights(rng, 3),
    }
    return model(
        nodes, {"x": (1, 2, 4, 5), "a": (3, 5)}, inits, outputs=["reflect", "edge", "dense", "matmul"], name="padgemm"
    )


@pytest.fixture(scope="module")
def small_design():
    proto = small_model()
    graph = from_onnx(proto, precision="fixed<14,5,RND,SAT>")
    frames = [to_graph_layout(graph, feeds(proto, seed)) for seed in range(3)]
    return graph, frames


def test_small_model_matches_onnxruntime(small_design):
    graph, _ = small_design
    proto = small_model()
    assert {n.attrs.get("mode") for n in graph.nodes if n.op == "pad"} == {"reflect", "edge"}
    assert {"dense", "matmul"} <= {n.op for n in graph.nodes}
    inputs = feeds(proto, 0)
    got = hls_run(graph, inputs)
    for name, want in ort_run(proto, inputs).items():
        assert float(np.max(np.abs(got[name] - want))) <= 0.01 * max(1.0, float(np.max(np.abs(want)))), name


@pytest.mark.gxx
def test_small_model_is_bit_exact_in_csim(small_design, tmp_path):
    graph, frames = small_design
    d = compile(graph, CompileOptions())
    assert [graph.node(s.head).op for s in d.plan.stages if s.kind == "own"].count("pad") == 2
    result = csim_both(d.write(tmp_path / "out"), frames, graph=graph)
    assert result.passed, result.report()
    assert result.compared == len(frames) * sum(graph.types[t].size for t in graph.outputs)


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_small_model_is_bit_exact_in_rtlsim(small_design, tmp_path):
    from rtl_design import lint, simulate

    graph, frames = small_design
    result = simulate(graph, tmp_path, frames=len(frames), inputs=frames)
    assert result.passed, result.report()
    assert result.compared == len(frames) * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""
