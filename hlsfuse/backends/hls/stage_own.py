"""Own stages: one op that changes a stream's length or order, run by its kernel from the library.

    slice, pad, concat, transpose, upsample2d  ->  hlsf::*_stage of hw/hls/hlsfuse/own.h (a reflect or edge pad:
                                   pad_block_stage; zero insertion: upsample_zeros_stage)
    softmax, argmax, topk          ->  hlsf::*_stage of hw/hls/hlsfuse/opaque.h
    layer_norm, rms_norm           ->  hlsf::*_stage of hw/hls/hlsfuse/norm.h (gamma and beta: ROM readers)

Each kernel is a complete stage: one loop with the iterations of the stage's schedule
(``lower.stage_own``), which also gives every shape, block and buffer; the generated function declares the
buffers with their pragmas and calls the kernel with the node's element types, shapes and attributes
as template arguments (one call view per op below, rendered by ``templates/hls/stage_own.j2``). Every
kernel assigns each result once to the node's output type, as the reference does. A softmax reads
the exp and reciprocal tables of ``hlsfuse.ops.opaque.softmax_tables``, which the context puts in
luts.h; with more than two lanes the stage declares copies of the exp table (``replicas``), and the
kernel's lane l reads copy l / 2. An operand that is a graph constant is a ROM of the function, read
by an ``hlsf::rom_reader`` in the iterations that would read a stream. A masked softmax's mask is a ROM the
kernel reads by position (row r of the tensor, mask row r mod R).

With lanes (the main's ``lanes``, L input elements per token) each call adds L as the kernel's last explicit
template argument (a concat calls ``hlsf::concat_lanes_stage``), the schedule's shapes already count tokens,
the channels carry ``hlsf::lanes`` (``ctx.token``), buffers are banked as the schedule's Buffer list says,
and a constant operand's ROM is read L elements at a time, so it is partitioned cyclically by L.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ...errors import HlsfuseError
from ...lower import own_movers, own_opaque
from ...lower.plan import Stage
from ...ops import get_op
from ...ops.norm import norm_of
from ...ops.opaque import exp_window
from .context import Context
from .cxx import float_literal, literal, spell_type
from .phase import Array, Rom, array
from .replicas import plan
from .view import StageView, make_view

__all__ = ["OwnBody", "view", "MAX_CONCAT_INPUTS"]

MAX_CONCAT_INPUTS = 8  # hlsf::concat_stage (own.h)

Dims = tuple[int, ...]


@dataclass(frozen=True)
class Feed:
    """A constant operand: its ROM, read by the ``hlsf::rom_reader`` ``reader``."""

    reader: str
    rom: str
    type: str
    size: int
    lanes: int  # elements per read: one token, L consecutive ROM elements
    storage: str  # how the ROM stores its elements (raw integers, or ``type`` itself)


@dataclass(frozen=True)
class SliceCall:
    in_type: str
    out_type: str
    in_shape: Dims
    out_shape: Dims
    start: Dims
    step: Dims
    block_axis: int | None  # None: it streams
    iterations: int
    input: str
    output: str
    block: Array | None
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "slice"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


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
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "pad"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


@dataclass(frozen=True)
class PadBlockCall:
    """A reflect or edge pad: per block of the axes from ``block_axis`` on, output index k of each of them
    copies input index ``indices[offset + k]`` (the schedule's tables of those axes, one after another)."""

    in_type: str
    out_type: str
    in_shape: Dims
    out_shape: Dims
    block_axis: int
    input: str
    output: str
    block: Array
    table: str  # the local array of ``indices``
    indices: Dims
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "pad_block"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


@dataclass(frozen=True)
class ConcatCall:
    out_type: str
    outer: int
    inner: int
    extents: Dims
    inputs: tuple[str, ...]  # streams or ROM readers, in the node's input order
    output: str
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "concat"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


@dataclass(frozen=True)
class TransposeCall:
    in_type: str
    out_type: str
    outer: int
    in_shape: Dims  # the block's axes
    perm: Dims  # their permutation
    input: str
    output: str
    block: Array
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "transpose"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


@dataclass(frozen=True)
class UpsampleCall:
    """NHWC upsampling: ROWS input rows of W pixels of C tokens, each SH x SW times (zero insertion: once)."""

    in_type: str
    out_type: str
    rows: int
    width: int
    channels: int
    sh: int
    sw: int
    input: str
    output: str
    row: Array | None  # nearest: the row buffer; zeros: None
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "upsample"  # its macro in stage_own.j2
    header: str = "hlsfuse/own.h"


@dataclass(frozen=True)
class SoftmaxCall:
    in_type: str
    out_type: str
    exp_type: str  # element types of the two tables (luts.h)
    recip_type: str
    exp_table: str
    recip_table: str
    rows: int
    n: int
    input: str
    output: str
    row: Array
    exps: Array
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    mask: str | None = None  # masked_softmax: the ROM of its mask (R x N bits), read by masked_softmax_stage
    mask_rows: int = 1  # R
    window_type: str | None = None  # exp_int_bits: the C++ type d = x - max(x) saturates to before the exp table
    kernel: str = "softmax"  # its macro in stage_own.j2
    header: str = "hlsfuse/opaque.h"


@dataclass(frozen=True)
class SoftmaxFloatCall:
    rows: int
    n: int
    input: str
    output: str
    row: Array
    mask: str | None = None  # masked_softmax: the ROM of its mask, read by masked_softmax_float_stage
    mask_rows: int = 1
    kernel: str = "softmax_float"  # its macro in stage_own.j2
    header: str = "hlsfuse/opaque.h"


@dataclass(frozen=True)
class NormCall:
    """A fixed-point layer_norm (``beta_type`` set) or rms_norm: its types, the row's shape, the op's epsilon term
    E and the bits of V (``ops.norm.Norm``), the rsqrt table of luts.h."""

    in_type: str
    out_type: str
    norm_type: str  # the node's norm_dtype
    gamma_type: str
    beta_type: str | None  # None: rms_norm
    entry_type: str  # the rsqrt table's entries
    table: str
    rows: int
    n: int
    epsilon_term: int
    v_bits: int
    input: str
    gamma: str  # ROM readers
    beta: str | None
    output: str
    row: Array
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "norm"  # its macro in stage_own.j2
    header: str = "hlsfuse/norm.h"


@dataclass(frozen=True)
class NormFloatCall:
    rows: int
    n: int
    epsilon: str  # a double literal
    input: str
    gamma: str
    beta: str | None  # None: rms_norm
    output: str
    row: Array
    kernel: str = "norm_float"  # its macro in stage_own.j2
    header: str = "hlsfuse/norm.h"


@dataclass(frozen=True)
class ArgmaxCall:
    in_type: str
    out_type: str
    outer: int
    n: int
    inner: int
    input: str
    output: str
    best: Array
    where: Array
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "argmax"  # its macro in stage_own.j2
    header: str = "hlsfuse/opaque.h"


@dataclass(frozen=True)
class TopkCall:
    in_type: str
    out_type: str
    rows: int
    n: int
    k: int
    indices: bool
    input: str
    output: str
    lanes: int  # elements per input token (the main's lanes, the kernel's L)
    kernel: str = "topk"  # its macro in stage_own.j2
    header: str = "hlsfuse/opaque.h"


@dataclass(frozen=True)
class OwnBody:
    roms: tuple[Rom, ...]
    feeds: tuple[Feed, ...]
    call: Any  # one of the *Call views; the template dispatches on its ``op``

    @property
    def arrays(self) -> tuple[Array, ...]:
        names = ("block", "row", "exps", "best", "where")  # an upsample's row buffer is its ``row``
        return tuple(a for n in names if isinstance(a := getattr(self.call, n, None), Array))


def _pad_fill(ctx: Context, node) -> str:
    """The attribute ``value`` as the output type holds it (``OpDef.constants``)."""
    sig = ctx.graph.sigs[node.name]
    fill = get_op(node.op).constants_of(sig)["fill"]
    if sig.out_dtype.is_float:
        return float_literal(fill).typed
    return literal(fill, sig.out_dtype, ctx.ctype(node.name)).typed


def _call(ctx: Context, stage: Stage, streams: list[str]):
    main = stage.schedule.main
    node = ctx.graph.node(stage.head)
    local = ctx.names.local
    in_type, out_type = ctx.ctype(node.inputs[0]), ctx.ctype(node.name)
    schedule = stage.schedule
    if isinstance(main, own_movers.SliceMain):
        block = None
        if main.block_axis is not None:
            block = array(local("block"), in_type, schedule.buffer("block"))
        return SliceCall(in_type, out_type, main.in_shape, main.out_shape, main.start, main.step, main.block_axis,
                         main.iterations, streams[0], main.write, block, lanes=main.lanes_in)
    if isinstance(main, own_movers.PadMain) and main.block_axis is not None:
        indices = tuple(i for axis in main.indices for i in axis)
        return PadBlockCall(in_type, out_type, main.in_shape, main.out_shape, main.block_axis, streams[0], main.write,
                            array(local("block"), in_type, schedule.buffer("block")), local("indices"), indices,
                            lanes=main.lanes_in)
    if isinstance(main, own_movers.PadMain):
        return PadCall(in_type, out_type, main.in_shape, main.before, main.out_shape, _pad_fill(ctx, node),
                       streams[0], main.write, lanes=main.lanes_in)
    if isinstance(main, own_movers.ConcatMain):
        if len(main.sources) > MAX_CONCAT_INPUTS:
            raise HlsfuseError(
                f"{node.where()}: joins {len(main.sources)} inputs; the concat kernel takes at most "
                f"{MAX_CONCAT_INPUTS} (split it into several concats)"
            )
        return ConcatCall(out_type, main.outer, main.inner, main.extents, tuple(streams), main.write,
                          lanes=main.lanes_in)
    if isinstance(main, own_movers.TransposeMain):
        b = main.block_axis
        perm = tuple(p - b for p in main.perm[b:])
        return TransposeCall(in_type, out_type, main.outer, main.in_shape[b:], perm, streams[0], main.write,
                             array(local("block"), in_type, schedule.buffer("block")), lanes=main.lanes_in)
    if isinstance(main, own_movers.UpsampleMain):
        row = None if main.row is None else array(local("row"), in_type, schedule.buffer("row"))
        return UpsampleCall(in_type, out_type, main.rows, main.width, main.channels, main.sh, main.sw, streams[0],
                            main.write, row, lanes=main.lanes_in)
    if isinstance(main, own_opaque.SoftmaxMain):
        row = array(local("row"), in_type, schedule.buffer("row"))
        mask = None if main.mask is None else ctx.rom(main.mask)  # declared by ``view`` (``_mask_rom``)
        if ctx.graph.sigs[node.name].out_dtype.is_float:
            return SoftmaxFloatCall(main.rows, main.n, streams[0], main.write, row, mask, main.mask_rows)
        exp, recip = ctx.tables[node.name]
        exps = array(local("exps"), exp.type, schedule.buffer("exponentials"))
        window = exp_window(ctx.graph.sigs[node.name])
        return SoftmaxCall(in_type, out_type, exp.type, recip.type, exp.name, recip.name, main.rows, main.n,
                           streams[0], main.write, row, exps, lanes=main.lanes_in, mask=mask,
                           mask_rows=main.mask_rows,
                           window_type=None if window is None else f"ap_fixed<{window.width}, {window.int_bits}>")
    if isinstance(main, own_opaque.NormMain):
        return _norm_call(ctx, schedule, node, streams)
    if isinstance(main, own_opaque.ArgmaxMain):
        return ArgmaxCall(in_type, out_type, main.outer, main.n, main.inner, streams[0], main.write,
                          array(local("best"), in_type, schedule.buffer("running maxima")),
                          array(local("where"), "int", schedule.buffer("their indices")), lanes=main.lanes_in)
    if isinstance(main, own_opaque.TopkMain):
        return TopkCall(in_type, out_type, main.rows, main.n, main.k, main.indices, streams[0], main.write,
                        lanes=main.lanes_in)
    raise HlsfuseError(f"{node.where()}: the HLS backend has no own-stage kernel for op '{node.op}'")


def _mask_rom(ctx: Context, main) -> tuple[Rom, ...]:
    """A masked softmax's mask as a ROM of this function, a bank per lane (lane l reads element k L + l)."""
    if not isinstance(main, own_opaque.SoftmaxMain) or main.mask is None:
        return ()
    name, lanes = ctx.rom(main.mask), main.lanes_in
    return (Rom(name, name, ctx.ctype(main.mask), ctx.type_of(main.mask).size,
                (f"type=cyclic factor={lanes}",) if lanes > 1 else (), ctx.rom_storage[main.mask]),)
def _norm_call(ctx: Context, schedule, node, streams: list[str]):
    """A layer_norm or rms_norm: x streamed, gamma (and beta) read from their ROMs."""
    main, sig = schedule.main, ctx.graph.sigs[node.name]
    row = array(ctx.names.local("row"), ctx.ctype(node.inputs[0]), schedule.buffer("row"))
    beta = streams[2] if main.beta is not None else None
    if sig.out_dtype.is_float:
        return NormFloatCall(main.rows, main.n, repr(float(sig["epsilon"])), streams[0], streams[1], beta,
                             main.write, row)
    norm = norm_of(sig)
    (table,) = ctx.tables[node.name]
    return NormCall(ctx.ctype(node.inputs[0]), ctx.ctype(node.name), spell_type(sig["norm_dtype"]),
                    ctx.ctype(node.inputs[1]), ctx.ctype(node.inputs[2]) if main.beta is not None else None,
                    table.type, table.name, main.rows, main.n, norm.epsilon_term, norm.v_bits, streams[0], streams[1],
                    beta, main.write, row, lanes=main.lanes_in)


def view(ctx: Context, stage: Stage) -> StageView:
    main = stage.schedule.main
    streams, feeds = [], []
    sources = main.sources
    for src in sources:
        if src.channel is not None:
            streams.append(src.channel)
            continue
        reader = ctx.names.local(f"feed{len(feeds)}")
        storage = ctx.rom_storage[src.tensor] or ctx.ctype(src.tensor)
        feeds.append(Feed(reader, ctx.rom(src.tensor), ctx.ctype(src.tensor), ctx.type_of(src.tensor).size,
                          main.lanes_in, storage))
        streams.append(reader)
    roms = tuple({  # a token is L parallel reads: L banks; a constant read twice (as gamma and beta) is one ROM
        f.rom: Rom(f.rom, f.rom, f.type, f.size, (f"type=cyclic factor={f.lanes}",) if f.lanes > 1 else (),
                   ctx.rom_storage[src.tensor])
        for f, src in zip(feeds, [s for s in sources if s.channel is None])
    }.values()) + _mask_rom(ctx, main)
    call = _call(ctx, stage, streams)
    copies = ()
    if isinstance(call, SoftmaxCall):  # every lane reads the exp table in one iteration, the reciprocal is read once
        copies = plan(ctx, stage)
        exp = next((c for c in copies if c.table == ctx.tables[stage.head][0].name), None)
        if exp is not None:
            call = dataclasses.replace(call, exp_table=exp.name)
    return make_view(ctx, stage, "hls/stage_own.j2", OwnBody(roms, tuple(feeds), call), headers=(call.header,),
                     copies=copies)
