"""Reduce stages in Verilog: sum, mean, max, global_avg_pool (``lower.schedule.ReduceMain``).

    setup loops   held inputs, pre loops
    accumulate    per input element: read, prologue ─► v; acc[j] <= first ? v : acc[j] + v (sum, mean;
                  exact in the accumulator's Fmt) or the larger of acc[j] and v (max)
    emit          per output element j: acc[j] assigned once to the head's type (a mean: hlsf_divide_const
                  then hlsf_assign with the inexact flag as sticky bit, exactly types.assign_quotient)
                  ─► epilogue ─► write

j is the input element with its reduced coordinates dropped, summed from the schedule's index
counters; ``first`` holds on the first element reduced into an output (all its reduced coordinates
0), so nothing carries over from one frame to the next. The accumulators are written at the clock
edge and read combinationally, so consecutive elements of one output see each other's sums.
"""

from __future__ import annotations

from ...lower.plan import Stage
from ...types import Fmt
from .expr import counters, index_sum
from .module import ModuleBuilder, StageModule, Update
from .phase import element_phase, reads, setup, setup_loops
from .stage_window import quotient
from .vlog import assign_params, extend, sext64, ulit, zext

__all__ = ["build"]


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence([*setup_loops(schedule), ("accumulate", main.inputs), ("emit", main.outputs)])
    arrays = setup(b, schedule, seq)
    ins, outs = seq.loops[-2].here, seq.loops[-1].here
    fire_in = f"{seq.fire} && {ins}"
    source = b.graph.node(stage.head).inputs[0]
    in_type, head_type = b.dtype(source), b.dtype(stage.head)

    values = reads(b, main.prologue, ins)
    v = element_phase(b, main.prologue, values, arrays, (seq.idx, seq.width), fire_in, "p_")
    scope = counters(b, [(d[0], d[1]) for d in main.index if (d[0], d[1]) != (1, main.inputs)] +
                     [f for f in main.first if f != (1, main.inputs)], fire_in, "a_")
    scope[(1, main.inputs)] = (seq.idx, seq.width)
    # the accumulator's format: a maximum is one of the values, a sum grows by ceil(log2 n) bits
    fmt = Fmt.of(in_type) if main.op == "max" else Fmt.of(in_type).accumulate(main.n)
    acc = b.array("acc", main.outputs, fmt.width)
    slot = b.wire("slot", b.index(acc), index_sum(b, main.index, scope, acc))
    old = b.wire("acc_old", fmt.width, f"{acc}[{slot}]")
    first = " && ".join(f"{scope[f][0]} == {ulit(0, scope[f][1])}" for f in main.first) or "1'b1"
    is_first = b.wire("first", 1, first)
    if main.op == "max":
        larger = b.wire("larger", 1, f"$signed({sext64(v, in_type)}) > $signed({sext64(old, in_type)})")
        update = f"{is_first} || {larger} ? {v} : {old}"
    else:
        value = extend(v, in_type.width, in_type.signed, fmt.width)
        update = f"{is_first} ? {value} : {old} + {value}"
    new = b.wire("acc_new", fmt.width, update)
    b.stores.append(Update(fire_in, f"{acc}[{slot}]", new))

    # emit: the head's value from acc[j], the epilogue, the write
    total = b.wire("total", fmt.width, f"{acc}[{zext(seq.idx, seq.width, b.index(acc))}]")
    b.comment(f"{b.graph.node(stage.head).op} '{stage.head}'")
    if main.op == "mean":
        head = quotient(b, total, fmt, in_type.frac, [main.n], "1'b0", head_type, "v_head")
    else:
        head = b.net("v_head", head_type.width)
        b.instance("hlsf_assign", assign_params(in_type.frac, head_type, in_w=fmt.width, in_signed=fmt.signed),
                   "u_head", (("in_data", total), ("in_sticky", "1'b0"), ("out_data", head)))
    values = {stage.head: head, **reads(b, main.epilogue, outs)}
    out = element_phase(b, main.epilogue, values, arrays, (seq.idx, seq.width), f"{seq.fire} && {outs}", "e_")
    for ch in main.writes:
        b.move(ch, outs)
    return b.build(f"{main.op} '{stage.head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out),
                   state)
