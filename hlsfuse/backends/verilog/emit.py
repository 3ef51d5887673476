"""``emit_verilog``: a DataflowPlan as a self-contained Verilog reference design, as {relative path: text}.

    <top>.v          the top module: AXI4-Stream ports, one hlsf_fifo per channel, one instance per stage
    <top>_<stage>.v  one module per stage (stage_<kind>.py fills templates/verilog/stage.v.j2)
    *.mem            ROM and lookup-table contents, read with $readmemh (relative to the simulator's folder)
    hlsf_*.v         the hw/rtl modules the design instantiates
    <top>_sim.v      simulation wrapper with the counters rtlsim reports (not part of the design)
    manifest.json    what rtlsim needs: sources in order, ports, stages, channels, the plan's numbers

Paths are relative to ``OUT/verilog``. Every stage runs its schedule (``lower/schedule.py``), one
iteration per cycle, so its cycles are the ones the plan's timing replay predicts; it computes
exactly what the reference computes. Fixed-point and integer graphs only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import HlsfuseError
from ...ir import Graph
from ...lower.area import fifo_storage
from ...lower.plan import DataflowPlan, Stage
from ...outdir import Files
from ...resources import hw_dir
from ..templates import render
from . import stage_map, stage_own, stage_reduce, stage_rows, stage_window
from .decls import BankRoms, RomDecl, StageModule, StreamPort, fixed_type
from .module import ModuleBuilder
from .vlog import bits_for, index_width

__all__ = ["emit_verilog", "STAGE_BUILDERS"]

Builder = Callable[[ModuleBuilder, Stage, tuple[str, ...]], StageModule]

STAGE_BUILDERS: dict[str, Builder] = {
    "map": stage_map.build_map,
    "fork": stage_map.build_fork,
    "convert": stage_map.build_convert,
    "rows": stage_rows.build,
    "reduce": stage_reduce.build,
    "window": stage_window.build,
    "own": stage_own.build,
}
"""Stage kind -> module builder (``build(builder, stage, state) -> StageModule``)."""

_RESETS = {
    "frame": "a control register, back at its start after the frame's last iteration (and reset by ap_rst_n)",
    "first": "assigned by the first value of each output, never combined with an earlier frame's",
    "overwritten": "data, written before it is read in every frame (not reset)",
}


@dataclass(frozen=True)
class PortView:
    name: str
    tensor: str
    direction: str
    type: str
    channel: str
    width: int  # element bits
    bus: int  # TDATA bits: the token's, rounded up to whole bytes as AXI4-Stream requires
    count: int  # elements per frame
    beat_width: int
    lanes: int = 1  # elements per transfer, element 0 in the low bits

    @property
    def data(self) -> int:
        """TDATA bits that carry elements."""
        return self.lanes * self.width

    @property
    def tokens(self) -> int:
        return self.count // self.lanes


@dataclass(frozen=True)
class StageInstance:
    """What the top and the simulation wrapper read of a stage module: its name and stream ports."""

    name: str
    stage: str
    inputs: tuple[StreamPort, ...]
    outputs: tuple[StreamPort, ...]


@dataclass(frozen=True)
class ChannelView:
    name: str
    tensor: str
    producer: str
    consumer: str
    width: int
    depth: int
    count_width: int
    block: bool = False  # a block RAM (``area.fifo_storage``: "memory")


def stage_module(graph: Graph, plan: DataflowPlan, stage: Stage) -> StageModule:
    builder = STAGE_BUILDERS.get(stage.kind)
    if builder is None:
        raise HlsfuseError(f"stage '{stage.name}': the Verilog backend has no {stage.kind} stages")
    state = tuple(f"{s.name}: {_RESETS[s.reset]}" for s in stage.schedule.state)
    return builder(ModuleBuilder(graph, plan, stage, f"{plan.top}_{stage.name}"), stage, state)


def _check_fixed(graph: Graph) -> None:
    for tensor in graph.types:
        fixed_type(graph, tensor)


def emit_verilog(graph: Graph, plan: DataflowPlan) -> Files:
    """The Verilog reference design of ``plan`` as {path relative to OUT/verilog: text}; the .mem files are made as
    they are written."""
    _check_fixed(graph)
    if plan.graph != graph.name:
        raise HlsfuseError(f"dataflow plan is for graph '{plan.graph}', not '{graph.name}'")
    top = plan.top
    files = Files()
    modules, rtl, word_files = [], {"hlsf_fifo"}, []
    for s in plan.stages:  # each stage module rendered as it is built: a large stage's declarations go at once
        m = stage_module(graph, plan, s)
        files[f"{m.name}.v"] = render("verilog/stage.v.j2", m=m, top=top, graph=graph.name)
        files.add({mem.file: mem.chunks for mem in m.mems})
        rtl.update(m.rtl)
        word_files += [{"file": d.word_file, "packed": d.file, "width": d.width, "words": d.size,
                        "per_line": d.per_word} for d in m.decls if isinstance(d, RomDecl) and d.per_word > 1]
        word_files += [{"file": d.word_file("{bank}"), "packed": d.file, "width": d.width, "words": d.size,
                        "per_line": d.per_word, "banks": len(d.banks)} for d in m.decls if isinstance(d, BankRoms)]
        modules.append(StageInstance(m.name, m.stage, m.inputs, m.outputs))
    ports = []
    for p in plan.inputs + plan.outputs:
        t = graph.types[p.tensor]
        width = fixed_type(graph, p.tensor).width
        bus = -(-p.lanes * width // 8) * 8
        ports.append(PortView(p.name, p.tensor, p.direction, str(t), p.channel, width, bus, t.size,
                              bits_for(p.tokens), p.lanes))
    channels = tuple(
        ChannelView(
            c.name, c.tensor, c.producer, c.consumer, c.lanes * fixed_type(graph, c.tensor).width, c.depth,
            max(1, c.depth.bit_length()),
            fifo_storage(c.depth, c.width) == "memory",  # as the resource model counts it
        )
        for c in plan.channels
    )
    view = {
        "top": top,
        "graph": graph.name,
        "ports": tuple(ports),
        "channels": channels,
        "stages": tuple(modules),
        "stage_bits": index_width(len(modules)),
        "channel_bits": index_width(len(channels)),
    }
    files[f"{top}.v"] = render("verilog/top.v.j2", **view)
    rtl = sorted(rtl)
    for name in rtl:
        source = hw_dir() / "rtl" / f"{name}.v"
        if not source.is_file():
            raise HlsfuseError(f"hw/rtl module '{name}' is missing from {source.parent}; reinstall hlsfuse")
        files[f"{name}.v"] = source.read_text(encoding="utf-8")
    files[f"{sim_top(top)}.v"] = render("verilog/sim.v.j2", **view, sim_top=sim_top(top))
    sources = [f"{name}.v" for name in rtl] + [f"{m.name}.v" for m in modules] + [f"{top}.v"]
    files["manifest.json"] = _manifest(graph, plan, tuple(ports), channels, sources, word_files)
    return files


def sim_top(top: str) -> str:
    """The simulation wrapper's module: ``<top>_sim``, without a double underscore (a top escaped from a keyword
    ends in one), which Verilator escapes in the C++ class names the harness includes."""
    return f"{top.rstrip('_')}_sim"


def _manifest(graph, plan, ports, channels, sources, word_files) -> str:
    data = {
        "top": plan.top,
        "sim_top": sim_top(plan.top),
        "graph": graph.name,
        "sources": sources,
        "sim_sources": sources + [f"{sim_top(plan.top)}.v"],
        "ports": [
            {
                "name": p.name,
                "tensor": p.tensor,
                "direction": p.direction,
                "dtype": str(graph.types[p.tensor].dtype),
                "shape": list(graph.types[p.tensor].shape),
                "width": p.width,
                "lanes": p.lanes,
                "bus": p.bus,
            }
            for p in ports
        ],
        "stages": [
            {"name": s.name, "kind": s.kind, "cycles": s.cycles, "latency": s.latency} for s in plan.stages
        ],
        "channels": [{"name": c.name, "tensor": c.tensor, "depth": c.depth} for c in channels],
        "cycles": plan.cycles,
        "latency": plan.latency,
        "word_files": word_files,  # packed ROMs and banks one word a line, made by hlsfuse synth (RomDecl.word_file,
        # BankRoms.word_file)
    }
    return json.dumps(data, indent=2) + "\n"
