"""Rows stages: dense (x[..., K] times w[N, K] transposed) or matmul (a[..., M, K] @ b[..., K, N]).

One loop, the schedule's push/emit loop over rows (``lower.schedule.RowsMain``): after the setup loops
(held inputs: epilogue operands, a streamed w or b), every iteration may

    emit  output n of the last completed row, from its snapshot: the exact MAC of the row with column n
          of the weights (accumulator Fmt(x)*Fmt(w) summed over K terms), assigned once to the head's
          type, then the epilogue, then written
    push  the next input element into the row register; the push completing a row copies it into the
          snapshot, and waits while the snapshot still has outputs to emit, but for the last one

so reading row r+1 overlaps emitting row r. A folded dense stage of one row per frame (``Streamed``)
has no snapshot: it emits fold f of every output, then fold f + 1, as soon as the row elements that
fold needs are pushed, adding to each output's accumulator, and writes the outputs in the last fold.
dense reads w[n * K + k] (hlsf::dense_mac). matmul reads
b[base + k * N + n] (hlsf::matmul_mac), where base is the offset of the batch of b that numpy
broadcasting pairs with the current output batch (a table when b's batch dims broadcast).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .phase import Array, Phase, Rom, Setup, Write, accumulator, array, local_roms, phase, setup, weights, writes
from .view import StageView, make_view

__all__ = ["RowsBody", "view"]


@dataclass(frozen=True)
class Loop:
    t: str
    acc_type: str
    row: str
    snapshot: str
    k: str
    n: str
    batch: str  # the snapshot's output batch (matmul with offsets)
    row_of_batch: str
    pushing: str
    pushed: str  # rows pushed so far
    emitting: str
    completes: str
    push: str
    value: str
    acc: str
    offsets: str
    fold: str
    partial: str
    need: str


@dataclass(frozen=True)
class RowsBody:
    op: str  # "dense" | "matmul"
    loop: Loop
    iterations: int
    setup: Setup
    roms: tuple[Rom, ...]
    batches: int
    rows: int
    k: int
    n: int
    simd: int  # products per iteration; an output takes ``folds`` iterations
    folds: int
    accumulators: Array | None  # a streamed row (schedule.Streamed): each output's partial sum
    in_channel: str
    in_type: str
    head_type: str
    head_var: str
    is_float: bool
    accumulator: str
    weights: str  # the local ROM or held array of w / b
    offsets: tuple[int, ...]  # matmul: offset of b's batch per output batch; () when always 0
    epilogue: Phase
    writes: tuple[Write, ...]


def body(ctx: Context, stage: Stage) -> RowsBody:
    schedule = stage.schedule
    main = schedule.main
    local = ctx.names.local
    loop = Loop(*(local(n) for n in (
        "t", "acc_t", "xrow", "snap", "k", "n", "bt", "m", "pushing", "rows_in", "emitting", "completes", "push",
        "px", "acc", "b_base", "f", "part", "need")))
    w = weights(ctx, schedule, main.weights)
    head_var = ctx.value(stage.head)
    e = phase(ctx, main.epilogue, {stage.head: head_var}, local("o"))
    x = ctx.graph.node(stage.head).inputs[0]
    return RowsBody(
        op=main.op,
        loop=loop,
        iterations=schedule.iterations,
        setup=setup(ctx, schedule, w.partitions),
        roms=local_roms(ctx, schedule, w.roms),
        batches=main.batches,
        rows=main.rows,
        k=main.k,
        n=main.n,
        simd=main.simd,
        folds=main.folds,
        accumulators=array(local("accs"), accumulator(main.accumulator), schedule.buffer("accumulators"))
        if main.streamed else None,
        in_channel=main.read,
        in_type=ctx.ctype(x),
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=ctx.dtype(x).is_float,
        accumulator=accumulator(main.accumulator),
        weights=w.name,
        offsets=main.offsets,
        epilogue=e,
        writes=writes(main.writes, e.result),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_rows.j2", b, uses_math=uses_math, headers=("hlsfuse/mac.h",))
