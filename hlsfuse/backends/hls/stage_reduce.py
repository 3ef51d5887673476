"""Reduce stages: a prologue of map nodes feeding sum, mean, max or global_avg_pool, then an epilogue.

One loop (``lower.schedule.ReduceMain``): after the setup loops, one iteration per input element, then
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
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .expr import Term, Wheel
from .phase import Array, Phase, Rom, Setup, Write, accumulator, array, local_roms, phase, setup, wheels, writes
from .view import StageView, make_view

__all__ = ["ReduceBody", "view"]


@dataclass(frozen=True)
class ReduceBody:
    op: str  # "sum" | "mean" | "max" (global_avg_pool is a mean over H and W)
    loop: str
    iterations: int
    setup: Setup
    roms: tuple[Rom, ...]
    prologue: Phase  # over the head's input elements; its result is the value reduced
    epilogue: Phase  # over the head's output elements
    inputs: int  # IN: elements of the head's input
    outputs: int  # OUT: elements of the head's output
    n: int  # input elements per output element (a mean's divisor)
    acc_type: str  # typedef name of the accumulator
    accumulator: str  # its C++ type
    acc: Array  # the accumulators
    index: tuple[Term, ...]  # acc's index for the current input element
    first: tuple[str, ...]  # counters that are all 0 on the first element of an output
    first_var: str
    wheels: tuple[Wheel, ...]  # the counters of ``index`` and ``first``
    head_type: str
    head_var: str
    is_float: bool
    writes: tuple[Write, ...]


def body(ctx: Context, stage: Stage) -> ReduceBody:
    schedule = stage.schedule
    main = schedule.main
    local = ctx.names.local
    source = ctx.graph.node(stage.head).inputs[0]
    i, o = local("i"), local("o")
    pre = phase(ctx, main.prologue, {}, i)
    digits = [(d[0], d[1]) for d in main.index] + list(main.first)
    terms, counters = wheels(ctx, digits, main.inputs, i, "a")
    head_var = ctx.value(stage.head)
    post = phase(ctx, main.epilogue, {stage.head: head_var}, o)
    acc_spelling = ctx.ctype(source) if main.op == "max" else accumulator(main.accumulator)
    acc_type = local("acc_t")
    return ReduceBody(
        op=main.op,
        loop=local("t"),
        iterations=schedule.iterations,
        setup=setup(ctx, schedule),
        roms=local_roms(ctx, schedule, {}),
        prologue=pre,
        epilogue=post,
        inputs=main.inputs,
        outputs=main.outputs,
        n=main.n,
        acc_type=acc_type,
        accumulator=acc_spelling,
        acc=array(local("acc"), acc_type, schedule.buffer("accumulators")),
        index=tuple(Term(terms[(inner, size)].var, stride) for inner, size, stride in main.index),
        first=tuple(dict.fromkeys(terms[key].var for key in main.first)),
        first_var=local("first"),
        wheels=counters,
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=ctx.dtype(source).is_float,
        writes=writes(main.writes, post.result),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_reduce.j2", b, uses_math=uses_math, headers=("hlsfuse/numeric.h",))
