"""Multiplications by a constant built as shifts and adds: a constant-coefficient multiplier in LUTs.

An elementwise ``mul`` or ``scale`` node one of whose operands is a fixed-point graph constant holding
one value everywhere (a scalar broadcast: TensorNorm's scale, a float factor the importer quantized)
multiplies every element x by the same raw integer R. Written in canonical signed digits (the
non-adjacent form, at most one of any two neighbouring digits nonzero, the fewest nonzero digits),
R = sum_i s_i 2^k_i with s_i = +-1, the product's raw integer is

    X R = sum_i s_i (X << k_i)            e.g. R = 37 = 2^5 + 2^2 + 2^0:  (X << 5) + (X << 2) + X

which is (digits - 1) adders and no multiplier (a power of two is a wire, 0 a constant). The product
keeps x's and the constant's fractional bits, F = F_x + F_c, exactly like ``x * c``, and is then
assigned once to the node's output type; so the value is the one the reference computes, bit for bit.

The rule (``shift_add``): such a node is built so when its adders cost at most SHIFT_ADD_LUTS LUTs even
as wide as the product, (digits - 1) x (product bits) <= 64 (``ShiftAdd.bound``); otherwise it stays a
multiplier (a DSP, or LUTs for a narrow product: ``area.dsp_per_product``). 64 LUTs is below the LUTs a device
holds per DSP slice on every board hlsfuse knows (94 on the KV260 to 264 on the Arty A7), so the adders never
cost a larger share of the fabric than the slice they replace. A 16 x 16-bit product qualifies with up to 3
nonzero digits, an 8 x 8 one with up to 5. The product must fit SHIFT_ADD_BITS bits, so that the adders' one
extra bit stays within the C simulation's 64-bit ap_int arithmetic.

The price (``ShiftAdd.luts``) is what synthesis builds, measured: (digits - 1) x (x's signed bits + 1). Yosys
0.70 (``synth_xilinx -family xc7 -noiopad -noclkbuf -flatten``, a registered x and a registered product) maps
x * R, in LUTs against this rule and the bound (x bits x constant bits: R):

    8 x 8:   5: 7 / 9 / 16      37: 18 / 18 / 32    85: 25 / 27 / 48   -85: 39 / 27 / 48
             107: 28 / 27 / 48  91: 27 / 27 / 48
    16 x 8:  5: 15 / 17 / 24    37: 34 / 34 / 48    85: 52 / 51 / 72   107: 52 / 51 / 72
    16 x 16: 257: 15 / 17 / 32  4161: 40 / 34 / 64  12345 (5 digits): 101 / 68 / 128
             21845 (8 digits): 143 / 119 / 224
    8 x 16:  4161: 17 / 18 / 48  21845: 54 / 63 / 168      4 x 4: 3, 5, 7: 3 / 5 / 8

The low bits below a term's shift are wires and its sign extension costs little, so the adders are about as
wide as x, not as the product: within 0.6 to 1.44 of the rule wherever the bound admits the node (the bound
is 1.2 to 2.8 times what Yosys builds there), and no flip-flops (the registers around it are the stage's).

One fact for three readers: the lowering wires the constant in (its element operand has source
``"wired"``, so no ROM is built for it), the resource model prices it (``area.stage_area``), and both
backends spell it (templates/hls/ops.j2 ``mul``, backends/verilog/expr.py ``_shift_add``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ops import get_op
from ..types import DType

__all__ = ["SHIFT_ADD_LUTS", "SHIFT_ADD_BITS", "ShiftAdd", "csd", "shift_add", "shift_add_luts"]

SHIFT_ADD_LUTS = 64
"""The most LUTs a constant multiplication's adders may cost for it to be built from them."""

SHIFT_ADD_BITS = 63
"""The widest product built as shifts and adds (its adders are one bit wider, at most 64)."""


def csd(value: int) -> tuple[tuple[int, int], ...]:
    """The nonzero digits (shift, sign) of ``value``'s canonical signed-digit form, lowest first:
    value = sum of sign * 2^shift."""
    digits, v, shift = [], int(value), 0
    while v:
        if v & 1:
            sign = 1 if v & 3 == 1 else -1  # v % 4 == 3: -1 here and a carry, so no two digits are adjacent
            digits.append((shift, sign))
            v -= sign
        v >>= 1
        shift += 1
    return tuple(digits)


@dataclass(frozen=True)
class ShiftAdd:
    """``x * c`` for a constant c of raw integer ``value``: the input ``operand`` (0 or 1) is the constant."""

    operand: int
    value: int
    digits: tuple[tuple[int, int], ...]  # csd(value): (shift, sign), lowest first
    width: int  # bits of the product's raw integer (signed): x's signed bits + the constant's
    frac: int  # its fractional bits, F_x + F_c
    x_bits: int  # x's signed bits

    @property
    def bound(self) -> int:
        """(digits - 1) adders as wide as the product: the most its adders can cost (the rule's test)."""
        return max(0, len(self.digits) - 1) * self.width

    @property
    def luts(self) -> int:
        """What its adders cost, measured (the module docstring): (digits - 1) x (x's signed bits + 1)."""
        return shift_add_luts(len(self.digits), self.x_bits)

    @property
    def terms(self) -> tuple[tuple[int, int], ...]:
        """The digits highest first: the first term has the sign of the constant."""
        return tuple(reversed(self.digits))


def shift_add_luts(digits: int, x_bits: int) -> int:
    """LUTs of x (``x_bits`` signed bits) times a constant of ``digits`` nonzero canonical signed digits built as
    shifts and adds, as Yosys 0.70 maps them (the module docstring): (digits - 1) x (x_bits + 1)."""
    return max(0, digits - 1) * (x_bits + 1)


def _signed_bits(t: DType) -> int:
    return t.bits + (0 if t.signed else 1)


def _uniform(graph: Graph, name: str) -> int | None:
    """The one raw value a fixed-point graph constant holds everywhere, else None."""
    const = graph.constant_map.get(name)
    if const is None or const.type.dtype.is_float:
        return None
    data = np.asarray(const.data).reshape(-1)
    if data.size == 0 or not np.all(data == data[0]):
        return None
    return int(data[0])


def shift_add(graph: Graph, node: str) -> ShiftAdd | None:
    """How node ``node`` multiplies by a constant as shifts and adds, or None when it does not (not a
    multiplication, float, no operand a constant of one value, or its adders' bound over SHIFT_ADD_LUTS)."""
    n = graph.node(node)
    sig = graph.sigs[node]
    if get_op(n.op).micro_of(sig) != "mul" or len(n.inputs) != 2 or sig.out_dtype.is_float:
        return None
    types = [graph.types[i].dtype for i in n.inputs]
    if any(t.is_float for t in types):
        return None
    for k in (1, 0):
        value = _uniform(graph, n.inputs[k])
        if value is None:
            continue
        x, c = types[1 - k], types[k]
        found = ShiftAdd(k, value, csd(value), _signed_bits(x) + _signed_bits(c), x.frac + c.frac,
                         _signed_bits(x))
        if found.width <= SHIFT_ADD_BITS and found.bound <= SHIFT_ADD_LUTS:
            return found
    return None
