"""Verilog of elementwise nodes: the HLS backend's per-element statements, as combinational logic.

The HLS backend decides once which nodes a stage computes per element and how broadcast operands
are indexed (``backends.hls.expr.element_body``: statements plus counters called *wheels*); this
module spells the same ``Body`` in Verilog, so both backends compute the same values in the same
places. Per statement:

    operands  raw bits of the operand's type; an array operand reads ``array[index]`` with the
              index summed from counters (exactly the array's index width)
    exact     the node's exact value as a 64-bit signed integer with a known number of fractional
              bits, the reference's int64 computation (ops/exact.py) term for term
    assign    one ``hlsf_assign`` to the node's output type (lookup tables read their raw entry)

The counters advance at a clock edge where the loop ``fire``s, in the order of the HLS backend's
``ops.advance`` macro; they wrap to 0 at the end of every loop, so they need no other reset.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import HlsfuseError
from ...ops import lut as lut_ops
from ...ops.elementwise import ALPHA_TYPE, _clip_bounds
from ...types import FixedType, from_float
from ..hls.expr import Body, Operand, Stmt
from .mem import mem_lines
from .module import ModuleWriter
from .vlog import XW, assign_params, bits_for, index_width, sext64, slit, ulit, zext

__all__ = ["Scope", "render_body", "counters", "operand", "index_sum", "declare_rom"]

Scope = Mapping[str, tuple[str, int]]
"""HLS local variable (loop index, counter) -> (Verilog signal, width)."""


def counters(w: ModuleWriter, body: Body, prefix: str, fire: str) -> dict[str, tuple[str, int]]:
    """Declare the wheels of ``body`` as registers advanced when ``fire`` is high; returns their scope."""
    scope: dict[str, tuple[str, int]] = {}
    for wheel in body.wheels:
        low = None
        if wheel.low is not None:
            low = w.fresh(f"{prefix}{wheel.low}")
            width = bits_for(wheel.inner)
            w.reg(low, width, ulit(0, width))
            scope[wheel.low] = (low, width)
        steps = []
        for d in wheel.digits:
            name = w.fresh(f"{prefix}{d.name}")
            width = bits_for(d.count)
            w.reg(name, width, ulit(0, width))
            scope[d.name] = (name, width)
            last, zero, one = ulit(d.count - 1, width), ulit(0, width), ulit(1, width)
            steps.append(f"{name} <= {name} == {last} ? {zero} : {name} + {one};")
        if low is None:
            w.seq.append(f"if ({fire}) begin")
            w.seq.extend("    " + s for s in steps)
            w.seq.append("end")
        else:
            lw = bits_for(wheel.inner)
            w.seq.append(f"if ({fire}) begin")
            w.seq.append(f"    if ({low} == {ulit(wheel.inner - 1, lw)}) begin")
            w.seq.append(f"        {low} <= {ulit(0, lw)};")
            w.seq.extend("        " + s for s in steps)
            w.seq.append("    end else begin")
            w.seq.append(f"        {low} <= {low} + {ulit(1, lw)};")
            w.seq.append("    end")
            w.seq.append("end")
    return scope


def index_sum(w: ModuleWriter, operand: Operand, scope: Scope) -> str:
    width = w.index(operand.name)
    terms = []
    for t in operand.index or ():
        if t.var not in scope:
            raise HlsfuseError(f"stage '{w.stage.name}': index variable '{t.var}' has no Verilog signal")
        sig, sw = scope[t.var]
        term = zext(sig, sw, width)
        if t.stride != 1:
            term = f"{term} * {ulit(t.stride % (1 << width), width)}"
        terms.append(term)
    return " + ".join(terms) if terms else ulit(0, width)


def operand(w: ModuleWriter, o: Operand, scope: Scope, tag: str) -> str:
    """A signal holding the operand's raw bits."""
    if o.index is None:
        return o.name
    if o.name not in w.arrays:
        declare_rom(w, o.name)
    ix = w.wire(w.fresh(f"ix_{tag}"), w.index(o.name), index_sum(w, o, scope))
    return w.wire(w.fresh(f"rd_{tag}"), w.arrays[o.name][1], f"{o.name}[{ix}]")


def declare_rom(w: ModuleWriter, name: str) -> None:
    """Declare the plan ROM ``name`` (a graph constant) in this module."""
    constant = next((c for c, rom in w.ctx.roms.items() if rom == name), None)
    if constant is None:
        raise HlsfuseError(f"stage '{w.stage.name}': '{name}' is neither a ROM nor an array of the stage")
    dtype = w.dtype(constant)
    data = w.graph.constant_map[constant].data.reshape(-1)
    w.mem(name, data, dtype.width, mem_lines(data, dtype.width))


def render_body(w: ModuleWriter, body: Body, scope: Scope) -> None:
    """Declare the wires computing every statement of ``body``."""
    for s in body.stmts:
        statement(w, s, scope)


def statement(w: ModuleWriter, s: Stmt, scope: Scope) -> None:
    g = w.graph
    node = g.node(s.node)
    out = w.dtype(s.node)
    ins = [w.dtype(src) for src in node.inputs]
    tag = s.out
    raws = [operand(w, a, scope, f"{tag}_{k}") for k, a in enumerate(s.args)]
    w.decls.append(f"// {node.op} '{node.name}'")
    if s.op == "lookup":
        table = lut_ops.table_of(node.op, g.sigs[s.node])
        _lookup(w, s.out, raws[0], ins[0], table, out)
        return
    xs = [w.wire(w.fresh(f"x_{tag}_{k}"), XW, sext64(r, t), signed=True) for k, (r, t) in enumerate(zip(raws, ins))]
    expr, frac = _exact(w, s, node, xs, ins)
    exact = w.wire(w.fresh(f"e_{tag}"), XW, expr, signed=True)
    w.decls.append(f"wire [{out.width - 1}:0] {s.out};")
    w.rtl.add("hlsf_assign")
    w.decls.append(
        f"hlsf_assign {assign_params(frac, out)} {w.fresh(f'u_{tag}')} "
        f"(.in_data({exact}), .in_sticky(1'b0), .out_data({s.out}));"
    )


def _aligned(xs: list[str], ins: list[FixedType]) -> tuple[list[str], int]:
    frac = max(t.frac for t in ins)
    return [x if t.frac == frac else f"({x} <<< {frac - t.frac})" for x, t in zip(xs, ins)], frac


def _exact(w: ModuleWriter, s: Stmt, node, xs: list[str], ins: list[FixedType]) -> tuple[str, int]:
    """(exact value as a signed 64-bit expression, its fractional bits): the reference's int64 arithmetic."""
    op = s.op
    sig = w.graph.sigs[s.node]
    zero = slit(0)
    if op in ("add", "sub"):
        (a, b), frac = _aligned(xs, ins)
        return f"{a} {'+' if op == 'add' else '-'} {b}", frac
    if op == "mul":
        return f"{xs[0]} * {xs[1]}", ins[0].frac + ins[1].frac
    if op in ("maximum", "minimum"):
        (a, b), frac = _aligned(xs, ins)
        return f"({a} {'>' if op == 'maximum' else '<'} {b}) ? {a} : {b}", frac
    x, f = xs[0], ins[0].frac
    if op == "relu":
        return f"({x} < {zero}) ? {zero} : {x}", f
    if op == "neg":
        return f"{zero} - {x}", f
    if op == "abs":
        return f"({x} < {zero}) ? {zero} - {x} : {x}", f
    if op == "assign":
        return x, f
    if op == "leaky_relu":
        alpha = slit(int(from_float(np.array(sig["alpha"]), ALPHA_TYPE)))
        return f"({x} >= {zero}) ? ({x} <<< {ALPHA_TYPE.frac}) : {x} * {alpha}", f + ALPHA_TYPE.frac
    if op == "clip":
        lo, hi = (slit(v) for v in _clip_bounds(sig))
        low = w.wire(w.fresh(f"c_{s.out}"), XW, f"({x} < {lo}) ? {lo} : {x}", signed=True)
        return f"({low} > {hi}) ? {hi} : {low}", f
    raise HlsfuseError(f"{node.where()}: the Verilog backend cannot compute op '{node.op}' ({op}) element by element")


def _lookup(w: ModuleWriter, out: str, raw: str, in_type: FixedType, table, out_type: FixedType) -> None:
    """``out = table[(X - X_min) >> shift]``: flipping a signed X's sign bit subtracts its minimum."""
    width = in_type.width
    entries = np.asarray(table.entries)
    bits = width - table.shift
    if len(entries) != 1 << bits or table.in_fmt.width != width:
        raise HlsfuseError(
            f"lookup table of {len(entries)} entries does not match a {width}-bit input >> {table.shift}"
        )
    text = mem_lines(entries, out_type.width)
    # equal tables (same function, input and output types) share one memory
    name = next((m for m, mem in w.mems.items() if mem.text == text), None) or w.fresh(f"lut_{table.function}")
    w.mem(name, entries, out_type.width, text)
    if table.shift:
        w.decls.append(f"wire unused_{out} = &{{1'b0, {raw}[{table.shift - 1}:0], 1'b0}};")
    if table.in_fmt.signed:
        top = f"~{raw}[{width - 1}]"
        index = top if bits == 1 else f"{{{top}, {raw}[{width - 2}:{table.shift}]}}"
    else:
        index = f"{raw}[{width - 1}:{table.shift}]"
    ix = w.wire(w.fresh(f"ix_{out}"), index_width(len(entries)), index)
    w.decls.append(f"wire [{out_type.width - 1}:0] {out} = {name}[{ix}];")
