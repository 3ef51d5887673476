"""Intervals for range analysis: what values a tensor can hold, per channel, exactly.

An ``Interval`` bounds every element of a tensor. Bounds are kept per channel (the last
axis, NHWC) when that is known, as arrays ``lo``/``hi`` of shape ``[C]``, otherwise as
scalars (shape ``[]``); numpy broadcasting on the last axis combines the two. For
fixed-point tensors the bounds are raw integers with ``frac`` fractional bits (the value
is ``raw * 2**-frac``), so the arithmetic is exact: every bound lies within the exact
intermediate of its op, which the op's ``check`` has proven fits 64 bits. float32 tensors
have ``frac`` None and real bounds (float64, not exact; they never overflow a type).

Each op's rule (``OpDef.bounds``) maps the intervals of its *quantized* inputs to the
interval of its *exact* result, before the assignment to its declared type; ``quantize``
then applies that assignment (rounding and the overflow mode) to give what consumers see.
A constant's interval also carries its raw values (``values``), so that conv2d, dense and
matmul bound each output channel by the weights' positive and negative parts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..types import DType, FixedType, assign, from_float

__all__ = ["Interval", "corners"]


def _array(value, frac) -> np.ndarray:
    return np.asarray(value, dtype=np.float64 if frac is None else np.int64)


@dataclass(frozen=True, eq=False)
class Interval:
    """Bounds ``lo <= x <= hi`` of every element (per channel when ``lo``/``hi`` are 1-D)."""

    lo: np.ndarray
    hi: np.ndarray
    frac: int | None
    values: np.ndarray | None = None  # a constant's raw values (same ``frac``)

    def __post_init__(self):
        object.__setattr__(self, "lo", _array(self.lo, self.frac))
        object.__setattr__(self, "hi", _array(self.hi, self.frac))

    # ---------------------------------------------------------------- making

    @staticmethod
    def of_values(raw: np.ndarray, frac: int | None) -> Interval:
        """A constant's interval: per-channel minimum and maximum of its (raw) values."""
        data = _array(raw, frac)
        if data.size == 0:
            return Interval(0, 0, frac, data)
        if data.ndim == 0:
            return Interval(data, data, frac, data)
        axes = tuple(range(data.ndim - 1))
        return Interval(data.min(axis=axes), data.max(axis=axes), frac, data)

    @staticmethod
    def of_type(dtype: DType) -> Interval:
        """Every value of ``dtype`` (float32: the largest finite float32 values)."""
        if dtype.is_float:
            big = float(np.finfo(np.float32).max)
            return Interval(-big, big, None)
        return Interval(dtype.raw_min, dtype.raw_max, dtype.frac)

    @staticmethod
    def of_reals(lo: float, hi: float) -> Interval:
        return Interval(lo, hi, None)

    def like(self, lo, hi, frac: int | None = ...) -> Interval:
        """A new interval (no values) with this one's ``frac`` unless given."""
        return Interval(lo, hi, self.frac if frac is ... else frac)

    # ---------------------------------------------------------------- reading

    @property
    def per_channel(self) -> bool:
        return self.lo.ndim == 1

    def flat(self) -> Interval:
        """One bound for all channels."""
        return self.like(self.lo.min(), self.hi.max())

    def channels(self, count: int) -> Interval:
        """Bounds as arrays of ``count`` channels (broadcast from a scalar or a single channel)."""
        return self.like(np.broadcast_to(self.lo, (count,)).copy(), np.broadcast_to(self.hi, (count,)).copy())

    def real(self, raw) -> float:
        return float(raw) if self.frac is None else math.ldexp(int(raw), -self.frac)

    def reals(self) -> tuple[float, float]:
        """The overall bounds as real numbers."""
        return self.real(self.lo.min()), self.real(self.hi.max())

    # ---------------------------------------------------------------- arithmetic

    def at(self, frac: int | None) -> Interval:
        """The same bounds with ``frac >= self.frac`` fractional bits (exact)."""
        if self.frac is None or frac is None or frac == self.frac:
            return self
        shift = frac - self.frac
        values = None if self.values is None else self.values << shift
        return Interval(self.lo << shift, self.hi << shift, frac, values)

    def aligned(self, other: Interval) -> tuple[Interval, Interval]:
        frac = None if self.frac is None or other.frac is None else max(self.frac, other.frac)
        return self.at(frac), other.at(frac)

    def __add__(self, other: Interval) -> Interval:
        a, b = self.aligned(other)
        return a.like(a.lo + b.lo, a.hi + b.hi)

    def __sub__(self, other: Interval) -> Interval:
        a, b = self.aligned(other)
        return a.like(a.lo - b.hi, a.hi - b.lo)

    def __mul__(self, other: Interval) -> Interval:
        lo, hi = corners(self.lo, self.hi, other.lo, other.hi)
        frac = None if self.frac is None or other.frac is None else self.frac + other.frac
        return Interval(lo, hi, frac)

    def neg(self) -> Interval:
        return self.like(-self.hi, -self.lo)

    def abs(self) -> Interval:
        zero = self.lo.dtype.type(0)
        lo = np.where(self.lo > 0, self.lo, np.where(self.hi < 0, -self.hi, zero))
        return self.like(lo, np.maximum(np.abs(self.lo), np.abs(self.hi)))

    def maximum(self, other: Interval) -> Interval:
        a, b = self.aligned(other)
        return a.like(np.maximum(a.lo, b.lo), np.maximum(a.hi, b.hi))

    def minimum(self, other: Interval) -> Interval:
        a, b = self.aligned(other)
        return a.like(np.minimum(a.lo, b.lo), np.minimum(a.hi, b.hi))

    def union(self, other: Interval) -> Interval:
        a, b = self.aligned(other)
        return a.like(np.minimum(a.lo, b.lo), np.maximum(a.hi, b.hi))

    def with_zero(self) -> Interval:
        """Also the value 0 (padding, a saturation to zero)."""
        zero = self.lo.dtype.type(0)
        return self.like(np.minimum(self.lo, zero), np.maximum(self.hi, zero))

    def clip(self, lo, hi) -> Interval:
        return self.like(np.clip(self.lo, lo, hi), np.clip(self.hi, lo, hi))

    def times(self, n: int) -> Interval:
        """Bounds of a sum of ``n`` elements."""
        return self.like(self.lo * n, self.hi * n)

    # ---------------------------------------------------------------- assignment

    def quantize(self, dtype: DType) -> tuple[Interval, bool]:
        """The interval after assignment to ``dtype``, and whether every value fits it.

        Every quantization mode is a non-decreasing function, so the rounded bounds bound
        the rounded values. Values out of range saturate (SAT, SAT_SYM), become 0 (SAT_ZERO)
        or wrap (WRAP: anything in the type's range).
        """
        if dtype.is_float:
            if self.frac is None:
                return self, bool(np.all(np.isfinite(self.lo)) and np.all(np.isfinite(self.hi)))
            return Interval(_reals(self.lo, self.frac), _reals(self.hi, self.frac), None), True
        lo, hi = _rounded(self.lo, self.frac, dtype), _rounded(self.hi, self.frac, dtype)
        low = -dtype.raw_max if dtype.overflow == "SAT_SYM" and dtype.signed else dtype.raw_min
        fits = bool(np.all(lo >= dtype.raw_min) and np.all(hi <= dtype.raw_max))
        if dtype.overflow == "SAT_SYM":
            lo, hi = np.clip(lo, low, dtype.raw_max), np.clip(hi, low, dtype.raw_max)
        elif fits:
            pass
        elif dtype.overflow == "SAT":
            lo, hi = np.clip(lo, low, dtype.raw_max), np.clip(hi, low, dtype.raw_max)
        elif dtype.overflow == "SAT_ZERO":
            out = (lo < dtype.raw_min) | (hi > dtype.raw_max)
            lo = np.where(out, np.minimum(np.clip(lo, low, dtype.raw_max), 0), lo)
            hi = np.where(out, np.maximum(np.clip(hi, low, dtype.raw_max), 0), hi)
        else:  # WRAP
            lo = np.full_like(lo, dtype.raw_min)
            hi = np.full_like(hi, dtype.raw_max)
        return Interval(lo, hi, dtype.frac), fits


def corners(alo, ahi, blo, bhi) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise bounds of a product of two intervals (the extremes of the four corners; two when
    ``b`` is exact, ``blo is bhi``, as a constant's values are). One product is held at a time:
    a conv's products are as large as its weights."""
    pairs = [(alo, blo), (ahi, blo)] if blo is bhi else [(alo, blo), (alo, bhi), (ahi, blo), (ahi, bhi)]
    shape = np.broadcast_shapes(*(np.shape(x) for pair in pairs for x in pair))
    a, b = pairs[0]
    lo = np.array(np.broadcast_to(a * b, shape))
    hi = lo.copy()
    for a, b in pairs[1:]:
        product = a * b
        np.minimum(lo, product, out=lo)
        np.maximum(hi, product, out=hi)
    return lo, hi


def _reals(raw: np.ndarray, frac: int) -> np.ndarray:
    return np.ldexp(raw.astype(np.float64), -frac)


_WIDE = 64


def _rounded(bound: np.ndarray, frac: int | None, dtype: FixedType) -> np.ndarray:
    """Raw values of ``dtype``'s grid that ``bound`` rounds to, before the overflow mode (saturated
    to int64, which no narrower type holds)."""
    wide = FixedType(_WIDE, _WIDE - dtype.frac, True, dtype.quant, "SAT")
    if frac is None:  # real bounds: to a grid of 2**-frac, rounding as assignment from a double does
        finite = np.clip(bound, -1e300, 1e300)
        return from_float(finite, wide)
    return assign(bound, frac, wide)
