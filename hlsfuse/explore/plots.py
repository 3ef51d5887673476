"""The plots of ``hlsfuse explore``, drawn from DIR/points.json and the chosen point's report.json.

    pareto_dsp, pareto_bram,  cycles per frame against DSPs / BRAM18s / LUTs: every point that fits, the front
    pareto_lut                as a step line, the verified points ringed, each board's limit a vertical line
    stages, resources         the chosen point: cycles per stage (bottleneck in red, each stage's bound),
                              and DSPs, BRAM18s and LUTs per stage
    verify                    modelled against measured cycles (only after --verify)
    synth                     the resource model against Yosys's counts, per resource (only after --synth)
    fusion                    the chosen point's fusion graph, by Graphviz's dot (when installed)

Each plot is a matplotlib Figure of its own (no pyplot, so no global figure state; the Agg canvas draws the
PNG, matplotlib's SVG backend the SVG). The files are byte-identical run to run: SVG ids come from a fixed
hash salt and neither format records a date or the software that wrote it.
"""

from __future__ import annotations

import io
import math
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogFormatter, MaxNLocator

from ..fileio import write_atomic
from .points import FRONTS

__all__ = ["Plot", "Figures", "render", "NO_DOT"]

NO_DOT = "fusion graph not drawn: Graphviz's dot is not installed (apt-get install graphviz)"

# rcParams while drawing and saving (rc_context restores them afterwards)
_STYLE = {"font.size": 9, "axes.titlesize": 10, "figure.titlesize": 11, "axes.grid": True, "grid.alpha": 0.3,
          "axes.spines.top": False, "axes.spines.right": False, "savefig.dpi": 110, "svg.hashsalt": "hlsfuse",
          "svg.fonttype": "path", "legend.fontsize": 8, "legend.frameon": False}
_FUSION = {"fpga": {"marker": "o", "color": "#1f77b4", "s": 30, "label": "fused (fpga)"},
           "unfused": {"marker": "s", "facecolors": "none", "edgecolors": "#ff7f0e", "s": 60, "linewidths": 1.2,
                       "label": "unfused"}}
_LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1}
_BAR, _HOT, _OK, _BAD = "#8fb3d9", "#d62728", "#2ca02c", "#d62728"


@dataclass(frozen=True)
class Plot:
    stem: str  # DIR/<stem>.png and .svg
    title: str
    caption: str  # one sentence on what this plot shows for this sweep
    files: tuple[str, ...]  # names in DIR, the one the page shows first

    @property
    def image(self) -> str:
        return self.files[0]


@dataclass(frozen=True)
class Figures:
    plots: tuple[Plot, ...]
    notes: tuple[str, ...]  # why a plot is missing or what it leaves out


def _text(name) -> str:
    """A user's name as matplotlib text: a ``$`` must not start mathtext."""
    return str(name).replace("$", r"\$")


def _n(value) -> str:
    return f"{value:,}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _be(n: int) -> str:
    return "is" if n == 1 else "are"


def _save(fig: Figure, folder: Path, stem: str) -> tuple[str, ...]:
    FigureCanvasAgg(fig)
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, metadata=metadata)
        write_atomic(folder / f"{stem}.{fmt}", buffer.getvalue())
    return f"{stem}.png", f"{stem}.svg"


def _legend_above(ax, ncol: int = 3) -> None:
    """The legend in a band above the axes, where it never covers a point."""
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=ncol, borderaxespad=0)


def _axes_x(ax, x: float) -> float:
    """``x`` (data) as a fraction of the axes' width, under the current limits."""
    return ax.transAxes.inverted().transform(ax.transData.transform((x, 1)))[0]


def _limit_lines(ax, limits: Mapping[int, list[str]]) -> int:
    """Vertical lines at the boards' limits, labelled left of the line near the top; labels that would overlap
    go on the next row down. Returns the number of rows."""
    ends: list[float] = []  # right end of the last label of each row
    width = ax.get_figure().get_figwidth() * 72 * 0.8  # the axes' width in points, roughly
    for x, names in sorted(limits.items()):
        ax.axvline(x, color="0.45", linestyle="--", linewidth=1, zorder=1)
        label = f"{', '.join(names)}: {_n(x)}"
        right = _axes_x(ax, x)
        left = right - len(label) * 4.6 / width
        row = next((k for k, end in enumerate(ends) if end < left), len(ends))
        ends[row:row + 1] = [right]
        ax.text(x, 0.985 - 0.06 * row, _text(label), transform=ax.get_xaxis_transform(), ha="right", va="top",
                fontsize=7.5, color="0.3", bbox=_LABEL_BOX)
    return len(ends)


def _fastest(rows, boards) -> str:
    parts = []
    for b in boards:
        fits = [r for r in rows if r["part"] == b["part"]
                and all(b.get(k) is None or r[k] <= b[k] for k in ("dsp", "bram18", "lut"))]
        if fits:
            parts.append(f"{b['name']} {_n(min(r['cycles_per_frame'] for r in fits))}")
    return f"; the fastest point that fits takes (cycles per frame) {', '.join(parts)}" if parts else ""


def _pareto(rows, boards, infeasible: int, resource: str, label: str, folder: Path) -> Plot:
    stem = FRONTS[resource]  # also the row's flag of that front
    fig = Figure(figsize=(9, 5.2), layout="constrained")
    ax = fig.add_subplot()
    for fusion, style in _FUSION.items():
        mine = [r for r in rows if r["fusion"] == fusion]
        if mine:
            ax.scatter([r[resource] for r in mine], [r["cycles_per_frame"] for r in mine], zorder=3, **style)
    front = sorted((r for r in rows if r[stem]), key=lambda r: (r[resource], r["cycles_per_frame"]))
    for flagged, color, name in ((False, _OK, "verified"), (True, _BAD, "verified, flagged")):
        ringed = [r for r in rows if r["measured_cycles"] is not None and bool(r["flag"]) == flagged]
        if ringed:
            ax.scatter([r[resource] for r in ringed], [r["cycles_per_frame"] for r in ringed], s=150,
                       facecolors="none", edgecolors=color, linewidths=1.6, zorder=4, label=name)
    limits: dict[int, list[str]] = {}
    for b in boards:
        if b.get(resource) is not None:  # a sweep written before LUT budgets names none
            limits.setdefault(b[resource], []).append(b["name"])
    if limits:
        ax.plot([], [], color="0.45", linestyle="--", linewidth=1, label=f"a board's {label}")
    xs = [r[resource] for r in rows] + list(limits)
    ys = [r["cycles_per_frame"] for r in rows]
    if min(xs) == 0:  # a design without DSPs or BRAM: 0 stays on the axis, in a linear stretch up to 1
        ax.set_xscale("symlog", linthresh=1, linscale=0.5)
        ax.set_xlim(-0.4, max(xs) * 1.6)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _n(int(v)) if v >= 0 else ""))
    else:  # a plain log axis labels its minor ticks when the points span less than a decade or two
        ax.set_xscale("log")
        ax.set_xlim(min(xs) / 1.6, max(xs) * 1.6)
        ax.xaxis.set_major_formatter(LogFormatter())  # 40, 100, 200 rather than 4x10^1
        ax.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    ax.set_yscale("log")
    if front:  # a staircase: the fewest cycles for each budget, on to the right edge
        right = ax.get_xlim()[1]
        ax.step([r[resource] for r in front] + [right], [r["cycles_per_frame"] for r in front + front[-1:]],
                where="post", color="black", linewidth=1.2, zorder=2, label=f"front ({len(front)} points)")
    rows_of_labels = _limit_lines(ax, limits)
    # head room for the limits' labels: the slowest point sits below them
    low, high = math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.3)
    room = 0.06 * rows_of_labels + 0.02
    ax.set_ylim(10 ** low, 10 ** (low + (high - low) / (1 - room)))
    ax.set_xlabel(f"{label} used" + (" (symmetric log axis: 0 at the left)" if min(xs) == 0 else ""))
    ax.set_ylabel("cycles per frame")
    _legend_above(ax)
    fig.suptitle(f"Cycles per frame against {label}")
    zero = sum(1 for r in rows if r[resource] == 0)
    caption = (f"The cycles-vs-{label} front holds {len(front)} of {_count(len(rows), 'fitting point')}"
               + _fastest(rows, boards)
               + (f"; {_count(zero, 'point')} with no {label} {_be(zero)} drawn at 0" if zero else "")
               + (f"; {_count(infeasible, 'infeasible point')} {_be(infeasible)} not drawn" if infeasible else "")
               + ".")
    return Plot(stem, f"Pareto front: cycles against {label}", caption, _save(fig, folder, stem))


def _stage_axes(n: int, panels: int, width: float) -> tuple[Figure, list]:
    fig = Figure(figsize=(width, 1.6 + 0.24 * n), layout="constrained")
    axes = fig.subplots(1, panels, sharey=True, squeeze=False)[0]
    axes[0].set_ylim(n - 0.5, -0.5)  # the first stage on top, no empty band around the bars
    return fig, list(axes)


def _stages(row, report, folder: Path) -> Plot:
    stages = report["stages"]
    cycles = [s["cycles_per_frame"] for s in stages]
    slowest = max(cycles)
    fig, (ax,) = _stage_axes(len(stages), 1, 9)
    y = range(len(stages))
    ax.barh(y, cycles, color=[_HOT if c == slowest else _BAR for c in cycles], height=0.7, zorder=2)
    ax.scatter([s["bound_cycles"] for s in stages], y, marker="|", s=120, color="black", zorder=3,
               label="bound (the stage's work at its folding)")
    ax.axvline(report["cycles_per_frame"], color=_HOT, linestyle="--", linewidth=1, zorder=1,
               label=f"design: {_n(report['cycles_per_frame'])} cycles per frame")
    ax.set_yticks(list(y), labels=[_text(s["name"]) for s in stages])
    ax.set_xlabel("cycles per frame")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _n(int(v))))
    ax.grid(axis="y", visible=False)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend([Patch(color=_HOT), *handles], ["bottleneck", *labels], loc="lower left", bbox_to_anchor=(0, 1.01),
              ncol=3, borderaxespad=0)
    fig.suptitle(f"Cycles per stage of {_text(row['id'])}")
    hot = next(s for s in stages if s["cycles_per_frame"] == slowest)
    ties = sum(1 for c in cycles if c == slowest) - 1
    caption = (f"{row['id']} has {len(stages)} stages; {hot['name']} is the bottleneck at {_n(slowest)} cycles per "
               f"frame, {_n(slowest - hot['bound_cycles'])} above its bound"
               + (f", and {_count(ties, 'more stage')} {'runs' if ties == 1 else 'run'} at the same rate" if ties
                  else "") + ".")
    return Plot("stages", "Cycles per stage (chosen point)", caption, _save(fig, folder, "stages"))


def _resources(row, report, folder: Path) -> Plot:
    stages, fifos = report["stages"], report["fifos"]
    names = [_text(s["name"]) for s in stages] + ["FIFOs (all channels)"]
    slowest = max(s["cycles_per_frame"] for s in stages)
    fig, axes = _stage_axes(len(names), 3, 11)
    y = range(len(names))
    budgets = {"dsp": row["dsp_budget"], "bram18": row["bram18_budget"], "lut": row.get("lut_budget")}
    for ax, key, label in zip(axes, ("dsp", "bram18", "lut"), ("DSP", "BRAM18", "LUT")):
        values = [s[key] for s in stages] + [fifos[key]]
        colors = [_HOT if s["cycles_per_frame"] == slowest else _BAR for s in stages] + ["0.6"]
        ax.barh(y, values, color=colors, height=0.7, zorder=2)
        total = report["total"][key]
        budget = f" of {_n(budgets[key])}" if budgets[key] is not None else ""
        ax.set_title(f"{label}: {_n(total)}{budget}")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _n(int(v))))
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(list(y), labels=names)
    fig.suptitle(f"Resources per stage of {_text(row['id'])} (bottleneck in red)")
    top = max(stages, key=lambda s: (s["lut"], s["name"]))
    caption = (f"{row['id']} uses {_n(report['total']['dsp'])} DSPs, {_n(report['total']['bram18'])} BRAM18s and "
               f"{_n(report['total']['lut'])} LUTs, of which the FIFOs take {_n(fifos['bram18'])} BRAM18s and "
               f"{_n(fifos['lut'])} LUTs; the stage with the most LUTs is {top['name']} ({_n(top['lut'])}).")
    return Plot("resources", "Resources per stage (chosen point)", caption, _save(fig, folder, "resources"))


SYNTH_RESOURCES = (("dsp", "yosys_dsp", "DSP"), ("bram18", "yosys_bram18", "BRAM18"), ("lut", "yosys_lut", "LUT"),
                   ("ff", "yosys_ff", "FF"))
"""Per resource: the row's model figure, its Yosys count, the label."""


def _synth(rows, folder: Path) -> Plot:
    fig = Figure(figsize=(12, 3.8), layout="constrained")
    ratios = {}
    for ax, (model, yosys, label) in zip(fig.subplots(1, len(SYNTH_RESOURCES)), SYNTH_RESOURCES):
        xs, ys = [r[model] for r in rows], [r[yosys] for r in rows]
        hi = max(xs + ys + [1]) * 1.15
        ax.plot([0, hi], [0, hi], color="black", linewidth=1, label="Yosys = model")
        for flagged, color, name in ((False, _OK, "agrees in DSP and BRAM18"), (True, _BAD, "flagged")):
            mine = [r for r in rows if bool(r["flag"]) == flagged]
            if mine:
                ax.scatter([r[model] for r in mine], [r[yosys] for r in mine], color=color, zorder=3, label=name)
        ax.set(xlim=(0, hi), ylim=(0, hi), xlabel=f"model {label}", ylabel=f"Yosys {label}", title=label)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            axis.set_major_formatter(FuncFormatter(lambda v, _: _n(int(v))))
        pairs = [(y / x) for x, y in zip(xs, ys) if x]
        ratios[label] = (min(pairs), max(pairs)) if pairs else None
    _legend_above(fig.axes[0], ncol=3)
    fig.suptitle("The resource model against Yosys's mapped cells")
    spans = [f"{label} {lo:.2f}" + (f" to {hi:.2f}" if hi != lo else "")
             for label, span in ratios.items() if span for lo, hi in [span]]
    caption = (f"{_count(len(rows), 'point')} {'was' if len(rows) == 1 else 'were'} synthesized; Yosys / model: "
               f"{', '.join(spans)} (DSP and BRAM18 should be 1; LUT and FF are a band, docs/synth.md).")
    return Plot("synth", "The resource model against Yosys", caption, _save(fig, folder, "synth"))


def _verify(rows, folder: Path) -> Plot:
    fig = Figure(figsize=(10, 4.6), layout="constrained")
    both, ratio = fig.subplots(1, 2)
    model = [r["cycles_per_frame"] for r in rows]
    lo, hi = min(model) / 1.5, max(model + [r["measured_cycles"] for r in rows]) * 1.5
    line = [lo, hi]
    both.fill_between(line, [v * 0.95 for v in line], [v * 1.05 for v in line], color="0.85", label="±5%")
    both.plot(line, line, color="black", linewidth=1, label="measured = modelled")
    ratio.axhspan(0.95, 1.05, color="0.85")
    ratio.axhline(1, color="black", linewidth=1)
    for flagged, color, name in ((False, _OK, "agrees"), (True, _BAD, "flagged")):
        mine = [r for r in rows if bool(r["flag"]) == flagged]
        if mine:
            xs = [r["cycles_per_frame"] for r in mine]
            both.scatter(xs, [r["measured_cycles"] for r in mine], color=color, zorder=3, label=name)
            ratio.scatter(xs, [r["measured_cycles"] / r["cycles_per_frame"] for r in mine], color=color, zorder=3)
    ratios = [r["measured_cycles"] / r["cycles_per_frame"] for r in rows]
    ratio.set_ylim(min(0.9, min(ratios) - 0.03), max(1.1, max(ratios) + 0.03))
    both.set(xscale="log", yscale="log", xlim=line, ylim=line, xlabel="modelled cycles per frame",
             ylabel="measured cycles per frame")
    ratio.set(xscale="log", xlim=line, xlabel="modelled cycles per frame", ylabel="measured / modelled")
    for axis in (both.xaxis, both.yaxis, ratio.xaxis):  # 10,000 and 20,000, 50,000 between: labels never collide
        axis.set_major_formatter(FuncFormatter(lambda v, _: _n(int(round(v)))))
        axis.set_minor_formatter(FuncFormatter(lambda v, _: _n(int(round(v))) if f"{v:.0e}"[0] in "25" else ""))
    for r in rows:  # name the flagged points, on the side of the point that has room
        if r["flag"]:
            x, y = r["cycles_per_frame"], r["measured_cycles"] / r["cycles_per_frame"]
            right = _axes_x(ratio, x) > 0.5
            ratio.annotate(_text(r["id"]), (x, y), xytext=(-7 if right else 7, 0), textcoords="offset points",
                           ha="right" if right else "left", va="center", fontsize=7.5, color=_BAD)
    _legend_above(both, ncol=4)
    fig.suptitle("Modelled against measured cycles per frame")
    flagged = sum(1 for r in rows if r["flag"])
    caption = (f"{_count(len(rows), 'point')} {'was' if len(rows) == 1 else 'were'} measured; measured/modelled "
               f"runs from {min(ratios):.3f} to {max(ratios):.3f}, and {flagged} {_be(flagged)} flagged.")
    return Plot("verify", "Modelled against measured cycles", caption, _save(fig, folder, "verify"))


def _fusion(dot_text: str, chosen: str, folder: Path) -> tuple[Plot | None, str | None]:
    exe = shutil.which("dot")
    if exe is None:
        return None, NO_DOT
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return None, "fusion graph not drawn: dot took more than 120 s"
    if done.returncode != 0:
        first = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        return None, f"fusion graph not drawn: dot failed ({first})"
    write_atomic(folder / "fusion.svg", done.stdout)
    groups = dot_text.count("subgraph cluster_")
    caption = (f"How {chosen} fuses the graph: {groups} groups, one box each (opaque ops shaded pink); bold edges "
               f"cross between groups.")
    return Plot("fusion", "Fusion graph (chosen point)", caption, ("fusion.svg",)), None


def render(summary: Mapping, reports: Mapping[str, Mapping], fusion_dot: str | None, folder: Path) -> Figures:
    """Write the plots of ``summary`` (DIR/points.json) into ``folder``; ``reports``: point id -> report.json
    (at least the chosen point's); ``fusion_dot``: the chosen point's fusion.dot, or None."""
    folder = Path(folder)
    rows: Sequence[Mapping] = summary["points"]
    ok = [r for r in rows if r["status"] == "ok"]
    plots: list[Plot] = []
    notes: list[str] = []
    chosen = summary["chosen"]
    with matplotlib.rc_context(_STYLE):
        if ok:
            for resource, label in (("dsp", "DSPs"), ("bram18", "BRAM18s"), ("lut", "LUTs")):
                plots.append(_pareto(ok, summary["boards"], len(rows) - len(ok), resource, label, folder))
        else:
            notes.append(f"no point fits its budget ({len(rows)} infeasible): there is no front to plot" if rows
                         else "the sweep has no point: there is nothing to plot")
        row = next((r for r in ok if r["id"] == chosen), None)
        if chosen is None:
            notes.append("no point was chosen: the stage plots are left out")
        elif row is None or chosen not in reports:
            notes.append(f"point {chosen} has no report: the stage plots are left out")
        else:
            plots.append(_stages(row, reports[chosen], folder))
            plots.append(_resources(row, reports[chosen], folder))
        measured = [r for r in ok if r["measured_cycles"] is not None]
        if measured:
            plots.append(_verify(measured, folder))
        mapped = [r for r in ok if r.get("yosys_dsp") is not None]
        if mapped:
            plots.append(_synth(mapped, folder))
    if fusion_dot is not None and row is not None:
        plot, note = _fusion(fusion_dot, chosen, folder)
        plots += [plot] if plot else []
        notes += [note] if note else []
    return Figures(tuple(plots), tuple(notes))
