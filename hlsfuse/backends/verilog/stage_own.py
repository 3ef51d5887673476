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

Lanes (``main.lanes`` L > 1): a token is L x W bits, lane l in bits [l W, (l + 1) W). The data movers run
the same loops over the schedule's token view; a token moves whole (buffers and ROM words hold tokens)
and each lane gets its own ``hlsf_assign``. The others handle a token per iteration:

    softmax   the row and its exponentials kept as tokens; the max over the token's lanes (a tree) joins
              the running max, the lanes' exponentials are summed in one update; L products per write
    argmax    over an outer axis: the running maxima in L banks, lane l updating bank l; over the
              innermost axis: the token's first maximum (a tree, the lower lane winning ties) against the
              running one, its index k L + lane
    topk      the token's lanes inserted in lane order, each into the list the previous lane left (a
              cascade of L inserts in one cycle); the final list stored whole
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


def _source(b: ModuleBuilder, src: own.Source, when: str, fire: str, tag: str, lanes: int = 1
            ) -> tuple[str, FixedType]:
    """(raw bits of the operand's token on offer, its element type); ``when``: the iterations that take one.
    A constant's ROM holds ``lanes`` consecutive elements per word."""
    dtype = b.dtype(src.tensor)
    if src.channel is not None:
        b.move(src.channel, when)
        return f"{src.channel}_tdata", dtype
    size = b.graph.types[src.tensor].size
    if lanes == 1:
        table = rom(b, src.tensor)
    else:
        data = b.graph.constant_map[src.tensor].data.reshape(-1)
        table = b.rom(b.rom_of(src.tensor), size // lanes, lanes * dtype.width, mem_lines(data, dtype.width, lanes))
    at, aw = b.counter(f"at_{tag}", size // lanes, f"{fire} && {when}")
    return b.wire(f"rom_{tag}", lanes * dtype.width, f"{table}[{zext(at, aw, b.index(table))}]"), dtype


def _split(b: ModuleBuilder, token: str, width: int, lanes: int, tag: str) -> list[str]:
    """The lanes of ``token`` (a signal of ``lanes`` x ``width`` bits), lane l in bits [l W, (l + 1) W)."""
    if lanes == 1:
        return [token]
    return [b.wire(f"{tag}{lane}", width, f"{token}[{(lane + 1) * width - 1}:{lane * width}]") for lane in range(lanes)]


def _join(b: ModuleBuilder, values: list[str], width: int, tag: str) -> str:
    """One token of ``values`` (``width`` bits each), the first in the low bits."""
    if len(values) == 1:
        return values[0]
    return b.wire(tag, len(values) * width, "{" + ", ".join(reversed(values)) + "}")


def _lane_tag(tag: str, lane: int, lanes: int) -> str:
    return tag if lanes == 1 else f"{tag}{lane}"


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


def _moved_token(b: ModuleBuilder, token: str, dtype: FixedType, out: FixedType, lanes: int, tag: str) -> str:
    """A token of ``lanes`` elements moved to the output type, lane by lane."""
    ins = _split(b, token, dtype.width, lanes, f"lane_{tag}")
    ys = [_moved(b, raw, dtype, out, _lane_tag(tag, lane, lanes)) for lane, raw in enumerate(ins)]
    return _join(b, ys, out.width, f"token_{tag}")


def _larger(b: ModuleBuilder, x: str, y: str, dtype: FixedType, tag: str) -> str:
    """The raw ``dtype`` value ``x`` is strictly greater than ``y``."""
    return b.wire(f"gt_{tag}", 1, f"$signed({sext64(x, dtype)}) > $signed({sext64(y, dtype)})")


def _first_max(b: ModuleBuilder, values: list[str], dtype: FixedType, positions: bool = True
               ) -> tuple[str, str | None, int]:
    """(the first maximum of ``values``, its position or None when ``positions`` is false, the position's bits):
    a balanced tree in which the later of two values wins only when strictly greater, so the lowest position
    wins ties."""
    pw = bits_for(len(values))
    level = [(v, ulit(k, pw) if positions else None) for k, v in enumerate(values)]
    depth = 0
    while len(level) > 1:
        nxt = []
        for pos in range(0, len(level) - 1, 2):
            (a, ia), (c, ic) = level[pos], level[pos + 1]
            tag = f"{depth}_{pos // 2}"
            gt = _larger(b, c, a, dtype, tag)
            at = b.wire(f"lane{tag}", pw, f"{gt} ? {ic} : {ia}") if positions else None
            nxt.append((b.wire(f"max{tag}", dtype.width, f"{gt} ? {c} : {a}"), at))
        if len(level) % 2:
            nxt.append(level[-1])
        level, depth = nxt, depth + 1
    return level[0][0], level[0][1], pw


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
            size: int, addresses: np.ndarray, lanes: int = 1) -> str:
    """Store ``value`` at token idx of the block in ``read_loop``; in ``write_loop``, read the block at the
    schedule's address of token idx. Returns the token read, moved to the output type."""
    seq = b.sequencer
    block = b.array("block", size, lanes * dtype.width)
    aw = b.index(block)
    b.stores.append(Update(f"{fire} && {read_loop.here}", f"{block}[{zext(seq.idx, seq.width, aw)}]", value))
    table = b.rom("addresses", len(addresses), aw, mem_lines(addresses, aw))
    at = b.wire("addr", aw, f"{table}[{zext(seq.idx, seq.width, b.index(table))}]")
    picked = b.wire("picked", lanes * dtype.width, f"{block}[{at}]")
    b.move(out_ch, write_loop.here)
    return _moved_token(b, picked, dtype, b.dtype(b.stage.head), lanes, "x")


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
    lanes = main.lanes
    raw, dtype = _source(b, main.source, inside, seq.fire, "x", lanes)
    b.move(main.write, seq.loops[0].here)
    # the fill: attribute 'value' in the output type, rounded and saturated as the reference does; L copies
    sig = b.graph.sigs[b.stage.head]
    fill_type = FixedType(out.width, out.int_bits, out.signed, "RND", "SAT")
    fill = ulit(int(from_float(np.array(sig["value"]), fill_type)) & ((1 << out.width) - 1), out.width)
    if lanes > 1:
        fill = f"{{{lanes}{{{fill}}}}}"
    moved = _moved_token(b, raw, dtype, out, lanes, "x")
    return b.wire("padded", lanes * out.width, f"{inside} ? {moved} : {fill}")


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

    lanes = main.lanes
    taken = [_source(b, s, at[k], seq.fire, f"in{k}", lanes) for k, s in enumerate(main.sources)]
    b.move(main.write, seq.loops[0].here)
    # per lane, inputs aligned exactly to the finest of their fractional bits, then assigned once (the reference)
    frac = max(dtype.frac for _, dtype in taken)
    split = [_split(b, raw, dtype.width, lanes, f"lane_in{k}_") for k, (raw, dtype) in enumerate(taken)]
    exacts = []
    for lane in range(lanes):
        xs = []
        for ins, (_, dtype) in zip(split, taken):
            x = sext64(ins[lane], dtype)
            xs.append(x if dtype.frac == frac else f"({x} <<< {frac - dtype.frac})")
        exacts.append(b.wire(f"e_{_lane_tag('join', lane, lanes)}", XW, select(xs), signed=True))
    last = b.wire("block_done", 1, select([f"{pos} == {ulit(k - 1, lw)}" for k in blocks]))
    b.updates += [
        Update(seq.fire, pos, f"{last} ? {ulit(0, lw)} : {pos} + {ulit(1, lw)}"),
        Update(f"{seq.fire} && {last}", part, f"{part} == {ulit(n - 1, pw)} ? {ulit(0, pw)} : {part} + {ulit(1, pw)}"),
    ]
    ys = [_assign(b, e, frac, out, _lane_tag("join", lane, lanes)) for lane, e in enumerate(exacts)]
    return _join(b, ys, out.width, "token_join")


def _slice(b: ModuleBuilder, main: own.SliceMain) -> str:
    """Stream order kept: read every element, write the ones picked on every axis (a bit mask per axis)."""
    seq = b.sequence([("read the input, writing the picked elements", main.iterations)])
    raw, dtype = _source(b, main.source, seq.loops[0].here, seq.fire, "x", main.lanes)
    i = b.odometer("i", main.in_shape, seq.fire)
    tests = []
    for d, (c, _) in enumerate(i):
        kept = main.picked(range(d, d + 1))
        if not kept.all():
            tests.append(_mask(b, f"picks{d}", kept, c))
    b.move(main.write, b.wire("keep", 1, " && ".join(tests) or "1'b1"))
    return _moved_token(b, raw, dtype, b.dtype(b.stage.head), main.lanes, "x")


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
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x", main.lanes)
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses(), main.lanes)


def _transpose(b: ModuleBuilder, main: own.TransposeMain) -> str:
    seq = b.sequence([("store a block", main.block), ("write it permuted", main.block)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x", main.lanes)
    return _gather(b, seq.fire, read, write, raw, dtype, main.write, main.block, main.addresses(), main.lanes)


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
    lanes = main.lanes
    t = main.n // lanes  # tokens per row
    seq = b.sequence([("read a row, tracking its max", t), ("exp and sum", t), ("write", t)])
    first_loop, exp_loop, write_loop = seq.loops
    raw, dtype = _source(b, main.source, first_loop.here, seq.fire, "x", lanes)
    x = b.array("row", t, lanes * dtype.width)
    e = b.array("exps", t, lanes * et.width)
    at = zext(seq.idx, seq.width, b.index(x))
    first = f"{seq.idx} == {ulit(0, seq.width)}"
    m = b.reg("top", dtype.width)
    s = b.reg("total", XW)
    if lanes > 1:  # the token's maximum joins the running one
        raw_max = _first_max(b, _split(b, raw, dtype.width, lanes, "lane_x"), dtype, positions=False)[0]
    else:
        raw_max = raw
    v, top = _exact(b, raw_max, dtype, "in"), _exact(b, m, dtype, "top")
    b.updates.append(Update(f"{seq.fire} && {first_loop.here} && ({first} || {v} > {top})", m, raw_max))
    b.stores.append(Update(f"{seq.fire} && {first_loop.here}", f"{x}[{at}]", raw))
    row = f"{x}[{at}]" if lanes == 1 else b.wire("w_row", lanes * dtype.width, f"{x}[{at}]")
    eis = []
    for lane, held in enumerate(_split(b, row, dtype.width, lanes, "lane_row")):
        tag = _lane_tag("", lane, lanes)
        xi = _exact(b, held, dtype, f"row{tag}")
        d = b.wire(f"d{tag}", XW, f"{xi} - {top}", signed=True)
        eis.append(_lookup(b, d, Fmt.of(dtype).sub(Fmt.of(dtype)), exp, f"exp{tag}"))
    b.stores.append(Update(f"{seq.fire} && {exp_loop.here}", f"{e}[{at}]", _join(b, eis, et.width, "exp_token")))
    terms = " + ".join(sext64(ei, et) for ei in eis)
    b.updates.append(Update(f"{seq.fire} && {exp_loop.here}", s, f"({first} ? {slit(0)} : {s}) + {terms}"))
    total = b.wire("sum", XW, s, signed=True)
    r = _lookup(b, total, s_fmt, recip, "recip")
    out = b.dtype(b.stage.head)
    word = f"{e}[{at}]" if lanes == 1 else b.wire("w_e", lanes * et.width, f"{e}[{at}]")
    ro = None
    ys = []
    for lane, held in enumerate(_split(b, word, et.width, lanes, "lane_e")):
        tag = _lane_tag("", lane, lanes)
        eo = _exact(b, held, et, f"e{tag}")
        ro = ro or _exact(b, r, rt, "r")
        product = b.wire(f"e_prod{tag}", XW, f"{eo} * {ro}", signed=True)
        ys.append(_assign(b, product, et.frac + rt.frac, out, f"softmax{tag}"))
    b.move(main.write, write_loop.here)
    return _join(b, ys, out.width, "token_softmax")


def _argmax(b: ModuleBuilder, main: own.ArgmaxMain) -> str:
    """Over an outer axis, the INNER running maxima (L banks, lane l in bank l); over the innermost axis with
    L > 1 lanes, ``_argmax_row``."""
    if main.inner == 1 and main.lanes > 1:
        return _argmax_row(b, main)
    lanes = main.lanes
    held = main.inner // lanes  # tokens of running maxima
    seq = b.sequence([("read a block, keeping the running maxima", main.reads), ("write their indices", held)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x", lanes)
    (k, kw), (j, jw) = b.odometer("a", (main.n, held), f"{seq.fire} && {read.here}")
    ins = _split(b, raw, dtype.width, lanes, "lane_x")
    founds = []
    for lane in range(lanes):
        tag = _lane_tag("", lane, lanes)
        best = b.array(f"best{tag}", held, dtype.width)
        where = b.array(f"where{tag}", held, kw)
        bj = zext(j, jw, b.index(best))
        v, top = _exact(b, ins[lane], dtype, f"in{tag}"), _exact(b, f"{best}[{bj}]", dtype, f"best{tag}")
        # strictly greater: the first maximum wins, as numpy's argmax
        better = b.wire(f"better{tag}", 1, f"{k} == {ulit(0, kw)} || {v} > {top}")
        b.stores += [Update(f"{seq.fire} && {read.here} && {better}", f"{best}[{bj}]", ins[lane]),
                     Update(f"{seq.fire} && {read.here} && {better}", f"{where}[{bj}]", k)]
        founds.append((where, tag))
    out = b.dtype(b.stage.head)
    ys = []
    for where, tag in founds:
        found = b.wire(f"found{tag}", kw, f"{where}[{zext(seq.idx, seq.width, b.index(where))}]")
        index = b.wire(f"index{tag}", XW, zext(found, kw, XW), signed=True)
        ys.append(_assign(b, index, 0, out, f"index{tag}"))
    b.move(main.write, write.here)
    return _join(b, ys, out.width, "token_index")


def _argmax_row(b: ModuleBuilder, main: own.ArgmaxMain) -> str:
    """Along the innermost axis over tokens of L elements: per token its first maximum (the lowest lane wins
    ties), taken when strictly greater than the running one (numpy's first maximum); one index per row."""
    lanes, t = main.lanes, main.reads
    seq = b.sequence([("read a row, keeping its first maximum", t), ("write its index", 1)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x", lanes)
    step = f"{seq.fire} && {read.here}"
    value, lane, lw = _first_max(b, _split(b, raw, dtype.width, lanes, "lane_x"), dtype)
    iw = bits_for(main.n)
    if t > 1:
        k, kw = b.counter("a", t, step)
        at = b.wire("at", iw, f"{zext(k, kw, iw)} * {ulit(lanes, iw)} + {zext(lane, lw, iw)}")
        first = f"{k} == {ulit(0, kw)}"
    else:  # a row of one token
        at, first = zext(lane, lw, iw), "1'b1"
    best = b.reg("best", dtype.width)
    where = b.reg("where", iw)
    v, top = _exact(b, value, dtype, "in"), _exact(b, best, dtype, "best")
    better = b.wire("better", 1, f"{first} || {v} > {top}")
    b.updates += [Update(f"{step} && {better}", best, value), Update(f"{step} && {better}", where, at)]
    index = b.wire("index", XW, zext(where, iw, XW), signed=True)
    b.move(main.write, write.here)
    return _assign(b, index, 0, b.dtype(b.stage.head), "index")


def _insert_one(b: ModuleBuilder, main: own.TopkMain, value: str, where: str, raw: str, dtype: FixedType,
                step: str) -> None:
    """One element per iteration: the stores that insert it into the sorted list."""
    seq = b.sequencer
    k, iw, sw = main.k, bits_for(main.n), b.index(value)
    v = _exact(b, raw, dtype, "in")
    # slot p is filled once p < i; the list is sorted descending, filled slots first. "v goes before slot p"
    # (p empty, or v strictly greater: an equal value stays ahead with its lower index) is false up to v's
    # place and true from there on, so each slot keeps its entry, takes v, or takes its predecessor's.
    before = []
    for p in range(k):
        held = _exact(b, f"{value}[{ulit(p, sw)}]", dtype, f"slot{p}")
        empty = "1'b1" if p >= main.n - 1 else f"{seq.idx} <= {ulit(p, seq.width)}"  # the last slot: empty to the end
        before.append(b.wire(f"ahead{p}", 1, f"{empty} || {v} > {held}"))
    i = zext(seq.idx, seq.width, iw)
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


def _insert(b: ModuleBuilder, values: list[str], wheres: list[str], raw: str, i: str, empties: list[str],
            dtype: FixedType, iw: int, tag: str) -> tuple[list[str], list[str]]:
    """The sorted list (``values``, ``wheres``) after inserting ``raw`` of index ``i``, as wires (``empties``:
    per slot, it is still empty). As in ``_insert_one``, slot p keeps its entry, takes raw or its predecessor's."""
    x = _exact(b, raw, dtype, f"in{tag}")
    ahead = [b.wire(f"ahead{tag}_{p}", 1, f"{empty} || {x} > {_exact(b, held, dtype, f'slot{tag}_{p}')}")
             for p, (held, empty) in enumerate(zip(values, empties))]
    new_v, new_w = [], []
    for p in range(len(values)):
        take_v, take_w = f"{ahead[p]} ? {raw} : {values[p]}", f"{ahead[p]} ? {i} : {wheres[p]}"
        if p > 0:
            take_v = f"{ahead[p - 1]} ? {values[p - 1]} : {take_v}"
            take_w = f"{ahead[p - 1]} ? {wheres[p - 1]} : {take_w}"
        new_v.append(b.wire(f"value{tag}_{p}", dtype.width, take_v))
        new_w.append(b.wire(f"where{tag}_{p}", iw, take_w))
    return new_v, new_w


def _insert_token(b: ModuleBuilder, main: own.TopkMain, value: str, where: str, raw: str, dtype: FixedType,
                  step: str) -> None:
    """L elements per iteration, inserted in lane order, each into the list the lane before left (as L
    single inserts would); the final list is stored whole."""
    seq = b.sequencer
    lanes, k, n, iw, sw = main.lanes, main.k, main.n, bits_for(main.n), b.index(value)
    values = [b.wire(f"held{p}", dtype.width, f"{value}[{ulit(p, sw)}]") for p in range(k)]
    wheres = [b.wire(f"held_where{p}", iw, f"{where}[{ulit(p, sw)}]") for p in range(k)]
    base = zext(seq.idx, seq.width, iw)
    for lane, x in enumerate(_split(b, raw, dtype.width, lanes, "lane_x")):
        # element i = idx L + lane; slot p is filled once p < i
        if n == lanes:
            i = ulit(lane, iw)
        else:
            i = b.wire(f"i{lane}", iw, f"{base} * {ulit(lanes, iw)}" + (f" + {ulit(lane, iw)}" if lane else ""))
        empties = ["1'b1" if p >= n - 1 else f"{i} <= {ulit(p, iw)}" for p in range(k)]
        values, wheres = _insert(b, values, wheres, x, i, empties, dtype, iw, str(lane))
    for p in range(k):
        b.stores += [Update(step, f"{value}[{ulit(p, sw)}]", values[p]),
                     Update(step, f"{where}[{ulit(p, sw)}]", wheres[p])]


def _topk(b: ModuleBuilder, main: own.TopkMain) -> str:
    n, k, lanes = main.n, main.k, main.lanes
    seq = b.sequence([("read a row into the sorted list", n // lanes), ("write the list", k)])
    read, write = seq.loops
    raw, dtype = _source(b, main.source, read.here, seq.fire, "x", lanes)
    iw = bits_for(n)
    value = b.array("value", k, dtype.width)
    where = b.array("where", k, iw)
    sw = b.index(value)
    step = f"{seq.fire} && {read.here}"
    if lanes == 1:
        _insert_one(b, main, value, where, raw, dtype, step)
    else:
        _insert_token(b, main, value, where, raw, dtype, step)
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

