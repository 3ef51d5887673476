"""Fork stages: one input channel copied to every output channel, element by element.

An ``hls::stream`` has a single reader, so a tensor read by several stages (or by a stage and an
output port) is duplicated by a fork, token by token (its lanes are its producer's); the lowering
sizes each branch's FIFO.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import HlsfuseError
from ...lower.plan import Stage
from .context import Context
from .view import StageView, make_view

__all__ = ["ForkBody", "view"]


@dataclass(frozen=True)
class ForkBody:
    index: str
    count: int  # tokens per frame
    var: str  # the token being copied
    type: str


def view(ctx: Context, stage: Stage) -> StageView:
    if len(stage.inputs) != 1 or len(stage.outputs) < 1:
        raise HlsfuseError(
            f"fork stage '{stage.name}' must read one channel and write at least one, "
            f"not {len(stage.inputs)} and {len(stage.outputs)}"
        )
    tensor = ctx.channel(stage.inputs[0]).tensor
    for name in stage.outputs:
        if ctx.channel(name).tensor != tensor:
            raise HlsfuseError(f"fork stage '{stage.name}': channel '{name}' does not carry '{tensor}'")
    body = ForkBody(ctx.names.local("i"), stage.schedule.main.count, ctx.value(tensor), ctx.token(stage.inputs[0]))
    note = f"copies '{tensor}' to {len(stage.outputs)} readers"
    return make_view(ctx, stage, "hls/stage_fork.j2", body, note=note)
