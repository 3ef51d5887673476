"""Reduce stages: a prologue of map nodes feeding sum, mean, max or global_avg_pool, then an epilogue.

One loop (``lower.stage_reduce.ReduceMain``): after the setup loops, one iteration per input element, then
one per output element:

    IN iterations:   read the streamed inputs ─► prologue ─► v
                     acc[j] = v on the first element reduced into output j, else acc[j] += v (sum,
                     mean; exact: the accumulator has Fmt(v).accumulate(n)) or acc[j] = max(acc[j], v)
    OUT iterations:  acc[j] assigned once to the head's type (a mean: hlsf::assign_quotient by
                     n = ops.reduce.count) ─► epilogue ─► out

The accumulator of input element i is j = i with the reduced coordinates dropped, counted by the
index counters of the schedule's digits; the element is the first of its output when all its
reduced coordinates are 0. The accumulators are registers, or a memory updated again no sooner than
the schedule's distance (a DEPENDENCE pragma says how far), so the loop keeps II=1.

With L > 1 lanes an iteration reads one ``hlsf::lanes`` token per streamed input and runs the
prologue per lane in a loop unrolled over the lanes. When the innermost axis is kept, lane l updates
acc[j + l] (the accumulators partitioned cyclically L ways, so every lane has its bank) and an output
iteration writes a token of L outputs, the epilogue unrolled over its lanes; when it is reduced, the
lanes' values are first combined by hlsf::tree_sum (tree_max) into one update of acc[j], and the
output keeps one element per iteration.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .expr import Term, Wheel
from .phase import Array, Phase, Rom, Setup, Token, Write, accumulator, array, local_roms, phase, setup, wheels, writes
from .replicas import stage_copies
from .view import StageView, evaluates_functions, make_view

__all__ = ["ReduceBody", "view"]


@dataclass(frozen=True)
class ReduceBody:
    combine: str  # sum | mean | max (ops/head.py; global_avg_pool is a mean over H and W)
    loop: str
    iterations: int
    setup: Setup
    roms: tuple[Rom, ...]
    prologue: Phase  # over the head's input tokens; its result is the value reduced (per lane)
    epilogue: Phase  # over the head's output tokens
    inputs: int  # IN: input iterations (tokens of the head's input)
    outputs: int  # OUT: output iterations (tokens of the head's output)
    n: int  # input elements per output element (a mean's divisor)
    acc_type: str  # typedef name of the accumulator
    accumulator: str  # its C++ type
    acc: Array  # the accumulators
    index: tuple[Term, ...]  # acc's index for the current input element (lane)
    emit_index: tuple[Term, ...]  # acc's index for the current output element (lane)
    first: tuple[str, ...]  # counters that are all 0 on the first element of an output
    first_var: str
    wheels: tuple[Wheel, ...]  # the counters of ``index`` and ``first``
    head_type: str
    head_var: str
    is_float: bool
    writes: tuple[Write, ...]
    lanes: int  # input elements per iteration
    lanes_out: int  # output elements per iteration
    lane: str  # the lane loop's counter (lanes > 1)
    reads: tuple[Token, ...]  # lanes > 1: the prologue's tokens read
    tokens: tuple[Token, ...]  # lanes_out > 1: the epilogue's tokens read
    out_token: str  # lanes_out > 1: the output token's C++ type
    out_var: str  # lanes_out > 1: the output token
    values: str  # the innermost axis reduced (lanes > 1): the lanes' values, combined by a tree
    part: str  # their sum or maximum

    @property
    def combines(self) -> bool:
        return self.lanes > 1 and self.lanes_out == 1


def _tokens(ctx: Context, reads) -> tuple[Token, ...]:
    return tuple(Token(r.channel, ctx.token(r.channel), ctx.names.local(f"tok_{r.channel}"), r.var, r.type)
                 for r in reads)


def body(ctx: Context, stage: Stage) -> ReduceBody:
    schedule = stage.schedule
    main = schedule.main
    local = ctx.names.local
    source = ctx.graph.node(stage.head).inputs[0]
    i, o = local("i"), local("o")
    lane = local("l") if main.lanes_in > 1 else None
    pre = phase(ctx, main.prologue, {}, i, lane)
    digits = [(d[0], d[1]) for d in main.index] + list(main.first)
    terms, counters = wheels(ctx, digits, main.in_tokens, i, "a")
    head_var = ctx.value(stage.head)
    post = phase(ctx, main.epilogue, {stage.head: head_var}, o, lane if main.lanes_out > 1 else None)
    acc_spelling = ctx.ctype(source) if main.combine == "max" else accumulator(main.accumulator)
    acc_type = local("acc_t")
    index = tuple(Term(terms[(inner, size)].var, stride) for inner, size, stride in main.index)
    emit_index = (Term(o, 1),)
    if main.lanes_out > 1:  # lane l: accumulator j + l, in bank l
        index += (Term(lane, 1),)
        emit_index = (Term(o, main.lanes_out), Term(lane, 1))
    out_var = local("tok_out") if main.lanes_out > 1 else ""
    return ReduceBody(
        combine=main.combine,
        loop=local("t"),
        iterations=schedule.iterations,
        setup=setup(ctx, schedule),
        roms=local_roms(ctx, schedule, {}),
        prologue=pre,
        epilogue=post,
        inputs=main.in_tokens,
        outputs=main.out_tokens,
        n=main.n,
        acc_type=acc_type,
        accumulator=acc_spelling,
        acc=array(local("acc"), acc_type, schedule.buffer("accumulators")),
        index=index,
        emit_index=emit_index,
        first=tuple(dict.fromkeys(terms[key].var for key in main.first)),
        first_var=local("first"),
        wheels=counters,
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=ctx.dtype(source).is_float,
        writes=writes(main.writes, out_var or post.result),
        lanes=main.lanes_in,
        lanes_out=main.lanes_out,
        lane=lane or "",
        reads=_tokens(ctx, pre.reads) if main.lanes_in > 1 else (),
        tokens=_tokens(ctx, post.reads) if main.lanes_out > 1 else (),
        out_token=ctx.token(main.writes[0]) if main.lanes_out > 1 else "",
        out_var=out_var,
        values=local("vals") if main.combines else "",
        part=local("part") if main.combines else "",
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    lanes_out_lane = b.lane if b.lanes_out > 1 else None
    copies, pre, phases = stage_copies(ctx, stage, b.setup, {"prologue": (b.prologue, b.lanes, b.lane or None),
                                                      "epilogue": (b.epilogue, b.lanes_out, lanes_out_lane)})
    b = dataclasses.replace(b, setup=pre, **phases)
    uses_math = evaluates_functions(ctx, stage)
    return make_view(ctx, stage, "hls/stage_reduce.j2", b, uses_math=uses_math, headers=("hlsfuse/numeric.h",),
                     copies=copies)
