"""How each kind of stage becomes a C++ function: one view builder per stage kind.

A view builder is ``view(ctx, stage) -> StageView`` (``view.py``). The view names the template
that renders the stage's function (``templates/hls/stage_<kind>.j2``, which receives the view as
``stage`` and starts from the signature macro of ``hls/stage.j2``), the function's stream
parameters and a ``body``: the kind's own view object, read only by its template. The top-level
template declares every channel, renders each stage with its template and calls it in plan order.

To add a stage kind: write ``stage_<kind>.py`` with a ``view`` function and the template
``templates/hls/stage_<kind>.j2``, and list the function here. Map nodes inside any kind (a
convolution's epilogue, a reduction's prologue) are computed with ``expr.body`` and
rendered with ``ops.statement``/``ops.counters``/``ops.advance`` from ``hls/ops.j2``, so every kind
rounds exactly like the reference. A kind missing here raises ``HlsfuseError`` when the design is
emitted, never broken C++.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import HlsfuseError
from ...lower.plan import Stage
from . import stage_convert, stage_fork, stage_map, stage_own, stage_reduce, stage_rows, stage_window
from .context import Context
from .view import StageView

__all__ = ["STAGE_VIEWS", "ViewBuilder", "stage_view"]

ViewBuilder = Callable[[Context, Stage], StageView]

STAGE_VIEWS: dict[str, ViewBuilder] = {
    "map": stage_map.view,
    "fork": stage_fork.view,
    "convert": stage_convert.view,
    "own": stage_own.view,
    "window": stage_window.view,
    "rows": stage_rows.view,
    "reduce": stage_reduce.view,
}
"""Stage kind -> view builder."""


def stage_view(ctx: Context, stage: Stage) -> StageView:
    """The view of ``stage``, from the builder of its kind."""
    builder = STAGE_VIEWS.get(stage.kind)
    if builder is None:
        raise HlsfuseError(f"stage kind '{stage.kind}' is not supported by the HLS backend yet (stage '{stage.name}')")
    ctx.names.new_function()
    return builder(ctx, stage)
