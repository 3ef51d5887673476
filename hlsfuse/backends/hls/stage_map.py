"""Map stages: a fused group of elementwise, broadcast and order-keeping injective nodes.

A map stage is a phase without a head, over the sink's elements (``lower.stage_map.MapMain``):

    setup loops   held inputs read whole into local arrays (broadcast operands streamed in), then
                  the pre loops (nodes computed only from held inputs and constants, smaller than
                  the output)
    main part     once per element of the sink: read each streamed input once, compute the nodes
                  as local variables, write the outputs

all in one loop, one iteration per cycle. Every node of the main part has as many elements as the
sink, in the same row-major order (reshape and friends keep the order); smaller operands are
indexed through the counters of ``expr.body``. A stage of L > 1 lanes reads one ``hlsf::lanes``
token per streamed input and iteration, computes its L elements in an unrolled loop over the lanes
(an array or ROM read at a different element per lane is partitioned cyclically, one bank per
lane) and writes one token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .phase import Phase, Rom, Setup, Token, Write, local_roms, phase, setup, writes
from .replicas import Copies, stage_copies
from .view import StageView, evaluates_functions, make_view

__all__ = ["MapBody", "view"]


@dataclass(frozen=True)
class MapBody:
    iterations: int
    loop: str  # the loop's counter
    setup: Setup
    roms: tuple[Rom, ...]
    phase: Phase
    writes: tuple[Write, ...]
    lanes: int
    lane: str  # the lane loop's counter (lanes > 1)
    reads: tuple[Token, ...]  # lanes > 1: the tokens read
    out: Token | None  # lanes > 1: the token written to every output


def body(ctx: Context, stage: Stage) -> tuple[MapBody, tuple[Copies, ...]]:
    schedule = stage.schedule
    main = schedule.main
    lane = ctx.names.local("l")
    p = phase(ctx, main.phase, {}, ctx.names.local("i"), lane if main.lanes > 1 else None)
    reads, out = (), None
    if main.lanes > 1:
        reads = tuple(Token(r.channel, ctx.token(r.channel), ctx.names.local(f"tok_{r.channel}"), r.var, r.type)
                      for r in p.reads)
        out = Token("", ctx.token(main.writes[0]), ctx.names.local("tok_out"), p.result, "")
    loop = ctx.names.local("t")
    copies, pre, phases = stage_copies(ctx, stage, setup(ctx, schedule), {"main": (p, main.lanes, lane)})
    p = phases["main"]
    return MapBody(schedule.iterations, loop, pre, local_roms(ctx, schedule, {}),
                   p, writes(main.writes, p.result if out is None else out.var), main.lanes, lane, reads,
                   out), copies


def view(ctx: Context, stage: Stage) -> StageView:
    uses_math = evaluates_functions(ctx, stage)
    b, copies = body(ctx, stage)
    return make_view(ctx, stage, "hls/stage_map.j2", b, uses_math=uses_math, copies=copies)
