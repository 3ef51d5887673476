"""Activation decompositions rewritten into one node (hlsfuse/frontend/onnx/patterns.py), and the selecting ops
with constant arguments (ops_select.py): what each import becomes, when a rewrite must not apply, the errors,
and a torch-style FFN block from ONNX to a compiled design. Every model also matches onnxruntime
(test_onnx_ops.py runs onnx_tf_cases.TF_CASES)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")
from onnx import helper  # noqa: E402
from onnx_build import errors, feeds, hls_run, model, node, ort_run, weights  # noqa: E402
from onnx_tf_cases import GELU_FORMS, attention, ffn, gelu_erf_torch, scalar, silu_torch  # noqa: E402

from hlsfuse import HlsfuseError, fuse  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx  # noqa: E402

SEQ = {"x": (1, 5, 8)}


def _ops(graph) -> list[str]:
    return [n.op for n in graph.nodes]


@pytest.mark.parametrize("form", sorted(GELU_FORMS))
def test_each_gelu_form_is_one_gelu_node(form):
    factory, approximate = GELU_FORMS[form]
    graph, diffs, _ = errors(factory())
    assert max(diffs.values()) <= 1e-5, diffs
    (gelu,) = graph.nodes
    assert (gelu.op, gelu.name, graph.sigs["y"]["approximate"]) == ("gelu", "y", approximate)


def test_silu_is_one_node_in_either_operand_order():
    for nodes in (silu_torch(), [node("Sigmoid", ["x"], ["s"]), node("Mul", ["s", "x"], ["y"])]):
        graph, diffs, _ = errors(model(nodes, SEQ, opset=17))
        assert _ops(graph) == ["silu"] and max(diffs.values()) <= 1e-5


def test_no_rewrite_when_an_intermediate_is_read_elsewhere_or_a_constant_differs():
    # the Erf's result is also a graph output: the pattern's nodes stay, one by one
    shared = model(gelu_erf_torch(), SEQ, outputs=["y", "/act/Erf_output_0"], opset=17)
    graph, diffs, _ = errors(shared)
    assert "gelu" not in _ops(graph) and "erf" in _ops(graph) and max(diffs.values()) <= 1e-5
    # 0.45 in place of 0.5, 1.5 in place of sqrt 2: not GELU
    for old, new in ((0.5, 0.45), (math.sqrt(2.0), 1.5)):
        nodes = [scalar(n.output[0], new) if n.op_type == "Constant" and math.isclose(
            float(onnx.numpy_helper.to_array(n.attribute[0].t)), old, rel_tol=1e-6) else n for n in gelu_erf_torch()]
        graph, diffs, _ = errors(model(nodes, SEQ, opset=17))
        assert "gelu" not in _ops(graph) and max(diffs.values()) <= 1e-5
    # the Sigmoid read by another node too: x * sigmoid(x) stays a sigmoid and a mul
    nodes = [*silu_torch(out="m"), node("Add", ["m", "/act/Sigmoid_output_0"], ["y"])]
    graph, diffs, _ = errors(model(nodes, SEQ, opset=17))
    assert _ops(graph) == ["sigmoid", "mul", "add"] and max(diffs.values()) <= 1e-5


def test_both_gelu_forms_give_the_same_design():
    decomposed = from_onnx(ffn(), precision="fixed<16,6,RND,SAT>")
    nodes = [n for n in ffn().graph.node if not n.name.startswith("/act/")]
    mul = next(i for i, n in enumerate(nodes) if n.name == "/fc2/MatMul")
    nodes.insert(mul, node("Gelu", ["/fc1/Add_output_0"], ["/act/Mul_1_output_0"], name="/act/Gelu"))
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in ffn().graph.initializer}
    onnx20 = from_onnx(model(nodes, {"x": (1, 5, 8)}, inits, opset=20), precision="fixed<16,6,RND,SAT>")
    assert _ops(decomposed) == _ops(onnx20) == ["dense", "bias_add", "gelu", "dense", "bias_add"]
    assert [g.nodes for g in fuse(decomposed).groups] == [g.nodes for g in fuse(onnx20).groups]


@pytest.mark.parametrize("form", ["perm", "swap", "swap-reshape"])
def test_attention_holds_k_as_it_streams(form):
    """However K^T is written (one Transpose, a swap after the heads' split, a swap then a Reshape and a scale),
    the scores' matmul reads K transposed from its held copy (transpose_b) and every transpose left keeps the
    innermost axis (a stage that folds its lanes, not one that buffers and turns the tensor)."""
    graph = from_onnx(attention(key_t=form))
    scores, context = [n for n in graph.nodes if n.op == "matmul"]
    assert graph.sigs[scores.name]["transpose_b"] and not graph.sigs[context.name]["transpose_b"]
    for n in graph.nodes:
        if n.op == "transpose":
            assert n.attrs["axes"][-1] == len(n.attrs["axes"]) - 1, (n.name, n.attrs["axes"])


def test_ffn_block_imports_and_compiles_for_both_targets(tmp_path, capsys):
    proto = ffn()
    graph, diffs, _ = errors(proto)
    assert max(diffs.values()) <= 1e-5
    assert _ops(graph) == ["dense", "bias_add", "gelu", "dense", "bias_add"]
    path = tmp_path / "ffn.onnx"
    path.write_bytes(proto.SerializeToString())
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--target", "all"]) == 0, capsys.readouterr().err
    cpp = (out / "hls" / "ffn.cpp").read_text()
    assert "lut_gelu" in (out / "hls" / "luts.h").read_text() and "ffn" in cpp
    assert any("lut_gelu" in p.name for p in (out / "verilog").iterdir())


@pytest.mark.parametrize("nodes,inits,message", [
    ([node("Greater", ["x", "zero"], ["c"]), node("Where", ["c", "x", "zero"], ["y"], name="w")],
     {"zero": np.float32(0.0)},
     "node 'w' (Where): input 'condition' ('c') is computed; only a constant condition (a mask) is supported"),
    ([node("Gather", ["x", "i"], ["y"], name="g", axis=1)], {"i": np.zeros((2, 2), np.int64)},
     "node 'g' (Gather): input 'indices' has 2 dims (int64); constant integer scalar or 1-D indices are supported"),
    ([node("Gather", ["x", "i"], ["y"], name="g", axis=1)], {"i": np.array([5], np.int64)},
     "node 'g' (Gather): input 'indices' [5] must be non-empty and within -5..4 (axis 1)"),
    ([node("Relu", ["x"], ["r"]), node("Gather", ["x", "r"], ["y"], name="g")], {},
     "node 'g' (Gather): input 'indices' must be a constant (computed values are not supported here)"),
    ([node("Split", ["x", "s"], ["a", "b"], name="s", axis=2)], {"s": np.array([3, 4], np.int64)},
     "node 's' (Split): 'split' [3, 4] must have 2 sizes >= 0 adding up to 8, the axis size"),
    ([node("Split", ["x"], ["a", "b", "c"], name="s", axis=1)], {},
     "node 's' (Split): axis of size 5 does not split into 3 equal parts; give 'split'"),
    ([node("Gelu", ["x"], ["y"], name="g", approximate="fast")], {},
     "node 'g' (Gelu): attribute 'approximate' is 'fast', expected one of none, tanh"),
])
def test_errors_name_the_node_and_what_is_expected(nodes, inits, message):
    # written directly: onnx_build.model would ask onnxruntime for the shapes of these invalid nodes
    rank = {"Gather": 4 if inits.get("i", np.zeros(1)).ndim == 2 else 3 if inits else 5}.get(nodes[-1].op_type, 3)
    outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, [f"{o}{d}" for d in range(rank)])
               for o in nodes[-1].output]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, SEQ["x"])],
                              outputs, [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opset = 20 if nodes[-1].op_type == "Gelu" else 13
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto, precision="float32")
    assert message in str(info.value)


def test_masked_fill_with_minus_infinity_is_exact():
    mask = np.triu(np.ones((5, 8), bool), 1)
    proto = model([node("Relu", ["x"], ["r"]), node("Where", ["m", "inf", "r"], ["y"])], SEQ,
                  {"m": mask, "inf": np.float32(-np.inf)})
    expected = ort_run(proto, feeds(proto))["y"]
    got = hls_run(from_onnx(proto, precision="float32"), feeds(proto))["y"]
    assert np.array_equal(got, expected)  # -inf where masked, the relu elsewhere
    # fixed point: -inf is float32's lowest, assigned to the constant's saturating type: its minimum
    fixed = from_onnx(proto, precision="fixed<16,6,RND,SAT>")
    out = hls_run(fixed, feeds(proto))["y"][0]
    assert np.all(out[mask] == -32.0) and np.all(out[~mask] >= 0)


def test_split_and_gather_on_constants_fold():
    # Linear weights taken apart at import: Split then Gather of the columns, folded into the dense's weights
    nodes = [node("Split", ["w", "s"], ["w0", "w1"], axis=1), node("Gather", ["w1", "i"], ["g"], axis=1),
             node("MatMul", ["x", "g"], ["y"], name="mm")]
    inits = {"w": weights(np.random.default_rng(0), 8, 4), "s": np.array([1, 3], np.int64),
             "i": np.array([2, -3], np.int64)}
    graph, diffs, _ = errors(model(nodes, {"x": (5, 8)}, inits, opset=13))
    assert _ops(graph) == ["dense"] and max(diffs.values()) <= 1e-5
