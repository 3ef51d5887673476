"""Numeric types and the exact numpy model of AMD ap_fixed assignment.

A fixed-point value of type ``fixed<W,I>`` is a W-bit two's-complement integer R
(the *raw* value) standing for R * 2**-(W-I); ``ufixed<W,I>`` is the unsigned
variant. Integer types are fixed types with I == W. The reference interpreter
works on raw values held in int64 numpy arrays, so every operation is exact;
the only place a value changes is ``assign``, which converts a raw value with
F2 fractional bits into a target type exactly as ap_fixed's assignment does
(DESIGN.md section 3):

    d = F2 - F      d <= 0: Q = X << -d
                    d  > 0: Q = (X >> d) + inc(mode, qb, r, neg, lsb)
    then overflow:  WRAP | SAT | SAT_ZERO | SAT_SYM

``Fmt`` is the static side of the same arithmetic: the exact format of an
intermediate (a product, a sum of n terms), used to prove that no exact
intermediate needs more than the 64 bits of an int64.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import HlsfuseError

__all__ = [
    "QUANT_MODES",
    "OVERFLOW_MODES",
    "FixedType",
    "FloatType",
    "FLOAT32",
    "DType",
    "Fmt",
    "parse_dtype",
    "assign",
    "from_float",
    "to_float",
    "representation",
]

QUANT_MODES = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_MIN_INF", "RND_INF", "RND_CONV")
OVERFLOW_MODES = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")
MAX_WIDTH = 64
_INT_WIDTHS = (8, 16, 32)


@dataclass(frozen=True)
class FixedType:
    """``fixed<W,I,Q,O>`` (signed) or ``ufixed<W,I,Q,O>``; intN/uintN when I == W."""

    width: int
    int_bits: int
    signed: bool = True
    quant: str = "TRN"
    overflow: str = "WRAP"

    def __post_init__(self):
        if not 1 <= self.width <= MAX_WIDTH - (0 if self.signed else 1):
            limit = MAX_WIDTH if self.signed else MAX_WIDTH - 1
            raise HlsfuseError(f"dtype {self}: width must be 1..{limit}, not {self.width}")
        if abs(self.int_bits) > 2 * MAX_WIDTH:
            raise HlsfuseError(f"dtype {self}: integer bits must be within +-{2 * MAX_WIDTH}")
        if self.quant not in QUANT_MODES:
            raise HlsfuseError(f"dtype {self}: unknown quantization mode {self.quant!r}, expected one of {', '.join(QUANT_MODES)}")
        if self.overflow not in OVERFLOW_MODES:
            raise HlsfuseError(f"dtype {self}: unknown overflow mode {self.overflow!r}, expected one of {', '.join(OVERFLOW_MODES)}")

    is_float = False

    @property
    def frac(self) -> int:
        return self.width - self.int_bits

    @property
    def is_int(self) -> bool:
        return self.int_bits == self.width

    @property
    def raw_min(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def raw_max(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def bits(self) -> int:
        return self.width

    @property
    def lsb(self) -> float:
        """The value of one raw step, 2**-F."""
        return math.ldexp(1.0, -self.frac)

    def __str__(self) -> str:
        default_modes = self.quant == "TRN" and self.overflow == "WRAP"
        if self.is_int and self.width in _INT_WIDTHS and default_modes:
            return f"{'' if self.signed else 'u'}int{self.width}"
        modes = "" if default_modes else f",{self.quant}" + ("" if self.overflow == "WRAP" else f",{self.overflow}")
        return f"{'' if self.signed else 'u'}fixed<{self.width},{self.int_bits}{modes}>"


@dataclass(frozen=True)
class FloatType:
    """IEEE single precision; allowed in the reference and the HLS path only."""

    is_float = True
    bits = 32

    def __str__(self) -> str:
        return "float32"


FLOAT32 = FloatType()
DType = FixedType | FloatType

_FIXED_RE = re.compile(r"^(u?)fixed<\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(\w+)\s*)?(?:,\s*(\w+)\s*)?>$")
_INT_RE = re.compile(r"^(u?)int(8|16|32)$")
_DTYPE_HELP = "expected float32, int8/16/32, uint8/16/32, fixed<W,I[,Q[,O]]> or ufixed<W,I[,Q[,O]]>"


def parse_dtype(text: str) -> DType:
    """Parse a dtype spelling such as ``fixed<16,6,RND,SAT>``, ``uint8`` or ``float32``."""
    if not isinstance(text, str):
        raise HlsfuseError(f"dtype {text!r}: {_DTYPE_HELP}")
    spelled = text.strip()
    if spelled == "float32":
        return FLOAT32
    if m := _INT_RE.match(spelled):
        width = int(m.group(2))
        return FixedType(width, width, signed=not m.group(1))
    if m := _FIXED_RE.match(spelled):
        quant = m.group(4) or "TRN"
        overflow = m.group(5) or "WRAP"
        return FixedType(int(m.group(2)), int(m.group(3)), not m.group(1), quant, overflow)
    raise HlsfuseError(f"dtype {text!r}: {_DTYPE_HELP}")


def representation(dtype: DType) -> type:
    """The numpy scalar type the reference uses for values of ``dtype``."""
    return np.float32 if dtype.is_float else np.int64


# --------------------------------------------------------------------------
# Static formats of exact intermediates
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Fmt:
    """Format of an exact intermediate: width, integer bits, signedness (no rounding)."""

    width: int
    int_bits: int
    signed: bool

    @staticmethod
    def of(t: FixedType) -> Fmt:
        return Fmt(t.width, t.int_bits, t.signed)

    @property
    def frac(self) -> int:
        return self.width - self.int_bits

    def _widen(self, signed: bool) -> int:
        """Integer bits needed to hold this format's range in a (possibly) signed word."""
        return self.int_bits + (1 if signed and not self.signed else 0)

    def union(self, other: Fmt) -> Fmt:
        """Smallest format holding every value of both (used by max/min/select)."""
        signed = self.signed or other.signed
        int_bits = max(self._widen(signed), other._widen(signed))
        frac = max(self.frac, other.frac)
        return Fmt(int_bits + frac, int_bits, signed)

    def add(self, other: Fmt) -> Fmt:
        u = self.union(other)
        return Fmt(u.width + 1, u.int_bits + 1, u.signed)

    def sub(self, other: Fmt) -> Fmt:
        u = self.union(other)
        if not u.signed:
            u = Fmt(u.width + 1, u.int_bits + 1, True)
        return Fmt(u.width + 1, u.int_bits + 1, True)

    def mul(self, other: Fmt) -> Fmt:
        signed = self.signed or other.signed
        return Fmt(self.width + other.width, self.int_bits + other.int_bits, signed)

    def neg(self) -> Fmt:
        return Fmt(self.width + 1, self.int_bits + 1, True)

    def accumulate(self, n: int) -> Fmt:
        """Format of a sum of ``n`` values of this format."""
        grow = max(0, math.ceil(math.log2(n))) if n > 1 else 0
        return Fmt(self.width + grow, self.int_bits + grow, self.signed)

    def fits_int64(self) -> bool:
        return self.width <= (64 if self.signed else 63)

    def check(self, what: str) -> Fmt:
        """Raise unless the exact intermediate fits an int64; returns self for chaining."""
        if not self.fits_int64():
            sign = "signed" if self.signed else "unsigned"
            raise HlsfuseError(
                f"{what} needs a {self.width}-bit {sign} exact intermediate, more than the 64 bits "
                "hlsfuse computes with; use narrower input types"
            )
        return self


# --------------------------------------------------------------------------
# Assignment (quantization and overflow)
# --------------------------------------------------------------------------


def _shift_right(x: np.ndarray, d: int) -> np.ndarray:
    return x >> min(d, 63)


def _low_bits_set(x: np.ndarray, nbits: int) -> np.ndarray:
    """True where any of bits 0..nbits-1 of x (two's complement, sign-extended) is set."""
    if nbits <= 0:
        return np.zeros(x.shape, dtype=bool)
    if nbits >= 64:
        return x != 0
    return (x & np.int64((1 << nbits) - 1)) != 0


def _increment(mode: str, t: np.ndarray, qb: np.ndarray, r: np.ndarray, neg: np.ndarray) -> np.ndarray:
    if mode == "TRN":
        return np.zeros_like(qb)
    if mode == "TRN_ZERO":
        return neg & (qb | r)
    if mode == "RND":
        return qb
    if mode == "RND_ZERO":
        return qb & (neg | r)
    if mode == "RND_MIN_INF":
        return qb & r
    if mode == "RND_INF":
        return qb & (~neg | r)
    if mode == "RND_CONV":
        return qb & ((t & 1).astype(bool) | r)
    raise HlsfuseError(f"unknown quantization mode {mode!r}")


def _overflow(q: np.ndarray, over: np.ndarray, under: np.ndarray, t: FixedType) -> np.ndarray:
    """Apply the overflow mode; ``over``/``under`` flag values outside the range."""
    lo, hi = t.raw_min, t.raw_max
    if t.overflow == "WRAP":
        if t.width >= 64:
            return q
        low = q & np.int64((1 << t.width) - 1)
        if t.signed:
            low = np.where(low > hi, low - np.int64(1 << t.width), low)
        return low
    if t.overflow == "SAT":
        return np.where(over, hi, np.where(under, lo, q))
    if t.overflow == "SAT_ZERO":
        return np.where(over | under, 0, q)
    if t.overflow == "SAT_SYM":
        low = -hi if t.signed else lo
        return np.where(over, hi, np.where(under | (q < low), low, q))
    raise HlsfuseError(f"unknown overflow mode {t.overflow!r}")


def assign(raw: np.ndarray, frac: int, t: FixedType) -> np.ndarray:
    """Assign exact values ``raw * 2**-frac`` (int64) to fixed type ``t``; returns raw int64."""
    x = np.asarray(raw, dtype=np.int64)
    d = frac - t.frac
    if d <= 0:
        s = -d
        # detect overflow before shifting so that saturation is exact even when X << s
        # would not fit 64 bits; WRAP only needs the low bits, which int64 wrap-around keeps
        over = x > (t.raw_max >> s) if s < 64 else x > 0
        under = x < -((-t.raw_min) >> s) if s < 64 else x < 0
        q = x << s if s < 64 else np.zeros_like(x)
        return _overflow(q, over, under, t)
    trunc = _shift_right(x, d)
    qb = (_shift_right(x, d - 1) & 1).astype(bool)
    r = _low_bits_set(x, d - 1)
    neg = x < 0
    q = trunc + _increment(t.quant, trunc, qb, r, neg).astype(np.int64)
    return _overflow(q, q > t.raw_max, q < t.raw_min, t)


def from_float(values, t: FixedType) -> np.ndarray:
    """Assign real numbers (exactly, as ap_fixed assignment from a double) to ``t``."""
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise HlsfuseError(f"cannot convert NaN or infinity to {t}")
    scaled = np.ldexp(v, t.frac)
    trunc = np.floor(scaled)
    rest = scaled - trunc  # exact: in [0, 1)
    qb = rest >= 0.5
    r = (rest != 0.0) & (rest != 0.5)
    neg = v < 0
    limit = float(1 << 62)
    big = np.abs(trunc) >= limit
    if np.any(big):
        if t.overflow == "WRAP":
            trunc = np.where(big, np.mod(trunc, float(1 << t.width)), trunc)
        else:
            trunc = np.clip(trunc, -limit, limit)
    t_int = trunc.astype(np.int64)
    q = t_int + _increment(t.quant, t_int, qb, r, neg).astype(np.int64)
    return _overflow(q, q > t.raw_max, q < t.raw_min, t)


def to_float(raw: np.ndarray, t: DType) -> np.ndarray:
    """Real values of a tensor (float64; exact for widths up to 53 bits)."""
    if t.is_float:
        return np.asarray(raw, dtype=np.float64)
    return np.ldexp(np.asarray(raw, dtype=np.float64), -t.frac)
