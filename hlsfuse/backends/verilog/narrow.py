"""Products without multipliers in Verilog: a MAC stage's 1- and 2-bit weights (``lower.products``).

The stage reads its SIMD (x, w) pairs as for any MAC (the same snapshot elements and weights); instead of
multiplying, each kind selects:

    sign     x or -x by w's sign bit, in x bits + 1 (so -min fits), sign-extended to the exact width
    ternary  the same, or 0 where w is 0
    xnor     x is one bit b: 2 popcount(b & p) - popcount(b), p = w's sign bit inverted (w = +1); negated for
             a signed x (its bit set is -1)

No ``*`` is left for synthesis to map to a DSP: conditional negations, ANDs and adders.
"""

from __future__ import annotations

from ...types import FixedType
from .vlog import XW, extend

__all__ = ["kind_terms"]


def _negative(w: str, w_type: FixedType) -> str:
    return f"{w}[{w_type.width - 1}]" if w_type.signed else "1'b0"


def kind_terms(b, tag: str, kind: str, pairs: list[tuple[str, str]], x_type: FixedType,
               w_type: FixedType) -> list[str]:
    """The XW-bit terms (sext64's form) whose sum is the exact sum of the products of ``pairs`` (raw bits of an
    ``x_type`` value, of a ``w_type`` weight), built as ``kind`` says; ``b``: the module builder the wires are
    declared in, ``tag`` their prefix (a PE lane's)."""
    if kind != "ternary" and (w_type.width > 1 or not w_type.signed):  # only the sign bit is read
        for _, w in pairs:
            b.unused(w)
    if kind == "xnor":
        bits = [f"{{{XW - 1}'d0, {x}}}" for x, _ in pairs]
        ones = [f"{{{XW - 1}'d0, {x} & ~{_negative(w, w_type)}}}" for x, w in pairs]
        count = b.sum(f"{tag}pop", bits)  # the code bits set (the same for every lane: synthesis shares it)
        agree = b.sum(f"{tag}ones", ones)
        total = f"({agree} <<< 1) - {count}" if not x_type.signed else f"{count} - ({agree} <<< 1)"
        return [b.wire(f"{tag}xnor", XW, total, signed=True)]
    p = x_type.width + 1  # -x of the most negative x fits
    terms = []
    for s, (x, w) in enumerate(pairs):
        xp = extend(x, x_type.width, x_type.signed, p)
        select = f"{_negative(w, w_type)} ? -{xp} : {xp}"
        if kind == "ternary":
            select = f"|{w} ? ({select}) : {p}'d0"
        terms.append(extend(b.wire(f"{tag}sel{s}", p, select), p, True, XW))
    return terms
