"""``threshold``: a per-channel compare ladder, FINN's Thresholding unit.

    x [..., C]    t [C, n] (or [1, n], shared by every channel)
    out[..., c] = #{i : x[..., c] >= t[c, i]}           an integer in [0, n]

A quantizer after float scales, or QONNX's MultiThreshold, is such a step function of its input
(DESIGN.md section 9). The hardware compares an element with its channel's n thresholds in
parallel and counts the comparisons that hold: n comparators and a popcount per lane, one element
per cycle. The thresholds of a channel are one row, read at once: the op's ``rows`` fact says so
to the lowering, which gives the constant a ROM of one row per word.

The thresholds must be non-decreasing along n in every channel (a quantizer's steps): the count is
then the level of the step x is on. Fixed point only: a float32 graph is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import OpError
from ..types import FixedType
from .base import OpDef, Pattern, Sig, fixed_inputs
from .exact import aligned, finish
from .interval import Interval

__all__ = ["OPS", "count_type", "decreasing"]


def count_type(n: int) -> FixedType:
    """The narrowest unsigned integer type holding 0..n."""
    return FixedType(max(1, int(n).bit_length()), max(1, int(n).bit_length()), False)


def _shape(sig: Sig) -> tuple[int, ...]:
    x, t = sig.shapes
    if len(x) < 1:
        raise OpError("input 'x' must have at least 1 dim")
    if len(t) != 2 or t[0] not in (1, x[-1]):
        raise OpError(f"input 't' must have shape [{x[-1]}, n] or [1, n] (a row of thresholds per channel of "
                      f"'x''s last axis), not {list(t)}")
    return x


def _dtype(sig: Sig):
    return count_type(sig.shapes[1][1])


def _check(sig: Sig) -> None:
    if any(d.is_float for d in sig.dtypes) or sig.out_dtype.is_float:
        raise OpError("threshold is fixed point only: x, t and the output must not be float32 (cast x first)")
    fmts = fixed_inputs(sig)
    fmts[0].sub(fmts[1]).check("the comparison x - t")


def decreasing(raw: np.ndarray) -> tuple[int, int] | None:
    """The first (channel, i) with t[c, i] < t[c, i - 1], or None when every row is non-decreasing."""
    drops = np.argwhere(np.diff(np.asarray(raw, dtype=np.int64), axis=-1) < 0)
    return None if drops.size == 0 else (int(drops[0][0]), int(drops[0][1]) + 1)


def _check_constants(sig: Sig, data: Mapping[str, np.ndarray]) -> None:
    if "t" in data and (at := decreasing(data["t"])) is not None:
        c, i = at
        raise OpError(f"input 't' must be non-decreasing along n in every channel, but t[{c}, {i}] < t[{c}, {i - 1}]")


def _compute(args, sig):
    if sig.out_dtype.is_float or sig.dtypes[0].is_float:
        raise OpError("threshold is fixed point only")
    (x, t), _ = aligned(args, sig)
    count = np.sum(x[..., None] >= t, axis=-1, dtype=np.int64)
    return finish(count, 0, sig)


def _bounds(ins: list[Interval], sig: Sig) -> Interval:
    """[0, n], or per channel the counts at x's bounds when the thresholds are known (a constant)."""
    x, t = ins[0].aligned(ins[1])
    n = sig.shapes[1][1]
    if t.values is None or x.frac is None:
        return Interval(0, n, 0)
    rows = t.values.reshape(-1, n)  # [C, n] or [1, n]
    lo = np.sum(np.asarray(x.lo)[..., None] >= rows, axis=-1)
    hi = np.sum(np.asarray(x.hi)[..., None] >= rows, axis=-1)
    if lo.ndim == 1 and lo.size == 1 and rows.shape[0] == 1 and np.ndim(x.lo) == 0:
        lo, hi = lo[0], hi[0]
    return Interval(lo, hi, 0)


OPS = (
    OpDef(
        name="threshold",
        micro="threshold",
        inputs=("x", "t"),
        shape=_shape,
        dtype=_dtype,
        pattern=Pattern.BROADCAST,
        check=_check,
        check_constants=_check_constants,
        rows=("t",),
        compute=_compute,
        bounds=_bounds,
        doc="#{i : x >= t[c, i]} on the last axis, c the channel",
    ),
)
