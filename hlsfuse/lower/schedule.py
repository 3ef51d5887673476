"""The schedule of a stage: one loop per frame, and what each of its iterations reads and writes.

Every stage runs one loop per frame, one iteration per cycle (II=1), in a fixed order that never
depends on data: first the *setup* loops (each held input read whole, then the pre loops of its
element phases, ``elements.py``), then the stage's *main* part. An iteration fires when every
channel it reads has a token and every channel it writes has space, so a stage's timing is
fully described by its iteration count and, per channel, the iteration of each token it moves
(``Schedule.io``). The cost model, the FIFO sizing (``timing.py``) and both backends read these
facts here; the backends only spell them.

    kind    main part, per frame
    map     N / L iterations (L lanes): read a token of every streamed input, compute its L elements,
            write a token of the sink
    fork    N / L iterations: read a token, write it to every output
    convert N / min(A, B) iterations re-packing tokens of A lanes into tokens of B lanes (a gearbox:
            each iteration reads a token when fewer than B elements wait, and writes one when B do)
    window  push/emit loop: each iteration may push one padded input position's channel into the
            line buffer (reading the input, or a zero for padding) and emit one output channel of
            the last completed window, from a snapshot of that window
    rows    push/emit loop over rows of K inputs, each pushed in K / L tokens (L input lanes) and emitting
            N / P output tokens of P lanes (PE), each over its folds (dense, matmul)
    reduce  N_in / L iterations accumulating a token of L input elements each, then N_out / L_o iterations
            emitting a token of L_o output elements (L_o = L when the innermost axis is kept, else 1)
    own     the op's own loop (own.py)

The push/emit loop overlaps reading and writing: a push that completes a window (or a row) copies
it into the snapshot, which the next iterations emit from, one output per iteration, while later
pushes proceed. Only the push completing the *next* window waits, until the snapshot's last
output goes out in the same iteration:

    pushes   p p p P p p p P . . p P          P: completes a window (a unit)
    emits     . . . e e e e e e e e e e e      (units of 4 emits)

so a stage takes about max(pushes, emits) iterations, not their sum, and strided windows spread
their emission over the positions in between. A window stage may hold a ring of Q snapshots
(``WindowMain.snapshots``): a completing push then waits only while all Q are held, so that the
windows a strided stage completes on one row are emitted while the next row is pushed (``Engine``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from ..errors import HlsfuseError
from ..ir import Graph
from ..ops import get_op
from ..ops.head import Head
from ..ops.nn import pool_counts
from ..types import Fmt
from .elements import Digit, ElementPhase, broadcast_digits, token_digits

__all__ = [
    "REGISTER_LIMIT",
    "SHORT_DEPENDENCE",
    "Held",
    "Buffer",
    "State",
    "Engine",
    "MapMain",
    "ForkMain",
    "ConvertMain",
    "WindowGeometry",
    "WindowMain",
    "RowsMain",
    "ReduceMain",
    "Schedule",
    "reduce_lanes_out",
]

REGISTER_LIMIT = 64
"""Arrays of at most this many elements are registers; larger ones are memories."""

SHORT_DEPENDENCE = 8
"""A memory element read back sooner than this many iterations after its write (a read-modify-write of an
accumulator, say) would stall a pipelined loop: such an array is registers whatever its size."""


@dataclass(frozen=True)
class Held:
    """A streamed input read whole into an array by the setup loops (``kept`` False: read and dropped)."""

    channel: str
    tensor: str
    size: int
    kept: bool


@dataclass(frozen=True)
class Buffer:
    """On-chip storage of a stage.

    ``registers``: every element is a register (arrays read in parallel, or small ones); otherwise
    a memory with ``banks`` parallel banks (a ROM or array read ``banks`` times per iteration) whose
    element written in one iteration is read again ``distance`` iterations later at the soonest
    (the loop-carried dependence a pipelined loop must respect; None: never read back in the loop).
    An array read by several output channels at once is also seen as rows of ``columns`` elements
    (row-major; ``columns`` > 1): its rows banked ``banks`` ways as ``banking`` says, each row banked
    cyclically ``column_banks`` ways: ``banks`` x ``column_banks`` banks."""

    name: str  # its role, unique in the stage ("line buffer", "accumulators", "held x", ...)
    elements: int
    width: int  # bits per element
    registers: bool = False
    banks: int = 1
    distance: int | None = None
    tensor: str | None = None  # a held input, a pre-loop result or a ROM's constant: the tensor it holds
    banking: str = "block"  # how a flat index maps to its ``banks``: "block" (consecutive runs) or "cyclic"
    rom: bool = False  # a constant's ROM (weights): not counted in the stage's ``storage`` of data
    columns: int = 1  # > 1: elements per row of a 2-D view (weights read by PE lanes: Cout, N or K)
    column_banks: int = 1

    @property
    def parts(self) -> int:
        """Banks in all."""
        return self.banks * self.column_banks


@dataclass(frozen=True)
class State:
    """What a stage keeps from one iteration to the next, and how no frame sees another's.

    ``reset``: "frame" (a control counter: back at its initial value after the frame's last
    iteration), "first" (assigned, not combined, by the first value of each output) or
    "overwritten" (every element is written in a frame before the frame reads it)."""

    name: str
    reset: str


def registers(name: str, elements: int, width: int) -> Buffer:
    return Buffer(name, elements, width, registers=True)


def memory(name: str, elements: int, width: int, distance: int | None = None, banks: int = 1,
           tensor: str | None = None, banking: str = "block", rom: bool = False, columns: int = 1,
           column_banks: int = 1) -> Buffer:
    """Registers when small, or when read back too soon for a memory; else a memory. The banks are kept
    either way: they say how the array is partitioned for parallel reads."""
    small = elements <= REGISTER_LIMIT or (distance is not None and distance < SHORT_DEPENDENCE)
    return Buffer(name, elements, width, registers=small, banks=banks, distance=distance, tensor=tensor,
                  banking=banking, rom=rom, columns=columns, column_banks=column_banks)


# --------------------------------------------------------------------------
# The push/emit loop (window and rows stages)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """``pushes`` per frame; push ``completes[m]`` completes unit m, which is captured into one of ``slots``
    snapshots and then emits for ``emits`` iterations: ``emits / folds`` outputs, each computed over ``folds``
    iterations and written in its last. Units emit one after another, each from the iteration after its
    capture at the soonest; a capture needs a free snapshot, and unit m's is unit m - slots's, free in the
    iteration of that unit's last emit (which reads it before the capture overwrites it)."""

    pushes: int
    completes: tuple[int, ...]
    emits: int
    folds: int = 1
    slots: int = 1

    @cached_property
    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """(iteration of each unit's capture, iteration of its first emit).

        A completing push is delayed as much as the pushes before it, and more while its snapshot is busy:
        capture[m] = max(capture[m-1] + completes[m] - completes[m-1], first[m - slots] + emits - 1); the
        pushes between two captures follow the earlier one. Emission is serial: first[m] = max(capture[m] + 1,
        first[m-1] + emits). With one slot the capture waits for the previous unit's last emit, so
        capture[m] = capture[m-1] + max(completes[m] - completes[m-1], emits) in closed form; with a slot per
        unit no push waits."""
        done = np.asarray(self.completes, dtype=np.int64)
        e, n = self.emits, len(done)
        if self.slots == 1:
            capture = done + np.concatenate([[0], np.cumsum(np.maximum(0, e - np.diff(done)))])
        elif self.slots >= n or e == 0 or self.slots >= replace(self, slots=n).waiting:
            capture = done
        else:
            q, cap, first = self.slots, [0] * n, [0] * n
            gaps = np.diff(done, prepend=done[:1]).tolist()
            for m in range(n):
                t = cap[m - 1] + gaps[m] if m else int(done[0])
                if m >= q:
                    t = max(t, first[m - q] + e - 1)
                cap[m] = t
                first[m] = max(t + 1, first[m - 1] + e) if m else t + 1
            return np.asarray(cap, dtype=np.int64), np.asarray(first, dtype=np.int64)
        k = np.arange(n, dtype=np.int64)
        return capture, k * e + np.maximum.accumulate(capture + 1 - k * e)

    @cached_property
    def timing(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(iteration of each push, iteration of each emit, iterations per frame)."""
        done = np.asarray(self.completes, dtype=np.int64)
        capture, first = self.units
        j = np.arange(self.pushes, dtype=np.int64)
        units_so_far = np.searchsorted(done, j, side="right")
        delay = capture - done
        push = j + np.where(units_so_far > 0, delay[np.maximum(units_so_far - 1, 0)], 0)
        emit = (first[:, None] + np.arange(self.emits, dtype=np.int64)).reshape(-1)
        total = int(max(push[-1] + 1, emit[-1] + 1 if emit.size else 0))
        return push, emit, total

    @cached_property
    def iterations(self) -> int:
        """``timing``'s iterations per frame without its arrays: the pushes after the last capture keep its delay
        D, so max(pushes + D, first[-1] + emits)."""
        done = np.asarray(self.completes, dtype=np.int64)
        if not done.size:
            return self.pushes
        capture, first = self.units
        last = int(first[-1]) + self.emits if self.emits else 0
        return max(self.pushes + int(capture[-1] - done[-1]), last)

    def fewest_slots(self, rate: int | None = None) -> int | None:
        """The fewest snapshots with which the frame takes at most ``rate`` iterations (None: as few as with
        a snapshot per unit); None when no number of them does. Iterations never grow with slots, and from
        the most units ever waiting for their emission in the run with a slot per unit (``waiting``) on they
        stay the same, so a search below that finds it: doubling from 2, then halving the last step."""
        free = replace(self, slots=max(1, len(self.completes)))
        rate = free.iterations if rate is None else rate
        if free.iterations > rate:
            return None
        if replace(self, slots=1).iterations <= rate:
            return 1
        lo, q, most = 2, 2, free.waiting
        while q < most and replace(self, slots=q).iterations > rate:
            lo, q = q + 1, 2 * q
        hi = min(q, most)
        while lo < hi:
            mid = (lo + hi) // 2
            if replace(self, slots=mid).iterations <= rate:
                hi = mid
            else:
                lo = mid + 1
        return lo

    @cached_property
    def fastest_slots(self) -> int:
        """``fewest_slots()``: the fewest snapshots for the fastest rate."""
        return self.fewest_slots()

    @property
    def waiting(self) -> int:
        """The most units held at a capture (the one captured, and those captured before it whose last emit
        comes later): snapshots enough that no push waits."""
        done = np.asarray(self.completes, dtype=np.int64)
        if not done.size or not self.emits:
            return 1
        capture, first = self.units
        freed = np.searchsorted(first + self.emits - 1, capture, side="right")  # units whose last emit is done by then
        return int(max(1, (np.arange(len(done)) - freed + 1).max()))

    @property
    def writes(self) -> np.ndarray:
        """The iteration of each output written: the last fold of each."""
        return self.timing[1][self.folds - 1::self.folds]


class Folded:
    """A MAC stage's folding (mixed into WindowMain and RowsMain, which give ``simd``, ``products`` and
    ``strided``): each output's ``products`` products are computed ``simd`` per iteration (its
    multipliers), over ``folds`` = products / simd iterations; lane s of fold f computes product
    ``product(f, s)``: s * folds + f when ``strided`` (conv2d and matmul, whose weights are banked in
    blocks), else f * simd + s (dense, banked cyclically), so that the lanes of one fold read ``simd``
    different banks of the weights."""

    @property
    def folds(self) -> int:
        return self.products // self.simd

    def product(self, fold: int, lane: int) -> int:
        return lane * self.folds + fold if self.strided else fold * self.simd + lane


def check_simd(where: str, simd: int, products: int) -> None:
    if not isinstance(simd, int) or isinstance(simd, bool) or simd < 1 or products % simd:
        raise HlsfuseError(f"{where}: simd must be a divisor of its {products} products per output, not {simd!r}")


@dataclass(frozen=True)
class Streamed:
    """A folded dense stage of one row per frame: its ``pushes`` (tokens of ``lanes`` row elements), one per
    iteration from iteration 0, and its ``outputs`` x ``folds`` emits in fold-major order (fold f of every
    output token, then fold f + 1), each adding ``simd`` products per lane to its outputs' accumulators. Fold f
    needs row elements up to (f+1) x simd - 1, in push ceil((f+1) x simd / lanes) - 1, so its first emit waits
    until that push is done (in an earlier iteration); the outputs are written in the last fold. Emitting
    while the row is read hides the row's pushes that a snapshot would wait for."""

    pushes: int
    outputs: int  # emits per fold: output tokens (N / PE)
    folds: int
    simd: int
    lanes: int = 1  # row elements per push

    @cached_property
    def timing(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(iteration of each push, iteration of each emit, iterations per frame): emit e of fold f goes
        out at e + max over f' <= f of (ceil((f' + 1) x simd / lanes) - f' x outputs), one per iteration."""
        f = np.arange(self.folds, dtype=np.int64)
        need = -(-(f + 1) * self.simd // self.lanes)  # pushes done before fold f's first emit
        lead = np.maximum.accumulate(need - f * self.outputs)
        e = np.arange(self.outputs * self.folds, dtype=np.int64)
        emit = e + lead[e // self.outputs]
        push = np.arange(self.pushes, dtype=np.int64)
        return push, emit, int(max(self.pushes, emit[-1] + 1))

    @property
    def iterations(self) -> int:
        return self.timing[2]

    @property
    def writes(self) -> np.ndarray:
        return self.timing[1][(self.folds - 1) * self.outputs:]


# --------------------------------------------------------------------------
# map, fork
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class MapMain:
    count: int  # tokens per frame
    phase: ElementPhase  # over the sink's tokens (``ElementPhase.widen``)
    writes: tuple[str, ...]
    lanes: int = 1  # elements per token of the streamed inputs and the outputs

    @property
    def iterations(self) -> int:
        return self.count

    def io(self) -> dict[str, np.ndarray]:
        every = np.arange(self.count, dtype=np.int64)
        return dict.fromkeys((*(r.channel for r in self.phase.reads), *self.writes), every)


@dataclass(frozen=True)
class ForkMain:
    count: int  # tokens per frame
    read: str
    writes: tuple[str, ...]
    lanes: int = 1

    @property
    def iterations(self) -> int:
        return self.count

    def io(self) -> dict[str, np.ndarray]:
        every = np.arange(self.count, dtype=np.int64)
        return dict.fromkeys((self.read, *self.writes), every)


@dataclass(frozen=True)
class ConvertMain:
    """Tokens of ``lanes_in`` elements re-packed into tokens of ``lanes_out`` (a gearbox: element 0 of a token in
    lane 0, any two widths dividing the elements). Per iteration it reads an input token when fewer than
    ``lanes_out`` elements are kept, then writes an output token when it has ``lanes_out``; so it runs
    max(tokens in, tokens out) iterations, at most ``kept`` elements wait between them, and the lanes of
    ``fill`` elements kept (a multiple of gcd(lanes_in, lanes_out)) decide where each element goes:

        4 -> 6 lanes    iteration 0: read 0-3            kept 0-3
                        iteration 1: read 4-7, write 0-5 kept 6-7
                        iteration 2: read 8-11, write 6-11
    """

    elements: int  # per frame
    lanes_in: int
    lanes_out: int
    read: str
    write: str

    def __post_init__(self):
        if self.elements % self.lanes_in or self.elements % self.lanes_out:
            raise HlsfuseError(f"a width converter from {self.lanes_in} to {self.lanes_out} lanes over "
                               f"{self.elements} elements: both must divide the elements")

    @property
    def widens(self) -> bool:
        return self.lanes_out > self.lanes_in

    @property
    def kept(self) -> int:
        """Elements kept from one iteration to the next, at most."""
        return max(self.lanes_in, self.lanes_out) - math.gcd(self.lanes_in, self.lanes_out)

    @property
    def iterations(self) -> int:
        return self.elements // min(self.lanes_in, self.lanes_out)

    @property
    def span(self) -> int:
        """Elements an iteration holds at most: those kept, then the token read."""
        step = math.gcd(self.lanes_in, self.lanes_out)
        last_read = min(self.kept, self.lanes_out - 1) // step * step  # the largest fill that reads
        return max(self.kept, last_read + self.lanes_in)

    def sources(self) -> tuple[int, ...]:
        """Per element held (0 .. span - 1), how many different elements it may come from over the possible
        fills: a kept element, or one lane of the token read (a dividing pair needs one or two)."""
        a, b, step = self.lanes_in, self.lanes_out, math.gcd(self.lanes_in, self.lanes_out)
        out = []
        for p in range(self.span):
            kept = any(p < f for f in range(0, self.kept + 1, step))
            lanes = {p - f for f in range(0, min(self.kept, b - 1) + 1, step) if 0 <= p - f < a}
            out.append(int(kept) + len(lanes))
        return tuple(out)

    def io(self) -> dict[str, np.ndarray]:
        a, b = self.lanes_in, self.lanes_out
        every = np.arange(self.iterations, dtype=np.int64)
        if a >= b:  # every iteration writes; input token r is read by the first output needing element r a
            return {self.read: np.arange(self.elements // a, dtype=np.int64) * a // b, self.write: every}
        # every iteration reads; output token o is written once its last element (o + 1) b - 1 is in
        out = np.arange(1, self.elements // b + 1, dtype=np.int64) * b
        return {self.read: every, self.write: (out + a - 1) // a - 1}


# --------------------------------------------------------------------------
# window
# --------------------------------------------------------------------------


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
class WindowMain(Folded):
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

    strided = True

    @property
    def lanes(self) -> int:
        """Elements per token of the output and of the epilogue's streamed inputs."""
        return self.pe

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


# --------------------------------------------------------------------------
# rows
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RowsMain(Folded):
    """Rows of K elements, each pushed in K / ``lanes_in`` tokens, each giving N outputs emitted ``pe`` at a time
    (one output token of ``pe`` lanes per emit, over ``folds`` iterations): per row K / lanes_in pushes and
    N / pe x folds emits."""

    op: str  # the head's op, for the reader of the generated code
    products_innermost: bool  # the weights hold an output's products along their innermost axis (dense's w[N, K])
    batches: int  # batches of the output: its dims before the last two
    rows: int  # rows per batch
    k: int
    n: int
    read: str
    weights: str  # a constant or a held input: dense w[N, K], matmul b[..., K, N]
    offsets: tuple[int, ...]  # matmul: element offset of b's batch per output batch; () when always 0
    accumulator: Fmt | None
    epilogue: ElementPhase  # over the head's output tokens of ``pe`` elements (``ElementPhase.widen``)
    writes: tuple[str, ...]
    simd: int  # products per iteration, a divisor of k
    pe: int = 1  # output columns computed per emit (a divisor of n): the output token's lanes
    lanes_in: int = 1  # row elements per push (a divisor of k): the input token's lanes

    @property
    def lanes(self) -> int:
        """Elements per token of the output and of the epilogue's streamed inputs."""
        return self.pe

    @property
    def products(self) -> int:
        return self.k

    @property
    def strided(self) -> bool:
        return not self.products_innermost

    @property
    def pushes_per_row(self) -> int:
        return self.k // self.lanes_in

    @property
    def emits_per_row(self) -> int:
        """Output tokens per row (each emitted over ``folds`` iterations)."""
        return self.n // self.pe

    @property
    def base_rows(self) -> tuple[int, ...]:
        """matmul: ``offsets`` counted in rows of b (b seen as rows of N)."""
        return tuple(o // self.n for o in self.offsets)

    @property
    def streamed(self) -> bool:
        """One folded row per frame whose folds take consecutive products (``products_innermost``): emitted while
        it is read (``Streamed``), not from a snapshot."""
        return self.products_innermost and self.batches * self.rows == 1 and self.folds > 1

    @cached_property
    def engine(self) -> Engine | Streamed:
        per_row = self.pushes_per_row
        if self.streamed:
            return Streamed(per_row, self.emits_per_row, self.folds, self.simd, self.lanes_in)
        units = self.batches * self.rows
        return Engine(units * per_row, tuple(range(per_row - 1, units * per_row, per_row)),
                      self.emits_per_row * self.folds, self.folds)

    @property
    def iterations(self) -> int:
        return self.engine.iterations

    def io(self) -> dict[str, np.ndarray]:
        push = self.engine.timing[0]
        out = {self.read: push}
        out.update(dict.fromkeys((*(r.channel for r in self.epilogue.reads), *self.writes), self.engine.writes))
        return out


# --------------------------------------------------------------------------
# reduce
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReduceMain:
    """acc[j] combines every input element i whose kept coordinates are j's; j is an index of
    digits of i (``index``), and i is the first of its output when the ``first`` counters are 0.

    With ``lanes`` L > 1 an iteration reads a token of L consecutive innermost elements, and ``index`` and
    ``first`` count tokens (``elements.token_digits``). The output's lanes follow from the axes
    (``reduce_lanes_out``): when the innermost axis is kept, lane l of a token updates acc[index + l], the
    accumulators are banked cyclically L ways (bank l holds the j with j % L == l) and the output is written in
    tokens of ``lanes_out`` = L; when it is reduced, the L lanes belong to one output: they are combined first
    (a tree of L - 1 adders or comparators) into acc[index], and the output has ``lanes_out`` = 1."""

    combine: str  # sum | mean | max (ops/head.py; global_avg_pool is a mean over H and W)
    inputs: int  # N_in elements
    outputs: int  # N_out elements
    n: int  # input elements per output (a mean's divisor)
    prologue: ElementPhase  # over the head's input tokens of ``lanes``; its result is the value reduced
    index: tuple[Digit, ...]  # over input tokens
    first: tuple[tuple[int, int], ...]  # (inner, size) counters that are all 0 on an output's first token
    accumulator: Fmt | None  # sum/mean on fixed point; max keeps the input's format
    epilogue: ElementPhase  # over the head's output tokens of ``lanes_out``
    writes: tuple[str, ...]
    lanes: int = 1  # input elements per iteration (per token of the head and prologue inputs)
    lanes_out: int = 1  # output elements per token: ``lanes`` or 1 (``reduce_lanes_out``)

    @property
    def in_tokens(self) -> int:
        return self.inputs // self.lanes

    @property
    def out_tokens(self) -> int:
        return self.outputs // self.lanes_out

    @property
    def combines(self) -> bool:
        """The lanes of a token update one accumulator (the innermost axis is reduced): a tree combines them."""
        return self.lanes > 1 and self.lanes_out == 1

    @property
    def address(self) -> tuple[Digit, ...]:
        """The accumulator's index within its bank (``index`` over the ``lanes_out`` cyclic banks): every stride of
        ``index`` is then a multiple of ``lanes_out``."""
        return tuple((inner, size, stride // self.lanes_out) for inner, size, stride in self.index)

    @property
    def iterations(self) -> int:
        return self.in_tokens + self.out_tokens

    def io(self) -> dict[str, np.ndarray]:
        ins = np.arange(self.in_tokens, dtype=np.int64)
        outs = np.arange(self.in_tokens, self.iterations, dtype=np.int64)
        out = {r.channel: ins for r in self.prologue.reads}
        out.update(dict.fromkeys((*(r.channel for r in self.epilogue.reads), *self.writes), outs))
        return out

    @cached_property
    def distance(self) -> int:
        """Iterations between two updates of the same accumulator, at the soonest (each bank sees the same
        updates, lane l at index + l)."""
        j = np.zeros(self.in_tokens, dtype=np.int64)
        i = np.arange(self.in_tokens, dtype=np.int64)
        for inner, size, stride in self.index:
            j += (i // inner) % size * stride
        order = np.argsort(j, kind="stable")
        same = j[order][1:] == j[order][:-1]
        gaps = np.diff(order)[same]
        return int(gaps.min()) if gaps.size else self.in_tokens


# --------------------------------------------------------------------------
# Schedule
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """One stage's loop: setup loops (held inputs, pre loops), then the kind's main part."""

    kind: str
    held: tuple[Held, ...]
    main: object  # MapMain | ForkMain | WindowMain | RowsMain | ReduceMain | an own op's main (own.py)
    buffers: tuple[Buffer, ...]
    state: tuple[State, ...]
    macs: int = 0  # multiply-accumulates per frame
    multipliers: int = 0  # products computed per iteration

    @property
    def lanes(self) -> int:
        """Elements per token of the streamed channels of a map or fork stage, of a window or rows stage's output
        and epilogue inputs (its PE), of a reduce or own stage's input (and a reduce stage's prologue inputs); 1 for
        every other kind."""
        return getattr(self.main, "lanes", 1)

    def node_lanes(self, name: str) -> int:
        """Elements node ``name`` is computed for per iteration: a reduce stage's prologue runs over its input
        lanes, its head's accumulation and its epilogue over its output lanes; every other stage over ``lanes``."""
        if self.kind == "reduce":
            return self.main.lanes if name in self.main.prologue.nodes else self.main.lanes_out
        return self.lanes

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        return tuple(getattr(self.main, name) for name in ("phase", "prologue", "epilogue") if hasattr(self.main, name))

    @property
    def setup(self) -> tuple[Held | object, ...]:
        """The setup loops in order: each held input, then every pre loop of the phases."""
        return (*self.held, *(p for ph in self.phases for p in ph.pre))

    @property
    def setup_iterations(self) -> int:
        return sum(h.size for h in self.held) + sum(p.program.count for ph in self.phases for p in ph.pre)

    @property
    def iterations(self) -> int:
        """Cycles per frame: one iteration per cycle."""
        return self.setup_iterations + self.main.iterations

    @cached_property
    def io(self) -> dict[str, np.ndarray]:
        """Per channel read or written: the iteration (within a frame) of each of its tokens."""
        out, at = {}, 0
        for h in self.held:
            out[h.channel] = np.arange(at, at + h.size, dtype=np.int64)
            at += h.size
        offset = self.setup_iterations
        for channel, iters in self.main.io().items():
            if channel in out:
                raise HlsfuseError(f"a stage reads channel '{channel}' both whole and streamed")
            out[channel] = iters + offset
        return out

    @property
    def storage(self) -> int:
        """Elements of data the stage stores (its ROMs not counted)."""
        return sum(b.elements for b in self.buffers if not b.rom)

    def buffer(self, name: str) -> Buffer:
        """The buffer of role ``name``, or of tensor ``name`` (a held input, a pre-loop result)."""
        for b in self.buffers:
            if b.name == name or b.tensor == name:
                return b
        raise HlsfuseError(f"the {self.kind} stage's schedule has no buffer '{name}'")

    @property
    def bound(self) -> int:
        """The physical floor of cycles per frame: a channel moves one token per cycle, and the stage's
        multipliers compute ``multipliers`` products per cycle."""
        tokens = max((len(v) for v in self.io.values()), default=0)
        return max(tokens, math.ceil(self.macs / self.multipliers) if self.multipliers else 0)


# --------------------------------------------------------------------------
# Builders of the kinds above (own ops: own.py)
# --------------------------------------------------------------------------


def held_inputs(graph: Graph, pairs, used: set[str]) -> tuple[Held, ...]:
    return tuple(Held(ch, t, graph.types[t].size, t in used) for ch, t in pairs)


Parts = dict[str, dict]
"""tensor -> how its array is banked for parallel reads: ``memory``'s keywords (banks, banking, columns,
column_banks)."""


def held_buffers(graph: Graph, held: tuple[Held, ...], parts: Parts | None = None) -> list[Buffer]:
    """The arrays of the held inputs (``parts``: of those read in parallel)."""
    # a held element e is read in the main loop no sooner than the held loops' end (the
    # broadcast index of element e is at least e), so memories have a long write-to-read distance
    parts = parts or {}
    return [memory(f"held {h.tensor}", h.size, graph.types[h.tensor].dtype.bits, h.size, tensor=h.tensor,
                   **parts.get(h.tensor, {})) for h in held if h.kept]


def phase_buffers(graph: Graph, phases, parts: Parts | None = None) -> list[Buffer]:
    """The arrays of the phases' pre-loop results, then the ROMs of the constants their programs read
    (``parts``: of those read in parallel)."""
    # a pre-loop result is read by the main loop only, after every setup loop
    parts = parts or {}
    out = [memory(f"pre {n}", p.program.count, graph.types[n].dtype.bits, p.program.count, tensor=n,
                  **parts.get(n, {})) for ph in phases for p in ph.pre for n in p.kept]
    programs = [ph.program for ph in phases] + [p.program for ph in phases for p in ph.pre]
    constants = dict.fromkeys(o.tensor for program in programs for step in program.steps for o in step.operands
                              if o.source == "rom")
    for c in constants:
        t = graph.types[c]
        out.append(memory(f"rom {c}", t.size, t.dtype.bits, tensor=c, rom=True, **parts.get(c, {})))
    return out


def head_of(graph: Graph, head: str) -> Head:
    """What stage head ``head`` computes (its registry entry's ``Head``)."""
    return get_op(graph.node(head).op).head_of(graph.sigs[head])


def window_geometry(graph: Graph, head: str, lanes: int = 1) -> WindowGeometry:
    """``lanes``: channels per push (a divisor of C)."""
    node = graph.node(head)
    window = head_of(graph, head).window
    n, h, w, c = graph.types[node.inputs[0]].shape
    (kh, kw), (sh, sw), (dh, dw) = window.kernel, window.strides, window.dilation
    if c % lanes:
        raise HlsfuseError(f"{node.where()}: lanes {lanes} does not divide its {c} input channels")
    return WindowGeometry(n, h, w, c, kh, kw, sh, sw, *window.padding, dh, dw, lanes)


def _accumulator(spec: Head, where: str) -> Fmt | None:
    return spec.accumulator.check(f"{where}: the exact accumulation") if spec.accumulator is not None else None


def window_main(graph: Graph, head: str, read: str, epilogue: ElementPhase, writes,
                simd: int | None = None, pe: int = 1, lanes: int = 1, snapshots: int = 1) -> WindowMain:
    """``simd``: products per iteration of a MAC (None: all of an output's, one output per iteration);
    ``pe``: output channels per emit (``epilogue`` is over tokens of that many); ``lanes``: input channels
    per push; ``snapshots``: completed windows held for emission."""
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
    return WindowMain(node.op, spec.combine, spec.terms, geometry, cout, spec.groups, read, weights, divisor, counts,
                      _accumulator(spec, node.where()), epilogue, tuple(writes), simd, pe, snapshots)


def batch_offsets(node, a_shape, b_shape, out_shape) -> tuple[int, ...]:
    """Per output batch of a matmul, the element offset of the batch of b it multiplies (broadcasting)."""
    out_batch, a_batch, b_batch = out_shape[:-2], a_shape[:-2], b_shape[:-2]
    if math.prod(a_batch) != math.prod(out_batch):
        raise HlsfuseError(
            f"{node.where()}: input 'a' with batch dims {list(a_batch)} is broadcast to the output's "
            f"{list(out_batch)}; a stage streams 'a' once, so its batch dims must match the output's"
        )
    matrix = b_shape[-2] * b_shape[-1]
    index = np.arange(math.prod(b_batch), dtype=np.int64).reshape(b_batch)
    offsets = np.broadcast_to(index.reshape((1,) * (len(out_batch) - len(b_batch)) + tuple(b_batch)), out_batch)
    flat = tuple(int(v) * matrix for v in offsets.reshape(-1))
    return flat if any(flat) else ()


def rows_main(graph: Graph, head: str, read: str, epilogue: ElementPhase, writes, simd: int | None = None,
              pe: int = 1, lanes: int = 1) -> RowsMain:
    """``simd``: products per iteration (None: all k, one output per iteration); ``pe``: output columns per
    emit (``epilogue`` is over tokens of that many); ``lanes``: row elements per push."""
    node = graph.node(head)
    spec = head_of(graph, head)
    x, w = node.inputs[0], node.inputs[spec.weights]
    x_type, w_type, out_type = graph.types[x], graph.types[w], graph.types[head]
    k, n = spec.terms, out_type.shape[-1]
    batches, rows = math.prod(out_type.shape[:-2]), (out_type.shape[-2] if len(out_type.shape) > 1 else 1)
    # a weight matrix with batch dims (a matmul's b) is broadcast to the output's batches
    offsets = batch_offsets(node, x_type.shape, w_type.shape, out_type.shape)
    simd = k if simd is None else simd
    check_simd(node.where(), simd, k)
    if k % lanes or n % pe:
        raise HlsfuseError(f"{node.where()}: lanes {lanes} and pe {pe} must divide its {k} row elements and "
                           f"{n} columns")
    return RowsMain(node.op, spec.products_innermost, batches, rows, k, n, read, w, offsets,
                    _accumulator(spec, node.where()), epilogue, tuple(writes), simd, pe, lanes)


def reduce_axes(graph: Graph, head: str) -> tuple[int, ...]:
    return head_of(graph, head).axes


def reduce_lanes_out(graph: Graph, head: str, lanes: int) -> int:
    """The lanes of a reduce stage's output for ``lanes`` input elements per iteration: ``lanes`` when the
    input's innermost axis is kept (a token's lanes update consecutive accumulators, and the output's innermost
    axis is the input's), 1 when it is reduced (they all go into one accumulator)."""
    ndim = len(graph.sigs[head].shapes[0])
    return 1 if ndim and ndim - 1 in reduce_axes(graph, head) else lanes


def reduce_main(graph: Graph, head: str, prologue: ElementPhase, epilogue: ElementPhase, writes,
                lanes: int = 1) -> ReduceMain:
    """``prologue`` and ``epilogue`` over single elements (widened here); ``lanes``: input elements per iteration
    (a divisor of the input's innermost dimension)."""
    node = graph.node(head)
    spec = head_of(graph, head)
    source = graph.types[node.inputs[0]]
    axes = spec.axes
    shape = source.shape
    kept = tuple(1 if a in axes else d for a, d in enumerate(shape))
    reduced = tuple(d if a in axes else 1 for a, d in enumerate(shape))
    where = node.where()
    lanes_out = reduce_lanes_out(graph, head, lanes)
    # over tokens; a digit of size 1 (a run of exactly L elements) is always 0
    index = tuple(d for d in token_digits(broadcast_digits(shape, kept), lanes, where, node.inputs[0])[0] if d[1] > 1)
    first = [d for d in token_digits(broadcast_digits(shape, reduced), lanes, where, node.inputs[0])[0] if d[1] > 1]
    return ReduceMain(
        combine=spec.combine,
        inputs=source.size,
        outputs=graph.types[head].size,
        n=spec.terms,
        prologue=prologue.widen(lanes, where),
        index=index,
        first=tuple(dict.fromkeys((d[0], d[1]) for d in first)),
        accumulator=_accumulator(spec, where),
        epilogue=epilogue.widen(lanes_out, where),
        writes=tuple(writes),
        lanes=lanes,
        lanes_out=lanes_out,
    )
