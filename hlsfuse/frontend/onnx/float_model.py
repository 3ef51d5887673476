"""The float model a fixed-point import is measured against, and the measurement.

    frames (graph layout) --reference(graph)-------------------------> fixed outputs \\
                          --from_hls-------> onnxruntime(model file) --> float outputs  > accuracy.measure
                          (or, without onnxruntime: reference(float32 import))          /

onnxruntime runs the ONNX model itself, so the comparison also covers what the importer does.
When it is not installed or cannot load the model, hlsfuse's float32 import of the model (which
agrees with onnxruntime to 1e-5 on every supported op) is the float side; ``FloatModel.name``
says which ran and why, and the table prints it. This is the only module that uses onnxruntime.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ... import reference
from ...accuracy import Accuracy, measure
from ...errors import HlsfuseError
from ...ir import Graph
from ...types import FLOAT32
from .batch import frames
from .convert import convert, input_orders
from .layout import Order, from_hls, to_model_outputs
from .model import Model
from .precision import Precision
from .quant import QONNX_DOMAINS

__all__ = ["FloatModel", "float_model", "compare"]


@dataclass(frozen=True, eq=False)
class FloatModel:
    """The float side of a comparison: an onnxruntime session of the model, or the float32 import
    (``graph``) run by the reference. ``orders``: the layout the import holds each ONNX input in
    (``convert.input_orders``, which the graph's ``Input.source_axes`` record); ``elems``: their element types."""

    name: str
    orders: Mapping[str, Order]
    elems: Mapping[str, str]
    session: object | None = None
    graph: Graph | None = None

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The float outputs (float64, ONNX layout, as the graph's outputs are) of one frame of
        real-valued inputs in the graph's layout."""
        if self.session is None:
            return {k: np.asarray(v, dtype=np.float64) for k, v in reference.run(self.graph, inputs).items()}
        feeds = {name: np.asarray(from_hls(np.asarray(value), self.orders[name]), dtype=self.elems[name])
                 for name, value in inputs.items()}
        names = [o.name for o in self.session.get_outputs()]
        try:
            values = self.session.run(names, feeds)
        except Exception as exc:  # onnxruntime raises its own exception types from C++
            raise HlsfuseError(f"onnxruntime could not run the model: {_first_line(exc)}") from None
        return {name: np.asarray(value, dtype=np.float64) for name, value in zip(names, values)}


def float_model(source, model: Model, float_graph: Graph | None = None, approximate_scales: bool = False) -> FloatModel:
    """The float model of ``model``, decoded from ``source`` (a path, bytes or ``onnx.ModelProto``):
    onnxruntime on ``source`` when it is installed and loads it, else the float32 import
    (``float_graph`` if already made; ``approximate_scales``: its quantizers' scales rounded to powers
    of two, as the import compared with rounds them, where it cannot hold them otherwise)."""
    one, batch = frames(model)  # a model exported for a batch runs one sample per frame
    orders = MappingProxyType(input_orders(one))
    elems = MappingProxyType({i.name: i.elem for i in one.inputs})
    if batch is not None and isinstance(batch.size, int):
        session, why = None, f"onnxruntime runs the model only on its baked batch of {batch.size}"
    else:
        session, why = _session(source)
    if session is not None:
        return FloatModel(why, orders, elems, session=session)
    graph = float_graph if float_graph is not None else convert(
        model, Precision(default=FLOAT32, approximate_scales=approximate_scales))
    scales = ", scales approximated by powers of two" if approximate_scales and float_graph is None else ""
    return FloatModel(f"hlsfuse float32 import{scales}; {why}", orders, elems, graph=graph)


class _QonnxSession:
    """qonnx's own execution (``execute_onnx``) behind onnxruntime's session interface: the float model of a
    QONNX model, whose custom ops onnxruntime cannot load."""

    def __init__(self, wrapper):
        self.wrapper = wrapper

    def get_outputs(self):
        return list(self.wrapper.graph.output)

    def run(self, names, feeds):
        import onnxruntime
        from qonnx.core.onnx_exec import execute_onnx

        onnxruntime.set_default_logger_severity(3)  # qonnx runs standard nodes as opset-1 models: no warnings
        values = execute_onnx(self.wrapper, dict(feeds))
        return [values[name] for name in names]


def _qonnx_session(source, why: str) -> tuple[object | None, str]:
    """qonnx's execution of ``source`` when it has QONNX ops and qonnx is installed, else (None, ``why``)."""
    try:
        import onnx
        from qonnx.core.modelwrapper import ModelWrapper
        from qonnx.transformation.infer_shapes import InferShapes
    except ImportError:
        return None, why
    proto = source if type(source).__name__ == "ModelProto" else None
    if proto is None:
        try:
            proto = onnx.load(str(source)) if isinstance(source, (str, os.PathLike)) else onnx.load_from_string(
                bytes(source))
        except Exception:  # noqa: BLE001 - the file was read once already; anything here means no qonnx side
            return None, why
    if not any(node.domain in QONNX_DOMAINS for node in proto.graph.node):
        return None, why
    try:
        wrapper = ModelWrapper(proto).transform(InferShapes())
    except Exception as exc:  # noqa: BLE001 - qonnx raises whatever its transformations raise
        return None, f"{why}; qonnx cannot load it either: {_first_line(exc)}"
    from importlib.metadata import version

    return _QonnxSession(wrapper), f"qonnx {version('qonnx')} execute_onnx"


def _session(source) -> tuple[object | None, str]:
    """(an onnxruntime session of ``source``, or qonnx's execution of a QONNX model, and its name) or (None, why
    there is none)."""
    session, why = _onnxruntime_session(source)
    if session is None:
        return _qonnx_session(source, why)
    return session, why


def _onnxruntime_session(source) -> tuple[object | None, str]:
    try:
        import onnxruntime
    except ImportError:  # optional: the float32 import stands in, and the table says so
        return None, "onnxruntime is not installed"
    if isinstance(source, (str, os.PathLike)):
        data = str(source)  # a path: onnxruntime finds weights stored beside the model
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    elif type(source).__name__ == "ModelProto":
        data = source.SerializeToString()
    else:
        return None, "no ONNX file for onnxruntime to run"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # no warnings about initializers the model leaves unused
    try:
        session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types from C++
        return None, f"onnxruntime cannot load the model: {_first_line(exc)}"
    return session, f"onnxruntime {onnxruntime.__version__}"


def _first_line(exc: BaseException) -> str:
    """The message of an onnxruntime error without its '[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : ' prefix."""
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", str(exc).strip())
    return text.splitlines()[0] if text else type(exc).__name__


def compare(graph: Graph, float_side: FloatModel, frames: Sequence[Mapping[str, np.ndarray]], inputs: str) -> Accuracy:
    """Run ``graph`` on the reference and ``float_side`` on the same ``frames`` (real-valued inputs in
    the graph's layout) and measure the error of every graph output; ``inputs`` says what the frames are."""
    fixed = [to_model_outputs(graph, reference.run(graph, frame)) for frame in frames]
    # inputs that hold a quantizer's integer levels (ir.Scaling) are real values for the float model
    floats = [float_side.run({name: graph.scales[name].to_real(v) if name in graph.scales else v
                              for name, v in frame.items()}) for frame in frames]
    return measure(fixed, floats, float_side.name, inputs)
