"""Own stages in Verilog: slice, pad, concat, transpose, softmax, argmax and topk (``lower.own``).

Each op is its schedule's loops, one iteration per cycle, mirroring its kernel in hw/hls/hlsfuse:

    pad             one loop over the output; a position inside the input reads one element
    concat          one loop over the output, reading the inputs' blocks in turn
    slice           streaming: one loop over the input, writing the picked elements; reading an axis
                    backwards: per block, a loop storing it and (when picked) a loop writing it
    transpose       per block, a loop storing it and a loop writing it in the permuted order
    softmax         per row: read it tracking the max, exp and sum, write e * recip(sum)
    argmax          per outer index: read N * INNER elements keeping INNER running maxima, write INNER
    topk            per row: read into a sorted K-slot list (parallel compare and shift), write K results

The gathers (slice blocks, transpose) read their buffer at the addresses the schedule lists, from a
ROM. Every result is assigned once to the node's output type with ``hlsf_assign``, as the reference
does. An operand that is a graph constant is no channel but a ROM, read in row-major order by a
counter in the iterations that would read a channel.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import HlsfuseError
from ...lower import own
from ...lower.plan import Stage
from ...ops.opaque import softmax_tables
from ...types import FixedType, Fmt, from_float
from .expr import rom
from .mem import mem_lines
from .module import Assign, ModuleBuilder, StageModule, Update
from .vlog import XW, assign_params, bits_for, index_width, sext64, slit, ulit, zext

__all__ = ["build"]


def _source(b: ModuleBuilder, src: own.Source, when: str, fire: str, tag: str) -> tuple[str, FixedType]:
    """(raw bits of the operand's element on offer, its type); ``when``: the iterations that take one."""
    dtype = b.dtype(src.tensor)
    if src.channel is not None:
        b.move(src.channel, when)
        return f"{src.channel}_tdata", dtype
    table = rom(b, src.tensor)
    at, aw = b.counter(f"at_{tag}", b.graph.types[src.tensor].size, f"{fire} && {when}")
    return b.wire(f"rom_{tag}", dtype.width, f"{table}[{zext(at, aw, b.index(table))}]"), dtype


def _assign(b: ModuleBuilder, value: str, frac: int, out: FixedType, tag: str, in_w: int = XW,
            in_signed: bool = True) -> str:
    """``value`` (``in_w`` bits, ``frac`` fractional bits) assigned to ``out`` by one hlsf_assign."""
    name = b.net(f"y_{tag}", out.width)
    b.instance("hlsf_assign", assign_params(frac, out, in_w, in_signed), f"u_{tag}",
               (("in_data", value), ("in_sticky", "1'b0"), ("out_data", name)))
    return name


def _moved(b: ModuleBuilder, raw: str, dtype: FixedType, out: FixedType, tag: str) -> str:
    """An element moved to the output type (the injective ops' ``finish``)."""
    return _assign(b, raw, dtype.frac, out, tag, dtype.width, dtype.signed)


def _exact(b: ModuleBuilder, raw: str, dtype: FixedType, tag: str) -> str:
    """The raw bits of a ``dtype`` value as a signed 64-bit wire (to compare or combine exactly)."""
    if "[" in raw:  # a memory word: name it before selecting its sign bit
        raw = b.wire(f"w_{tag}", dtype.width, raw)
    return b.wire(f"x_{tag}", XW, sext64(raw, dtype), signed=True)


def _mask(b: ModuleBuilder, name: str, bits, index: str) -> str:
    """``bits[index]`` of a constant bit vector."""
    n = len(bits)
    pattern = "".join("1" if v else "0" for v in reversed(list(bits)))
    vector = b.wire(name, n, f"{n}'b{pattern}")
    return f"{vector}[{index}]"


def _gather(b: ModuleBuilder, fire: str, read_loop, write_loop, value: str, dtype: FixedType, out_ch: str,
            size: int, addresses: np.ndarray) -> str:
    """Store ``value`` at element idx of the block in ``read_loop``; in ``write_loop``, read the block at the
    schedule's address of element idx. Returns the element read, moved to the output type."""
    seq = b.sequencer
    block = b.array("block", size, dtype.width)
    aw = b.index(block)
    b.stores.append(Update(f"{fire} && {read_loop.here}", f"{block}[{zext(seq.idx, seq.width, aw)}]", value))
    table = b.rom("addresses", len(addresses), aw, mem_lines(addresses, aw))
    at = b.wire("addr", aw, f"{table}[{zext(seq.idx, seq.width, b.index(table))}]")
    picked = b.wire("picked", dtype.width, f"{block}[{at}]")
    b.move(out_ch, write_loop.here)
    return _moved(b, picked, dtype, b.dtype(b.stage.head), "x")


# --------------------------------------------------------------------------
# The ops
# --------------------------------------------------------------------------


def _pad(b: ModuleBuilder, main: own.PadMain) -> str:
    seq = b.sequence([("write the output, reading inside the input", main.iterations)])
    out = b.dtype(b.stage.head)
    o = b.odometer("o", main.out_shape, seq.fire)
    tests = []
    for (c, cw), lo, n, total in zip(o, main.before, main.in_shape, main.out_shape):
        if lo > 0:
            tests.append(f"{c} >= {ulit(lo, cw)}")
        if lo + n < total:
            tests.append(f"{c} < {ulit(lo + n, cw)}")
    inside = b.wire("inside", 1, " && ".join(tests) or "1'b1")
    raw, dtype = _source(b, main.source, inside, seq.fire, "x")
    b.move(main.write, seq.loops[0].here)
    # the fill: attribute 'value' in the output type, rounded and saturated as the reference does
    sig = b.graph.sigs[b.stage.head]
    fill_type = FixedType(out.width, out.int_bits, out.signed, "RND", "SAT")
    fill = int(from_float(np.array(sig["value"]), fill_type)) & ((1 << out.width) - 1)
    return b.wire("padded", out.width, f"{inside} ? {_moved(b, raw, dtype, out, 'x')} : {ulit(fill, out.width)}")


def _concat(b: ModuleBuilder, main: own.ConcatMain) -> str:
    seq = b.sequence([("copy each input's block in turn", main.iterations)])
    out = b.dtype(b.stage.head)
    n = len(main.sources)
    blocks = [e * main.inner for e in main.extents]
    pw, lw = bits_for(n), bits_for(max(blocks))
    part = b.reg("part", pw, ulit(0, pw))  # the input being copied
    pos = b.reg("pos", lw, ulit(0, lw))  # the element of its block
    at = [f"{part} == {ulit(k, pw)}" for k in range(n)]

    def select(values: list[str]) -> str:
        return " : ".join([f"{at[k]} ? {values[k]}" for k in range(n - 1)] + [values[-1]])

    taken = [_source(b, s, at[k], seq.fire, f"in{k}") for k, s in enumerate(main.sources)]
    b.move(main.write, seq.loops[0].here)
    # inputs aligned exactly to the finest of their fractional bits, then assigned once (the reference)
    frac = max(dtype.frac for _, dtype in taken)
    xs = []
    for raw, dtype in taken:
        x = sext64(raw, dtype)
        xs.append(x if dtype.frac == frac else f"({x} <<< {frac - dtype.frac})")
    exact = b.wire("e_join", XW, select(xs), signed=True)
    last = b.wire("block_done", 1, select([f"{pos} == {ulit(k - 1, lw)}" for k in blocks]))
    b.updates += [
        Update(seq.fire, pos, f"{last} ? {ulit(0, lw)} : {pos} + {ulit(1, lw)}"),
        Update(f"{seq.fire} && {last}", part, f"{part} == {ulit(n - 1, pw)} ? {ulit(0, pw)} : {part} + {ulit(1, pw)}"),
    ]
    return _assign(b, exact, frac, out, "join")


def _slice(b: ModuleBuilder, main: own.SliceMain) -> str:
    """Stream order kept: read every element, write the ones picked on every axis (a bit mask per axis)."""
    seq = b.sequence([("read the input, writing the picked elements", main.iterations)])
    raw, dtype = _source(b, main.source, seq.loops[0].here, seq.fire, "x")
    i = b.odometer("i", main.in_shape, seq.fire)
    tests = []
    for d, (c, _) in enumerate(i):
        kept = main.picked(range(d, d + 1))
        if not kept.all():
            tests.append(_mask(b, f"picks{d}", kept, c))
    b.move(main.write, b.wire("keep", 1, " && ".join(tests) or "1'b1"))
    return _moved(b, raw, dtype, b.dtype(b.stage.head), "x")


def _slice_block(b: ModuleBuilder, main: own.SliceMain) -> str:
    """Reading an axis backwards: per index of the axes before it, store the block of the others, then write
    its picked elements (when that index is picked itself)."""
    axis = main.block_axis
    seq = b.sequence([("store a block", main.block), ("write its picked elements", main.out_block)])
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
            tests.append(_mask(b, f"picks{d}", picked, c))
    b.decls.append(Assign(keep, " && ".join(tests) or "1'b1"))
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x")
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses())


def _transpose(b: ModuleBuilder, main: own.TransposeMain) -> str:
    seq = b.sequence([("store a block", main.block), ("write it permuted", main.block)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x")
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses())


def _lookup(b: ModuleBuilder, value: str, fmt: Fmt, table, tag: str) -> str:
    """``table[(X - X_min) >> shift]`` of the exact value ``value`` (64-bit signed) of format ``fmt``."""
    entries = np.asarray(table.entries)
    out = table.out_type
    mem = b.rom(f"lut_{table.function}", len(entries), out.width, mem_lines(entries, out.width))
    bits = fmt.width - table.shift
    raw = b.wire(f"raw_{tag}", fmt.width, zext(value, XW, fmt.width))
    b.unused(value)  # the exact value's bits above the format
    if table.shift:
        b.unused(f"{raw}[{table.shift - 1}:0]")
    top = f"~{raw}[{fmt.width - 1}]" if fmt.signed else f"{raw}[{fmt.width - 1}]"  # - X_min flips a sign bit
    index = top if bits == 1 else f"{{{top}, {raw}[{fmt.width - 2}:{table.shift}]}}"
    ix = b.wire(f"ix_{tag}", index_width(len(entries)), index)
    return b.wire(tag, out.width, f"{mem}[{ix}]")


def _softmax(b: ModuleBuilder, main: own.SoftmaxMain) -> str:
    """Per row, the reference's integer algorithm: m = max(x), e = LUT_exp(x - m), y = e * LUT_recip(sum(e))."""
    sig = b.graph.sigs[b.stage.head]
    exp, recip, s_fmt = softmax_tables(sig)
    et, rt = sig["exp_dtype"], sig["recip_dtype"]
    n = main.n
    seq = b.sequence([("read a row, tracking its max", n), ("exp and sum", n), ("write", n)])
    first_loop, exp_loop, write_loop = seq.loops
    raw, dtype = _source(b, main.source, first_loop.here, seq.fire, "x")
    x = b.array("row", n, dtype.width)
    e = b.array("exps", n, et.width)
    at = zext(seq.idx, seq.width, b.index(x))
    first = f"{seq.idx} == {ulit(0, seq.width)}"
    m = b.reg("top", dtype.width)
    s = b.reg("total", XW)
    v, top = _exact(b, raw, dtype, "in"), _exact(b, m, dtype, "top")
    b.updates.append(Update(f"{seq.fire} && {first_loop.here} && ({first} || {v} > {top})", m, raw))
    b.stores.append(Update(f"{seq.fire} && {first_loop.here}", f"{x}[{at}]", raw))
    xi = _exact(b, f"{x}[{at}]", dtype, "row")
    d = b.wire("d", XW, f"{xi} - {top}", signed=True)
    ei = _lookup(b, d, Fmt.of(dtype).sub(Fmt.of(dtype)), exp, "exp")
    b.stores.append(Update(f"{seq.fire} && {exp_loop.here}", f"{e}[{at}]", ei))
    b.updates.append(Update(f"{seq.fire} && {exp_loop.here}", s, f"({first} ? {slit(0)} : {s}) + {sext64(ei, et)}"))
    total = b.wire("sum", XW, s, signed=True)
    r = _lookup(b, total, s_fmt, recip, "recip")
    eo, ro = _exact(b, f"{e}[{at}]", et, "e"), _exact(b, r, rt, "r")
    product = b.wire("e_prod", XW, f"{eo} * {ro}", signed=True)
    b.move(main.write, write_loop.here)
    return _assign(b, product, et.frac + rt.frac, b.dtype(b.stage.head), "softmax")


def _argmax(b: ModuleBuilder, main: own.ArgmaxMain) -> str:
    seq = b.sequence([("read a block, keeping the running maxima", main.n * main.inner),
                      ("write their indices", main.inner)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x")
    (k, kw), (j, jw) = b.odometer("a", (main.n, main.inner), f"{seq.fire} && {read.here}")
    best = b.array("best", main.inner, dtype.width)
    where = b.array("where", main.inner, kw)
    bj = zext(j, jw, b.index(best))
    v, top = _exact(b, raw, dtype, "in"), _exact(b, f"{best}[{bj}]", dtype, "best")
    # strictly greater: the first maximum wins, as numpy's argmax
    better = b.wire("better", 1, f"{k} == {ulit(0, kw)} || {v} > {top}")
    b.stores += [Update(f"{seq.fire} && {read.here} && {better}", f"{best}[{bj}]", raw),
                 Update(f"{seq.fire} && {read.here} && {better}", f"{where}[{bj}]", k)]
    found = b.wire("found", kw, f"{where}[{zext(seq.idx, seq.width, b.index(where))}]")
    index = b.wire("index", XW, zext(found, kw, XW), signed=True)
    b.move(main.write, write.here)
    return _assign(b, index, 0, b.dtype(b.stage.head), "index")


def _topk(b: ModuleBuilder, main: own.TopkMain) -> str:
    n, k = main.n, main.k
    seq = b.sequence([("read a row into the sorted list", n), ("write the list", k)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x")
    iw = bits_for(n)
    value = b.array("value", k, dtype.width)
    where = b.array("where", k, iw)
    sw = b.index(value)
    v = _exact(b, raw, dtype, "in")
    # slot p is filled once p < i; the list is sorted descending, filled slots first. "v goes before slot p"
    # (p empty, or v strictly greater: an equal value stays ahead with its lower index) is false up to v's
    # place and true from there on, so each slot keeps its entry, takes v, or takes its predecessor's.
    before = []
    for p in range(k):
        held = _exact(b, f"{value}[{ulit(p, sw)}]", dtype, f"slot{p}")
        empty = "1'b1" if p >= n - 1 else f"{seq.idx} <= {ulit(p, seq.width)}"  # the last slot: empty until the end
        before.append(b.wire(f"ahead{p}", 1, f"{empty} || {v} > {held}"))
    i = zext(seq.idx, seq.width, iw)
    step = f"{seq.fire} && {read.here}"
    for p in range(k):
        slot = ulit(p, sw)
        if p > 0:
            shift, prev = before[p - 1], ulit(p - 1, sw)
            b.stores += [Update(f"{step} && {shift}", f"{value}[{slot}]", f"{value}[{prev}]"),
                         Update(f"{step} && {shift}", f"{where}[{slot}]", f"{where}[{prev}]"),
                         Update(f"{step} && !{shift} && {before[p]}", f"{value}[{slot}]", raw),
                         Update(f"{step} && !{shift} && {before[p]}", f"{where}[{slot}]", i)]
        else:
            b.stores += [Update(f"{step} && {before[p]}", f"{value}[{slot}]", raw),
                         Update(f"{step} && {before[p]}", f"{where}[{slot}]", i)]
    at = zext(seq.idx, seq.width, sw)
    out = b.dtype(b.stage.head)
    b.move(main.write, write.here)
    if main.indices:
        found = b.wire("found", iw, f"{where}[{at}]")
        return _assign(b, b.wire("index", XW, zext(found, iw, XW), signed=True), 0, out, "index")
    b.unused(f"{where}[{ulit(0, sw)}]")
    return _moved(b, b.wire("found", dtype.width, f"{value}[{at}]"), dtype, out, "x")


_OPS = {
    own.PadMain: _pad,
    own.ConcatMain: _concat,
    own.TransposeMain: _transpose,
    own.SoftmaxMain: _softmax,
    own.ArgmaxMain: _argmax,
    own.TopkMain: _topk,
}


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    main = stage.schedule.main
    node = b.graph.node(stage.head)
    if isinstance(main, own.SliceMain):
        generate = _slice if main.block_axis is None else _slice_block
    elif type(main) in _OPS:
        generate = _OPS[type(main)]
    else:
        raise HlsfuseError(f"{node.where()}: the Verilog backend has no own stage for op '{node.op}'")
    result = generate(b, main)
    return b.build(f"{node.op} '{node.name}'", {main.write: result}, state)

