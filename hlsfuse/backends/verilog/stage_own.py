"""Own stages in Verilog: slice, pad, concat, transpose, softmax, argmax and topk, one element per cycle.

Each op mirrors its kernel in hw/hls/hlsfuse/own.h or opaque.h and the schedule of ``lower/analytic.py``:

    pad             one cycle per output element; a position inside the input reads one element
    concat          one cycle per output element, reading the inputs one at a time in output order
    slice           steps all positive: one cycle per input element, writing the picked ones;
                    otherwise (and transpose) a gather: store the frame, then read it in output order
    softmax         per row: read and track the max, look up exp and sum, write e * recip(sum)
    argmax          per block of the outer axes: read it keeping INNER running maxima, write INNER indices
    topk            per row: read into a sorted K-slot list (parallel compare and shift), write K results

Every result is assigned once to the node's output type with ``hlsf_assign``, as the reference does.
An operand that is a graph constant is no channel but a ROM, read in row-major order by a counter
(the HLS backend copies it into a local stream the same way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ...ops.opaque import softmax_tables
from ...types import FixedType, Fmt, from_float
from ..hls.context import Context
from .mem import mem_lines
from .module import ModuleWriter, StageModule
from .sequencer import Loop, Sequencer
from .vlog import XW, assign_params, bits_for, index_width, sext64, slit, ulit, zext

__all__ = ["build"]


@dataclass(frozen=True)
class Source:
    """One operand of the node: a channel, or a constant read from its ROM by a counter."""

    channel: str | None
    data: str  # raw bits of the element on offer
    dtype: FixedType
    valid: str
    rom: str | None = None
    counter: str | None = None  # the ROM's read address


def _sources(w: ModuleWriter, node) -> list[Source]:
    """The node's operands in input order (the lowering gives one channel per streamed operand, in order)."""
    channels = list(w.stage.inputs)
    sources = []
    for k, src in enumerate(node.inputs):
        dtype = w.dtype(src)
        if src in w.graph.constant_map:
            rom = w.ctx.rom(src)
            data = w.graph.constant_map[src].data.reshape(-1)
            w.mem(rom, data, dtype.width, mem_lines(data, dtype.width))
            counter = w.reg(w.fresh(f"at_{rom}"), w.index(rom), ulit(0, w.index(rom)))
            value = w.wire(w.fresh(f"rom{k}"), dtype.width, f"{rom}[{counter}]")
            sources.append(Source(None, value, dtype, "1'b1", rom, counter))
            continue
        if not channels or w.ctx.channel(channels[0]).tensor != src:
            raise HlsfuseError(f"stage '{w.stage.name}': no channel brings input '{src}' of {node.where()} in order")
        c = channels.pop(0)
        sources.append(Source(c, f"{c}_tdata", dtype, f"{c}_tvalid"))
    if channels:
        raise HlsfuseError(f"stage '{w.stage.name}': channel '{channels[0]}' is not read by {node.where()}")
    return sources


def _taken(w: ModuleWriter, s: Source, take: str, own_ready: bool) -> None:
    """``take`` consumes the element on offer: a ROM steps its counter; ``own_ready``: drive the channel's tready."""
    if s.rom is not None:
        n, width = w.arrays[s.rom][0], w.index(s.rom)
        wrap = f"{s.counter} == {ulit(n - 1, width)} ? {ulit(0, width)} : {s.counter} + {ulit(1, width)}"
        w.seq.append(f"if ({take}) {s.counter} <= {wrap};")
    elif own_ready:
        w.decls.append(f"assign {s.channel}_tready = {take};")


def _assign(w: ModuleWriter, value: str, frac: int, out: FixedType, tag: str, in_w: int = XW,
            in_signed: bool = True) -> str:
    """``value`` (``in_w`` bits, ``frac`` fractional bits) assigned to ``out`` by one hlsf_assign."""
    name = w.fresh(f"y_{tag}")
    w.decls.append(f"wire [{out.width - 1}:0] {name};")
    w.rtl.add("hlsf_assign")
    w.decls.append(
        f"hlsf_assign {assign_params(frac, out, in_w, in_signed)} {w.fresh(f'u_{tag}')} "
        f"(.in_data({value}), .in_sticky(1'b0), .out_data({name}));"
    )
    return name


def _moved(w: ModuleWriter, raw: str, dtype: FixedType, out: FixedType, tag: str) -> str:
    """An element moved from ``dtype`` to the output type (the injective ops' ``finish``)."""
    return _assign(w, raw, dtype.frac, out, tag, dtype.width, dtype.signed)


def _exact(w: ModuleWriter, raw: str, dtype: FixedType, tag: str) -> str:
    """The raw bits of a ``dtype`` value as a signed 64-bit wire (to compare or combine exactly)."""
    if "[" in raw:  # a memory word: name it before selecting its sign bit
        raw = w.wire(w.fresh(f"w_{tag}"), dtype.width, raw)
    return w.wire(w.fresh(f"x_{tag}"), XW, sext64(raw, dtype), signed=True)


def _odometer(w: ModuleWriter, extents, fire: str, prefix: str) -> list[tuple[str, int]]:
    """Counters over ``extents`` in row-major order (the last fastest), advanced where ``fire``; wrap at the end."""
    digits = []
    for d, n in enumerate(extents):
        width = bits_for(n)
        digits.append((w.reg(w.fresh(f"{prefix}{d}"), width, ulit(0, width)), width))
    carry = "1'b1"
    lines = []
    for (sig, width), n in reversed(list(zip(digits, extents))):
        step = f"{sig} <= {sig} == {ulit(n - 1, width)} ? {ulit(0, width)} : {sig} + {ulit(1, width)};"
        lines.append(step if carry == "1'b1" else f"if ({carry}) {step}")
        at_end = f"{sig} == {ulit(n - 1, width)}"
        carry = at_end if carry == "1'b1" else f"{carry} && {at_end}"
    w.seq.append(f"if ({fire}) begin")
    w.seq.extend("    " + line for line in lines)
    w.seq.append("end")
    return digits


def _status(w: ModuleWriter, fire: str, started: list[str], sources: list[Source]) -> None:
    w.decls.append(f"assign busy = {fire};")
    waiting = " || ".join(started + [s.valid for s in sources if s.channel is not None]) or "1'b0"
    w.decls.append(f"assign stall = !busy && ({waiting});")


def _dims(shape) -> tuple[int, ...]:
    return tuple(shape) or (1,)


# --------------------------------------------------------------------------
# pad, concat, streaming slice: one loop, control written here
# --------------------------------------------------------------------------


def _pad(w: ModuleWriter, node, out_ch: str) -> None:
    """Walk the output; a position inside the input passes its next element on, any other writes the fill."""
    (src,) = _sources(w, node)
    sig = w.graph.sigs[node.name]
    out = w.dtype(node.name)
    shape = _dims(w.graph.types[node.inputs[0]].shape)
    extents = _dims(w.graph.types[node.name].shape)
    before = tuple(sig["pads"][: len(w.graph.types[node.inputs[0]].shape)]) or (0,)
    valid, fire = w.fresh("valid"), w.fresh("fire")
    w.decls.append(f"wire {valid};")
    w.decls.append(f"wire {fire} = {valid} && {out_ch}_tready;")
    o = _odometer(w, extents, fire, "o")
    tests = []
    for (c, cw), lo, n, total in zip(o, before, shape, extents):
        if lo > 0:
            tests.append(f"{c} >= {ulit(lo, cw)}")
        if lo + n < total:
            tests.append(f"{c} < {ulit(lo + n, cw)}")
    inside = w.wire(w.fresh("in_x"), 1, " && ".join(tests) or "1'b1")
    w.decls.append(f"assign {valid} = {inside} ? {src.valid} : 1'b1;")
    _taken(w, src, f"{fire} && {inside}", own_ready=True)
    # the fill: attribute 'value' in the output type, rounded and saturated as the reference does
    fill_type = FixedType(out.width, out.int_bits, out.signed, "RND", "SAT")
    fill = int(from_float(np.array(sig["value"]), fill_type)) & ((1 << out.width) - 1)
    moved = _moved(w, src.data, src.dtype, out, "x")
    w.decls.append(f"assign {out_ch}_tvalid = {valid};")
    w.decls.append(f"assign {out_ch}_tdata = {inside} ? {moved} : {ulit(fill, out.width)};")
    _status(w, fire, [f"{c} != {ulit(0, cw)}" for c, cw in o], [src])


def _concat(w: ModuleWriter, node, out_ch: str) -> None:
    """Copy a block of each input in turn (its extent on the axis times the inner axes), per outer index."""
    sources = _sources(w, node)
    out = w.dtype(node.name)
    shape = _dims(w.graph.types[node.name].shape)
    axis = w.graph.sigs[node.name]["axis"] % len(shape)
    inner = math.prod(shape[axis + 1 :])
    blocks = [w.graph.types[src].shape[axis] * inner for src in node.inputs]
    n = len(sources)
    pw, lw = bits_for(n), bits_for(max(blocks))
    part = w.reg(w.fresh("part"), pw, ulit(0, pw))  # the input being copied
    pos = w.reg(w.fresh("pos"), lw, ulit(0, lw))  # the element of its block
    at = [f"{part} == {ulit(k, pw)}" for k in range(n)]

    def select(values: list[str]) -> str:
        return " : ".join([f"{at[k]} ? {values[k]}" for k in range(n - 1)] + [values[-1]])

    valid = w.wire(w.fresh("valid"), 1, select([s.valid for s in sources]))
    fire = w.wire(w.fresh("fire"), 1, f"{valid} && {out_ch}_tready")
    for k, s in enumerate(sources):
        _taken(w, s, f"{fire} && {at[k]}", own_ready=True)
    # inputs aligned exactly to the finest of their fractional bits, then assigned once (the reference)
    frac = max(s.dtype.frac for s in sources)
    xs = []
    for s in sources:
        x = sext64(s.data, s.dtype)
        xs.append(x if s.dtype.frac == frac else f"({x} <<< {frac - s.dtype.frac})")
    exact = w.wire(w.fresh("e_join"), XW, select(xs), signed=True)
    w.decls.append(f"assign {out_ch}_tvalid = {valid};")
    w.decls.append(f"assign {out_ch}_tdata = {_assign(w, exact, frac, out, 'join')};")
    last = select([f"{pos} == {ulit(b - 1, lw)}" for b in blocks])
    w.seq.append(f"if ({fire}) begin")
    w.seq.append(f"    if ({last}) begin")
    w.seq.append(f"        {pos} <= {ulit(0, lw)};")
    w.seq.append(f"        {part} <= {part} == {ulit(n - 1, pw)} ? {ulit(0, pw)} : {part} + {ulit(1, pw)};")
    w.seq.append("    end else begin")
    w.seq.append(f"        {pos} <= {pos} + {ulit(1, lw)};")
    w.seq.append("    end")
    w.seq.append("end")
    _status(w, fire, [f"{part} != {ulit(0, pw)}", f"{pos} != {ulit(0, lw)}"], sources)


def _picked(w: ModuleWriter, node) -> list[range]:
    """The input indices a slice keeps on each axis (Python's slice semantics), unsliced axes whole."""
    shape = w.graph.types[node.inputs[0]].shape
    sig = w.graph.sigs[node.name]
    steps = sig["step"] if sig["step"] is not None else (1,) * len(sig["begin"])
    picked = [range(*slice(b, e, s).indices(n)) for b, e, s, n in zip(sig["begin"], sig["end"], steps, shape)]
    return picked + [range(n) for n in shape[len(picked) :]] or [range(1)]


def _slice_streaming(w: ModuleWriter, node, out_ch: str) -> None:
    """Read every input element, write the ones picked on every axis (a bit mask per sliced axis)."""
    (src,) = _sources(w, node)
    picked = _picked(w, node)
    fire = w.fresh("fire")
    w.decls.append(f"wire {fire};")
    shape = _dims(w.graph.types[node.inputs[0]].shape)
    i = _odometer(w, shape, fire, "i")
    tests = []
    for (c, _), n, kept in zip(i, shape, picked):
        if len(kept) == n:
            continue
        bits = "".join("1" if p in kept else "0" for p in reversed(range(n)))
        mask = w.wire(w.fresh("picks"), n, f"{n}'b{bits}")
        tests.append(f"{mask}[{c}]")
    keep = w.wire(w.fresh("keep"), 1, " && ".join(tests) or "1'b1")
    w.decls.append(f"assign {fire} = {src.valid} && (!{keep} || {out_ch}_tready);")
    _taken(w, src, fire, own_ready=True)
    w.decls.append(f"assign {out_ch}_tvalid = {src.valid} && {keep};")
    w.decls.append(f"assign {out_ch}_tdata = {_moved(w, src.data, src.dtype, w.dtype(node.name), 'x')};")
    _status(w, fire, [f"{c} != {ulit(0, cw)}" for c, cw in i], [src])


# --------------------------------------------------------------------------
# Sequenced ops: a Sequencer of loops, one iteration per cycle
# --------------------------------------------------------------------------


def _reads(s: Source) -> tuple[str, ...]:
    return (s.channel,) if s.channel is not None else ()


def _gather(w: ModuleWriter, node, out_ch: str, extents, base: int, coefs) -> None:
    """Store the frame, then write out[o] = frame[base + sum o_d * coefs[d]] in output order."""
    (src,) = _sources(w, node)
    size = w.graph.types[node.inputs[0]].size
    count = math.prod(extents)
    seq = Sequencer(w, [Loop("store the frame", size, _reads(src)), Loop("write", count, (), (out_ch,))])
    _taken(w, src, seq.fire[0], own_ready=False)
    frame = w.array(w.fresh("frame"), size, src.dtype.width)
    aw = w.index(frame)
    w.stores.append(f"if ({seq.fire[0]}) {frame}[{zext(seq.idx, seq.width, aw)}] <= {src.data};")
    o = _odometer(w, extents, seq.fire[1], "o")
    # index arithmetic modulo 2**aw: a negative step's term wraps, the sum is in range
    terms = [ulit(base, aw)] if base else []
    for (c, cw), coef in zip(o, coefs):
        if coef % (1 << aw):
            terms.append(f"{zext(c, cw, aw)} * {ulit(coef % (1 << aw), aw)}")
    addr = w.wire(w.fresh("addr"), aw, " + ".join(terms) or ulit(0, aw))
    value = w.wire(w.fresh("picked"), src.dtype.width, f"{frame}[{addr}]")
    seq.drive({out_ch: _moved(w, value, src.dtype, w.dtype(node.name), "x")})


def _strides(shape) -> tuple[int, ...]:
    return tuple(math.prod(shape[d + 1 :]) for d in range(len(shape)))


def _slice_gather(w: ModuleWriter, node, out_ch: str) -> None:
    picked = _picked(w, node)
    strides = _strides(_dims(w.graph.types[node.inputs[0]].shape))
    base = sum(r.start * s for r, s in zip(picked, strides))
    _gather(w, node, out_ch, [len(r) for r in picked], base, [r.step * s for r, s in zip(picked, strides)])


def _transpose(w: ModuleWriter, node, out_ch: str) -> None:
    shape = w.graph.types[node.inputs[0]].shape
    axes = w.graph.sigs[node.name]["axes"]
    perm = tuple(axes) if axes is not None else tuple(reversed(range(len(shape))))
    strides = _strides(shape)
    _gather(w, node, out_ch, [shape[p] for p in perm] or [1], 0, [strides[p] for p in perm] or [0])


def _lookup(w: ModuleWriter, value: str, fmt: Fmt, table, tag: str) -> str:
    """``table[(X - X_min) >> shift]`` of the exact value ``value`` (64-bit signed) of format ``fmt``."""
    entries = np.asarray(table.entries)
    out = table.out_type
    mem = w.mem(w.fresh(f"lut_{table.function}"), entries, out.width, mem_lines(entries, out.width))
    bits = fmt.width - table.shift
    raw = w.wire(w.fresh(f"raw_{tag}"), fmt.width, zext(value, XW, fmt.width))
    w.decls.append(f"wire unused_{raw} = &{{1'b0, {value}, 1'b0}};")  # the exact value's bits above the format
    if table.shift:
        w.decls.append(f"wire unused_{raw}_low = &{{1'b0, {raw}[{table.shift - 1}:0], 1'b0}};")
    top = f"~{raw}[{fmt.width - 1}]" if fmt.signed else f"{raw}[{fmt.width - 1}]"  # - X_min flips a sign bit
    index = top if bits == 1 else f"{{{top}, {raw}[{fmt.width - 2}:{table.shift}]}}"
    ix = w.wire(w.fresh(f"ix_{tag}"), index_width(len(entries)), index)
    return w.wire(w.fresh(tag), out.width, f"{mem}[{ix}]")


def _softmax(w: ModuleWriter, node, out_ch: str) -> None:
    """Per row, the reference's integer algorithm: m = max(x), e = LUT_exp(x - m), y = e * LUT_recip(sum(e))."""
    (src,) = _sources(w, node)
    sig = w.graph.sigs[node.name]
    exp, recip, s_fmt = softmax_tables(sig)
    et, rt = sig["exp_dtype"], sig["recip_dtype"]
    n = w.graph.types[node.inputs[0]].shape[-1]
    seq = Sequencer(
        w,
        [Loop("read a row, track its max", n, _reads(src)), Loop("exp and sum", n), Loop("write", n, (), (out_ch,))],
    )
    _taken(w, src, seq.fire[0], own_ready=False)
    xw = src.dtype.width
    x = w.array(w.fresh("row"), n, xw)
    e = w.array(w.fresh("exps"), n, et.width)
    at = zext(seq.idx, seq.width, w.index(x))
    first = f"{seq.idx} == {ulit(0, seq.width)}"
    m = w.reg(w.fresh("top"), xw)
    s = w.reg(w.fresh("total"), XW)
    v, top = _exact(w, src.data, src.dtype, "in"), _exact(w, m, src.dtype, "top")
    w.seq.append(f"if ({seq.fire[0]} && ({first} || {v} > {top})) {m} <= {src.data};")
    w.stores.append(f"if ({seq.fire[0]}) {x}[{at}] <= {src.data};")
    xi = _exact(w, f"{x}[{at}]", src.dtype, "row")
    d = w.wire(w.fresh("d"), XW, f"{xi} - {top}", signed=True)
    ei = _lookup(w, d, Fmt.of(src.dtype).sub(Fmt.of(src.dtype)), exp, "exp")
    w.stores.append(f"if ({seq.fire[1]}) {e}[{at}] <= {ei};")
    w.seq.append(f"if ({seq.fire[1]}) {s} <= ({first} ? {slit(0)} : {s}) + {sext64(ei, et)};")
    total = w.wire(w.fresh("sum"), XW, s, signed=True)
    r = _lookup(w, total, s_fmt, recip, "recip")
    eo, ro = _exact(w, f"{e}[{at}]", et, "e"), _exact(w, r, rt, "r")
    product = w.wire(w.fresh("e_prod"), XW, f"{eo} * {ro}", signed=True)
    seq.drive({out_ch: _assign(w, product, et.frac + rt.frac, w.dtype(node.name), "softmax")})


def _argmax(w: ModuleWriter, node, out_ch: str) -> None:
    """Per index of the outer axes: read N * INNER elements keeping INNER running maxima, write their indices."""
    (src,) = _sources(w, node)
    shape = w.graph.types[node.inputs[0]].shape
    axis = w.graph.sigs[node.name]["axis"] % len(shape)
    n, inner = shape[axis], math.prod(shape[axis + 1 :])
    seq = Sequencer(w, [Loop("read a block", n * inner, _reads(src)), Loop("write", inner, (), (out_ch,))])
    _taken(w, src, seq.fire[0], own_ready=False)
    (k, kw), (j, jw) = _odometer(w, (n, inner), seq.fire[0], "a")
    best = w.array(w.fresh("best"), inner, src.dtype.width)
    where = w.array(w.fresh("where"), inner, kw)
    bj = zext(j, jw, w.index(best))
    v, top = _exact(w, src.data, src.dtype, "in"), _exact(w, f"{best}[{bj}]", src.dtype, "best")
    # strictly greater: the first maximum wins, as numpy's argmax
    better = w.wire(w.fresh("better"), 1, f"{k} == {ulit(0, kw)} || {v} > {top}")
    w.stores.append(f"if ({seq.fire[0]} && {better}) begin")
    w.stores.append(f"    {best}[{bj}] <= {src.data};")
    w.stores.append(f"    {where}[{bj}] <= {k};")
    w.stores.append("end")
    found = w.wire(w.fresh("found"), kw, f"{where}[{zext(seq.idx, seq.width, w.index(where))}]")
    index = w.wire(w.fresh("index"), XW, zext(found, kw, XW), signed=True)
    seq.drive({out_ch: _assign(w, index, 0, w.dtype(node.name), "index")})


def _topk(w: ModuleWriter, node, out_ch: str) -> None:
    """Per row: N reads into a sorted K-slot list (parallel compare and shift), then K writes."""
    (src,) = _sources(w, node)
    sig = w.graph.sigs[node.name]
    n, k = w.graph.types[node.inputs[0]].shape[-1], sig["k"]
    seq = Sequencer(w, [Loop("read a row into the list", n, _reads(src)), Loop("write", k, (), (out_ch,))])
    _taken(w, src, seq.fire[0], own_ready=False)
    iw = bits_for(n)
    value = w.array(w.fresh("value"), k, src.dtype.width)
    where = w.array(w.fresh("where"), k, iw)
    sw = w.index(value)
    v = _exact(w, src.data, src.dtype, "in")
    # slot p is filled once p < i; the list is sorted descending, filled slots first. "v goes before slot p"
    # (p empty, or v strictly greater: an equal value stays ahead with its lower index) is false up to v's
    # place and true from there on, so each slot keeps its entry, takes v, or takes its predecessor's.
    before = []
    for p in range(k):
        held = _exact(w, f"{value}[{ulit(p, sw)}]", src.dtype, f"slot{p}")
        empty = "1'b1" if p >= n - 1 else f"{seq.idx} <= {ulit(p, seq.width)}"  # the last slot: empty until the end
        before.append(w.wire(w.fresh(f"ahead{p}"), 1, f"{empty} || {v} > {held}"))
    i = zext(seq.idx, seq.width, iw)
    for p in range(k):
        w.stores.append(f"if ({seq.fire[0]}) begin")
        if p > 0:
            w.stores.append(f"    if ({before[p - 1]}) begin")
            w.stores.append(f"        {value}[{ulit(p, sw)}] <= {value}[{ulit(p - 1, sw)}];")
            w.stores.append(f"        {where}[{ulit(p, sw)}] <= {where}[{ulit(p - 1, sw)}];")
            w.stores.append(f"    end else if ({before[p]}) begin")
        else:
            w.stores.append(f"    if ({before[p]}) begin")
        w.stores.append(f"        {value}[{ulit(p, sw)}] <= {src.data};")
        w.stores.append(f"        {where}[{ulit(p, sw)}] <= {i};")
        w.stores.append("    end")
        w.stores.append("end")
    slot = zext(seq.idx, seq.width, sw)
    out = w.dtype(node.name)
    if sig["ret"] == "indices":
        found = w.wire(w.fresh("found"), iw, f"{where}[{slot}]")
        result = _assign(w, w.wire(w.fresh("index"), XW, zext(found, iw, XW), signed=True), 0, out, "index")
    else:
        w.decls.append(f"wire unused_{where} = &{{1'b0, {where}[{ulit(0, sw)}], 1'b0}};")
        result = _moved(w, w.wire(w.fresh("found"), src.dtype.width, f"{value}[{slot}]"), src.dtype, out, "x")
    seq.drive({out_ch: result})


# --------------------------------------------------------------------------
# The stage
# --------------------------------------------------------------------------


_OPS = {
    "pad": _pad,
    "concat": _concat,
    "transpose": _transpose,
    "softmax": _softmax,
    "argmax": _argmax,
    "topk": _topk,
}


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    if stage.head is None or stage.nodes != (stage.head,) or len(stage.outputs) != 1:
        raise HlsfuseError(f"own stage '{stage.name}' must compute exactly one node into one channel")
    node = ctx.graph.node(stage.head)
    if node.op == "slice":
        steps = ctx.graph.sigs[node.name]["step"] or (1,)
        # the analytic model's split: any negative step gathers, even one that reads a single element
        generate = _slice_streaming if all(s > 0 for s in steps) else _slice_gather
    elif node.op in _OPS:
        generate = _OPS[node.op]
    else:
        raise HlsfuseError(f"{node.where()}: the Verilog backend has no own stage for op '{node.op}'")
    generate(w, node, stage.outputs[0])
    return w.build("own", f"{node.op} '{node.name}'")
