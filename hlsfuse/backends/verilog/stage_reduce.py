"""Reduce stages in Verilog: sum, mean, max, global_avg_pool (``lower.stage_reduce.ReduceMain``).

    setup loops   held inputs, pre loops
    accumulate    per input token: read, prologue per lane ─► v; acc[j] <= first ? v : acc[j] + v (sum,
                  mean; exact in the accumulator's Fmt) or the larger of acc[j] and v (max)
    emit          per output token: acc[j] assigned once to the head's type per lane (a mean: hlsf_divide_const
                  then hlsf_assign with the inexact flag as sticky bit, exactly types.assign_quotient)
                  ─► epilogue per lane ─► write

j is the input element with its reduced coordinates dropped, summed from the schedule's index
counters; ``first`` holds on the first element reduced into an output (all its reduced coordinates
0), so nothing carries over from one frame to the next. The accumulators are written at the clock
edge and read combinationally, so consecutive elements of one output see each other's sums (any
``distance`` is hazard-free here; the HLS backend is the one that needs it).

With L > 1 lanes a token's lanes are L copies of the prologue. When the innermost axis is kept, lane l
updates accumulator j + l, kept in bank l of L memories (each of N_out / L entries, at address
(j + l) / L), and an output token reads the L banks side by side, L copies of the head's assignment and
the epilogue. When it is reduced, the lanes' values are first combined by a balanced tree of L - 1
adders (comparators) into one update of acc[j].
"""

from __future__ import annotations

from ...lower.plan import Stage
from ...types import Fmt
from .decls import StageModule, Update
from .expr import counters, index_sum
from .module import ModuleBuilder
from .phase import element_phase, lane_values, lanes_phase, reads, setup
from .stage_window import quotient
from .vlog import assign_params, extend, sext64, ulit, zext

__all__ = ["build"]


def _tree(b: ModuleBuilder, values: list[str], width: int, combine) -> str:
    """``values`` combined pairwise, level by level (value l + 2^k joins value l at level k): L - 1 ``combine``s,
    ceil(log2 L) deep."""
    level, k = list(values), 0
    while len(level) > 1:
        nxt = []
        for pos in range(0, len(level), 2):
            if pos + 1 < len(level):
                nxt.append(b.wire(f"tree{k}_{pos // 2}", width, combine(level[pos], level[pos + 1])))
            else:
                nxt.append(level[pos])
        level, k = nxt, k + 1
    return level[0]


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence(schedule.loops)
    arrays = setup(b, schedule, seq)
    ins, outs = seq.loops[-2].here, seq.loops[-1].here
    fire_in = f"{seq.fire} && {ins}"
    source = b.graph.node(stage.head).inputs[0]
    in_type, head_type = b.dtype(source), b.dtype(stage.head)

    values = reads(b, main.prologue, ins)
    if main.lanes_in == 1:
        vs = [element_phase(b, main.prologue, values, arrays, (seq.idx, seq.width), fire_in, "p_")]
    else:
        vs = lane_values(b, main.prologue, main.lanes_in, values, [{}] * main.lanes_in, arrays, (seq.idx, seq.width),
                         fire_in, "p")
    scope = counters(b, [(d[0], d[1]) for d in main.index if (d[0], d[1]) != (1, main.in_tokens)] +
                     [f for f in main.first if f != (1, main.in_tokens)], fire_in, "a_")
    scope[(1, main.in_tokens)] = (seq.idx, seq.width)
    # the accumulator's format: a maximum is one of the values, a sum's is the schedule's (exact)
    fmt = Fmt.of(in_type) if main.accumulator is None else main.accumulator

    def larger(a: str, c: str, tag: str) -> str:
        return b.wire(f"larger{tag}", 1, f"$signed({sext64(a, in_type)}) > $signed({sext64(c, in_type)})")

    if main.combine == "max":
        lanes = vs
    else:  # every value as an exact sum of one term
        lanes = [extend(v, in_type.width, in_type.signed, fmt.width) for v in vs]
    if main.combines:  # the token's lanes belong to one output: one tree, one update
        if main.combine == "max":
            lanes = [_tree(b, lanes, fmt.width, lambda x, y: f"{larger(y, x, '_tree')} ? {y} : {x}")]
        else:
            lanes = [_tree(b, [b.wire(f"term{k}", fmt.width, v) for k, v in enumerate(lanes)], fmt.width,
                           lambda x, y: f"{x} + {y}")]
    banks = main.lanes_out
    tags = [""] if banks == 1 else [str(lane) for lane in range(banks)]
    accs = [b.array(f"acc{tag}", main.outputs // banks, fmt.width) for tag in tags]
    slot = b.wire("slot", b.index(accs[0]), index_sum(b, main.address, scope, accs[0]))
    first = " && ".join(f"{scope[f][0]} == {ulit(0, scope[f][1])}" for f in main.first) or "1'b1"
    is_first = None
    for acc, tag, value in zip(accs, tags, lanes):  # lane l updates bank l (one bank when the lanes combine)
        old = b.wire(f"acc_old{tag}", fmt.width, f"{acc}[{slot}]")
        is_first = is_first or b.wire("first", 1, first)
        if main.combine == "max":
            update = f"{is_first} || {larger(value, old, tag)} ? {value} : {old}"
        else:
            update = f"{is_first} ? {value} : {old} + {value}"
        new = b.wire(f"acc_new{tag}", fmt.width, update)
        b.stores.append(Update(fire_in, f"{acc}[{slot}]", new))

    # emit: the head's value from acc[j] (lane l: bank l at the token's address), the epilogue, the write
    heads = []
    for acc, tag in zip(accs, tags):
        total = b.wire(f"total{tag}", fmt.width, f"{acc}[{zext(seq.idx, seq.width, b.index(acc))}]")
        b.comment(f"{b.graph.node(stage.head).op} '{stage.head}'" + (f", lane {tag}" if tag else ""))
        if main.combine == "mean":
            head = quotient(b, total, fmt, in_type.frac, [main.n], "1'b0", head_type, f"v_head{tag}")
        else:
            head = b.net(f"v_head{tag}", head_type.width)
            b.instance("hlsf_assign", assign_params(in_type.frac, head_type, in_w=fmt.width, in_signed=fmt.signed),
                       f"u_head{tag}", (("in_data", total), ("in_sticky", "1'b0"), ("out_data", head)))
        heads.append(head)
    streamed = reads(b, main.epilogue, outs)
    step = f"{seq.fire} && {outs}"
    if banks == 1:
        out = element_phase(b, main.epilogue, {stage.head: heads[0], **streamed}, arrays, (seq.idx, seq.width), step,
                            "e_")
    else:
        out = lanes_phase(b, main.epilogue, banks, streamed, [{stage.head: h} for h in heads], arrays,
                          (seq.idx, seq.width), step, "e")
    for ch in main.writes:
        b.move(ch, outs)
    return b.build(f"{main.combine} '{stage.head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out),
                   state)
