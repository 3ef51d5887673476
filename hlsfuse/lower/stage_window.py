"""Window stages: sliding windows over NHWC images, pushed into a line buffer and emitted from snapshots.

    window  push/emit loop (``engine.py``): each iteration may push one padded input position's channels
            into the line buffer (reading the input, or a zero for padding) and emit one output channel
            (PE of them, one output token) of the last completed window, from a snapshot of that window;
            a MAC's output takes products / SIMD iterations (its folds)

The head's facts (what it combines, its weights, window and exact accumulator) are its registry entry's
``Head`` (ops/head.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..boards import Dsp
from ..errors import HlsfuseError
from ..ir import Graph
from ..ops.nn import pool_counts
from ..types import Fmt
from .elements import ElementPhase
from .emitting import Emitting, emitting_schedule
from .engine import Engine, check_simd
from .packing import Packing, packed_for
from .schedule import DEFAULT_DSP, Factors, Schedule, StageInputs, exact_accumulator, head_of
from .storage import Buffer

__all__ = ["WindowGeometry", "WindowMain", "window_geometry", "window_main", "window_engine", "window_emits",
           "line_buffer", "window_schedule"]


@dataclass(frozen=True)
class WindowGeometry:
    """Sliding windows over NHWC images; padding [top, left, bottom, right]; SPAN = DIL * (K - 1) + 1.

    The padded image is walked in row-major order, C / lanes pushes per position (a push moves
    ``lanes`` consecutive channels, one input token); the window ending at padded position (r, q) is
    an output pixel when r and q lie on the stride grid past the span."""

    images: int
    h: int
    w: int
    c: int
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
    lanes: int = 1  # channels per push

    @property
    def per_position(self) -> int:
        """Pushes per padded position."""
        return self.c // self.lanes

    @property
    def hp(self) -> int:
        return self.h + self.top + self.bottom

    @property
    def wp(self) -> int:
        return self.w + self.left + self.right

    @property
    def span_h(self) -> int:
        return self.dh * (self.kh - 1) + 1

    @property
    def span_w(self) -> int:
        return self.dw * (self.kw - 1) + 1

    @property
    def oh(self) -> int:
        return (self.hp - self.span_h) // self.sh + 1

    @property
    def ow(self) -> int:
        return (self.wp - self.span_w) // self.sw + 1

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def pushes(self) -> int:
        return self.images * self.hp * self.wp * self.per_position

    def real_rows(self) -> tuple[bool, ...]:
        return tuple(self.top <= r < self.top + self.h for r in range(self.hp))

    def real_cols(self) -> tuple[bool, ...]:
        return tuple(self.left <= q < self.left + self.w for q in range(self.wp))

    def emit_rows(self) -> tuple[bool, ...]:
        s = self.span_h - 1
        return tuple(r >= s and (r - s) % self.sh == 0 for r in range(self.hp))

    def emit_cols(self) -> tuple[bool, ...]:
        s = self.span_w - 1
        return tuple(q >= s and (q - s) % self.sw == 0 for q in range(self.wp))

    def tap_rows(self, kh: int) -> tuple[bool, ...]:
        """Per output row: row tap ``kh`` of its window lies in the input (not the padding)."""
        return tuple(self.top <= oy * self.sh + kh * self.dh < self.top + self.h for oy in range(self.oh))

    def tap_cols(self, kw: int) -> tuple[bool, ...]:
        return tuple(self.left <= ox * self.sw + kw * self.dw < self.left + self.w for ox in range(self.ow))

    @property
    def reads_padding(self) -> bool:
        """Some window has a tap in the padding (padding that no window reaches does not count)."""
        return (any(not all(self.tap_rows(k)) for k in range(self.kh))
                or any(not all(self.tap_cols(k)) for k in range(self.kw)))

    @property
    def line_buffer(self) -> int:
        """Elements of the stored rows: SPAN_H - 1 padded rows of WP x C."""
        return (self.span_h - 1) * self.wp * self.c

    @property
    def window(self) -> int:
        """Elements of the window registers: the KH rows a tap uses, SPAN_W x C each."""
        return self.kh * self.span_w * self.c

    def _positions(self, rows: tuple[bool, ...], cols: tuple[bool, ...]) -> np.ndarray:
        """Index of the last push of every position where rows[r] and cols[q], in push order."""
        mask = np.outer(np.asarray(rows, dtype=bool), np.asarray(cols, dtype=bool)).reshape(-1)
        p = self.per_position
        frame = np.flatnonzero(mask) * p + p - 1
        per_image = self.hp * self.wp * p
        return (np.arange(self.images)[:, None] * per_image + frame).reshape(-1)

    def completing_pushes(self) -> np.ndarray:
        return self._positions(self.emit_rows(), self.emit_cols())

    def real_pushes(self) -> np.ndarray:
        """Pushes that read the input (real pixels, not padding), in order."""
        last = self._positions(self.real_rows(), self.real_cols())
        p = self.per_position
        return (last[:, None] - (p - 1) + np.arange(p)).reshape(-1)


def window_emits(out_channels: int, pe: int, products: int, simd: int) -> int:
    """Iterations emitting one window: Cout / PE outputs of products / SIMD folds each."""
    return out_channels // pe * (products // simd)


@lru_cache(maxsize=4096)
def window_engine(geometry: WindowGeometry, emits: int, folds: int = 1, slots: int = 1) -> Engine:
    """The push/emit loop of a window stage of ``geometry`` emitting ``emits`` iterations per window (shared by
    the stages and the solver's choices alike in these)."""
    if folds > 1:  # the same timing, with the outputs written in the last fold of each
        return replace(window_engine(geometry, emits, 1, slots), folds=folds)
    return Engine(geometry.pushes, tuple(geometry.completing_pushes().tolist()), emits, folds, slots)


@dataclass(frozen=True)
class WindowMain(Emitting):
    op: str  # the head's op, for the reader of the generated code
    combine: str  # mac | max | mean (ops/head.py)
    products: int  # per output: a MAC's KH*KW*Cin/groups products, a pool's KH*KW taps
    geometry: WindowGeometry
    out_channels: int  # Cout
    groups: int  # conv2d: Cin / groups input channels per output channel
    read: str  # the head channel
    weights: str | None  # conv2d: the weight tensor (a constant, or a held input)
    divisor: int | None  # avg_pool2d: the count when every position has the same
    counts: tuple[tuple[int, ...], ...]  # avg_pool2d otherwise: counts per output pixel, rows of OW
    accumulator: Fmt | None  # exact sum format (mac and mean on fixed point)
    epilogue: ElementPhase  # over the head's output tokens of ``pe`` elements (``ElementPhase.widen``)
    writes: tuple[str, ...]
    simd: int  # a MAC's products per iteration (a divisor of ``products``); pools: ``products``
    pe: int = 1  # output channels computed per emit (a divisor of Cout): the output token's lanes
    snapshots: int = 1  # completed windows held for emission (``Engine.slots``)
    multiplier: str = "dsp"  # a MAC's products: how they are built (schedule.MULTIPLIERS)
    packing: Packing | None = None  # multiplier "packed": how PE lanes 2i and 2i + 1 share a DSP (packing.py)

    strided = True

    @property
    def lanes_in(self) -> int:
        """Input channels per push."""
        return self.geometry.lanes

    @property
    def factors(self) -> Factors:
        mac = self.combine == "mac"
        return Factors(self.simd if mac else None, self.pe, self.lanes_in, self.pe, self.snapshots,
                       self.multiplier if mac else "dsp")

    @property
    def emits(self) -> int:
        return window_emits(self.out_channels, self.pe, self.products, self.simd)

    @property
    def skips_padding(self) -> bool:
        """A window maximum whose taps may lie in the padding, where they must never win: per output pixel, it
        knows which of its taps are in the image (tables of the tap rows and columns, ``tap_rows``)."""
        return self.combine == "max" and self.geometry.reads_padding

    @property
    def engine(self) -> Engine:
        return window_engine(self.geometry, self.emits, self.folds, self.snapshots)

    @property
    def iterations(self) -> int:
        return window_engine(self.geometry, self.emits, 1, self.snapshots).iterations

    @property
    def channels_per_group(self) -> int:
        return self.geometry.c // self.groups

    def io(self) -> dict[str, np.ndarray]:
        push = self.engine.timing[0]
        out = {self.read: push[self.geometry.real_pushes()]}
        out.update(dict.fromkeys((*(r.channel for r in self.epilogue.reads), *self.writes), self.engine.writes))
        return out



def window_geometry(graph: Graph, head: str, lanes: int = 1) -> WindowGeometry:
    """``lanes``: channels per push (a divisor of C)."""
    node = graph.node(head)
    window = head_of(graph, head).window
    n, h, w, c = graph.types[node.inputs[0]].shape
    (kh, kw), (sh, sw), (dh, dw) = window.kernel, window.strides, window.dilation
    if c % lanes:
        raise HlsfuseError(f"{node.where()}: lanes {lanes} does not divide its {c} input channels")
    return WindowGeometry(n, h, w, c, kh, kw, sh, sw, *window.padding, dh, dw, lanes)



def window_main(graph: Graph, head: str, read: str, epilogue: ElementPhase, writes,
                simd: int | None = None, pe: int = 1, lanes: int = 1, snapshots: int = 1,
                multiplier: str = "dsp", dsp: Dsp = DEFAULT_DSP) -> WindowMain:
    """``simd``: products per iteration of a MAC (None: all of an output's, one output per iteration);
    ``pe``: output channels per emit (``epilogue`` is over tokens of that many); ``lanes``: input channels
    per push; ``snapshots``: completed windows held for emission; ``multiplier``: how a MAC's products are
    built (``dsp``: the DSP slice packed ones are shaped for)."""
    node = graph.node(head)
    spec = head_of(graph, head)
    geometry = window_geometry(graph, head, lanes)
    cout = graph.types[head].shape[3]
    weights = node.inputs[spec.weights] if spec.weights is not None else None
    divisor, counts = None, ()
    if spec.combine == "mean":
        table = pool_counts(graph.sigs[head])
        if np.all(table == table.flat[0]):
            divisor = int(table.flat[0])
        else:
            counts = tuple(tuple(int(v) for v in row) for row in table)
    simd = spec.terms if simd is None or not spec.mac else simd
    check_simd(node.where(), simd, spec.terms)
    if isinstance(snapshots, bool) or not isinstance(snapshots, int) or snapshots < 1:
        raise HlsfuseError(f"{node.where()}: snapshots must be a positive integer, not {snapshots!r}")
    packing = None
    if spec.mac and multiplier == "packed":
        x, w = (graph.types[node.inputs[k]].dtype for k in (0, spec.weights))
        const = graph.constant_map.get(node.inputs[spec.weights])
        packing = packed_for(node.where(), x, w, dsp, pe, cout // spec.groups if spec.groups > 1 else None,
                             None if const is None else const.data)
    return WindowMain(node.op, spec.combine, spec.terms, geometry, cout, spec.groups, read, weights, divisor, counts,
                      exact_accumulator(spec, node.where()), epilogue, tuple(writes), simd, pe, snapshots,
                      multiplier if spec.mac else "dsp", packing)




def line_buffer(g: WindowGeometry, bits: int) -> Buffer:
    """A window stage's stored rows: each its own memory, each split into L banks along the channels
    (linebuffer.h)."""
    return Buffer("line buffer", g.line_buffer, bits, banks=max(1, (g.span_h - 1) * g.lanes))


def window_schedule(s: StageInputs) -> Schedule:
    f = s.factors
    x_bits = s.graph.types[s.graph.node(s.head).inputs[0]].dtype.bits

    def build(read: str, epilogue: ElementPhase):
        main = window_main(s.graph, s.head, read, epilogue, s.outs, f.simd, f.pe, f.lanes_in, f.snapshots,
                           f.multiplier, s.dsp)
        g = main.geometry
        own = [line_buffer(g, x_bits), Buffer("window", g.window, x_bits, registers=True),
               Buffer("snapshot", main.snapshots * g.taps * g.c, x_bits, registers=True, banks=main.snapshots)]
        macs = g.images * g.oh * g.ow * main.out_channels * main.products if main.combine == "mac" else 0
        return main, own, macs, main.out_channels, False

    return emitting_schedule(s, "window", build)
