"""Window stages in Verilog: conv2d, max_pool2d or avg_pool2d, then the group's epilogue.

The schedule's push/emit loop (``lower.stage_window.WindowMain``), after the setup loops, one iteration
per cycle. In each iteration of the main loop:

    emit  while the snapshot has outputs left (``emitting``): output channel co of the snapshot's
          window. conv2d: the exact dot product of the taps of co's group with w[kh][kw][ci][co];
          max_pool2d: the maximum of the taps inside the image; avg_pool2d: the exact window sum,
          hlsf_divide_const by the output pixel's count. One hlsf_assign to the head's type, the
          epilogue (its streamed inputs read once per output element), the write.
    push  the next padded position's next channel (the head channel's value at a real pixel, a zero
          at padding) into hlsf_line_buffer; a push completing a window on the stride grid captures
          it into the snapshot, and waits while the snapshot has outputs left, but for the last one.
          With Q > 1 snapshots (``WindowMain.snapshots``) the line buffer keeps a ring of them: the push
          captures into the next free slot and waits only while all Q hold outputs, but for the oldest's last.

A stage of input lanes L pushes one token of L channels per push (a line buffer L x W bits wide,
whose snapshot is bit for bit the one of single elements); a stage of PE P emits P output channels
per emit, one copy of the head's logic (and of the epilogue) per lane, written as one token.

The head and epilogue are combinational from the snapshot and the weights to the output. Position
tables (real rows, emitting columns, taps inside the image) are constant bit vectors indexed by the
counters, so the stage needs no division or modulo.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...lower.area import buffer_area
from ...lower.plan import Stage
from ...lower.products import product_kind
from ...types import Fmt
from .decls import Assign, StageModule
from .expr import weight_banks
from .module import ModuleBuilder
from .narrow import kind_terms
from .packed import packed_terms
from .phase import emit_epilogue, fold_sum, push_emit, setup, weight_address
from .vlog import XW, assign_params, bits_for, index_width, lut_product, sext64, ulit, zext

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
    seq = b.sequence(schedule.loops)
    arrays = setup(b, schedule, seq)
    here = seq.loops[-1].here
    fire = f"{seq.fire} && {here}"

    # the push side: position counters, the table lookups, the line buffer
    # a push moves one input token: g.lanes channels of a position
    extents = ([g.images] if g.images > 1 else []) + [g.hp, g.wp, g.per_position]

    def completes(position):
        (r, _), (q, _), (c, cw) = position[-3:]
        return _and(f"{c} == {ulit(g.per_position - 1, cw)}", _table(b, "emit_rows", g.emit_rows(), r),
                    _table(b, "emit_cols", g.emit_cols(), q))

    emits = main.out_channels // main.pe
    loop = push_emit(b, fire, seq.loops[-1].last, emits, extents, completes, main.folds, main.snapshots)
    push, emitting, (co, cow), co_last = loop.push, loop.emitting, loop.index, loop.last_emit
    writes = emitting if loop.fold is None else f"{emitting} && {loop.writes}"  # an output is written
    (r, rw), (q, qw), _ = loop.position[-3:]
    real = b.wire("real", 1, _and(_table(b, "real_rows", g.real_rows(), r), _table(b, "real_cols", g.real_cols(), q)))
    b.move(main.read, f"{here} && {push} && {real}")
    width = x_type.width
    value = b.wire("px", g.lanes * width, f"{real} ? {main.read}_tdata : {ulit(0, g.lanes * width)}")
    taps = g.taps * g.c
    snapshot = b.net("snapshot", taps * width)
    # the line buffer holds tokens: its snapshot is the same bits as one of single elements, element c of tap t
    # at (t * C + c) * W
    params = [("WIDTH", str(g.lanes * width)), ("C", str(g.per_position)), ("WP", str(g.wp)), ("KH", str(g.kh)),
              ("KW", str(g.kw)), ("DH", str(g.dh)), ("DW", str(g.dw))]
    slots = [("capture_slot", "1'b0"), ("emit_slot", "1'b0")]
    if loop.slots is not None:  # a ring of snapshots: captured into slot ``free``, emitted from slot ``first``
        (first, _), (free, _) = loop.slots
        params.append(("SLOTS", str(main.snapshots)))
        slots = [("capture_slot", free), ("emit_slot", first)]
    # each stored row a memory per lane, block RAMs where the resource model counts BRAM18s for them
    if g.lanes > 1:
        params.append(("LANES", str(g.lanes)))
    if buffer_area(schedule.buffer("line buffer")).bram18:
        params.append(("BLOCK", "1"))
    b.instance("hlsf_line_buffer", tuple(params), "u_lb",
               (("ap_clk", "ap_clk"), ("ap_rst_n", "ap_rst_n"), ("push", f"{fire} && {push}"),
                ("capture", loop.completes), *slots, ("in_data", value), ("snapshot", snapshot)))
    tap_bits = index_width(taps)
    words = b.net_array("taps", width, taps)  # the snapshot's elements
    for t in range(taps):
        b.decls.append(Assign(f"{words}[{t}]", f"{snapshot}[{t * width + width - 1}:{t * width}]"))

    def tap(t: int | list[int], offset: tuple[str, int] | None, tag: str) -> str:
        """Snapshot element t (plus ``offset``) as a wire; t a list: element t[offset], a mux of those elements
        only (an index into all taps is a comparator per tap in synthesis: 576 per product of a 3x3x64 conv)."""
        if isinstance(t, list):
            if len(set(t)) == 1:
                return tap(t[0], None, tag)
            picks = b.net_array(f"picks_{tag}", width, len(t))
            for k, e in enumerate(t):
                b.decls.append(Assign(f"{picks}[{k}]", f"{words}[{e}]"))
            return b.wire(f"tap_{tag}", width, f"{picks}[{offset[0]}]")
        if offset is None:  # a constant index (through a wire it would be a comparator per tap until optimised)
            return b.wire(f"tap_{tag}", width, f"{words}[{t}]")
        ix = f"{ulit(t, tap_bits)} + {zext(offset[0], offset[1], tap_bits)}"
        return b.wire(f"tap_{tag}", width, f"{words}[{b.wire(f'ix_{tag}', tap_bits, ix)}]")

    # the snapshot's output pixel, for the pools' position tables
    pixel = None
    if main.counts or main.skips_padding:
        pixel = b.odometer("out", [g.oh, g.ow], f"{fire} && {emitting} && {co_last}")

    head = stage.head
    weights = _weights(b, main, arrays, loop, fire, emitting) if main.combine == "mac" else None
    banked = isinstance(weights, dict)  # a constant's banks: read at their own address, not at the channel
    results = []
    for lane in range(main.pe):  # output channel co * PE + lane
        channel = (co, cow)
        if main.pe > 1 and not banked:
            w = bits_for(main.out_channels)
            # with PE = Cout the emit counter stays 0: the lane is the channel (and PE would not fit w bits)
            expr = ulit(lane, w) if emits == 1 else f"{zext(co, cow, w)} * {ulit(main.pe, w)} + {ulit(lane, w)}"
            channel = (b.wire(f"co{lane}", w, expr), w)
        tag = f"l{lane}_" if main.pe > 1 else ""
        if main.packing is not None and (lane % 2 or lane + 1 < main.pe):  # lanes 2i and 2i + 1 packed
            if lane % 2 == 0:
                low = (channel, lane, tag)
            else:
                results += _conv_packed(b, main, weights, fire, emitting, loop, low, (channel, lane, tag), tap,
                                        x_type, head_type)
        elif main.combine == "mac":
            results.append(_conv(b, main, weights, fire, emitting, loop, channel, lane, tap, x_type, head_type, tag))
        elif main.combine == "max":
            results.append(_max_pool(b, g, pixel, channel, tap, x_type, head_type, tag))
        else:
            results.append(_avg_pool(b, main, pixel, channel, tap, x_type, head_type, tag))
    out = emit_epilogue(b, main, head, results if main.pe > 1 else results[0], arrays, here, fire, writes)
    return b.build(f"{main.op} '{head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out), state)


def _weights(b: ModuleBuilder, main, arrays, loop, fire: str, emitting: str) -> str | dict[tuple[int, int], str]:
    """A convolution's weights: a constant's banks (``expr.weight_banks``), the weight each (SIMD lane, PE lane)
    reads this iteration; else the array a streamed or computed tensor is held in, read at computed indices."""
    wt = main.weights
    if wt not in b.graph.constant_map:
        return arrays[wt]
    emits = main.out_channels // main.pe
    data = b.graph.constant_map[wt].data  # [KH, KW, CG, COUT]: product j of channel e PE + lane at j COUT + channel
    return weight_banks(b, main, data.reshape(-1, emits, main.pe),
                        weight_address(b, loop, emits * main.folds, fire, emitting))


def _conv(b, main, weights, fire, emitting, loop, channel, lane, tap, x_type, head_type, tag="") -> str:
    """Output channel ``channel``'s products of this fold (lane ``lane`` of the emit's PE): SIMD lane s computes
    product j = main.product(fold, s), tap j // CG and input channel j % CG of the channel's group, added to
    the partial sum of the earlier folds."""
    w_type = b.dtype(main.weights)
    terms, operands, kind = [], [], product_kind(b.graph, b.stage)
    for t, (x, wraw) in enumerate(_conv_operands(b, main, weights, loop, channel, lane, tap, tag)):
        if kind is not None:  # 1- and 2-bit weights: no multiplier (lower.products)
            operands.append((x, wraw))
            continue
        xa = b.wire(f"{tag}xa_{t}", XW, sext64(x, x_type), signed=True)
        if main.multiplier == "lut":
            pr = lut_product(b, f"{tag}lp_{t}", x, x_type, wraw, w_type)
        else:
            pr = f"{xa} * {b.wire(f'{tag}wb_{t}', XW, sext64(wraw, w_type), signed=True)}"
        terms.append(b.wire(f"{tag}pr_{t}", XW, pr, signed=True))
    if kind is not None:
        terms = kind_terms(b, tag, kind, operands, x_type, w_type)
    return _conv_head(b, main, terms, fire, emitting, loop, x_type, w_type, head_type, tag)


def _conv_head(b, main, terms, fire, emitting, loop, x_type, w_type, head_type, tag) -> str:
    """The exact sum of an output channel's ``terms`` and its earlier folds', assigned once to the head's type."""
    acc = fold_sum(b, terms, fire, emitting, loop, f"{tag}acc", main.accumulator)
    b.comment("conv2d: the exact dot product, assigned once to the head's type")
    result = b.net(f"{tag}v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), f"u_{tag}head",
               (("in_data", acc), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def _conv_packed(b, main, weights, fire, emitting, loop, low, high, tap, x_type, head_type) -> list[str]:
    """Output channels ``low`` and ``high`` ((channel, lane, tag) of PE lanes 2i and 2i + 1, one group: the same
    taps) of multiplier "packed": each SIMD lane's two products from one packed product (``packed_terms``)."""
    w_type = b.dtype(main.weights)
    (lo_channel, lo_lane, lo_tag), (hi_channel, hi_lane, hi_tag) = low, high
    lo_ops = list(_conv_operands(b, main, weights, loop, lo_channel, lo_lane, tap, lo_tag))
    hi_ops = list(_conv_operands(b, main, weights, loop, hi_channel, hi_lane, tap, hi_tag, with_x=False))
    lo_terms, hi_terms = packed_terms(b, low[2], [x for x, _ in lo_ops], x_type, [w for _, w in lo_ops],
                                      [w for _, w in hi_ops], w_type, main.packing)
    return [_conv_head(b, main, lo_terms, fire, emitting, loop, x_type, w_type, head_type, low[2]),
            _conv_head(b, main, hi_terms, fire, emitting, loop, x_type, w_type, head_type, high[2])]


def _conv_operands(b, main, weights, loop, channel, lane, tap, tag="", with_x=True) -> Iterator[tuple[str | None, str]]:
    """(x, w) of each SIMD lane of output channel ``channel`` in this fold, in turn: the raw bits of its tap (None
    without ``with_x``: a packed pair's hi lane reads its lo lane's) and of its weight (``weights``: the banks'
    reads by (SIMD lane, PE lane), or an array read at the channel's index). (A generator: the caller's wires of
    a lane are declared after the lane's operands, before the next lane's.)"""
    g = main.geometry
    (co, cow), fold = channel, loop.fold
    w_type = b.dtype(main.weights)
    cg, cout = main.channels_per_group, main.out_channels
    banked = isinstance(weights, dict)
    offset = None
    if main.groups > 1 and with_x:
        # the channel's group g = channel / (Cout/groups); its first input channel g * Cin/groups, per emit
        bw = bits_for(g.c)
        per_group = cout // main.groups
        emit, ew = loop.index
        bases = [(e * main.pe + lane) // per_group * cg for e in range(cout // main.pe)]
        table = b.rom(f"{tag}gbase", bases, bw)
        offset = (b.wire(f"{tag}gbase", bw, f"{table}[{emit}]"), bw)
    wi = 0 if banked else b.index(weights)
    for t in range(main.simd):
        x = None
        if fold is None:
            k, ci = divmod(t, cg)
            if with_x:
                x = tap(k * g.c + ci, offset, f"{tag}{t}")
            if not banked:
                wix = f"{ulit(t * cout, wi)} + {zext(co, cow, wi)}"
        else:
            # lane t reads snapshot element (j // CG) * C + j % CG and weight j * COUT + co, j = t * FOLDS + fold
            js = [main.product(f, t) for f in range(main.folds)]
            if with_x:
                elements = [(j // cg) * g.c + j % cg for j in js]
                if offset is None:  # the elements this lane reads, one a fold: a mux of those, not of all taps
                    x = tap(elements, fold, f"{tag}{t}")
                else:  # a group's elements at the emit's group base
                    tb = index_width(g.taps * g.c)
                    at = f"{b.rom(f'lane{t}', elements, tb)}[{fold[0]}] + {zext(offset[0], offset[1], tb)}"
                    x = tap(0, (b.wire(f"{tag}at_{t}", tb, at), tb), f"{tag}{t}")
            if not banked:
                wix = b.wire(f"{tag}wix_{t}", wi, f"{ulit(js[0] * cout, wi)} + {zext(fold[0], fold[1], wi)} * "
                             f"{ulit(cout % (1 << wi), wi)} + {zext(co, cow, wi)}")
        read = weights[(t, lane)] if banked else f"{weights}[{wix}]"
        yield x, b.wire(f"{tag}wt_{t}", w_type.width, read)


def _max_pool(b, g, pixel, channel, tap, x_type, head_type, tag="") -> str:
    co, cow = channel
    oy, ox = pixel if pixel is not None else (("", 1), ("", 1))  # without padding every tap is real
    rows = [_table(b, f"tap_row{kh}", g.tap_rows(kh), oy[0]) for kh in range(g.kh)]
    cols = [_table(b, f"tap_col{kw}", g.tap_cols(kw), ox[0]) for kw in range(g.kw)]
    best, found = None, None
    for kh, row_ok in enumerate(rows):
        for kw, col_ok in enumerate(cols):
            t = kh * g.kw + kw
            x = tap(t * g.c, (co, cow), f"{tag}{t}")
            xv = b.wire(f"{tag}xv_{t}", XW, sext64(x, x_type), signed=True)
            real = b.wire(f"{tag}in_{t}", 1, _and(row_ok, col_ok))
            if best is None:
                # the first tap seeds the maximum; later real taps replace it when none was found yet or greater
                best, found = b.wire(f"{tag}best_{t}", XW, xv, signed=True), b.wire(f"{tag}found_{t}", 1, real)
                continue
            take = f"{real} && (!{found} || {xv} > {best})"
            best = b.wire(f"{tag}best_{t}", XW, f"({take}) ? {xv} : {best}", signed=True)
            found = b.wire(f"{tag}found_{t}", 1, f"{found} || {real}")
    b.unused(found)
    result = b.net(f"{tag}v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac, head_type), f"u_{tag}head",
               (("in_data", best), ("in_sticky", "1'b0"), ("out_data", result)))
    return result


def _avg_pool(b, main, pixel, channel, tap, x_type, head_type, tag="") -> str:
    g = main.geometry
    terms = [b.wire(f"{tag}xv_{t}", XW, sext64(tap(t * g.c, channel, f"{tag}{t}"), x_type), signed=True)
             for t in range(g.taps)]
    total = b.sum(f"{tag}total", terms)
    fmt = main.accumulator
    num = total
    if fmt.width < XW:
        num = b.wire(f"{tag}num", fmt.width, f"{total}[{fmt.width - 1}:0]")
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
        table = b.rom("count_sel", picks, sw)
        at = b.wire("pix", pw, f"{zext(oy, ow_, pw)} * {ulit(g.ow % (1 << pw), pw)} + {zext(ox, xw, pw)}")
        sel = b.wire("sel", sw, f"{table}[{at}]")
    return quotient(b, num, fmt, x_type.frac, divisors, sel, head_type, f"{tag}v_head")
