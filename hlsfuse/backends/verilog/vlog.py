"""Small Verilog spelling helpers shared by every generator of the Verilog backend.

Generated Verilog must pass ``verilator --lint-only -Wall`` without waivers, so every operand of
an operator has exactly the width of the operator's context: literals are sized, narrower values
are extended explicitly (``zext``/``sext64``), indexes have exactly the bits of the array they
index (``index_width``). Exact intermediates are 64-bit signed values (``XW``), like the reference's
int64 arithmetic: every op's ``check`` rule has proven that its exact result fits 64 bits.
"""

from __future__ import annotations

from ...types import OVERFLOW_MODES, QUANT_MODES, FixedType

__all__ = ["Params", "XW", "bits_for", "index_width", "ulit", "slit", "zext", "extend", "sext64", "assign_params"]

Params = tuple[tuple[str, str], ...]
"""Parameters of a module instance: (name, value) pairs."""

XW = 64
"""Width of the signed exact intermediate every node computes before its one assignment."""


def bits_for(count: int) -> int:
    """Bits of a counter running over 0..count-1 (at least 1)."""
    return max(1, (count - 1).bit_length())


def index_width(size: int) -> int:
    """Bits of an index into an array of ``size`` elements, as Verilator expects them (at least 1)."""
    return max(1, (size - 1).bit_length())


def ulit(value: int, width: int) -> str:
    """An unsigned sized literal."""
    if not 0 <= value < (1 << width):
        raise ValueError(f"{value} does not fit an unsigned {width}-bit literal")
    return f"{width}'d{value}"


def slit(value: int) -> str:
    """A signed 64-bit literal (two's complement hex), to compare with or combine into exact values."""
    return f"{XW}'sh{value & ((1 << XW) - 1):016x}"


def zext(expr: str, width: int, to: int) -> str:
    """``expr`` (``width`` bits, unsigned) as exactly ``to`` bits: zero-extended, or its low bits."""
    if width == to:
        return expr
    if width > to:
        return f"{expr}[{to - 1}:0]"
    return f"{{{{{to - width}{{1'b0}}}}, {expr}}}"


def extend(expr: str, width: int, signed: bool, to: int) -> str:
    """``expr`` (``width`` bits) sign- or zero-extended to ``to`` >= ``width`` bits."""
    if width == to:
        return expr
    fill = f"{expr}[{width - 1}]" if signed else "1'b0"
    return f"{{{{{to - width}{{{fill}}}}}, {expr}}}"


def sext64(expr: str, dtype: FixedType) -> str:
    """The raw bits ``expr`` of a ``dtype`` value as a 64-bit two's-complement integer (unsigned concat)."""
    return extend(expr, dtype.width, dtype.signed, XW)


def lut_product(b, name: str, x: str, x_type: FixedType, w: str, w_type: FixedType) -> str:
    """The exact product of the raw bits ``x`` of an ``x_type`` value and ``w`` of a ``w_type`` value as a 64-bit
    two's-complement integer (``sext64``'s form), built from LUTs (a MAC stage's multiplier "lut"): in
    P = x bits + w bits + 1 bits (the product of any two such values fits), the sum of x shifted by each bit of w
    that is set, the sign bit's weight negative when w is signed; adders and ANDs, which no tool maps to a DSP.
    ``b``: the module builder its P-bit wire ``name`` is declared in."""
    p = x_type.width + w_type.width + 1
    xp = extend(x, x_type.width, x_type.signed, p)
    n = w_type.width
    terms = [f"({{{p}{{{w}[{i}]}}}} & ({xp} << {i}))" for i in range(n)]
    last = terms.pop()
    total = f"{' + '.join(terms) or f'{p}' + chr(39) + 'd0'} {'-' if w_type.signed else '+'} {last}"
    return extend(b.wire(name, p, total), p, x_type.signed or w_type.signed, XW)


def assign_params(in_frac: int, dtype: FixedType, in_w: int = XW, in_signed: bool = True) -> Params:
    """The parameters of an ``hlsf_assign`` from a signed exact value to ``dtype``."""
    return (
        ("IN_W", str(in_w)), ("IN_FRAC", str(in_frac)), ("IN_SIGNED", str(int(in_signed))),
        ("OUT_W", str(dtype.width)), ("OUT_FRAC", str(dtype.frac)), ("OUT_SIGNED", str(int(dtype.signed))),
        ("QUANT", str(QUANT_MODES.index(dtype.quant))), ("OVERFLOW", str(OVERFLOW_MODES.index(dtype.overflow))),
    )
