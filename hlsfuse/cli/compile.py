"""``hlsfuse compile GRAPH -o OUT``: fuse, lower and emit a design, and print its stage table."""

from __future__ import annotations

import argparse
import json

from ..backends.hls import HlsOptions
from ..backends.hls.options import CONTROLS
from ..boards import BOARDS, DEFAULT_CLOCK, DEFAULT_PART, overfull, target_of
from ..compile import TARGETS, CompileOptions, compile
from ..errors import HlsfuseError
from ..fusion import MODES
from ..lower.fold import read_fold
from ..lower.report import channel_table, resources, stage_table, summary
from ..outdir import check_out_dir
from ..progress import activity
from .common import (
    add_graph_arg,
    add_overflow_arg,
    add_weights_args,
    check_memory,
    check_overflow,
    load_graph_arg,
    say,
    seed,
    warn,
    weights_file_arg,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compile",
        help="generate the streaming design of a graph",
        description="Fuse the graph, lower it to a dataflow design (stages, FIFOs, ROMs) and write OUT: graph.json "
        "(and graph.npz, its constants' values, for a large graph), fusion.json, fusion.dot, report.md, and hls/ "
        "(a Vitis HLS project with a testbench and a g++ Makefile; "
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
    parser.add_argument("--part", help=f"FPGA part (default: the board's, else {DEFAULT_PART})")
    parser.add_argument("--clock", type=float, metavar="NS",
                        help=f"clock period in ns (default: the board's, else {DEFAULT_CLOCK:g})")
    fold = parser.add_argument_group(
        "folding", "how many products per cycle each conv2d, dense and matmul computes and how many elements "
        "each map stage and port moves per cycle (docs/folding.md); without any of these every output is "
        "computed in one cycle, one element per transfer")
    fold.add_argument("--board", choices=tuple(BOARDS),
                      help="set the part, clock and DSP/BRAM18/LUT budgets from a board; the solver picks the "
                      "fastest folding that fits (a design over the board's resources is refused: --allow-overfull)")
    fold.add_argument("--dsp", type=int, metavar="N", help="DSP budget (overrides the board's)")
    fold.add_argument("--bram", type=int, metavar="N", help="BRAM18 budget (overrides the board's)")
    fold.add_argument("--lut", type=int, metavar="N", help="LUT budget (overrides the board's)")
    fold.add_argument("--target-cycles", type=int, metavar="N",
                      help="cycles per frame to meet with the fewest DSPs (within any budget)")
    fold.add_argument("--fold", metavar="FOLD.json",
                      help="the folding to use, as OUT/fold.json writes it (node or stage name -> simd or lanes, "
                      "port -> lanes); budgets are then checked, not solved")
    fold.add_argument("--allow-overfull", action="store_true",
                      help="write the design even when the resource model puts it over the board's (or --dsp, "
                      "--bram, --lut) DSPs, BRAM18s, LUTs or FFs, with a warning; without it such a design is an error "
                      "naming each resource exceeded and by how much")
    fold.add_argument("--port-lanes", type=int, metavar="N",
                      help="elements per AXI4-Stream transfer of every graph input and output (element 0 in the "
                      "low bits of TDATA); N must divide each port tensor's innermost dimension")
    parser.add_argument("--control", choices=CONTROLS, default="none", help="block-level control (default none)")
    parser.add_argument("--mode", choices=tuple(MODES), default="fpga", help="fusion rules (default fpga)")
    parser.add_argument("--opt-level", type=int, choices=(0, 1, 2), default=2,
                        help="0 puts every op in a stage of its own, the unfused baseline (default 2)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the testbench's random inputs (default 0)")
    add_weights_args(parser, "OUT/graph.npz beside OUT/graph.json")
    add_overflow_arg(parser, "a node's type can overflow (range analysis)")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists and is not empty")
    return parser


def run(args: argparse.Namespace) -> int:
    check_out_dir(args.output, args.force)  # refuse before any work
    for flag, value in (("--dsp", args.dsp), ("--bram", args.bram), ("--lut", args.lut),
                        ("--target-cycles", args.target_cycles)):
        if value is not None and value < (1 if flag == "--target-cycles" else 0):
            raise HlsfuseError(f"{flag} must be a {'positive' if flag == '--target-cycles' else 'non-negative'} "
                               f"integer, not {value}")
    device = target_of(args.board, args.part, args.clock, args.dsp, args.bram, args.lut)
    fold = read_fold(args.fold) if args.fold else None
    graph = load_graph_arg(args.graph, args)
    check_memory(graph, "compile")  # refused before the lowering allocates
    notes = check_overflow(graph, args)  # before the design is held in memory too
    hls = HlsOptions(control=args.control, seed=args.seed)
    options = CompileOptions(target=args.target, top=args.top, mode=args.mode, opt_level=args.opt_level,
                             device=device, target_cycles=args.target_cycles, hls=hls, fold=fold,
                             port_lanes=args.port_lanes, weights_file=weights_file_arg(args),
                             allow_overfull=args.allow_overfull)
    with activity("compile: fusing and folding") as line:  # a large model takes seconds
        design = compile(graph, options, step=lambda step: line.say(f"compile: {step}"))
        line.say(f"compile: writing {args.output}")
        design.write(args.output, force=args.force)
    print(summary(design.plan), end="")
    print(resources(json.loads(design.files["report.json"])), end="")
    print()
    print(stage_table(design.plan, design.areas), end="")
    print()
    print(channel_table(design.plan), end="")
    print(f"\nwrote {len(design.files) + 1} files to {args.output}")  # and checksums.json
    say(notes)
    over = overfull(device, design.area.dsp, design.area.bram18, design.area.lut, design.area.ff)
    if over is not None:  # written because --allow-overfull asked for it
        warn(f"{over} (--allow-overfull)")
    return 0
