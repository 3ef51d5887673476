"""``hlsfuse explore GRAPH -o DIR``: sweep fusion, budgets, port lanes and precisions; tables, fronts, plots."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from ..boards import BOARDS, DEFAULT_CLOCK, DEFAULT_PART
from ..errors import HlsfuseError
from ..explore.points import FUSIONS, parse_budgets, sweep, targets
from ..explore.sweep import Interrupted, Settings, Sweep, explore, precision_error
from ..fileio import check_readable
from ..frontend import onnx as onnx_frontend
from .common import load_graph_arg, positive_int, seed

__all__ = ["add_parser", "run"]


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _budgets(text: str) -> list[int]:
    try:
        return parse_budgets(text)
    except HlsfuseError as exc:  # argparse names the option
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--dsp: ")) from None


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "explore",
        help="sweep the design space: budgets, fusion, port lanes, precisions; Pareto fronts and plots",
        description="Evaluate every combination of the axes below with the cost and resource models (in memory, "
        "in parallel), and write DIR: points.csv and points.json (one row per point: its settings, cycles per "
        "frame, latency, throughput, DSP, BRAM18, LUT, MAC utilization, the Pareto fronts of cycles against DSPs "
        "and against BRAM18s and LUTs), points/<id>/ (each point's report.json and fold.json, for compile --fold), the "
        "plots (PNG and SVG) and index.html. --verify K simulates the K best points of the front under Verilator, "
        "--synth K synthesizes them with Yosys. "
        "Points are written as they finish: an interrupted sweep keeps them and --resume completes it "
        "(docs/explore.md).",
    )
    parser.add_argument("graph", metavar="GRAPH", help="graph file (.json) or ONNX model (.onnx)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    axes = parser.add_argument_group("the axes of the sweep")
    axes.add_argument("--boards", type=_names, metavar="B1,B2",
                      help=f"boards, each at its part, clock and DSP/BRAM budgets (known: {', '.join(BOARDS)}; "
                      "default: all of them, unless --dsp is given)")
    axes.add_argument("--dsp", type=_budgets, metavar="SPEC",
                      help="DSP budgets on --board (or --part): N,N,...; LO:HI:STEP; LO:HI:xF (geometric)")
    axes.add_argument("--board", choices=tuple(BOARDS), help="the part, clock and BRAM18 budget of the --dsp budgets")
    axes.add_argument("--part", help=f"the part of the --dsp budgets (default: --board's, else {DEFAULT_PART})")
    axes.add_argument("--clock", type=float, metavar="NS",
                      help=f"the clock of the --dsp budgets (default: --board's, else {DEFAULT_CLOCK:g})")
    axes.add_argument("--bram", type=int, metavar="N", help="BRAM18 budget of the --dsp budgets (default: --board's)")
    axes.add_argument("--lut", type=int, metavar="N", help="LUT budget of the --dsp budgets (default: --board's)")
    axes.add_argument("--fusion", type=_names, default=list(FUSIONS), metavar="F1,F2",
                      help="fpga (fused) and/or unfused (one stage per op, the baseline); default both")
    axes.add_argument("--port-lanes", type=_names, default=["auto"], metavar="L1,L2",
                      help="elements per transfer of every port: auto (the solver's) or numbers; default auto")
    axes.add_argument("--precision", action="append", metavar="TYPE",
                      help="ONNX models: a precision to try (float32 or a fixed type); give it once per choice")
    axes.add_argument("--precision-map", action="append", metavar="FILE",
                      help="ONNX models: a JSON precision map to try; give it once per choice")
    parser.add_argument("--samples", type=positive_int, default=4, metavar="N",
                        help="ONNX models: seeded frames on which each precision is compared with float32 (default 4)")
    parser.add_argument("--verify", type=int, default=0, metavar="K",
                        help="simulate the K best points of the front (rtlsim --driver native), beside the model")
    parser.add_argument("--synth", type=int, default=0, metavar="K",
                        help="synthesize the K best points of the front with Yosys (hlsfuse synth), beside the "
                        "model's resources")
    parser.add_argument("--frames", type=positive_int, default=3, metavar="N",
                        help="frames per verified point (default 3; the rate is measured between frames)")
    parser.add_argument("--choose", metavar="ID", help="the point whose stages are plotted (default: the best)")
    parser.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, metavar="N",
                        help="processes evaluating points (default: one per core)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="run the points on this Dask distributed cluster instead (each worker needs hlsfuse, "
                        "g++ and Verilator)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the precision samples and rtlsim frames")
    parser.add_argument("--resume", action="store_true", help="continue the sweep in DIR, skipping finished points")
    parser.add_argument("--force", action="store_true", help="replace the sweep in DIR")
    return parser


def _graphs(args: argparse.Namespace) -> tuple[dict, dict, dict]:
    """The graph per precision choice, each choice's error against float32 and its flags for hlsfuse compile
    (ONNX models)."""
    is_onnx = Path(args.graph).suffix.lower() == ".onnx"
    if not is_onnx:
        if args.precision or args.precision_map:
            raise HlsfuseError(f"--precision and --precision-map apply to ONNX models (.onnx), not to {args.graph}")
        return {None: load_graph_arg(args.graph)}, {}, {}
    check_readable(args.graph)
    choices: dict[str, onnx_frontend.Precision] = {}
    flags: dict[str, list[str]] = {}
    for text in args.precision or ([] if args.precision_map else [onnx_frontend.DEFAULT_PRECISION]):
        choices[text], flags[text] = onnx_frontend.precision_of(text), ["--precision", text]
    for path in args.precision_map or []:
        check_readable(path)
        choices[path], flags[path] = onnx_frontend.load_precision_map(path), ["--precision-map", path]
    model = onnx_frontend.read_onnx(args.graph)
    float_graph = onnx_frontend.from_onnx(model, precision="float32")
    graphs = {label: onnx_frontend.from_onnx(model, precision=p) for label, p in choices.items()}
    errors = {label: precision_error(g, float_graph, args.samples, args.seed) for label, g in graphs.items()}
    return graphs, errors, flags


def run(args: argparse.Namespace) -> int:
    lanes = []
    for text in args.port_lanes:
        if text != "auto" and not (text.isdigit() and int(text) > 0):
            raise HlsfuseError(f"--port-lanes: '{text}' must be auto or a positive number")
        lanes.append(None if text == "auto" else int(text))
    for flag, value in (("--verify", args.verify), ("--synth", args.synth)):
        if value < 0:
            raise HlsfuseError(f"{flag} must be 0 or more, not {value}")
    for flag, value in (("--bram", args.bram), ("--lut", args.lut)):
        if value is not None and value < 0:
            raise HlsfuseError(f"{flag} must be 0 or more, not {value}")
    boards = args.boards if args.boards is not None else ([] if args.dsp else list(BOARDS))
    target_list = targets(boards, args.dsp or [], args.board, args.part, args.clock, args.bram, args.lut)
    if not target_list:
        raise HlsfuseError("nothing to explore: give --boards or --dsp")
    graphs, errors, flags = _graphs(args)
    points = sweep(args.fusion, target_list, lanes, list(graphs))
    used = sorted({t.board for t in target_list if t.board})
    board_rows = tuple({"name": b, "part": BOARDS[b].part, "clock_ns": BOARDS[b].clock, "dsp": BOARDS[b].dsp,
                        "bram18": BOARDS[b].bram18, "lut": BOARDS[b].lut} for b in used)
    command = shlex.join(["hlsfuse", "explore", *sys.argv[2:]]) if sys.argv[1:2] == ["explore"] else "hlsfuse explore"
    job = Sweep(args.graph, graphs, tuple(points), board_rows, errors, command, flags)
    settings = Settings(jobs=args.jobs, scheduler=args.scheduler, verify=args.verify, synth=args.synth,
                        frames=args.frames, seed=args.seed, choose=args.choose, resume=args.resume, force=args.force)
    try:
        summary = explore(job, args.output, settings)
    except Interrupted as exc:
        print(f"hlsfuse: interrupted: {exc}; the finished points are in {args.output} (--resume completes the sweep)",
              file=sys.stderr)
        return 130
    rows = summary["points"]
    ok = [r for r in rows if r["status"] == "ok"]
    print(f"{len(rows)} points ({len(ok)} fit, {len(rows) - len(ok)} do not), written to {args.output}")
    front = sorted((r for r in ok if r["rank"] is not None), key=lambda r: r["rank"])
    print(f"front of cycles against DSPs ({len(front)} points, best first by cycles x DSPs):")
    for r in front[:10]:
        measured = (f"  measured {r['measured_cycles']:.0f} ({r['measured_ratio']:.3f})"
                    if r["measured_cycles"] is not None else "")
        exact = "" if r["bit_exact"] is None else ("  bit-exact" if r["bit_exact"] else "  NOT bit-exact")
        if r["yosys_dsp"] is not None:
            exact += f"  Yosys {r['yosys_dsp']} DSP {r['yosys_bram18']} BRAM18 {r['yosys_lut']} LUT"
        print(f"  {r['rank']:>2}. {r['id']:<32} {r['cycles_per_frame']:>9} cycles  {r['dsp']:>6} DSP  "
              f"{r['bram18']:>5} BRAM18  util {r['mac_utilization'] or 0:.3f}{measured}{exact}"
              f"{'  FLAG: ' + r['flag'] if r['flag'] else ''}")
    flagged = [r for r in rows if r["flag"]]
    return 1 if flagged else 0
