"""``explore``: a sweep of the design space, written to a folder as its points finish.

    points --evaluate (pool or Dask)--> DIR/points/<id>/{point,report,fold}.json   as each finishes
           --fronts, ranks--> the K best --verify (rtlsim native)--> DIR/points/<id>/verify.json
                              the K best --synth (Yosys)-->          DIR/points/<id>/synth.json
           --> DIR/points.csv, points.json, the plots and index.html                   at the end

Every file is written whole (a temporary file and a rename). A point's point.json is written last, so
a point with one is finished: an interrupted sweep keeps what finished, and ``resume`` skips it (and
verifications already made). DIR/sweep.json says which graphs the folder's points belong to; a resumed
sweep of another graph is refused.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import reference
from ..accuracy import measure
from ..errors import HlsfuseError
from ..fileio import write_atomic
from ..fusion import fuse
from ..fusion.report import to_dot
from ..graph_json import graph_to_dict
from ..ir import Graph
from ..progress import Progress
from .evaluate import evaluate
from .points import FRONTS, FUSIONS, Point
from .runners import run_dask, run_local
from .synthesize import SYNTH_COLUMNS, synth_flag, synth_point
from .verify import verify_point

__all__ = ["Sweep", "COLUMNS", "explore", "precision_error", "mark_fronts", "Interrupted"]

COLUMNS = (
    "id", "fusion", "board", "part", "clock_ns", "dsp_budget", "bram18_budget", "lut_budget", "port_lanes", "precision",
    "status", "message", "stages", "fifos", "fifo_bits", "cycles_per_frame", "bound_cycles", "latency",
    "frames_per_second", "multipliers", "dsp", "bram18", "lut", "ff", "mac_utilization", "bottleneck",
    "max_error", "mean_error", "pareto_dsp", "pareto_bram", "pareto_lut", "rank", "measured_cycles", "measured_ratio",
    "bit_exact", *SYNTH_COLUMNS, "flag",
)
"""The columns of points.csv, and the keys of every row of points.json."""


class Interrupted(HlsfuseError):
    """The sweep was stopped (Ctrl-C); what finished is on disk."""


@dataclass(frozen=True)
class Sweep:
    """What to explore: the graph per precision choice (None: a JSON graph's own types), the points, and the
    error of each precision against the float model (ONNX models)."""

    source: str
    graphs: Mapping[str | None, Graph]
    points: tuple[Point, ...]
    boards: tuple[dict, ...] = ()  # the boards the points use: name, part, clock_ns, dsp, bram18, lut
    errors: Mapping[str | None, dict] = field(default_factory=dict)  # precision -> max_error, mean_error
    command: str = ""
    precisions: Mapping[str, list[str]] = field(default_factory=dict)  # precision -> its flags for hlsfuse compile


@dataclass(frozen=True)
class Settings:
    jobs: int = 1
    scheduler: str | None = None  # a Dask scheduler's address: the tasks run there
    verify: int = 0  # the K best points of the front to simulate
    synth: int = 0  # the K best points of the front to synthesize with Yosys
    frames: int = 3  # frames per verification
    seed: int = 0
    choose: str | None = None  # the point whose stages are plotted (default: the best)
    resume: bool = False
    force: bool = False
    progress: bool | None = None  # None: on a terminal only


def precision_error(graph: Graph, float_graph: Graph, samples: int, seed: int) -> dict:
    """Max and mean |fixed - float| over every output element of ``samples`` seeded frames of standard normal
    inputs (ONNX models take normalised inputs; the fixed graph quantizes them to its input types)."""
    frames = [reference.random_inputs(float_graph, seed + k) for k in range(samples)]
    found = measure([reference.run(graph, f) for f in frames], [reference.run(float_graph, f) for f in frames],
                    "hlsfuse's float32 import", f"{samples} seeded frames")
    return {"max_error": found.max_abs, "mean_error": found.mean_abs}


def _digest(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _prepare(folder: Path, digests: Mapping[str | None, str], settings: Settings, sweep: Sweep) -> None:
    """Create ``folder``, or take it back (``resume``), or empty it (``force``); refuse anything else."""
    described = folder / "sweep.json"
    if folder.exists() and not folder.is_dir():
        raise HlsfuseError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        if settings.resume:
            if not described.is_file():
                raise HlsfuseError(f"{folder}: holds no sweep to resume (no sweep.json)")
            try:
                before = json.loads(described.read_text(encoding="utf-8"))["graphs"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise HlsfuseError(f"{described}: not a sweep description ({exc})") from None
            if not set(digests.values()) & set(before.values()):
                raise HlsfuseError(f"{folder}: holds a sweep of another graph; --resume continues the same one")
        elif settings.force:
            if not described.is_file():
                raise HlsfuseError(f"{folder}: is not empty and holds no sweep (no sweep.json); --force replaces only "
                                   "a sweep's folder")
            shutil.rmtree(folder)
        else:
            raise HlsfuseError(f"{folder}: is not empty; --resume continues its sweep, --force replaces it")
    if not folder.parent.is_dir():
        raise HlsfuseError(f"{folder}: folder '{folder.parent}' does not exist")
    (folder / "points").mkdir(parents=True, exist_ok=True)
    write_atomic(described, json.dumps({"source": sweep.source, "command": sweep.command,
                                        "graphs": {str(k): v for k, v in digests.items()}}, indent=1) + "\n")


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # not finished (or damaged): done again


def _stream(tasks: list, payload: dict, settings: Settings) -> Iterator[tuple[int, dict]]:
    if settings.scheduler:
        return run_dask(tasks, payload, settings.scheduler)
    return run_local(tasks, payload, settings.jobs)


def _run(label: str, tasks: list, payload: dict, settings: Settings, keep) -> None:
    """Run ``tasks``, handing each result to ``keep(index, result)`` as it arrives, with a progress line."""
    if not tasks:
        return
    progress = Progress(label, len(tasks), enabled=settings.progress)
    progress.update(0)
    try:
        for k, result in _stream(tasks, payload, settings):
            keep(k, result)
            progress.update()
    except KeyboardInterrupt:
        progress.close()
        raise Interrupted(f"stopped after {progress.done} of {len(tasks)} {label}") from None
    progress.close()


def mark_fronts(rows: list[dict]) -> None:
    """Set pareto_dsp, pareto_bram and pareto_lut (not beaten in cycles and that resource at once by another ok
    point) and
    rank the DSP front's points by area-delay product (cycles x DSPs, the order of MAC utilization), ties
    to fewer cycles, then fewer BRAM18s, then fewer FIFO bits."""
    ok = [r for r in rows if r["status"] == "ok"]
    for r in rows:
        r["pareto_dsp"] = r["pareto_bram"] = r["pareto_lut"] = False
        r["rank"] = None
    for resource, key in FRONTS.items():
        for r in ok:
            r[key] = not any(o["cycles_per_frame"] <= r["cycles_per_frame"] and o[resource] <= r[resource]
                             and (o["cycles_per_frame"], o[resource]) != (r["cycles_per_frame"], r[resource])
                             for o in ok)
    front = sorted((r for r in ok if r["pareto_dsp"]), key=lambda r: (
        r["cycles_per_frame"] * max(r["dsp"], 1), r["cycles_per_frame"], r["bram18"], r["fifo_bits"], r["id"]))
    for k, r in enumerate(front, 1):
        r["rank"] = k


def _csv(rows: list[dict]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if r[k] is None else r[k] for k in COLUMNS})
    return text.getvalue()


def explore(sweep: Sweep, folder: str | Path, settings: Settings) -> dict:
    """Evaluate every point of ``sweep`` (and verify the best), writing ``folder`` as results arrive; returns
    points.json's content. Ctrl-C raises ``Interrupted`` after writing points.csv/json of what finished."""
    folder = Path(folder)
    data = {label: graph_to_dict(g) for label, g in sweep.graphs.items()}
    digests = {label: _digest(d) for label, d in data.items()}
    payload = {digests[label]: d for label, d in data.items()}
    _prepare(folder, digests, settings, sweep)
    rows: dict[str, dict] = {}
    reports: dict[str, dict] = {}

    def base(point: Point) -> Path:
        return folder / "points" / point.id

    def keep_point(point: Point, result: dict) -> None:
        (where := base(point)).mkdir(exist_ok=True)
        if result["report"] is not None:
            write_atomic(where / "report.json", json.dumps(result["report"], indent=1) + "\n")
            write_atomic(where / "fold.json", json.dumps(result["fold"], indent=1) + "\n")
        write_atomic(where / "point.json", json.dumps(result["row"], indent=1) + "\n")  # last: the point is done
        rows[point.id] = result["row"]

    todo = []
    for point in sweep.points:
        row = _read(base(point) / "point.json") if settings.resume else None
        if row is not None and row.get("id") == point.id:
            rows[point.id] = row
        else:
            todo.append(point)
    tasks = [(evaluate, (digests[p.precision], p)) for p in todo]
    try:
        _run("points", tasks, payload, settings, lambda k, result: keep_point(todo[k], result))
        table = _table(sweep, rows)
        ranked = [next(p for p in sweep.points if p.id == r["id"])
                  for r in sorted((r for r in table if r["rank"] is not None), key=lambda r: r["rank"])]

        def check(label: str, task, name: str, count: int) -> dict[str, dict]:
            """``task`` run on the ``count`` best points of the front, each result kept as points/<id>/<name>
            (a resumed sweep keeps those it has)."""
            found, todo = {}, []
            for point in ranked[:count]:
                old = _read(base(point) / name) if settings.resume else None
                if old is not None and old.get("id") == point.id:
                    found[point.id] = old
                else:
                    todo.append(point)

            def keep(k: int, result: dict) -> None:
                write_atomic(base(todo[k]) / name, json.dumps(result, indent=1) + "\n")
                found[todo[k].id] = result

            _run(label, [(task, (digests[p.precision], p)) for p in todo], payload, settings, keep)
            return found

        verified = check("verified points", functools.partial(verify_point, frames=settings.frames,
                                                              seed=settings.seed), "verify.json", settings.verify)
        synthesized = check("synthesized points", synth_point, "synth.json", settings.synth)
    except Interrupted:
        _write_tables(folder, sweep, _table(sweep, rows), None)
        raise
    table = _table(sweep, rows, verified, synthesized)
    for r in table:
        if r["status"] == "ok":
            reports[r["id"]] = _read(folder / "points" / r["id"] / "report.json")
    best = min((r for r in table if r["rank"] is not None), key=lambda r: r["rank"], default=None)
    choose = settings.choose or (best["id"] if best else None)
    if choose is not None and choose not in reports:
        raise HlsfuseError(f"--choose: '{choose}' is not a point of this sweep that fits (see points.csv)")
    summary = _write_tables(folder, sweep, table, choose)
    _publish(folder, sweep, summary, reports)
    return summary


def _publish(folder: Path, sweep: Sweep, summary: dict, reports: dict) -> None:
    """The plots and index.html (matplotlib; Graphviz's dot for the chosen point's fusion graph, if installed)."""
    try:
        from .page import index_html
        from .plots import render
    except ImportError as exc:
        raise HlsfuseError(f"the plots of explore need matplotlib ({exc}): pip install 'hlsfuse[explore]'; "
                           f"points.csv and points.json are written") from None
    dot = None
    if summary["chosen"] is not None:
        point = next(p for p in sweep.points if p.id == summary["chosen"])
        graph = sweep.graphs[point.precision]
        dot = to_dot(fuse(graph, opt_level=FUSIONS[point.fusion]), graph)
    figures = render(summary, reports, dot, folder)
    write_atomic(folder / "index.html", index_html(summary, reports, figures, folder))


def _table(sweep: Sweep, rows: Mapping[str, dict], verified: Mapping[str, dict] | None = None,
           synthesized: Mapping[str, dict] | None = None) -> list[dict]:
    """The sweep's rows in its order (finished points only), every column filled, fronts and ranks marked."""
    table = []
    for point in sweep.points:
        if point.id not in rows:
            continue
        row = dict.fromkeys(COLUMNS)
        row.update(rows[point.id])
        row.update(sweep.errors.get(point.precision, {}))
        found = (verified or {}).get(point.id)
        if found is not None:
            row.update({k: found[k] for k in ("measured_cycles", "measured_ratio", "bit_exact", "flag")})
        mapped = (synthesized or {}).get(point.id)
        flags = [row["flag"] or ""]
        if mapped is not None:
            row.update({k: mapped[k] for k in SYNTH_COLUMNS})
            flags.append(synth_flag(mapped))
        row["flag"] = "; ".join(f for f in flags if f)
        table.append(row)
    mark_fronts(table)
    return table


def _write_tables(folder: Path, sweep: Sweep, table: list[dict], chosen: str | None) -> dict:
    summary = {"graph": next(iter(sweep.graphs.values())).name, "source": sweep.source, "command": sweep.command,
               "boards": list(sweep.boards), "precisions": dict(sweep.precisions), "chosen": chosen, "points": table}
    write_atomic(folder / "points.csv", _csv(table))
    write_atomic(folder / "points.json", json.dumps(summary, indent=1) + "\n")
    return summary
