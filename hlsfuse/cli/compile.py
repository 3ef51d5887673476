"""``hlsfuse compile GRAPH -o OUT``: fuse, lower and emit a design, and print its stage table."""

from __future__ import annotations

import argparse

from ..backends.hls import HlsOptions
from ..backends.hls.options import CONTROLS, DEFAULT_PART
from ..compile import TARGETS, CompileOptions, compile
from ..fusion import MODES
from ..lower.report import channel_table, stage_table, summary
from ..outdir import check_out_dir, write_tree
from .common import add_graph_arg, load_graph_arg

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compile",
        help="generate the streaming design of a graph",
        description="Fuse the graph, lower it to a dataflow design (stages, FIFOs, ROMs) and write OUT: graph.json, "
        "fusion.json, fusion.dot, report.md, and hls/ (a Vitis HLS project with a testbench and a g++ Makefile; "
        "--target hls or all) and verilog/ (the Verilog reference design for hlsfuse rtlsim; --target verilog or all). "
        "Prints the stage table. OUT must not exist or be empty, unless --force replaces it.",
    )
    add_graph_arg(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="output folder")
    parser.add_argument(
        "--target", choices=TARGETS, default="hls",
        help="hls: the Vitis HLS project; verilog: the Verilog design; all: both (default hls)",
    )
    parser.add_argument("--top", metavar="NAME", help="name of the top function (default: the graph's name)")
    parser.add_argument("--part", default=DEFAULT_PART, help=f"FPGA part (default {DEFAULT_PART})")
    parser.add_argument("--clock", type=float, default=5.0, metavar="NS", help="clock period in ns (default 5)")
    parser.add_argument("--control", choices=CONTROLS, default="none", help="block-level control (default none)")
    parser.add_argument("--mode", choices=tuple(MODES), default="fpga", help="fusion rules (default fpga)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the testbench's random inputs (default 0)")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists and is not empty")
    return parser


def run(args: argparse.Namespace) -> int:
    check_out_dir(args.output, args.force)  # refuse before any work
    graph = load_graph_arg(args.graph, args)
    hls = HlsOptions(part=args.part, clock=args.clock, control=args.control, seed=args.seed)
    design = compile(graph, CompileOptions(target=args.target, top=args.top, mode=args.mode, hls=hls))
    write_tree(args.output, design.files, force=args.force)
    print(summary(design.plan), end="")
    print()
    print(stage_table(design.plan), end="")
    print()
    print(channel_table(design.plan), end="")
    print(f"\nwrote {len(design.files)} files to {args.output}")
    return 0
