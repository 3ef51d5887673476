"""Window stages: conv2d, max_pool2d or avg_pool2d over NHWC images, then the group's epilogue.

One loop, the schedule's push/emit loop (``lower.stage_window.WindowMain``): after the setup loops, every
iteration may

    emit  one output channel co of the last completed window, from its snapshot:
          conv2d: exact MAC over the taps (hlsf::conv_mac), SIMD products per iteration, so that an
          output takes FOLDS iterations, adding to a partial sum, and is written in its last;
          max_pool2d: hlsf::window_max over the taps inside the image; avg_pool2d: exact sum
          (hlsf::window_sum), then hlsf::assign_quotient by the position's count; assigned once to
          the head's output type, then the epilogue, then written
    push  the next padded position's next channel into the line buffer (the input's value at a real
          pixel, a zero at padding); the push completing a window on the stride grid copies it into the
          snapshot. That push waits while the snapshot still has outputs to emit, but for the last one.

With Q > 1 snapshots (``WindowMain.snapshots``) they are a ring: the emits read the oldest held window, a
completing push fills the next free slot, and waits only while all Q are held, but for the last emit of the
oldest, which frees its slot in the same iteration (``schedule.Engine``).

With input lanes L a push moves one token of L channels (L pushes into the line buffer, unrolled);
with PE P an emit computes output channels co P .. co P + P - 1 in an unrolled loop over the lanes of
one output token (the conv2d's weights then a [products][Cout] ROM, its columns banked P ways), and
the epilogue runs per lane on the epilogue inputs' tokens.

The emit comes first in the loop body, so the iteration that emits a window's last output may push the
next window into the snapshot. Every geometry fact is the schedule's: the row and column tables
(real, emitting, taps inside the image) are constant arrays, so the stage needs no division.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...lower.plan import Stage
from ...lower.products import product_kind
from .context import Context
from .phase import (
    Phase,
    Rom,
    Setup,
    Token,
    Weights,
    Write,
    accumulator,
    local_roms,
    packing_type,
    phase,
    setup,
    weights,
    writes,
)
from .replicas import stage_copies
from .view import StageView, evaluates_functions, make_view

__all__ = ["WindowBody", "view"]


@dataclass(frozen=True)
class Loop:
    """Local names of the stage function (all distinct, none shadowing a global)."""

    t: str
    acc_type: str
    buffer: str
    snapshot: str
    row: str
    col: str
    channel: str
    image: str
    pushing: str
    emitting: str
    out_channel: str
    out_row: str
    out_col: str
    completes: str
    push: str
    value: str
    acc: str
    real: str
    tables: str  # prefix of the row/column tables
    fold: str
    partial: str
    lane: str  # the lane loop's counter (pe > 1)
    lane_co: str  # lane's output channel
    last: str  # this emit is its outputs' last fold
    token: str  # the output token (pe > 1)
    held: str  # snapshots > 1: completed windows held (the first emitting, the last captured)
    first: str  # snapshots > 1: the slot emitting
    free: str  # snapshots > 1: the slot the next capture fills
    packed: str  # multiplier "packed": the emit's sums, computed two outputs to a DSP


@dataclass(frozen=True)
class Table:
    name: str
    values: tuple[int, ...]


@dataclass(frozen=True)
class WindowBody:
    combine: str  # mac | max | mean (ops/head.py)
    loop: Loop
    iterations: int
    setup: Setup
    roms: tuple[Rom, ...]
    images: int
    c: int
    cout: int
    kh: int
    kw: int
    dh: int
    dw: int
    hp: int
    wp: int
    oh: int
    ow: int
    taps: int
    groups: int
    simd: int  # conv2d: products per iteration; an output takes ``folds`` iterations
    folds: int
    lanes: int  # input channels per push (one token); the channel counter counts tokens
    snapshots: int  # completed windows held for emission: a ring of that many snapshots when more than one
    per_position: int  # pushes per padded position
    in_token: str  # the input token's C++ type
    pe: int  # output channels per emit: an unrolled loop over the lanes of the output token
    emits: int  # groups of pe output channels per window
    tokens: tuple  # pe > 1: the epilogue's streamed tokens read (stage_map.Token)
    out_token: str  # pe > 1: its C++ type
    real_rows: Table | None  # None: every row (column) is real / emits
    real_cols: Table | None
    emit_rows: Table | None
    emit_cols: Table | None
    tap_rows: tuple[Table | None, ...]  # max_pool2d with padding: per row tap kh, per output row: the tap is in
    tap_cols: tuple[Table | None, ...]  # the image (None: always); () without padding
    counts: tuple[tuple[int, ...], ...]  # avg_pool2d: counts per output pixel when not all equal
    divisor: int | None
    in_channel: str
    in_type: str
    head_type: str
    head_var: str
    is_float: bool
    accumulator: str | None
    weights: str | None  # conv2d: the local ROM or held array
    weight_type: str | None  # their element type (hlsf::element reads a ROM's raw integers back as it)
    fabric: bool  # conv2d: the products built from LUTs (multiplier "lut")
    packing: str | None  # conv2d of multiplier "packed": its hlsf::packing<...> (``packing_type``)
    epilogue: Phase
    writes: tuple[Write, ...]
    narrow: str | None = None  # 1- and 2-bit weights: hlsf's product kind (narrow.h; lower.products), no multiplier

    @property
    def emit_from(self) -> str:
        """The snapshot the emits read."""
        return self.loop.snapshot if self.snapshots == 1 else f"{self.loop.snapshot}[{self.loop.first}]"

    @property
    def tracks_pixel(self) -> bool:
        """The emit side counts output pixels (for their tap tables or counts)."""
        return bool(self.tap_rows or self.counts)


def _loop(ctx: Context) -> Loop:
    local = ctx.names.local
    return Loop(*(local(n) for n in (
        "t", "acc_t", "lb", "snap", "row", "col", "ch", "img", "pushing", "emitting", "co", "oy", "ox",
        "completes", "push", "px", "acc", "real", "tab", "f", "part", "l", "co_l", "last", "tok_out", "held",
        "slot_emit", "slot_free", "acc_pk")))


def _table(loop: Loop, what: str, bits: tuple[bool, ...]) -> Table | None:
    if all(bits):
        return None
    return Table(f"{loop.tables}_{what}", tuple(int(b) for b in bits))


def body(ctx: Context, stage: Stage) -> WindowBody:
    schedule = stage.schedule
    main = schedule.main
    g = main.geometry
    loop = _loop(ctx)
    head = stage.head
    is_float = ctx.dtype(ctx.graph.node(head).inputs[0]).is_float
    w = weights(ctx, schedule, main.weights) if main.weights is not None else Weights(None, {}, {}, None)
    tap_rows = tap_cols = ()
    if main.skips_padding:
        tap_rows = tuple(_table(loop, f"tap_row{k}", g.tap_rows(k)) for k in range(g.kh))
        tap_cols = tuple(_table(loop, f"tap_col{k}", g.tap_cols(k)) for k in range(g.kw))
    head_var = ctx.value(head)
    e = phase(ctx, main.epilogue, {head: head_var}, ctx.names.local("o"), loop.lane if main.pe > 1 else None)
    tokens = tuple(Token(r.channel, ctx.token(r.channel), ctx.names.local(f"tok_{r.channel}"), r.var, r.type)
                   for r in e.reads) if main.pe > 1 else ()
    return WindowBody(
        combine=main.combine,
        loop=loop,
        iterations=schedule.iterations,
        setup=setup(ctx, schedule, w.partitions),
        roms=local_roms(ctx, schedule, w.roms),
        images=g.images,
        c=g.c,
        cout=main.out_channels,
        kh=g.kh,
        kw=g.kw,
        dh=g.dh,
        dw=g.dw,
        hp=g.hp,
        wp=g.wp,
        oh=g.oh,
        ow=g.ow,
        taps=g.taps,
        groups=main.groups,
        simd=main.simd,
        folds=main.folds,
        lanes=g.lanes,
        snapshots=main.snapshots,
        per_position=g.per_position,
        in_token=ctx.token(main.read),
        pe=main.pe,
        emits=main.out_channels // main.pe,
        tokens=tokens,
        out_token=ctx.token(main.writes[0]),
        real_rows=_table(loop, "real_rows", g.real_rows()),
        real_cols=_table(loop, "real_cols", g.real_cols()),
        emit_rows=_table(loop, "emit_rows", g.emit_rows()),
        emit_cols=_table(loop, "emit_cols", g.emit_cols()),
        tap_rows=tap_rows,
        tap_cols=tap_cols,
        counts=main.counts,
        divisor=main.divisor,
        in_channel=main.read,
        in_type=ctx.ctype(ctx.graph.node(head).inputs[0]),
        head_type=ctx.ctype(head),
        head_var=head_var,
        is_float=is_float,
        accumulator=accumulator(main.accumulator) if main.combine != "max" else None,
        weights=w.name,
        weight_type=w.type,
        fabric=main.multiplier == "lut",
        packing=packing_type(main.packing),
        epilogue=e,
        writes=writes(main.writes, e.result if main.pe == 1 else loop.token),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    lane = b.loop.lane if b.pe > 1 else None  # the epilogue runs per lane of an output token
    copies, pre, phases = stage_copies(ctx, stage, b.setup, {"epilogue": (b.epilogue, b.pe, lane)})
    b = dataclasses.replace(b, setup=pre, **phases)
    uses_math = evaluates_functions(ctx, stage)
    headers = ("hlsfuse/linebuffer.h", "hlsfuse/mac.h")
    kind = product_kind(ctx.graph, stage)
    if kind is not None:  # 1- and 2-bit weights: narrow.h's helpers
        b, headers = dataclasses.replace(b, narrow=f"hlsf::narrow_{kind}"), (*headers, "hlsfuse/narrow.h")
    return make_view(ctx, stage, "hls/stage_window.j2", b, uses_math=uses_math, headers=headers, copies=copies)
