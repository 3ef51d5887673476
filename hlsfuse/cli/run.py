"""``hlsfuse run GRAPH``: run a graph on the reference interpreter (the golden model)."""

from __future__ import annotations

import argparse
import io
import zipfile

import numpy as np

from ..fileio import write_atomic
from ..reference import quantize_inputs, random_inputs, run_raw
from ..types import to_float
from .common import add_graph_arg, graph_layout_inputs, load_graph_arg, output_arg, read_inputs, seed

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "run",
        help="run a graph on the reference interpreter",
        description="Run a graph on the bit-exact numpy reference. Inputs are real numbers, quantized to each "
        "input's type; without --inputs they are seeded random values. Outputs are written as float64 real values.",
    )
    add_graph_arg(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--inputs",
        metavar="IN.npz",
        help="one array per graph input, named like the input (in ONNX layout for a .onnx GRAPH)",
    )
    source.add_argument("--seed", type=seed, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("-o", "--output", metavar="OUT.npz", help="write one array per graph output")
    parser.add_argument("--force", action="store_true", help="overwrite OUT.npz if it exists")
    return parser


def run(args: argparse.Namespace) -> int:
    graph = load_graph_arg(args.graph, args)
    out = output_arg(args.output, args.force)
    if args.inputs is not None:
        raw = quantize_inputs(graph, read_inputs(args.inputs, graph,
                                                 lambda arrays: graph_layout_inputs(args.graph, graph, arrays)))
        print(f"ran graph '{graph.name}' on the inputs in {args.inputs}")
    else:
        raw = quantize_inputs(graph, random_inputs(graph, args.seed))
        print(f"ran graph '{graph.name}' on random inputs (seed {args.seed})")
    values = run_raw(graph, raw)
    outputs = {name: to_float(values[name], graph.types[name].dtype) for name in graph.outputs}
    for name, value in outputs.items():
        print(f"  {name}  {graph.types[name]}  min {value.min():.6g}  max {value.max():.6g}  mean {value.mean():.6g}")
    if out is not None:
        write_atomic(out, _npz_bytes(outputs), overwrite=args.force)
        print(f"wrote {out}")
    return 0


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as an .npz archive, as numpy.savez writes it. Written here rather than with
    savez(file, **arrays) so that outputs named like savez's own arguments ('file') work."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()
