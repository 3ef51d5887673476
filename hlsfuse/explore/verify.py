"""A point checked in simulation: compiled to Verilog and run under Verilator (``rtlsim --driver native``).

It runs where the sweep's tasks run (a pool's worker or a Dask worker, whose Verilator cache stays its
own): the design is written to a temporary folder, simulated for a few frames against the reference,
and only the figures come back. The steady-state cycles between frames are the measured rate, set
beside the model's (the same plan's timing replay); a point that is not bit-exact, or measures more
than ``TOLERANCE`` away from the model, is flagged.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from ..compile import compile
from ..errors import HlsfuseError
from ..sim.rtlsim import rtlsim
from .evaluate import graph_of
from .points import Point, compile_options

__all__ = ["TOLERANCE", "verify_point", "flag"]

TOLERANCE = 0.05
"""Largest relative difference between measured and modelled cycles per frame that is not flagged."""


def flag(bit_exact: bool, ratio: float | None, deadlock: str = "") -> str:
    if deadlock:
        return f"deadlock: {deadlock}"
    if not bit_exact:
        return "outputs differ from the reference"
    if ratio is None or abs(ratio - 1) > TOLERANCE + 1e-9:  # 1.05 itself is within
        return f"measured {ratio:.3f} x the model's cycles" if ratio is not None else "no steady-state rate measured"
    return ""


def verify_point(key: str, point: Point, payload: Mapping[str, dict] | None = None, frames: int = 3,
                 seed: int = 0) -> dict:
    """Compile ``point`` of graph ``key`` to Verilog and simulate ``frames`` frames (at least 2: the rate is
    measured between frames); returns the figures of verify.json."""
    graph = graph_of(key, payload)
    start = time.monotonic()
    try:
        design = compile(graph, compile_options(point, target="verilog"))
        with tempfile.TemporaryDirectory(prefix="hlsfuse-explore-") as tmp:
            out = design.write(Path(tmp) / "design")
            result = rtlsim(out, frames=max(2, frames), driver="native", graph=graph, seed=seed)
    except HlsfuseError as exc:  # e.g. no Verilator on this worker: the point is reported, not the sweep stopped
        return {"id": point.id, "measured_cycles": None, "model_cycles": None, "measured_ratio": None,
                "bit_exact": None, "compared": 0, "frames": 0, "flag": f"not simulated: {exc}", "built": False,
                "seconds": round(time.monotonic() - start, 1)}
    ratio = result.frame_cycles / result.predicted_cycles if result.predicted_cycles and result.frame_cycles else None
    bit_exact = result.passed and not result.deadlock
    return {
        "id": point.id,
        "measured_cycles": result.frame_cycles,
        "model_cycles": result.predicted_cycles,
        "measured_ratio": round(ratio, 4) if ratio is not None else None,
        "bit_exact": bit_exact,
        "compared": result.compared,
        "frames": result.frames,
        "flag": flag(bit_exact, ratio, result.deadlock),
        "built": result.built,
        "seconds": round(time.monotonic() - start, 1),
    }
