"""``hlsfuse run GRAPH``: run a graph on the reference interpreter (the golden model); with
``--compare float`` (an ONNX model) also the float model, printing the error table of accuracy.py."""

from __future__ import annotations

import argparse
import io
import sys
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import overflow
from ..errors import HlsfuseError
from ..fileio import write_atomic
from ..frontend import onnx as onnx_frontend
from ..reference import check_frames, quantize_inputs, random_inputs, run_raw
from ..types import to_float
from .common import (
    add_graph_arg,
    add_overflow_arg,
    check_memory,
    graph_layout_inputs,
    load_graph_arg,
    output_arg,
    positive_int,
    read_frames,
    seed,
    warn,
)

__all__ = ["add_parser", "run", "COMPARE_FRAMES"]

COMPARE_FRAMES = 10
"""Frames of seeded random inputs ``--compare float`` runs unless told otherwise."""


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
    parser.add_argument(
        "--compare", choices=["float"],
        help="also run the float model of GRAPH.onnx (onnxruntime, else hlsfuse's float32 import) on the same "
        "inputs and print per output the max and mean absolute error, the relative error and argmax agreement",
    )
    parser.add_argument(
        "--frames", type=positive_int, metavar="N",
        help=f"frames of seeded random inputs --compare runs (seeds SEED, SEED+1, ...; default {COMPARE_FRAMES})",
    )
    add_overflow_arg(parser, "a node's values saturate or wrap on the run")
    parser.add_argument("--force", action="store_true", help="overwrite OUT.npz if it exists")
    return parser


def run(args: argparse.Namespace) -> int:
    _check_compare(args)
    graph = load_graph_arg(args.graph, args)
    out = output_arg(args.output, args.force)
    check_memory(graph, "run")
    if args.inputs is not None:
        frames = read_frames(args.inputs, graph, lambda arrays: graph_layout_inputs(args.graph, graph, arrays))
        told = f"the inputs in {args.inputs}"
        many = f" ({len(frames)} frames: a batch of {len(frames)} samples)" if len(frames) > 1 else ""
        print(f"ran graph '{graph.name}' on the inputs in {args.inputs}{many}")
    else:
        count = (args.frames or COMPARE_FRAMES) if args.compare else 1
        if args.compare:
            check_frames(graph, count, "run --compare float")
        frames = [random_inputs(graph, args.seed + k) for k in range(count)]
        told = (f"{count} frames of random inputs (seeds {args.seed}..{args.seed + count - 1})" if count > 1
                else f"1 frame of random inputs (seed {args.seed})")
        print(f"ran graph '{graph.name}' on random inputs (seed {args.seed})")
    batch = frames if args.inputs is not None else frames[:1]  # random frames beyond the first: --compare's
    found: dict[str, overflow.Event] = {}
    stacked: dict[str, list[np.ndarray]] = {name: [] for name in graph.outputs}
    for frame in batch:
        values = run_raw(graph, quantize_inputs(graph, frame))
        for name in graph.outputs:
            stacked[name].append(to_float(values[name], graph.types[name].dtype))
        for e in overflow.events(graph, values):
            found[e.name] = e if e.name not in found else _merged(found[e.name], e)
    # a batch's outputs stacked back along dim 0, as the model exported for it gives them
    outputs = {name: np.concatenate(parts) if len(parts) > 1 else parts[0] for name, parts in stacked.items()}
    # an output holding integer levels (ir.Scaling): the model's real values, as the host computes them
    outputs = {name: graph.scales[name].to_real(v).astype(np.float32) if name in graph.scales else v
               for name, v in outputs.items()}
    for name, value in outputs.items():
        shape = f"{graph.types[name]}" if value.shape == graph.types[name].shape else \
            f"{graph.types[name]} x {len(batch)} frames"
        scaled = " scaled to real values" if name in graph.scales else ""
        print(f"  {name}  {shape}{scaled}  min {value.min():.6g}  max {value.max():.6g}  mean {value.mean():.6g}")
    _report_overflow(list(found.values()), told if len(frames) == 1 or args.inputs is not None
                     else f"the first frame (seed {args.seed})", args)
    if out is not None:
        write_atomic(out, _npz_bytes(outputs), overwrite=args.force)
        print(f"wrote {out}")
    if args.compare:
        with warnings.catch_warnings():  # the import above said each approximation once
            warnings.simplefilter("ignore", onnx_frontend.ScaleApproximation)
            accuracy = onnx_frontend.compare_float(args.graph, graph, frames, told,
                                                   approximate_scales=bool(args.approximate_scales))
        print(accuracy.table())
    return 0


def _merged(a: overflow.Event, b: overflow.Event) -> overflow.Event:
    """One node's overflow events on two frames as one."""
    return replace(a, count=a.count + b.count, size=a.size + b.size, lo=min(a.lo, b.lo), hi=max(a.hi, b.hi))


def _report_overflow(found: list, told: str, args: argparse.Namespace) -> None:
    """One line per node whose values saturated or wrapped on the run (``found``: ``overflow.events``); an error
    with --overflow error. The nodes checked are those the range analysis finds at risk for any input of the
    inputs' types."""
    if not found:
        return
    head = f"{len(found)} node{'s' if len(found) != 1 else ''} overflowed on {told}"
    if args.overflow == "error":
        raise HlsfuseError(f"{head}: {'; '.join(overflow.report(found))} (--overflow error)")
    warn(f"{head}:")
    for line in overflow.report(found):
        print(f"  {line}", file=sys.stderr)


def _check_compare(args: argparse.Namespace) -> None:
    """Refuse, before any work, --compare with a graph that has no float model and --frames without it."""
    if args.compare and Path(args.graph).suffix.lower() != ".onnx":
        raise HlsfuseError(f"--compare float needs an ONNX model (GRAPH.onnx) to take the float model from, "
                           f"not {args.graph}")
    if args.frames is not None and not args.compare:
        raise HlsfuseError("--frames applies to --compare float (run alone runs one frame)")
    if args.frames is not None and args.inputs is not None:
        raise HlsfuseError(f"--frames counts seeded random frames; --inputs {args.inputs} gives the one frame to "
                           "compare on")


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as an .npz archive, as numpy.savez writes it. Written here rather than with
    savez(file, **arrays) so that outputs named like savez's own arguments ('file') work."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()
