"""``emit_hls``: a DataflowPlan as a Vitis HLS project, returned as {relative path: file text}.

    <top>.cpp       stage functions, AXI4-Stream adapters, the top function under DATAFLOW
    <top>.h         the top function and its AXI4-Stream packet types
    types.h         one typedef per tensor (ap_fixed / ap_ufixed / float)
    weights.h       the plan's ROMs        luts.h   lookup tables of sigmoid/tanh/exp
    tb_<top>.cpp    testbench on data/<port>.txt     ports.json   what csim needs to know
    hls_config.cfg  Vitis unified flow     run_hls.tcl, cosim.tcl   Tcl flow     Makefile   g++ C simulation
    include/        hlsfuse's work-alike ap_fixed / hls_stream headers
    hlsfuse/        the kernel-library headers the stages use      data/   seeded inputs and golden outputs

Paths are relative to the project folder (``OUT/hls``); the caller writes them. The same graph,
plan, options and target always give byte-identical files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...boards import Target
from ...errors import HlsfuseError
from ...ir import Constant, Graph
from ...lower.area import fifo_storage
from ...lower.plan import STAGE_KINDS, DataflowPlan
from ...outdir import Files
from ...resources import hw_dir
from ..templates import render, render_later
from .context import Context, TableView, make_context, rom_lines
from .cxx import raw_lines, spell_type
from .data import data_files, data_path, random_frames
from .names import fresh
from .options import HlsOptions
from .stages import stage_view
from .toolchain import CXX_STANDARD, INCLUDE_DIR, POISON_FLAG, cxxflags

__all__ = ["emit_hls", "WORKALIKE_HEADERS"]

WORKALIKE_HEADERS = ("ap_int.h", "ap_int_wide.h", "ap_fixed.h", "hls_stream.h", "ap_axi_sdata.h")
_ROW = 8  # constants per line in weights.h and luts.h
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Typedef:
    name: str
    spelling: str
    note: str  # what the tensor is, for the comment


@dataclass(frozen=True)
class PortView:
    name: str
    tensor: str
    direction: str
    type: str  # element typedef
    token: str  # the channel's token type (``type`` for one lane)
    lanes: int  # elements per transfer, element 0 in the low bits of TDATA
    width: int  # bits per element
    data: str  # the packet's data type: the element's, or ap_uint of lanes x width bits
    packet: str  # AXI4-Stream packet typedef
    adapter: str  # function between the AXI port and the channel
    channel: str
    count: int  # elements per frame
    tokens: int  # transfers per frame
    is_float: bool
    file: str  # data file, relative to the data folder's parent
    note: str
    stream: str  # the testbench's local stream of packets
    values: str  # the testbench's local vector of the port's data


@dataclass(frozen=True)
class ChannelView:
    name: str
    type: str
    depth: int
    note: str
    srl: bool  # bound to a shift register (lower.area.fifo_storage), not left to the tool's default


@dataclass(frozen=True)
class ArrayView:
    """A lookup table of luts.h: its entries' raw integers, in ``storage``, read back as ``type``."""

    name: str
    type: str
    storage: str
    size: int
    rows: tuple[str, ...]  # the raw integers, a line of comma-separated values each
    note: str
    replicated: bool = False  # a lookup table some stage keeps copies of (luts.h lists it as HLSFUSE_LUT_<name>)


@dataclass(frozen=True)
class RomView:
    """A constant's values in weights.h (HLSFUSE_ROM_<name>), for the stages that declare ROMs of it."""

    name: str
    constant: Constant
    note: str

    @property
    def body(self) -> str:
        """The values, row-major, a line of comma-separated values each, the lines continued with ``\\``: made when
        weights.h is written, and not kept."""
        return ", \\\n    ".join(rom_lines(self.constant))


def _typedefs(ctx: Context) -> tuple[Typedef, ...]:
    g = ctx.graph
    kinds = [(i.name, "input") for i in g.inputs] + [(c.name, "constant") for c in g.constants]
    kinds += [(n.name, f"node ({n.op})") for n in g.nodes]
    return tuple(Typedef(ctx.ctype(t), spell_type(ctx.dtype(t)), f"{kind} '{t}' {g.types[t]}") for t, kind in kinds)


# main()'s own locals in tb_<top>.cpp; it names the generated globals with ``::`` and its helpers with hlsfuse_tb::
_TB_LOCALS = frozenset(
    ["argc", "argv", "data", "frames", "compared", "frame", "k", "packet", "index", "got", "last", "hlsfuse_tb"]
)


def _ports(ctx: Context) -> tuple[PortView, ...]:
    views = []
    tb_taken = set(_TB_LOCALS)
    for p in ctx.plan.inputs + ctx.plan.outputs:
        stream = fresh(p.name, tb_taken)
        values = fresh(f"{p.name}_data", tb_taken | {stream})
        tb_taken |= {stream, values}
        dtype = ctx.dtype(p.tensor)
        views.append(
            PortView(
                name=p.name,
                tensor=p.tensor,
                direction=p.direction,
                type=ctx.ctype(p.tensor),
                token=ctx.token(p.channel),
                lanes=p.lanes,
                width=dtype.bits,
                data=ctx.ctype(p.tensor) if p.lanes == 1 else f"ap_uint<{p.lanes * dtype.bits}>",
                packet=ctx.names.packets[p.name],
                adapter=ctx.names.adapters[p.name],
                channel=p.channel,
                count=ctx.type_of(p.tensor).size,
                tokens=p.tokens,
                is_float=dtype.is_float,
                file=data_path(p),
                note=f"{p.direction}put '{p.tensor}' {ctx.type_of(p.tensor)}",
                stream=stream,
                values=values,
            )
        )
    return tuple(views)


def _roms(ctx: Context) -> tuple[RomView, ...]:
    views = []
    for rom in ctx.plan.roms:
        const = ctx.graph.constant_map[rom.constant]
        kind = "raw integers" if ctx.rom_storage[rom.constant] else "values"
        views.append(RomView(rom.name, const, f"constant '{const.name}' {const.type}: {kind}"))
    return tuple(views)


def _luts(ctx: Context, replicated: set[str]) -> tuple[ArrayView, ...]:
    every = [t for views in ctx.tables.values() for t in views]
    unique: dict[str, TableView] = {t.name: t for t in every}
    return tuple(
        ArrayView(t.name, t.type, t.storage, len(t.raw), raw_lines(t.raw, per_line=_ROW), t.note,
                  replicated=t.name in replicated)
        for t in unique.values()
    )


def _kernel_headers(paths: set[str]) -> dict[str, str]:
    """The kernel-library headers ``paths`` (relative to hw/hls/) and every header they include from it."""
    root = hw_dir() / "hls"
    files: dict[str, str] = {}
    todo = sorted(paths)
    while todo:
        path = todo.pop()
        if path in files:
            continue
        source = root / path
        if not source.is_file():
            raise HlsfuseError(f"kernel-library header '{path}' is missing from {root}; reinstall hlsfuse")
        files[path] = source.read_text(encoding="utf-8")
        for included in _INCLUDE.findall(files[path]):
            nested = str(Path(path).parent / included)
            if (root / nested).is_file():
                todo.append(nested)
            elif (root / included).is_file():
                todo.append(included)
    return dict(sorted(files.items()))


def _manifest(ctx: Context, ports: tuple[PortView, ...]) -> str:
    """ports.json: the ports in graph order, with the data files and tolerances csim uses."""
    data = {
        "top": ctx.plan.top,
        "graph": ctx.graph.name,
        "ports": [
            {
                "name": p.name,
                "tensor": p.tensor,
                "direction": p.direction,
                "file": p.file,
                "dtype": str(ctx.dtype(p.tensor)),
                "shape": list(ctx.type_of(p.tensor).shape),
            }
            for p in ports
        ],
        "seed": ctx.options.seed,
        "frames": ctx.options.frames,
        "float_rtol": ctx.options.float_rtol,
        "float_atol": ctx.options.float_atol,
    }
    return json.dumps(data, indent=2) + "\n"


def emit_hls(graph: Graph, plan: DataflowPlan, options: HlsOptions | None = None,
             target: Target | None = None) -> Files:
    """The Vitis HLS project of ``plan`` as {path relative to OUT/hls: text} for ``target``'s part and clock (default:
    the fallback ``Target()``); weights.h is made as it is written."""
    options = options if options is not None else HlsOptions()
    target = target if target is not None else Target()
    ctx = make_context(graph, plan, options)
    for stage in plan.stages:
        if stage.kind not in STAGE_KINDS:
            raise HlsfuseError(f"stage '{stage.name}': unknown stage kind '{stage.kind}'")
    stages = tuple(stage_view(ctx, s) for s in plan.stages)
    ports = _ports(ctx)
    ctx.names.new_function()  # the port adapters' locals
    top = plan.top
    headers = {"hlsfuse/numeric.h"} | {h for s in stages for h in s.headers}  # types.h includes numeric.h
    view = {
        "top": top,
        "graph": graph.name,
        "plan": plan,
        "options": options,
        "target": target,
        "stages": stages,
        "inputs": tuple(p for p in ports if p.direction == "in"),
        "outputs": tuple(p for p in ports if p.direction == "out"),
        "channels": tuple(
            ChannelView(c.name, ctx.token(c.name), c.depth, f"'{c.tensor}': {c.producer} -> {c.consumer}"
                        + (f", {c.lanes} lanes" if c.lanes > 1 else ""), fifo_storage(c.depth, c.width) == "srl")
            for c in plan.channels
        ),
        "typedefs": _typedefs(ctx),
        "roms": _roms(ctx),
        "luts": _luts(ctx, {c.table for s in stages for c in s.copies}),
        "kernel_headers": tuple(sorted(headers - {"hlsfuse/numeric.h"})),
        "uses_math": any(s.uses_math for s in stages),
        "workalike_flags": " ".join(cxxflags()),
        "amd_flags": " ".join(cxxflags("$(HLS_INCLUDE)")),
        "poison_flag": POISON_FLAG,
        "include_dir": INCLUDE_DIR,
        "std": CXX_STANDARD,
        "guard": top.upper(),
        "index": ctx.names.local("i"),
        "packet": ctx.names.local("packet"),
        "token": ctx.names.local("token"),
        "lane": ctx.names.local("l"),
    }
    files = Files({
        f"{top}.cpp": render("hls/top.cpp.j2", **view),
        f"{top}.h": render("hls/top.h.j2", **view),
        "types.h": render("hls/types.h.j2", **view),
        "weights.h": render_later("hls/weights.h.j2", **view),
        "luts.h": render("hls/luts.h.j2", **view),
        f"tb_{top}.cpp": render("hls/tb.cpp.j2", **view),
        "hls_config.cfg": render("hls/hls_config.cfg.j2", **view),
        "run_hls.tcl": render("hls/run_hls.tcl.j2", **view),
        "cosim.tcl": render("hls/cosim.tcl.j2", **view),
        "Makefile": render("hls/Makefile.j2", **view),
        "ports.json": _manifest(ctx, ports),
    })
    include = hw_dir() / "hls" / "include"
    for name in WORKALIKE_HEADERS:
        files[f"{INCLUDE_DIR}/{name}"] = (include / name).read_text(encoding="utf-8")
    files.add(_kernel_headers(headers))
    files.add(data_files(graph, plan.inputs + plan.outputs, random_frames(graph, options.seed, options.frames)))
    return files
