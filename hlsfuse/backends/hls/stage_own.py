"""Own stages: one op that changes a stream's length or order, run by its kernel from the library.

    slice, pad, concat, transpose  ->  hlsf::*_stage of hw/hls/hlsfuse/own.h
    softmax, argmax, topk          ->  hlsf::*_stage of hw/hls/hlsfuse/opaque.h

The kernels are complete stage functions; the generated function only calls one with the node's
element types, shapes and attributes as template arguments (one call view per op below, rendered
by ``templates/hls/stage_own.j2``). Every kernel assigns each result once to the node's output
type, as the reference does, so no rounding happens here. A softmax reads the exp and reciprocal
tables of ``hlsfuse.ops.opaque.softmax_tables``, which the context puts in luts.h.

The kernels read streams only. An operand that is a graph constant (``concat(x, c)``) is not a
channel of the stage but a ROM, so it is first copied into a local stream of its own, in row-major
order. Anything a kernel cannot do (a rank above the library's, too many concat inputs, a tensor
that a concat reads twice) is an ``HlsfuseError`` naming the node, raised while emitting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import HlsfuseError
from ...ir import Node
from ...lower.plan import Stage
from ...types import FixedType, from_float
from .context import Context
from .cxx import float_literal, literal
from .view import StageView, make_view

__all__ = ["OwnBody", "view", "OWN_OPS", "MAX_RANK", "MAX_CONCAT_INPUTS"]

MAX_RANK = 6  # hlsf::dims (shape.h)
MAX_CONCAT_INPUTS = 8  # hlsf::concat_stage (own.h)

Dims = tuple[int, ...]


@dataclass(frozen=True)
class Feed:
    """A constant operand copied from its ROM into the local stream ``stream`` before the kernel runs."""

    stream: str
    type: str
    rom: str
    size: int


@dataclass(frozen=True)
class SliceCall:
    in_type: str
    out_type: str
    in_shape: Dims
    out_shape: Dims
    start: Dims  # Python's normalised slice per axis: range(*slice(b, e, s).indices(n))
    step: Dims
    input: str
    output: str
    op: str = "slice"


@dataclass(frozen=True)
class PadCall:
    in_type: str
    out_type: str
    in_shape: Dims
    before: Dims
    out_shape: Dims
    fill: str  # the pad value as an expression of the output type
    input: str
    output: str
    op: str = "pad"


@dataclass(frozen=True)
class ConcatCall:
    out_type: str
    outer: int  # product of the axes before the concat axis
    inner: int  # product of the axes after it
    extents: Dims  # each input's extent on the axis
    inputs: tuple[str, ...]  # streams in the node's input order
    output: str
    op: str = "concat"


@dataclass(frozen=True)
class TransposeCall:
    in_type: str
    out_type: str
    in_shape: Dims
    perm: Dims
    input: str
    output: str
    op: str = "transpose"


@dataclass(frozen=True)
class SoftmaxCall:
    in_type: str
    out_type: str
    exp_type: str  # element types of the two tables (luts.h)
    recip_type: str
    exp_table: str
    recip_table: str
    rows: int
    n: int  # elements per row (the last axis)
    input: str
    output: str
    op: str = "softmax"


@dataclass(frozen=True)
class SoftmaxFloatCall:
    rows: int
    n: int
    input: str
    output: str
    op: str = "softmax_float"


@dataclass(frozen=True)
class ArgmaxCall:
    in_type: str
    out_type: str  # the index type
    outer: int
    n: int  # extent of the axis
    inner: int
    input: str
    output: str
    op: str = "argmax"


@dataclass(frozen=True)
class TopkCall:
    in_type: str
    out_type: str
    rows: int
    n: int
    k: int
    indices: bool  # the output holds indices (in the index type), not values
    input: str
    output: str
    op: str = "topk"


@dataclass(frozen=True)
class OwnBody:
    index: str  # loop counter of the feeds
    feeds: tuple[Feed, ...]
    call: Any  # one of the *Call views; the template dispatches on its ``op``
    tag: int  # the stage's group id: kernels with a static buffer get their own instance per stage


# --------------------------------------------------------------------------
# Per-op call views
# --------------------------------------------------------------------------


class _Node:
    """What every call view reads: the node, its signature, types, shapes and streams."""

    def __init__(self, ctx: Context, node: Node, streams: tuple[str, ...], output: str):
        self.ctx, self.node, self.streams, self.output = ctx, node, streams, output
        self.sig = ctx.graph.sigs[node.name]
        self.out_type = ctx.ctype(node.name)
        self.out_shape = ctx.type_of(node.name).shape

    def in_type(self, k: int = 0) -> str:
        return self.ctx.ctype(self.node.inputs[k])

    def in_shape(self, k: int = 0) -> Dims:
        return self.ctx.type_of(self.node.inputs[k]).shape

    def dims(self, shape: Dims, what: str) -> Dims:
        """``shape`` as an hlsf::dims argument: rank 1..6 (a scalar is one element)."""
        if len(shape) > MAX_RANK:
            raise HlsfuseError(
                f"{self.node.where()}: {what} has {len(shape)} dims; the kernel library handles at most {MAX_RANK}"
            )
        return tuple(shape) or (1,)


def _slice(n: _Node) -> SliceCall:
    shape = n.in_shape()
    sig = n.sig
    steps = sig["step"] if sig["step"] is not None else (1,) * len(sig["begin"])
    start, step = [], []
    for axis, dim in enumerate(shape):
        if axis < len(sig["begin"]):
            picked = range(*slice(sig["begin"][axis], sig["end"][axis], steps[axis]).indices(dim))
            start.append(picked.start)
            step.append(picked.step)
        else:
            start.append(0)
            step.append(1)
    return SliceCall(
        in_type=n.in_type(),
        out_type=n.out_type,
        in_shape=n.dims(shape, "input 'x'"),
        out_shape=n.dims(n.out_shape, "the output"),
        start=tuple(start) or (0,),
        step=tuple(step) or (1,),
        input=n.streams[0],
        output=n.output,
    )


def _pad_fill(n: _Node) -> str:
    """The attribute ``value`` in the output type, rounded as the reference does (RND, SAT)."""
    t = n.sig.out_dtype
    if t.is_float:
        return float_literal(n.sig["value"]).typed
    fill_type = FixedType(t.width, t.int_bits, t.signed, "RND", "SAT")
    raw = int(from_float(np.array(n.sig["value"]), fill_type))
    return literal(raw, t, n.out_type).typed


def _pad(n: _Node) -> PadCall:
    shape = n.in_shape()
    before = tuple(n.sig["pads"][: len(shape)])
    return PadCall(
        in_type=n.in_type(),
        out_type=n.out_type,
        in_shape=n.dims(shape, "input 'x'"),
        before=before or (0,),
        out_shape=n.dims(n.out_shape, "the output"),
        fill=_pad_fill(n),
        input=n.streams[0],
        output=n.output,
    )


def _concat(n: _Node) -> ConcatCall:
    count = len(n.node.inputs)
    if count > MAX_CONCAT_INPUTS:
        raise HlsfuseError(
            f"{n.node.where()}: joins {count} inputs; the concat kernel takes at most {MAX_CONCAT_INPUTS} "
            "(split it into several concats)"
        )
    shape = n.dims(n.out_shape, "the output")
    axis = n.sig["axis"] % len(shape)
    return ConcatCall(
        out_type=n.out_type,
        outer=math.prod(shape[:axis]),
        inner=math.prod(shape[axis + 1 :]),
        extents=tuple(n.in_shape(k)[axis] for k in range(count)),
        inputs=n.streams,
        output=n.output,
    )


def _transpose(n: _Node) -> TransposeCall:
    shape = n.dims(n.in_shape(), "input 'x'")
    axes = n.sig["axes"]
    perm = tuple(axes) if axes is not None else tuple(reversed(range(len(n.in_shape()))))
    return TransposeCall(n.in_type(), n.out_type, shape, perm or (0,), n.streams[0], n.output)


def _softmax(n: _Node) -> SoftmaxCall | SoftmaxFloatCall:
    shape = n.dims(n.in_shape(), "input 'x'")
    row = shape[-1]
    rows = math.prod(shape) // row
    if n.sig.out_dtype.is_float:
        return SoftmaxFloatCall(rows, row, n.streams[0], n.output)
    exp, recip = n.ctx.softmax_tables[n.node.name]
    return SoftmaxCall(
        in_type=n.in_type(),
        out_type=n.out_type,
        exp_type=exp.type,
        recip_type=recip.type,
        exp_table=exp.name,
        recip_table=recip.name,
        rows=rows,
        n=row,
        input=n.streams[0],
        output=n.output,
    )


def _argmax(n: _Node) -> ArgmaxCall:
    shape = n.dims(n.in_shape(), "input 'x'")
    axis = n.sig["axis"] % len(shape)
    return ArgmaxCall(
        in_type=n.in_type(),
        out_type=n.out_type,
        outer=math.prod(shape[:axis]),
        n=shape[axis],
        inner=math.prod(shape[axis + 1 :]),
        input=n.streams[0],
        output=n.output,
    )


def _topk(n: _Node) -> TopkCall:
    shape = n.dims(n.in_shape(), "input 'x'")
    row = shape[-1]
    return TopkCall(
        in_type=n.in_type(),
        out_type=n.out_type,
        rows=math.prod(shape) // row,
        n=row,
        k=n.sig["k"],
        indices=n.sig["ret"] == "indices",
        input=n.streams[0],
        output=n.output,
    )


_CALLS = {
    "slice": (_slice, "hlsfuse/own.h"),
    "pad": (_pad, "hlsfuse/own.h"),
    "concat": (_concat, "hlsfuse/own.h"),
    "transpose": (_transpose, "hlsfuse/own.h"),
    "softmax": (_softmax, "hlsfuse/opaque.h"),
    "argmax": (_argmax, "hlsfuse/opaque.h"),
    "topk": (_topk, "hlsfuse/opaque.h"),
}
OWN_OPS = frozenset(_CALLS)
"""Every op an own stage runs."""


# --------------------------------------------------------------------------
# The stage
# --------------------------------------------------------------------------


def _streams(ctx: Context, stage: Stage, node: Node) -> tuple[tuple[str, ...], tuple[Feed, ...]]:
    """The stream feeding each input of ``node`` (in its input order) and the feeds of its constant inputs.

    The lowering gives an own stage one channel per streamed input position, in input order (a tensor
    read twice, as in concat(x, x), arrives twice through a fork)."""
    channels = list(stage.inputs)
    streams, feeds = [], []
    for src in node.inputs:
        if src in ctx.graph.constant_map:
            stream = ctx.names.local(f"feed{len(feeds)}")
            feeds.append(Feed(stream, ctx.ctype(src), ctx.rom(src), ctx.type_of(src).size))
            streams.append(stream)
            continue
        if not channels or ctx.channel(channels[0]).tensor != src:
            raise HlsfuseError(f"stage '{stage.name}': no channel brings input '{src}' of {node.where()} in order")
        streams.append(channels.pop(0))
    if channels:
        raise HlsfuseError(f"stage '{stage.name}': channel '{channels[0]}' is not read by {node.where()}")
    return tuple(streams), tuple(feeds)


def view(ctx: Context, stage: Stage) -> StageView:
    if stage.head is None or stage.nodes != (stage.head,):
        raise HlsfuseError(f"own stage '{stage.name}' must compute exactly one node, not {list(stage.nodes)}")
    node = ctx.graph.node(stage.head)
    if node.op not in _CALLS:
        raise HlsfuseError(f"{node.where()}: the HLS backend has no own-stage kernel for op '{node.op}'")
    if len(stage.outputs) != 1:
        raise HlsfuseError(f"own stage '{stage.name}' must write one channel, not {len(stage.outputs)}")
    index = ctx.names.local("i")
    streams, feeds = _streams(ctx, stage, node)
    build, header = _CALLS[node.op]
    call = build(_Node(ctx, node, streams, stage.outputs[0]))
    return make_view(ctx, stage, "hls/stage_own.j2", OwnBody(index, feeds, call, stage.group), headers=(header,))
