"""``compile``: a graph to a complete output folder, one arrow per step.

    graph --fuse--> FusionPlan --lower--> DataflowPlan --emit_hls--> Files {path: text, bytes or producer}

The files (DESIGN.md section 6):

    graph.json  fusion.json  fusion.dot  report.md     the graph, its fusion plan and the design's numbers
    graph.npz                                         the constants' values, for a large graph (a side file)
    report.json  fold.json                            the numbers for programs; the folding (--fold reads it)
    checksums.json                                    SHA-256 of every file, checked by csim and rtlsim
    hls/        the Vitis HLS project (emit_hls)                        targets hls, all
    verilog/    the Verilog reference design (emit_verilog)             targets verilog, all

``write_tree`` (hlsfuse.outdir) puts them on disk all at once, and checksums.json with them. The large
files (weights.h, the ROMs' .mem files) are producers: made as they are written, one at a time.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .backends.hls import HlsOptions, emit_hls
from .backends.verilog import emit_verilog
from .boards import Target, overfull
from .errors import HlsfuseError
from .fusion import FusionPlan, fuse
from .fusion.report import to_dot, to_json
from .graph_json import graph_text, graph_to_dict
from .ir import Graph
from .lower import DataflowPlan, Folding, LowerOptions, lower
from .lower.area import Area, design_area
from .lower.fold import Budget, Space, binding, fit, fold_json, space, within
from .lower.products import product_kind
from .lower.report import mac_rates, report_markdown
from .outdir import Files, write_tree
from .side_file import side_file_bytes, wants_side_file

__all__ = ["TARGETS", "CompileOptions", "Design", "Planned", "compile", "plan_design", "solver_space"]

TARGETS = ("hls", "verilog", "all")


@dataclass(frozen=True)
class CompileOptions:
    """``target``: which hardware to emit; ``top``: name of the top function (default: the graph's);
    ``mode``/``max_fuse_depth``/``opt_level``: fusion settings (``opt_level`` 0: one stage per op, the unfused
    baseline); ``device``: what the design is built for (``boards.Target``: its part, clock and DSP slice, and
    the DSP and BRAM18 budgets the solver fits the folding within); ``target_cycles``: the cycles per frame the
    solver meets with the fewest DSPs; ``hls``: how the HLS project is spelled; ``weights_file``: keep
    OUT/graph.json's constant values in OUT/graph.npz (True), inline (False), or by the graph's size (None,
    ``side_file.wants_side_file``); ``allow_overfull``: emit a design the resource model puts over the device's
    DSPs, BRAM18s, LUTs or FFs (the fastest one when no folding fits) instead of refusing it."""

    target: str = "hls"
    top: str | None = None
    mode: str = "fpga"
    max_fuse_depth: int = 256
    opt_level: int = 2
    device: Target = field(default_factory=Target)
    target_cycles: int | None = None
    hls: HlsOptions = field(default_factory=HlsOptions)
    fold: Folding | None = None  # the folding to use (checked against the budget); None: the solver's, or none
    port_lanes: int | None = None  # elements per transfer of every port (over the folding's)
    weights_file: bool | None = None
    allow_overfull: bool = False  # emit a design over the device's resources (else refused: ``boards.overfull``)

    def __post_init__(self):
        if self.target not in TARGETS:
            raise HlsfuseError(f"option 'target' must be one of {', '.join(TARGETS)}, not {self.target!r}")
        Budget(cycles=self.target_cycles)  # its check of target_cycles, at construction

    @property
    def budget(self) -> Budget:
        """The solver's limits: the device's DSP, BRAM18 and LUT budgets and ``target_cycles``."""
        return Budget(dsp=self.device.dsp, bram18=self.device.bram18, cycles=self.target_cycles, lut=self.device.lut)


@dataclass(frozen=True)
class Planned:
    """A design as numbers, before any file: the plans, the resource model's figures and report.json."""

    graph: Graph
    fusion: FusionPlan
    plan: DataflowPlan
    areas: dict[str, Area]  # per stage (the resource model, hlsfuse.lower.area)
    fifos: Area
    area: Area  # the whole design
    report: dict  # OUT/report.json


@dataclass(frozen=True)
class Design(Planned):
    files: Files = field(default_factory=Files)  # bytes: graph.npz; without checksums.json (write adds it)

    def write(self, out: str | os.PathLike, force: bool = False) -> Path:
        """Write the design as the folder ``out`` (see hlsfuse.outdir), with the checksums.json that the
        simulators check the files against; ``force``: replace an existing ``out``."""
        return write_tree(out, self.files, force=force, checksums=True)


def _fuse(graph: Graph, options: CompileOptions) -> FusionPlan:
    return fuse(graph, mode=options.mode, max_fuse_depth=options.max_fuse_depth, opt_level=options.opt_level)


def _lower_options(options: CompileOptions) -> LowerOptions:
    fold = options.fold or Folding()
    if options.port_lanes is not None:
        fold = dataclasses.replace(fold, port_lanes=options.port_lanes, ports=())
    return LowerOptions(top=options.top, fold=fold, dsp=options.device.dsp_slice)


def solver_space(graph: Graph, options: CompileOptions) -> Space:
    """The folding solver's choices for ``graph`` under ``options`` (its fusion, part and port lanes), whatever
    the budget: ``plan_design`` takes it to fit many budgets without computing them again."""
    fusion = _fuse(graph, options)
    return space(graph, fusion, _lower_options(options), options.device.dsp_slice,
                 free_ports=options.port_lanes is None)


def plan_design(graph: Graph, options: CompileOptions | None = None, solver: Space | None = None) -> Planned:
    """Fuse and lower ``graph`` (folded by ``options.fold``, or by the solver within ``options.budget``) and
    count its cycles and resources; nothing is emitted. ``solver``: ``solver_space(graph, options)``, if the
    caller has it."""
    options = options or CompileOptions()
    budget = options.budget
    binds = None  # not solved
    if budget.empty or options.fold is not None:  # a folding given is checked against the budget, not solved
        fusion = _fuse(graph, options)
        plan = lower(graph, fusion, _lower_options(options))
    else:
        solver = solver or solver_space(graph, options)
        fusion, plan = solver.fusion, fit(solver, budget)
        binds = None if budget.cycles is not None else binding(solver, budget, plan)
    areas, fifos, area = design_area(graph, plan, options.device.dsp_slice)
    within(budget, plan, areas, area, "the folding given")
    report = report_json(graph, plan, areas, fifos, area, options, binds)
    return Planned(graph, fusion, plan, areas, fifos, area, report)


def compile(graph: Graph, options: CompileOptions | None = None,  # noqa: A001 - the pipeline's verb
            step: Callable[[str], None] | None = None) -> Design:
    """Fuse, lower and emit ``graph``; returns the plans and the output files (nothing is written). ``step``
    is told each step as it starts (a command's progress line)."""
    options = options or CompileOptions()
    step = step or (lambda _: None)
    step("fusing and folding")
    try:
        p = plan_design(graph, options)
    except HlsfuseError:
        if not options.allow_overfull or options.budget.empty or options.fold is not None:
            raise
        # the unconstrained design asked for: no folding fits, so the fastest one, over the device
        unbounded = dataclasses.replace(options.device, dsp=None, bram18=None, lut=None, ff=None)
        p = plan_design(graph, dataclasses.replace(options, device=unbounded))
    over = overfull(options.device, p.area.dsp, p.area.bram18, p.area.lut, p.area.ff)
    if over is not None and not options.allow_overfull:
        raise HlsfuseError(f"{over}; --allow-overfull writes it anyway")
    step("writing the reports")
    files = Files({
        **_graph_files(graph, options.weights_file),
        "fusion.json": json.dumps(to_json(p.fusion, graph), indent=2) + "\n",
        "fusion.dot": to_dot(p.fusion, graph),
        "report.md": report_markdown(graph, p.fusion, p.plan, p.areas, p.report),
        "report.json": json.dumps(p.report, indent=1) + "\n",
        "fold.json": json.dumps(fold_json(graph, p.plan), indent=1) + "\n",
    })
    if options.target in ("hls", "all"):
        step("emitting the HLS C++")
        files.add(emit_hls(graph, p.plan, options.hls, options.device), "hls/")
    if options.target in ("verilog", "all"):
        step("emitting the Verilog")
        files.add(emit_verilog(graph, p.plan), "verilog/")
    return Design(**{f.name: getattr(p, f.name) for f in dataclasses.fields(Planned)}, files=files)


def _graph_files(graph: Graph, weights_file: bool | None) -> dict[str, str | bytes]:
    """OUT/graph.json, and OUT/graph.npz when the constants' values go to a side file."""
    if not wants_side_file(graph, weights_file):
        return {"graph.json": graph_text(graph_to_dict(graph))}
    return {"graph.json": graph_text(graph_to_dict(graph, "graph.npz")),
            "graph.npz": side_file_bytes(graph)}


def report_json(graph: Graph, plan: DataflowPlan, areas: dict[str, Area], fifos: Area, area: Area,
                options: CompileOptions, binds: tuple[str, ...] | None = None) -> dict:
    """OUT/report.json: the design's cycles and resources, in total and per stage (docs/folding.md); ``binds``:
    the budgets that hold the solver's folding at its rate (``fold.binding``; None: not solved)."""
    macs = sum(s.schedule.macs for s in plan.stages)
    budget, device = options.budget, options.device
    stages = []
    for s in plan.stages:
        a = areas[s.name]
        per_dsp, per_klut = mac_rates(s.schedule.macs, a.dsp, a.lut, plan.cycles)
        stages.append({
            "name": s.name, "kind": s.kind, "nodes": list(s.nodes), "cycles_per_frame": s.cycles,
            "latency": s.latency, "bound_cycles": s.schedule.bound, "macs_per_frame": s.schedule.macs,
            "macs_per_dsp_cycle": per_dsp, "macs_per_klut_cycle": per_klut,
            **s.schedule.factors.to_json(), "products": product_kind(graph, s), **a.to_json(),
        })
    per_dsp, per_klut = mac_rates(macs, area.dsp, area.lut, plan.cycles)
    return {
        "graph": graph.name,
        "top": plan.top,
        "board": device.board,
        "part": device.part,
        "dsp_slice": device.dsp_slice.name,
        "clock_ns": device.clock,
        "budget": {"dsp": budget.dsp, "bram18": budget.bram18, "lut": budget.lut, "cycles_per_frame": budget.cycles},
        "binding": None if binds is None else list(binds),
        "cycles_per_frame": plan.cycles,
        "latency": plan.latency,
        "bound_cycles": max(s.schedule.bound for s in plan.stages),
        "frames_per_second": round(1e9 / (device.clock * plan.cycles), 3),
        "macs_per_frame": macs,
        "mac_utilization": round(macs / (area.multipliers * plan.cycles), 4) if area.multipliers else None,
        "macs_per_dsp_cycle": per_dsp,
        "macs_per_klut_cycle": per_klut,
        "total": {"cycles_per_frame": plan.cycles, "latency": plan.latency, **area.to_json()},
        "fifos": fifos.to_json(),
        "channels": len(plan.channels),
        "fifo_bits": sum(c.depth * c.width for c in plan.channels),
        "stages": stages,
    }
