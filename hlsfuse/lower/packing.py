"""Packed DSPs: two products that share an operand in one DSP slice (a MAC stage's multiplier "packed").

Two outputs of a MAC stage that read the same x and different weights (PE lanes 2i and 2i + 1 of a conv2d, dense
or matmul) take one multiplier per SIMD lane for both:

    P = x * (w_hi 2^S + w_lo) = (x w_hi) 2^S + x w_lo          x on the slice's B port (at most b signed bits),
                                                               the packed word W on its A port (at most a bits;
                                                               its pre-adder forms w_hi 2^S + w_lo)

G consecutive SIMD lanes' P are summed packed (what the slice's post-adder and cascade do), Q = H 2^S + L with
H = sum of x w_hi and L = sum of x w_lo; then

    lo = Q[S-1:0], sign-extended          = L     exact while -2^(S-1) <= L < 2^(S-1): the guard band
    hi = (Q - lo) / 2^S = Q[top:S] + Q[S-1] = H   (the sign correction: a negative lo borrowed one from hi)

      A port   | w_hi (+ borrow) | guard ... | w_lo (sign-extended) |
               ^ S + bits(w)      ^ S          ^ bits(w)            0

S is the largest shift whose packed word fits the A port, G the most products whose sum of x w_lo stays within
the guard band, both from the exact ranges of the operand types (so the weights' values never matter). Each group
of G lanes is extracted on its own; the groups' lo and hi values are then added up like unpacked products (the
adder tree, the partial sum over folds). DSP48E1 (25 x 18): 8 x 8 bits signed packs at S = 16, G = 1 (each
product extracted on its own); DSP48E2 (27 x 18): at S = 18, G = 7 (AMD's INT8 packing, WP486).
docs/folding.md (section 9) has the table per family and width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..boards import Dsp
from ..errors import HlsfuseError
from ..types import DType
from .products import weight_kind

__all__ = ["P_BITS", "Packing", "packing_of", "packed_for", "signed_bits"]

P_BITS = 48
"""The DSP48E1's and DSP48E2's accumulator (P port): a group's packed sum must fit it."""


def signed_bits(lo: int, hi: int) -> int:
    """Bits of the smallest two's-complement integer holding every value in [lo, hi]."""
    bits = 1
    while not -(1 << (bits - 1)) <= lo <= hi <= (1 << (bits - 1)) - 1:
        bits += 1
    return bits


def _range(t: DType) -> tuple[int, int]:
    return t.raw_min, t.raw_max


def _product_range(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    corners = [p * q for p in a for q in b]
    return min(corners), max(corners)


@dataclass(frozen=True)
class Packing:
    """How two products of ``x_bits`` x (signed) by weights share one slice: ``shift`` S (w_hi's place in the
    packed word), ``group`` G (SIMD lanes summed packed before extraction), ``word`` (signed bits of the packed
    word, at most the slice's a), ``x_bits`` (at most its b), ``product`` (bits of one packed product) and
    ``total`` (of a group's sum of G)."""

    shift: int
    group: int
    word: int
    x_bits: int
    product: int
    total: int
    dsp: str  # the slice it is shaped for

    def groups(self, simd: int) -> tuple[tuple[int, ...], ...]:
        """The SIMD lanes summed packed together: runs of at most G consecutive lanes."""
        return tuple(tuple(range(k, min(k + self.group, simd))) for k in range(0, simd, self.group))


def packing_of(x: DType, w: DType, dsp: Dsp) -> Packing | None:
    """The packing of x-by-w products two to a ``dsp`` slice, or None: float operands, x wider than the B port,
    no shift leaving a guard band for even one product within the A port."""
    if x.is_float or w.is_float:
        return None
    xr, wr = _range(x), _range(w)
    x_bits = signed_bits(*xr)
    if x_bits > dsp.b:
        return None
    low = _product_range(xr, wr)  # one x w_lo
    for shift in range(dsp.a - 1, 0, -1):  # the largest shift whose packed word fits the A port
        word = (wr[0] * (1 << shift) + wr[0], wr[1] * (1 << shift) + wr[1])
        if signed_bits(*word) <= dsp.a:
            break
    else:
        return None
    half = 1 << (shift - 1)
    group = min((half - 1) // low[1] if low[1] > 0 else math.inf, half // -low[0] if low[0] < 0 else math.inf)
    if group < 1 or group is math.inf:
        return None
    product = _product_range(xr, word)
    total_bits = signed_bits(*(v * group for v in product))
    while total_bits > P_BITS and group > 1:
        group -= 1
        total_bits = signed_bits(*(v * group for v in product))
    if total_bits > P_BITS:
        return None
    return Packing(shift, int(group), signed_bits(*word), x_bits, signed_bits(*product), total_bits, dsp.name)


def packed_for(where: str, x: DType, w: DType, dsp: Dsp, pe: int, per_group: int | None = None,
               raw: np.ndarray | None = None) -> Packing:
    """The packing of a MAC stage folded with multiplier "packed" (``where``: its head, for the errors): PE lanes
    2i and 2i + 1 share every x, so PE must be at least 2 and (a grouped conv2d) each group's ``per_group``
    output channels even; the products must pack on ``dsp``, and be products (``raw``, constant weights' raw
    values: not all -1, 0 or +1, which need no multiplier, ``products.weight_kind``)."""
    if raw is not None and weight_kind(np.asarray(raw), x, w) is not None:
        raise HlsfuseError(f"{where}: multiplier packed: its weights are all -1, 0 or +1, products built without "
                           f"a multiplier ({weight_kind(np.asarray(raw), x, w)}, docs/folding.md section 10)")
    if pe < 2:
        raise HlsfuseError(f"{where}: multiplier packed pairs PE lanes 2i and 2i + 1; pe must be at least 2, not {pe}")
    if per_group is not None and per_group % 2:
        raise HlsfuseError(f"{where}: multiplier packed needs PE lanes 2i and 2i + 1 in one group: an even number "
                           f"of output channels per group, not {per_group}")
    packing = packing_of(x, w, dsp)
    if packing is None:
        raise HlsfuseError(f"{where}: multiplier packed: products of {x} by {w} do not pack two to a {dsp.name} "
                           f"({dsp.a} x {dsp.b} bits: x at most {dsp.b} signed bits, two weights and a guard band "
                           f"within {dsp.a})")
    return packing
