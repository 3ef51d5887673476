"""Converters of the selecting ops with constant arguments: Split, Gather and Where.

    Split (axis; sizes from the attribute 'split'      one ``slice`` per output (an output that is the
    before opset 13, the input from it, opset 18's      whole input is the input itself)
    'num_outputs', or equal parts)
    Gather (constant scalar or 1-D indices, any axis)   a ``slice`` per run of consecutive indices, a ``concat``
                                                        of them when there are several; a scalar index drops
                                                        the axis (a free reshape)
    Where (constant condition)                         per element, the operand the condition selects:

        Where(c, x, k)  with x computed, k constant  ->  x * keep + fill      keep = c (1 where x is taken),
                                                                               fill = k where x is not, else 0
        Where(c, x, y)  both computed                ->  x * keep + y * (1 - keep)
        a condition true (false) everywhere          ->  x (y) itself, when it has the output's shape

The masked_fill of attention masks, Where(mask, -inf or -1e9, scores), is the first form. It is exact for
every finite x, in float32 and in fixed point alike: keep is exactly 0 or 1, x * 1 = x, x * 0 = 0 and
0 + fill = fill, so each element is the selected operand (the products and the sum are exact in fixed point,
and the node's result is assigned once to its type, as any node's). The mul is left out when keep is 1
everywhere and the add when fill is 0 everywhere. An additive mask alone (x + fill with fill = -1e9 where
masked) is not exact: in float32 x + -1e9 is -1e9 only while |x| <= 32 (half an ulp of 1e9), and in fixed
point x + fill saturates to the type's minimum only for some x. A non-finite x (inf * 0 = NaN) is the one
case where the products differ from Where. Fixed-point fills of -inf or inf (which no fixed type holds) are
imported as float32's largest finite value of that sign: assigned to a saturating type, the type's extreme,
as the float fill is once converted.
"""

from __future__ import annotations

import numpy as np

from . import layout
from .context import Context, Value
from .fold import constant_input, split_sizes
from .model import NodeDef, Unsupported
from .ops_tensor import binary

__all__ = ["SELECT_CONVERTERS"]

FLOAT32_MAX = float(np.finfo(np.float32).max)


def _axis(node: NodeDef, rank: int, default: int = 0) -> int:
    axis = int(node.attr("axis", default))
    if not -rank <= axis < rank:
        raise Unsupported(f"attribute 'axis' {axis} is out of range for a {rank}-dim tensor")
    return axis % rank


def _slice_axis(ctx: Context, tensor: str, x: Value, axis: int, start: int, stop: int, part: str | None) -> Value:
    """Elements ``start:stop`` of ONNX axis ``axis`` of ``x`` (a ``slice`` in ``x``'s layout)."""
    dims = layout.hls_shape(x.shape, x.order)
    begin = [start if a == axis else 0 for a in x.order]
    end = [stop if a == axis else d for a, d in zip(x.order, dims)]
    return ctx.node(tensor, "slice", [x.hls], x.order, part=part, begin=begin, end=end, step=[1] * len(dims))


def _split(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    axis = _axis(node, x.rank)
    sizes = split_sizes(node, ctx.consts(node), ctx.opset, x.shape[axis])
    start = 0
    for out, size in zip(node.outputs, sizes):
        if out and size == x.shape[axis]:
            ctx.define(out, x)
        elif out:
            if size == 0:
                raise Unsupported(f"output '{out}' would be empty (split size 0)")
            _slice_axis(ctx, out, x, axis, start, start + size, None)
        start += size


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive ascending indices as (start, stop)."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _gather(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    indices = constant_input(node, ctx.consts(node), 1, "indices")
    axis = _axis(node, x.rank)
    dim = x.shape[axis]
    indices = np.asarray(indices)
    if indices.ndim > 1 or indices.dtype.kind not in "iu":
        raise Unsupported(f"input 'indices' has {indices.ndim} dims ({indices.dtype}); constant integer scalar or "
                          "1-D indices are supported")
    flat = [int(i) for i in indices.reshape(-1)]
    if not flat or any(not -dim <= i < dim for i in flat):
        raise Unsupported(f"input 'indices' {flat} must be non-empty and within -{dim}..{dim - 1} (axis {axis})")
    flat = [i % dim for i in flat]
    t = node.outputs[0]
    runs = _runs(flat)
    if indices.ndim == 0:
        taken = x if dim == 1 else _slice_axis(ctx, t, x, axis, flat[0], flat[0] + 1, "take")
        order = layout.without(x.order, (axis,))
        shape = tuple(d for a, d in enumerate(x.shape) if a != axis)
        ctx.node(t, "reshape", [taken.hls], order, newshape=list(layout.hls_shape(shape, order)))
    elif runs == [(0, dim)]:
        ctx.define(t, x)
    elif len(runs) == 1:
        _slice_axis(ctx, t, x, axis, *runs[0], None)
    else:
        parts = [_slice_axis(ctx, t, x, axis, a, b, f"run{i}").hls for i, (a, b) in enumerate(runs)]
        ctx.node(t, "concat", parts, x.order, axis=layout.axis_of(x.order, axis))


def _fill(ctx: Context, values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if ctx.precision.is_float:
        return values
    return np.clip(values, -FLOAT32_MAX, FLOAT32_MAX)  # see the module note: no fixed type holds inf


def _where(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    cond = consts[0]
    if cond is None:
        raise Unsupported(f"input 'condition' ('{node.inputs[0]}') is computed; only a constant condition "
                          "(a mask) is supported")
    a, b = (ctx.operand(n) for n in node.inputs[1:3])
    shapes = [np.shape(cond), *(e.shape if isinstance(e, Value) else np.shape(e) for e in (a, b))]
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise Unsupported(f"input shapes {[list(s) for s in shapes]} do not broadcast") from None
    cond = np.asarray(cond).astype(bool)
    t = node.outputs[0]
    for value, taken in ((a, cond), (b, ~cond)):
        if isinstance(value, Value) and value.shape == shape and taken.all():
            ctx.define(t, value)
            return
    if isinstance(a, Value) and isinstance(b, Value):
        keep = cond.astype(np.float64)
        left = binary(ctx, t, "mul", a, keep, hints=("", f"{t}.keep"), part="keep")
        right = binary(ctx, t, "mul", b, 1.0 - keep, hints=("", f"{t}.drop"), part="drop")
        binary(ctx, t, "add", left, right)
        return
    x, constant, keep = (a, b, cond) if isinstance(a, Value) else (b, a, ~cond)
    small = np.broadcast_shapes(keep.shape, np.shape(constant))  # the mask constants: no larger than needed
    keep = np.broadcast_to(keep, small)
    fill = np.where(keep, 0.0, _fill(ctx, np.broadcast_to(constant, small)))
    masked, filled = not keep.all(), bool(np.any(fill != 0))
    if not masked and not filled:  # x everywhere, broadcast to the output's shape
        binary(ctx, t, "add", x, fill, hints=("", f"{t}.fill"))
        return
    if masked:
        x = binary(ctx, t, "mul", x, keep.astype(np.float64), hints=("", f"{t}.keep"),
                   part="keep" if filled else None)
    if filled:
        binary(ctx, t, "add", x, fill, hints=("", f"{t}.fill"))


SELECT_CONVERTERS = {"Split": _split, "Gather": _gather, "Where": _where}
