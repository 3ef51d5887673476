"""``hlsfuse rtlsim OUT``: simulate the generated Verilog under Verilator, compare with the reference, count cycles."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import HlsfuseError
from ..frontend import onnx as onnx_frontend
from ..graph_json import load_graph
from ..sim.rtlsim import DRIVERS, rtlsim, verilog_dir
from .common import positive_int, read_frames, seed

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "rtlsim",
        help="simulate the compiled Verilog design under Verilator against the reference",
        description="Build OUT/verilog with Verilator (cached by content), stream FRAMES frames through it with "
        "every output always ready, and compare every output element with the reference interpreter bit for bit. "
        "Prints PASS or FAIL, the cycle report (total cycles, steady-state cycles per frame against the plan's "
        "predicted figure, first-output latency, throughput, busy/stall cycles per stage), or DEADLOCK naming the "
        "stalled stages and full channels. Exits 0 only on PASS.",
    )
    parser.add_argument("out", metavar="OUT", help="folder written by hlsfuse compile --target verilog (or all)")
    parser.add_argument("--inputs", metavar="IN.npz", help="real-valued inputs (default: seeded random frames)")
    parser.add_argument(
        "--onnx-layout", action="store_true", help="the arrays of --inputs are in the ONNX model's layout (NCHW)"
    )
    parser.add_argument("--frames", type=positive_int, metavar="N",
                        help="frames to stream (default 1; with --inputs holding a batch of K samples, K)")
    parser.add_argument(
        "--driver", choices=DRIVERS, default="pyverilator", help="simulation driver (default pyverilator)"
    )
    parser.add_argument("--vcd", metavar="FILE", help="write a waveform of the whole run")
    parser.add_argument("--timeout-cycles", type=positive_int, metavar="N", help="give up after N cycles")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the random input frames (default 0)")
    parser.add_argument("--allow-edits", action="store_true",
                        help="simulate the files as they are, even if they changed since hlsfuse compile wrote them "
                        "(OUT/checksums.json)")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.vcd is not None and Path(args.vcd).exists():
        raise HlsfuseError(f"{args.vcd}: already exists; remove it or name another --vcd file")
    if args.vcd is not None and not Path(args.vcd).parent.is_dir():
        raise HlsfuseError(f"{args.vcd}: folder '{Path(args.vcd).parent}' does not exist (--vcd)")
    out, _ = verilog_dir(args.out)
    graph = load_graph(out / "graph.json")
    inputs = None
    if args.inputs is not None:
        layout = (lambda arrays: onnx_frontend.to_graph_layout(graph, arrays)) if args.onnx_layout else None
        inputs = read_frames(args.inputs, graph, layout)  # a batch of [K, ...]: K frames
    result = rtlsim(
        args.out, inputs=inputs,
        frames=args.frames or (len(inputs) if inputs is not None else 1), driver=args.driver, vcd=args.vcd,
        timeout_cycles=args.timeout_cycles, graph=graph, seed=args.seed, allow_edits=args.allow_edits,
    )
    print(result.report(), end="")
    return 0 if result.passed else 1
