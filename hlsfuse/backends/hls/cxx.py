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

__all__ = ["spell_type", "Literal", "literal", "float_literal", "raw_storage", "raw_lines"]

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


def raw_storage(dtype: FixedType) -> str:
    """How a ROM of ``dtype`` stores its raw integers (numeric.h's hlsf::raw: ap_int/ap_uint for synthesis, the
    smallest C integer in C simulation)."""
    return f"hlsf::raw<{dtype.width}, {'true' if dtype.signed else 'false'}>::type"


_HEX_FROM = 1 << 36  # below this a decimal is never longer than its hexadecimal


def raw_lines(raw: np.ndarray, signed: bool = True, per_line: int = 64) -> tuple[str, ...]:
    """Raw integers as initializer text, ``per_line`` values per line, each value in the fewest characters that
    state it exactly: a decimal, or a hexadecimal where it is shorter (from 2**36 on; a decimal past 2**63 would
    not even be a valid literal). ``signed`` False: the int64 values are unsigned bit patterns (64-bit types)."""
    flat = np.asarray(raw, dtype=np.int64).reshape(-1)
    step = per_line * max(1, _BLOCK // per_line)  # whole lines at a time: the work arrays stay small
    return tuple(line for start in range(0, flat.size, step)
                 for line in _block_lines(flat[start:start + step], signed, per_line))


_BLOCK = 1 << 16


def _block_lines(flat: np.ndarray, signed: bool, per_line: int) -> list[str]:
    values = flat if signed else flat.view(np.uint64)
    large = np.abs(flat.astype(np.float64)) >= _HEX_FROM if signed else values >= _HEX_FROM
    low, high = (int(values.min()), int(values.max())) if flat.size else (0, 0)
    if flat.size and not large.any() and high - low < 1 << 16:  # each value of the range spelled once, picked by index
        spelled = np.array([str(v) for v in range(low, high + 1)], dtype=object)
        texts = spelled[(values - values.dtype.type(low)).astype(np.int64)]
        whole = flat.size // per_line * per_line
        lines = [",".join(row) for row in texts[:whole].reshape(-1, per_line).tolist()]
        if whole < flat.size:
            lines.append(",".join(texts[whole:].tolist()))
        return lines
    texts = [str(v) for v in values.tolist()]
    for k in np.flatnonzero(large).tolist():
        v = int(values[k])
        if v == -(1 << 63):
            texts[k] = "(-0x7fffffffffffffff-1)"  # 0x8000000000000000 is unsigned: its negation no long long
            continue
        spelled = ("-" if v < 0 else "") + hex(abs(v))
        if len(spelled) < len(texts[k]):
            texts[k] = spelled
    return [",".join(texts[k:k + per_line]) for k in range(0, len(texts), per_line)]
