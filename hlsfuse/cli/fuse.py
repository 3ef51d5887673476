"""``hlsfuse fuse GRAPH``: partition a graph into fused groups and report them."""

from __future__ import annotations

import argparse

from .. import collector
from ..fileio import write_atomic
from ..fusion import MODES, fuse
from ..fusion.report import json_text, table, to_dot
from .common import add_graph_arg, load_graph_arg, output_arg

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fuse",
        help="partition a graph into fused groups",
        description="Fuse ops with TVM's post-dominator algorithm and print the groups: their ops, pattern, anchor, "
        "inputs, outputs and why each group ends, then what stays on chip. In fpga mode (the default) ops that "
        "cannot stream (buffered or opaque) stay alone; tvm mode applies TVM's rules unchanged.",
    )
    add_graph_arg(parser)
    parser.add_argument("--mode", choices=tuple(MODES), default="fpga", help="fusion rules (default fpga)")
    parser.add_argument(
        "--max-depth", type=int, default=256, metavar="N", help="most ops in one group, TVM's count (default 256)"
    )
    parser.add_argument(
        "--opt-level", type=int, choices=(0, 1, 2), default=2, help="0 keeps every op alone (default 2)"
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON instead of a table")
    parser.add_argument("--dot", metavar="FILE", help="write a Graphviz drawing, one cluster per group")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    return parser


def run(args: argparse.Namespace) -> int:
    # loading, fusing and printing build only acyclic data, freed as the command returns: the
    # cycle collector would rescan all of it at each stage's end (see hlsfuse.collector)
    with collector.paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    graph = load_graph_arg(args.graph, args)
    dot = output_arg(args.dot, args.force)
    plan = fuse(graph, mode=args.mode, max_fuse_depth=args.max_depth, opt_level=args.opt_level)
    if args.json:
        print(json_text(plan, graph))
    else:
        print(table(plan, graph), end="")
    if dot is not None:
        write_atomic(dot, to_dot(plan, graph), overwrite=args.force)
        if not args.json:  # keep stdout pure JSON
            print(f"wrote {dot}")
    return 0
