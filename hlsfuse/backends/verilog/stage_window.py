"""Window stages in Verilog: conv2d, max_pool2d or avg_pool2d, then the group's epilogue.

The structure is the HLS window stage's (``backends.hls.stage_window.body``), the schedule
analytic.py's, one step per cycle:

    setup loops      each held input read whole into its array, then the epilogue's pre loops
    per image, per padded position (r, q) in row-major order:
        C push cycles    real pixel: read the head channel; padding: push a zero without reading
                         (hlsf_line_buffer; its window is registered, so it shows the whole pixel
                         in the cycle after the push of channel C-1, the first output cycle)
        if (r, q) ends a window on the stride grid, Cout output cycles, one output channel each:
            head         conv2d: the exact dot product over the window (taps of co's group) with
                         w[kh][kw][ci][co]; max_pool2d: maximum of the taps not in the padding;
                         avg_pool2d: exact window sum, hlsf_divide_const by the position's count
            one hlsf_assign to the head's type, the epilogue (streamed 'post' inputs read once
            per output element), the write

The head and epilogue are combinational from the window and the weights to the output channel.
Position tables (real rows, emitting columns, taps inside the padding) are constant bit vectors
indexed by the position counters, so the stage needs no division or modulo.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ...types import Fmt
from ..hls import stage_window as hls_window
from ..hls.context import Context
from .expr import counters, render_body
from .mem import mem_lines
from .module import ModuleWriter, StageModule
from .phase import compute_pre, read_values, store_held
from .vlog import XW, assign_params, bits_for, index_width, sext64, ulit, zext

__all__ = ["build"]


@dataclass(frozen=True)
class _Setup:
    """The loops before the image (the shape ``phase.store_held`` and ``phase.compute_pre`` expect)."""

    fire: list[str]
    idx: str
    width: int


@dataclass(frozen=True)
class _Geometry:
    h: int
    w: int
    kh: int
    kw: int
    sh: int
    sw: int
    top: int
    left: int
    bottom: int
    right: int
    dh: int
    dw: int

    @property
    def hp(self) -> int:
        return self.h + self.top + self.bottom

    @property
    def wp(self) -> int:
        return self.w + self.left + self.right

    def span(self) -> tuple[int, int]:
        return self.dh * (self.kh - 1) + 1, self.dw * (self.kw - 1) + 1

    def emit_rows(self) -> list[bool]:
        s = self.span()[0] - 1
        return [r >= s and (r - s) % self.sh == 0 for r in range(self.hp)]

    def emit_cols(self) -> list[bool]:
        s = self.span()[1] - 1
        return [q >= s and (q - s) % self.sw == 0 for q in range(self.wp)]

    def real_rows(self) -> list[bool]:
        return [self.top <= r < self.top + self.h for r in range(self.hp)]

    def real_cols(self) -> list[bool]:
        return [self.left <= q < self.left + self.w for q in range(self.wp)]

    def tap_row_real(self, kh: int) -> list[bool]:
        """Row tap ``kh`` of the window ending at padded row r lies in the input."""
        s = self.span()[0] - 1
        return [self.top <= r - s + kh * self.dh < self.top + self.h for r in range(self.hp)]

    def tap_col_real(self, kw: int) -> list[bool]:
        s = self.span()[1] - 1
        return [self.left <= q - s + kw * self.dw < self.left + self.w for q in range(self.wp)]


def _table(w: ModuleWriter, name: str, bits: list[bool], index: str) -> str:
    """``bits[index]`` as an expression: a constant when every bit is equal, else a bit of a constant vector."""
    if all(bits) or not any(bits):
        return "1'b1" if bits[0] else "1'b0"
    n = len(bits)
    vector = w.fresh(name)
    pattern = "".join("1" if b else "0" for b in reversed(bits))
    w.decls.append(f"wire [{n - 1}:0] {vector} = {n}'b{pattern};")
    return f"{vector}[{index}]"


def _and(terms: list[str]) -> str:
    real = [t for t in terms if t != "1'b1"]
    if "1'b0" in real:
        return "1'b0"
    return " && ".join(real) or "1'b1"


class _Builder:
    def __init__(self, ctx: Context, stage: Stage, w: ModuleWriter):
        self.ctx, self.stage, self.w = ctx, stage, w
        self.b = hls_window.body(ctx, stage)
        self.node = ctx.graph.node(stage.head)
        self.g = _Geometry(*self.b.geometry)
        self.x_type = w.dtype(self.node.inputs[0])
        self.head_type = w.dtype(stage.head)
        self.cin, self.cout, self.images = self.b.channels, self.b.out_channels, self.b.images

    # ---------------------------------------------------------------- control

    def setup(self) -> None:
        """Held inputs and pre loops, one element per cycle, then the image loop (phase ``main``)."""
        w, b = self.w, self.b
        counts = [(h.size, (h.channel,)) for h in b.held] + [(p.size, ()) for p in b.epilogue.pre]
        n = len(counts)
        self.phase = None
        if n:
            pw = self.phase_width = bits_for(n + 1)
            self.phase = w.reg(w.fresh("phase"), pw, ulit(0, pw))
            self.main = w.wire(w.fresh("main"), 1, f"{self.phase} == {ulit(n, pw)}")
            iw = bits_for(max(c for c, _ in counts))
            idx = w.reg(w.fresh("idx"), iw, ulit(0, iw))
            fires = []
            for k, (count, reads) in enumerate(counts):
                w.decls.append(f"// setup loop {k}: {count} iteration(s)")
                fire = w.wire(w.fresh(f"fire{k}"), 1, " && ".join([f"{self.phase} == {ulit(k, pw)}"] +
                                                                    [f"{c}_tvalid" for c in reads]))
                fires.append(fire)
                w.seq.append(f"if ({fire}) begin")
                w.seq.append(f"    if ({idx} == {ulit(count - 1, iw)}) begin")
                w.seq.append(f"        {idx} <= {ulit(0, iw)};")
                w.seq.append(f"        {self.phase} <= {ulit(k + 1, pw)};")
                w.seq.append("    end else begin")
                w.seq.append(f"        {idx} <= {idx} + {ulit(1, iw)};")
                w.seq.append("    end")
                w.seq.append("end")
            self.setup_loops = _Setup(fires, idx, iw)
            self.started = [f"{self.phase} != {ulit(0, pw)}", f"{idx} != {ulit(0, iw)}"]
        else:
            self.main = "1'b1"
            self.setup_loops = _Setup([], "", 1)
            self.started = []

    def counter(self, what: str, count: int, step: str | None = None) -> tuple[str, int]:
        """A register over 0..count-1 (part of the frame's progress); with ``step``, advanced and wrapped by it."""
        width = bits_for(count)
        name = self.w.reg(self.w.fresh(what), width, ulit(0, width))
        self.started.append(f"{name} != {ulit(0, width)}")
        if step is not None:
            wrap = f"{name} == {ulit(count - 1, width)} ? {ulit(0, width)} : {name} + {ulit(1, width)}"
            self.w.seq.append(f"if ({step}) {name} <= {wrap};")
        return name, width

    def positions(self) -> None:
        """Counters of the image loop and the handshakes of its push and output cycles."""
        w, g, b = self.w, self.g, self.b
        self.r, self.rw = self.counter("row", g.hp)
        self.q, self.qw = self.counter("col", g.wp)
        self.c, self.cw = self.counter("ch", self.cin)
        self.co, self.cow = self.counter("co", self.cout)
        self.img = self.counter("img", self.images) if self.images > 1 else None
        self.emit = w.reg(w.fresh("emitting"), 1, "1'b0")
        self.started.append(self.emit)
        real = _and([_table(w, "real_rows", g.real_rows(), self.r), _table(w, "real_cols", g.real_cols(), self.q)])
        self.real = w.wire(w.fresh("real"), 1, real)
        ends = _and([_table(w, "emit_rows", g.emit_rows(), self.r), _table(w, "emit_cols", g.emit_cols(), self.q)])
        self.ends = w.wire(w.fresh("ends"), 1, ends)
        src = f"{b.in_channel}_tvalid"
        self.push = w.wire(w.fresh("push"), 1, f"{self.main} && !{self.emit} && (!{self.real} || {src})")
        posts = [f"{r.channel}_tvalid" for r in b.epilogue.reads]
        self.out_valid = w.wire(w.fresh("out_valid"), 1, " && ".join([self.main, self.emit] + posts))
        readies = [f"{x.channel}_tready" for x in b.writes]
        self.out_fire = w.wire(w.fresh("out_fire"), 1, " && ".join([self.out_valid] + readies))
        self.x_raw = w.wire(w.fresh("px"), self.x_type.width,
                            f"{self.real} ? {b.in_channel}_tdata : {ulit(0, self.x_type.width)}")

        last_c = f"{self.c} == {ulit(self.cin - 1, self.cw)}"
        last_co = f"{self.co} == {ulit(self.cout - 1, self.cow)}"
        w.seq.append(f"if ({self.push}) begin")
        w.seq.append(f"    if ({last_c}) begin")
        w.seq.append(f"        {self.c} <= {ulit(0, self.cw)};")
        w.seq.append(f"        if ({self.ends}) begin")
        w.seq.append(f"            {self.emit} <= 1'b1;")
        w.seq.append("        end else begin")
        w.seq.extend("            " + s for s in self.advance())
        w.seq.append("        end")
        w.seq.append("    end else begin")
        w.seq.append(f"        {self.c} <= {self.c} + {ulit(1, self.cw)};")
        w.seq.append("    end")
        w.seq.append("end")
        w.seq.append(f"if ({self.out_fire}) begin")
        w.seq.append(f"    if ({last_co}) begin")
        w.seq.append(f"        {self.co} <= {ulit(0, self.cow)};")
        w.seq.append(f"        {self.emit} <= 1'b0;")
        w.seq.extend("        " + s for s in self.advance())
        w.seq.append("    end else begin")
        w.seq.append(f"        {self.co} <= {self.co} + {ulit(1, self.cow)};")
        w.seq.append("    end")
        w.seq.append("end")

    def advance(self) -> list[str]:
        """Statements moving to the next padded position (after the last one, the next image or frame)."""
        g = self.g
        frame = [f"{self.phase} <= {ulit(0, self.phase_width)};"] if self.phase is not None else []
        if self.img is not None:
            img, iw = self.img
            image = [
                f"if ({img} == {ulit(self.images - 1, iw)}) begin",
                f"    {img} <= {ulit(0, iw)};",
                *("    " + s for s in frame),
                "end else begin",
                f"    {img} <= {img} + {ulit(1, iw)};",
                "end",
            ]
        else:
            image = frame
        return [
            f"if ({self.q} == {ulit(g.wp - 1, self.qw)}) begin",
            f"    {self.q} <= {ulit(0, self.qw)};",
            f"    if ({self.r} == {ulit(g.hp - 1, self.rw)}) begin",
            f"        {self.r} <= {ulit(0, self.rw)};",
            *("        " + s for s in image),
            "    end else begin",
            f"        {self.r} <= {self.r} + {ulit(1, self.rw)};",
            "    end",
            "end else begin",
            f"    {self.q} <= {self.q} + {ulit(1, self.qw)};",
            "end",
        ]

    # ---------------------------------------------------------------- head

    def window(self) -> tuple[str, int]:
        """The line buffer and its window as an array ``win`` of KH*KW*C raw elements (tap-major)."""
        w, g = self.w, self.g
        width = self.x_type.width
        taps = g.kh * g.kw * self.cin
        bus = w.fresh("window")
        w.decls.append(f"wire [{taps * width - 1}:0] {bus};")
        w.rtl.add("hlsf_line_buffer")
        w.decls.append(
            f"hlsf_line_buffer #(.WIDTH({width}), .C({self.cin}), .WP({g.wp}), .KH({g.kh}), .KW({g.kw}), "
            f".DH({g.dh}), .DW({g.dw})) {w.fresh('u_lb')} (.ap_clk(ap_clk), .ap_rst_n(ap_rst_n), "
            f".push({self.push}), .in_data({self.x_raw}), .window({bus}));"
        )
        win = w.fresh("win")
        w.decls.append(f"wire [{width - 1}:0] {win} [0:{taps - 1}];")
        w.arrays[win] = (taps, width)
        for t in range(taps):
            w.decls.append(f"assign {win}[{t}] = {bus}[{t * width + width - 1}:{t * width}];")
        return win, taps

    def tap(self, win: str, taps: int, base: int, offset: tuple[str, int] | None, tag: str) -> str:
        """Raw element ``win[base + offset]`` as a wire."""
        w = self.w
        iw = index_width(taps)
        ix = ulit(base, iw)
        if offset is not None:
            ix = f"{ix} + {zext(offset[0], offset[1], iw)}"
        return w.wire(w.fresh(f"tap_{tag}"), self.x_type.width, f"{win}[{ix}]")

    def conv(self, win: str, taps: int) -> tuple[str, int]:
        w, b = self.w, self.b
        wt = self.node.inputs[1]
        w_type = w.dtype(wt)
        kh, kw, cg, cout = self.ctx.type_of(wt).shape
        weights = b.weights
        if wt in self.ctx.graph.constant_map:
            data = self.ctx.graph.constant_map[wt].data.reshape(-1)
            w.mem(weights, data, w_type.width, mem_lines(data, w_type.width))
        elif weights not in w.arrays:
            raise HlsfuseError(f"stage '{self.stage.name}': weight '{wt}' is neither a constant nor held")
        offset = None
        if b.groups > 1:
            # base channel of co's group: advances by Cin/groups every Cout/groups output channels
            co_g = cout // b.groups
            gw, ow = bits_for(b.groups * cg), bits_for(co_g)
            gbase = w.reg(w.fresh("gbase"), gw, ulit(0, gw))
            gco = w.reg(w.fresh("gco"), ow, ulit(0, ow))
            w.seq.append(f"if ({self.out_fire}) begin")
            w.seq.append(f"    if ({gco} == {ulit(co_g - 1, ow)}) begin")
            w.seq.append(f"        {gco} <= {ulit(0, ow)};")
            step = f"{gbase} + {ulit(cg, gw)}"
            wrap = f"{gbase} == {ulit((b.groups - 1) * cg, gw)}"
            w.seq.append(f"        {gbase} <= {wrap} ? {ulit(0, gw)} : {step};")
            w.seq.append("    end else begin")
            w.seq.append(f"        {gco} <= {gco} + {ulit(1, ow)};")
            w.seq.append("    end")
            w.seq.append("end")
            offset = (gbase, gw)
        wi = index_width(kh * kw * cg * cout)
        terms = []
        for t in range(kh * kw * cg):
            k, ci = divmod(t, cg)
            x = self.tap(win, taps, k * self.cin + ci, offset, f"{t}")
            wraw = w.wire(w.fresh(f"wt_{t}"), w_type.width,
                          f"{weights}[{ulit(t * cout, wi)} + {zext(self.co, self.cow, wi)}]")
            xa = w.wire(w.fresh(f"xa_{t}"), XW, sext64(x, self.x_type), signed=True)
            wb = w.wire(w.fresh(f"wb_{t}"), XW, sext64(wraw, w_type), signed=True)
            terms.append(w.wire(w.fresh(f"pr_{t}"), XW, f"{xa} * {wb}", signed=True))
        acc = w.wire(w.fresh("acc"), XW, " + ".join(terms), signed=True)
        return acc, self.x_type.frac + w_type.frac

    def max_pool(self, win: str, taps: int) -> tuple[str, int]:
        w, g = self.w, self.g
        best, found = None, "1'b0"
        rows = [_table(w, f"tap_row{kh}", g.tap_row_real(kh), self.r) for kh in range(g.kh)]
        cols = [_table(w, f"tap_col{kw}", g.tap_col_real(kw), self.q) for kw in range(g.kw)]
        used: set[str] = set()
        for kh, row_ok in enumerate(rows):
            for kw, col_ok in enumerate(cols):
                t = kh * g.kw + kw
                x = self.tap(win, taps, t * self.cin, (self.co, self.cow), f"{t}")
                xv = w.wire(w.fresh(f"xv_{t}"), XW, sext64(x, self.x_type), signed=True)
                condition = _and([row_ok, col_ok])
                used.update(term for term in (row_ok, col_ok) if term in condition)
                real = w.wire(w.fresh(f"in_{t}"), 1, condition)
                if best is None:
                    # the first tap seeds the maximum; later real taps replace it when not found yet or greater
                    best = w.wire(w.fresh(f"best_{t}"), XW, xv, signed=True)
                    found = w.wire(w.fresh(f"found_{t}"), 1, real)
                    continue
                take = f"{real} && (!{found} || {xv} > {best})"
                best = w.wire(w.fresh(f"best_{t}"), XW, f"({take}) ? {xv} : {best}", signed=True)
                found = w.wire(w.fresh(f"found_{t}"), 1, f"{found} || {real}")
        w.decls.append(f"wire unused_{found} = &{{1'b0, {found}, 1'b0}};")
        for table in set(rows + cols) - used:  # a row or column table every tap of which is ANDed with 0
            if "[" in table:
                vector = table.split("[")[0]
                w.decls.append(f"wire unused_{vector} = &{{1'b0, {vector}, 1'b0}};")
        return best, self.x_type.frac

    def avg_pool(self, win: str, taps: int) -> None:
        """Exact window sum, then the quotient by the position's count assigned once to the head's type."""
        w, g, b = self.w, self.g, self.b
        terms = []
        for t in range(g.kh * g.kw):
            x = self.tap(win, taps, t * self.cin, (self.co, self.cow), f"{t}")
            terms.append(w.wire(w.fresh(f"xv_{t}"), XW, sext64(x, self.x_type), signed=True))
        total = w.wire(w.fresh("total"), XW, " + ".join(terms), signed=True)
        fmt = Fmt.of(self.x_type).accumulate(g.kh * g.kw)
        num_w = fmt.width
        num = total
        if num_w < XW:
            num = w.wire(w.fresh("num"), num_w, f"{total}[{num_w - 1}:0]")
            w.decls.append(f"wire unused_{num} = &{{1'b0, {total}[{XW - 1}:{num_w}], 1'b0}};")
        if b.divisor is not None:
            divisors, sel = [b.divisor], "1'b0"
        else:
            flat = [v for row in b.counts for v in row]
            divisors = sorted(set(flat))
            pixels = len(flat)
            # the output pixel, for its count: advances after the pixel's last output channel
            last = f"{self.co} == {ulit(self.cout - 1, self.cow)}"
            pix, pw = self.counter("pix", pixels, step=f"{self.out_fire} && {last}")
            sw = index_width(len(divisors))
            picks = [divisors.index(v) for v in flat]
            table = w.mem(w.fresh("count_sel"), picks, sw, mem_lines(picks, sw))
            sel = w.wire(w.fresh("sel"), sw, f"{table}[{zext(pix, pw, index_width(pixels))}]")
        div_w = max(divisors).bit_length()
        ndiv = len(divisors)
        packed = sum(d << (i * div_w) for i, d in enumerate(divisors))
        shift = self.head_type.frac - self.x_type.frac + 1
        quot_w = num_w + 1 + max(shift, 0)
        quot, inexact = w.fresh("quot"), w.fresh("inexact")
        w.decls.append(f"wire [{quot_w - 1}:0] {quot};")
        w.decls.append(f"wire {inexact};")
        w.rtl.add("hlsf_divide_const")
        w.decls.append(
            f"hlsf_divide_const #(.NUM_W({num_w}), .NUM_SIGNED({int(fmt.signed)}), .SHIFT({shift}), .NDIV({ndiv}), "
            f".DIV_W({div_w}), .DIVISORS({ndiv * div_w}'h{packed:x})) {w.fresh('u_div')} "
            f"(.num({num}), .sel({sel}), .quot({quot}), .inexact({inexact}));"
        )
        self.assign(quot, self.head_type.frac + 1, in_w=quot_w, sticky=inexact)

    def assign(self, value: str, frac: int, in_w: int = XW, sticky: str = "1'b0") -> None:
        w, b = self.w, self.b
        w.decls.append(f"wire [{self.head_type.width - 1}:0] {b.head_var};")
        w.rtl.add("hlsf_assign")
        w.decls.append(
            f"hlsf_assign {assign_params(frac, self.head_type, in_w)} {w.fresh('u_head')} "
            f"(.in_data({value}), .in_sticky({sticky}), .out_data({b.head_var}));"
        )


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    s = _Builder(ctx, stage, w)
    b, e = s.b, s.b.epilogue
    s.setup()
    s.positions()
    store_held(w, b.held, s.setup_loops, first=0)
    compute_pre(w, e, s.setup_loops, {e.index: (s.setup_loops.idx, s.setup_loops.width)}, first=len(b.held))
    win, taps = s.window()
    if b.op == "conv2d":
        s.assign(*s.conv(win, taps))
    elif b.op == "max_pool2d":
        s.assign(*s.max_pool(win, taps))
    else:
        s.avg_pool(win, taps)
    # the epilogue, once per output element
    read_values(w, e.reads)
    scope = {}
    if e.counts_index:
        size = ctx.type_of(stage.head).size
        scope[e.index] = s.counter("out_index", size, step=s.out_fire)
    scope.update(counters(w, e.body, "e_", s.out_fire))
    render_body(w, e.body, scope)
    # handshakes
    setup = s.setup_loops
    for channel in stage.inputs:
        fires = [f for f, h in zip(setup.fire, b.held) if h.channel == channel]
        if channel == b.in_channel:
            fires.append(f"{s.push} && {s.real}")
        if any(r.channel == channel for r in e.reads):
            fires.append(s.out_fire)
        ready = " || ".join(fires) or "1'b0"
        w.decls.append(f"assign {channel}_tready = {ready};")
    for x in b.writes:
        w.decls.append(f"assign {x.channel}_tvalid = {s.out_valid};")
        w.decls.append(f"assign {x.channel}_tdata = {x.var};")
    busy = " || ".join(setup.fire + [s.push, s.out_fire])
    w.decls.append(f"assign busy = {busy};")
    waiting = s.started + [f"{c}_tvalid" for c in stage.inputs]
    w.decls.append(f"assign stall = !busy && ({' || '.join(waiting)});")
    return w.build("window", f"{b.op} '{stage.head}', nodes {', '.join(stage.nodes)}")
