"""LayerNorm and RMSNorm from ONNX (hlsfuse/frontend/onnx/ops_nn.py, patterns.py): opset 17's LayerNormalization
and the decompositions torch writes (tests/onnx_norm_cases.py) each import as one node and match onnxruntime; both
LayerNorm forms give the same design; what must not be rewritten stays as it is; the errors name the node; in
fixed point (auto precision) the import stays within the error docs/numerics.md states; a transformer block
compiles for both targets. Every case also runs in test_onnx_ops.py's onnxruntime comparison."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")
from onnx import helper  # noqa: E402
from onnx_build import errors, feeds, hls_run, model, node, ort_run  # noqa: E402
from onnx_norm_cases import (  # noqa: E402
    LN_FORMS,
    RMS_FORMS,
    SEQ,
    block,
    layer_norm_native,
    layer_norm_torch,
    ln_weights,
    rms_norm_torch,
)

from hlsfuse import HlsfuseError, fuse  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx  # noqa: E402


def _ops(graph) -> list[str]:
    return [n.op for n in graph.nodes]


@pytest.mark.parametrize("form", sorted(LN_FORMS))
def test_each_layer_norm_form_is_one_layer_norm_node(form):
    graph, diffs, _ = errors(LN_FORMS[form]())
    assert max(diffs.values()) <= 1e-5, diffs
    (ln,) = graph.nodes
    assert (ln.op, ln.name, ln.inputs[0]) == ("layer_norm", "y", "x")
    assert graph.sigs["y"]["epsilon"] == float(np.float32(1e-5))
    gamma, beta = (graph.constant_map[name].values for name in ln.inputs[1:])
    weights = ln_weights()
    affine = "no-affine" not in form
    assert np.array_equal(gamma, weights["ln.weight"] if affine else np.ones(8))
    assert np.array_equal(beta, weights["ln.bias"] if affine and "no-bias" not in form else np.zeros(8))


@pytest.mark.parametrize("form", sorted(RMS_FORMS))
def test_each_rms_norm_form_is_one_rms_norm_node(form):
    graph, diffs, _ = errors(RMS_FORMS[form]())
    assert max(diffs.values()) <= 1e-5, diffs
    (rms,) = graph.nodes
    assert (rms.op, rms.name, rms.inputs[0]) == ("rms_norm", "y", "x")
    assert graph.sigs["y"]["epsilon"] == float(np.float32(1e-6))
    assert np.array_equal(graph.constant_map[rms.inputs[1]].values, ln_weights()["ln.weight"])


def test_an_affine_less_rms_norm_gets_ones():
    nodes = rms_norm_torch()[:-1]  # without the weight's Mul
    nodes[-1] = helper.make_node("Mul", list(nodes[-1].input), ["y"], name=nodes[-1].name)
    graph, diffs, _ = errors(model(nodes, SEQ, opset=13))
    assert _ops(graph) == ["rms_norm"] and max(diffs.values()) <= 1e-5
    assert np.array_equal(graph.constant_map[graph.nodes[0].inputs[1]].values, np.ones(8))


@pytest.mark.parametrize("precision", ["float32", "fixed<16,6,RND,SAT>", "auto:16"])
def test_both_layer_norm_forms_give_the_same_design(precision):
    decomposed = from_onnx(block("torch", opset=13), precision=precision)
    native = from_onnx(block("native", opset=17), precision=precision)
    assert _ops(decomposed) == _ops(native) == ["dense", "bias_add", "layer_norm", "dense", "bias_add", "gelu"]
    assert [g.nodes for g in fuse(decomposed).groups] == [g.nodes for g in fuse(native).groups]
    assert [len(g.nodes) for g in fuse(native).groups] == [2, 1, 3]  # the normalisation is a stage of its own
    assert {n: str(t.dtype) for n, t in decomposed.types.items()} == {n: str(t.dtype) for n, t in native.types.items()}
    assert decomposed.sigs["/ln/out"].attrs == native.sigs["/ln/out"].attrs
    for c in native.constants:
        assert np.array_equal(decomposed.constant_map[c.name].data, c.data)
    # and without gamma and beta: ones and zeros, as the native form's weights of ones and zeros give
    inits = {"ln.weight": np.ones(8, np.float32), "ln.bias": np.zeros(8, np.float32)}
    bare = from_onnx(model(layer_norm_torch(affine=False), SEQ, opset=13), precision=precision)
    ones = from_onnx(model(layer_norm_native(), SEQ, inits, opset=17), precision=precision)
    assert [g.nodes for g in fuse(bare).groups] == [g.nodes for g in fuse(ones).groups] == [("y",)]
    assert [c.data.tolist() for c in bare.constants] == [c.data.tolist() for c in ones.constants]
    assert [str(c.type.dtype) for c in bare.constants] == [str(c.type.dtype) for c in ones.constants]


def test_no_rewrite_when_an_intermediate_is_read_elsewhere_or_the_axes_differ():
    # the mean is also a graph output, or d is read by a third node: no layer_norm, but the rest is still
    # (d - 0) / sqrt(mean(d^2) + eps), an rms_norm of d = x - mean
    shared = model(layer_norm_torch(), SEQ, ln_weights(), outputs=["y", "/ln/ReduceMean_output_0"], opset=13)
    graph, diffs, _ = errors(shared)
    assert _ops(graph) == ["mean", "sub", "rms_norm", "bias_add"] and max(diffs.values()) <= 1e-5
    nodes = [*layer_norm_torch(out="ln"), node("Add", ["ln", "/ln/Sub_output_0"], ["y"])]
    graph, diffs, _ = errors(model(nodes, SEQ, ln_weights(), opset=13))
    assert _ops(graph) == ["mean", "sub", "rms_norm", "bias_add", "add"] and max(diffs.values()) <= 1e-5
    # over the two last axes: a mean over [-2, -1] is no normalisation of the last axis, and its pieces (a Pow,
    # Sqrt and Div of computed tensors) do not import one by one
    nodes = [n if n.op_type != "ReduceMean" else helper.make_node("ReduceMean", list(n.input), list(n.output),
                                                                  name=n.name, axes=[-2, -1])
             for n in layer_norm_torch(affine=False)]
    with pytest.raises(HlsfuseError, match=r"node '/ln/Pow' \(Pow\): supported on constants only.*node '/ln/Div' "
                                           r"\(Div\): the divisor must be a constant"):
        from_onnx(model(nodes, SEQ, opset=13), precision="float32")
    # a computed gamma stays a mul after the layer_norm
    nodes = [node("Relu", ["x"], ["r"]), *layer_norm_torch(affine=False, out="ln"), node("Mul", ["ln", "r"], ["y"])]
    graph, diffs, _ = errors(model(nodes, SEQ, opset=13))
    assert _ops(graph) == ["relu", "layer_norm", "mul"] and max(diffs.values()) <= 1e-5


def _bad(nodes, inits, opset=17, outputs=None):
    outputs = outputs or [nodes[-1].output[0]]
    value_infos = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, [1, 5, 8] if o == "y" else [1, 5, 1])
                   for o in outputs]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 5, 8])],
                              value_infos, [onnx.numpy_helper.from_array(np.asarray(v, np.float32), k)
                                            for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    return proto


@pytest.mark.parametrize("nodes,inits,outputs,message", [
    ([node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=1)], {"s": np.ones(40), "b": np.zeros(40)},
     None, "node 'ln' (LayerNormalization): attribute 'axis' is 1; only the last axis (-1) of the 3-dim input is "
     "supported"),
    ([node("LayerNormalization", ["x", "s", "b"], ["y", "m"], name="ln")], {"s": np.ones(8), "b": np.zeros(8)},
     ["y", "m"], "node 'ln' (LayerNormalization): only output 'Y' is supported (Mean and InvStdDev are training "
     "outputs)"),
    ([node("Relu", ["x"], ["r"]), node("LayerNormalization", ["x", "r"], ["y"], name="ln")], {}, None,
     "node 'ln' (LayerNormalization): input 'Scale' must be a constant (computed values are not supported here)"),
    ([node("LayerNormalization", ["x", "s"], ["y"], name="ln")], {"s": np.ones((2, 8))}, None,
     "node 'ln' (LayerNormalization): input 'Scale' must have shape [8] (the normalized axis), not [2, 8]"),
])
def test_errors_name_the_node_and_what_is_expected(nodes, inits, outputs, message):
    with pytest.raises(HlsfuseError) as info:
        from_onnx(_bad(nodes, inits, outputs=outputs), precision="float32")
    assert message in str(info.value)


@pytest.mark.parametrize("form", ["LayerNorm-torch-13", "LayerNormalization-17", "RMSNorm-torch-13"])
def test_fixed_point_import_is_within_the_stated_error(form):
    """auto:16 gives x fixed<16,6,RND,SAT> (its default), gamma and beta 16-bit weights, the default norm_dtype and
    an output of 16 bits with the integer bits its bound needs: the error is the output's half LSB plus at most
    2^-16 per unit of gamma (numerics.md section 9) plus x's and the weights' own roundings."""
    proto = (LN_FORMS | RMS_FORMS)[form]()
    graph, diffs, expected = errors(proto, precision="auto:16")
    out = graph.types["y"].dtype
    assert str(out) == "fixed<16,3,RND>"  # |y| <= sqrt(7) 1.5 + 0.5 (rms_norm: sqrt(8) 1.5)
    # x rounded to 2^-11 moves n by about that over the row's deviation (about 1 for these inputs), times gamma
    assert max(diffs.values()) <= out.lsb / 2 + 1.5 * 2.0**-16 + 1.5 * 2.0**-10, diffs


def test_block_compiles_for_both_targets(tmp_path, capsys):
    proto = block("torch")
    graph, diffs, _ = errors(proto)
    assert max(diffs.values()) <= 1e-5
    path = tmp_path / "block.onnx"
    path.write_bytes(proto.SerializeToString())
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--target", "all"]) == 0, capsys.readouterr().err
    cpp = (out / "hls" / "block.cpp").read_text()
    assert "hlsf::layer_norm_stage<" in cpp and "lut_layer_norm_rsqrt_0" in (out / "hls" / "luts.h").read_text()
    verilog = "".join(p.read_text() for p in (out / "verilog").glob("*.v"))
    assert "hlsf_rsqrt #(" in verilog and (out / "verilog" / "hlsf_rsqrt.v").is_file()


def test_run_compares_with_onnxruntime(tmp_path, capsys):
    proto = block("native", opset=17)
    path = tmp_path / "block.onnx"
    path.write_bytes(proto.SerializeToString())
    x = feeds(proto)["x"]
    np.save(tmp_path / "x.npy", x)
    got = hls_run(from_onnx(proto, precision="float32"), {"x": x})["y"]
    assert np.max(np.abs(got - ort_run(proto, {"x": x})["y"])) <= 1e-5
    assert main(["run", str(path), "--compare", "float", "--seed", "0"]) == 0, capsys.readouterr().err
