"""``hlsfuse convert MODEL.onnx -o GRAPH.json``: import an ONNX model and save it as a JSON graph (and
GRAPH.npz, its side file, for a large model)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import HlsfuseError
from ..graph_json import save_graph
from ..side_file import side_path, wants_side_file
from .common import (
    add_graph_arg,
    add_overflow_arg,
    add_weights_args,
    check_overflow,
    load_graph_arg,
    output_arg,
    say,
    weights_file_arg,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "convert",
        help="import an ONNX model as a JSON graph",
        description="Import an ONNX model (opsets 1-21; images become channel-last, batch norms fold into the "
        "layers before them) with the chosen precision and save it as a JSON graph. Nothing is written when "
        "the model cannot be imported; the error lists every node that needs a change. A warning names the nodes "
        "whose types can overflow by the range analysis.",
    )
    add_graph_arg(parser, help="the ONNX model (.onnx)")
    parser.add_argument("-o", "--output", metavar="GRAPH.json", required=True, help="the JSON graph to write")
    add_weights_args(parser, "GRAPH.npz beside GRAPH.json")
    add_overflow_arg(parser, "a node's type can overflow (range analysis)")
    parser.add_argument("--force", action="store_true", help="overwrite GRAPH.json (and GRAPH.npz) if it exists")
    return parser


def run(args: argparse.Namespace) -> int:
    if Path(args.graph).suffix.lower() != ".onnx":
        raise HlsfuseError(f"{args.graph}: convert reads ONNX models (a file ending in .onnx)")
    out = output_arg(args.output, args.force)
    weights_file = weights_file_arg(args)
    if weights_file:
        output_arg(side_path(out), args.force)  # refused before any work, as GRAPH.json is
    graph = load_graph_arg(args.graph, args)
    notes = check_overflow(graph, args)
    save_graph(graph, out, overwrite=args.force, weights_file=weights_file)
    written = f"{out} and {side_path(out)}" if wants_side_file(graph, weights_file) else f"{out}"
    say(notes)
    print(f"converted {args.graph} to graph '{graph.name}' ({len(graph.nodes)} nodes, "
          f"{len(graph.constants)} constants); wrote {written}")
    return 0
