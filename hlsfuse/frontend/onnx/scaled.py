"""Scaled integers: quantized tensors with any float scale, computed exactly as integers.

A quantizer whose scale s is not a power of two has no fixed-point type, but its output is
s times an integer level k, and that integer is what the hardware holds. So the importer lets
any tensor carry an ``Affine``: the ONNX tensor's real value is

    clamp(scale[c] * hw + offset[c], lo[c], hi[c])        c: the channel (ONNX axis ``axis``)

where hw is the hlsfuse tensor (exact fixed point, usually an integer). The float ops between
an integer accumulator and the next quantizer (a float bias, Mul, Div, BatchNormalization,
ReLU, Clip, the weight and activation scales of a dense or conv) update the affine instead of
adding nodes (ops_scaled.py). A quantizer then absorbs it: its level is a monotone step function
of hw per channel, whose steps are integers found here exactly (Fractions, no float rounding),
and which becomes

    a compare ladder    k = base + #{i : hw >= T[c, i]}  (``threshold``)  at most LADDER_STEPS steps
    a multiply-shift    k = clip(floor((M[c] * raw + B[c]) / 2^S))      checked at every step over
                                                                         hw's whole range

(a channel whose scale is negative counts on -hw). A graph output keeps its affine as the
graph's ``Scaling`` (the host applies it to the hardware's integers); a graph input read only
by quantizers with a float scale takes the integer level (the host divides by the scale). Any
other op materializes the affine in the graph with exact dyadic constants, or is refused.

"Exact" is real arithmetic on the model's float32 constants (BatchNormalization's
gamma / sqrt(var + eps) in float64). qonnx and onnxruntime compute in float32, so they can
round a value within float32's error of a rounding boundary the other way: ``FloatTie`` names
the quantizers where some accumulator value is that close (docs/onnx.md).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ...ir import Scaling
from ...ops.threshold import count_type
from ...types import FixedType
from . import layout
from .context import Context, Value
from .model import Unsupported

__all__ = ["Affine", "IDENTITY", "LADDER_STEPS", "FloatTie", "fraction", "vector", "materialize", "steps",
           "scaling_of", "exact_type"]

LADDER_STEPS = 15
"""A quantizer with at most this many steps (4-bit levels and narrower) is a compare ladder; wider
ones are a multiply-shift (one multiplier per lane instead of 2^b - 1 comparators)."""

TIE_BITS = 24
"""float32 rounds each operation to 24 bits: qonnx's result is within terms * 2^-TIE_BITS of the exact one
(relative)."""

MAX_FRAC = 48
"""Fractional bits an affine may need when it is materialized in the graph."""


class FloatTie(UserWarning):
    """Accumulator values whose exact quantizer input lies within float32 rounding of a rounding boundary."""


def fraction(value) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(float(value))


@dataclass(frozen=True)
class Affine:
    """clamp(scale * hw + offset, lo, hi) per channel; each field has one entry (per tensor) or one per
    channel of ONNX axis ``axis``; ``lo``/``hi`` None: unbounded; ``terms``: the float operations behind
    it (for ``FloatTie``)."""

    scale: tuple[Fraction, ...]
    offset: tuple[Fraction, ...]
    lo: tuple[Fraction | None, ...]
    hi: tuple[Fraction | None, ...]
    axis: int | None = None
    terms: int = 1

    @staticmethod
    def of(scale, offset=(Fraction(0),), axis=None, terms=1) -> Affine:
        scale = tuple(fraction(s) for s in np.ravel(scale))
        offset = tuple(fraction(o) for o in np.ravel(offset))
        n = max(len(scale), len(offset))
        scale, offset = _spread(scale, n), _spread(offset, n)
        affine = Affine(scale, offset, (None,) * n, (None,) * n, axis if n > 1 else None, terms)
        return affine._compact()

    @property
    def channels(self) -> int:
        return len(self.scale)

    @property
    def is_identity(self) -> bool:
        return (all(s == 1 for s in self.scale) and all(o == 0 for o in self.offset)
                and all(v is None for v in self.lo + self.hi))

    @property
    def unclamped(self) -> bool:
        return all(v is None for v in self.lo + self.hi)

    def at(self, c: int) -> tuple[Fraction, Fraction, Fraction | None, Fraction | None]:
        i = c if self.channels > 1 else 0
        return self.scale[i], self.offset[i], self.lo[i], self.hi[i]

    def value(self, c: int, hw: Fraction) -> Fraction:
        scale, offset, lo, hi = self.at(c)
        v = scale * hw + offset
        if lo is not None and v < lo:
            v = lo
        if hi is not None and v > hi:
            v = hi
        return v

    def then(self, mul, add, axis: int | None, terms: int = 1) -> Affine:
        """This affine followed by v -> mul * v + add (``mul``, ``add``: one entry or one per channel of
        ONNX axis ``axis``)."""
        mul, add = [fraction(m) for m in np.ravel(mul)], [fraction(a) for a in np.ravel(add)]
        n = max(self.channels, len(mul), len(add))
        if n > 1 and self.channels > 1 and len({self.axis, axis if max(len(mul), len(add)) > 1 else self.axis}) > 1:
            raise Unsupported("per-channel scales along two different axes cannot be combined")
        new_axis = self.axis if self.channels > 1 else axis
        mul, add = _spread(tuple(mul), n), _spread(tuple(add), n)
        src = [self.at(c) for c in range(n)]
        scale = tuple(m * s for m, (s, _, _, _) in zip(mul, src))
        offset = tuple(m * o + a for m, a, (_, o, _, _) in zip(mul, add, src))
        lo, hi = [], []
        for m, a, (_, _, low, high) in zip(mul, add, src):
            low, high = (None if low is None else m * low + a), (None if high is None else m * high + a)
            lo.append(low if m >= 0 else high)
            hi.append(high if m >= 0 else low)
        return Affine(scale, offset, tuple(lo), tuple(hi), new_axis if n > 1 else None, self.terms + terms)._compact()

    def clamped(self, lo, hi) -> Affine:
        """This affine then clamp to [lo, hi] (Fractions or None, per tensor)."""
        low = tuple(lo if v is None else v if lo is None else max(v, lo) for v in self.lo)
        high = tuple(hi if v is None else v if hi is None else min(v, hi) for v in self.hi)
        return replace(self, lo=low, hi=high)

    def moved(self, axis: int | None) -> Affine:
        """The same affine with its channels on ONNX axis ``axis`` (a Transpose, Squeeze, ... moved it)."""
        return replace(self, axis=axis if self.channels > 1 else None)

    def _compact(self) -> Affine:
        fields = (self.scale, self.offset, self.lo, self.hi)
        if self.channels > 1 and all(len(set(f)) == 1 for f in fields):
            return Affine(*(f[:1] for f in fields), None, self.terms)
        return self


IDENTITY = Affine((Fraction(1),), (Fraction(0),), (None,), (None,))


def _spread(values: tuple, n: int) -> tuple:
    if len(values) == n:
        return values
    if len(values) != 1:
        raise Unsupported(f"per-channel constants of {len(values)} and {n} channels do not match")
    return values * n


def vector(const: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int | None] | None:
    """A constant broadcast against an ONNX tensor of ``shape`` as (values, ONNX axis or None): one value,
    or one per position of a single axis; None when it varies along more than one axis."""
    data = np.asarray(const, dtype=np.float64)
    if data.ndim > len(shape):
        return None
    data = data.reshape((1,) * (len(shape) - data.ndim) + data.shape)
    varying = [a for a, d in enumerate(data.shape) if d != 1]
    if not varying:
        return data.reshape(1), None
    if len(varying) > 1 or data.shape[varying[0]] != shape[varying[0]]:
        return None
    return data.reshape(-1), varying[0]


def exact_type(lo: int, hi: int, frac: int) -> FixedType:
    """The narrowest wrapping type on the grid 2^-frac holding raw values [lo, hi]."""
    lo, hi = min(lo, 0), max(hi, 0)
    if lo >= 0:
        width = max(hi.bit_length(), 1)
        return FixedType(width, width - frac, False)
    width = max((-lo - 1).bit_length(), hi.bit_length()) + 1
    return FixedType(width, width - frac, True)


def _dyadic_raw(values, frac: int) -> list[int] | None:
    raws = [v * (1 << frac) for v in values]
    return [int(r) for r in raws] if all(r.denominator == 1 for r in raws) else None


def _frac_bits(values) -> int | None:
    for frac in range(MAX_FRAC + 1):
        if _dyadic_raw(values, frac) is not None:
            return frac
    return None


# --------------------------------------------------------------------------
# The hlsfuse tensor with the channels last
# --------------------------------------------------------------------------


def channels_last(ctx: Context, x: Value, axis: int | None) -> tuple[str, int]:
    """(hlsfuse name of ``x`` with ONNX axis ``axis`` last, the number of channels); per tensor: as held."""
    if axis is None:
        return x.hls, 1
    order = tuple(a for a in x.order if a != axis) + (axis,)
    return ctx.in_order(x, order), x.shape[axis]


def _order(x: Value, axis: int | None) -> layout.Order:
    return x.order if axis is None else tuple(a for a in x.order if a != axis) + (axis,)


def _const(ctx: Context, raws: list[int], frac: int, channels: int, hint: str) -> str:
    data = np.ldexp(np.array(raws, dtype=np.float64), -frac)
    data = data if len(raws) == channels else np.full(channels, data[0])
    return ctx.weight(data, hint, exact_type(min(raws), max(raws), frac))


# --------------------------------------------------------------------------
# Materializing an affine in the graph
# --------------------------------------------------------------------------


def materialize(ctx: Context, tensor: str, x: Value, reader: str) -> Value:
    """``x`` with its affine computed by nodes (exact dyadic constants), for ``reader``, an op that cannot
    take it as it is."""
    a = x.affine
    if a is None or a.is_identity:
        return replace(x, affine=None)
    frac = _frac_bits(a.scale + a.offset)
    if frac is None:
        raise Unsupported(f"input '{tensor}' is an integer times the scale {float(a.scale[0]):.6g}, which no "
                          f"fixed-point type holds exactly, and {reader} cannot take it as an integer; put a "
                          "quantizer before it")
    hls, channels = channels_last(ctx, x, a.axis)
    order = _order(x, a.axis)
    dims = ctx.builder.type_of(hls).shape
    channels = dims[-1] if dims else 1  # constants are per position of the last axis
    current = Value(hls, x.shape, order)
    base = f"{tensor}.real"
    if any(s != 1 for s in a.scale):
        scale = _const(ctx, _dyadic_raw(a.scale, frac), frac, channels, f"{base}.scale")
        current = ctx.node(base, "scale", [current.hls, scale], order, part="scale")
    if any(o != 0 for o in a.offset):
        offset = _const(ctx, _dyadic_raw(a.offset, frac), frac, channels, f"{base}.offset")
        current = ctx.node(base, "bias_add", [current.hls, offset], order, part="offset")
    if any(v is not None for v in a.lo + a.hi):
        if len(set(a.lo)) > 1 or len(set(a.hi)) > 1:
            raise Unsupported(f"input '{tensor}' is clamped per channel, which {reader} cannot take; put a "
                              "quantizer before it")
        bounds = {k: float(v[0]) for k, v in (("min", a.lo), ("max", a.hi)) if v[0] is not None}
        current = ctx.node(base, "clip", [current.hls], order, part="clip", **bounds)
    return Value(current.hls, x.shape, order)


def scaling_of(affine: Affine, rank: int) -> Scaling:
    """The graph output scaling of ``affine`` for an output held in ONNX layout (rank ``rank``)."""
    def floats(values):
        return tuple(math.nan if v is None else float(v) for v in values)

    axis = affine.axis if affine.channels > 1 else None
    return Scaling(floats(affine.scale), floats(affine.offset), floats(affine.lo), floats(affine.hi),
                   None if axis is None else axis - rank)


# --------------------------------------------------------------------------
# A monotone step function of hw as a ladder or a multiply-shift
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Steps:
    """Values base + step * u (``base``, ``step``: Fractions, dyadic) of an input held on ``hw``'s grid: per
    channel c, u = ``count(c, hw)`` is a non-decreasing (``rising[c]``) or non-increasing function of hw with
    values 0..n (``count(c, raw, frac)``: at hw = raw * 2^-frac); ``slope[c]``: u's rate per unit of hw where it is
    affine (None: a staircase, always a ladder)."""

    n: int
    base: Fraction
    step: Fraction
    count: object
    rising: tuple[bool, ...]
    slope: tuple[Fraction | None, ...]
    near: object = None  # near(c, raw, frac) -> bool: the exact value lies within float32's error of a step
    edges: object = None  # edges(c, i) -> hw values one of which is where u reaches i (None: search for it)
    key: object = None  # what the steps depend on besides the input's type (the thresholds are cached by it)


def steps(ctx: Context, tensor: str, x: Value, axis: int | None, spec: Steps, where: str) -> Value:
    """Define ONNX tensor ``tensor`` as the levels of ``spec`` computed from ``x`` (held with ``axis`` last):
    a ladder, or a multiply-shift when it has more than LADDER_STEPS steps and one is exact."""
    hls, channels = channels_last(ctx, x, axis)
    order = _order(x, axis)
    dtype = ctx.builder.type_of(hls).dtype
    dims = ctx.builder.type_of(hls).shape
    lanes = dims[-1] if dims else 1  # constants are per position of the last axis: per tensor, all alike
    if dtype.is_float:
        raise Unsupported("a quantizer with a float scale needs a fixed-point input (precision float32 has "
                          "none; use the default precision, exact)")
    frac = dtype.frac
    unit = Fraction(1, 1 << frac) if frac >= 0 else Fraction(1 << -frac)
    rising = _spread(spec.rising, channels)
    rmin, rmax = dtype.raw_min, dtype.raw_max

    spans = [(rmin, rmax) if rising[c] else (-rmax, -rmin) for c in range(channels)]
    cache_key = (spec.key, frac, rmin, rmax, channels) if spec.key is not None else None
    if cache_key in _THRESHOLDS:
        thresholds, close = _THRESHOLDS[cache_key]
    else:
        def level(c: int, raw: int) -> int:  # u at raw input ``raw`` (negated for a falling channel)
            return spec.count(c, raw if rising[c] else -raw, frac)

        thresholds = [[_threshold(lambda r, c=c: level(c, r), i, spans[c], spec, c, rising[c], unit)
                       for i in range(1, spec.n + 1)] for c in range(channels)]
        close = _ties(spec, thresholds, spans, rising, frac)
        if cache_key is not None:
            if len(_THRESHOLDS) > 256:
                _THRESHOLDS.clear()
            _THRESHOLDS[cache_key] = thresholds, close
    if close:
        c, hw = close[0]
        warnings.warn(FloatTie(f"{where}: {len(close)} input value(s) lie within float32 rounding of a rounding "
                               f"boundary (e.g. {float(hw):g} in channel {c}); hlsfuse rounds their exact values, "
                               "float32 execution (qonnx, onnxruntime) may round them the other way"), stacklevel=2)
    if channels != lanes:
        thresholds, rising = thresholds * lanes, rising * lanes
    flip = not all(rising)
    if flip:
        signs = [1 if r else -1 for r in rising]
        lo, hi = min(min(s * rmin, s * rmax) for s in signs), max(max(s * rmin, s * rmax) for s in signs)
        sign = ctx.weight(np.array(signs, dtype=np.float64), f"{tensor}.signs", FixedType(2, 2))
        hls = ctx.node(tensor, "scale", [hls, sign], order, part="sign", dtype=exact_type(lo, hi, frac)).hls
        rmin, rmax = lo, hi
    ends = (spec.base, spec.base + spec.step * spec.n)
    grid = _frac_bits(ends + (spec.step,))
    if grid is None:
        raise Unsupported(f"{where}: output levels {float(spec.base):g} + {float(spec.step):g} * k are not dyadic")
    raws = _dyadic_raw(ends, grid)
    out = exact_type(min(raws), max(raws), grid)
    if spec.n > LADDER_STEPS and all(s is not None for s in spec.slope):
        solved = _multiply_shift(thresholds[:channels], spans, [spec.slope[c if len(spec.slope) > 1 else 0] for c
                                                                in range(channels)], spec, frac)
        if solved is not None:
            shift, found = solved
            solved = shift, found * (lanes // channels)
            return _emit_multiply(ctx, tensor, hls, order, solved, (rmin, rmax), frac, lanes, out, spec)
    return _emit_ladder(ctx, tensor, hls, order, thresholds, frac, lanes, out, spec)


_THRESHOLDS: dict[tuple, tuple] = {}
"""Thresholds and float32 ties by (Steps.key, the input's grid and range, channels): an import converts a model
several times (auto.py), with the same types after the first rounds."""


def _threshold(level, i: int, span: tuple[int, int], spec: Steps, c: int, rising: bool, unit: Fraction) -> int:
    """The least raw input of ``span`` where the level reaches i (``span``'s end + 1 when never): among the
    raws next to the edges ``spec.edges`` gives when it does (a few exact evaluations), else by bisection."""
    lo, hi = span
    if level(lo) >= i:
        return lo
    if level(hi) < i:
        return hi + 1
    edges = spec.edges(c, i) if spec.edges is not None else None
    if edges:
        candidates = set()
        for hw in edges:
            raw = math.ceil((hw if rising else -hw) / unit)
            candidates.update(r for r in (raw, raw + 1) if lo < r <= hi)
        for raw in sorted(candidates):
            if level(raw) >= i:
                if level(raw - 1) < i:
                    return raw
                break
    return _first_at_least(level, i, lo, hi)


def _first_at_least(level, i: int, lo: int, hi: int) -> int:
    """The least raw r in [lo, hi] with level(r) >= i (level non-decreasing): lo when level(lo) >= i already,
    hi + 1 when never."""
    if level(lo) >= i:
        return lo
    if level(hi) < i:
        return hi + 1
    while hi - lo > 1:  # level(lo) < i <= level(hi)
        mid = (lo + hi) // 2
        if level(mid) >= i:
            hi = mid
        else:
            lo = mid
    return hi


def _ties(spec: Steps, thresholds, spans, rising, frac: int) -> list[tuple[int, Fraction]]:
    """(channel, hw) of the inputs on either side of each step whose exact value is within float32's error of the
    boundary (``spec.near``)."""
    if spec.near is None:
        return []
    close = []
    for c, row in enumerate(thresholds):
        lo, hi = spans[c]
        for t in row:
            if not lo < t <= hi:
                continue  # a level reached everywhere or nowhere: no boundary inside the range
            for r in (t - 1, t):
                raw = r if rising[c] else -r
                if spec.near(c, raw, frac):
                    close.append((c, Fraction(raw, 1 << frac) if frac >= 0 else Fraction(raw << -frac)))
    return close


def _emit_ladder(ctx, tensor, hls, order, thresholds, frac, channels, out, spec: Steps) -> Value:
    """count = #{i : x >= T[c, i]}, one ``threshold`` node (n comparators per element, FINN's Thresholding)
    with the thresholds [C, n] raw on x's grid -> base + step * count."""
    n = spec.n
    if not ctx.builder.type_of(hls).shape:
        raise Unsupported(f"'{tensor}': a quantizer with float scales on a 0-d tensor (give it a shape of [1])")
    flat = [int(v) for v in np.array(thresholds, dtype=object).reshape(-1)]
    values = np.ldexp(np.array(flat, dtype=np.float64), -frac).reshape(channels, n)
    limits = ctx.weight(values, f"{tensor}.thresholds", exact_type(min(flat), max(flat), frac))
    current = ctx.node(tensor, "threshold", [hls, limits], order, part="count", dtype=count_type(n))
    return _levels(ctx, tensor, current.hls, order, [], channels, out, spec, 0)


def _multiply_shift(thresholds, spans, slopes, spec: Steps, frac: int):
    """(S, M per channel, B per channel) with base + floor((M * r + B) / 2^S) equal to the level at every raw
    input r of each channel's span (r negated for falling channels), or None."""
    for shift in range(max(frac, 0), 63):
        found = []
        for c, row in enumerate(thresholds):
            solution = _channel_shift(row, spans[c], slopes[c] * Fraction(1, 1 << frac) if frac >= 0 else
                                      slopes[c] * (1 << -frac), shift, spec.n)
            if solution is None:
                break
            found.append(solution)
        else:
            return shift, found
    return None


def _channel_shift(row, span, slope: Fraction, shift: int, n: int):
    """(M, B): floor((M r + B) / 2^shift) >= i exactly from row[i - 1] on, for i = 1..n, over ``span``;
    levels below 0 and above n are clipped afterwards."""
    lo, hi = span
    ideal = slope * (1 << shift)
    for m in sorted({math.floor(ideal), math.ceil(ideal)} | {math.floor(ideal) - 1, math.ceil(ideal) + 1}):
        if m < 0:
            continue
        b_lo = b_hi = None
        for i, t in enumerate(row, start=1):
            target = i << shift
            if t <= hi:  # at t (or at lo, when always) the level reaches i
                need = target - m * max(t, lo)
                b_lo = need if b_lo is None else max(b_lo, need)
            if t > lo:  # just below t (or at hi, when never) it does not
                room = target - 1 - m * min(t - 1, hi)
                b_hi = room if b_hi is None else min(b_hi, room)
        # levels below 0 and above n are clipped afterwards: nothing more to check
        if b_lo is None or b_hi is None or b_lo <= b_hi:
            return m, (b_lo if b_lo is not None else b_hi if b_hi is not None else 0)
    return None


def _emit_multiply(ctx, tensor, hls, order, solved, span, frac, channels, out, spec: Steps) -> Value:
    shift, found = solved
    rmin, rmax = span
    ms = [m for m, _ in found]
    bs = [b for _, b in found]
    factor = _const(ctx, ms, shift - frac, channels, f"{tensor}.multiplier")
    products = [m * r for m in ms for r in (rmin, rmax)]
    product = ctx.node(tensor, "scale", [hls, factor], order, part="multiply",
                       dtype=exact_type(min(products), max(products), shift))
    bias = _const(ctx, bs, shift, channels, f"{tensor}.round")
    sums = [p + b for m, b in found for p in (m * rmin, m * rmax)]
    summed = ctx.node(tensor, "bias_add", [product.hls, bias], order, part="round",
                      dtype=exact_type(min(sums), max(sums), shift))
    # levels 0..n as a count (floor, saturated below 0), clipped to n, then base + step * count
    tally = exact_type(0, spec.n, 0)
    finals = [("count", "cast", FixedType(tally.width, tally.width, False, "TRN", "SAT"))]
    if spec.n != (1 << tally.width) - 1:
        finals.append(("top", "clip", tally))
    return _levels(ctx, tensor, summed.hls, order, finals, channels, out, spec, 0)


def _levels(ctx, tensor, hls, order, finals, channels, out, spec: Steps, low: int) -> Value:
    """The nodes ``finals`` (part, op, type) giving an integer count in [low, low + n], then base + step *
    count (a ``scale`` and a ``bias_add``, or a ``cast``); the last node computes ``tensor``."""
    finals = list(finals)
    if spec.step != 1:
        grid = _frac_bits((spec.step,))
        ends = _dyadic_raw((spec.step * low, spec.step * (low + spec.n)), grid)
        finals.append(("step", "scale", exact_type(min(ends), max(ends), grid)))
    if spec.base != 0:
        finals.append(("base", "bias_add", out))
    if not finals or finals[-1][1] == "clip":
        finals.append(("level", "cast", out))
    current = hls
    for i, (part, op, dtype) in enumerate(finals):
        last = i == len(finals) - 1
        inputs, attrs = [current], {}
        if op in ("scale", "bias_add"):
            value = spec.step if op == "scale" else spec.base
            grid = _frac_bits((value,))
            inputs.append(_const(ctx, _dyadic_raw((value,), grid), grid, channels, f"{tensor}.{part}"))
        elif op == "clip":
            attrs = {"min": 0.0, "max": float(spec.n)}
        current = ctx.node(tensor, op, inputs, order, part=None if last else part, dtype=dtype,
                           **attrs).hls
    return ctx.values[tensor]
