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
    two's-complement integer (``sext64``'s form), built from LUTs (a MAC stage's multiplier "lut", which no tool maps
    to a DSP): radix-4 Booth. The operand of fewer signed bits, R (of s signed bits), is recoded into ceil(s / 2)
    digits d_j = -2 r[2j+1] + r[2j] + r[2j-1] in {-2, ..., 2} (r[-1] = 0), so R = sum_j d_j 4^j; the other, A, is
    multiplied by each: |d_j| A (A or A << 1, or 0) and, for d_j < 0 (r[2j+1] set), its ones' complement plus one,
    the plus ones gathered into one more term. In P = x bits + w bits + 1 bits (the product of any two such
    values fits; the sum wraps modulo 2^P to the exact product), ceil(s / 2) + 1 terms where the shifted ANDs of
    each bit of R were s: 95 LUTs for 8 x 8 bits in Yosys 0.70 where those took 133 (docs/folding.md section 8).
    ``b``: the module builder its P-bit wires, ``name`` first, are declared in."""
    p = x_type.width + w_type.width + 1
    (a, a_type), (r, r_type) = (x, x_type), (w, w_type)
    if _signed_bits(x_type) < _signed_bits(w_type):
        (a, a_type), (r, r_type) = (r, r_type), (a, a_type)
    digits = (_signed_bits(r_type) + 1) // 2
    rb = b.wire(f"{name}_r", 2 * digits, extend(r, r_type.width, r_type.signed, 2 * digits))
    ab = b.wire(f"{name}_a", p, extend(a, a_type.width, a_type.signed, p))
    terms, ones = [], ["1'b0"] * p
    for j in range(digits):
        high, mid = f"{rb}[{2 * j + 1}]", f"{rb}[{2 * j}]"
        if j == 0:  # r[-1] = 0
            one, two = mid, f"{high} & ~{mid}"
        else:
            low = f"{rb}[{2 * j - 1}]"
            one, two = f"{mid} ^ {low}", f"({high} & ~{mid} & ~{low}) | (~{high} & {mid} & {low})"
        times = f"({{{p}{{({one})}}}} & {ab}) | ({{{p}{{({two})}}}} & ({ab} << 1))"
        shifted = f"(({times}) ^ {{{p}{{{high}}}}}) << {2 * j}" if j else f"({times}) ^ {{{p}{{{high}}}}}"
        terms.append(b.wire(f"{name}_pp{j}", p, shifted))
        ones[p - 1 - 2 * j] = high
    terms.append(b.wire(f"{name}_neg", p, f"{{{', '.join(ones)}}}"))
    return extend(b.wire(name, p, " + ".join(terms)), p, x_type.signed or w_type.signed, XW)


def _signed_bits(t: FixedType) -> int:
    return t.width + (0 if t.signed else 1)


def assign_params(in_frac: int, dtype: FixedType, in_w: int = XW, in_signed: bool = True) -> Params:
    """The parameters of an ``hlsf_assign`` from a signed exact value to ``dtype``."""
    return (
        ("IN_W", str(in_w)), ("IN_FRAC", str(in_frac)), ("IN_SIGNED", str(int(in_signed))),
        ("OUT_W", str(dtype.width)), ("OUT_FRAC", str(dtype.frac)), ("OUT_SIGNED", str(int(dtype.signed))),
        ("QUANT", str(QUANT_MODES.index(dtype.quant))), ("OVERFLOW", str(OVERFLOW_MODES.index(dtype.overflow))),
    )
