"""Attention masks before a Softmax: the forms torch and Hugging Face export, imported as ``masked_softmax``.

    Add(scores, C)              C a constant (after folding) with entries <= MASKED_BELOW: torch's causal
                                mask (-inf above the diagonal), BERT's (1 - attention_mask) * -10000,
                                Hugging Face's torch.finfo(float32).min
    Where(cond, scores, NEG)    cond a constant, NEG a constant that is <= MASKED_BELOW wherever the scores
    Where(cond, NEG, scores)    are not taken (masked_fill), when every reader is a Softmax

      -> the scores' ``Value`` with ``mask``: the positions (ONNX axes, the value's shape) that held such an
         entry. The finite rest of C (zeros, or a relative position bias) stays an ordinary add, left out
         when it is zero everywhere.

    Softmax over the last axis of a masked Value -> masked_softmax(x, mask) with the mask as [R, N]

Why MASKED_BELOW = -1e4: a score that far below its row's maximum has float32 exp(score - max) = 0 (exp
underflows below -104), so the position takes no part in the row's softmax in the float model either,
whatever the real scores are, as long as they stay within a few thousand of one another. In fixed point
the additive form is wrong as it stands: -1e4 (or -inf, which no fixed type holds) saturates the sum to
the type's minimum, which sits next to the real scores rather than far below them. A mask in the softmax
leaves those positions out exactly, in fixed point and float32 alike.

A masked Value may be read only by a Softmax over the last axis (or passed through Identity, Dropout and
Cast, which alias it, or another mask Add or Where, which joins its positions); any other reader, a graph
output included, is refused in one line naming it. A mask must be a graph constant: an Add before a
Softmax whose other operand is computed from a graph input by shape and elementwise steps alone (an
``attention_mask`` input) and broadcasts against the scores is refused, naming the Add; a Where whose
condition is computed is refused by its converter.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...ops import get_op
from ...ops.opaque import exp_int_bits_for
from ...types import FixedType
from . import layout
from .context import Context, Value
from .model import NodeDef, Unsupported
from .ops_tensor import binary

__all__ = ["MASKED_BELOW", "MASK_TYPE", "EXP_INT_BITS", "attention_mask", "refuse_masked", "masked_softmax"]

MASKED_BELOW = -1e4
"""Constant entries at or below this, added to (or selected into) scores before a Softmax, mask their position."""

MASK_TYPE = FixedType(1, 1, False)
"""masked_softmax's mask: ufixed<1,1>, 1 where a position is left out."""

EXP_INT_BITS = exp_int_bits_for(next(a.default for a in get_op("softmax").attrs if a.name == "exp_dtype"))
"""exp_int_bits of every softmax the import makes: d = x - max(x) saturates at -16 before the exp table, where
exp(-16) is below half of the default exp_dtype's LSB, so the 2^table_bits entries cover [-16, 16) and not the
whole range of x - max(x) (with 16-bit scores of 6 integer bits, buckets of 1/32 rather than 1/8)."""

_ALIASES = ("Identity", "Dropout", "Cast")  # converters that define their output as their input's entry
_PLUMBING = frozenset(("Reshape", "Unsqueeze", "Squeeze", "Expand", "Cast", "Identity", "Sub", "Mul", "Add", "Neg",
                       "Not", "Equal", "Where", "Tile", "Slice", "Concat", "Transpose", "Gather"))
"""The steps by which a model turns an attention_mask input into an additive mask."""


def _readers(ctx: Context, tensor: str) -> list[NodeDef]:
    return [n for n in ctx.model.nodes if tensor in n.inputs]


def _read_by_softmax_only(ctx: Context, tensor: str) -> bool:
    readers = _readers(ctx, tensor)
    return bool(readers) and tensor not in ctx.outputs and all(n.op == "Softmax" and not n.domain for n in readers)


def attention_mask(ctx: Context, node: NodeDef) -> bool:
    """Convert ``node`` here when it applies an attention mask (the module note); False: not one."""
    if node.domain or node.op not in ("Add", "Where") or len(node.outputs) != 1:
        return False
    if node.op == "Add":
        return _add(ctx, node)
    return _where(ctx, node)


def _computed(ctx: Context, name: str) -> Value | None:
    """The Value of computed tensor ``name`` when a mask may apply to it (no affine), else None."""
    entry = ctx.entry(name)
    scaled = isinstance(entry, Value) and entry.affine is not None and not entry.affine.is_identity
    if not isinstance(entry, Value) or scaled:  # a deferred flatten, or an affine of what the tensor holds
        return None
    return entry


def _apply(ctx: Context, node: NodeDef, x: Value, masked: np.ndarray, rest: np.ndarray, hint: str) -> None:
    """Output of ``node``: ``x`` + ``rest`` (an add only where ``rest`` is not all 0 or must broadcast ``x``) with
    the positions ``masked`` joined to ``x``'s own."""
    t = node.outputs[0]
    shape = tuple(np.broadcast_shapes(x.shape, masked.shape, rest.shape))
    value = x
    if np.any(rest != 0) or x.shape != shape:
        value = binary(ctx, t, "add", replace(x, mask=None), rest, hints=("", hint))
    positions = np.broadcast_to(masked, shape)
    if x.mask is not None:
        positions = positions | np.broadcast_to(x.mask, shape)
    ctx.define(t, replace(value, mask=np.array(positions)))


def _add(ctx: Context, node: NodeDef) -> bool:
    names = [n for n in node.inputs if n]
    if len(names) != 2 or ctx.opset < 7:  # opset 6's legacy broadcasting: the usual converter
        return False
    for c_name, x_name in (names[::-1], names):
        const, x = ctx.const(c_name), _computed(ctx, x_name)
        if const is None or x is None:
            continue
        data = np.asarray(const, dtype=np.float64)
        masked = data <= MASKED_BELOW
        if not masked.any():
            return False
        _apply(ctx, node, x, masked, np.where(masked, 0.0, data), f"{c_name}.kept")
        return True
    if all(ctx.const(n) is None for n in names) and any(n.op == "Softmax" for n in _readers(ctx, node.outputs[0])):
        _refuse_computed(ctx, node, names)
    return False


def _where(ctx: Context, node: NodeDef) -> bool:
    cond = ctx.const(node.input(0))
    if cond is None or len(node.inputs) != 3 or not _read_by_softmax_only(ctx, node.outputs[0]):
        return False
    a, b = (ctx.const(n) for n in node.inputs[1:])
    if (a is None) == (b is None):
        return False
    x = _computed(ctx, node.inputs[2] if a is not None else node.inputs[1])
    if x is None:
        return False
    taken = np.asarray(cond).astype(bool)
    taken = taken if b is not None else ~taken  # where the scores are taken
    fill = np.asarray(a if a is not None else b, dtype=np.float64)
    shape = tuple(np.broadcast_shapes(taken.shape, fill.shape))
    masked = ~np.broadcast_to(taken, shape)
    if not masked.any() or np.any(np.broadcast_to(fill, shape)[masked] > MASKED_BELOW):
        return False  # nothing masked, or a finite fill: the Where converter selects exactly
    _apply(ctx, node, x, masked, np.zeros(shape), f"{node.outputs[0]}.kept")
    return True


def _input_of(ctx: Context, name: str) -> str | None:
    """The graph input that tensor ``name`` is computed from by mask plumbing alone (shape and elementwise steps
    with constants), or None when it is not (a MatMul, a Softmax ... on the way, or no input at all)."""
    producer = {o: n for n in ctx.model.nodes for o in n.outputs}
    inputs = {i.name for i in ctx.model.inputs}
    stack, seen, found = [name], set(), None
    while stack:
        t = stack.pop()
        if t in seen or ctx.const(t) is not None:
            continue
        seen.add(t)
        if t in inputs:
            found = found or t
            continue
        n = producer.get(t)
        if n is None or n.domain or n.op not in _PLUMBING:
            return None
        stack.extend(i for i in n.inputs if i)
    return found


def _refuse_computed(ctx: Context, node: NodeDef, names: list[str]) -> None:
    """Refuse an Add before a Softmax of the scores and a mask computed from a graph input."""
    shape = tuple(np.broadcast_shapes(*(ctx.shape(n) for n in names)))
    for mask, scores in (names, names[::-1]):
        source = _input_of(ctx, mask)
        if source is not None and ctx.shape(mask) != shape and _input_of(ctx, scores) is None:
            raise Unsupported(f"input '{mask}' is an attention mask computed from graph input '{source}'; only a "
                              "constant mask (entries <= -1e4 where masked) is supported before a Softmax: export "
                              "the model with the mask it runs with as a constant")


def refuse_masked(ctx: Context, node: NodeDef) -> None:
    """Refuse ``node`` when it reads a masked Value and is no Softmax (the Softmax converter checks its axis)."""
    if node.op in ("Softmax", *_ALIASES) and not node.domain:
        return
    for name in dict.fromkeys(node.inputs):
        entry = ctx.values.get(name) if name else None
        if isinstance(entry, Value) and entry.mask is not None:
            raise Unsupported(f"input '{name}' holds an attention mask: an additive mask (entries <= -1e4) is "
                              "supported only right before a Softmax over the last axis")


def masked_softmax(ctx: Context, tensor: str, x: Value, axis: int | None) -> None:
    """The Softmax over ``axis`` of masked ``x`` (None: a Softmax before opset 13 over the axes from one before
    the last on): masked_softmax, its mask held as [R, N] (R = 1 or the second-to-last hlsfuse dimension) in the
    layout the input is held in."""
    if axis != x.rank - 1:
        over = "the axes from 'axis' on (opset < 13)" if axis is None else f"axis {axis}"
        raise Unsupported(f"its input holds an attention mask: an additive mask (entries <= -1e4) is supported only "
                          f"right before a Softmax over the last axis, not over {over}")
    order = tuple(a for a in x.order if a != axis) + (axis,)
    held = layout.to_hls(np.broadcast_to(x.mask, x.shape), order)
    n = held.shape[-1]
    rows = held.reshape(-1, n)
    if (rows == rows[0]).all():
        mask = rows[:1]
    elif held.ndim >= 2 and (rows.reshape(-1, held.shape[-2], n) == held.reshape(-1, held.shape[-2], n)[0]).all():
        mask = held.reshape(-1, held.shape[-2], n)[0]
    else:
        raise Unsupported(f"the attention mask differs between heads or batches (over scores of shape "
                          f"{list(x.shape)}); masked_softmax holds one mask row for every row, or one per query "
                          "(the second-to-last axis) shared by all heads and batches")
    empty = np.flatnonzero(mask.all(axis=-1))
    if empty.size:
        raise Unsupported(f"the attention mask leaves out every position of row {int(empty[0])}: the softmax of "
                          "an empty row is undefined")
    weight = ctx.weight(mask.astype(np.float64), f"{tensor}.mask", dtype=MASK_TYPE)
    ctx.node(tensor, "masked_softmax", [ctx.in_order(replace(x, mask=None), order), weight], order,
             exp_int_bits=EXP_INT_BITS)
