"""What several commands share: reading a graph argument and guarding output files.

A graph argument is a JSON graph or an ONNX model; ``add_graph_arg`` adds it with the
ONNX import options (--precision, --precision-map, --calibrate), which
``load_graph_arg`` applies to .onnx files.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import overflow
from ..errors import HlsfuseError
from ..fileio import check_readable
from ..graph_json import load_graph
from ..ir import Graph, check_size
from ..reference import quantize_inputs
from ..side_file import THRESHOLD
from ..types import DEFAULT_PRECISION, EXACT

__all__ = ["add_graph_arg", "load_graph_arg", "input_range", "input_ranges_arg", "graph_layout_inputs", "output_arg",
           "positive_int", "seed", "read_npz", "read_inputs", "read_frames",
           "check_memory", "input_shape", "add_weights_args", "weights_file_arg",
           "add_overflow_arg", "check_overflow", "say", "warn"]

_ONNX_OPTIONS = ("precision", "precision_map", "calibrate", "approximate_scales", "input_shape")


def add_graph_arg(parser: argparse.ArgumentParser, help: str = "graph file (.json) or ONNX model (.onnx)") -> None:
    """The GRAPH positional argument and the options of importing it from ONNX."""
    parser.add_argument("graph", metavar="GRAPH", help=help)
    group = parser.add_argument_group("ONNX models (GRAPH.onnx)")
    default = DEFAULT_PRECISION
    group.add_argument("--precision", metavar="TYPE",
                       help="float32, a fixed type, auto[:W[,I]]: each tensor's integer bits from range analysis "
                       "(at most I), W bits in all (plain auto: 16), or exact: each node holds its exact result; "
                       f"default {default} (exact for quantized models: QONNX Quant, QDQ)")
    group.add_argument("--precision-map", metavar="FILE", help="JSON precision map: default, weights, per-tensor types")
    group.add_argument(
        "--calibrate",
        metavar="SAMPLES.npz",
        help="choose integer bits from these inputs (ONNX layout); prints the error vs the float model on them",
    )
    group.add_argument("--approximate-scales", action="store_true",
                       help="quantizer scales that are not powers of two: the nearest power of two (each one "
                       "reported on stderr with its error) instead of an error")
    group.add_argument(
        "--input-shape", metavar="NAME=D0,D1,...", action="append", type=input_shape,
        help="the shape of input NAME, over the model's (e.g. a batch of 1 for a model exported with a batch "
        "its ops mix); repeat for several inputs")
    group.add_argument(
        "--input-range",
        metavar="NAME=LO:HI",
        action="append",
        type=input_range,
        help="the values input NAME takes, for --precision auto and the range analysis (check --ranges, the "
        "overflow check of convert, compile and run; default: its type's range); repeat for several inputs",
    )


def input_range(text: str) -> tuple[str, tuple[float, float]]:
    """An argparse type: ``NAME=LO:HI`` with finite numbers LO <= HI."""
    name, eq, bounds = text.rpartition("=")
    lo, colon, hi = bounds.partition(":")
    try:
        low, high = float(lo), float(hi)
    except ValueError:
        low = high = math.nan
    if not (name and eq and colon and math.isfinite(low) and math.isfinite(high)):
        raise argparse.ArgumentTypeError(f"expected NAME=LO:HI with finite numbers, e.g. x=-1:1, not {text!r}")
    if low > high:
        raise argparse.ArgumentTypeError(f"input '{name}': LO ({lo}) must not exceed HI ({hi})")
    return name, (low, high)


def input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """An argparse type: ``NAME=D0,D1,...`` with whole dims of at least 1."""
    name, eq, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not (name and eq and shape and all(d >= 1 for d in shape)):
        raise argparse.ArgumentTypeError(f"expected NAME=D0,D1,... with whole dims of at least 1, e.g. x=1,16, "
                                         f"not {text!r}")
    return name, shape


def input_ranges_arg(args: argparse.Namespace) -> dict[str, tuple[float, float]] | None:
    """The --input-range options as ``{name: (lo, hi)}``; an input named twice is refused."""
    given = getattr(args, "input_range", None)
    if not given:
        return None
    ranges: dict[str, tuple[float, float]] = {}
    for name, bounds in given:
        if name in ranges:
            raise HlsfuseError(f"--input-range: input '{name}' is given more than once")
        ranges[name] = bounds
    return ranges


def add_weights_args(parser: argparse.ArgumentParser, written: str) -> None:
    """--weights-file / --inline-weights: where a written graph keeps its constants' values (``written``:
    the JSON file and its side file, as the command's help says them)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--weights-file", action="store_true",
                       help=f"keep the constants' values in a side file ({written}), whatever the graph's size")
    group.add_argument("--inline-weights", action="store_true",
                       help="keep the constants' values in the JSON file, whatever the graph's size (default: a side "
                       f"file when they are more than {THRESHOLD:,} values, 1 MiB as float32)")


def weights_file_arg(args: argparse.Namespace) -> bool | None:
    """``save_graph``'s ``weights_file`` for the flags of ``add_weights_args``: True, False or None (by size)."""
    if args.weights_file:
        return True
    return False if args.inline_weights else None


def _load_onnx(path: str, args: argparse.Namespace | None) -> Graph:
    from ..frontend import onnx as onnx_frontend  # here: the commands on JSON graphs start without the frontend

    options = {k: getattr(args, k, None) for k in _ONNX_OPTIONS}
    for given in (options["precision_map"], options["calibrate"]):
        if given:
            check_readable(given)
    model = path
    if options["input_shape"]:
        shapes = dict(options["input_shape"])
        if len(shapes) != len(options["input_shape"]):
            raise HlsfuseError("--input-shape: an input is given more than once")
        model = onnx_frontend.with_input_shapes(onnx_frontend.read_onnx(path), shapes)
    if options["precision_map"]:
        precision = onnx_frontend.load_precision_map(options["precision_map"], default=options["precision"])
    elif options["precision"]:
        precision = onnx_frontend.precision_of(options["precision"])
    else:  # read once here: a quantized model's default is exact
        model = onnx_frontend.read_onnx(path) if model == path else model
        quantized = onnx_frontend.is_quantized(model)
        default = onnx_frontend.EXACT if quantized else onnx_frontend.DEFAULT_PRECISION
        precision = onnx_frontend.precision_of(default)
        if args is not None:
            args.default_precision = default  # for check_overflow's note
    if options["approximate_scales"]:
        precision = replace(precision, approximate_scales=True)
    ranges = input_ranges_arg(args) if args is not None else None
    if ranges and precision.auto is None and not _analyses_ranges(args):
        raise HlsfuseError("--input-range applies to --precision auto and to the range analysis (check --ranges, "
                           "convert, compile and run)")
    if precision.auto is None:
        ranges = None  # for the range analysis only
    with warnings.catch_warnings(record=True) as approximations:
        warnings.simplefilter("always", onnx_frontend.ScaleApproximation)
        if not options["calibrate"]:
            graph = onnx_frontend.from_onnx(model, precision=precision, input_ranges=ranges)
        else:
            source = model if options["input_shape"] else path  # a path: onnxruntime runs the file itself
            result = onnx_frontend.calibrate(source, options["calibrate"], precision=precision, input_ranges=ranges)
            print(result.report(), file=sys.stderr)  # stderr: stdout may be a command's JSON
            graph = result.graph
    said = set()  # an import may convert the model more than once (auto, exact): each approximation once
    for warning in approximations:
        if not isinstance(warning.message, onnx_frontend.ScaleApproximation):
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
        elif str(warning.message) not in said:
            said.add(str(warning.message))
            print(f"hlsfuse: warning: {warning.message}", file=sys.stderr)
    return graph


# graph file suffix -> loader(path, args)
_LOADERS = {".json": lambda path, args: load_graph(path), ".onnx": _load_onnx}


def load_graph_arg(path: str, args: argparse.Namespace | None = None) -> Graph:
    """Load and verify the graph file a command was given, chosen by its suffix; ``args``
    carries the ONNX import options of ``add_graph_arg``."""
    suffix = Path(path).suffix.lower()
    if suffix not in _LOADERS:
        known = ", ".join(_LOADERS)
        raise HlsfuseError(f"{path}: unknown graph format '{suffix}' (expected a file ending in {known})")
    given = [k for k in _ONNX_OPTIONS if getattr(args, k, None)]
    if given and suffix != ".onnx":
        raise HlsfuseError(f"--{given[0].replace('_', '-')} applies to ONNX models (.onnx), not to {path}")
    if getattr(args, "input_range", None) and suffix != ".onnx" and not _analyses_ranges(args):
        raise HlsfuseError("--input-range applies to ONNX models imported with --precision auto and to the range "
                           f"analysis (check --ranges, convert, compile and run), not to {path}")
    check_readable(path)
    return _LOADERS[suffix](path, args)


def _analyses_ranges(args: argparse.Namespace | None) -> bool:
    """Whether the command runs the range analysis: check --ranges, or a command with --overflow."""
    return bool(getattr(args, "ranges", False)) or getattr(args, "overflow", None) is not None


def add_overflow_arg(parser: argparse.ArgumentParser, what: str) -> None:
    """--overflow warn|error: what the command does when ``what`` (its overflow check) finds nodes."""
    parser.add_argument("--overflow", choices=("warn", "error"), default="warn",
                        help=f"when {what}: warn on stderr and go on (default), or stop with an error "
                        "before anything is written")


def warn(message: str) -> None:
    """A warning line on stderr (stdout may be a command's JSON or table)."""
    print(f"hlsfuse: warning: {message}", file=sys.stderr)



def check_overflow(graph: Graph, args: argparse.Namespace) -> list[str]:
    """convert and compile: the lines to print on stderr once the command's output is written (its
    precision, when an ONNX model was imported with the default; one warning naming the nodes whose
    declared types can overflow for the inputs' ranges, --input-range or their types'). With
    --overflow error, such nodes are an error instead, raised here, before anything is written."""
    lines = []
    default = getattr(args, "default_precision", None)  # set by _load_onnx when it chose the default
    if default == EXACT:
        lines.append(f"hlsfuse: precision {default} (the default for quantized models): the quantizers' types, and "
                     "between them each node holds its exact result; --precision chooses others")
    elif default is not None:
        from ..frontend import onnx as onnx_frontend  # loaded already: an ONNX model was read

        precision = onnx_frontend.precision_of(default)
        inputs = "the given input ranges" if args.input_range else "inputs anywhere in their types' ranges"
        lines.append(f"hlsfuse: precision {default} (the default): {precision.auto}-bit types with the integer bits "
                     f"range analysis finds for {inputs}, at most {precision.auto_limit}; --precision chooses others")
    if any(not graph.types[node.name].dtype.is_float for node in graph.nodes):
        given = input_ranges_arg(args)
        found = overflow.risks(graph, given)
        if found:
            message = overflow.warning(found, given_ranges=bool(given))
            if args.overflow == "error":
                raise HlsfuseError(f"{message} (--overflow error)")
            lines.append(f"hlsfuse: warning: {message}")
    return lines


def say(lines: list[str]) -> None:
    """Print ``check_overflow``'s lines on stderr (stdout may be a command's JSON or table)."""
    for line in lines:
        print(line, file=sys.stderr)


def graph_layout_inputs(path: str, graph: Graph, arrays: dict) -> dict:
    """Input arrays in the graph's layout: an ONNX model's inputs are given in ONNX layout (NCHW)."""
    if Path(path).suffix.lower() == ".onnx":
        from ..frontend import onnx as onnx_frontend

        return onnx_frontend.to_graph_layout(graph, arrays)
    return arrays


def output_arg(path: str | None, force: bool) -> Path | None:
    """The output file a command was given, refused up front (before any work) if it exists
    and ``--force`` was not given."""
    if path is None:
        return None
    out = Path(path)
    if out.exists() and not force:
        raise HlsfuseError(f"{out} already exists; pass --force to overwrite it")
    if not out.parent.is_dir():
        raise HlsfuseError(f"{out}: folder '{out.parent}' does not exist")
    return out


def read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise HlsfuseError(f"not a numpy .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise HlsfuseError("must be an .npz archive of named arrays (numpy.savez), not a single array")
    with archive:
        try:
            _check_headers(archive)
            return {name: archive[name] for name in archive.files}
        except (ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise HlsfuseError(f"cannot read the arrays ({exc})") from None


# .npy header versions numpy reads with a public function (3.0, UTF-8 names, is left to np.load)
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _check_headers(archive: np.lib.npyio.NpzFile) -> None:
    """Refuse, from its header and before numpy allocates it, an array larger than a tensor may be or
    than the bytes the archive holds for it (numpy allocates the whole array before reading it)."""
    for info in archive.zip.infolist():
        if not info.filename.endswith(".npy"):
            continue  # numpy gives such a member as bytes, which the checks of the inputs refuse
        name = info.filename.removesuffix(".npy")
        with archive.zip.open(info) as member:
            read_header = _HEADER_READERS.get(np.lib.format.read_magic(member))
            if read_header is None:
                continue
            shape, _, dtype = read_header(member)
            check_size(shape, f"array '{name}'")
            size = math.prod(shape) * dtype.itemsize
            if size > info.file_size:
                raise HlsfuseError(f"array '{name}': its header says shape {list(shape)} of {dtype} ({size} bytes), "
                                   f"but the archive holds {info.file_size} bytes for it")


def read_inputs(path: str, graph: Graph, layout=None) -> dict[str, np.ndarray]:
    """The real input values in the .npz file ``path`` (``layout``: converts the arrays to the graph's
    layout first), checked against the graph; every problem with the file or its arrays (a missing or
    unknown name, a wrong shape, complex values, a value the type cannot hold) is one line naming ``path``."""
    check_readable(path)
    try:
        arrays = read_npz(path)
        arrays = layout(arrays) if layout is not None else arrays
        quantize_inputs(graph, arrays)
    except HlsfuseError as exc:
        raise HlsfuseError(f"{path}: {exc}") from None
    return arrays


def read_frames(path: str, graph: Graph, layout=None) -> list[dict[str, np.ndarray]]:
    """The frames of real input values in the .npz file ``path``: one, or, for a graph built for one sample
    ([1, ...] inputs, as a model exported with a batch is), one per sample of arrays of [K, ...] (the batch as
    frames, batch.split_frames); each checked as ``read_inputs`` checks one."""
    from ..frontend.onnx.batch import split_frames  # numpy only: no onnx needed

    check_readable(path)
    try:
        frames = split_frames(graph, read_npz(path))
        frames = [layout(arrays) if layout is not None else arrays for arrays in frames]
        for arrays in frames:
            quantize_inputs(graph, arrays)
    except HlsfuseError as exc:
        raise HlsfuseError(f"{path}: {exc}") from None
    return frames


BYTES_PER_ELEMENT = {"compile": 400, "run": 24}
"""Rough peak bytes per element of a graph's tensors, per frame: ``compile`` (the lowering's token timing replays
several frames of every stage and channel in int64 arrays) and a reference ``run``."""


def check_memory(graph: Graph, what: str, frames: int = 1) -> None:
    """Refuse, before allocating, a graph whose tensors (``frames`` frames of them) ``what`` cannot hold in the
    memory this process may use (its address-space limit, else the machine's available memory), naming the
    largest tensor."""
    sizes = {i.name: i.type.size for i in graph.inputs} | {n.name: graph.types[n.name].size for n in graph.nodes}
    need = sum(sizes.values()) * BYTES_PER_ELEMENT[what] * frames
    have = _memory_available()
    if have is None or need <= have:
        return
    name = max(sizes, key=sizes.get)
    raise HlsfuseError(f"{what}: graph '{graph.name}' needs about {need / 2**30:,.1f} GiB ({sum(sizes.values()):,} "
                       f"tensor elements per frame), more than the {have / 2**30:,.1f} GiB available; its largest "
                       f"tensor is '{name}' {graph.types[name]} ({sizes[name]:,} elements)")


def _memory_available() -> int | None:
    """Bytes this process may still allocate: the address-space limit (RLIMIT_AS) less what it maps, or the
    machine's MemAvailable, whichever is smaller (None: unknown)."""
    import resource

    found = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        mapped = 0
    if soft != resource.RLIM_INFINITY:
        found.append(max(0, soft - mapped))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def _whole(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{what} at least {least}, not {value}")
    return value


def seed(text: str) -> int:
    """An argparse type: a random seed, a whole number of at least 0 (numpy's generators take no other)."""
    return _whole(text, 0, "a seed must be")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    return _whole(text, 1, "must be")
