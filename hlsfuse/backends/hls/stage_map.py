"""Map stages: a fused group of elementwise, broadcast and order-keeping injective nodes.

A map stage is a phase without a head, over the sink's elements (``lower.schedule.MapMain``):

    setup loops   held inputs read whole into local arrays (broadcast operands streamed in), then
                  the pre loops (nodes computed only from held inputs and constants, smaller than
                  the output)
    main part     once per element of the sink: read each streamed input once, compute the nodes
                  as local variables, write the outputs

all in one loop, one iteration per cycle. Every node of the main part has as many elements as the
sink, in the same row-major order (reshape and friends keep the order); smaller operands are
indexed through the counters of ``expr.body``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .phase import Phase, Rom, Setup, Write, local_roms, phase, setup, writes
from .view import StageView, make_view

__all__ = ["MapBody", "view"]


@dataclass(frozen=True)
class MapBody:
    iterations: int
    loop: str  # the loop's counter
    setup: Setup
    roms: tuple[Rom, ...]
    phase: Phase
    writes: tuple[Write, ...]


def body(ctx: Context, stage: Stage) -> MapBody:
    schedule = stage.schedule
    main = schedule.main
    p = phase(ctx, main.phase, {}, ctx.names.local("i"))
    return MapBody(schedule.iterations, ctx.names.local("t"), setup(ctx, schedule), local_roms(ctx, schedule, {}),
                   p, writes(main.writes, p.result))


def view(ctx: Context, stage: Stage) -> StageView:
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_map.j2", body(ctx, stage), uses_math=uses_math)
