"""Own stages in Verilog that compute (``lower.stage_own``): softmax, argmax, topk, layer_norm and rms_norm;
``stage_own`` builds the stage around them.

    softmax   per row: read it tracking the max, exp and sum, write e * recip(sum); masked_softmax reads its
              mask from a ROM (a token of L bits per word, row r of the tensor at mask row r mod R): a position
              left out enters the max as the input type's minimum and gets e = 0
    layer_norm, rms_norm   per row: read it summing x and x^2, write (N x - S1) R 2^-(24+e) (hlsf_rsqrt of V, its
              table a ROM of the stage) assigned to norm_dtype, times gamma plus beta (ROMs) assigned to the output
    argmax    per outer index: read N * INNER elements keeping INNER running maxima, write INNER
    topk      per row: read into a sorted K-slot list (parallel compare and shift), write K results

With lanes (``main.lanes_in`` L > 1) they handle a token per iteration:

    softmax   the row and its exponentials kept as tokens; the max over the token's lanes (a tree) joins
              the running max, the lanes' exponentials are summed in one update; L products per write
    norms     the row kept as tokens; the lanes' x and x^2 summed in one update; one rsqrt per iteration, L
              normalised elements per write, gamma and beta read L at a time
    argmax    over an outer axis: the running maxima in L banks, lane l updating bank l; over the
              innermost axis: the token's first maximum (a tree, the lower lane winning ties) against the
              running one, its index k L + lane
    topk      the token's lanes inserted in lane order, each into the list the previous lane left (a
              cascade of L inserts in one cycle); the final list stored whole
"""

from __future__ import annotations

import numpy as np

from ...lower import own_opaque
from ...lower.area import memory_area
from ...ops.norm import RSQRT_FRAC, RSQRT_INDEX_BITS, norm_of, rsqrt_table
from ...ops.opaque import exp_window, softmax_tables
from ...types import FixedType, Fmt
from .decls import Update
from .module import ModuleBuilder
from .own_tokens import assign, exact, first_max, join, lane_tag, moved, source, split
from .vlog import XW, assign_params, bits_for, index_width, sext64, slit, ulit, zext

__all__ = ["OPS"]


def _lookup(b: ModuleBuilder, value: str, fmt: Fmt, table, tag: str, ahead: str | None = None, style: str = "") -> str:
    """``table[(X - X_min) >> shift]`` of the exact value ``value`` (64-bit signed) of format ``fmt``; with
    ``ahead`` (the condition of a firing iteration), ``value`` is the next iteration's and the index a register
    loaded when this one fires: a block RAM's synchronous read, returning the entry of the iteration running."""
    entries = np.asarray(table.entries)
    out = table.out_type
    mem = b.rom(f"lut_{table.function}", entries, out.width, style=style)
    bits = fmt.width - table.shift
    raw = b.wire(f"raw_{tag}", fmt.width, zext(value, XW, fmt.width))
    b.unused(value)  # the exact value's bits above the format
    if table.shift:
        b.unused(f"{raw}[{table.shift - 1}:0]")
    top = f"~{raw}[{fmt.width - 1}]" if fmt.signed else f"{raw}[{fmt.width - 1}]"  # - X_min flips a sign bit
    index = top if bits == 1 else f"{{{top}, {raw}[{fmt.width - 2}:{table.shift}]}}"
    if ahead is None:
        ix = b.wire(f"ix_{tag}", index_width(len(entries)), index)
    else:
        ix = b.reg(f"ix_{tag}", index_width(len(entries)))
        b.updates.append(Update(ahead, ix, index))
    return b.wire(tag, out.width, f"{mem}[{ix}]")


def _softmax(b: ModuleBuilder, main: own_opaque.SoftmaxMain) -> str:
    """Per row, the reference's integer algorithm: m = max(x), e = LUT_exp(x - m), y = e * LUT_recip(sum(e))."""
    sig = b.graph.sigs[b.stage.head]
    exp, recip, s_fmt = softmax_tables(sig)
    window = exp_window(sig)
    et, rt = sig["exp_dtype"], sig["recip_dtype"]
    lanes = main.lanes_in
    t = main.n // lanes  # tokens per row
    seq = b.sequence(main.loops)
    first_loop, exp_loop, write_loop = seq.loops
    raw, dtype = source(b, main.source, first_loop.here, seq.fire, "x", lanes)
    x = b.array("row", t, lanes * dtype.width)
    e = b.array("exps", t, lanes * et.width)
    at = zext(seq.idx, seq.width, b.index(x))
    first = f"{seq.idx} == {ulit(0, seq.width)}"
    m = b.reg("top", dtype.width)
    s = b.reg("total", XW)
    left_out = _mask_bits(b, main, write_loop)
    ins = split(b, raw, dtype.width, lanes, "lane_x")
    if left_out is not None:  # a position left out enters the max as the type's minimum
        lowest = ulit(1 << (dtype.width - 1) if dtype.signed else 0, dtype.width)
        ins = [b.wire(f"kept_x{lane_tag('', k, lanes)}", dtype.width, f"{left_out[k]} ? {lowest} : {v}")
               for k, v in enumerate(ins)]
    if lanes > 1:  # the token's maximum joins the running one
        raw_max = first_max(b, ins, dtype, positions=False)[0]
    else:
        raw_max = ins[0]
    v, top = exact(b, raw_max, dtype, "in"), exact(b, m, dtype, "top")
    b.updates.append(Update(f"{seq.fire} && {first_loop.here} && ({first} || {v} > {top})", m, raw_max))
    b.stores.append(Update(f"{seq.fire} && {first_loop.here}", f"{x}[{at}]", raw))
    # the exp table is a block RAM (the resource model's binding, and the C++'s): its index is a register loaded
    # with the next exp iteration's when one fires (the first's in the read loop's last, with the max and the
    # row element that iteration writes), so the entry of the iteration running is read synchronously
    nxt = b.wire("idx_ahead", seq.width, f"{exp_loop.here} ? {seq.idx} + {ulit(1, seq.width)} : {ulit(0, seq.width)}")
    top_next = exact(b, b.wire("top_ahead", dtype.width, f"{first_loop.here} && ({first} || {v} > {top}) ? "
                                                          f"{raw_max} : {m}"), dtype, "top_ahead")
    word_next = f"{x}[{zext(nxt, seq.width, b.index(x))}]"
    if t == 1:  # the read loop's only iteration writes the element the exp loop's first reads
        word_next = f"{first_loop.here} ? {raw} : {word_next}"
    row = b.wire("w_row", lanes * dtype.width, word_next)
    eis = []
    for lane, held in enumerate(split(b, row, dtype.width, lanes, "lane_row")):
        tag = lane_tag("", lane, lanes)
        xi = exact(b, held, dtype, f"row{tag}")
        d = b.wire(f"d{tag}", XW, f"{xi} - {top_next}", signed=True)
        if window is not None:  # exp_int_bits: d saturates at the window's minimum
            floor = slit(-(1 << (window.width - 1)))
            d = b.wire(f"dw{tag}", XW, f"{d} < {floor} ? {floor} : {d}", signed=True)
        ei = _lookup(b, d, window or Fmt.of(dtype).sub(Fmt.of(dtype)), exp, f"exp{tag}", ahead=seq.fire,
                     style="block" if memory_area(1, len(exp.entries), et.width).bram18 else "distributed")
        if left_out is not None:
            ei = b.wire(f"kept_exp{tag}", et.width, f"{left_out[lane]} ? {ulit(0, et.width)} : {ei}")
        eis.append(ei)
    b.stores.append(Update(f"{seq.fire} && {exp_loop.here}", f"{e}[{at}]", join(b, eis, et.width, "exp_token")))
    terms = " + ".join(sext64(ei, et) for ei in eis)
    b.updates.append(Update(f"{seq.fire} && {exp_loop.here}", s, f"({first} ? {slit(0)} : {s}) + {terms}"))
    total = b.wire("sum", XW, s, signed=True)
    r = _lookup(b, total, s_fmt, recip, "recip",  # read at the sum's register
                style="block" if memory_area(1, len(recip.entries), rt.width).bram18 else "distributed")
    out = b.dtype(b.stage.head)
    word = f"{e}[{at}]" if lanes == 1 else b.wire("w_e", lanes * et.width, f"{e}[{at}]")
    ro = None
    ys = []
    for lane, held in enumerate(split(b, word, et.width, lanes, "lane_e")):
        tag = lane_tag("", lane, lanes)
        eo = exact(b, held, et, f"e{tag}")
        ro = ro or exact(b, r, rt, "r")
        product = b.wire(f"e_prod{tag}", XW, f"{eo} * {ro}", signed=True)
        ys.append(assign(b, product, et.frac + rt.frac, out, f"softmax{tag}"))
    b.move(main.write, write_loop.here)
    return join(b, ys, out.width, "token_softmax")


def _mask_bits(b: ModuleBuilder, main: own_opaque.SoftmaxMain, write_loop) -> list[str] | None:
    """Per lane, the mask bit of the position the read and exp loops are at (None: no mask). The mask's ROM holds
    a token of L bits per word, R x N / L words; mask row r mod R is a counter advanced at each row's end."""
    if main.mask is None:
        return None
    seq, lanes, t = b.sequencer, main.lanes_in, main.n // main.lanes_in
    bits = np.asarray(b.graph.constant_map[main.mask].data).reshape(-1) != 0
    rom = b.rom(b.rom_of(main.mask), bits.astype(np.int64), 1, lanes)
    aw = b.index(rom)
    word = zext(seq.idx, seq.width, aw)
    if main.mask_rows > 1:  # R x T words: R >= 2 rows of T, so T fits the address
        row, rw = b.counter("mask_row", main.mask_rows, f"{seq.fire} && {write_loop.here} && {write_loop.last}")
        word = f"{zext(row, rw, aw)} * {ulit(t, aw)} + {word}"
    at = b.wire("mask_at", aw, word)
    return split(b, b.wire("mask_token", lanes, f"{rom}[{at}]"), 1, lanes, "left_out")
def _scaled(b: ModuleBuilder, p: str, e: str, frac: int, t: FixedType, tag: str) -> str:
    """``p`` (a signed 64-bit exact value) times 2^-(frac + e) (``e``: a 5-bit exponent) assigned to ``t``: brought
    to t's fractional bits plus one, floored, with the dropped bits as hlsf_assign's sticky bit (norm.h's
    assign_scaled). The shift is sh = e + c, c = frac - F_t - 1: right by sh when sh >= 0, else left by -sh."""
    c = frac - t.frac - 1
    ones = f"{XW}'h{(1 << XW) - 1:x}"
    if c >= 0:  # always to the right
        amount = b.wire(f"sh_{tag}", 8, f"{zext(e, 5, 8)} + {ulit(c, 8)}")
        q2 = b.wire(f"q2_{tag}", XW, f"{p} >>> {amount}", signed=True)
        sticky = b.wire(f"sticky_{tag}", 1, f"({p} & ~({ones} << {amount})) != {ulit(0, XW)}")
    elif c + 31 < 0:  # always to the left (exact)
        amount = b.wire(f"sh_{tag}", 8, f"{ulit(-c, 8)} - {zext(e, 5, 8)}")
        q2, sticky = b.wire(f"q2_{tag}", XW, f"{p} <<< {amount}", signed=True), "1'b0"
    else:
        left = b.wire(f"left_{tag}", 1, f"{e} < {ulit(-c, 5)}")
        right_by = b.wire(f"right_by_{tag}", 8, f"{zext(e, 5, 8)} - {ulit(-c, 8)}")
        left_by = b.wire(f"left_by_{tag}", 8, f"{ulit(-c, 8)} - {zext(e, 5, 8)}")
        q2 = b.wire(f"q2_{tag}", XW, f"{left} ? ({p} <<< {left_by}) : ({p} >>> {right_by})", signed=True)
        sticky = b.wire(f"sticky_{tag}", 1, f"!{left} && ({p} & ~({ones} << {right_by})) != {ulit(0, XW)}")
    name = b.net(f"y_{tag}", t.width)
    b.instance("hlsf_assign", assign_params(t.frac + 1, t), f"u_{tag}",
               (("in_data", q2), ("in_sticky", sticky), ("out_data", name)))
    return name


def _norm(b: ModuleBuilder, main: own_opaque.NormMain) -> str:
    """Per row, the reference's integer algorithm: S1 = sum x, S2 = sum x^2 while storing the row; then per element
    n = (N x - S1) R 2^-(24 + e) (R, e: hlsf_rsqrt of V = N S2 - S1^2 + E) assigned to norm_dtype, y = n gamma +
    beta."""
    sig = b.graph.sigs[b.stage.head]
    norm, nt = norm_of(sig), sig["norm_dtype"]
    lanes = main.lanes_in
    seq = b.sequence(main.loops)
    read_loop, write_loop = seq.loops
    raw, dtype = source(b, main.source, read_loop.here, seq.fire, "x", lanes)
    x = b.array("row", main.n // lanes, lanes * dtype.width)
    at = zext(seq.idx, seq.width, b.index(x))
    first = f"{seq.idx} == {ulit(0, seq.width)}"
    reading = f"{seq.fire} && {read_loop.here}"
    b.stores.append(Update(reading, f"{x}[{at}]", raw))
    xs = [exact(b, v, dtype, f"in{lane_tag('', lane, lanes)}") for lane, v in enumerate(split(b, raw, dtype.width,
                                                                                            lanes, "lane_x"))]
    squares = [b.wire(f"square{lane_tag('', lane, lanes)}", XW, f"{v} * {v}", signed=True) for lane, v in
               enumerate(xs)]
    s2 = b.reg("sum2", XW)
    b.updates.append(Update(reading, s2, f"({first} ? {slit(0)} : {s2}) + {' + '.join(squares)}"))
    total2 = b.wire("s2", XW, s2, signed=True)
    if norm.rms:
        total1 = None
        v = b.wire("v", XW, f"{slit(norm.n)} * {total2} + {slit(norm.epsilon_term)}", signed=True)
    else:
        s1 = b.reg("sum1", XW)
        b.updates.append(Update(reading, s1, f"({first} ? {slit(0)} : {s1}) + {' + '.join(xs)}"))
        total1 = b.wire("s1", XW, s1, signed=True)
        v = b.wire("v", XW, f"{slit(norm.n)} * {total2} - {total1} * {total1} + {slit(norm.epsilon_term)}",
                   signed=True)
    bits = norm.v_bits
    b.unused(f"{v}[{XW - 1}:{bits}]")  # V < 2^bits
    index, r, e = b.net("rsqrt_index", RSQRT_INDEX_BITS), b.net("rsqrt_r", RSQRT_FRAC + 1), b.net("rsqrt_e", 5)
    table = rsqrt_table()
    rom = b.rom("lut_rsqrt", table.entries, table.out_type.width)
    entry = b.wire("rsqrt_entry", table.out_type.width, f"{rom}[{index}]")
    b.instance("hlsf_rsqrt", (("V_W", str(bits)),), "u_rsqrt",
               (("v", f"{v}[{bits - 1}:0]"), ("index", index), ("entry", entry), ("r", r), ("e", e)))
    r64 = b.wire("r64", XW, zext(r, RSQRT_FRAC + 1, XW), signed=True)
    gamma, gt = source(b, main.gamma, write_loop.here, seq.fire, "gamma", lanes)
    gammas = split(b, gamma, gt.width, lanes, "lane_gamma")
    if main.beta is not None:
        beta, bt = source(b, main.beta, write_loop.here, seq.fire, "beta", lanes)
        betas = split(b, beta, bt.width, lanes, "lane_beta")
    word = f"{x}[{at}]" if lanes == 1 else b.wire("w_row", lanes * dtype.width, f"{x}[{at}]")
    out = b.dtype(b.stage.head)
    product_frac = nt.frac + gt.frac
    frac = product_frac if main.beta is None else max(product_frac, bt.frac)
    ys = []
    for lane, held in enumerate(split(b, word, dtype.width, lanes, "lane_row")):
        tag = lane_tag("", lane, lanes)
        xi = exact(b, held, dtype, f"row{tag}")
        dev = f"{slit(norm.n)} * {xi}" + ("" if total1 is None else f" - {total1}")
        p = b.wire(f"p{tag}", XW, f"({dev}) * {r64}", signed=True)
        n = exact(b, _scaled(b, p, e, RSQRT_FRAC, nt, f"norm{tag}"), nt, f"n{tag}")
        g = exact(b, gammas[lane], gt, f"g{tag}")
        terms = [f"{n} * {g}" if frac == product_frac else f"(({n} * {g}) <<< {frac - product_frac})"]
        if main.beta is not None:
            bi = exact(b, betas[lane], bt, f"b{tag}")
            terms.append(bi if frac == bt.frac else f"({bi} <<< {frac - bt.frac})")
        y = b.wire(f"exact{tag}", XW, " + ".join(terms), signed=True)
        ys.append(assign(b, y, frac, out, f"norm_out{tag}"))
    b.move(main.write, write_loop.here)
    return join(b, ys, out.width, "token_norm")


def _argmax(b: ModuleBuilder, main: own_opaque.ArgmaxMain) -> str:
    """Over an outer axis, the INNER running maxima (L banks, lane l in bank l); over the innermost axis with
    L > 1 lanes, ``_argmax_row``."""
    if main.inner == 1 and main.lanes_in > 1:
        return _argmax_row(b, main)
    lanes = main.lanes_in
    held = main.inner // lanes  # tokens of running maxima
    seq = b.sequence(main.loops)
    read, write = seq.loops
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", lanes)
    (k, kw), (j, jw) = b.odometer("a", (main.n, held), f"{seq.fire} && {read.here}")
    ins = split(b, raw, dtype.width, lanes, "lane_x")
    founds = []
    for lane in range(lanes):
        tag = lane_tag("", lane, lanes)
        best = b.array(f"best{tag}", held, dtype.width)
        where = b.array(f"where{tag}", held, kw)
        bj = zext(j, jw, b.index(best))
        v, top = exact(b, ins[lane], dtype, f"in{tag}"), exact(b, f"{best}[{bj}]", dtype, f"best{tag}")
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
        ys.append(assign(b, index, 0, out, f"index{tag}"))
    b.move(main.write, write.here)
    return join(b, ys, out.width, "token_index")


def _argmax_row(b: ModuleBuilder, main: own_opaque.ArgmaxMain) -> str:
    """Along the innermost axis over tokens of L elements: per token its first maximum (the lowest lane wins
    ties), taken when strictly greater than the running one (numpy's first maximum); one index per row."""
    lanes, t = main.lanes_in, main.reads
    seq = b.sequence(main.loops)
    read, write = seq.loops
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", lanes)
    step = f"{seq.fire} && {read.here}"
    value, lane, lw = first_max(b, split(b, raw, dtype.width, lanes, "lane_x"), dtype)
    iw = bits_for(main.n)
    if t > 1:
        k, kw = b.counter("a", t, step)
        at = b.wire("at", iw, f"{zext(k, kw, iw)} * {ulit(lanes, iw)} + {zext(lane, lw, iw)}")
        first = f"{k} == {ulit(0, kw)}"
    else:  # a row of one token
        at, first = zext(lane, lw, iw), "1'b1"
    best = b.reg("best", dtype.width)
    where = b.reg("where", iw)
    v, top = exact(b, value, dtype, "in"), exact(b, best, dtype, "best")
    better = b.wire("better", 1, f"{first} || {v} > {top}")
    b.updates += [Update(f"{step} && {better}", best, value), Update(f"{step} && {better}", where, at)]
    index = b.wire("index", XW, zext(where, iw, XW), signed=True)
    b.move(main.write, write.here)
    return assign(b, index, 0, b.dtype(b.stage.head), "index")


def _insert_one(b: ModuleBuilder, main: own_opaque.TopkMain, value: str, where: str, raw: str, dtype: FixedType,
                step: str) -> None:
    """One element per iteration: the stores that insert it into the sorted list."""
    seq = b.sequencer
    k, iw, sw = main.k, bits_for(main.n), b.index(value)
    v = exact(b, raw, dtype, "in")
    # slot p is filled once p < i; the list is sorted descending, filled slots first. "v goes before slot p"
    # (p empty, or v strictly greater: an equal value stays ahead with its lower index) is false up to v's
    # place and true from there on, so each slot keeps its entry, takes v, or takes its predecessor's.
    before = []
    for p in range(k):
        held = exact(b, f"{value}[{ulit(p, sw)}]", dtype, f"slot{p}")
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
    x = exact(b, raw, dtype, f"in{tag}")
    ahead = [b.wire(f"ahead{tag}_{p}", 1, f"{empty} || {x} > {exact(b, held, dtype, f'slot{tag}_{p}')}")
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


def _insert_token(b: ModuleBuilder, main: own_opaque.TopkMain, value: str, where: str, raw: str, dtype: FixedType,
                  step: str) -> None:
    """L elements per iteration, inserted in lane order, each into the list the lane before left (as L
    single inserts would); the final list is stored whole."""
    seq = b.sequencer
    lanes, k, n, iw, sw = main.lanes_in, main.k, main.n, bits_for(main.n), b.index(value)
    values = [b.wire(f"held{p}", dtype.width, f"{value}[{ulit(p, sw)}]") for p in range(k)]
    wheres = [b.wire(f"held_where{p}", iw, f"{where}[{ulit(p, sw)}]") for p in range(k)]
    base = zext(seq.idx, seq.width, iw)
    for lane, x in enumerate(split(b, raw, dtype.width, lanes, "lane_x")):
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


def _topk(b: ModuleBuilder, main: own_opaque.TopkMain) -> str:
    n, k, lanes = main.n, main.k, main.lanes_in
    seq = b.sequence(main.loops)
    read, write = seq.loops
    raw, dtype = source(b, main.source, read.here, seq.fire, "x", lanes)
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
        return assign(b, b.wire("index", XW, zext(found, iw, XW), signed=True), 0, out, "index")
    b.unused(f"{where}[{ulit(0, sw)}]")
    return moved(b, b.wire("found", dtype.width, f"{value}[{at}]"), dtype, out, "x")


OPS = {
    own_opaque.SoftmaxMain: _softmax,
    own_opaque.NormMain: _norm,
    own_opaque.ArgmaxMain: _argmax,
    own_opaque.TopkMain: _topk,
}
