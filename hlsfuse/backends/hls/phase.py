"""The map nodes around a head op: a convolution's or dense's epilogue, a reduction's prologue.

Window, rows and reduce stages share this, and so do map stages, whose body is an epilogue without a
head: one phase over the sink's elements. A *phase* is the run of map nodes a stage computes once
per element of a loop (the head's output elements for an epilogue, its input elements for a
prologue), rendered with the macros of ``templates/hls/phase.j2``:

    held inputs  ──read whole, before anything else──►  local arrays   (broadcast operands, a streamed weight)
    pre loops    ──nodes smaller than the loop, computed from held inputs and constants──►  local arrays
    per element: read each streamed input of the phase once ─► one statement per node (``expr.element_body``,
                 rounding exactly as the reference) ─► advance the index counters

The phase's flat element index is a counter the template declares and advances only when a
broadcast operand is indexed by it, so no variable is ever left unused (``-Wall -Werror``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ...types import Fmt
from .context import Context
from .expr import Body, Digit, Term, Wheel, element_body

__all__ = [
    "Held", "Read", "Store", "Pre", "Write", "Phase", "Inputs",
    "inputs", "held", "phase", "writes", "wheels", "accumulator",
]


@dataclass(frozen=True)
class Held:
    """An input read whole into ``array`` before the stage's loops (``None``: read and dropped)."""

    channel: str
    type: str
    array: str | None
    size: int


@dataclass(frozen=True)
class Read:
    """A streamed input read once per element into ``var`` (``None``: read and dropped)."""

    channel: str
    type: str
    var: str | None


@dataclass(frozen=True)
class Store:
    """``array[index] = var``: a node computed in a pre loop, kept for a later loop."""

    array: str
    type: str
    var: str


@dataclass(frozen=True)
class Pre:
    """A loop over ``size`` elements computing nodes from held inputs and constants only."""

    size: int
    body: Body
    stores: tuple[Store, ...]


@dataclass(frozen=True)
class Write:
    channel: str
    var: str


@dataclass(frozen=True)
class Phase:
    """Map nodes computed once per element of a loop (epilogue: the head's outputs; prologue: its inputs)."""

    index: str  # the flat element index (declared by the template only when ``counts_index``)
    counts_index: bool  # the body reads ``index``, so the template keeps it as a counter
    pre: tuple[Pre, ...]
    reads: tuple[Read, ...]
    body: Body
    result: str  # the variable holding the phase's last value


@dataclass(frozen=True)
class Inputs:
    """A stage's input channels by use: (channel, tensor) pairs in the plan's order."""

    head: tuple[tuple[str, str], ...]
    pre: tuple[tuple[str, str], ...]
    post: tuple[tuple[str, str], ...]
    held: tuple[tuple[str, str], ...]


def inputs(ctx: Context, stage: Stage) -> Inputs:
    by_use: dict[str, list[tuple[str, str]]] = {"head": [], "pre": [], "post": [], "held": []}
    for channel, use in zip(stage.inputs, stage.uses):
        if use not in by_use:
            raise HlsfuseError(
                f"stage '{stage.name}': input channel '{channel}' has use '{use}', which a {stage.kind} stage lacks"
            )
        by_use[use].append((channel, ctx.channel(channel).tensor))
    for use, pairs in by_use.items():
        tensors = [t for _, t in pairs]
        if len(set(tensors)) != len(tensors):
            raise HlsfuseError(f"stage '{stage.name}': one tensor arrives on two '{use}' channels")
    if len(by_use["head"]) > 1:
        raise HlsfuseError(f"stage '{stage.name}': reads {len(by_use['head'])} head channels, not one")
    return Inputs(*(tuple(by_use[u]) for u in ("head", "pre", "post", "held")))


def held(ctx: Context, pairs: Sequence[tuple[str, str]], used: Collection[str] | None = None) -> tuple[Held, ...]:
    """The held inputs; one not in ``used`` (when given) is read and dropped, so no array is left unused."""
    return tuple(
        Held(ch, ctx.ctype(t), ctx.array(t) if used is None or t in used else None, ctx.type_of(t).size)
        for ch, t in pairs
    )


def writes(ctx: Context, stage: Stage, var: str) -> tuple[Write, ...]:
    for name in stage.outputs:
        if ctx.channel(name).tensor != stage.sink:
            raise HlsfuseError(f"stage '{stage.name}': output channel '{name}' does not carry its sink '{stage.sink}'")
    return tuple(Write(name, var) for name in stage.outputs)


def _runs(ctx: Context, nodes: Sequence[str]) -> list[tuple[str, ...]]:
    """Consecutive nodes of equal size, each run computed by one loop."""
    runs: list[list[str]] = []
    for name in nodes:
        if runs and ctx.type_of(runs[-1][0]).size == ctx.type_of(name).size:
            runs[-1].append(name)
        else:
            runs.append([name])
    return [tuple(r) for r in runs]


def _reads_index(body: Body, index: str) -> bool:
    return any(t.var == index for s in body.stmts for a in s.args if a.index for t in a.index)


def phase(
    ctx: Context,
    nodes: Sequence[str],
    count: int,
    values: Mapping[str, str],
    reads: Sequence[tuple[str, str]],
    arrays: Mapping[str, str],
    index: str,
    start: str,
) -> Phase:
    """The phase computing ``nodes`` per element of a loop over ``count`` elements.

    ``values``: tensors the loop already has as one variable per element (the head's result, or
    the head input it reads itself); ``start``: the variable that is the phase's result when
    ``nodes`` is empty; ``reads``: (channel, tensor) of the streamed inputs the phase reads per
    element (one that neither a node nor the result uses is read and dropped); ``arrays``: held
    inputs. Nodes smaller than the loop that depend on no per-element value run first, in pre loops.
    """
    scalars = dict(values)
    for channel, tensor in reads:
        if ctx.type_of(tensor).size != count:
            raise HlsfuseError(
                f"channel '{channel}' streams '{tensor}' with {ctx.type_of(tensor).size} elements into a loop "
                f"over {count}; the plan must hold it"
            )
        scalars[tensor] = ctx.value(tensor)
    per_element = set(scalars)
    main, early = [], []
    for name in nodes:
        if ctx.type_of(name).size == count or any(src in per_element for src in ctx.graph.node(name).inputs):
            per_element.add(name)
            main.append(name)
        else:
            early.append(name)
    local_arrays = dict(arrays)
    pre = []
    for run in _runs(ctx, early):
        size = ctx.type_of(run[0]).size
        pre_body = element_body(ctx, run, size, {}, local_arrays, index)
        later = {src for n in nodes if n not in run for src in ctx.graph.node(n).inputs}
        kept = [n for n in run if n in later]
        pre.append(Pre(size, pre_body, tuple(Store(ctx.array(n), ctx.ctype(n), ctx.value(n)) for n in kept)))
        local_arrays.update({n: ctx.array(n) for n in kept})
    if early and nodes[-1] in early:
        node = ctx.graph.node(nodes[-1])
        raise HlsfuseError(f"{node.where()}: has {ctx.type_of(node.name).size} elements, not the loop's {count}")
    body = element_body(ctx, main, count, scalars, local_arrays, index)
    result = ctx.value(main[-1]) if main else start
    # a read no node takes and that is not the result (a prologue without nodes passes its read on) is dropped
    used = {src for name in nodes for src in ctx.graph.node(name).inputs}
    used.update(t for _, t in reads if ctx.value(t) == result)
    return Phase(
        index=index,
        counts_index=_reads_index(body, index),
        pre=tuple(pre),
        reads=tuple(Read(ch, ctx.ctype(t), ctx.value(t) if t in used else None) for ch, t in reads),
        body=body,
        result=result,
    )


def wheels(
    ctx: Context, digits: Sequence[tuple[int, int]], count: int, index: str, prefix: str
) -> tuple[dict[tuple[int, int], Term], tuple[Wheel, ...]]:
    """Counters for the digits (inner, size) of a loop over ``count`` elements with flat index ``index``.

    The counterpart of ``expr.element_body``'s counters for indices a stage computes itself (the
    accumulator of a reduction): names start with ``prefix`` so they never meet element_body's.
    Returns the variable per digit (the loop index itself for the digit (1, count)) and the wheels
    to declare and advance with ``ops.counters`` and ``ops.advance``.
    """
    names: dict[tuple[int, int], str] = {}
    terms: dict[tuple[int, int], Term] = {}
    for inner, size in digits:
        if (inner, size) in terms:
            continue
        if inner == 1 and size == count:
            terms[(inner, size)] = Term(index, 1)
            continue
        names[(inner, size)] = ctx.names.local(f"{prefix}k{len(names)}")
        terms[(inner, size)] = Term(names[(inner, size)], 1)
    out = []
    for w, inner in enumerate(sorted({i for i, _ in names})):
        group = tuple(Digit(name, i, n) for (i, n), name in names.items() if i == inner)
        low = None if inner == 1 else ctx.names.local(f"{prefix}r{w}")
        out.append(Wheel(low, inner, group))
    return terms, tuple(out)


def accumulator(fmt: Fmt | None) -> str:
    """The C++ type of an exact accumulator of format ``fmt`` (``None``: a float32 graph, which
    accumulates in double as the reference does in float64)."""
    if fmt is None:
        return "double"
    return f"{'ap_fixed' if fmt.signed else 'ap_ufixed'}<{fmt.width}, {fmt.int_bits}>"
