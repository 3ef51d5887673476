"""Map stages: a fused group of elementwise, broadcast and order-keeping injective nodes.

A map stage is an epilogue without a head: one phase (``phase.py``) over the sink's elements.

    held inputs  ──read whole──►  local arrays          (broadcast operands streamed in)
    pre loops    ──one loop each──►  local arrays       (nodes computed only from held inputs and
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
from .phase import Held, Phase, Write, held, phase, writes
from .view import StageView, make_view

__all__ = ["MapBody", "view"]


@dataclass(frozen=True)
class MapBody:
    count: int  # elements per frame (the sink's); the phase's index is the main loop's
    held: tuple[Held, ...]
    phase: Phase
    writes: tuple[Write, ...]


def _needed(ctx: Context, nodes: tuple[str, ...], outputs: set[str]) -> set[str]:
    """Nodes (and input tensors) an output depends on, so no variable is left unused."""
    needed = set(outputs)
    for name in reversed(nodes):
        if name in needed:
            needed.update(ctx.graph.node(name).inputs)
    return needed


def body(ctx: Context, stage: Stage) -> MapBody:
    count = ctx.type_of(stage.sink).size
    index = ctx.names.local("i")
    held_tensors = set(stage.held)
    # the plan's Stage.held, not the channels' uses, says which inputs are held: a map stage has no head
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

    out = writes(ctx, stage, ctx.value(stage.sink))
    needed = _needed(ctx, stage.nodes, {stage.sink})
    nodes = tuple(n for n in stage.nodes if n in needed)
    arrays = {t: ctx.array(t) for t in held_channels}
    body = phase(ctx, nodes, count, {}, [(ch, t) for t, ch in streamed.items()], arrays, index, ctx.value(stage.sink))
    return MapBody(count, held(ctx, [(ch, t) for t, ch in held_channels.items()], needed), body, out)


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_map.j2", b, uses_math=uses_math)
