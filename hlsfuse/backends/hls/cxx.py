"""C++ spellings of hlsfuse types and exact C++ spellings of constant values.

Types follow DESIGN.md section 3: ``fixed<W,I,Q,O>`` is ``ap_fixed<W, I, AP_Q, AP_O>`` (modes left
out when they are the defaults), ``ufixed`` is ``ap_ufixed``, integer types are ``ap_fixed<W, W>``
(``ap_int`` arithmetic would round differently when mixed with fractional types) and float32 is
``float``.

A fixed-point constant is written as a decimal literal of the double that equals it exactly (every
value whose raw integer has at most 53 significant bits), which AMD's headers and hlsfuse's convert
without rounding. The rare wider value is written as its raw integer through the kernel library's
``hlsf::from_raw``, so every constant is exact with both header sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...types import DType, FixedType

__all__ = ["spell_type", "Literal", "literal", "float_literal"]

_MANTISSA_BITS = 53


def spell_type(dtype: DType) -> str:
    """The C++ type of values of ``dtype``."""
    if dtype.is_float:
        return "float"
    base = "ap_fixed" if dtype.signed else "ap_ufixed"
    modes = ""
    if (dtype.quant, dtype.overflow) != ("TRN", "WRAP"):
        modes = f", AP_{dtype.quant}, AP_{dtype.overflow}"
    return f"{base}<{dtype.width}, {dtype.int_bits}{modes}>"


@dataclass(frozen=True)
class Literal:
    """A constant, spelled for an array initializer (``value``) and as a typed expression (``typed``)."""

    value: str  # e.g. "0.375" (converted by the array's element type) or "hlsf::from_raw<t_w>(...LL)"
    typed: str  # e.g. "t_w(0.375)": an expression of exactly the constant's type


def _exact_double(raw: int, frac: int) -> float | None:
    """raw * 2**-frac as a double, or None when a double cannot hold it exactly."""
    raw = int(raw)
    if raw == 0:
        return 0.0
    significant = raw >> ((raw & -raw).bit_length() - 1)  # drop trailing zero bits
    if abs(significant).bit_length() > _MANTISSA_BITS:
        return None
    return math.ldexp(raw, -frac)


def literal(raw: int, dtype: FixedType, type_name: str) -> Literal:
    """The exact literal of the fixed value with raw integer ``raw`` of ``dtype`` (typedef ``type_name``)."""
    value = _exact_double(raw, dtype.frac)
    if value is None:
        # |raw| < 2**63 here: -2**63 has one significant bit, so a double holds it
        text = f"hlsf::from_raw<{type_name}>({int(raw)}LL)"
        return Literal(text, text)
    text = repr(value)  # the shortest decimal that reads back as this very double
    return Literal(text, f"{type_name}({text})")


def float_literal(value: float) -> Literal:
    """A float32 constant: the decimal of its exact value with an ``f`` suffix (reads back exactly)."""
    v = float(np.float32(value))
    if math.isnan(v):
        text = "std::numeric_limits<float>::quiet_NaN()"
    elif math.isinf(v):
        text = ("-" if v < 0 else "") + "std::numeric_limits<float>::infinity()"
    else:
        text = repr(v) + "f"
    return Literal(text, text)
