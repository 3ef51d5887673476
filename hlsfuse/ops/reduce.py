"""Reductions: sum, mean and max over axes, and the global average pool.

Fixed-point sums are exact: the sum of n values needs ``ceil(log2 n)`` more
integer bits, which ``check`` proves fit 64 bits. A mean is the exact quotient
sum / n assigned once to the output type (``types.assign_quotient``, an integer
division); ``check`` proves that the sum, shifted to one bit below the output's
LSB, fits 64 bits. ``count`` gives n for the backends. max is exact. float32 sums
and means accumulate in float64, then cast.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpError
from ..types import Fmt, assign_quotient
from .base import Attr, OpDef, Pattern, Sig, fixed_inputs, same_family
from .exact import finish
from .head import Head
from .injective import normalize_axes

__all__ = ["OPS", "count"]


def _axes(sig: Sig) -> tuple[int, ...]:
    ndim = len(sig.shapes[0])
    if sig["axes"] is None:
        return tuple(range(ndim))
    if not sig["axes"]:
        raise OpError("attribute 'axes' must name at least one axis (omit it to reduce all axes)")
    return normalize_axes(sig["axes"], ndim)


def count(sig: Sig) -> int:
    """How many input elements each output element of a reduction node (sum, mean, max,
    global_avg_pool) combines: the divisor n of a mean. Every output element reduces the
    same number of inputs, so n = input size / output size (keepdims or not)."""
    return math.prod(sig.shapes[0]) // math.prod(sig.out_shape)


def _reduce_shape(sig: Sig) -> tuple[int, ...]:
    axes = _axes(sig)
    x = sig.shapes[0]
    if sig["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


def _sum_format(sig: Sig, n: int) -> Fmt:
    return fixed_inputs(sig)[0].accumulate(n).check("the exact sum")


def _mean_format(sig: Sig, n: int) -> Fmt:
    return _sum_format(sig, n).dividend(sig.out_dtype).check("the division of the exact sum by n")


def _max_format(sig: Sig, n: int) -> Fmt:
    return fixed_inputs(sig)[0]  # the maximum is one of the inputs: no wider intermediate


def _head(combine: str, axes):
    """A ``head`` rule: ``combine`` over ``axes(sig)`` of the input."""

    def head(sig: Sig) -> Head:
        n = count(sig)
        fmts = fixed_inputs(sig)
        acc = fmts[0].accumulate(n) if fmts is not None and combine != "max" else None
        return Head(combine, n, accumulator=acc, axes=axes(sig))

    return head


def _checker(fmt):
    """A ``check`` proving that ``fmt(sig, n)`` (the exact intermediate) fits 64 bits."""

    def check(sig: Sig) -> None:
        same_family(sig)
        if fixed_inputs(sig) is not None:
            fmt(sig, count(sig))

    return check


# --------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------


def _sum(args, sig):
    x, axes, keep = args[0], _axes(sig), sig["keepdims"]
    if sig.out_dtype.is_float:
        return np.sum(x, axis=axes, keepdims=keep, dtype=np.float64).astype(np.float32)
    return finish(np.sum(x, axis=axes, keepdims=keep), sig.dtypes[0].frac, sig)


def _mean_over(x: np.ndarray, axes: tuple[int, ...], keep: bool, sig: Sig) -> np.ndarray:
    if sig.out_dtype.is_float:
        return np.mean(x, axis=axes, keepdims=keep, dtype=np.float64).astype(np.float32)
    total = np.sum(x, axis=axes, keepdims=keep)
    return assign_quotient(total, sig.dtypes[0].frac, count(sig), sig.out_dtype)


def _mean(args, sig):
    return _mean_over(args[0], _axes(sig), sig["keepdims"], sig)


def _max(args, sig):
    x, axes, keep = args[0], _axes(sig), sig["keepdims"]
    if sig.out_dtype.is_float:
        return np.max(x, axis=axes, keepdims=keep).astype(np.float32)
    return finish(np.max(x, axis=axes, keepdims=keep), sig.dtypes[0].frac, sig)


# --------------------------------------------------------------------------
# Range rules
# --------------------------------------------------------------------------


def _over_channels(sig: Sig) -> bool:
    """Whether the reduction combines elements of different channels (it reduces the last axis)."""
    return len(sig.shapes[0]) - 1 in _axes(sig)


def _sum_bounds(ins, sig):
    x, n = ins[0], count(sig)
    if not _over_channels(sig):
        return x.times(n)
    if x.per_channel:  # n / C elements of each channel
        per = n // len(x.lo)
        return x.like(x.lo.sum() * per, x.hi.sum() * per)
    return x.times(n)


def _mean_bounds(ins, sig):
    x = ins[0]  # a mean lies between the smallest and the largest element
    return x.flat() if _over_channels(sig) else x.like(x.lo, x.hi)


def _max_bounds(ins, sig):
    x = ins[0]  # at least the largest lower bound, at most the largest upper bound
    return x.like(x.lo.max(), x.hi.max()) if _over_channels(sig) else x.like(x.lo, x.hi)


# --------------------------------------------------------------------------
# global_avg_pool: mean over H and W of an NHWC tensor
# --------------------------------------------------------------------------

_HW = (1, 2)


def _pool_shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    if len(x) != 4:
        raise OpError(f"input 'x' must have 4 dims (NHWC), not {len(x)}")
    return (x[0], 1, 1, x[3])


def _reduction(name: str, compute, fmt, bounds, doc: str) -> OpDef:
    return OpDef(
        name=name,
        head=_head(name, _axes),
        inputs=("x",),
        attrs=(Attr("axes", "ints", None), Attr("keepdims", "bool", False)),
        shape=_reduce_shape,
        pattern=Pattern.COMM_REDUCE,
        stream="reduce",
        check=_checker(fmt),
        compute=compute,
        bounds=bounds,
        doc=doc,
    )


OPS = (
    _reduction("sum", _sum, _sum_format, _sum_bounds, "exact sum over axes (default: all)"),
    _reduction("mean", _mean, _mean_format, _mean_bounds,
               "exact sum over axes divided by their count, rounded once (default: all)"),
    _reduction("max", _max, _max_format, _max_bounds, "maximum over axes (default: all)"),
    OpDef(
        name="global_avg_pool",
        inputs=("x",),
        shape=_pool_shape,
        # TVM marks global pools OUT_ELEMWISE_FUSABLE (elementwise consumers fuse into them)
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        stream="reduce",
        head=_head("mean", lambda sig: _HW),
        check=_checker(_mean_format),
        compute=lambda args, sig: _mean_over(args[0], _HW, True, sig),
        bounds=lambda ins, sig: ins[0].like(ins[0].lo, ins[0].hi),
        doc="NHWC [N,H,W,C] -> [N,1,1,C], mean over H and W as in mean",
    ),
)
