"""DIR/index.html of ``hlsfuse explore``: the plots and the tables of a sweep on one self-contained page.

Python computes the facts (which rows, which columns, every number formatted) as small table views; the
template ``explore/index.html.j2`` holds the page. Every image is embedded as a data URI, so the page needs
no other file and no network. The template escapes every string (an ``autoescape`` block): graph, node and
stage names and messages come from the user.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..backends.templates import render
from ..boards import BOARDS
from .plots import Figures, Plot

__all__ = ["index_html", "compile_command"]

_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    css: str  # "", or classes: chosen, flagged, bottleneck, infeasible


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    kinds: tuple[str, ...]  # per column, its CSS class: num (right-aligned), text (one line), wrap (long text)
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Image:
    title: str
    caption: str
    uri: str
    files: tuple[str, ...]  # the files in DIR, linked beside the image
    scroll: bool  # a tall drawing (the fusion graph) scrolls in a box


def _int(v) -> str:
    return "–" if v is None else f"{v:,}"


def _num(fmt: str) -> Callable:
    return lambda v: "–" if v is None else format(v, fmt)


def _yes(v) -> str:
    return {None: "–", True: "yes", False: "no"}[v]


def _target(r: Mapping) -> str:
    limits = [f"{r['dsp_budget']:,} DSP" if r["dsp_budget"] is not None else "",
              f"{r['bram18_budget']:,} BRAM18" if r["bram18_budget"] is not None else "",
              f"{r['lut_budget']:,} LUT" if r.get("lut_budget") is not None else "", f"{r['clock_ns']:g} ns"]
    return f"{r['board'] or r['part']}: {', '.join(x for x in limits if x)}"


def _fronts(r: Mapping) -> str:
    return " ".join(name for key, name in (("pareto_dsp", "DSP"), ("pareto_bram", "BRAM"), ("pareto_lut", "LUT"))
                    if r.get(key))


# column title -> (row -> cell text, CSS class of the column)
_POINT = {"point": (lambda r: r["id"], "text"), "fusion": (lambda r: r["fusion"], "text"),
          "target": (_target, "text")}
_LANES = {"lanes": (lambda r: str(r["port_lanes"]), "text")}
_PRECISION = {"precision": (lambda r: r["precision"] or "–", "text")}
_FIGURES = {
    "cycles": (lambda r: _int(r["cycles_per_frame"]), "num"), "bound": (lambda r: _int(r["bound_cycles"]), "num"),
    "latency": (lambda r: _int(r["latency"]), "num"),
    "frames/s": (lambda r: _num(",.0f")(r["frames_per_second"]), "num"),
    "DSP": (lambda r: _int(r["dsp"]), "num"), "BRAM18": (lambda r: _int(r["bram18"]), "num"),
    "LUT": (lambda r: _int(r["lut"]), "num"), "MAC util": (lambda r: _num(".1%")(r["mac_utilization"]), "num"),
    "stages": (lambda r: _int(r["stages"]), "num"), "FIFOs": (lambda r: _int(r["fifos"]), "num"),
    "FIFO bits": (lambda r: _int(r["fifo_bits"]), "num")}
_ERRORS = {"max error": (lambda r: _num(".3g")(r["max_error"]), "num"),
           "mean error": (lambda r: _num(".3g")(r["mean_error"]), "num")}
_MEASURED = {"measured": (lambda r: _num(",.0f")(r["measured_cycles"]), "num"),
             "measured/model": (lambda r: _num(".3f")(r["measured_ratio"]), "num"),
             "bit-exact": (lambda r: _yes(r["bit_exact"]), "text")}
_SYNTH = {"Yosys DSP": (lambda r: _int(r.get("yosys_dsp")), "num"),
          "Yosys BRAM18": (lambda r: _int(r.get("yosys_bram18")), "num"),
          "Yosys LUT": (lambda r: _int(r.get("yosys_lut")), "num"),
          "Yosys FF": (lambda r: _int(r.get("yosys_ff")), "num"),
          "depth ns": (lambda r: _num(".1f")(r.get("logic_depth_ns")), "num")}
_FLAG = {"flag": (lambda r: r["flag"] or "", "wrap")}


def _table(rows: Sequence[Mapping], columns: Mapping[str, tuple], css: Callable[[Mapping], str]) -> Table:
    return Table(tuple(columns), tuple(kind for _, kind in columns.values()),
                 tuple(Row(tuple(cell(r) for cell, _ in columns.values()), css(r)) for r in rows))


def _settings(rows: Sequence[Mapping]) -> dict:
    """The columns of a point's settings, with port lanes and precision only when the sweep varied them."""
    out = dict(_POINT)
    if any(r["port_lanes"] != "auto" for r in rows):
        out.update(_LANES)
    if any(r["precision"] is not None for r in rows):
        out.update(_PRECISION)
    return out


def _optional(rows: Sequence[Mapping]) -> dict:
    """The columns that only some sweeps fill: errors, measurements, synthesis."""
    out = {}
    if any(r.get("max_error") is not None or r.get("mean_error") is not None for r in rows):
        out.update(_ERRORS)
    if any(r.get("measured_cycles") is not None for r in rows):
        out.update(_MEASURED)
    if any(r.get("yosys_dsp") is not None for r in rows):
        out.update(_SYNTH)
    if any(r.get("flag") for r in rows) or _MEASURED.keys() & out.keys():
        out.update(_FLAG)
    return out


def _row_css(chosen: str | None) -> Callable[[Mapping], str]:
    def css(r: Mapping) -> str:
        classes = ["chosen" if r["id"] == chosen else "", "flagged" if r.get("flag") else "",
                   "infeasible" if r["status"] != "ok" else ""]
        return " ".join(c for c in classes if c)
    return css


def _pareto_table(rows: Sequence[Mapping], chosen: str | None) -> Table:
    front = [r for r in rows if r["status"] == "ok" and (r.get("pareto_dsp") or r.get("pareto_bram")
                                                         or r.get("pareto_lut"))]
    front.sort(key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r["cycles_per_frame"], r["id"]))
    columns = {"rank": (lambda r: _int(r.get("rank")), "num"), **_settings(rows), **_FIGURES, **_optional(front),
               "front": (_fronts, "text")}
    return _table(front, columns, _row_css(chosen))


def _points_table(rows: Sequence[Mapping], chosen: str | None) -> Table:
    columns = {**_settings(rows), "status": (lambda r: r["status"], "text"),
               **{k: _FIGURES[k] for k in ("cycles", "DSP", "BRAM18", "LUT")},
               "front": (_fronts, "text"), "rank": (lambda r: _int(r.get("rank")), "num"),
               "note": (lambda r: r["message"] or r.get("flag") or "", "wrap")}
    return _table(rows, columns, _row_css(chosen))


def _stage_table(report: Mapping) -> Table:
    slowest = max(s["cycles_per_frame"] for s in report["stages"])
    columns = {"stage": (lambda s: s["name"], "text"), "kind": (lambda s: s["kind"], "text"),
               "nodes": (lambda s: ", ".join(s["nodes"]) or "–", "wrap"),
               "cycles": (lambda s: _int(s["cycles_per_frame"]), "num"),
               "bound": (lambda s: _int(s["bound_cycles"]), "num"),
               "simd × lanes": (lambda s: f"{s['simd'] or 1} × {s['lanes']}", "num"),
               "DSP": (lambda s: _int(s["dsp"]), "num"), "BRAM18": (lambda s: _int(s["bram18"]), "num"),
               "LUT": (lambda s: _int(s["lut"]), "num")}
    return _table(report["stages"], columns,
                  lambda s: "bottleneck" if s["cycles_per_frame"] == slowest else "")


def _image(folder: Path, plot: Plot) -> Image:
    path = folder / plot.image
    uri = f"data:{_MIME[path.suffix]};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
    return Image(plot.title, plot.caption, uri, plot.files, plot.stem == "fusion")


def compile_command(summary: Mapping, row: Mapping, folder: Path) -> str:
    """The ``hlsfuse compile`` command that builds point ``row`` with the folding the sweep found."""
    words = ["hlsfuse", "compile", summary["source"], "-o", f"OUT_{row['id']}",
             "--fold", str(Path(folder) / "points" / row["id"] / "fold.json")]
    preset = BOARDS.get(row["board"]) if row["board"] else None
    if preset:
        words += ["--board", preset.board]
    if preset is None or preset.part != row["part"]:
        words += ["--part", row["part"]]
    if preset is None or preset.clock != row["clock_ns"]:
        words += ["--clock", f"{row['clock_ns']:g}"]
    if isinstance(row["port_lanes"], int):
        words += ["--port-lanes", str(row["port_lanes"])]
    if row["fusion"] == "unfused":
        words += ["--opt-level", "0"]
    if row["precision"] is not None:
        words += summary.get("precisions", {}).get(row["precision"], ["--precision", row["precision"]])
    return shlex.join(words)


def index_html(summary: Mapping, reports: Mapping[str, Mapping], figures: Figures, folder: Path) -> str:
    """The page of the sweep in ``folder`` (DIR): ``summary`` is DIR/points.json, ``reports`` point id ->
    report.json, ``figures`` what ``plots.render`` wrote into ``folder``."""
    folder = Path(folder)
    rows = summary["points"]
    chosen = summary["chosen"]
    ok = [r for r in rows if r["status"] == "ok"]
    counts = {"points": len(rows), "fit": len(ok), "infeasible": len(rows) - len(ok),
              "on a front": sum(1 for r in ok if r.get("pareto_dsp") or r.get("pareto_bram")),
              "verified": sum(1 for r in rows if r.get("measured_cycles") is not None),
              "flagged": sum(1 for r in rows if r.get("flag"))}
    row = next((r for r in ok if r["id"] == chosen), None)
    report = reports.get(chosen) if row is not None else None
    commands = [(r["id"], compile_command(summary, r, folder)) for r in ([row] if row else [])]
    return render("explore/index.html.j2", graph=summary["graph"], source=summary["source"],
                  command=summary["command"], boards=[b["name"] for b in summary["boards"]],
                  counts=list(counts.items()), chosen=chosen, images=[_image(folder, p) for p in figures.plots],
                  notes=list(figures.notes), pareto=_pareto_table(rows, chosen),
                  stages=_stage_table(report) if report else None, points=_points_table(rows, chosen),
                  commands=commands, folder=str(folder))
