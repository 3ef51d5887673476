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

Each kind has its module (``stage_<kind>.py``): its ``Main`` (the part of the loop after the setup loops)
and the builder of its schedule, which ``stages.py`` dispatches to through its kind table. Storage
is in ``storage.py``, the push/emit loop of window and rows stages in ``engine.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from ..boards import Dsp, Target
from ..errors import HlsfuseError
from ..ir import Graph
from ..ops import get_op
from ..ops.head import Head
from ..types import Fmt
from .elements import ElementPhase
from .storage import Buffer, Held, State

__all__ = ["FOLDS", "MULTIPLIERS", "Factors", "Main", "Schedule", "StageInputs", "head_of", "exact_accumulator"]

FOLDS = {"map": ("lanes",), "window": ("simd", "lanes", "pe", "snapshots", "multiplier"),
         "rows": ("simd", "lanes", "pe", "multiplier"),
         "reduce": ("lanes",), "own": ("lanes",), "fork": ("lanes",), "convert": ()}
"""Stage kind -> its factors as a folding gives them and fold.json spells them (``Factors.spelled``); a fork's
lanes are its producer's, shown but never given."""

MULTIPLIERS = ("dsp", "lut", "packed")
"""How a MAC stage builds its products: ``dsp``, DSP slices (``area.dsp_per_product`` each; a product whose
narrower operand has at most LUT_PRODUCT_BITS bits is LUTs anyway), ``lut``, every product from LUTs
(``area.lut_multiplier``), for when the DSPs run out before the LUTs do, or ``packed``, the products of PE lanes
2i and 2i + 1 two to a DSP slice (``packing.py``; an odd PE's last lane on DSPs). All compute the same exact
products."""


DEFAULT_DSP = Target().dsp_slice
"""The DSP slice a lowering shapes packed products for when it is not told (``LowerOptions.dsp``): the default
target's."""


@dataclass(frozen=True)
class Factors:
    """How a stage is folded, the one record of it: ``simd`` (a MAC's products per iteration; None for other
    stages), ``pe`` (a window or rows stage's outputs per emit), ``lanes_in`` (elements per token of its head
    input, or of every streamed token of a map or fork stage), ``lanes_out`` (of its output) and ``snapshots``
    (a window stage's completed windows held for emission) and ``multiplier`` (how a MAC stage's products are
    built: ``MULTIPLIERS``). fold.json, report.json, the stage table and the solver read and write these
    (``fold.py``)."""

    simd: int | None = None
    pe: int = 1
    lanes_in: int = 1
    lanes_out: int = 1
    snapshots: int = 1
    multiplier: str = "dsp"

    def spelled(self, kind: str) -> dict[str, int]:
        """The factors of a ``kind`` stage as fold.json spells them (``FOLDS``): ``simd`` (absent for a pool),
        ``lanes`` (``lanes_in``), ``pe``, ``snapshots``, ``multiplier`` (a MAC stage's, when not the default)."""
        values = {"simd": self.simd, "lanes": self.lanes_in, "pe": self.pe, "snapshots": self.snapshots,
                  "multiplier": self.multiplier if self.simd is not None and self.multiplier != "dsp" else None}
        return {k: values[k] for k in FOLDS[kind] if values[k] is not None}

    def reads(self, use: str) -> int:
        """Elements per token the stage reads of an input it uses as ``use`` (``stages.layout``): its head's
        input and a reduce stage's prologue inputs at ``lanes_in``, an epilogue's at ``lanes_out``, a whole
        input held by the stage (weights computed by another stage, a matmul's held operand) one at a time."""
        if use in ("head", "pre"):
            return self.lanes_in
        return self.lanes_out if use == "post" else 1

    def to_json(self) -> dict[str, int | None]:
        """Every factor, as report.json gives them per stage."""
        return {"simd": self.simd, "lanes": self.lanes_in, "pe": self.pe, "lanes_out": self.lanes_out,
                "snapshots": self.snapshots, "multiplier": self.multiplier if self.simd is not None else None}


class Main(Protocol):
    """The main part of a stage's loop, after its setup loops, as every kind's module builds it."""

    @property
    def iterations(self) -> int:
        """Iterations per frame."""

    def io(self) -> dict[str, np.ndarray]:
        """Per channel it reads or writes: the iteration of each token (from its first iteration)."""

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        """(what, iterations) of each of its loops, in order; they repeat until ``iterations`` are done."""

    @property
    def lanes_in(self) -> int:
        """Elements per token of the head input (of every streamed token of a map or fork stage)."""

    @property
    def lanes_out(self) -> int:
        """Elements per token of the output."""

    @property
    def factors(self) -> Factors: ...

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        """Its element phases (``elements.py``), in order."""

    def node_lanes(self, name: str) -> int:
        """Elements node ``name`` is computed for per iteration."""


@dataclass(frozen=True)
class StageInputs:
    """What a kind's builder gets: stage ``name`` of ``graph`` computing ``nodes`` (``head``, with the
    ``prologue`` nodes before it and the ``epilogue`` after), its input channels by use (``uses``: "head",
    "pre", "post" or "held" -> (channel, tensor) pairs, ``stages.layout``), its output channels ``outs``,
    and its ``factors``."""

    graph: Graph
    name: str
    nodes: tuple[str, ...]
    head: str | None
    prologue: tuple[str, ...]
    epilogue: tuple[str, ...]
    uses: dict[str, tuple[tuple[str, str], ...]]
    outs: tuple[str, ...]
    factors: Factors = field(default_factory=Factors)
    dsp: Dsp = DEFAULT_DSP  # the DSP slice packed products are shaped for (multiplier "packed")

    @property
    def held_names(self) -> set[str]:
        return {t for _, t in self.uses["held"]}

    def needed(self, sink: str) -> tuple[str, ...]:
        """The nodes ``sink`` depends on, so no value is computed for nothing."""
        needed = {sink}
        for name in reversed(self.nodes):
            if name in needed:
                needed.update(self.graph.node(name).inputs)
        return tuple(n for n in self.nodes if n in needed)

    def used(self, phases) -> set[str]:
        """Tensors the phases' nodes read (held inputs no node reads are read and dropped)."""
        names = [s.node for ph in phases for s in ph.program.steps]
        names += [s.node for ph in phases for p in ph.pre for s in p.program.steps]
        return {src for n in names for src in self.graph.node(n).inputs}


@dataclass(frozen=True)
class Schedule:
    """One stage's loop: setup loops (held inputs, pre loops), then the kind's main part."""

    kind: str
    held: tuple[Held, ...]
    main: Main
    buffers: tuple[Buffer, ...]
    state: tuple[State, ...]
    macs: int = 0  # multiply-accumulates per frame
    multipliers: int = 0  # products computed per iteration

    @property
    def factors(self) -> Factors:
        return self.main.factors

    @property
    def lanes_in(self) -> int:
        return self.main.lanes_in

    @property
    def lanes_out(self) -> int:
        return self.main.lanes_out

    def node_lanes(self, name: str) -> int:
        """Elements node ``name`` is computed for per iteration."""
        return self.main.node_lanes(name)

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        return self.main.phases

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        """(what, iterations) of each loop, in order: the setup loops, then the main's (which repeat until the
        frame's iterations are done)."""
        held = tuple((f"read '{h.tensor}' whole", h.size) for h in self.held)
        pre = tuple((f"compute {', '.join(p.kept) or 'nodes'} before the main loop", p.program.count)
                    for ph in self.phases for p in ph.pre)
        return (*held, *pre, *self.main.loops)

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




def head_of(graph: Graph, head: str) -> Head:
    """What stage head ``head`` computes (its registry entry's ``Head``)."""
    return get_op(graph.node(head).op).head_of(graph.sigs[head])


def exact_accumulator(spec: Head, where: str) -> Fmt | None:
    """The head's exact accumulator (None: max, or float32), checked to fit 64 bits."""
    return spec.accumulator.check(f"{where}: the exact accumulation") if spec.accumulator is not None else None
