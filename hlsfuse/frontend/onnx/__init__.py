"""The ONNX frontend: ``from_onnx(model) -> Graph`` (docs/onnx.md).

    read_model (importer.py, the only user of the ``onnx`` package)
        -> convert (convert.py: fold.py, patterns.py (activation decompositions as one node), ops_tensor.py,
           ops_nn.py, ops_more.py, ops_select.py (Split, Gather, Where), ops_quant.py over context.py, layout.py;
           quant.py: QONNX and QDQ quantizers as exact fixed types)
        -> Graph, typed by a Precision (precision.py), by calibration (calibration.py) or by
           range analysis (auto.py, precision "auto:W" or "exact"), which calibration may narrow
    float_model.py: the float model (onnxruntime, or the float32 import) a graph's error is measured against

ONNX op names and attributes appear only in this package. The ``onnx`` package is an
optional extra; it is imported when a model is read, not when hlsfuse is.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ...errors import HlsfuseError
from ...ir import Graph
from .auto import auto_graph
from .batch import split_frames, with_input_shapes
from .calibration import Calibration
from .calibration import calibrate as _calibrate
from .convert import convert, supported_ops
from .float_model import FloatModel
from .float_model import compare as _compare
from .float_model import float_model as _float_model
from .layout import to_graph_layout, to_model_outputs, to_onnx_layout
from .model import Model
from .precision import DEFAULT_PRECISION, EXACT, Precision, load_precision_map, precision_of
from .quant import ScaleApproximation, is_quantized

__all__ = [
    "from_onnx",
    "calibrate",
    "read_onnx",
    "Calibration",
    "Precision",
    "DEFAULT_PRECISION",
    "load_precision_map",
    "precision_of",
    "to_graph_layout",
    "to_onnx_layout",
    "to_model_outputs",
    "supported_ops",
    "FloatModel",
    "float_model",
    "compare_float",
    "ScaleApproximation",
    "is_quantized",
    "EXACT",
    "with_input_shapes",
    "split_frames",
]


def read_onnx(model):
    """The decoded ``Model`` of a path, bytes or ``onnx.ModelProto`` (checked and upgraded)."""
    from .importer import read_model  # needs the optional onnx package

    return read_model(model)


def from_onnx(model, precision=None, calibration=None, input_ranges=None, approximate_scales=False) -> Graph:
    """Import an ONNX model (a path, bytes or ``onnx.ModelProto``) as a verified ``Graph``.

    ``precision``: ``"float32"``, a fixed type such as ``"fixed<16,6>"`` (for activations and
    weights), a precision-map dict ``{"default", "weights", "tensors"}`` or a ``Precision``.
    ``"auto"``, ``"auto:W"`` or ``"auto:W,I"``: types from range analysis (auto.py), with
    ``input_ranges`` ``{input: (lo, hi)}`` bounding the inputs; the default, ``"auto:16,6"``,
    gives 16-bit types the integer bits that cannot overflow, up to 6 (``overflow.risks`` names
    the nodes at that limit). ``"exact"``: every node holds its exact result; the default for
    quantized models (QONNX ``Quant`` nodes, QDQ pairs: quant.py), whose quantizers give their
    tensors' types. ``calibration``: sample inputs (an .npz path or a dict of arrays, ONNX layout)
    from which each tensor's integer bits are chosen; use ``calibrate`` to also get the expected
    error. ``approximate_scales``: quantizer scales that are not powers of two become the nearest
    power of two, each with a ``ScaleApproximation`` warning, instead of an error.
    """
    if precision is None:
        model = _decoded(model) if calibration is None else model
        precision = EXACT if calibration is None and is_quantized(model) else DEFAULT_PRECISION
    if calibration is not None:
        return calibrate(model, calibration, precision, input_ranges, approximate_scales).graph
    chosen = _with_scales(precision_of(precision), approximate_scales)
    if chosen.auto is not None:
        return auto_graph(_decoded(model), chosen, input_ranges)
    if input_ranges:
        raise HlsfuseError("input ranges apply to precision auto only")
    return convert(_decoded(model), chosen)


def calibrate(model, samples, precision=DEFAULT_PRECISION, input_ranges=None, approximate_scales=False) -> Calibration:
    """Import ``model`` with types calibrated on ``samples``; see ``Calibration.report``. With
    precision auto, integer bits narrow from auto's to what the samples need (auto.py)."""
    chosen = _with_scales(precision_of(precision), approximate_scales)
    return _calibrate(_decoded(model), samples, chosen, input_ranges, source=model)


def _with_scales(precision: Precision, approximate_scales: bool) -> Precision:
    return replace(precision, approximate_scales=True) if approximate_scales else precision


def float_model(model, approximate_scales: bool = False) -> FloatModel:
    """The float model of an ONNX model (a path, bytes or ``onnx.ModelProto``): onnxruntime running it
    when onnxruntime is installed and loads it, else hlsfuse's float32 import (``approximate_scales``:
    with its quantizers' scales rounded to powers of two, as ``from_onnx`` does); ``.name`` says which."""
    return _float_model(model, _decoded(model), approximate_scales=approximate_scales)


def compare_float(model, graph: Graph, frames, inputs: str = "the given frames", approximate_scales: bool = False):
    """The ``accuracy.Accuracy`` of ``graph`` (an import of ``model``) against the float model of
    ``model`` on ``frames``: real-valued inputs, one {input: array} mapping per frame, in the graph's
    layout (``to_graph_layout`` converts ONNX-layout arrays); ``inputs`` says what they are in the table;
    ``approximate_scales``: as ``graph`` was imported (the float32 import, where it stands in, needs it too)."""
    return _compare(graph, float_model(model, approximate_scales), list(frames), inputs)


def _decoded(model):
    if isinstance(model, Model):
        return model
    if not isinstance(model, (str, os.PathLike, bytes, bytearray)) and type(model).__name__ != "ModelProto":
        raise HlsfuseError(f"from_onnx expects a path, bytes or an onnx.ModelProto, not {type(model).__name__}")
    return read_onnx(model)
