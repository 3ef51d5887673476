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

``assign_quotient`` is the same assignment for an exact quotient (a mean: an exact sum divided by its
count), computed by integer division, so it too rounds exactly once.

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
    "DEFAULT_PRECISION",
    "EXACT",
    "DType",
    "Fmt",
    "parse_dtype",
    "assign",
    "assign_quotient",
    "from_float",
    "to_float",
    "representation",
]

QUANT_MODES = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_MIN_INF", "RND_INF", "RND_CONV")
OVERFLOW_MODES = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")
MAX_WIDTH = 64
_INT_WIDTHS = (8, 16, 32)
DEFAULT_PRECISION = "auto:16,6"
"""The precision of an imported model's tensors when none is given (the ONNX frontend's default for
models without quantizers: 16-bit types, integer bits from range analysis, at most 6); here, so that
the command line names it without importing the frontend."""

EXACT = "exact"
"""The precision spelling of auto with exact nodes: every node gets the type that holds its exact result
(the ONNX frontend's default for models with quantizers, quant.py); here beside DEFAULT_PRECISION."""


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
            modes = ", ".join(QUANT_MODES)
            raise HlsfuseError(f"dtype {self}: unknown quantization mode {self.quant!r}, expected one of {modes}")
        if self.overflow not in OVERFLOW_MODES:
            modes = ", ".join(OVERFLOW_MODES)
            raise HlsfuseError(f"dtype {self}: unknown overflow mode {self.overflow!r}, expected one of {modes}")

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
        # as ap_fixed: one bit more than the union, always signed (a - b of unsigned a, b lies in
        # (-2**I, 2**I), which a signed I+1 integer part holds)
        u = self.union(other)
        return Fmt(u.width + 1, u.int_bits + 1, True)

    def mul(self, other: Fmt) -> Fmt:
        signed = self.signed or other.signed
        return Fmt(self.width + other.width, self.int_bits + other.int_bits, signed)

    def neg(self) -> Fmt:
        return Fmt(self.width + 1, self.int_bits + 1, True)

    def accumulate(self, n: int) -> Fmt:
        """Format of a sum of ``n`` values of this format."""
        grow = (n - 1).bit_length() if n > 1 else 0  # ceil(log2 n), exact for any n
        return Fmt(self.width + grow, self.int_bits + grow, self.signed)

    def dividend(self, t: FixedType) -> Fmt:
        """Format of the dividend ``assign_quotient`` forms from a value of this format for type ``t``.

        The value is put on max(F, F_t + 1) fractional bits (one bit below t's LSB decides the
        rounding); the divisor never grows, as extra fractional bits of the value become a shift.
        """
        extra = max(t.frac + 1 - self.frac, 0)
        return Fmt(self.width + extra, self.int_bits, self.signed)

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


_SHIFT_CAP = 66
"""Shift counts are clipped to +-_SHIFT_CAP: an int64 shifted by 64 or more places gives the same bits as by 66."""


def _shift_left(x: np.ndarray, s: np.ndarray, t: FixedType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q = X << s (s >= 0, exact) and the flags Q > max, Q < min.

    The range is checked on X itself, so saturation is exact even when X << s does not fit 64 bits;
    WRAP only needs the low bits of Q, which int64 wrap-around keeps.
    """
    s63 = np.minimum(s, 63)
    q = np.where(s < 64, x << s63, 0)
    over = x > (np.int64(t.raw_max) >> s63)  # X << s > max  <=>  X > floor(max / 2**s)
    under = x < np.where(s < t.width, np.int64(t.raw_min) >> s63, 0)  # X < ceil(min / 2**s)
    return q, over, under


def _floor_shift(x: np.ndarray, s) -> tuple[np.ndarray, np.ndarray]:
    """floor(X / 2**s) for s >= 0, and whether any of the dropped bits 0..s-1 is set."""
    floor = x >> np.minimum(s, 63)  # shifts past 63 leave the sign, as floor does
    dropped = np.where(s >= 64, x != 0, (x & ~(np.int64(-1) << np.minimum(s, 63))) != 0)
    return floor, dropped


def _round(q2: np.ndarray, r: np.ndarray, neg: np.ndarray, quant: str) -> np.ndarray:
    """Q = T + inc from q2 = floor(value * 2**(F+1)): T = q2 >> 1, qb = q2 & 1; r: value * 2**(F+1) is not whole."""
    trunc = q2 >> 1
    qb = (q2 & 1).astype(bool)
    return trunc + _increment(quant, trunc, qb, r, neg).astype(np.int64)


def _shift_right(x: np.ndarray, d: np.ndarray, quant: str) -> np.ndarray:
    """Q = (X >> d) + inc (d >= 1): floor, then the increment of the quantization mode."""
    q2, r = _floor_shift(x, d - 1)  # bits past 63 copy the sign, so qb does too
    return _round(q2, r, x < 0, quant)


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
        if t.signed:
            # keep the low W bits, sign-extended: move them to the top of the int64 and back
            return (q << (64 - t.width)) >> (64 - t.width)
        return q & np.int64(hi)
    if t.overflow == "SAT":
        return np.where(over, hi, np.where(under, lo, q))
    if t.overflow == "SAT_ZERO":
        return np.where(over | under, 0, q)
    if t.overflow == "SAT_SYM":
        low = -hi if t.signed else lo
        return np.where(over, hi, np.where(under | (q < low), low, q))
    raise HlsfuseError(f"unknown overflow mode {t.overflow!r}")


def assign(raw: np.ndarray, frac, t: FixedType) -> np.ndarray:
    """Assign exact values ``raw * 2**-frac`` (int64) to fixed type ``t``; returns raw int64.

    ``frac`` is an int, or an int array broadcasting with ``raw`` (``from_float`` gives every
    value its own). Any shift count is exact, including shifts past the 64 bits of the word.
    """
    x = np.asarray(raw, dtype=np.int64)
    d = np.clip(np.asarray(frac, dtype=np.int64) - t.frac, -_SHIFT_CAP, _SHIFT_CAP)
    left = d <= 0
    shifted, over, under = _shift_left(x, np.maximum(-d, 0), t)
    rounded = _shift_right(x, np.maximum(d, 1), t.quant)
    q = np.where(left, shifted, rounded)
    over = np.where(left, over, rounded > t.raw_max)
    under = np.where(left, under, rounded < t.raw_min)
    return _overflow(q, over, under, t)


def assign_quotient(raw: np.ndarray, frac: int, divisor, t: FixedType) -> np.ndarray:
    """Assign exact quotients ``raw * 2**-frac / divisor`` to fixed type ``t``, as ``assign`` would.

    ``divisor`` is a positive int or int array broadcasting with ``raw``. With k = F_t - frac + 1,
    q2 = floor(raw * 2**k / divisor) is the quotient floored one bit below t's LSB, so T = q2 >> 1,
    qb = q2 & 1 and r = "the division left a remainder". For k < 0 the division by 2**-k is a floor
    shift first: floor(floor(a / 2**m) / n) = floor(a / (2**m * n)), and the remainder of the whole is
    zero exactly when both partial remainders are. The caller proves that ``raw << max(k, 0)`` fits
    an int64 with ``Fmt.dividend(t).check(...)``.
    """
    x = np.asarray(raw, dtype=np.int64)
    n = np.asarray(divisor, dtype=np.int64)
    if np.any(n < 1):
        raise HlsfuseError(f"assign_quotient: the divisor must be positive, not {int(n.min())}")
    k = t.frac - frac + 1
    shifted, dropped = _floor_shift(x << max(k, 0), max(-k, 0))
    q2, rem = np.divmod(shifted, n)
    q = _round(q2, dropped | (rem != 0), x < 0, t.quant)
    return _overflow(q, q > t.raw_max, q < t.raw_min, t)


def from_float(values, t: FixedType) -> np.ndarray:
    """Assign real numbers to ``t`` exactly, as ap_fixed assignment from a double does.

    A double is exactly M * 2**(e-53) with a 53-bit integer M, so this is ``assign(M, 53 - e, t)``:
    rounding and range checks see the exact value, however large or small it is.
    """
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise HlsfuseError(f"cannot convert NaN or infinity to {t}")
    mantissa, exponent = np.frexp(v)  # v = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (or 0)
    return assign(np.ldexp(mantissa, 53).astype(np.int64), 53 - exponent.astype(np.int64), t)


def to_float(raw: np.ndarray, t: DType) -> np.ndarray:
    """Real values of a tensor (float64; exact for widths up to 53 bits)."""
    if t.is_float:
        return np.asarray(raw, dtype=np.float64)
    return np.ldexp(np.asarray(raw, dtype=np.float64), -t.frac)
