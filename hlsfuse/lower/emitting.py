"""What window and rows stages share: outputs emitted PE at a time, their epilogue, and their weights.

The head streams its data input on one channel; a MAC's weights are a constant (a ROM of the stage's own) or
an input held whole. The lanes of a fold read SIMD banks of the weights: in blocks when the weights hold the
outputs along their innermost axis (a conv2d's [products][Cout], a matmul's b, per batch of b), cyclically
when they hold the products (a dense w[N][K]); the PE lanes of an emit read PE consecutive outputs (columns):
each row cyclically PE ways, or, for a dense w, PE cyclic banks of rows, each row cyclically SIMD ways.
"""

from __future__ import annotations

from ..errors import HlsfuseError
from . import elements
from .elements import ElementPhase
from .engine import Folded
from .schedule import Schedule, StageInputs, head_of
from .storage import COUNTERS, State, held_buffers, held_inputs, lane_parts, memory, phase_buffers

__all__ = ["Emitting", "emitting_schedule"]


class Emitting(Folded):
    """What the mains of window and rows stages share (the ``Main`` protocol): one push/emit loop, outputs of
    ``pe`` elements per token, and the epilogue as their element phase."""

    epilogue: ElementPhase
    pe: int

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("push and emit", self.iterations),)

    @property
    def lanes_out(self) -> int:
        """Elements per token of the output and of the epilogue's streamed inputs: the PE."""
        return self.pe

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        return (self.epilogue,)

    def node_lanes(self, name: str) -> int:
        return self.pe


def emitting_schedule(s: StageInputs, kind: str, build) -> Schedule:
    """The schedule of a ``kind`` stage (window or rows); ``build(read, epilogue)`` -> (main, its own buffers, MACs per
    frame, outputs per position (Cout or N), whether its row is streamed)."""
    graph, head, uses = s.graph, s.head, s.uses
    node = graph.node(head)
    heads = uses["head"]
    if uses["pre"] or len(heads) != 1 or heads[0][1] != node.inputs[0]:
        raise HlsfuseError(f"stage '{s.name}': must stream '{node.inputs[0]}' into '{head}' on one channel")
    spec = head_of(graph, head)
    weights = node.inputs[spec.weights] if spec.weights is not None else None
    if weights is not None and weights not in graph.constant_map and weights not in s.held_names:
        raise HlsfuseError(f"{node.where()}: input '{weights}' is neither a constant nor held by its stage")
    epilogue = elements.phase(graph, s.epilogue, graph.types[head].size, {head}, uses["post"], s.held_names, head)
    held = held_inputs(graph, uses["held"], s.used([epilogue]) | {weights})
    epilogue = epilogue.widen(s.factors.pe, f"stage '{s.name}'")  # the PE output channels (columns) per emit
    main, own, macs, columns, streamed = build(heads[0][0], epilogue)
    parts, weight_buffers = lane_parts(epilogue, main.pe), []
    if weights is not None:
        size = graph.types[weights].size
        matrices = size // (main.products * columns)  # a matmul's b with batch dims holds several
        # strided: each matrix in SIMD blocks of rows; else a fold's SIMD consecutive products, in every matrix
        parts[weights] = {"banks": main.simd * matrices, "banking": "block"} if main.strided else {
            "banks": main.simd, "banking": "cyclic"}
        if main.pe > 1 and not main.strided:
            parts[weights] = {"banks": main.pe, "banking": "cyclic", "columns": main.products,
                              "column_banks": main.simd}
        elif main.pe > 1:
            parts[weights].update(columns=columns, column_banks=main.pe)
        if weights in graph.constant_map:
            weight_buffers = [memory(f"rom {weights}", size, graph.types[weights].dtype.bits, tensor=weights,
                                     rom=True, **parts[weights])]
    multipliers = main.simd * main.pe if macs else 0
    buffers = (*own, *weight_buffers, *held_buffers(graph, held, parts), *phase_buffers(graph, [epilogue], parts))
    state = [COUNTERS, State(own[0].name, "overwritten")]
    if streamed:
        state.append(State("accumulators", "first"))
    else:
        state.append(State("snapshot", "overwritten"))
        if main.folds > 1:
            state.append(State("partial sum", "first"))
    return Schedule(kind, held, main, buffers, tuple(state), macs, multipliers)
