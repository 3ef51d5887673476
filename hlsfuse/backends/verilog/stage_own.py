"""Own stages in Verilog: slice, pad, concat, transpose, softmax, argmax and topk (``lower.stage_own``); the
last three are built by ``stage_opaque``, the tokens and assignments by ``own_tokens``.

Each op is its schedule's loops, one iteration per cycle, mirroring its kernel in hw/hls/hlsfuse:

    pad             constant: one loop over the output; a position inside the input reads one element;
                    reflect, edge: per block, a loop storing it and a loop writing it padded
    concat          one loop over the output, reading the inputs' blocks in turn
    slice           streaming: one loop over the input, writing the picked elements; reading an axis
                    backwards: per block, a loop storing it and (when picked) a loop writing it
    transpose       per block, a loop storing it and a loop writing it in the permuted order
    upsample2d      one loop over the output, an odometer (row copy, pixel, pixel copy, token); a pixel's
                    first copy in the first row reads the input (nearest: and stores it in the row buffer
                    the other copies read; zeros: the other copies are zero)

The gathers (slice blocks, transpose, reflect and edge pads) read their buffer at the addresses the schedule
lists, from a ROM. Every result is assigned once to the node's output type with ``hlsf_assign``, as the reference
does. An operand that is a graph constant is no channel but a ROM, read in row-major order by a
counter in the iterations that would read a channel.

Lanes (``main.lanes_in`` L > 1): a token is L x W bits, lane l in bits [l W, (l + 1) W). The data movers run
the same loops over the schedule's token view; a token moves whole (buffers and ROM words hold tokens)
and each lane gets its own ``hlsf_assign``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import HlsfuseError
from ...lower import own_movers
from ...lower.area import buffer_area
from ...lower.plan import Stage
from ...ops import get_op
from ...types import FixedType
from .decls import Assign, StageModule, Update
from .module import ModuleBuilder
from .own_tokens import assign, join, lane_tag, mask, moved_token, source, split
from .stage_opaque import OPS as OPAQUE
from .vlog import XW, bits_for, sext64, ulit, zext

__all__ = ["build"]


def _gather(b: ModuleBuilder, fire: str, read_loop, write_loop, value: str, dtype: FixedType, out_ch: str,
            size: int, addresses: np.ndarray, lanes: int = 1) -> str:
    """Store ``value`` at token idx of the block in ``read_loop``; in ``write_loop``, read the block at the
    schedule's address of token idx. Returns the token read, moved to the output type."""
    seq = b.sequencer
    # a block RAM where the resource model (and the C++'s binding) says so, else LUTRAM; read at a registered
    # address either way: the address of the iteration about to run, loaded when the one before fires (the store
    # loop loads the first), so a block RAM reads synchronously
    style = "block" if buffer_area(b.stage.schedule.buffer("block")).bram18 else "distributed"
    block = b.array("block", size, lanes * dtype.width, style)
    aw = b.index(block)
    b.stores.append(Update(f"{fire} && {read_loop.here}", f"{block}[{zext(seq.idx, seq.width, aw)}]", value))
    flat = np.asarray(addresses).reshape(-1)
    # the next write iteration's address (the last: the first), logic feeding the address register
    table = b.rom("addresses_ahead", np.roll(flat, -1), aw, style="mem2reg")
    at = b.reg("addr", aw)
    b.updates.append(Update(fire, at, f"{write_loop.here} ? {table}[{zext(seq.idx, seq.width, b.index(table))}]"
                                      f" : {ulit(int(flat[0]), aw)}"))
    picked = b.wire("picked", lanes * dtype.width, f"{block}[{at}]")
    b.move(out_ch, write_loop.here)
    return moved_token(b, picked, dtype, b.dtype(b.stage.head), lanes, "x")


def _pad(b: ModuleBuilder, main: own_movers.PadMain) -> str:
    seq = b.sequence(main.loops)
    out = b.dtype(b.stage.head)
    o = b.odometer("o", main.out_shape, seq.fire)
    tests = []
    for (c, cw), lo, n, total in zip(o, main.before, main.in_shape, main.out_shape):
        if lo > 0:
            tests.append(f"{c} >= {ulit(lo, cw)}")
        if lo + n < total:
            tests.append(f"{c} < {ulit(lo + n, cw)}")
    inside = b.wire("inside", 1, " && ".join(tests) or "1'b1")
    lanes = main.lanes_in
    raw, dtype = source(b, main.source, inside, seq.fire, "x", lanes)
    b.move(main.write, seq.loops[0].here)
    # the fill: attribute 'value' as the output type holds it (the registry's constant); L copies
    head = b.graph.node(b.stage.head)
    fill_raw = get_op(head.op).constants_of(b.graph.sigs[head.name])["fill"]
    fill = ulit(fill_raw & ((1 << out.width) - 1), out.width)
    if lanes > 1:
        fill = f"{{{lanes}{{{fill}}}}}"
    value = moved_token(b, raw, dtype, out, lanes, "x")
    return b.wire("padded", lanes * out.width, f"{inside} ? {value} : {fill}")


def _pad_block(b: ModuleBuilder, main: own_movers.PadMain) -> str:
    """Reflect or edge padding: per index of the axes before the first padded one, store the block of the
    others, then write it padded (each output element copies the block element the schedule lists)."""
    seq = b.sequence(main.loops)
    read, write = seq.loops
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", main.lanes_in)
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses(), main.lanes_in)


def _concat(b: ModuleBuilder, main: own_movers.ConcatMain) -> str:
    seq = b.sequence(main.loops)
    out = b.dtype(b.stage.head)
    n = len(main.sources)
    blocks = [e * main.inner for e in main.extents]
    pw, lw = bits_for(n), bits_for(max(blocks))
    part = b.reg("part", pw, ulit(0, pw))  # the input being copied
    pos = b.reg("pos", lw, ulit(0, lw))  # the element of its block
    at = [f"{part} == {ulit(k, pw)}" for k in range(n)]

    def select(values: list[str]) -> str:
        return " : ".join([f"{at[k]} ? {values[k]}" for k in range(n - 1)] + [values[-1]])

    lanes = main.lanes_in
    taken = [source(b, s, at[k], seq.fire, f"in{k}", lanes) for k, s in enumerate(main.sources)]
    b.move(main.write, seq.loops[0].here)
    # per lane, inputs aligned exactly to the finest of their fractional bits, then assigned once (the reference)
    frac = max(dtype.frac for _, dtype in taken)
    per_lane = [split(b, raw, dtype.width, lanes, f"lane_in{k}_") for k, (raw, dtype) in enumerate(taken)]
    exacts = []
    for lane in range(lanes):
        xs = []
        for ins, (_, dtype) in zip(per_lane, taken):
            x = sext64(ins[lane], dtype)
            xs.append(x if dtype.frac == frac else f"({x} <<< {frac - dtype.frac})")
        exacts.append(b.wire(f"e_{lane_tag('join', lane, lanes)}", XW, select(xs), signed=True))
    last = b.wire("block_done", 1, select([f"{pos} == {ulit(k - 1, lw)}" for k in blocks]))
    b.updates += [
        Update(seq.fire, pos, f"{last} ? {ulit(0, lw)} : {pos} + {ulit(1, lw)}"),
        Update(f"{seq.fire} && {last}", part, f"{part} == {ulit(n - 1, pw)} ? {ulit(0, pw)} : {part} + {ulit(1, pw)}"),
    ]
    ys = [assign(b, e, frac, out, lane_tag("join", lane, lanes)) for lane, e in enumerate(exacts)]
    return join(b, ys, out.width, "token_join")


def _slice(b: ModuleBuilder, main: own_movers.SliceMain) -> str:
    """Stream order kept: read every element, write the ones picked on every axis (a bit mask per axis)."""
    seq = b.sequence(main.loops)
    raw, dtype = source(b, main.source, seq.loops[0].here, seq.fire, "x", main.lanes_in)
    i = b.odometer("i", main.in_shape, seq.fire)
    tests = []
    for d, (c, _) in enumerate(i):
        kept = main.picked(range(d, d + 1))
        if not kept.all():
            tests.append(mask(b, f"picks{d}", kept, c))
    b.move(main.write, b.wire("keep", 1, " && ".join(tests) or "1'b1"))
    return moved_token(b, raw, dtype, b.dtype(b.stage.head), main.lanes_in, "x")


def _slice_block(b: ModuleBuilder, main: own_movers.SliceMain) -> str:
    """Reading an axis backwards: per index of the axes before it, store the block of the others, then write
    its picked elements (when that index is picked itself)."""
    axis = main.block_axis
    seq = b.sequence(main.loops)
    read, write = seq.loops
    keep = b.net("keep", 1)
    # after a block is stored, write it only when its outer index is picked
    seq = b.sequencer = dataclasses.replace(seq, next=f"{read.here} && {keep} ? 1'd1 : 1'd0")
    block_done = f"({read.here} && {read.last} && !{keep}) || ({write.here} && {write.last})"
    outer = b.odometer("ob", main.in_shape[:axis], f"{seq.fire} && ({block_done})")
    tests = []
    for d, (c, _) in enumerate(outer):
        picked = main.picked(range(d, d + 1))
        if not picked.all():
            tests.append(mask(b, f"picks{d}", picked, c))
    b.decls.append(Assign(keep, " && ".join(tests) or "1'b1"))
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", main.lanes_in)
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses(), main.lanes_in)


def _transpose(b: ModuleBuilder, main: own_movers.TransposeMain) -> str:
    seq = b.sequence(main.loops)
    read, write = seq.loops
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", main.lanes_in)
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses(), main.lanes_in)


def _upsample(b: ModuleBuilder, main: own_movers.UpsampleMain) -> str:
    seq = b.sequence(main.loops)
    lanes, out = main.lanes_in, b.dtype(b.stage.head)
    (r, rw), (w, ww), (k, kw), (c, cw) = b.odometer("o", (main.sh, main.width, main.sw, main.channels), seq.fire)
    first = b.wire("first", 1, f"{r} == {ulit(0, rw)} && {k} == {ulit(0, kw)}")
    raw, dtype = source(b, main.source, first, seq.fire, "x", lanes)
    b.move(main.write, seq.loops[0].here)
    if main.row is None:
        value = moved_token(b, raw, dtype, out, lanes, "x")
        zero = ulit(0, lanes * out.width) if main.zeros else value
        return b.wire("upsampled", lanes * out.width, f"{first} ? {value} : {zero}")
    row = b.array("row", main.row, lanes * dtype.width)
    aw = b.index(row)
    # w * C + c < W * C fits aw bits, so arithmetic modulo 2^aw gives it exactly
    at = b.wire("at", aw, f"{zext(w, ww, aw)} * {ulit(main.channels % (1 << aw), aw)} + {zext(c, cw, aw)}")
    b.stores.append(Update(f"{seq.fire} && {first}", f"{row}[{at}]", raw))
    held = b.wire("held", lanes * dtype.width, f"{first} ? {raw} : {row}[{at}]")
    return moved_token(b, held, dtype, out, lanes, "x")


_OPS = {
    own_movers.UpsampleMain: _upsample,
    own_movers.ConcatMain: _concat,
    own_movers.TransposeMain: _transpose,
    **OPAQUE,
}


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    main = stage.schedule.main
    node = b.graph.node(stage.head)
    if isinstance(main, own_movers.SliceMain):
        generate = _slice if main.block_axis is None else _slice_block
    elif isinstance(main, own_movers.PadMain):
        generate = _pad if main.block_axis is None else _pad_block
    elif type(main) in _OPS:
        generate = _OPS[type(main)]
    else:
        raise HlsfuseError(f"{node.where()}: the Verilog backend has no own stage for op '{node.op}'")
    result = generate(b, main)
    return b.build(f"{node.op} '{node.name}'", {main.write: result}, state)
