"""Map and fork stages: one iteration per token, every streamed channel moving a token in every iteration.

    map     N / L iterations (L lanes): read a token of every streamed input, compute its L elements
            (the element phase over the sink's tokens, ``elements.py``), write a token of the sink
    fork    N / L iterations: read a token, write it to every output
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import elements
from .elements import ElementPhase
from .schedule import Factors, Schedule, StageInputs
from .storage import COUNTERS, State, held_buffers, held_inputs, lane_parts, phase_buffers

__all__ = ["MapMain", "ForkMain", "map_schedule", "fork_schedule"]


class _Tokens:
    """A main whose every streamed token, in and out, has ``lanes`` elements."""

    lanes: int

    @property
    def lanes_in(self) -> int:
        return self.lanes

    @property
    def lanes_out(self) -> int:
        return self.lanes

    @property
    def factors(self) -> Factors:
        return Factors(lanes_in=self.lanes, lanes_out=self.lanes)

    def node_lanes(self, name: str) -> int:
        return self.lanes


@dataclass(frozen=True)
class MapMain(_Tokens):
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

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("read, compute, write", self.count),)

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        return (self.phase,)


@dataclass(frozen=True)
class ForkMain(_Tokens):
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

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("copy", self.count),)

    phases = ()




def map_schedule(s: StageInputs) -> Schedule:
    """The nodes the sink needs, one element phase over its tokens (``factors.lanes_in`` elements each)."""
    graph, sink, lanes = s.graph, s.nodes[-1], s.factors.lanes_in
    phase = elements.phase(graph, s.needed(sink), graph.types[sink].size, (), s.uses["post"], s.held_names, sink)
    held = held_inputs(graph, s.uses["held"], s.used([phase]))
    phase = phase.widen(lanes, f"stage '{s.name}'")  # lanes checked by the lowering (``check_lanes``)
    parts = lane_parts(phase, lanes)
    state = (COUNTERS, *([State("held inputs", "overwritten")] if held else ()))
    buffers = (*held_buffers(graph, held, parts), *phase_buffers(graph, [phase], parts))
    return Schedule("map", held, MapMain(phase.count, phase, s.outs, lanes), buffers, state)


def fork_schedule(size: int, source: str, outputs: tuple[str, ...], lanes: int = 1) -> Schedule:
    return Schedule("fork", (), ForkMain(size // lanes, source, outputs, lanes), (), (COUNTERS,))
