"""Attention masks in ONNX models (hlsfuse/frontend/onnx/masks.py), written with onnx.helper as torch and Hugging
Face export them: an additive constant before a Softmax over the last axis (torch's causal mask with -inf above the
diagonal, BERT's (1 - attention_mask) * -10000 folded from a constant, finfo(float32).min), and masked_fill's
Where. Each imports as masked_softmax, matches onnxruntime (float32 to float rounding, fixed point to a small
error the float compare measures) and gives exactly 0 where masked; the forms hlsfuse cannot hold are refused in
one line naming the node."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import need

need("onnx")
need("onnxruntime")
from onnx import numpy_helper  # noqa: E402
from onnx_build import errors, feeds, hls_run, model, node, ort_run, weights  # noqa: E402

from hlsfuse import HlsfuseError, reference  # noqa: E402
from hlsfuse.frontend.onnx import compare_float, from_onnx, to_graph_layout  # noqa: E402

S, E, H = 6, 8, 2  # tokens, hidden, heads
NEG_INF = np.float32(-np.inf)
FMIN = np.finfo(np.float32).min


def causal(s: int = S) -> np.ndarray:
    """torch's generate_square_subsequent_mask: -inf above the diagonal, 0 elsewhere."""
    return np.triu(np.full((s, s), NEG_INF, np.float32), 1)


def padded(keep: int, s: int = S) -> np.ndarray:
    """A Hugging Face attention_mask [1, s]: 1 for the first ``keep`` tokens, 0 for the padding."""
    return (np.arange(s) < keep).astype(np.float32)[None]


def scalar(name: str, value) -> object:
    """A scalar Constant node, as torch writes its constants."""
    return node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.float32), name))


def attention(mask_nodes, inits, scores="s", opset=17, heads=H, seed=3, outputs=("p", "y"), inputs=None):
    """Self-attention over x [1, S, E] as torch exports it: Q, K, V projections, heads split by Reshape and
    Transpose, Q K^T scaled (``s``), then ``mask_nodes`` (ending in the Softmax's input, ``scores``) and Softmax
    over the last axis (``p``, also an output), times V (``y``); ``inputs``: more graph inputs {name: shape}."""
    rng = np.random.default_rng(seed)
    dh = E // heads
    nodes = []
    for p in "qkv":
        nodes += [node("MatMul", ["x", f"w{p}"], [f"{p}0"]), node("Reshape", [f"{p}0", "split"], [f"{p}1"])]
    nodes += [node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]), node("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
              node("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]), node("MatMul", ["q", "kt"], ["s0"]),
              node("Mul", ["s0", "scale"], ["s"])]
    nodes += list(mask_nodes)
    nodes += [node("Softmax", [scores], ["p"], name="softmax", axis=-1), node("MatMul", ["p", "v"], ["c"]),
              node("Transpose", ["c"], ["c1"], perm=[0, 2, 1, 3]), node("Reshape", ["c1", "merge"], ["y"])]
    init = {f"w{p}": weights(rng, E, E) for p in "qkv"}
    init.update(split=np.array([1, S, heads, dh], np.int64), merge=np.array([1, S, E], np.int64),
                scale=np.float32(dh ** -0.5), **inits)
    return model(nodes, {"x": (1, S, E), **(inputs or {})}, init, opset=opset, outputs=list(outputs))


def add_mask(mask, name="add"):
    return attention([node("Add", ["s", "mask"], ["m"], name=name)], {"mask": mask}, scores="m")


def bert_padding(keep: int, fill: float = -10000.0):
    """BERT: extended = (1.0 - attention_mask[:, None, None, :]) * fill, a constant here, added to the scores."""
    return attention([scalar("one", 1.0), scalar("fill", fill),
                      node("Unsqueeze", ["am", "axes"], ["am4"]), node("Sub", ["one", "am4"], ["inv"]),
                      node("Mul", ["inv", "fill"], ["ext"]), node("Add", ["s", "ext"], ["m"], name="add")],
                     {"am": padded(keep), "axes": np.array([1, 2], np.int64)}, scores="m")


def masked_fill(fill, taken_first: bool):
    """scores.masked_fill(mask, fill) as Where: Where(keep, scores, fill), or Where(masked, fill, scores)."""
    keep = np.tril(np.ones((S, S), bool))
    operands = ["keep", "s", "fill"] if taken_first else ["masked", "fill", "s"]
    return attention([node("Where", operands, ["m"], name="where")],
                     {"keep": keep, "masked": ~keep, "fill": np.float32(fill)}, scores="m")


FORMS = {
    "causal-inf": (lambda: add_mask(causal()), np.triu(np.ones((S, S), bool), 1)),
    "causal-finfo-min": (lambda: add_mask(np.triu(np.full((S, S), FMIN, np.float32), 1)),
                         np.triu(np.ones((S, S), bool), 1)),
    "causal-4d": (lambda: add_mask(causal()[None, None]), np.triu(np.ones((S, S), bool), 1)),
    "bert-padding": (lambda: bert_padding(4), np.arange(S) >= 4),
    "bert-padding-finfo-min": (lambda: bert_padding(5, float(FMIN)), np.arange(S) >= 5),
    "where-taken-first": (lambda: masked_fill(-np.inf, True), np.triu(np.ones((S, S), bool), 1)),
    "where-fill-first": (lambda: masked_fill(-1e9, False), np.triu(np.ones((S, S), bool), 1)),
}
"""name -> (model factory, the positions masked: broadcast over [1, H, S, S])."""


def _left_out(where) -> np.ndarray:
    return np.broadcast_to(where, (1, H, S, S))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_float32_import_matches_onnxruntime_and_is_masked(form):
    factory, where = FORMS[form]
    graph, diffs, expected = errors(factory(), scale=1.0)
    assert max(diffs.values()) <= 2e-6, diffs
    (soft,) = [n for n in graph.nodes if "softmax" in n.op]
    assert soft.op == "masked_softmax"
    assert not [n for n in graph.nodes if n.op in ("add", "mul", "bias_add")]  # the mask is no longer an add
    got = hls_run(graph, feeds(factory()))["p"]
    assert np.all(got[_left_out(where)] == 0.0) and np.all(expected["p"][_left_out(where)] == 0.0)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_fixed_point_import_is_close_to_the_float_model_and_exactly_zero_where_masked(form):
    factory, where = FORMS[form]
    proto = factory()
    graph = from_onnx(proto, precision="fixed<16,6,RND,SAT>")
    frames = [to_graph_layout(graph, feeds(proto, seed)) for seed in range(4)]
    accuracy = compare_float(proto, graph, frames)
    # softmax's own error with fixed<16,6> and 10-bit tables; ignoring the mask would be off by about 0.5
    assert accuracy.output("p").max_abs <= 0.03 and accuracy.output("y").relative <= 0.02
    mask = graph.constant_map[graph.node("p").inputs[1]]
    assert str(mask.type.dtype) == "ufixed<1,1>"
    assert mask.type.shape == ((S, S) if where.ndim == 2 else (1, S))  # one row per query, or one for every row
    for frame in frames:
        assert np.all(reference.run(graph, frame)["p"][_left_out(where)] == 0.0)


def test_auto_precision_bounds_the_scores_not_the_mask():
    """The additive form's exact bound reaches -1e4, so auto would type the masked scores to hold it; with the mask
    the Softmax reads the scaled product as auto types it, and its bound (ops.opaque) counts the kept positions."""
    proto = bert_padding(4)
    graph = from_onnx(proto, precision="auto:16", input_ranges={"x": (-3.0, 3.0)})
    assert graph.node("p").op == "masked_softmax" and not [n for n in graph.nodes if n.op == "add"]
    assert graph.node(graph.node("p").inputs[0]).op in ("mul", "scale")
    # below 1: exp(0) is the table's 1.0 and the reciprocal of a sum above 1 is below 1 (the import's exp_int_bits
    # table spans [-16, 0], whose largest entry is exp(0))
    assert str(graph.types["p"].dtype) == "ufixed<16,0,RND>"
    for seed in range(2):
        p = reference.run(graph, to_graph_layout(graph, feeds(proto, seed)))["p"]
        assert np.all(p[..., 4:] == 0.0) and np.all(p[..., :4] > 0.0)


def test_a_relative_bias_stays_an_add_and_masks_join():
    bias = np.random.default_rng(5).normal(size=(S, S)).astype(np.float32)
    proto = attention([node("Add", ["s", "bias_mask"], ["b"], name="bias"),
                       node("Add", ["b", "pad"], ["m"], name="pad_add")],
                      {"bias_mask": bias + causal(), "pad": (1 - padded(5)) * FMIN}, scores="m")
    graph, diffs, expected = errors(proto)
    assert max(diffs.values()) <= 2e-6, diffs
    assert [n.op for n in graph.nodes if n.op in ("add", "masked_softmax")] == ["add", "masked_softmax"]
    kept = graph.constant_map[[i for n in graph.nodes if n.op == "add" for i in n.inputs][1]]
    assert np.array_equal(kept.data.reshape(S, S), np.tril(bias))  # the bias where kept, 0 where masked
    where = np.triu(np.ones((S, S), bool), 1) | (np.arange(S) >= 5)
    assert np.all(hls_run(graph, feeds(proto))["p"][_left_out(where)] == 0.0)
    assert np.array_equal(graph.constant_map[graph.node("p").inputs[1]].data, where.astype(np.int64))


def test_softmax_before_opset_13_over_the_last_axis():
    proto = attention([node("Add", ["s", "mask"], ["m"])], {"mask": causal()}, scores="m", opset=11)
    graph, diffs, _ = errors(proto)
    assert max(diffs.values()) <= 2e-6 and graph.node("p").op == "masked_softmax"


def test_a_where_not_before_a_softmax_keeps_its_exact_import():
    proto = attention([node("Where", ["keep", "s", "fill"], ["m"]), node("Relu", ["m"], ["r"])],
                      {"keep": np.tril(np.ones((S, S), bool)), "fill": np.float32(-1e9)}, scores="r",
                      outputs=("p", "y"))
    graph = from_onnx(proto, precision="float32")
    assert graph.node("p").op == "softmax" and "mul" in [n.op for n in graph.nodes]


# --------------------------------------------------------------------------
# Refused, in one line naming the node
# --------------------------------------------------------------------------


def _refusal(proto, precision="float32") -> str:
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto, precision=precision)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_a_mask_from_a_graph_input_is_refused():
    proto = attention([node("Add", ["s", "mask"], ["m"], name="add")], {}, scores="m", inputs={"mask": (S, S)})
    assert ("node 'add' (Add): input 'mask' is an attention mask computed from graph input 'mask'; only a constant "
            "mask (entries <= -1e4 where masked) is supported before a Softmax") in _refusal(proto)


def test_a_hugging_face_attention_mask_input_is_refused():
    proto = attention([scalar("one", 1.0), scalar("fill", -10000.0), node("Unsqueeze", ["am", "axes"], ["am4"]),
                       node("Sub", ["one", "am4"], ["inv"]), node("Mul", ["inv", "fill"], ["ext"]),
                       node("Add", ["s", "ext"], ["m"], name="add")], {"axes": np.array([1, 2], np.int64)},
                      scores="m", inputs={"am": (1, S)})
    assert "node 'add' (Add): input 'ext' is an attention mask computed from graph input 'am'" in _refusal(proto)


def test_a_where_with_a_computed_condition_is_refused():
    proto = attention([node("Greater", ["am", "half"], ["keep"]), node("Where", ["keep", "s", "fill"], ["m"],
                                                                       name="where")],
                      {"half": np.float32(0.5), "fill": np.float32(-np.inf)}, scores="m", inputs={"am": (1, S)})
    assert ("node 'where' (Where): input 'condition' ('keep') is computed; only a constant condition (a mask) is "
            "supported") in _refusal(proto)


def test_another_reader_of_a_masked_tensor_is_refused():
    proto = attention([node("Add", ["s", "mask"], ["m"]), node("Relu", ["m"], ["r"], name="relu")],
                      {"mask": causal()}, scores="r")
    assert ("node 'relu' (Relu): input 'm' holds an attention mask: an additive mask (entries <= -1e4) is supported "
            "only right before a Softmax over the last axis") in _refusal(proto)


def test_a_masked_graph_output_is_refused():
    proto = attention([node("Add", ["s", "mask"], ["m"])], {"mask": causal()}, scores="m", outputs=("m", "y"))
    assert ("output 'm': it holds an attention mask: an additive mask (entries <= -1e4) is supported only right "
            "before a Softmax over the last axis") in _refusal(proto)


def test_a_softmax_over_another_axis_is_refused():
    proto = add_mask(causal())
    next(n for n in proto.graph.node if n.op_type == "Softmax").attribute[0].i = 2
    assert ("node 'softmax' (Softmax): its input holds an attention mask: an additive mask (entries <= -1e4) is "
            "supported only right before a Softmax over the last axis, not over axis 2") in _refusal(proto)


def test_a_mask_per_head_is_refused():
    per_head = np.stack([causal(), causal().T])[None]  # head 1 masks below the diagonal
    assert ("node 'softmax' (Softmax): the attention mask differs between heads or batches (over scores of shape "
            "[1, 2, 6, 6]); masked_softmax holds one mask row for every row, or one per query") in _refusal(
        add_mask(per_head))


def test_a_row_masked_everywhere_is_refused():
    mask = causal()
    mask[2] = FMIN
    assert ("node 'softmax' (Softmax): the attention mask leaves out every position of row 2: the softmax of an "
            "empty row is undefined") in _refusal(add_mask(mask), "fixed<16,6>")


def test_onnxruntime_agrees_the_test_models_mask():
    # the float model gives exactly 0 where masked too: the threshold's premise (exp underflows)
    for form, (factory, where) in FORMS.items():
        proto = factory()
        p = ort_run(proto, feeds(proto, scale=3.0))["p"]
        assert np.all(p[_left_out(where)] == 0.0), form
