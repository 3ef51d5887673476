"""Injective ops: each output element is one input element (pad, which also inserts constants, is in pad.py).

They move values without computing on them, so a fixed-point result is the input
re-assigned to the node's output type (a no-op for the default type, which is the
input's). ``needs_buffer`` tells the FPGA fusion mode whether the op can emit its
output in row-major stream order while reading its input in row-major order:

    reshape, flatten, squeeze, expand_dims        always (same order)
    slice                                         unless an axis is read backwards
    transpose                                     only if it keeps the order of the axes of size > 1
    concat                                        only if the blocks it interleaves are single rows
                                                  (innermost axis) or it appends whole inputs
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpError
from .base import Attr, OpDef, Pattern, Sig, fixed_inputs, same_family
from .exact import aligned, finish
from .interval import Interval

__all__ = ["OPS", "normalize_axes", "slice_ranges", "reversed_axis", "listed"]


def listed(values) -> list[int]:
    return [int(v) for v in values]


def _axis(value: int, ndim: int, name: str, low: int, high: int) -> int:
    """``value`` checked to lie in ``low..high``; a negative one counts from the end (adds ``-low``)."""
    if not low <= value <= high:
        raise OpError(f"attribute '{name}' must be in {low}..{high} for a {ndim}-dim input, not {value}")
    return value - low if value < 0 else value


def normalize_axes(axes, ndim: int, name: str = "axes") -> tuple[int, ...]:
    """Axes (negative counting from the end) as sorted non-negative ints, no duplicates."""
    if ndim == 0 and axes:
        raise OpError(f"attribute '{name}' must be empty for a 0-dim input, not {listed(axes)}")
    seen: list[int] = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise OpError(f"attribute '{name}' values must be in {-ndim}..{ndim - 1} for a {ndim}-dim input, not {a}")
        a = a % ndim
        if a in seen:
            raise OpError(f"attribute '{name}' names axis {a} more than once")
        seen.append(a)
    return tuple(sorted(seen))


def _mover(move):
    """The reference of an op that moves elements: ``move(x, sig)``, then assignment to the output type."""

    def compute(args, sig: Sig) -> np.ndarray:
        x = move(args[0], sig)
        if sig.out_dtype.is_float:
            return np.asarray(x, dtype=np.float32)
        return finish(x, sig.dtypes[0].frac, sig)

    return compute


def _streams(sig: Sig) -> None:
    """``needs_buffer`` of ops that emit elements in the order they read them."""
    return None


def _moved(keeps_channels):
    """The range rule of an op that moves elements: the input's bounds, per channel when
    ``keeps_channels(sig)`` says each element keeps its last-axis index."""

    def bounds(ins, sig: Sig) -> Interval:
        x = ins[0]
        return x.like(x.lo, x.hi) if keeps_channels(sig) else x.flat()

    return bounds


def _same_last_axis(sig: Sig) -> bool:
    """Row-major moves keep an element's last-axis index when the last axis is unchanged."""
    x, out = sig.shapes[0], sig.out_shape
    return bool(x) and bool(out) and x[-1] == out[-1]


_SAME_ORDER_BOUNDS = _moved(_same_last_axis)


def _op(name, shape, move, doc, attrs=(), needs_buffer=_streams, stream="map", bounds=_SAME_ORDER_BOUNDS) -> OpDef:
    """An injective single-input op whose reference is ``move(x, sig)``."""
    return OpDef(
        name=name,
        inputs=("x",),
        attrs=attrs,
        shape=shape,
        pattern=Pattern.INJECTIVE,
        check=same_family,
        compute=_mover(move),
        bounds=bounds,
        needs_buffer=needs_buffer,
        stream=stream,
        micro=None if stream == "own" else "assign",  # in a map loop, an element is passed on unchanged
        doc=doc,
    )


# --------------------------------------------------------------------------
# reshape, flatten, squeeze, expand_dims: same elements in the same order
# --------------------------------------------------------------------------


def _reshape_shape(sig: Sig) -> tuple[int, ...]:
    x, new = sig.shapes[0], sig["newshape"]
    if any(d < 1 and d != -1 for d in new):
        raise OpError(f"attribute 'newshape' entries must be positive or -1, not {listed(new)}")
    if new.count(-1) > 1:
        raise OpError(f"attribute 'newshape' may hold at most one -1, not {new.count(-1)}")
    size, known = math.prod(x), math.prod(d for d in new if d != -1)
    if -1 in new and size % known == 0:
        new = tuple(size // known if d == -1 else d for d in new)
    if -1 in new or math.prod(new) != size:
        raise OpError(f"cannot reshape {list(x)} ({size} elements) to {listed(sig['newshape'])}")
    return new


def _flatten_shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    axis = _axis(sig["axis"], len(x), "axis", -len(x), len(x))
    return (math.prod(x[:axis]), math.prod(x[axis:]))


def _squeezed_axes(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    if sig["axes"] is None:
        return tuple(i for i, d in enumerate(x) if d == 1)
    axes = normalize_axes(sig["axes"], len(x))
    for a in axes:
        if x[a] != 1:
            raise OpError(f"attribute 'axes' names axis {a} of size {x[a]}; only size-1 axes can be squeezed")
    return axes


def _squeeze_shape(sig: Sig) -> tuple[int, ...]:
    axes = _squeezed_axes(sig)
    return tuple(d for i, d in enumerate(sig.shapes[0]) if i not in axes)


def _expand_axis(sig: Sig) -> int:
    n = len(sig.shapes[0]) + 1  # the axis counts in the output's dims
    return _axis(sig["axis"], n - 1, "axis", -n, n - 1)


def _expand_shape(sig: Sig) -> tuple[int, ...]:
    x, axis = sig.shapes[0], _expand_axis(sig)
    return x[:axis] + (1,) + x[axis:]


def _same_order(x: np.ndarray, sig: Sig) -> np.ndarray:
    return x.reshape(sig.out_shape)


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------


def _perm(sig: Sig) -> tuple[int, ...]:
    n = len(sig.shapes[0])
    axes = sig["axes"]
    if axes is None:
        return tuple(reversed(range(n)))
    if sorted(axes) != list(range(n)):
        raise OpError(f"attribute 'axes' must be a permutation of {list(range(n))}, not {listed(axes)}")
    return axes


def _transpose_shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    return tuple(x[a] for a in _perm(sig))


def _transpose_keeps_channels(sig: Sig) -> bool:
    perm = _perm(sig)
    return bool(perm) and perm[-1] == len(perm) - 1


def _transpose_buffer(sig: Sig) -> str | None:
    # size-1 axes do not affect the order of elements; the others must keep their order
    perm = _perm(sig)
    moved = [a for a in perm if sig.shapes[0][a] > 1]
    if moved != sorted(moved):
        return f"transpose {list(perm)} changes the element order"
    return None


# --------------------------------------------------------------------------
# slice
# --------------------------------------------------------------------------


def _slices(sig: Sig) -> tuple[slice, ...]:
    """One Python slice per leading axis named by ``begin``/``end``/``step``."""
    x, begin, end = sig.shapes[0], sig["begin"], sig["end"]
    step = sig["step"] if sig["step"] is not None else (1,) * len(begin)
    if len(end) != len(begin):
        raise OpError(f"attribute 'end' must have as many values as 'begin' ({len(begin)}), not {len(end)}")
    if len(step) != len(begin):
        raise OpError(f"attribute 'step' must have as many values as 'begin' ({len(begin)}), not {len(step)}")
    if len(begin) > len(x):
        raise OpError(f"attribute 'begin' has {len(begin)} values, more than the {len(x)} dims of input 'x'")
    if 0 in step:
        raise OpError(f"attribute 'step' must not contain 0, not {listed(step)}")
    slices = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))
    for axis, (s, n) in enumerate(zip(slices, x)):
        if not range(*s.indices(n)):
            raise OpError(f"slice selects no elements of axis {axis} (size {n}) "
                          f"with begin {s.start}, end {s.stop}, step {s.step}")
    return slices


def _slice_shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    slices = _slices(sig)
    kept = tuple(len(range(*s.indices(n))) for s, n in zip(slices, x))
    return kept + x[len(slices):]


def slice_ranges(sig: Sig) -> tuple[range, ...]:
    """The input indices a slice keeps on every axis of its input (unsliced axes whole)."""
    x = sig.shapes[0]
    picked = tuple(range(*s.indices(n)) for s, n in zip(_slices(sig), x))
    return picked + tuple(range(n) for n in x[len(picked):])


def reversed_axis(sig: Sig) -> int | None:
    """The first axis a slice reads backwards, or None when it keeps the stream order. A negative
    step over one element reverses nothing."""
    for axis, kept in enumerate(slice_ranges(sig)):
        if kept.step < 0 and len(kept) > 1:
            return axis
    return None


def _slice_bounds(ins, sig: Sig) -> Interval:
    x = ins[0]
    if not x.per_channel:
        return x.like(x.lo, x.hi)
    x = x.channels(sig.shapes[0][-1])  # a single channel's bound may stand for all of them
    kept = list(slice_ranges(sig)[-1])
    return x.like(x.lo[kept], x.hi[kept])


def _slice_buffer(sig: Sig) -> str | None:
    axis = reversed_axis(sig)
    return None if axis is None else f"negative step on axis {axis} reverses the element order"


# --------------------------------------------------------------------------
# concat
# --------------------------------------------------------------------------


def _concat_axis(sig: Sig) -> int:
    n = len(sig.shapes[0])
    if n == 0:
        raise OpError("input 0 must have at least 1 dim")
    return _axis(sig["axis"], n, "axis", -n, n - 1)


def _concat_shape(sig: Sig) -> tuple[int, ...]:
    axis, first = _concat_axis(sig), sig.shapes[0]
    for i, s in enumerate(sig.shapes[1:], start=1):
        if len(s) != len(first):
            raise OpError(f"input {i} must have {len(first)} dims like input 0, not {len(s)}")
        if s[:axis] + s[axis + 1:] != first[:axis] + first[axis + 1:]:
            raise OpError(f"input {i} must match input 0's shape {list(first)} except on axis {axis}, not {list(s)}")
    return first[:axis] + (sum(s[axis] for s in sig.shapes),) + first[axis + 1:]


def _concat_check(sig: Sig) -> None:
    same_family(sig)
    fmts = fixed_inputs(sig)
    if fmts is not None:
        common = fmts[0]
        for f in fmts[1:]:
            common = common.union(f)
        common.check("aligning the inputs")


def _concat(args, sig):
    axis = _concat_axis(sig)
    if sig.out_dtype.is_float:
        return np.concatenate(args, axis=axis).astype(np.float32)
    parts, frac = aligned(args, sig)
    return finish(np.concatenate(parts, axis=axis), frac, sig)


def _concat_bounds(ins, sig: Sig) -> Interval:
    if _concat_axis(sig) < len(sig.out_shape) - 1:
        joined = ins[0]
        for x in ins[1:]:
            joined = joined.union(x)
        return joined.like(joined.lo, joined.hi)
    frac = None if any(x.frac is None for x in ins) else max(x.frac for x in ins)
    parts = [x.at(frac).channels(shape[-1]) for x, shape in zip(ins, sig.shapes)]
    return Interval(np.concatenate([p.lo for p in parts]), np.concatenate([p.hi for p in parts]), frac)


def _concat_buffer(sig: Sig) -> str | None:
    # The output interleaves, for each index of the outer axes, one block per input.
    # Blocks of single rows (nothing but size-1 axes inside the concat axis) or a single
    # outer index (the inputs follow each other) stream; larger blocks must be buffered.
    axis, shape = _concat_axis(sig), sig.out_shape
    if all(d == 1 for d in shape[axis + 1:]) or all(d == 1 for d in shape[:axis]):
        return None
    return f"concat on axis {axis} (not the innermost) interleaves blocks of its inputs"


OPS = (
    _op(
        "reshape",
        _reshape_shape,
        _same_order,
        "same elements in a new shape; newshape may hold one -1",
        attrs=(Attr("newshape", "ints"),),
    ),
    _op(
        "flatten",
        _flatten_shape,
        _same_order,
        "2-D [prod(shape[:axis]), prod(shape[axis:])] (ONNX Flatten)",
        attrs=(Attr("axis", "int", 1),),
    ),
    _op(
        "transpose",
        _transpose_shape,
        lambda x, sig: np.transpose(x, _perm(sig)),
        "permute the axes (default: reverse them)",
        attrs=(Attr("axes", "ints", None),),
        needs_buffer=_transpose_buffer,
        bounds=_moved(_transpose_keeps_channels),
        stream=lambda sig: "map" if _transpose_buffer(sig) is None else "own",
    ),
    OpDef(
        name="concat",
        inputs=("x",),
        variadic=True,
        attrs=(Attr("axis", "int", -1),),
        shape=_concat_shape,
        pattern=Pattern.INJECTIVE,
        check=_concat_check,
        compute=_concat,
        bounds=_concat_bounds,
        needs_buffer=_concat_buffer,
        stream="own",
        doc="join one or more inputs along axis; inputs are aligned exactly, then assigned to the output type",
    ),
    _op(
        "slice",
        _slice_shape,
        lambda x, sig: x[_slices(sig)],
        "x[begin:end:step] per leading axis, with Python/numpy semantics",
        attrs=(Attr("begin", "ints"), Attr("end", "ints"), Attr("step", "ints", None)),
        needs_buffer=_slice_buffer,
        bounds=_slice_bounds,
        stream="own",
    ),
    _op(
        "squeeze",
        _squeeze_shape,
        _same_order,
        "drop size-1 axes (default: all of them)",
        attrs=(Attr("axes", "ints", None),),
    ),
    _op(
        "expand_dims",
        _expand_shape,
        _same_order,
        "insert a size-1 axis; a negative axis counts from the end of the output",
        attrs=(Attr("axis", "int"),),
    ),
)
