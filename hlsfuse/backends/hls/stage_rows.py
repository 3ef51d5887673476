"""Rows stages: dense (x[..., K] times w[N, K] transposed) or matmul (a[..., M, K] @ b[..., K, N]).

One loop, the schedule's push/emit loop over rows (``lower.stage_rows.RowsMain``): after the setup loops
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
b[(base + k) * N + n] (hlsf::matmul_mac), where base is the first row of the batch of b that numpy
broadcasting pairs with the current output batch (a table when b's batch dims broadcast).

With input lanes L a push reads one token of L row elements (stored in an unrolled loop); with PE P an
emit computes columns n P .. n P + P - 1 in an unrolled loop over the lanes of one output token (the
weights then declared 2-D, each dimension partitioned as the schedule banks it), and the epilogue runs
per lane on the epilogue inputs' tokens.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...lower.plan import Stage
from ...lower.products import product_kind
from .context import Context
from .phase import (
    Array,
    Phase,
    Rom,
    Setup,
    Token,
    Write,
    accumulator,
    array,
    local_roms,
    packing_type,
    phase,
    setup,
    weights,
    writes,
)
from .replicas import stage_copies
from .view import StageView, evaluates_functions, make_view

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
    lane: str  # the lane loop's counter (pe > 1, lanes > 1)
    column: str  # the lane's output column (pe > 1)
    last: str  # this emit is its outputs' last fold (pe > 1)
    token: str  # the output token (pe > 1)
    x_in: str  # the input token (lanes > 1)
    packed: str  # multiplier "packed": the emit's sums, computed two outputs to a DSP


@dataclass(frozen=True)
class RowsBody:
    products_innermost: bool  # the weights hold an output's products along their innermost axis (dense's w[N, K])
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
    lanes: int  # row elements per push (one token)
    pushes: int  # per row
    in_token: str  # the input token's C++ type
    pe: int  # columns per emit: an unrolled loop over the lanes of the output token
    emits: int  # output tokens per row
    tokens: tuple[Token, ...]  # pe > 1: the epilogue's streamed tokens read
    out_token: str  # pe > 1: its C++ type
    accumulators: Array | None  # a streamed row (schedule.Streamed): each output's partial sum
    in_channel: str
    in_type: str
    head_type: str
    head_var: str
    is_float: bool
    accumulator: str
    weights: str  # the local ROM or held array of w / b
    weight_type: str | None  # their element type (hlsf::element reads a ROM's raw integers back as it)
    fabric: bool  # the products built from LUTs (multiplier "lut")
    packing: str | None  # multiplier "packed": its hlsf::packing<...> (``packing_type``)
    offsets: tuple[int, ...]  # matmul: first row of b's batch per output batch; () when always 0
    epilogue: Phase
    writes: tuple[Write, ...]
    narrow: str | None = None  # 1- and 2-bit weights: hlsf's product kind (narrow.h; lower.products), no multiplier


def body(ctx: Context, stage: Stage) -> RowsBody:
    schedule = stage.schedule
    main = schedule.main
    local = ctx.names.local
    loop = Loop(*(local(n) for n in (
        "t", "acc_t", "xrow", "snap", "k", "n", "bt", "m", "pushing", "rows_in", "emitting", "completes", "push",
        "px", "acc", "b_base", "f", "part", "need", "l", "col", "last", "tok_out", "x_in", "acc_pk")))
    w = weights(ctx, schedule, main.weights)
    head_var = ctx.value(stage.head)
    e = phase(ctx, main.epilogue, {stage.head: head_var}, local("o"), loop.lane if main.pe > 1 else None)
    tokens = tuple(Token(r.channel, ctx.token(r.channel), local(f"tok_{r.channel}"), r.var, r.type)
                   for r in e.reads) if main.pe > 1 else ()
    x = ctx.graph.node(stage.head).inputs[0]
    return RowsBody(
        products_innermost=main.products_innermost,
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
        lanes=main.lanes_in,
        pushes=main.pushes_per_row,
        in_token=ctx.token(main.read),
        pe=main.pe,
        emits=main.emits_per_row,
        tokens=tokens,
        out_token=ctx.token(main.writes[0]),
        accumulators=array(local("accs"), accumulator(main.accumulator), schedule.buffer("accumulators"))
        if main.streamed else None,
        in_channel=main.read,
        in_type=ctx.ctype(x),
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=ctx.dtype(x).is_float,
        accumulator=accumulator(main.accumulator),
        weights=w.name,
        weight_type=w.type,
        fabric=main.multiplier == "lut",
        packing=packing_type(main.packing),
        offsets=main.base_rows,
        epilogue=e,
        writes=writes(main.writes, e.result if main.pe == 1 else loop.token),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    lane = b.loop.lane if b.pe > 1 else None  # the epilogue runs per lane of an output token
    copies, pre, phases = stage_copies(ctx, stage, b.setup, {"epilogue": (b.epilogue, b.pe, lane)})
    b = dataclasses.replace(b, setup=pre, **phases)
    uses_math = evaluates_functions(ctx, stage)
    headers = ("hlsfuse/mac.h",)
    kind = product_kind(ctx.graph, stage)
    if kind is not None:  # 1- and 2-bit weights: narrow.h's helpers
        b, headers = dataclasses.replace(b, narrow=f"hlsf::narrow_{kind}"), (*headers, "hlsfuse/narrow.h")
    return make_view(ctx, stage, "hls/stage_rows.j2", b, uses_math=uses_math, headers=headers, copies=copies)
