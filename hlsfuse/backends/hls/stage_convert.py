"""Width converters: one channel's tokens re-packed into tokens of another number of lanes.

``lower.stage_convert.ConvertMain`` is a gearbox: per iteration it reads a token of A lanes when fewer than
B elements wait, and writes a token of B lanes when B do, so any two widths convert at the rate of the
faster side. The stage is one call of ``hlsf::convert_stage`` (hw/hls/hlsfuse/convert.h), which keeps
the waiting elements in registers and routes each lane by their count.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .view import StageView, make_view

__all__ = ["ConvertBody", "view"]


@dataclass(frozen=True)
class ConvertBody:
    element: str  # the element type
    lanes_in: int
    lanes_out: int
    iterations: int


def view(ctx: Context, stage: Stage) -> StageView:
    main = stage.schedule.main
    body = ConvertBody(ctx.ctype(stage.sink), main.lanes_in, main.lanes_out, main.iterations)
    note = f"'{stage.sink}' from {main.lanes_in} to {main.lanes_out} lanes per transfer"
    return make_view(ctx, stage, "hls/stage_convert.j2", body, note=note, headers=("hlsfuse/convert.h",))
