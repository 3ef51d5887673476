"""Window stages: conv2d, max_pool2d or avg_pool2d over NHWC rows, then the group's epilogue.

The schedule is analytic.py's: every padded position of the image is visited in row-major order;
reading it takes C cycles (padding pushes zeros into the line buffer, hlsf::line_buffer in
hw/hls/hlsfuse/linebuffer.h), and a position that completes an output pixel then takes Cout
cycles, one output channel each:

    held inputs ──read whole──► arrays
    for each image n, padded row r, padded column q:
        C cycles:      value = real pixel ? in.read() : 0  ──►  line buffer + window
        if the window ending at (r, q) is an output pixel, Cout cycles:
            head       conv2d: exact MAC over the window (hlsf::conv_mac), accumulator Fmt(x)*Fmt(w) summed
                       over KH*KW*Cin/groups terms; max_pool2d: hlsf::window_max; avg_pool2d: exact window
                       sum, then hlsf::assign_quotient by the position's count (ops.nn.pool_counts)
            assigned once to the head's output type, then the epilogue (phase.py), then written out

A conv2d weight that is not a constant arrives on a channel and is held whole before the image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import HlsfuseError
from ...lower import phases
from ...lower.plan import Stage
from ...ops.nn import pool_counts
from ...types import Fmt
from .context import Context
from .phase import Held, Phase, Write, accumulator, held, inputs, phase, writes
from .view import StageView, make_view

__all__ = ["WindowBody", "view"]

_OPS = ("conv2d", "max_pool2d", "avg_pool2d")


@dataclass(frozen=True)
class Loops:
    """Local names of the stage function (all distinct, none shadowing a global)."""

    geometry: str
    acc_type: str
    buffer: str
    image: str
    row: str
    col: str
    real: str
    channel: str
    out_channel: str
    value: str
    acc: str
    counts: str


@dataclass(frozen=True)
class WindowBody:
    op: str  # the head op, one of _OPS
    loops: Loops
    held: tuple[Held, ...]
    geometry: tuple[int, ...]  # window_geometry<H, W, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW>
    images: int  # N
    channels: int  # C of the input
    out_channels: int  # Cout
    in_channel: str  # the head's input stream
    in_type: str
    head_type: str
    head_var: str
    is_float: bool
    accumulator: str | None  # C++ type of the exact sum (conv2d, avg_pool2d)
    weights: str | None  # conv2d: the ROM or held array of w
    weight_banks: int  # conv2d: one bank per tap (KH*KW*Cin/groups)
    groups: int
    divisor: int | None  # avg_pool2d: the count when every position has the same
    counts: tuple[tuple[int, ...], ...]  # avg_pool2d otherwise: counts per output pixel, rows of OW
    out_width: int  # OW
    epilogue: Phase
    writes: tuple[Write, ...]


def _loops(ctx: Context) -> Loops:
    local = ctx.names.local
    return Loops(
        geometry=local("geom"),
        acc_type=local("acc_t"),
        buffer=local("lb"),
        image=local("img"),
        row=local("row"),
        col=local("col"),
        real=local("real"),
        channel=local("c"),
        out_channel=local("co"),
        value=local("px"),
        acc=local("acc"),
        counts=local("counts"),
    )


def _weights(ctx: Context, node, held_arrays: dict[str, str]) -> str:
    w = node.inputs[1]
    if w in ctx.graph.constant_map:
        return ctx.rom(w)
    if w in held_arrays:
        return held_arrays[w]
    raise HlsfuseError(f"{node.where()}: weight '{w}' is neither a constant nor held by its stage")


def body(ctx: Context, stage: Stage) -> WindowBody:
    graph = ctx.graph
    node = graph.node(stage.head)
    if node.op not in _OPS:
        raise HlsfuseError(f"{node.where()}: a window stage computes {', '.join(_OPS)}, not '{node.op}'")
    prologue, epilogue = phases(graph, stage.nodes, stage.head)
    if prologue:
        raise HlsfuseError(f"stage '{stage.name}': nodes {', '.join(prologue)} before '{stage.head}' cannot run in it")
    ins = inputs(ctx, stage)
    if ins.pre or len(ins.head) != 1 or ins.head[0][1] != node.inputs[0]:
        raise HlsfuseError(f"stage '{stage.name}': must stream '{node.inputs[0]}' into '{stage.head}' on one channel")
    sig = graph.sigs[stage.head]
    x_type, out_type = ctx.type_of(node.inputs[0]), ctx.type_of(stage.head)
    n, h, w, c = x_type.shape
    _, _, ow, cout = out_type.shape
    is_float = x_type.dtype.is_float
    held_arrays = {t: ctx.array(t) for _, t in ins.held}
    loops = _loops(ctx)

    acc_fmt, weights, banks, groups, divisor, counts = None, None, 0, 1, None, ()
    if node.op == "conv2d":
        kh, kw, cg, _ = ctx.type_of(node.inputs[1]).shape
        dilation, groups = sig["dilation"], sig["groups"]
        weights, banks = _weights(ctx, node, held_arrays), kh * kw * cg
        if not is_float:
            acc_fmt = Fmt.of(x_type.dtype).mul(Fmt.of(ctx.dtype(node.inputs[1]))).accumulate(banks)
    else:
        (kh, kw), dilation = sig["pool_size"], (1, 1)
        if node.op == "avg_pool2d":
            if not is_float:
                acc_fmt = Fmt.of(x_type.dtype).accumulate(kh * kw)
            table = pool_counts(sig)
            if np.all(table == table.flat[0]):
                divisor = int(table.flat[0])
            else:
                counts = tuple(tuple(int(v) for v in row) for row in table)
    strides = sig["strides"] if sig["strides"] is not None else (kh, kw)
    if acc_fmt is not None:
        acc_fmt.check(f"{node.where()}: the exact accumulation")
    geometry = (h, w, kh, kw, *strides, *sig["padding"], *dilation)

    head_var = ctx.value(stage.head)
    post = phase(ctx, epilogue, out_type.size, {stage.head: head_var}, ins.post, held_arrays, ctx.names.local("o"),
                 head_var)
    return WindowBody(
        op=node.op,
        loops=loops,
        held=held(ctx, ins.held),
        geometry=geometry,
        images=n,
        channels=c,
        out_channels=cout,
        in_channel=ins.head[0][0],
        in_type=ctx.ctype(node.inputs[0]),
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=is_float,
        accumulator=accumulator(acc_fmt) if node.op != "max_pool2d" else None,
        weights=weights,
        weight_banks=banks,
        groups=groups,
        divisor=divisor,
        counts=counts,
        out_width=ow,
        epilogue=post,
        writes=writes(ctx, stage, post.result),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    headers = ("hlsfuse/linebuffer.h", "hlsfuse/mac.h")
    return make_view(ctx, stage, "hls/stage_window.j2", b, uses_math=uses_math, headers=headers)
