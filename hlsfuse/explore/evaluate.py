"""One point of a sweep, evaluated where it runs: in this process, a pool's worker or a Dask worker.

The graphs travel once to each worker (``install``, or a Dask future the worker resolves) and are kept by
their digest; so are the folding solver's choices (``solver_space``: most of a solve, the same for every
budget of a fusion, part and port setting). A task then costs a binary search over rates, one lowering
and the resource model. Nothing is written: the result is the point's row, its report.json and its
fold.json, sent back to the process that writes the sweep.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

from ..compile import plan_design, solver_space
from ..errors import HlsfuseError
from ..graph_json import graph_from_dict
from ..ir import Graph
from ..lower.fold import Space, fold_json
from .points import Point, compile_options

__all__ = ["install", "graph_of", "evaluate", "row_of_report"]

_GRAPHS: dict[str, Graph] = {}  # graph digest -> graph, per process
_SPACES: dict[tuple, Space] = {}  # (digest, fusion, DSP slice, port lanes) -> the solver's choices
_KEEP = 16  # spaces kept per process (a few MB each for ResNet-8)


def install(payload: Mapping[str, dict], quiet_interrupt: bool = False) -> None:
    """Keep ``payload``'s graphs (digest -> graph_to_dict) in this process. ``quiet_interrupt``: a pool's worker
    leaves Ctrl-C to the process that runs the sweep, which stops the pool and keeps what finished."""
    if quiet_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for key, data in payload.items():
        if key not in _GRAPHS:
            _GRAPHS[key] = graph_from_dict(data)


def graph_of(key: str, payload: Mapping[str, dict] | None = None) -> Graph:
    """The graph with digest ``key``, from this process's or from ``payload`` (a Dask task passes the scattered
    payload, since the worker may not have it yet)."""
    if key not in _GRAPHS:
        if payload is None or key not in payload:
            raise HlsfuseError(f"explore: graph {key[:12]} was not sent to this worker")
        install({key: payload[key]})
    return _GRAPHS[key]


def _space(key: str, graph: Graph, point: Point) -> Space:
    options = compile_options(point)
    index = (key, point.fusion, point.target.dsp_slice.name, point.port_lanes)
    if index not in _SPACES:
        if len(_SPACES) >= _KEEP:
            _SPACES.pop(next(iter(_SPACES)))
        _SPACES[index] = solver_space(graph, options)
    return _SPACES[index]


def row_of_report(report: Mapping, stages: int) -> dict:
    """The figures of a point's row, from its report.json."""
    slowest = max(report["stages"], key=lambda s: s["cycles_per_frame"])
    total = report["total"]
    return {
        "status": "ok", "message": "",
        "stages": stages, "fifos": report["channels"], "fifo_bits": report["fifo_bits"],
        "cycles_per_frame": report["cycles_per_frame"], "bound_cycles": report["bound_cycles"],
        "latency": report["latency"], "frames_per_second": report["frames_per_second"],
        "multipliers": total["multipliers"], "dsp": total["dsp"], "bram18": total["bram18"], "lut": total["lut"],
        "ff": total["ff"], "mac_utilization": report["mac_utilization"], "bottleneck": slowest["name"],
    }


def evaluate(key: str, point: Point, payload: Mapping[str, dict] | None = None) -> dict:
    """``point`` of the graph with digest ``key``: {"row", "report", "fold"} (report and fold None when the point
    is infeasible, e.g. does not fit its budget; the row then says why). ``payload``: as for ``graph_of``."""
    graph = graph_of(key, payload)
    try:
        planned = plan_design(graph, compile_options(point), _space(key, graph, point))
    except HlsfuseError as exc:
        return {"row": {**point.settings(), "status": "infeasible", "message": str(exc)}, "report": None,
                "fold": None}
    row = {**point.settings(), **row_of_report(planned.report, len(planned.plan.stages))}
    return {"row": row, "report": planned.report, "fold": fold_json(graph, planned.plan)}
