"""Packed products in Verilog (a MAC stage's multiplier "packed", ``lower/packing.py``).

PE lanes 2i (lo) and 2i + 1 (hi) read the same x, so each SIMD lane multiplies x by the packed word
w_hi 2^S + w_lo once: one signed product of the packed word's and x's exact widths, which synthesis maps to one
DSP slice (the word's adder to its pre-adder). Each group of G lanes' products is summed at the group's exact
width (the slice's post-adder and cascade), then split: lo is the low S bits sign-extended, hi the bits above
them sign-extended, plus one for each group whose lo is negative (the borrow lo took from hi). The split values
are the terms of each lane's exact sum (``phase.fold_sum``), like unpacked products.
"""

from __future__ import annotations

from ...lower.packing import Packing
from ...types import FixedType
from .module import ModuleBuilder
from .vlog import XW, bits_for, extend, zext

__all__ = ["packed_terms"]


def packed_terms(b: ModuleBuilder, tag: str, xs: list[str], x_type: FixedType, lows: list[str], highs: list[str],
                 w_type: FixedType, packing: Packing) -> tuple[list[str], list[str]]:
    """The terms (XW-bit signed wires) of the sums of the lo and the hi lane: SIMD lane s multiplies the raw bits
    ``xs[s]`` of an ``x_type`` value by the raw bits ``lows[s]`` and ``highs[s]`` of ``w_type`` weights, packed.
    The terms' sums are the exact sums of the lanes' products."""
    shift, word, total = packing.shift, packing.word, packing.total
    lo_terms, hi_terms, borrows = [], [], []
    for g, lanes in enumerate(packing.groups(len(xs))):
        products = []
        for s in lanes:
            x = b.wire(f"{tag}pkx_{s}", packing.x_bits, extend(xs[s], x_type.width, x_type.signed, packing.x_bits),
                       signed=True)
            lo = extend(lows[s], w_type.width, w_type.signed, word)
            hi = extend(highs[s], w_type.width, w_type.signed, word)
            packed = b.wire(f"{tag}pkw_{s}", word, f"({hi} << {shift}) + {lo}", signed=True)
            product = b.wire(f"{tag}pkp_{s}", packing.product, f"{packed} * {x}", signed=True)
            products.append(extend(product, packing.product, True, total))
        q = b.wire(f"{tag}pkq_{g}", total, " + ".join(products), signed=True)
        low = b.wire(f"{tag}pkl_{g}", shift, f"{q}[{shift - 1}:0]")
        high = b.wire(f"{tag}pkh_{g}", total - shift, f"{q}[{total - 1}:{shift}]")
        lo_terms.append(b.wire(f"{tag}pklo_{g}", XW, extend(low, shift, True, XW), signed=True))
        hi_terms.append(b.wire(f"{tag}pkhi_{g}", XW, extend(high, total - shift, True, XW), signed=True))
        borrows.append(f"{q}[{shift - 1}]")
    width = bits_for(len(borrows) + 1)
    count = b.wire(f"{tag}pkc", width, " + ".join(zext(s, 1, width) for s in borrows))
    hi_terms.append(b.wire(f"{tag}pkcx", XW, zext(count, width, XW), signed=True))
    return lo_terms, hi_terms
