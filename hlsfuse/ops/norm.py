"""Normalisations over the last axis: layer_norm and rms_norm (docs/numerics.md section 9).

    layer_norm(x, gamma, beta)   y = (x - mean) / sqrt(var + epsilon) * gamma + beta   (var: the population variance)
    rms_norm(x, gamma)           y = x / sqrt(mean(x^2) + epsilon) * gamma

gamma and beta hold one value per element of the last axis (N of them). Fixed point is exact up to one
reciprocal square root per row and two stated roundings. With X the raw integers of a row of x (F fractional
bits):

    S1 = sum X,  S2 = sum X^2                       exact integer sums (rms_norm: S1 = 0)
    V  = N S2 - S1^2 + E                            E = max(1, ceil(epsilon N^2 2^2F)), an integer constant
    y_i = (N X_i - S1) / sqrt(V) * gamma_i + beta_i exactly, since (x_i - mean) / sqrt(var + eps) is
                                                    (N X_i - S1) / sqrt(N S2 - S1^2 + eps N^2 2^2F)

The sums of integers are exact and V is formed once from them, so nothing cancels: a row of large equal
values gives V = E exactly and y = beta. 1/sqrt(V) (``rsqrt``): V = m 4^e with m in [1, 4) by its leading
one; m truncated to MANTISSA_FRAC fractional bits (M); a first guess y0 from a table of the top
RSQRT_INDEX_BITS bits of M (``hlsfuse.lut``'s "rsqrt" at the bucket's middle, RSQRT_ENTRY); one Newton step
y1 = y0 (3 - m y0^2) / 2 in integers (its two truncations stated in ``rsqrt``); 1/sqrt(V) ~ R 2^-(24 + e)
(RSQRT_FRAC = 24). Then

    n = (N X_i - S1) R 2^-(24 + e)   assigned to norm_dtype             (rounding 1)
    y = n * gamma + beta             exact, assigned to the output type  (rounding 2)

``rsqrt_error`` measures the relative error of R 2^-e against 1/sqrt(V) over every mantissa the table and the
Newton step can see, exhaustively; ``bounds`` uses it: |n| <= sqrt(N - 1) (1 + error) for layer_norm,
sqrt(N) (1 + error) for rms_norm (epsilon only shrinks it). float32 graphs compute in float64 (the mean,
the variance from the deviations, the normalised value) and round once to float32.

The whole row is buffered: the output needs its sums first (one read pass accumulating S1 and S2 while
storing the row, then one output pass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..errors import OpError
from ..lut import Table, make_table
from ..types import FixedType, Fmt, assign
from .base import Attr, OpDef, Pattern, Sig, same_family
from .exact import finish
from .interval import Interval

__all__ = ["OPS", "MANTISSA_FRAC", "RSQRT_INDEX_BITS", "RSQRT_ENTRY", "NEWTON_FRAC", "RSQRT_FRAC", "MANTISSA_FMT",
           "NORM_DTYPE", "Norm", "norm_of", "rsqrt_table", "rsqrt", "rsqrt_error", "bit_length"]

MANTISSA_FRAC = 20
"""Fractional bits of the mantissa m = V / 4^e in [1, 4) (truncated)."""

MANTISSA_FMT = Fmt(MANTISSA_FRAC + 2, 2, False)
"""The mantissa's format, ufixed<22,2>: the rsqrt table's input."""

RSQRT_INDEX_BITS = 10
"""The table reads the top 10 bits of the mantissa (1024 entries, the 768 of m >= 1 in use)."""

RSQRT_ENTRY = FixedType(16, 0, False, "RND", "SAT")
"""The first guess y0 = 1/sqrt(the bucket's middle), ufixed<16,0,RND,SAT> (in (0.5, 1))."""

NEWTON_FRAC = 32
"""Fractional bits the Newton step keeps of 3 - m y0^2 (truncated)."""

RSQRT_FRAC = 24
"""Fractional bits of R = y1 (truncated): 1/sqrt(V) ~ R 2^-(24 + e)."""

NORM_DTYPE = FixedType(24, 8, True, "RND", "SAT")
"""The default type of the normalised value n: 16 fractional bits, |n| < 128 (sqrt(N - 1) for N up to 16385)."""

_ENTRY_FRAC = RSQRT_ENTRY.frac
_PRODUCT_FRAC = MANTISSA_FRAC + 2 * _ENTRY_FRAC  # m y0^2: 52 fractional bits
_T_SHIFT = _PRODUCT_FRAC - NEWTON_FRAC  # 3 - m y0^2 truncated to 32 fractional bits
_R_SHIFT = _ENTRY_FRAC + NEWTON_FRAC + 1 - RSQRT_FRAC  # y0 t / 2 (49 fractional bits) truncated to 24


# --------------------------------------------------------------------------
# 1/sqrt(V)
# --------------------------------------------------------------------------


@lru_cache(maxsize=1)
def rsqrt_table() -> Table:
    """y0 per bucket of the mantissa's top RSQRT_INDEX_BITS bits (``hlsfuse.lut``)."""
    return make_table("rsqrt", MANTISSA_FMT, RSQRT_ENTRY, RSQRT_INDEX_BITS)


def bit_length(v: np.ndarray) -> np.ndarray:
    """Bits of each non-negative int64 (0 for 0): the position of the leading one, plus one."""
    v = np.asarray(v, dtype=np.int64)
    k = np.frexp(v.astype(np.float64))[1].astype(np.int64)  # 2^(k-1) <= v < 2^k, up to the float's rounding
    k = np.where((v >> np.minimum(k, 63)) > 0, k + 1, k)
    return np.where((k > 0) & ((v >> np.maximum(k - 1, 0)) == 0), k - 1, k)


def _newton(m: np.ndarray) -> np.ndarray:
    """R (RSQRT_FRAC fractional bits) of mantissas M (MANTISSA_FRAC fractional bits, in [2^20, 2^22))."""
    y0 = rsqrt_table().lookup(m)  # 16 fractional bits
    q = m * y0 * y0  # m y0^2 on 52 fractional bits, < 2^54
    t = ((3 << _PRODUCT_FRAC) - q) >> _T_SHIFT  # 3 - m y0^2 > 0, on 32 fractional bits (truncated)
    return (y0 * t) >> _R_SHIFT  # y0 t / 2 on 24 fractional bits (truncated), < 2^50 before the shift


def rsqrt(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, e) with R 2^-(RSQRT_FRAC + e) ~ 1/sqrt(V), for int64 V >= 1 (elementwise):

        e = floor((bit_length(V) - 1) / 2)                    V = m 4^e, m in [1, 4)
        M = V >> (2e - 20), or V << (20 - 2e)                 m on 20 fractional bits, truncated
        y0 = table[M >> 12]                                    16 fractional bits
        t = (3 2^52 - M y0^2) >> 20                           3 - m y0^2 on 32 fractional bits, truncated
        R = (y0 t) >> 25                                       y0 (3 - m y0^2) / 2 on 24 fractional bits, truncated
    """
    v = np.asarray(v, dtype=np.int64)
    e = (bit_length(v) - 1) >> 1
    s = 2 * e - MANTISSA_FRAC
    m = np.where(s >= 0, v >> np.clip(s, 0, 63), v << np.clip(-s, 0, 63))
    return _newton(m), e


@dataclass(frozen=True)
class RsqrtError:
    """The relative error of R 2^-(24 + e) against 1/sqrt(V) over every V: R 2^-(24+e) sqrt(V) - 1 lies in
    [low, high] (``rsqrt_error``)."""

    low: float
    high: float

    @property
    def worst(self) -> float:
        return max(-self.low, self.high)


@lru_cache(maxsize=1)
def rsqrt_error() -> RsqrtError:
    """Exhaustively over the 3 2^20 mantissas M in [2^20, 2^22): every V of mantissa M has V / 4^e in
    [M, M + 1) 2^-20 (exactly M 2^-20 when no bit is truncated), so R sqrt(V / 4^e) 2^-24 lies between its
    values at the two ends."""
    m = np.arange(1 << MANTISSA_FRAC, 1 << (MANTISSA_FRAC + 2), dtype=np.int64)
    r = np.ldexp(_newton(m).astype(np.float64), -RSQRT_FRAC)
    low = r * np.sqrt(np.ldexp(m.astype(np.float64), -MANTISSA_FRAC)) - 1.0
    high = r * np.sqrt(np.ldexp((m + 1).astype(np.float64), -MANTISSA_FRAC)) - 1.0
    return RsqrtError(float(low.min()), float(high.max()))


# --------------------------------------------------------------------------
# The facts of a node
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Norm:
    """What a fixed-point layer_norm or rms_norm node computes per row of ``n`` elements (``norm_of``)."""

    n: int  # elements per row (the last axis)
    rms: bool  # rms_norm: no mean (S1 = 0) and no beta
    epsilon_term: int  # E, added to N S2 - S1^2
    v_max: int  # the largest V: N^2 max|X|^2 + E
    dev_max: int  # the largest |N X_i - S1|
    bound: float  # the largest |n| before its rounding: sqrt(N - 1) or sqrt(N), times 1 + the rsqrt's error

    @property
    def v_bits(self) -> int:
        """Bits of V (unsigned)."""
        return max(1, self.v_max.bit_length())


def _epsilon_term(epsilon: float, n: int, frac: int) -> int:
    """E = max(1, ceil(epsilon N^2 2^(2F))), from the double's exact value."""
    exact = Fraction(epsilon) * n * n * Fraction(2) ** (2 * frac)
    return max(1, math.ceil(exact))


def norm_bound(n: int, rms: bool) -> float:
    """The largest |n| before its rounding: |N X_i - S1| <= sqrt(N - 1) sqrt(N S2 - S1^2) (rms_norm: |N X_i| <=
    sqrt(N) sqrt(N S2)), E > 0 only adds to V, and R 2^-(24+e) is at most 1 + error times 1/sqrt(V)."""
    root = math.sqrt(n if rms else n - 1)
    return root * (1.0 + max(rsqrt_error().high, 0.0)) * (1.0 + 1e-12)


def norm_of(sig: Sig) -> Norm:
    """The facts of a fixed-point node (its input's type, N and epsilon)."""
    x = sig.dtypes[0]
    n = sig.shapes[0][-1]
    rms = len(sig.shapes) == 2
    largest = max(-x.raw_min, x.raw_max)
    e_term = _epsilon_term(sig["epsilon"], n, x.frac)
    dev_max = n * largest if rms else (n - 1) * (x.raw_max - x.raw_min)
    return Norm(n, rms, e_term, n * n * largest * largest + e_term, dev_max, norm_bound(n, rms))


def _bits(value: int, what: str) -> None:
    """``value`` (a magnitude) must fit a signed 64-bit exact intermediate."""
    width = value.bit_length() + 1
    Fmt(width, width, True).check(what)


# --------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------


def _epsilon(value: float) -> str | None:
    return None if value >= 0 else f"must be at least 0, not {value}"


def _fixed_attr(value) -> str | None:
    return f"must be a fixed-point type, not {value}" if value.is_float else None


def _shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    if len(x) < 1:
        raise OpError("input 'x' must have at least 1 dim")
    for name, shape in zip(("gamma", "beta"), sig.shapes[1:]):
        if tuple(shape) != (x[-1],):
            raise OpError(f"input '{name}' must have shape [{x[-1]}] (the last axis of 'x'), not {list(shape)}")
    return x


def _check(sig: Sig) -> None:
    same_family(sig)
    if sig.dtypes[0].is_float:
        return
    x, t = Fmt.of(sig.dtypes[0]), sig["norm_dtype"]
    x.accumulate(sig.shapes[0][-1]).check("the exact sum of x")
    x.mul(x).accumulate(sig.shapes[0][-1]).check("the exact sum of x^2")
    norm = norm_of(sig)
    _bits(norm.v_max, "the variance term N sum(x^2) - sum(x)^2 + E")
    _bits(norm.dev_max << RSQRT_FRAC, "the deviation N x - sum(x) times 1/sqrt(V)")
    _bits(math.ceil(norm.bound * 2 ** (t.frac + 2)) + 1, f"the normalised value on {t.frac + 2} fractional bits")
    product = Fmt.of(t).mul(Fmt.of(sig.dtypes[1]))
    if not norm.rms:
        product = product.add(Fmt.of(sig.dtypes[2]))
    product.check("the exact n * gamma + beta" if not norm.rms else "the exact n * gamma")


def _compute(args, sig):
    x, gamma = args[0], args[1]
    rms = len(args) == 2
    if sig.out_dtype.is_float:
        v = np.asarray(x, dtype=np.float64)
        d = v if rms else v - v.mean(axis=-1, keepdims=True)
        scale = np.sqrt((d * d).mean(axis=-1, keepdims=True) + sig["epsilon"])
        y = d / scale * np.asarray(gamma, dtype=np.float64)
        if not rms:
            y = y + np.asarray(args[2], dtype=np.float64)
        return y.astype(np.float32)
    norm, t = norm_of(sig), sig["norm_dtype"]
    n = norm.n
    s1 = np.zeros(x.shape[:-1] + (1,), dtype=np.int64) if rms else x.sum(axis=-1, keepdims=True)
    s2 = (x * x).sum(axis=-1, keepdims=True)
    r, e = rsqrt(n * s2 - s1 * s1 + norm.epsilon_term)
    normalised = assign((n * x - s1) * r, RSQRT_FRAC + e, t)
    product = normalised * gamma
    frac = t.frac + sig.dtypes[1].frac
    if rms:
        return finish(product, frac, sig)
    beta_frac = sig.dtypes[2].frac
    common = max(frac, beta_frac)
    return finish((product << (common - frac)) + (args[2] << (common - beta_frac)), common, sig)


def _bounds(ins, sig):
    rms = len(ins) == 2
    x = ins[0]
    n = sig.shapes[0][-1]
    if x.frac is None:
        root = math.sqrt(n if rms else n - 1)
        normalised = Interval(-root, root, None)
    else:
        bound = norm_bound(n, rms)
        normalised = Interval.of_reals(-bound, bound).quantize(sig["norm_dtype"])[0]
    out = normalised * ins[1]
    return out if rms else out + ins[2]


def _buffer(sig: Sig) -> str:
    return "a normalisation needs the row's sums before emitting"


def _tables(sig: Sig) -> tuple[Table, ...]:
    return (rsqrt_table(),)


def _unsigned(bits: int) -> FixedType:
    return FixedType(bits, bits, False)


def _products(sig: Sig) -> tuple[tuple[FixedType, FixedType, bool], ...]:
    """Per lane x^2, (N x - S1) R and n gamma; once per stage S1^2 and the Newton step's M y0, (M y0) y0 and y0 t."""
    x, norm = sig.dtypes[0], norm_of(sig)
    dev = FixedType(norm.dev_max.bit_length() + 1, norm.dev_max.bit_length() + 1)
    r, y0, m = _unsigned(RSQRT_FRAC + 1), _unsigned(RSQRT_ENTRY.width), _unsigned(MANTISSA_FMT.width)
    lanes = ((x, x, True), (dev, r, True), (sig["norm_dtype"], sig.dtypes[1], True))
    s1 = Fmt.of(x).accumulate(norm.n)
    square = () if norm.rms else ((FixedType(s1.width, s1.width, s1.signed),) * 2 + (False,),)
    newton = ((m, y0, False), (_unsigned(m.width + y0.width), y0, False), (y0, _unsigned(NEWTON_FRAC + 2), False))
    return lanes + square + newton


def _norm_op(name: str, inputs: tuple[str, ...], doc: str) -> OpDef:
    return OpDef(
        name=name,
        inputs=inputs,
        attrs=(Attr("epsilon", "float", 1e-5, check=_epsilon), Attr("norm_dtype", "dtype", NORM_DTYPE,
                                                                    check=_fixed_attr)),
        shape=_shape,
        pattern=Pattern.OPAQUE,
        tables=_tables,
        stream="own",
        check=_check,
        compute=_compute,
        bounds=_bounds,
        needs_buffer=_buffer,
        products=_products,
        doc=doc,
    )


OPS = (
    _norm_op("layer_norm", ("x", "gamma", "beta"),
             "(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis (the population variance)"),
    _norm_op("rms_norm", ("x", "gamma"), "x / sqrt(mean(x^2) + epsilon) * gamma over the last axis"),
)
