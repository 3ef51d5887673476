"""Element programs: the map nodes a stage computes once per element of a loop, as backend-neutral data.

Every stage kind computes its elementwise nodes the same way: a map stage's body, the epilogue
of a convolution or dense group (once per output element), the prologue of a reduction (once per
input element). A *phase* is such a run of nodes over the ``count`` elements of a loop:

    pre loops    nodes smaller than the loop that depend only on held inputs and constants
                 (a gate computed from a per-channel scale): computed first, kept in arrays
    reads        the streamed inputs read once per element (one no node uses is read and dropped)
    program      one step per node, in topological order; each step assigns the node once, so
                 every backend rounds exactly where the reference rounds (DESIGN.md section 3)

An operand of a step is a *value* (a streamed input read this element, an earlier step, the
head's result) or an element of an *array* (a held input, a pre-loop result) or of a *rom* (a
graph constant), or a *wired* constant (one value everywhere, the factor of a multiplication
built as shifts and adds: ``shift_add``; it has no ROM). Arrays and ROMs smaller than the step
(broadcast operands) are read at

    index = sum over digits (inner, size, stride) of ((i / inner) % size) * stride

where i is the loop's flat element index, after merging adjacent dims that broadcast alike. A
backend keeps one counter per distinct (inner, size) and advances it once per element, so no
division happens in hardware; the digit (1, count) is the loop index itself.

    node [2, 3, 4], bias [4]       ->  digits ((1, 4, 1),)            bias[i % 4]
    node [2, 3, 4], x [2, 1, 4]    ->  digits ((1, 4, 1), (12, 2, 4))  x[i % 4 + ((i / 12) % 2) * 4]

A loop over wide tokens (``lanes`` L elements each, L dividing the innermost dimension of every
node) runs the program once per lane of token t, element i = t * L + l. ``tokens(program, L)``
rewrites it over the tokens: a digit (1, size, stride) becomes (1, size / L, stride * L) plus
``l * stride`` (the operand's ``lane`` offset), any other (inner, size, stride) becomes
(inner / L, size, stride), since L divides inner and l < L cannot carry into it:

    node [2, 3, 4], bias [4], L = 2  ->  digits ((1, 2, 2),), lane 1   bias[(t % 2) * 2 + l]

An input an op reads a whole row of per element (``OpDef.rows``: threshold's n thresholds per channel)
is a ROM operand with ``row`` n: its digits index rows (the input's shape without its last axis,
broadcast like any operand), and the ROM holds a row per word.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..errors import HlsfuseError
from ..ir import Graph
from ..ops import get_op
from .shift_add import shift_add

__all__ = ["Digit", "Operand", "Step", "Program", "PreLoop", "Read", "ElementPhase", "broadcast_digits", "phase",
           "tokens", "token_digits"]

Digit = tuple[int, int, int]
"""(inner, size, stride): the term ((i / inner) % size) * stride of an index."""


@dataclass(frozen=True)
class Operand:
    tensor: str
    source: str  # "value" | "array" (held input or pre-loop result) | "rom" (graph constant) | "wired" (a
    # constant factor built into a shift-add multiplier, ``shift_add``: no ROM, never read)
    digits: tuple[Digit, ...] = ()  # the index of an array or ROM element (of a row, when ``row`` > 1)
    lane: int = 0  # in a loop over wide tokens: the index's offset per lane (``tokens``)
    row: int = 0  # > 0: a ROM read a whole row of its last axis (this many values) at once (``OpDef.rows``), by row


@dataclass(frozen=True)
class Step:
    """Compute ``node`` (a map op) from its operands, in the node's input order."""

    node: str
    operands: tuple[Operand, ...]


@dataclass(frozen=True)
class Program:
    """Steps computed once per element of a loop over ``count`` elements."""

    count: int
    steps: tuple[Step, ...]

    @property
    def counters(self) -> tuple[tuple[int, int], ...]:
        """The distinct (inner, size) digits the steps index with, the loop index (1, count) excluded,
        in order of first use."""
        seen: dict[tuple[int, int], None] = {}
        for step in self.steps:
            for o in step.operands:
                for inner, size, _ in o.digits:
                    if (inner, size) != (1, self.count):
                        seen[(inner, size)] = None
        return tuple(seen)

    @property
    def reads_index(self) -> bool:
        """An operand is indexed by the loop index itself (the digit (1, count))."""
        return any((d[0], d[1]) == (1, self.count) for s in self.steps for o in s.operands for d in o.digits)


@dataclass(frozen=True)
class PreLoop:
    """A loop over ``program.count`` elements computing nodes from held inputs and constants only;
    the nodes in ``kept`` are stored into arrays for later loops."""

    program: Program
    kept: tuple[str, ...]


@dataclass(frozen=True)
class Read:
    """A streamed input read once per element; ``used``: a step or the phase's result takes it."""

    channel: str
    tensor: str
    used: bool


@dataclass(frozen=True)
class ElementPhase:
    """The map nodes computed once per element of a loop (an epilogue, a prologue, a map stage's body)."""

    count: int
    pre: tuple[PreLoop, ...]
    reads: tuple[Read, ...]
    program: Program
    result: str  # the tensor whose value the phase ends with (its last node, or what it started from)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(s.node for s in self.program.steps)

    def widen(self, lanes: int, where: str) -> ElementPhase:
        """The phase over tokens of ``lanes`` elements: ``count`` tokens, each read from every streamed input
        once and computed lane by lane (``tokens``)."""
        if lanes == 1:
            return self
        return dataclasses.replace(self, count=self.count // lanes, program=tokens(self.program, lanes, where))


def token_digits(digits: Sequence[Digit], lanes: int, where: str, what: str) -> tuple[tuple[Digit, ...], int]:
    """``digits`` of an index over elements rewritten over tokens of ``lanes`` elements (the module docstring):
    (the digits over the token index, the index's offset per lane). ``what`` names the indexed array in errors."""
    out, lane = [], 0
    for inner, size, stride in digits:
        if inner == 1:
            if size % lanes:
                raise HlsfuseError(f"{where}: lanes {lanes} does not divide the innermost run of {size} "
                                   f"elements of '{what}' it reads")
            out.append((1, size // lanes, stride * lanes))
            lane = stride
        else:
            if inner % lanes:
                raise HlsfuseError(f"{where}: lanes {lanes} does not divide the {inner} elements of the "
                                   f"innermost axes '{what}' is broadcast along")
            out.append((inner // lanes, size, stride))
    return tuple(out), lane


def tokens(prog: Program, lanes: int, where: str) -> Program:
    """``prog`` over tokens of ``lanes`` elements (the module docstring); ``where`` names the stage."""
    if lanes == 1:
        return prog
    if prog.count % lanes:
        raise HlsfuseError(f"{where}: lanes {lanes} does not divide its {prog.count} elements")

    def widen(o: Operand) -> Operand:
        return Operand(o.tensor, o.source, *token_digits(o.digits, lanes, where, o.tensor), row=o.row)

    steps = tuple(Step(s.node, tuple(widen(o) for o in s.operands)) for s in prog.steps)
    return Program(prog.count // lanes, steps)


def broadcast_digits(out_shape: Sequence[int], in_shape: Sequence[int]) -> tuple[Digit, ...]:
    """The digits of an operand of shape ``in_shape`` read by a node of shape ``out_shape`` (numpy
    broadcasting), innermost first."""
    rank = len(out_shape)
    if len(in_shape) > rank:
        raise HlsfuseError(f"shape {list(in_shape)} does not broadcast to {list(out_shape)}")
    padded = (1,) * (rank - len(in_shape)) + tuple(in_shape)
    runs: list[list] = []  # [full, size], innermost first
    for d in reversed(range(rank)):
        size = out_shape[d]
        if size == 1:
            continue
        if padded[d] not in (1, size):
            raise HlsfuseError(f"shape {list(in_shape)} does not broadcast to {list(out_shape)}")
        full = padded[d] == size
        if runs and runs[-1][0] == full:
            runs[-1][1] *= size
        else:
            runs.append([full, size])
    digits, inner, stride = [], 1, 1
    for full, size in runs:
        if full:
            digits.append((inner, size, stride))
            stride *= size
        inner *= size
    return tuple(digits)


def _reorders(graph: Graph, node: str) -> bool:
    """An op that changes the element order (a transpose that is not an identity) cannot run in a map loop."""
    return get_op(graph.node(node).op).buffer_reason(graph.sigs[node]) is not None


def program(graph: Graph, nodes: Sequence[str], count: int, values: Collection[str],
            arrays: Collection[str]) -> Program:
    """The steps computing ``nodes`` (topological order) per element of a loop over ``count`` elements.

    ``values``: tensors available as one value per element; ``arrays``: tensors held whole in
    arrays; constants are read from their ROMs. Every node must have ``count`` elements."""
    scalars = set(values)
    steps = []
    for name in nodes:
        node = graph.node(name)
        shape = graph.types[name].shape
        if math.prod(shape) != count:
            raise HlsfuseError(f"{node.where()}: has {math.prod(shape)} elements, not the loop's {count}")
        if get_op(node.op).stream_kind(graph.sigs[name]) != "map" or _reorders(graph, name):
            raise HlsfuseError(f"{node.where()}: op '{node.op}' cannot be computed element by element in a map loop")
        operands = []
        op = get_op(node.op)
        wired = shift_add(graph, name)
        for k, (role, src) in enumerate(zip(op.inputs + (None,) * len(node.inputs), node.inputs)):
            if wired is not None and k == wired.operand:
                operands.append(Operand(src, "wired"))
                continue
            if role in op.rows:  # a row per element: its other axes broadcast, indexing rows
                if src not in graph.constant_map:
                    raise HlsfuseError(f"{node.where()}: input '{role}' is read a row at a time and must be a "
                                       f"graph constant, not '{src}'")
                rows = graph.types[src].shape
                operands.append(Operand(src, "rom", broadcast_digits(shape, rows[:-1]), row=rows[-1]))
                continue
            if src in scalars:
                operands.append(Operand(src, "value"))
                continue
            if src in arrays:
                source = "array"
            elif src in graph.constant_map:
                source = "rom"
            else:
                raise HlsfuseError(f"{node.where()}: input '{src}' is neither streamed, held nor a constant here")
            operands.append(Operand(src, source, broadcast_digits(shape, graph.types[src].shape)))
        steps.append(Step(name, tuple(operands)))
        scalars.add(name)
    return Program(count, tuple(steps))


def _runs(graph: Graph, nodes: Sequence[str]) -> list[tuple[str, ...]]:
    """Consecutive nodes of equal size, each run computed by one loop."""
    runs: list[list[str]] = []
    for name in nodes:
        if runs and graph.types[runs[-1][0]].size == graph.types[name].size:
            runs[-1].append(name)
        else:
            runs.append([name])
    return [tuple(r) for r in runs]


def phase(
    graph: Graph,
    nodes: Sequence[str],
    count: int,
    values: Collection[str],
    reads: Sequence[tuple[str, str]],
    arrays: Mapping[str, object] | Collection[str],
    start: str,
) -> ElementPhase:
    """The phase computing ``nodes`` per element of a loop over ``count`` elements.

    ``values``: tensors the loop already has as one value per element (the head's result);
    ``reads``: (channel, tensor) of the streamed inputs read per element; ``arrays``: held inputs;
    ``start``: the phase's result when ``nodes`` is empty. Nodes smaller than the loop that depend
    on no per-element value run first, in pre loops.
    """
    scalars = set(values)
    for channel, tensor in reads:
        if graph.types[tensor].size != count:
            raise HlsfuseError(
                f"channel '{channel}' streams '{tensor}' with {graph.types[tensor].size} elements into a loop "
                f"over {count}; the plan must hold it"
            )
        scalars.add(tensor)
    per_element = set(scalars)
    main, early = [], []
    for name in nodes:
        if graph.types[name].size == count or any(src in per_element for src in graph.node(name).inputs):
            per_element.add(name)
            main.append(name)
        else:
            early.append(name)
    if early and nodes[-1] in early:
        node = graph.node(nodes[-1])
        raise HlsfuseError(f"{node.where()}: has {graph.types[node.name].size} elements, not the loop's {count}")
    local = set(arrays)
    pre = []
    for run in _runs(graph, early):
        body = program(graph, run, graph.types[run[0]].size, (), local)
        later = {src for n in nodes if n not in run for src in graph.node(n).inputs}
        kept = tuple(n for n in run if n in later)
        pre.append(PreLoop(body, kept))
        local.update(kept)
    body = program(graph, main, count, scalars, local)
    result = main[-1] if main else start
    # a read no node takes and that is not the result (a prologue without nodes passes its read on) is dropped
    used = {src for name in nodes for src in graph.node(name).inputs} | {result}
    return ElementPhase(
        count=count,
        pre=tuple(pre),
        reads=tuple(Read(ch, t, t in used) for ch, t in reads),
        program=body,
        result=result,
    )
