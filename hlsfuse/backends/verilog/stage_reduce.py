"""Reduce stages in Verilog: sum, mean, max, global_avg_pool (``backends.hls.stage_reduce.body``).

    loop per held input   store it whole
    loop per pre loop     prologue, then epilogue nodes smaller than their loop, into arrays
    IN loop               per input element: read, prologue ─► v; acc[j] <= first ? v : acc[j] + v
                          (sum, mean; exact in the accumulator's Fmt) or the larger of acc[j] and v (max)
    OUT loop              per output element j: acc[j] assigned once to the head's type (a mean:
                          hlsf_divide_const then hlsf_assign with the inexact flag as sticky bit,
                          exactly types.assign_quotient) ─► epilogue ─► write

j is input element i with its reduced coordinates dropped, summed from the body's index counters;
``first`` holds on the first element reduced into an output (all its reduced coordinates 0). The
accumulator array is written at the clock edge and read combinationally, so consecutive elements
of one output see each other's sums.
"""

from __future__ import annotations

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ...types import FixedType, Fmt
from ..hls import stage_reduce as hls_reduce
from ..hls.context import Context
from ..hls.expr import Body, Operand
from .expr import counters, index_sum, render_body
from .module import ModuleWriter, StageModule
from .phase import compute_pre, held_loops, pre_loops, read_values, store_held
from .sequencer import Loop, Sequencer
from .vlog import assign_params, extend, sext64, ulit, zext

__all__ = ["build"]


def _quotient(w: ModuleWriter, total: str, fmt: Fmt, frac: int, n: int, out: FixedType, name: str) -> None:
    """``name`` = the exact sum ``total`` (``fmt``, ``frac`` fractional bits) / n, rounded once to ``out``."""
    shift = out.frac - frac + 1
    quot_w = fmt.width + 1 + max(shift, 0)
    div_w = n.bit_length()
    quot, inexact = w.fresh("quot"), w.fresh("inexact")
    w.decls.append(f"wire [{quot_w - 1}:0] {quot};")
    w.decls.append(f"wire {inexact};")
    w.rtl.update({"hlsf_divide_const", "hlsf_assign"})
    w.decls.append(
        f"hlsf_divide_const #(.NUM_W({fmt.width}), .NUM_SIGNED({int(fmt.signed)}), .SHIFT({shift}), .NDIV(1), "
        f".DIV_W({div_w}), .DIVISORS({ulit(n, div_w)})) {w.fresh('u_div')} "
        f"(.num({total}), .sel(1'b0), .quot({quot}), .inexact({inexact}));"
    )
    w.decls.append(
        f"hlsf_assign {assign_params(out.frac + 1, out, in_w=quot_w)} {w.fresh('u_head')} "
        f"(.in_data({quot}), .in_sticky({inexact}), .out_data({name}));"
    )


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    b = hls_reduce.body(ctx, stage)
    if b.is_float:
        raise HlsfuseError(f"stage '{stage.name}': the Verilog backend computes fixed-point and integer types only")
    p, e = b.prologue, b.epilogue
    loops = held_loops(b.held) + pre_loops(p) + pre_loops(e)
    loops.append(Loop("in", b.inputs, tuple(r.channel for r in p.reads)))
    loops.append(Loop("out", b.outputs, tuple(r.channel for r in e.reads), tuple(x.channel for x in b.writes)))
    seq = Sequencer(w, loops)
    fire_in, fire_out = seq.fire[-2], seq.fire[-1]
    store_held(w, b.held, seq, first=0)
    compute_pre(w, p, seq, {p.index: (seq.idx, seq.width)}, first=len(b.held))
    compute_pre(w, e, seq, {e.index: (seq.idx, seq.width)}, first=len(b.held) + len(p.pre))

    # IN: the prologue, then the accumulator of the element's output
    source = w.graph.node(stage.head).inputs[0]
    in_type = w.dtype(source)
    read_values(w, p.reads)
    scope = {p.index: (seq.idx, seq.width)}
    scope.update(counters(w, p.body, "p_", fire_in))
    scope.update(counters(w, Body((), b.wheels), "a_", fire_in))
    render_body(w, p.body, scope)
    # the accumulator's format: a maximum is one of the values, a sum grows by ceil(log2 n) bits
    fmt = Fmt.of(in_type) if b.op == "max" else Fmt.of(in_type).accumulate(b.n)
    acc = w.array(w.fresh("acc"), b.outputs, fmt.width)
    slot = w.wire(w.fresh("slot"), w.index(acc), index_sum(w, Operand(acc, b.index), scope))
    old = w.wire(w.fresh("acc_old"), fmt.width, f"{acc}[{slot}]")
    first = " && ".join(f"{scope[f][0]} == {ulit(0, scope[f][1])}" for f in b.first) or "1'b1"
    is_first = w.wire(w.fresh("first"), 1, first)
    if b.op == "max":
        larger = w.wire(w.fresh("larger"), 1, f"$signed({sext64(p.result, in_type)}) > $signed({sext64(old, in_type)})")
        update = f"{is_first} || {larger} ? {p.result} : {old}"
    else:
        value = extend(p.result, in_type.width, in_type.signed, fmt.width)
        update = f"{is_first} ? {value} : {old} + {value}"
    new = w.wire(w.fresh("acc_new"), fmt.width, update)
    w.stores.append(f"if ({fire_in}) {acc}[{slot}] <= {new};")

    # OUT: the head's value from acc[o], the epilogue, the write
    total = w.wire(w.fresh("total"), fmt.width, f"{acc}[{zext(seq.idx, seq.width, w.index(acc))}]")
    head = w.dtype(stage.head)
    w.decls.append(f"// {w.graph.node(stage.head).op} '{stage.head}'")
    w.decls.append(f"wire [{head.width - 1}:0] {b.head_var};")
    if b.op == "mean":
        _quotient(w, total, fmt, in_type.frac, b.n, head, b.head_var)
    else:
        w.rtl.add("hlsf_assign")
        w.decls.append(
            f"hlsf_assign {assign_params(in_type.frac, head, in_w=fmt.width, in_signed=fmt.signed)} "
            f"{w.fresh('u_head')} (.in_data({total}), .in_sticky(1'b0), .out_data({b.head_var}));"
        )
    out_scope = {e.index: (seq.idx, seq.width)}
    read_values(w, e.reads)
    out_scope.update(counters(w, e.body, "e_", fire_out))
    render_body(w, e.body, out_scope)
    seq.drive({x.channel: x.var for x in b.writes})
    return w.build("reduce", f"{b.op} '{stage.head}', nodes {', '.join(stage.nodes)}")
