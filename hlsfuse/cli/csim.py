"""``hlsfuse csim OUT``: build the generated HLS project with g++, run it, compare with the reference."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import HlsfuseError
from ..frontend import onnx as onnx_frontend
from ..graph_json import load_graph
from ..sim import csim
from ..sim.csim import project_dirs
from .common import positive_int, read_frames

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "csim",
        help="C-simulate a compiled design against the reference",
        description="Build OUT/hls with g++ (-std=c++14 -O2 -Wall -Wextra -Werror), run its testbench and compare "
        "every output element with the reference interpreter: exactly for fixed-point types, within a tolerance "
        "for float32. Prints PASS or FAIL with the first mismatches; exits 0 only on PASS.",
    )
    parser.add_argument("out", metavar="OUT", help="folder written by hlsfuse compile")
    parser.add_argument("--inputs", metavar="IN.npz", help="real-valued inputs (default: the project's data/)")
    parser.add_argument(
        "--onnx-layout", action="store_true", help="the arrays of --inputs are in the ONNX model's layout (NCHW)"
    )
    parser.add_argument(
        "--frames", type=positive_int, metavar="N",
        help="frames to run back to back (default: the 2 seeded frames of data/; with --inputs, the given "
        "frames, repeated to at least 2); several frames show state one frame leaves to the next",
    )
    parser.add_argument(
        "--hls-include", metavar="DIR", help="build against these ap_fixed/hls_stream headers (AMD's; default: "
        "$XILINX_HLS/include if set, else hlsfuse's work-alikes)"
    )
    parser.add_argument("--allow-edits", action="store_true",
                        help="simulate the files as they are, even if they changed since hlsfuse compile wrote them "
                        "(OUT/checksums.json)")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.hls_include is not None and not (Path(args.hls_include) / "ap_fixed.h").is_file():
        raise HlsfuseError(f"{args.hls_include}: no ap_fixed.h in this folder (--hls-include)")
    inputs = graph = None
    if args.inputs is not None:
        out, _ = project_dirs(args.out)
        graph = load_graph(out / "graph.json")
        layout = (lambda arrays: onnx_frontend.to_graph_layout(graph, arrays)) if args.onnx_layout else None
        inputs = read_frames(args.inputs, graph, layout)  # a batch of [K, ...]: K frames
    result = csim(args.out, inputs=inputs, hls_include=args.hls_include, graph=graph, frames=args.frames,
                  allow_edits=args.allow_edits)
    print(result.report(), end="" if result.report().endswith("\n") else "\n")
    return 0 if result.passed else 1
