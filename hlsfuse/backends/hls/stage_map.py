"""Map stages: a fused group of elementwise, broadcast and order-keeping injective nodes.

    held inputs  ──read whole──►  local arrays          (broadcast operands streamed in)
    pre nodes    ──one loop each──►  local arrays       (nodes computed only from held inputs and
                                                         constants, smaller than the output)
    main loop, II=1, once per element of the sink:
        read each streamed input once ─► the group's nodes as local variables ─► write the outputs

Every node of the main loop has as many elements as the sink, in the same row-major order
(reshape and friends keep the order), so they all share the loop's flat index; smaller operands
are indexed through the counters of ``expr.element_body``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import HlsfuseError
from ...lower.plan import Stage
from .context import Context
from .expr import Body, element_body
from .view import StageView, make_view

__all__ = ["MapBody", "view"]


@dataclass(frozen=True)
class Read:
    """A streamed input, read once per element into ``var`` (``None``: read and dropped)."""

    channel: str
    type: str
    var: str | None


@dataclass(frozen=True)
class Held:
    """An input read whole into ``array`` before the main loop (``None``: read and dropped)."""

    channel: str
    type: str
    array: str | None
    size: int


@dataclass(frozen=True)
class Store:
    """``array[index] = var``: a node's value kept for a later loop."""

    array: str
    type: str
    var: str


@dataclass(frozen=True)
class Pre:
    """A loop before the main loop computing nodes of ``size`` elements into local arrays."""

    size: int
    body: Body
    stores: tuple[Store, ...]


@dataclass(frozen=True)
class Write:
    channel: str
    var: str


@dataclass(frozen=True)
class MapBody:
    index: str  # the flat element index of every loop
    count: int  # elements per frame (the sink's)
    held: tuple[Held, ...]
    pre: tuple[Pre, ...]
    reads: tuple[Read, ...]
    main: Body
    writes: tuple[Write, ...]


def _needed(ctx: Context, nodes: tuple[str, ...], outputs: set[str]) -> set[str]:
    """Nodes (and input tensors) an output depends on, so no variable is left unused."""
    needed = set(outputs)
    for name in reversed(nodes):
        if name in needed:
            needed.update(ctx.graph.node(name).inputs)
    return needed


def _runs(ctx: Context, nodes: list[str]) -> list[tuple[str, ...]]:
    """Consecutive nodes of equal size, each run computed by one loop."""
    runs: list[list[str]] = []
    for name in nodes:
        if runs and ctx.type_of(runs[-1][0]).size == ctx.type_of(name).size:
            runs[-1].append(name)
        else:
            runs.append([name])
    return [tuple(r) for r in runs]


def body(ctx: Context, stage: Stage) -> MapBody:
    count = ctx.type_of(stage.sink).size
    index = ctx.names.local("i")
    held_tensors = set(stage.held)
    streamed: dict[str, str] = {}  # tensor -> channel
    held_channels: dict[str, str] = {}
    for name in stage.inputs:
        tensor = ctx.channel(name).tensor
        target = held_channels if tensor in held_tensors else streamed
        if tensor in streamed or tensor in held_channels:
            raise HlsfuseError(f"stage '{stage.name}': tensor '{tensor}' arrives on two channels")
        target[tensor] = name
    for tensor in streamed:
        if ctx.type_of(tensor).size != count:
            raise HlsfuseError(
                f"stage '{stage.name}': streamed input '{tensor}' has {ctx.type_of(tensor).size} elements, "
                f"not the {count} of '{stage.sink}'; the plan must hold it (Stage.held)"
            )

    outputs = {ctx.channel(c).tensor for c in stage.outputs}
    needed = _needed(ctx, stage.nodes, outputs)
    nodes = tuple(n for n in stage.nodes if n in needed)

    # nodes that depend on no streamed input and are smaller than the sink are computed once, up front
    per_element: set[str] = set(streamed)
    pre_nodes = []
    for name in nodes:
        if any(src in per_element for src in ctx.graph.node(name).inputs) or ctx.type_of(name).size == count:
            per_element.add(name)
        else:
            pre_nodes.append(name)

    arrays = {t: ctx.array(t) for t in held_channels}
    pre = []
    for run in _runs(ctx, pre_nodes):
        size = ctx.type_of(run[0]).size
        pre_body = element_body(ctx, run, size, {}, arrays, index)
        later = {src for n in nodes if n not in run for src in ctx.graph.node(n).inputs}
        kept = [n for n in run if n in later]
        pre.append(Pre(size, pre_body, tuple(Store(ctx.array(n), ctx.ctype(n), ctx.value(n)) for n in kept)))
        arrays.update({n: ctx.array(n) for n in kept})

    main_nodes = tuple(n for n in nodes if n in per_element)
    values = {t: ctx.value(t) for t in streamed}
    main = element_body(ctx, main_nodes, count, values, arrays, index)
    for name in outputs:
        if name not in per_element:
            raise HlsfuseError(f"stage '{stage.name}': output '{name}' is not computed per element of '{stage.sink}'")
    return MapBody(
        index=index,
        count=count,
        held=tuple(
            Held(ch, ctx.ctype(t), ctx.array(t) if t in needed else None, ctx.type_of(t).size)
            for t, ch in held_channels.items()
        ),
        pre=tuple(pre),
        reads=tuple(Read(ch, ctx.ctype(t), ctx.value(t) if t in needed else None) for t, ch in streamed.items()),
        main=main,
        writes=tuple(Write(c, ctx.value(ctx.channel(c).tensor)) for c in stage.outputs),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_map.j2", b, uses_math=uses_math)
