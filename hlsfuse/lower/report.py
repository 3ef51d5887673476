"""Text views of a DataflowPlan: the stage table ``hlsfuse compile`` prints, and report.md."""

from __future__ import annotations

from collections.abc import Mapping

from ..fusion import FusionPlan
from ..fusion.report import table as fusion_table
from ..ir import Graph
from . import MIN_FIFO_DEPTH
from .area import Area
from .plan import DataflowPlan

__all__ = ["stage_table", "channel_table", "summary", "resources", "report_markdown", "mac_rates"]


def mac_rates(macs: int, dsp: int, lut: int, cycles: int) -> tuple[float | None, float | None]:
    """What the multipliers' resources deliver: MACs per DSP per cycle and MACs per 1,000 LUTs per cycle, each
    over a frame (``cycles``: the design's cycles per frame), rounded to 4 places; None where there are no MACs
    or none of that resource. Above 1 MAC per DSP per cycle, some products are not on DSPs."""
    if not macs or not cycles:
        return None, None
    return (round(macs / (dsp * cycles), 4) if dsp else None,
            round(1000 * macs / (lut * cycles), 4) if lut else None)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _grid(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    cells = [header, *rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(header))]
    lines = []
    for row in cells:
        parts = [cell.rjust(widths[k]) if k in right else cell.ljust(widths[k]) for k, cell in enumerate(row)]
        lines.append("  ".join(parts).rstrip())
    return lines


def stage_table(plan: DataflowPlan, areas: Mapping[str, Area] | None = None) -> str:
    """Every stage with its kind, ops, channels and its schedule's numbers; with ``areas`` (the resource
    model's figures per stage) also its SIMD (MAC stages) or lanes (map, fork and convert stages), DSPs,
    BRAM18s and LUTs, and a MAC stage's MACs per DSP and per 1,000 LUTs per cycle (``mac_rates``)."""
    header = ("stage", "kind", "nodes", "in", "out", "storage", "latency", "cycles/frame", "bound")
    if areas is not None:
        header += ("fold", "dsp", "bram18", "lut", "mac/dsp", "mac/klut")
    rows = []
    for s in plan.stages:
        nodes = " ".join(s.nodes) if s.nodes else s.sink
        if len(nodes) > 40:
            nodes = nodes[:37] + "..."
        ins = " ".join(f"{ch}({use})" for ch, use in zip(s.inputs, s.uses))
        rows.append(
            (
                s.name,
                s.kind,
                nodes,
                ins or "-",
                " ".join(s.outputs) or "-",
                str(s.storage),
                str(s.latency),
                str(s.cycles),
                str(s.schedule.bound),
            )
        )
        if areas is not None:
            a = areas[s.name]
            per_dsp, per_klut = mac_rates(s.schedule.macs, a.dsp, a.lut, plan.cycles)
            rows[-1] += (_factor(s), str(a.dsp), str(a.bram18), str(a.lut), _rate(per_dsp), _rate(per_klut))
    lines = _grid(header, rows, set(range(5, len(header))))
    return "\n".join(lines) + "\n"


def _factor(s) -> str:
    """A stage's parallelism, as fold.json names it: "simd 3/9" (products per iteration of an output's 9),
    "lanes 4" (elements per token; a window or rows stage's input elements per push), "pe 4" (outputs per emit
    of a window or rows stage), "snapshots 3" (completed windows a window stage holds), "multiplier lut" (a MAC
    stage's products in LUTs), "4->2" (a converter) or "-"."""
    f = s.schedule.factors
    if s.kind == "convert":
        return f"{f.lanes_in}->{f.lanes_out}"
    spelled = f.spelled(s.kind)
    parts = [f"simd {f.simd}/{s.schedule.main.products}"] if "simd" in spelled else []
    parts += [f"{name} {n}" for name, n in spelled.items() if name != "simd" and n != 1]
    return " ".join(parts) or "-"


def channel_table(plan: DataflowPlan) -> str:
    header = ("channel", "tensor", "type", "from", "to", "lanes", "depth")
    rows = [(c.name, c.tensor, str(c.type), c.producer, c.consumer, str(c.lanes), str(c.depth)) for c in plan.channels]
    return "\n".join(_grid(header, rows, {5, 6})) + "\n"


def _was(name: str, what: str, original: str) -> str:
    """`` (graph 'x.y')`` after a name that sanitizing changed (a keyword of C++ or Verilog, a dot...), else ""."""
    return "" if name == original else f" ({what} '{original}')"


def summary(plan: DataflowPlan) -> str:
    ports = ", ".join(f"{p.direction} {p.name}{_was(p.name, 'tensor', p.tensor)}: {p.type}"
                      + (f" ({p.lanes} lanes)" if p.lanes > 1 else "") for p in (*plan.inputs, *plan.outputs))
    bound = max(s.schedule.bound for s in plan.stages)
    lines = [
        f"design '{plan.top}'{_was(plan.top, 'graph', plan.graph)}: {len(plan.stages)} stages, "
        f"{len(plan.channels)} channels, {len(plan.roms)} ROMs; "
        f"{plan.cycles} cycles per frame (slowest stage; bound {bound}), first output after {plan.latency} cycles",
        f"ports: {ports}",
    ]
    for c in plan.channels:  # paths that meet again after one of them held a whole frame or more
        if c.depth > max(c.tokens, MIN_FIFO_DEPTH):  # a frame of one token still gets the shallowest FIFO
            lines.append(
                f"note: channel {c.name} needs {c.depth} tokens, more than a frame of '{c.tensor}' ({c.tokens}): "
                f"the paths from {c.producer} to {c.consumer} differ by more than a frame"
            )
    return "\n".join(lines) + "\n"


def resources(report: Mapping) -> str:
    """The resource lines of report.md from report.json's figures."""
    t, f = report["total"], report["fifos"]
    where = f"board {report['board']}, " if report["board"] else ""
    util = report["mac_utilization"]
    binding = report.get("binding")
    budgets = {"dsp": "DSP", "bram18": "BRAM18", "lut": "LUT"}
    lines = [
        f"{where}part {report['part']} ({report['dsp_slice']}), clock {report['clock_ns']:g} ns: "
        f"{report['frames_per_second']:g} frames/s",
        f"total: {t['multipliers']} multipliers, {t['dsp']} DSPs, {t['bram18']} BRAM18s, {t['lutram_bits']} LUTRAM "
        f"bits, {t['lut']} LUTs, {t['ff']} FFs (FIFOs: {f['bram18']} BRAM18s, {f['lut']} LUTs)",
        f"MAC utilization {util:.3f} ({report['macs_per_frame']} MACs per frame; "
        f"{_rate(report['macs_per_dsp_cycle'])} MACs per DSP and {_rate(report['macs_per_klut_cycle'])} per 1,000 "
        f"LUTs per cycle)" if util is not None else "no MAC stages",
    ]
    if binding:  # None: not solved (no budget, a folding or a rate given)
        lines.append(f"binding: the {' and '.join(budgets[b] for b in binding)} budget"
                     f"{'s' if len(binding) > 1 else ''} (without {'them' if len(binding) > 1 else 'it'} the "
                     "solver folds the design faster)")
    elif binding is not None:
        lines.append("binding: no budget (every stage and port is as fast as it folds, or the next faster rate "
                     "needs more of several budgets at once)")
    return "\n".join(lines) + "\n"


def report_markdown(graph: Graph, fusion: FusionPlan, plan: DataflowPlan, areas: Mapping[str, Area],
                    report: Mapping) -> str:
    """OUT/report.md: fusion groups, stages, channels, the schedules' performance and the resources."""
    return "\n".join(
        [
            f"# hlsfuse design '{plan.top}' (graph '{graph.name}')",
            "",
            summary(plan),
            resources(report),
            "## Fusion",
            "",
            "```",
            fusion_table(fusion, graph).rstrip(),
            "```",
            "",
            "## Stages",
            "",
            "```",
            stage_table(plan, areas).rstrip(),
            "```",
            "",
            "## Channels",
            "",
            "```",
            channel_table(plan).rstrip(),
            "```",
            "",
        ]
    )
