"""Text views of a DataflowPlan: the stage table ``hlsfuse compile`` prints, and report.md."""

from __future__ import annotations

from ..fusion import FusionPlan
from ..fusion.report import table as fusion_table
from ..ir import Graph
from .plan import DataflowPlan

__all__ = ["stage_table", "channel_table", "summary", "report_markdown"]


def _grid(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    cells = [header, *rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(header))]
    lines = []
    for row in cells:
        parts = [cell.rjust(widths[k]) if k in right else cell.ljust(widths[k]) for k, cell in enumerate(row)]
        lines.append("  ".join(parts).rstrip())
    return lines


def stage_table(plan: DataflowPlan) -> str:
    """Every stage with its kind, ops, channels and its schedule's numbers."""
    header = ("stage", "kind", "nodes", "in", "out", "storage", "latency", "cycles/frame", "bound")
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
    lines = _grid(header, rows, {5, 6, 7, 8})
    return "\n".join(lines) + "\n"


def channel_table(plan: DataflowPlan) -> str:
    header = ("channel", "tensor", "type", "from", "to", "depth")
    rows = [(c.name, c.tensor, str(c.type), c.producer, c.consumer, str(c.depth)) for c in plan.channels]
    return "\n".join(_grid(header, rows, {5})) + "\n"


def summary(plan: DataflowPlan) -> str:
    ports = ", ".join(f"{p.direction} {p.name}: {p.type}" for p in (*plan.inputs, *plan.outputs))
    bound = max(s.schedule.bound for s in plan.stages)
    lines = [
        f"design '{plan.top}': {len(plan.stages)} stages, {len(plan.channels)} channels, {len(plan.roms)} ROMs; "
        f"{plan.cycles} cycles per frame (slowest stage; bound {bound}), first output after {plan.latency} cycles",
        f"ports: {ports}",
    ]
    for c in plan.channels:  # paths that meet again after one of them held a whole frame or more
        if c.depth > c.type.size:
            lines.append(
                f"note: channel {c.name} needs {c.depth} elements, more than a frame of '{c.tensor}' ({c.type.size}): "
                f"the paths from {c.producer} to {c.consumer} differ by more than a frame"
            )
    return "\n".join(lines) + "\n"


def report_markdown(graph: Graph, fusion: FusionPlan, plan: DataflowPlan) -> str:
    """OUT/report.md: fusion groups, stages, channels and the schedules' performance."""
    return "\n".join(
        [
            f"# hlsfuse design '{plan.top}' (graph '{graph.name}')",
            "",
            summary(plan),
            "## Fusion",
            "",
            "```",
            fusion_table(fusion, graph).rstrip(),
            "```",
            "",
            "## Stages",
            "",
            "```",
            stage_table(plan).rstrip(),
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
