"""Reduce stages: sums, means and maxima over axes, one accumulator per output element.

    reduce  N_in / L iterations accumulating a token of L input elements each, then N_out / L_o iterations
            emitting a token of L_o output elements (L_o = L when the innermost axis is kept, else 1)

A prologue of map nodes computes the value reduced from the head's input tokens, an epilogue the stage's
output from the head's result; the head's facts (what it combines, its axes and exact accumulator) are its
registry entry's ``Head`` (ops/head.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import HlsfuseError
from ..ir import Graph
from ..types import Fmt
from . import elements
from .elements import Digit, ElementPhase, broadcast_digits, token_digits
from .schedule import Factors, Schedule, StageInputs, exact_accumulator, head_of
from .storage import COUNTERS, State, held_buffers, held_inputs, lane_parts, memory, phase_buffers

__all__ = ["ReduceMain", "reduce_main", "reduce_axes", "reduce_lanes_out", "reduce_schedule"]


@dataclass(frozen=True)
class ReduceMain:
    """acc[j] combines every input element i whose kept coordinates are j's; j is an index of
    digits of i (``index``), and i is the first of its output when the ``first`` counters are 0.

    With ``lanes_in`` L > 1 an iteration reads a token of L consecutive innermost elements, and ``index`` and
    ``first`` count tokens (``elements.token_digits``). The output's lanes follow from the axes
    (``reduce_lanes_out``): when the innermost axis is kept, lane l of a token updates acc[index + l], the
    accumulators are banked cyclically L ways (bank l holds the j with j % L == l) and the output is written in
    tokens of ``lanes_out`` = L; when it is reduced, the L lanes belong to one output: they are combined first
    (a tree of L - 1 adders or comparators) into acc[index], and the output has ``lanes_out`` = 1."""

    combine: str  # sum | mean | max (ops/head.py; global_avg_pool is a mean over H and W)
    inputs: int  # N_in elements
    outputs: int  # N_out elements
    n: int  # input elements per output (a mean's divisor)
    prologue: ElementPhase  # over the head's input tokens of ``lanes_in``; its result is the value reduced
    index: tuple[Digit, ...]  # over input tokens
    first: tuple[tuple[int, int], ...]  # (inner, size) counters that are all 0 on an output's first token
    accumulator: Fmt | None  # sum/mean on fixed point; max keeps the input's format
    epilogue: ElementPhase  # over the head's output tokens of ``lanes_out``
    writes: tuple[str, ...]
    lanes_in: int = 1  # input elements per iteration (per token of the head and prologue inputs)
    lanes_out: int = 1  # output elements per token: ``lanes_in`` or 1 (``reduce_lanes_out``)

    @property
    def in_tokens(self) -> int:
        return self.inputs // self.lanes_in

    @property
    def out_tokens(self) -> int:
        return self.outputs // self.lanes_out

    @property
    def combines(self) -> bool:
        """The lanes of a token update one accumulator (the innermost axis is reduced): a tree combines them."""
        return self.lanes_in > 1 and self.lanes_out == 1

    @property
    def address(self) -> tuple[Digit, ...]:
        """The accumulator's index within its bank (``index`` over the ``lanes_out`` cyclic banks): every stride of
        ``index`` is then a multiple of ``lanes_out``."""
        return tuple((inner, size, stride // self.lanes_out) for inner, size, stride in self.index)

    @property
    def iterations(self) -> int:
        return self.in_tokens + self.out_tokens

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("accumulate", self.in_tokens), ("emit", self.out_tokens))

    @property
    def factors(self) -> Factors:
        return Factors(lanes_in=self.lanes_in, lanes_out=self.lanes_out)

    @property
    def phases(self) -> tuple[ElementPhase, ...]:
        return (self.prologue, self.epilogue)

    def node_lanes(self, name: str) -> int:
        """The prologue runs over the input lanes; the head's accumulation and the epilogue over the output's."""
        return self.lanes_in if name in self.prologue.nodes else self.lanes_out

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
        accumulator=exact_accumulator(spec, where),
        epilogue=epilogue.widen(lanes_out, where),
        writes=tuple(writes),
        lanes_in=lanes,
        lanes_out=lanes_out,
    )


def reduce_schedule(s: StageInputs) -> Schedule:
    graph, head, uses = s.graph, s.head, s.uses
    streamed = uses["head"] + uses["pre"]
    if len({t for _, t in streamed}) != len(streamed):
        raise HlsfuseError(f"stage '{s.name}': reads one tensor on two channels in the same loop")
    source = graph.node(head).inputs[0]
    prologue = elements.phase(graph, s.prologue, graph.types[source].size, (), streamed, s.held_names, source)
    epilogue = elements.phase(graph, s.epilogue, graph.types[head].size, {head}, uses["post"], s.held_names, head)
    held = held_inputs(graph, uses["held"], s.used([prologue, epilogue]))
    lanes_in = s.factors.lanes_in
    main = reduce_main(graph, head, prologue, epilogue, s.outs, lanes_in)  # lanes checked by the lowering
    if main.lanes_out != s.factors.lanes_out:
        raise HlsfuseError(f"stage '{s.name}': a reduce stage of {lanes_in} input lanes writes "
                           f"{main.lanes_out}, not {s.factors.lanes_out}")
    if main.accumulator is not None:
        acc_bits = main.accumulator.width
    else:  # max keeps the input's type; float32 sums accumulate in double
        dtype = graph.types[source].dtype
        acc_bits = 64 if dtype.is_float and main.combine != "max" else dtype.bits
    # lane l of an output token reads (and of an input token updates, the innermost axis kept) bank l
    parts = {**lane_parts(main.epilogue, main.lanes_out), **lane_parts(main.prologue, main.lanes_in)}
    buffers = (memory("accumulators", main.outputs, acc_bits, main.distance, banks=main.lanes_out,
                      banking="cyclic"),
               *held_buffers(graph, held, parts), *phase_buffers(graph, [main.prologue, main.epilogue], parts))
    return Schedule("reduce", held, main, buffers, (COUNTERS, State("accumulators", "first")))
