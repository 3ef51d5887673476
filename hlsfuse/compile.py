"""``compile``: a graph to a complete output folder, one arrow per step.

    graph --fuse--> FusionPlan --lower--> DataflowPlan --emit_hls--> {path: text}

The files (DESIGN.md section 6):

    graph.json  fusion.json  fusion.dot  report.md     the graph, its fusion plan and the design's numbers
    hls/        the Vitis HLS project (emit_hls)                        targets hls, all
    verilog/    the Verilog reference design (emit_verilog)             targets verilog, all

``write_tree`` (hlsfuse.outdir) puts them on disk all at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .backends.hls import HlsOptions, emit_hls
from .backends.verilog import emit_verilog
from .errors import HlsfuseError
from .fusion import FusionPlan, fuse
from .fusion.report import to_dot, to_json
from .graph_json import graph_to_dict
from .ir import Graph
from .lower import DataflowPlan, LowerOptions, lower
from .lower.report import report_markdown

__all__ = ["TARGETS", "CompileOptions", "Design", "compile"]

TARGETS = ("hls", "verilog", "all")


@dataclass(frozen=True)
class CompileOptions:
    """``target``: which hardware to emit; ``top``: name of the top function (default: the graph's);
    ``mode``/``max_fuse_depth``: fusion settings; ``hls``: the HLS project's options."""

    target: str = "hls"
    top: str | None = None
    mode: str = "fpga"
    max_fuse_depth: int = 256
    hls: HlsOptions = field(default_factory=HlsOptions)

    def __post_init__(self):
        if self.target not in TARGETS:
            raise HlsfuseError(f"option 'target' must be one of {', '.join(TARGETS)}, not {self.target!r}")


@dataclass(frozen=True)
class Design:
    graph: Graph
    fusion: FusionPlan
    plan: DataflowPlan
    files: dict[str, str]


def compile(graph: Graph, options: CompileOptions | None = None) -> Design:  # noqa: A001 - the pipeline's verb
    """Fuse, lower and emit ``graph``; returns the plans and the output files (nothing is written)."""
    options = options or CompileOptions()
    fusion = fuse(graph, mode=options.mode, max_fuse_depth=options.max_fuse_depth)
    plan = lower(graph, fusion, LowerOptions(top=options.top))
    files = {
        "graph.json": json.dumps(graph_to_dict(graph), indent=1) + "\n",
        "fusion.json": json.dumps(to_json(fusion, graph), indent=2) + "\n",
        "fusion.dot": to_dot(fusion, graph),
        "report.md": report_markdown(graph, fusion, plan),
    }
    if options.target in ("hls", "all"):
        files.update({f"hls/{path}": text for path, text in emit_hls(graph, plan, options.hls).items()})
    if options.target in ("verilog", "all"):
        files.update({f"verilog/{path}": text for path, text in emit_verilog(graph, plan).items()})
    return Design(graph, fusion, plan, files)
