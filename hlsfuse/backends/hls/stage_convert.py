"""Width converters: one channel's tokens re-packed into tokens of another number of lanes.

``lower.schedule.ConvertMain``: one iteration per token of the narrower side. Narrowing (A = R x B
lanes in, B out) reads a wide token every R-th iteration and writes part ``part`` of it in each;
widening (A in, B = R x A out) stores each narrow token as part ``part`` of the wide one and writes
it when the last part arrives. Lane j of part p is lane p x narrow + j of the wide token, which is
kept in a completely partitioned local array (registers) between iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lower.plan import Stage
from .context import Context
from .view import StageView, make_view

__all__ = ["ConvertBody", "view"]


@dataclass(frozen=True)
class ConvertBody:
    index: str
    iterations: int
    widens: bool
    ratio: int
    narrow: int  # lanes of the narrow side
    part: str  # which part of the wide token this iteration moves
    lane: str
    wide: str  # the wide token's elements, a local array kept across iterations
    wide_lanes: int
    element: str  # the element type
    token: str  # the wide token read or written
    token_type: str
    small: str  # the narrow token of this iteration
    small_type: str


def view(ctx: Context, stage: Stage) -> StageView:
    main = stage.schedule.main
    names = ctx.names.local
    wide_ch, small_ch = (main.write, main.read) if main.widens else (main.read, main.write)
    body = ConvertBody(names("t"), main.iterations, main.widens, main.ratio, min(main.lanes_in, main.lanes_out),
                       names("part"), names("l"), names("wide"), max(main.lanes_in, main.lanes_out),
                       ctx.ctype(stage.sink), names("token"), ctx.token(wide_ch), names("small"), ctx.token(small_ch))
    note = f"'{stage.sink}' from {main.lanes_in} to {main.lanes_out} lanes per transfer"
    return make_view(ctx, stage, "hls/stage_convert.j2", body, note=note)
