"""``StageView``: what the templates need to define and call one stage function.

Every stage kind's builder (``stage_<kind>.view``) returns one; see ``stages.py`` for how a kind is
added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...lower.plan import Stage
from ...ops import get_op
from .context import Context
from .replicas import Copies

__all__ = ["Param", "StageView", "stream_params", "make_view", "evaluates_functions"]


@dataclass(frozen=True)
class Param:
    """A stream parameter of a stage function: ``hls::stream<type>& name`` (the channel's name)."""

    type: str
    name: str


@dataclass(frozen=True)
class StageView:
    """One stage function: its name, template, stream parameters and the kind's own ``body`` view."""

    name: str  # the function's name (the plan's stage name)
    kind: str
    template: str  # e.g. "hls/stage_map.j2"; it receives this view as `stage`
    inputs: tuple[Param, ...]  # in the order of stage.inputs
    outputs: tuple[Param, ...]  # in the order of stage.outputs
    body: Any  # the kind's own view, read only by its template
    note: str = ""  # what the stage does, for the comment above the function (any text; it is sanitized)
    iterations: int = 0  # of its loop, per frame
    state: tuple[str, ...] = ()  # what it keeps between iterations and how no frame sees another's
    headers: tuple[str, ...] = ()  # kernel-library headers it includes, relative to hw/hls/ ("hlsfuse/window.h")
    uses_math: bool = False  # calls <cmath> functions (float32 table ops: sigmoid, elu ... ``evaluates_functions``)
    copies: tuple[Copies, ...] = ()  # lookup tables read more than twice per iteration, as copies of its own

    @property
    def params(self) -> tuple[Param, ...]:
        return self.inputs + self.outputs


_RESETS = {
    "frame": "back to its start after the frame's last iteration",
    "first": "assigned by the first value of each output",
    "overwritten": "written before it is read in every frame",
}


def stream_params(ctx: Context, channels: Sequence[str]) -> tuple[Param, ...]:
    """Parameters for the named channels, typed by their tokens."""
    return tuple(Param(ctx.token(c), c) for c in channels)


def evaluates_functions(ctx: Context, stage: Stage) -> bool:
    """The stage evaluates a table op's function in float32 (a float node of an op with ``OpDef.tables``), with
    <cmath>."""
    return any(get_op(ctx.graph.node(n).op).tables is not None and ctx.dtype(n).is_float for n in stage.nodes)


def make_view(ctx: Context, stage: Stage, template: str, body: Any, **extra: Any) -> StageView:
    """A ``StageView`` of ``stage`` with its channels as parameters (inputs first, then outputs)."""
    fields = {
        "note": f"nodes {', '.join(stage.nodes)}" if stage.nodes else "",
        "iterations": stage.cycles,
        "state": tuple(f"{s.name} ({_RESETS[s.reset]})" for s in stage.schedule.state),
    }
    fields.update(extra)
    return StageView(
        name=stage.name,
        kind=stage.kind,
        template=template,
        inputs=stream_params(ctx, stage.inputs),
        outputs=stream_params(ctx, stage.outputs),
        body=body,
        **fields,
    )
