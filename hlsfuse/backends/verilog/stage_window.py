"""Window stages in Verilog: conv2d, max_pool2d or avg_pool2d, then the group's epilogue.

The schedule's push/emit loop (``lower.schedule.WindowMain``), after the setup loops, one iteration
per cycle. In each iteration of the main loop:

    emit  while the snapshot has outputs left (``emitting``): output channel co of the snapshot's
          window. conv2d: the exact dot product of the taps of co's group with w[kh][kw][ci][co];
          max_pool2d: the maximum of the taps inside the image; avg_pool2d: the exact window sum,
          hlsf_divide_const by the output pixel's count. One hlsf_assign to the head's type, the
          epilogue (its streamed inputs read once per output element), the write.
    push  the next padded position's next channel (the head channel's value at a real pixel, a zero
          at padding) into hlsf_line_buffer; a push completing a window on the stride grid captures
          it into the snapshot, and waits while the snapshot has outputs left, but for the last one.

The head and epilogue are combinational from the snapshot and the weights to the output. Position
tables (real rows, emitting columns, taps inside the image) are constant bit vectors indexed by the
counters, so the stage needs no division or modulo.
"""

from __future__ import annotations

from ...lower.plan import Stage
from ...types import Fmt
from .expr import rom
from .mem import mem_lines
from .module import Assign, ModuleBuilder, StageModule
from .phase import emit_epilogue, fold_sum, push_emit, setup, setup_loops
from .vlog import XW, assign_params, bits_for, index_width, sext64, ulit, zext

__all__ = ["build", "quotient"]


def _table(b: ModuleBuilder, name: str, bits, index: str) -> str:
    """``bits[index]``: a constant when every bit is equal, else a bit of a constant vector."""
    bits = list(bits)
    if all(bits) or not any(bits):
        return "1'b1" if bits[0] else "1'b0"
    n = len(bits)
    pattern = "".join("1" if v else "0" for v in reversed(bits))
    vector = b.wire(name, n, f"{n}'b{pattern}")
    return f"{vector}[{index}]"


def _and(*terms: str) -> str:
    real = [t for t in terms if t != "1'b1"]
    if "1'b0" in real:
        return "1'b0"
    return " && ".join(real) or "1'b1"


def quotient(b: ModuleBuilder, num: str, fmt: Fmt, frac: int, divisors: list[int], sel: str, out, name: str) -> str:
    """The exact ``num`` (``fmt``, ``frac`` fractional bits) divided by ``divisors[sel]``, rounded once to ``out``
    (hlsf_divide_const, then hlsf_assign with the inexact flag as the sticky bit: types.assign_quotient)."""
    shift = out.frac - frac + 1
    quot_w = fmt.width + 1 + max(shift, 0)
    div_w = max(divisors).bit_length()
    packed = sum(d << (i * div_w) for i, d in enumerate(divisors))
    quot, inexact = b.net("quot", quot_w), b.net("inexact", 1)
    b.instance(
        "hlsf_divide_const",
        (("NUM_W", str(fmt.width)), ("NUM_SIGNED", str(int(fmt.signed))), ("SHIFT", str(shift)),
         ("NDIV", str(len(divisors))), ("DIV_W", str(div_w)), ("DIVISORS", f"{len(divisors) * div_w}'h{packed:x}")),
        "u_div", (("num", num), ("sel", sel), ("quot", quot), ("inexact", inexact)),
    )
    result = b.net(name, out.width)
    b.instance("hlsf_assign", assign_params(out.frac + 1, out, in_w=quot_w), "u_head",
               (("in_data", quot), ("in_sticky", inexact), ("out_data", result)))
    return result


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    g = main.geometry
    node = b.graph.node(stage.head)
    x_type, head_type = b.dtype(node.inputs[0]), b.dtype(stage.head)
    seq = b.sequence([*setup_loops(schedule), ("push and emit", main.iterations)])
    arrays = setup(b, schedule, seq)
    here = seq.loops[-1].here
    fire = f"{seq.fire} && {here}"

    # the push side: position counters, the table lookups, the line buffer
    extents = ([g.images] if g.images > 1 else []) + [g.hp, g.wp, g.c]

    def completes(position):
        (r, _), (q, _), (c, cw) = position[-3:]
        return _and(f"{c} == {ulit(g.c - 1, cw)}", _table(b, "emit_rows", g.emit_rows(), r),
                    _table(b, "emit_cols", g.emit_cols(), q))

    loop = push_emit(b, fire, seq.loops[-1].last, main.out_channels, extents, completes, main.folds)
    push, emitting, (co, cow), co_last = loop.push, loop.emitting, loop.index, loop.last_emit
    writes = emitting if loop.fold is None else f"{emitting} && {loop.writes}"  # an output is written
    (r, rw), (q, qw), _ = loop.position[-3:]
    real = b.wire("real", 1, _and(_table(b, "real_rows", g.real_rows(), r), _table(b, "real_cols", g.real_cols(), q)))
    b.move(main.read, f"{here} && {push} && {real}")
    width = x_type.width
    value = b.wire("px", width, f"{real} ? {main.read}_tdata : {ulit(0, width)}")
    taps = g.taps * g.c
    snapshot = b.net("snapshot", taps * width)
    b.instance(
        "hlsf_line_buffer",
        (("WIDTH", str(width)), ("C", str(g.c)), ("WP", str(g.wp)), ("KH", str(g.kh)), ("KW", str(g.kw)),
         ("DH", str(g.dh)), ("DW", str(g.dw))),
        "u_lb",
        (("ap_clk", "ap_clk"), ("ap_rst_n", "ap_rst_n"), ("push", f"{fire} && {push}"), ("capture", loop.completes),
         ("in_data", value), ("snapshot", snapshot)),
    )
    tap_bits = index_width(taps)
    words = b.net_array("taps", width, taps)  # the snapshot's elements
    for t in range(taps):
        b.decls.append(Assign(f"{words}[{t}]", f"{snapshot}[{t * width + width - 1}:{t * width}]"))

    def tap(t: int, offset: tuple[str, int] | None, tag: str) -> str:
        """Snapshot element t (plus ``offset``) as a wire."""
        ix = ulit(t, tap_bits)
        if offset is not None:
            ix = f"{ix} + {zext(offset[0], offset[1], tap_bits)}"
        return b.wire(f"tap_{tag}", width, f"{words}[{b.wire(f'ix_{tag}', tap_bits, ix)}]")

    # the snapshot's output pixel, for the pools' position tables
    padded = any(not all(g.tap_rows(k)) for k in range(g.kh)) or any(not all(g.tap_cols(k)) for k in range(g.kw))
    pixel = None
    if main.counts or (main.op == "max_pool2d" and padded):
        pixel = b.odometer("out", [g.oh, g.ow], f"{fire} && {emitting} && {co_last}")

    head = stage.head
    if main.op == "conv2d":
        result = _conv(b, main, arrays, fire, emitting, loop, tap, x_type, head_type)
    elif main.op == "max_pool2d":
        result = _max_pool(b, g, pixel, co, cow, tap, x_type, head_type)
    else:
        result = _avg_pool(b, main, pixel, co, cow, tap, x_type, head_type)
    out = emit_epilogue(b, main, head, result, arrays, here, fire, writes)
    return b.build(f"{main.op} '{head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out), state)


def _conv(b, main, arrays, fire, emitting, loop, tap, x_type, head_type) -> str:
    """Output channel co's products of this fold: lane s computes product j = main.product(fold, s), tap
    j // CG and input channel j % CG of co's group, added to the partial sum of the earlier folds."""
    g = main.geometry
    (co, cow), fold = loop.index, loop.fold
    wt = main.weights
    w_type = b.dtype(wt)
    cg, cout = main.channels_per_group, main.out_channels
    if wt in b.graph.constant_map:
        weights = rom(b, wt)
    else:
        weights = arrays[wt]
    offset = None
    if main.groups > 1:
        # co's group: advances every Cout/groups output channels; its first input channel is group * Cin/groups
        step = f"{fire} && {emitting}" + ("" if fold is None else f" && {loop.writes}")
        gco, gw = b.counter("gco", cout // main.groups, step)
        grp, pw = b.counter("grp", main.groups, f"{step} && {gco} == {ulit(cout // main.groups - 1, gw)}")
        bw = bits_for(g.c)
        offset = (b.wire("gbase", bw, f"{zext(grp, pw, bw)} * {ulit(cg, bw)}"), bw)
    wi = b.index(weights)
    terms = []
    for t in range(main.simd):
        if fold is None:
            k, ci = divmod(t, cg)
            x = tap(k * g.c + ci, offset, f"{t}")
            wix = f"{ulit(t * cout, wi)} + {zext(co, cow, wi)}"
        else:
            # lane t reads snapshot element (j // CG) * C + j % CG and weight j * COUT + co, j = t * FOLDS + fold
            js = [main.product(f, t) for f in range(main.folds)]
            tb = index_width(g.taps * g.c)
            table = b.rom(f"lane{t}", main.folds, tb, mem_lines([(j // cg) * g.c + j % cg for j in js], tb))
            at = f"{table}[{fold[0]}]"
            if offset is not None:
                at += f" + {zext(offset[0], offset[1], tb)}"
            x = tap(0, (b.wire(f"at_{t}", tb, at), tb), f"{t}")
            wix = b.wire(f"wix_{t}", wi, f"{ulit(js[0] * cout, wi)} + {zext(fold[0], fold[1], wi)} * "
                         f"{ulit(cout % (1 << wi), wi)} + {zext(co, cow, wi)}")
        wraw = b.wire(f"wt_{t}", w_type.width, f"{weights}[{wix}]")
        xa = b.wire(f"xa_{t}", XW, sext64(x, x_type), signed=True)
        wb = b.wire(f"wb_{t}", XW, sext64(wraw, w_type), signed=True)
        terms.append(b.wire(f"pr_{t}", XW, f"{xa} * {wb}", signed=True))
    acc = fold_sum(b, terms, fire, emitting, loop, "acc")
    b.comment("conv2d: the exact dot product, assigned once to the head's type")
    result = b.net("v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), "u_head",
               (("in_data", acc), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def _max_pool(b, g, pixel, co, cow, tap, x_type, head_type) -> str:
    oy, ox = pixel if pixel is not None else (("", 1), ("", 1))  # without padding every tap is real
    rows = [_table(b, f"tap_row{kh}", g.tap_rows(kh), oy[0]) for kh in range(g.kh)]
    cols = [_table(b, f"tap_col{kw}", g.tap_cols(kw), ox[0]) for kw in range(g.kw)]
    best, found = None, None
    for kh, row_ok in enumerate(rows):
        for kw, col_ok in enumerate(cols):
            t = kh * g.kw + kw
            x = tap(t * g.c, (co, cow), f"{t}")
            xv = b.wire(f"xv_{t}", XW, sext64(x, x_type), signed=True)
            real = b.wire(f"in_{t}", 1, _and(row_ok, col_ok))
            if best is None:
                # the first tap seeds the maximum; later real taps replace it when none was found yet or greater
                best, found = b.wire(f"best_{t}", XW, xv, signed=True), b.wire(f"found_{t}", 1, real)
                continue
            take = f"{real} && (!{found} || {xv} > {best})"
            best = b.wire(f"best_{t}", XW, f"({take}) ? {xv} : {best}", signed=True)
            found = b.wire(f"found_{t}", 1, f"{found} || {real}")
    b.unused(found)
    result = b.net("v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac, head_type), "u_head",
               (("in_data", best), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def _avg_pool(b, main, pixel, co, cow, tap, x_type, head_type) -> str:
    g = main.geometry
    terms = [b.wire(f"xv_{t}", XW, sext64(tap(t * g.c, (co, cow), f"{t}"), x_type), signed=True)
             for t in range(g.taps)]
    total = b.wire("total", XW, " + ".join(terms), signed=True)
    fmt = main.accumulator
    num = total
    if fmt.width < XW:
        num = b.wire("num", fmt.width, f"{total}[{fmt.width - 1}:0]")
        b.unused(f"{total}[{XW - 1}:{fmt.width}]")
    if main.divisor is not None:
        divisors, sel = [main.divisor], "1'b0"
    else:
        flat = [v for row in main.counts for v in row]
        divisors = sorted(set(flat))
        (oy, ow_), (ox, xw) = pixel
        pixels = len(flat)
        pw = index_width(pixels)
        sw = index_width(len(divisors))
        picks = [divisors.index(v) for v in flat]
        table = b.rom("count_sel", pixels, sw, mem_lines(picks, sw))
        at = b.wire("pix", pw, f"{zext(oy, ow_, pw)} * {ulit(g.ow % (1 << pw), pw)} + {zext(ox, xw, pw)}")
        sel = b.wire("sel", sw, f"{table}[{at}]")
    return quotient(b, num, fmt, x_type.frac, divisors, sel, head_type, "v_head")
