"""Converters of elementwise and data-movement ONNX ops.

Each converter reads its inputs from the ``Context``, adds hlsfuse nodes and records
what the ONNX output became. Ops with axes translate them through the input's layout;
Transpose, Identity and Dropout add no node at all.

Broadcasting follows ONNX (numpy) rules on the ONNX shapes. The result is held in the
layout of the first full-rank computed operand; constants are rearranged into that
layout at import time, and a constant that varies only along the hlsfuse channel axis
(a bias, a per-channel scale) becomes ``bias_add`` / ``scale`` with a 1-D weight.
"""

from __future__ import annotations

import numpy as np

from ...ops.pad import PAD_MODES
from . import layout
from .context import Context, Deferred, Value
from .fold import constant_input, ints_input, normalize_axes, reshape_target, slice_plan
from .layout import Order
from .model import NodeDef, Unsupported

__all__ = ["TENSOR_CONVERTERS", "binary", "clip_bounds"]

FLOAT32_MAX = float(np.finfo(np.float32).max)


def _out(node: NodeDef) -> str:
    return node.outputs[0]


def _alias(ctx: Context, node: NodeDef) -> None:
    ctx.define(_out(node), ctx.entry(node.inputs[0]))


# --------------------------------------------------------------------------
# Unary
# --------------------------------------------------------------------------


FINE_TABLE_BITS = 12
"""table_bits of the activations the import makes whose slope is near 1 where their inputs lie (tanh, gelu,
erf, silu): 10 bits over a 16-bit input (buckets of 64 LSBs) would put a few percent of their values into the
error (an FFN's GELU, BERT's pooler tanh); 12 bits make buckets of 16 LSBs (4096 entries,
docs/transformers.md)."""


def _unary(op: str, **attrs_of):
    def convert(ctx: Context, node: NodeDef) -> None:
        x = ctx.value(node.inputs[0])
        attrs = {key: fn(node) for key, fn in attrs_of.items()}
        ctx.node(_out(node), op, [x.hls], x.order, **attrs)

    return convert


def clip_bounds(ctx: Context, node: NodeDef) -> tuple[float | None, float | None]:
    """Clip's (min, max), None where absent (attributes before opset 11, constant inputs since)."""
    if ctx.opset < 11:
        return node.attr("min"), node.attr("max")
    consts = ctx.consts(node)
    lo, hi = (constant_input(node, consts, i, what) for i, what in ((1, "min"), (2, "max")))
    return tuple(None if v is None else float(np.asarray(v).reshape(-1)[0]) for v in (lo, hi))


def _clip(ctx: Context, node: NodeDef) -> None:
    lo, hi = clip_bounds(ctx, node)
    if lo is None and hi is None:
        _alias(ctx, node)
        return
    x = ctx.value(node.inputs[0])
    low = -FLOAT32_MAX if lo is None else float(lo)
    high = FLOAT32_MAX if hi is None else float(hi)
    ctx.node(_out(node), "clip", [x.hls], x.order, min=low, max=high)


def _dropout(ctx: Context, node: NodeDef) -> None:
    if any(ctx.is_read(o) for o in node.outputs[1:]):
        raise Unsupported("output 'mask' is not supported (inference only)")
    mode = constant_input(node, ctx.consts(node), 2, "training_mode") if ctx.opset >= 12 else None
    if mode is not None and bool(np.asarray(mode).reshape(-1)[0]):
        raise Unsupported("input 'training_mode' must be false (inference only)")
    _alias(ctx, node)


_FLOAT_TYPES = (1, 10, 11)  # TensorProto FLOAT, FLOAT16, DOUBLE


def _cast(ctx: Context, node: NodeDef) -> None:
    if node.attr("to") not in _FLOAT_TYPES:
        raise Unsupported("casting a computed tensor to a non-float type is not supported (only float casts)")
    _alias(ctx, node)


# --------------------------------------------------------------------------
# Broadcasting binary ops
# --------------------------------------------------------------------------


def _shape(entry) -> tuple[int, ...]:
    return tuple(np.shape(entry)) if isinstance(entry, np.ndarray) else entry.shape


def _order_for(entries, rank: int) -> Order:
    """The first non-plain layout among the full-rank computed operands, else plain."""
    for e in entries:
        if isinstance(e, Value) and e.rank == rank and not layout.is_plain(e.order):
            return e.order
    return layout.plain(rank)


def _as_input(ctx: Context, entry, rank: int, order: Order, hint: str) -> str:
    """An operand of a broadcasting op as an hlsfuse tensor in ``order``."""
    if isinstance(entry, np.ndarray):
        data = np.asarray(entry, dtype=np.float64).reshape((1,) * (rank - entry.ndim) + entry.shape)
        return ctx.weight(layout.to_hls(data, order), hint)
    return ctx.in_order(ctx.expanded(entry, rank), order)


def _channel_vector(const: np.ndarray, rank: int, order: Order, channels: int) -> np.ndarray | None:
    """``const`` as a per-channel vector on the last hlsfuse axis, if it is one."""
    data = np.asarray(const, dtype=np.float64).reshape((1,) * (rank - const.ndim) + const.shape)
    held = layout.to_hls(data, order)
    if any(d != 1 for d in held.shape[:-1]) or held.shape[-1] not in (1, channels):
        return None
    return np.broadcast_to(held.reshape(-1), (channels,)).copy()


def binary(ctx: Context, tensor: str, op: str, a, b, hints=("", ""), part: str | None = None) -> Value:
    """``op(a, b)`` with ONNX broadcasting; ``a``/``b`` are Values or constant arrays."""
    a, b = (e if isinstance(e, Value) else np.asarray(e) for e in (a, b))
    try:
        shape = tuple(np.broadcast_shapes(_shape(a), _shape(b)))
    except ValueError:
        raise Unsupported(f"input shapes {list(_shape(a))} and {list(_shape(b))} do not broadcast") from None
    rank = len(shape)
    order = _order_for((a, b), rank)
    channels = layout.hls_shape(shape, order)[-1] if rank else 1
    hints = tuple(h or f"{tensor}.{'ab'[i]}" for i, h in enumerate(hints))
    if op in ("add", "mul"):
        for const, other, hint in ((b, a, hints[1]), (a, b, hints[0])):
            if isinstance(const, np.ndarray) and isinstance(other, Value) and other.shape == shape and rank:
                vector = _channel_vector(const, rank, order, channels)
                if vector is not None:
                    x = ctx.in_order(other, order)
                    kind = "bias_add" if op == "add" else "scale"
                    return ctx.node(tensor, kind, [x, ctx.weight(vector, hint)], order, part=part)
    inputs = [_as_input(ctx, e, rank, order, h) for e, h in zip((a, b), hints)]
    return ctx.node(tensor, op, inputs, order, part=part)


def _operands(ctx: Context, node: NodeDef):
    """The two operands of an arithmetic node, with opset 6's legacy broadcasting resolved:
    ``broadcast=1, axis=k`` aligns B with A's axes from k on, so B gets trailing size-1 axes."""
    a, b = (ctx.operand(n) for n in node.inputs[:2])
    axis = node.attr("axis")
    if ctx.opset >= 7 or not node.attr("broadcast", 0) or axis is None:
        return a, b
    rank_a, shape_b = len(_shape(a)), _shape(b)
    trailing = rank_a - axis % max(rank_a, 1) - len(shape_b)
    if trailing <= 0:
        return a, b
    shape = shape_b + (1,) * trailing
    if isinstance(b, np.ndarray):
        return a, b.reshape(shape)
    return a, ctx.node(_out(node), "reshape", [ctx.plain(b)], layout.plain(len(shape)), part="b", newshape=list(shape))


def _binary(op: str):
    def convert(ctx: Context, node: NodeDef) -> None:
        a, b = _operands(ctx, node)
        binary(ctx, _out(node), op, a, b, hints=tuple(node.inputs[:2]))

    return convert


def _sub(ctx: Context, node: NodeDef) -> None:
    a, b = _operands(ctx, node)
    if isinstance(b, np.ndarray):  # x - c is x + (-c): a bias when c is per-channel
        negated = -np.asarray(b, dtype=np.float64)
        binary(ctx, _out(node), "add", a, negated, hints=(node.inputs[0], f"{node.inputs[1]}.neg"))
    else:
        binary(ctx, _out(node), "sub", a, b, hints=tuple(node.inputs[:2]))


def _div(ctx: Context, node: NodeDef) -> None:
    a, b = _operands(ctx, node)
    if not isinstance(b, np.ndarray):
        raise Unsupported("the divisor must be a constant (division by a computed tensor is not supported)")
    if np.any(b == 0):
        raise Unsupported("the constant divisor contains 0")
    reciprocal = 1.0 / np.asarray(b, dtype=np.float64)
    binary(ctx, _out(node), "mul", a, reciprocal, hints=(node.inputs[0], f"{node.inputs[1]}.reciprocal"))


def _variadic(op: str):
    """Sum / Max / Min of any number of inputs: a chain of binary ops."""

    def convert(ctx: Context, node: NodeDef) -> None:
        names = [n for n in node.inputs if n]
        if len(names) == 1:
            _alias(ctx, node)
            return
        acc = ctx.operand(names[0])
        for i, name in enumerate(names[1:], start=1):
            last = i == len(names) - 1
            acc = binary(ctx, _out(node), op, acc, ctx.operand(name), hints=(names[0], name),
                         part=None if last else f"{op}{i}")

    return convert


def _prelu(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    slope = constant_input(node, ctx.consts(node), 1, "slope")
    if ctx.opset < 7 and slope.ndim == 1 and x.rank > 2 and slope.size == x.shape[1]:
        slope = slope.reshape(-1, *([1] * (x.rank - 2)))  # opset 6: a 1-D slope is per channel
    values = np.unique(np.asarray(slope, dtype=np.float64))
    t = _out(node)
    if values.size == 1 and -1.0 <= values[0] < 1.0:
        ctx.node(t, "leaky_relu", [x.hls], x.order, alpha=float(values[0]))
        return
    # prelu(x) = max(x, 0) + slope * min(x, 0)
    positive = ctx.node(t, "relu", [x.hls], x.order, part="pos")
    zero = ctx.weight(np.zeros((1,) * len(x.order)), f"{t}.zero")
    negative = ctx.node(t, "minimum", [x.hls, zero], x.order, part="neg")
    scaled = binary(ctx, t, "mul", negative, slope, hints=("", node.inputs[1]), part="slope")
    binary(ctx, t, "add", positive, scaled)


# --------------------------------------------------------------------------
# Layout and data movement
# --------------------------------------------------------------------------


def _transpose(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    perm = tuple(node.attr("perm") or reversed(range(x.rank)))
    if sorted(perm) != list(range(x.rank)):
        raise Unsupported(f"attribute 'perm' {list(perm)} is not a permutation of {x.rank} axes")
    shape = tuple(x.shape[p] for p in perm)
    ctx.define(_out(node), Value(x.hls, shape, layout.transposed(x.order, perm)))


def reshape_to(ctx: Context, node: NodeDef, target: tuple[int, ...]) -> None:
    """Reshape/Flatten to ``target`` keeping ONNX's element order (see context.Deferred)."""
    x = ctx.value(node.inputs[0])
    t = _out(node)
    if target == x.shape:
        ctx.define(t, x)
    elif layout.same_element_order(x.shape, x.order, layout.plain(x.rank)):
        ctx.node(t, "reshape", [x.hls], layout.plain(len(target)), newshape=list(target))
    elif len(target) == 2 and target[0] == x.shape[0] and x.order[0] == 0:
        ctx.define(t, Deferred(target, x, layout.flat_columns(x.shape, x.order)))
    elif (order := layout.reshaped(x.shape, x.order, target)) is not None:  # the transpose still not done
        ctx.node(t, "reshape", [x.hls], order, newshape=list(layout.hls_shape(target, order)))
    else:
        ctx.node(t, "reshape", [ctx.plain(x)], layout.plain(len(target)), newshape=list(target))


def _flatten(ctx: Context, node: NodeDef) -> None:
    shape = ctx.shape(node.inputs[0])
    axis = node.attr("axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise Unsupported(f"attribute 'axis' {axis} is out of range for a {len(shape)}-dim tensor")
    axis = axis + len(shape) if axis < 0 else axis
    reshape_to(ctx, node, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


def _reshape(ctx: Context, node: NodeDef) -> None:
    target = ctx.const(node.input(1))
    if target is None:
        raise Unsupported("input 'shape' must be a constant (dynamic shapes are not supported)")
    shape = ctx.shape(node.inputs[0])
    reshape_to(ctx, node, reshape_target(shape, target, node.attr("allowzero", 0)))


def _squeeze(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    axes = ints_input(node, ctx.consts(node), ctx.opset, 13, "axes", 1)
    axes = tuple(a for a, d in enumerate(x.shape) if d == 1) if axes is None else normalize_axes(axes, x.rank)
    if any(x.shape[a] != 1 for a in axes):
        raise Unsupported(f"attribute 'axes' {list(axes)} names an axis whose size is not 1 in {list(x.shape)}")
    _relayout(ctx, node, x, tuple(d for a, d in enumerate(x.shape) if a not in axes), layout.without(x.order, axes))


def _unsqueeze(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    axes = ints_input(node, ctx.consts(node), ctx.opset, 13, "axes", 1)
    if not axes:
        raise Unsupported("attribute 'axes' must name at least one axis")
    axes = normalize_axes(axes, x.rank + len(axes))
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    _relayout(ctx, node, x, tuple(shape), layout.with_units(x.order, axes))


def _relayout(ctx: Context, node: NodeDef, x: Value, shape: tuple[int, ...], order: Order) -> None:
    """Same elements in the same hlsfuse order, seen as ONNX ``shape`` (size-1 axes changed)."""
    ctx.node(_out(node), "reshape", [x.hls], order, newshape=list(layout.hls_shape(shape, order)))


def _concat(ctx: Context, node: NodeDef) -> None:
    names = [n for n in node.inputs if n]
    entries = [ctx.operand(n) for n in names]
    rank = len(_shape(entries[0]))
    axis = node.attr("axis")
    if axis is None or not -rank <= axis < rank:
        raise Unsupported(f"attribute 'axis' ({axis}) must be in {-rank}..{rank - 1}")
    order = _order_for(entries, rank)
    inputs = [_as_input(ctx, e, rank, order, n) for e, n in zip(entries, names)]
    ctx.node(_out(node), "concat", inputs, order, axis=layout.axis_of(order, axis % rank))


def _slice(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    if ctx.opset < 10:
        args = (node.attr("starts"), node.attr("ends"), node.attr("axes"), None)
    else:
        consts = ctx.consts(node)
        args = tuple(ints_input(node, consts, ctx.opset, 10, what, i)
                     for i, what in enumerate(("starts", "ends", "axes", "steps"), start=1))
    if args[0] is None or args[1] is None:
        raise Unsupported("'starts' and 'ends' are required")
    plan = slice_plan(x.shape, *args)
    begin, end, step = [], [], []
    for a in x.order:
        dim = 1 if a is None else x.shape[a]
        s, e, st = plan.get(a, (0, dim, 1)) if a is not None else (0, 1, 1)
        begin.append(s)
        end.append(-(dim + 1) if e == -1 and st < 0 else e)  # numpy reads end -1 as the last element
        step.append(st)
    if all(b == 0 and e == d and s == 1 for b, e, s, d in zip(begin, end, step, layout.hls_shape(x.shape, x.order))):
        ctx.define(_out(node), x)
        return
    ctx.node(_out(node), "slice", [x.hls], x.order, begin=begin, end=end, step=step)


def _pad(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    mode = node.attr("mode", "constant")
    if mode not in PAD_MODES:
        raise Unsupported(f"attribute 'mode' is '{mode}', expected one of {', '.join(PAD_MODES)}")
    rank = x.rank
    if ctx.opset < 11:
        pads, value, axes = node.attr("pads"), node.attr("value", 0.0), None
    else:
        consts = ctx.consts(node)
        pads = ints_input(node, consts, ctx.opset, 11, "pads", 1)
        fill = constant_input(node, consts, 2, "constant_value")
        value = 0.0 if fill is None else float(np.asarray(fill).reshape(-1)[0])
        axes = ints_input(node, consts, ctx.opset, 18, "axes", 3) if ctx.opset >= 18 else None
    axes = tuple(range(rank)) if axes is None else tuple(a % rank for a in axes)
    if pads is None or len(pads) != 2 * len(axes):
        raise Unsupported(f"'pads' must have {2 * len(axes)} values")
    full = [0] * (2 * rank)
    for i, a in enumerate(axes):
        full[a], full[rank + a] = pads[i], pads[len(axes) + i]
    if any(p < 0 for p in full):
        raise Unsupported(f"negative pads {list(pads)} (cropping) are not supported; use Slice")
    if not any(full):
        ctx.define(_out(node), x)
        return
    before = [0 if a is None else full[a] for a in x.order]
    after = [0 if a is None else full[rank + a] for a in x.order]
    fill = {"value": value} if mode == "constant" else {"mode": mode}  # ONNX ignores the value of other modes
    ctx.node(_out(node), "pad", [x.hls], x.order, pads=before + after, **fill)


TENSOR_CONVERTERS = {
    "Relu": _unary("relu"),
    "LeakyRelu": _unary("leaky_relu", alpha=lambda node: float(node.attr("alpha", 0.01))),
    "Sigmoid": _unary("sigmoid"),
    "Tanh": _unary("tanh", table_bits=lambda node: FINE_TABLE_BITS),
    "Exp": _unary("exp"),
    "Abs": _unary("abs"),
    "Neg": _unary("neg"),
    "Clip": _clip,
    "PRelu": _prelu,
    "Identity": _alias,
    "Dropout": _dropout,
    "Cast": _cast,
    "Add": _binary("add"),
    "Sub": _sub,
    "Mul": _binary("mul"),
    "Div": _div,
    "Sum": _variadic("add"),
    "Max": _variadic("maximum"),
    "Min": _variadic("minimum"),
    "Transpose": _transpose,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "Slice": _slice,
    "Pad": _pad,
}
