"""Verilog of element programs (``lower.elements``): the map nodes a loop computes once per element.

Per step, as combinational logic:

    operands  raw bits of the operand's type; an array or ROM operand reads ``array[index]`` with the
              index summed from counters (exactly the array's index width); a ROM the resource model makes a
              block RAM, read at one counter, says so (``rom_style``): the counter is a register, so the read
              can be synchronous
    exact     the node's exact value as a 64-bit signed integer with a known number of fractional
              bits, the reference's int64 computation (ops/exact.py) term for term
    assign    one ``hlsf_assign`` to the node's output type (lookup tables read their raw entry)

A threshold reads its channel's row of n thresholds as one ROM word and counts the comparisons that
hold (n comparators and their sum, per lane).

The counters of a program's digits (inner, size) advance when the loop's element does: a digit of
inner 1 every element, others when their *low* counter (the element index modulo inner) wraps.
They wrap to 0 at the end of every loop, so they need no other reset.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import HlsfuseError
from ...lower.area import buffer_area
from ...lower.elements import Operand, Program
from ...lower.shift_add import ShiftAdd, shift_add
from ...ops import get_op
from ...ops.elementwise import ALPHA_TYPE
from ...types import FixedType
from .module import ModuleBuilder
from .vlog import XW, assign_params, extend, index_width, sext64, slit, ulit, zext

__all__ = ["Scope", "counters", "index_sum", "program", "rom", "weight_banks", "lookup", "threshold"]

Scope = Mapping[tuple[int, int], tuple[str, int]]
"""digit (inner, size) -> (counter signal, width); (1, count) is the loop's element index."""

def counters(b: ModuleBuilder, digits, step: str, prefix: str) -> dict[tuple[int, int], tuple[str, int]]:
    """Counters of ``digits`` ((inner, size) pairs, the loop index excluded), advanced when ``step``."""
    scope: dict[tuple[int, int], tuple[str, int]] = {}
    for inner in sorted({inner for inner, _ in digits}):
        wheel = step
        if inner > 1:
            low, lw = b.counter(f"{prefix}r{inner}", inner, step)
            wheel = f"{step} && {low} == {ulit(inner - 1, lw)}"
        for i, size in digits:
            if i == inner and (i, size) not in scope:
                scope[(i, size)] = b.counter(f"{prefix}k{len(scope)}", size, wheel)
    return scope


def index_sum(b: ModuleBuilder, digits, scope: Scope, array: str) -> str:
    width = b.index(array)
    terms = []
    for inner, size, stride in digits:
        sig, sw = scope[(inner, size)]
        term = zext(sig, sw, width)
        if stride != 1:
            term = f"{term} * {ulit(stride % (1 << width), width)}"
        terms.append(term)
    return " + ".join(terms) if terms else ulit(0, width)


def rom(b: ModuleBuilder, constant: str, row: int = 0, style: str = "") -> str:
    """The ROM of a graph constant in this module (its raw values, row-major; ``row`` > 0: a row per word, its
    first value in the low bits; ``style``: its ``rom_style``)."""
    dtype = b.dtype(constant)
    data = b.graph.constant_map[constant].data.reshape(-1)
    return b.rom(b.rom_of(constant), data, dtype.width, row or 1, style=style)


def weight_banks(b: ModuleBuilder, main, by_product: np.ndarray, address: tuple[str, int], fold_major: bool = False
                 ) -> dict[tuple[int, int], str]:
    """The weights a MAC stage (``main``, folded as ``lower.engine.Folded`` says) reads in one iteration, from its
    banks: the partition of the weights the C++ makes and the resource model counts, a bank per product, (SIMD lane
    s, PE lane). ``by_product``: the weights' raw values as [product j, emit e, PE lane] (a view of the constant);
    bank (s, lane) holds at address (e, f) the weight of product main.product(f, s) of output e PE + lane, the
    addresses in emission order (the fold fastest, or with ``fold_major`` the emit fastest); every bank is read at
    ``address`` (signal, width), a register counting the emitting iterations. Banks the model makes block RAMs
    are a ROM each (``rom_style`` "block": one block RAM each, read synchronously; ``BankRoms``: loaded from one
    file); smaller banks are one ROM of every bank side by side, a word per address, whose one read port serves
    them all, built from LUTs ("logic": under "distributed" Yosys 0.70 found "no valid mapping" for it; the LUTs
    are in the model's LUT band; a memory still, not unrolled into words, whose read Yosys would make one shift of
    all of them). (One ROM of all the weights read at SIMD x PE computed addresses is what a
    synthesis tool cannot map: Yosys builds a read port per product over the whole ROM.) Returns each bank's
    weight, raw bits, by (s, lane)."""
    products, emits, pe = by_product.shape
    simd, folds = main.simd, main.folds
    if main.strided:  # product s FOLDS + f
        by_fold = by_product.reshape(simd, folds, emits, pe).swapaxes(0, 1)
    else:  # product f SIMD + s
        by_fold = by_product.reshape(folds, simd, emits, pe)
    table = by_fold.transpose((0, 2, 3, 1) if fold_major else (2, 0, 3, 1))  # [address..., lane, s]
    width = b.dtype(main.weights).width
    keys = [(s, lane) for lane in range(pe) for s in range(simd)]
    at = zext(*address, index_width(emits * folds))
    if _block_rom(b, main.weights):
        names = b.rom_banks([f"l{lane}_wbank_{s}" if pe > 1 else f"wbank_{s}" for s, lane in keys], table, width)
        return {key: f"{name}[{at}]" for key, name in zip(keys, names)}
    word = b.wire("wbanks_at", width * len(keys),
                  f"{b.rom('wbanks', table, width, lanes=len(keys), style='logic')}[{at}]")
    return {key: f"{word}[{(k + 1) * width - 1}:{k * width}]" for k, key in enumerate(keys)}


def _block_rom(b: ModuleBuilder, constant: str) -> bool:
    """The resource model makes the stage's ROM of ``constant`` block RAM (``buffer_area``)."""
    roms = [buf for buf in b.stage.schedule.buffers if buf.rom and buf.tensor == constant]
    return bool(roms) and buffer_area(roms[0]).bram18 > 0


def _rom_style(b: ModuleBuilder, o: Operand, scope: Scope) -> str:
    """"block" for a ROM the resource model makes a block RAM (``buffer_area`` of the stage's ROM of the constant)
    read at one counter as it is, a register, so that a synthesis tool can read it synchronously as the model
    prices it; "" (the tool's choice) otherwise."""
    if not _block_rom(b, o.tensor) or o.lane or len(o.digits) != 1:
        return ""
    inner, size, stride = o.digits[0]
    sig, width = scope[(inner, size)]
    words = b.graph.types[o.tensor].size // (o.row or 1)
    registered = sig in {c.name for c in b.counters}
    return "block" if stride == 1 and width == index_width(words) and registered else ""


def _operand(b: ModuleBuilder, o: Operand, values: Mapping[str, str], arrays: Mapping[str, str], scope: Scope,
             tag: str, lane: int) -> str:
    if o.source == "wired":  # a constant factor built into the statement (``_shift_add``), never read
        return ""
    if o.source == "value":
        if o.tensor not in values:
            raise HlsfuseError(f"stage '{b.stage.name}': '{o.tensor}' has no value here")
        return values[o.tensor]
    array = arrays[o.tensor] if o.source == "array" else rom(b, o.tensor, o.row, _rom_style(b, o, scope))
    index = index_sum(b, o.digits, scope, array)
    if lane * o.lane:
        index += f" + {ulit(lane * o.lane, b.index(array))}"
    ix = b.wire(f"ix_{tag}", b.index(array), index)
    return b.wire(f"rd_{tag}", b.arrays[array][1], f"{array}[{ix}]")


def program(b: ModuleBuilder, prog: Program, values: dict[str, str], arrays: Mapping[str, str], scope: Scope,
            prefix: str = "", lane: int = 0) -> dict[str, str]:
    """Declare the logic of every step (of lane ``lane`` of a program over wide tokens); returns ``values``
    with each node's result signal added."""
    values = dict(values)
    for step in prog.steps:
        node = b.graph.node(step.node)
        tag = f"{prefix}{step.node}"
        raws = [_operand(b, o, values, arrays, scope, f"{tag}_{k}", lane) for k, o in enumerate(step.operands)]
        b.comment(f"{node.op} '{node.name}'")
        values[step.node] = _statement(b, node, raws, tag)
    return values


def _statement(b: ModuleBuilder, node, raws: list[str], tag: str) -> str:
    g = b.graph
    out = b.dtype(node.name)
    ins = [b.dtype(src) for src in node.inputs]
    sig = g.sigs[node.name]
    op = get_op(node.op)
    micro = op.micro_of(sig)
    if micro == "lookup":
        return lookup(b, raws[0], ins[0], op.tables_of(sig)[0], out, tag)
    if micro == "threshold":
        return threshold(b, raws, ins, sig.shapes[1][-1], out, tag)
    wired = shift_add(g, node.name) if micro == "mul" else None
    if wired is not None:
        k = 1 - wired.operand
        return _shift_add(b, wired, raws[k], ins[k], out, tag)
    if micro not in _EXACT:
        raise HlsfuseError(f"{node.where()}: the Verilog backend cannot compute op '{node.op}' element by element")
    xs = [b.wire(f"x_{tag}_{k}", XW, sext64(r, t), signed=True) for k, (r, t) in enumerate(zip(raws, ins))]
    expr, frac = _EXACT[micro](b, node.name, xs, ins, op.constants_of(sig))
    exact = b.wire(f"e_{tag}", XW, expr, signed=True)
    result = b.net(f"v_{tag}", out.width)
    b.instance("hlsf_assign", assign_params(frac, out), f"u_{tag}",
               (("in_data", exact), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def _aligned(xs: list[str], ins: list[FixedType]) -> tuple[list[str], int]:
    frac = max(t.frac for t in ins)
    return [x if t.frac == frac else f"({x} <<< {frac - t.frac})" for x, t in zip(xs, ins)], frac


def _binary(operator: str):
    """a OP b on the finer grid of the two."""

    def exact(b, name, xs, ins, constants):
        (x, y), frac = _aligned(xs, ins)
        return f"{x} {operator} {y}", frac

    return exact


def _extremum(compare: str):
    def exact(b, name, xs, ins, constants):
        (x, y), frac = _aligned(xs, ins)
        return f"({x} {compare} {y}) ? {x} : {y}", frac

    return exact


def _unary(spell):
    """``spell(x, zero)`` on the input's grid."""
    return lambda b, name, xs, ins, constants: (spell(xs[0], slit(0)), ins[0].frac)


def _leaky_relu(b, name, xs, ins, constants):
    x, zero, alpha = xs[0], slit(0), slit(constants["alpha"])
    return f"({x} >= {zero}) ? ({x} <<< {ALPHA_TYPE.frac}) : {x} * {alpha}", ins[0].frac + ALPHA_TYPE.frac


def _clip(b, name, xs, ins, constants):
    x, lo, hi = xs[0], slit(constants["lo"]), slit(constants["hi"])
    low = b.wire(f"c_{name}", XW, f"({x} < {lo}) ? {lo} : {x}", signed=True)
    return f"({low} > {hi}) ? {hi} : {low}", ins[0].frac


_EXACT = {
    "add": _binary("+"),
    "sub": _binary("-"),
    "mul": lambda b, name, xs, ins, constants: (f"{xs[0]} * {xs[1]}", ins[0].frac + ins[1].frac),
    "maximum": _extremum(">"),
    "minimum": _extremum("<"),
    "relu": _unary(lambda x, zero: f"({x} < {zero}) ? {zero} : {x}"),
    "neg": _unary(lambda x, zero: f"{zero} - {x}"),
    "abs": _unary(lambda x, zero: f"({x} < {zero}) ? {zero} - {x} : {x}"),
    "assign": _unary(lambda x, zero: x),
    "leaky_relu": _leaky_relu,
    "clip": _clip,
}
"""micro-op (``OpDef.micro``) -> (exact value as a signed 64-bit expression, its fractional bits): the
reference's int64 arithmetic (ops/exact.py)."""


def _shift_add(b: ModuleBuilder, wired: ShiftAdd, raw: str, in_type: FixedType, out_type: FixedType, tag: str) -> str:
    """x times a constant as shifts and adds (``lower.shift_add``): the raw X sign- (zero-) extended to the
    product's W bits, each term X <<< k added or subtracted in W bits (wrapping; the exact product fits them), and
    the sum assigned to the output type with the product's fractional bits. Spelled as shifts and adds, the
    synthesis maps adders, never a DSP."""
    w = wired.width
    if not wired.terms:  # times 0
        b.unused(raw)
    else:
        x = b.wire(f"x_{tag}", w, extend(raw, in_type.width, in_type.signed, w), signed=True)
    terms = []
    for shift, sign in wired.terms:
        term = x if shift == 0 else f"({x} <<< {shift})"
        terms.append(("- " if sign < 0 else "+ " if terms else "") + term)
    product = b.wire(f"p_{tag}", w, " ".join(terms) if terms else f"{w}'sd0", signed=True)
    result = b.net(f"v_{tag}", out_type.width)
    b.instance("hlsf_assign", assign_params(wired.frac, out_type, in_w=w), f"u_{tag}",
               (("in_data", product), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def threshold(b: ModuleBuilder, raws: list[str], ins: list[FixedType], n: int, out_type: FixedType, tag: str) -> str:
    """#{j : x >= t[j]} of the element ``raws[0]`` and the row word ``raws[1]`` (n thresholds, t[0] in the low
    bits): n comparators on the finer grid of the two, their bits summed, assigned to the output type."""
    w = ins[1].width
    x = b.wire(f"x_{tag}", XW, sext64(raws[0], ins[0]), signed=True)
    ge = []
    for j in range(n):
        t = b.wire(f"t_{tag}_{j}", XW, sext64(f"{raws[1]}[{(j + 1) * w - 1}:{j * w}]", ins[1]), signed=True)
        (xa, ta), _ = _aligned([x, t], ins)
        ge.append(f"{xa} >= {ta}")
    bits = b.wire(f"ge_{tag}", n, "{" + ", ".join(f"({g})" for g in reversed(ge)) + "}")
    count = b.sum(f"n_{tag}", [f"{{{XW - 1}'d0, {bits}[{j}]}}" if n > 1 else f"{{{XW - 1}'d0, {bits}}}"
                               for j in range(n)])
    result = b.net(f"v_{tag}", out_type.width)
    b.instance("hlsf_assign", assign_params(0, out_type), f"u_{tag}",
               (("in_data", count), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def lookup(b: ModuleBuilder, raw: str, in_type: FixedType, table, out_type: FixedType, tag: str) -> str:
    """``table[(X - X_min) >> shift]`` of the raw input ``raw`` (flipping a signed X's sign bit subtracts X_min)."""
    width = in_type.width
    entries = np.asarray(table.entries)
    bits = width - table.shift
    if len(entries) != 1 << bits or table.in_fmt.width != width:
        raise HlsfuseError(
            f"lookup table of {len(entries)} entries does not match a {width}-bit input >> {table.shift}"
        )
    mem = b.rom(f"lut_{table.function}", entries, out_type.width)
    if table.shift:
        b.unused(f"{raw}[{table.shift - 1}:0]")
    if table.in_fmt.signed:
        top = f"~{raw}[{width - 1}]"
        index = top if bits == 1 else f"{{{top}, {raw}[{width - 2}:{table.shift}]}}"
    else:
        index = f"{raw}[{width - 1}:{table.shift}]"
    ix = b.wire(f"ix_{tag}", index_width(len(entries)), index)
    return b.wire(f"v_{tag}", out_type.width, f"{mem}[{ix}]")
