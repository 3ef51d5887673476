"""Calibration: fixed-point types chosen from the ranges a float32 run observes.

    samples (ONNX layout) --float32 import + reference--> peak |value| per tensor
        --> calibrated types (precision.calibrated_types) --> fixed-point import
        --> reference and the float model (float_model.py) on the same samples
        --> the error table of accuracy.py

The sample file holds one array per model input, named like it, either of the input's
shape (one sample) or with a leading sample axis ([S, *shape]; for an input with batch
size 1 also [S, *shape[1:]]).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ... import reference
from ...accuracy import Accuracy
from ...errors import HlsfuseError
from ...ir import Graph
from ...types import FLOAT32
from .auto import auto_graph
from .convert import convert
from .float_model import compare, float_model
from .layout import to_graph_layout
from .model import Model
from .precision import Precision, calibrated_types

__all__ = ["Calibration", "calibrate", "read_samples", "split_samples"]


@dataclass(frozen=True, eq=False)
class Calibration:
    """The calibrated graph, what was observed, and the error it makes on the samples."""

    graph: Graph
    float_graph: Graph
    peaks: Mapping[str, float]
    accuracy: Accuracy

    @property
    def samples(self) -> int:
        return self.accuracy.frames

    @property
    def errors(self) -> Mapping[str, float]:
        """The max abs error of each output on the samples."""
        return MappingProxyType({row.name: row.max_abs for row in self.accuracy.outputs})

    def report(self) -> str:
        return f"calibrated {len(self.peaks)} tensors; " + self.accuracy.table()


def read_samples(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz file."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except OSError as exc:
        raise HlsfuseError(f"{path}: cannot read the samples: {exc.strerror or exc}") from None
    except (ValueError, EOFError, zipfile.BadZipFile, AttributeError) as exc:
        raise HlsfuseError(f"{path}: not a numpy .npz archive of named arrays ({exc})") from None


def split_samples(model: Model, data: Mapping[str, np.ndarray], where: str = "samples") -> list[dict[str, np.ndarray]]:
    """One {input: array} dict per sample, in ONNX layout; ``where`` starts the errors (the samples' file)."""
    shapes = {i.name: tuple(i.shape or ()) for i in model.inputs}
    extra = sorted(set(data) - set(shapes))
    if extra:
        raise HlsfuseError(f"{where}: '{extra[0]}' is not a model input (inputs: {', '.join(shapes)})")
    per_input: dict[str, list[np.ndarray]] = {}
    for name, shape in shapes.items():
        if name not in data:
            raise HlsfuseError(f"{where}: no array for model input '{name}'")
        if not np.issubdtype(np.asarray(data[name]).dtype, np.number) or np.iscomplexobj(data[name]):
            raise HlsfuseError(f"{where}: '{name}' must hold real numbers, not {np.asarray(data[name]).dtype}")
        array = np.asarray(data[name], dtype=np.float64)
        if not np.all(np.isfinite(array)):
            raise HlsfuseError(f"{where}: '{name}' holds NaN or infinity; samples must be finite")
        if array.shape == shape:
            per_input[name] = [array]
        elif array.shape[1:] == shape:
            per_input[name] = list(array)
        elif shape and shape[0] == 1 and array.ndim == len(shape) and array.shape[1:] == shape[1:]:
            per_input[name] = [a[None] for a in array]
        else:
            raise HlsfuseError(
                f"{where}: '{name}' has shape {list(array.shape)}; expected {list(shape)} or a leading sample axis"
            )
    counts = {len(v) for v in per_input.values()}
    if len(counts) > 1 or 0 in counts:
        raise HlsfuseError(f"{where}: the inputs have different numbers of samples ({sorted(counts)})")
    count = counts.pop() if counts else 0
    return [{name: arrays[i] for name, arrays in per_input.items()} for i in range(count)]


def calibrate(model: Model, samples, precision: Precision, input_ranges=None, source=None) -> Calibration:
    """Calibrate ``precision`` (fixed point) on ``samples`` (an .npz path or arrays); with precision auto,
    auto's integer bits narrow to the samples' needs (auto.py). ``source``: the file, bytes or
    ``onnx.ModelProto`` ``model`` was decoded from, which onnxruntime runs as the float model of the error
    table (without it, the float32 import is the float model)."""
    if precision.is_float:
        raise HlsfuseError("calibration chooses fixed-point types, but the precision is float32")
    data = read_samples(samples) if isinstance(samples, (str, Path)) else samples
    where = str(samples) if isinstance(samples, (str, Path)) else "samples"
    float_graph = convert(model, Precision(default=FLOAT32))
    batches = [to_graph_layout(float_graph, sample) for sample in split_samples(model, data, where)]
    computed = [i.name for i in float_graph.inputs] + [n.name for n in float_graph.nodes]
    peaks = dict.fromkeys(computed, 0.0)
    for sample in batches:
        values = reference.run_raw(float_graph, reference.quantize_inputs(float_graph, sample))
        for name in computed:
            array = values[name]
            if array.size:
                peaks[name] = max(peaks[name], float(np.max(np.abs(array))))
    if precision.auto is not None:
        graph = auto_graph(model, precision, input_ranges, peaks)
    else:
        if input_ranges:
            raise HlsfuseError("input ranges apply to precision auto only")
        graph = convert(model, precision.with_calibration(calibrated_types(precision, float_graph, peaks)))
    count = f"{len(batches)} sample{'s' if len(batches) != 1 else ''}"
    told = f"{count} in {samples}" if isinstance(samples, (str, Path)) else count
    accuracy = compare(graph, float_model(source, model, float_graph), batches, told)
    return Calibration(graph, float_graph, MappingProxyType(peaks), accuracy)
