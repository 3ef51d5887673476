"""A point synthesized with Yosys (``hlsfuse synth``): its Verilog mapped to the family's cells, set beside the
resource model's figures.

It runs where the sweep's tasks run, like a verification: the design is written to a temporary folder and
synthesized one stage at a time (the stages of the points a worker takes are cached by what they read, so
points that share stages share their synthesis), and only the figures come back.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from ..compile import compile
from ..errors import HlsfuseError
from ..synth import synth
from .evaluate import graph_of
from .points import Point, compile_options

__all__ = ["SYNTH_COLUMNS", "synth_point", "synth_flag"]

SYNTH_COLUMNS = ("yosys_dsp", "yosys_bram18", "yosys_lut", "yosys_ff", "logic_depth_ns")
"""The columns of points.csv that ``--synth`` fills: Yosys's DSP, BRAM18, LUT (as LUT6 sites) and FF counts
of the whole design, and the longest stage's critical-path estimate (docs/synth.md)."""


def synth_flag(found: Mapping) -> str:
    """The point's flag from its synthesis: the stages whose DSP or BRAM18 count Yosys and the model disagree on
    (or why it was not synthesized), else ""."""
    if found.get("error"):
        return f"not synthesized: {found['error']}"
    if found["mismatches"]:
        return f"Yosys's DSP or BRAM18 differ from the model in {', '.join(found['mismatches'])}"
    return ""


def synth_point(key: str, point: Point, payload: Mapping[str, dict] | None = None) -> dict:
    """Compile ``point`` of graph ``key`` to Verilog and synthesize it (one stage at a time: the sweep runs
    points side by side); returns the figures of synth.json."""
    graph = graph_of(key, payload)
    start = time.monotonic()
    empty = dict.fromkeys(SYNTH_COLUMNS)
    try:
        design = compile(graph, compile_options(point, target="verilog"))
        with tempfile.TemporaryDirectory(prefix="hlsfuse-explore-") as tmp:
            result = synth(design.write(Path(tmp) / "design"), jobs=1)
        if result.failed:
            raise HlsfuseError(f"stage {result.failed[0][0]}: {result.failed[0][1]}")
    except HlsfuseError as exc:  # e.g. no Yosys on this worker: the point is reported, not the sweep stopped
        return {"id": point.id, **empty, "model": None, "mismatches": [], "yosys": None, "error": str(exc),
                "seconds": round(time.monotonic() - start, 1)}
    total = result.total_yosys
    return {
        "id": point.id,
        "yosys_dsp": total.get("dsp", 0), "yosys_bram18": total.get("bram18", 0), "yosys_lut": total.get("lut", 0),
        "yosys_ff": total.get("ff", 0),
        "logic_depth_ns": max((s.depth["ns"] for s in result.stages), default=None),
        "model": {k: result.total_model.get(k, 0) for k in ("dsp", "bram18", "lut", "ff")},
        "mismatches": [s.name for s in result.mismatches],
        "yosys": result.version,
        "error": None,
        "seconds": round(time.monotonic() - start, 1),
    }
