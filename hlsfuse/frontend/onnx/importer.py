"""Reading an ONNX file into a ``Model``: the only module that talks to the ``onnx`` package.

    bytes/path/ModelProto --parse--> ModelProto --declare custom domains--> --check-->
        --upgrade (opset < 6)--> --shape inference--> --decode--> Model (numpy arrays, plain attributes)

Every failure is one ``HlsfuseError`` naming the file: a missing file, a truncated or
non-ONNX file (protobuf's DecodeError), a model the ONNX checker rejects, an opset
outside what hlsfuse supports, or a failed opset upgrade. Opsets below 6 are upgraded
to 6 with onnx's version converter; the converters read opset 6 themselves (its
legacy ``broadcast``/``axis`` arithmetic included: onnx's own 6 -> 7 adapter aligns
such operands at the wrong axis).

Brevitas, FINN and qonnx write their custom ops (domains ``onnx.brevitas``,
``finn.custom_op.general``, ``qonnx.custom_op.general``, ``qonnx.custom_op.channels_last``)
often without an opset import for that domain; qonnx and FINN load such files, and onnx's
checker refuses them for that alone. The checker has no schema for a custom domain, so an
import of it changes nothing else it checks: the missing imports of these known domains are
added (version 1; the op versions in them are not read) before checking, and every other
check still applies. An undeclared domain that no known tool writes stays a checker error.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...errors import HlsfuseError
from .channels_last import CHANNELS_LAST_DOMAIN
from .model import Model, NodeDef, TensorInfo
from .quant import QONNX_DOMAINS

try:
    import onnx
    from google.protobuf.message import DecodeError
    from onnx import helper, numpy_helper, shape_inference, version_converter
except ImportError:  # the package is an optional extra; say how to get it instead of a traceback
    raise HlsfuseError("reading ONNX models needs the 'onnx' package: pip install 'hlsfuse[onnx]'") from None

__all__ = ["read_model", "MIN_OPSET", "MAX_OPSET", "UPGRADE_BELOW", "UPGRADE_TO", "CUSTOM_DOMAINS"]

MIN_OPSET = 1
MAX_OPSET = 21
UPGRADE_BELOW = 6
UPGRADE_TO = 6
CUSTOM_DOMAINS = (*QONNX_DOMAINS, CHANNELS_LAST_DOMAIN)
"""Custom-op domains whose missing opset import is added before checking (see the module note)."""


def read_model(model: str | os.PathLike | bytes | onnx.ModelProto) -> Model:
    """Parse, check, upgrade and decode a model given as a path, bytes or a ``ModelProto``."""
    proto, source, stem = _parse(model)
    proto = _declare_domains(proto)
    _check(proto, source)
    opset = _opset(proto, source)
    if opset < UPGRADE_BELOW:
        proto = _upgrade(proto, opset, source)
        opset = UPGRADE_TO
    try:
        proto = shape_inference.infer_shapes(proto, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:  # onnx raises several exception types from its C++ core
        raise HlsfuseError(f"{source}: ONNX shape inference failed: {_first_line(exc)}") from None
    return _decode(proto, opset, source, stem)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _parse(model) -> tuple[onnx.ModelProto, str, str]:
    if isinstance(model, onnx.ModelProto):
        return model, "ONNX model", model.graph.name or "model"
    if isinstance(model, (bytes, bytearray)):
        source, stem, data = "ONNX model bytes", "model", bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source, stem = str(path), path.stem
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HlsfuseError(f"{source}: cannot read the file: {exc.strerror or exc}") from None
    else:
        raise HlsfuseError(f"from_onnx expects a path, bytes or an onnx.ModelProto, not {type(model).__name__}")
    try:
        proto = onnx.load_model_from_string(data)
    except DecodeError:
        raise HlsfuseError(f"{source}: not a valid ONNX file (truncated, or not an ONNX protobuf)") from None
    if isinstance(model, (str, os.PathLike)) and proto.graph.initializer:
        # weights stored beside the model (external data) are resolved against its folder
        try:
            from onnx.external_data_helper import load_external_data_for_model

            load_external_data_for_model(proto, str(Path(model).parent))
        except (OSError, ValueError, onnx.checker.ValidationError) as exc:  # a missing file: ValidationError
            raise HlsfuseError(f"{source}: cannot load external weight data: {_first_line(exc)}") from None
    return proto, source, stem


def _declare_domains(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` with an opset import (version 1) for each known custom domain its nodes use
    without one; a copy, so that a caller's ModelProto is left as it was."""
    declared = {entry.domain for entry in proto.opset_import}
    used = {node.domain for node in proto.graph.node}
    missing = [d for d in CUSTOM_DOMAINS if d in used and d not in declared]
    if not missing:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    copy.opset_import.extend(helper.make_opsetid(domain, 1) for domain in missing)
    return copy


def _check(proto: onnx.ModelProto, source: str) -> None:
    if not proto.graph.node and not proto.graph.output:
        raise HlsfuseError(f"{source}: not a valid ONNX model (it has no graph; is the file empty or truncated?)")
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as exc:
        raise HlsfuseError(f"{source}: not a valid ONNX model: {_first_line(exc)}") from None


def _opset(proto: onnx.ModelProto, source: str) -> int:
    for entry in proto.opset_import:
        if entry.domain in ("", "ai.onnx"):
            version = int(entry.version)
            if not MIN_OPSET <= version <= MAX_OPSET:
                raise HlsfuseError(
                    f"{source}: opset {version} is not supported (hlsfuse reads opsets {MIN_OPSET} to {MAX_OPSET}; "
                    f"export with opset_version={MAX_OPSET} or lower)"
                )
            return version
    raise HlsfuseError(f"{source}: the model does not import the default ONNX opset")


def _upgrade(proto: onnx.ModelProto, opset: int, source: str) -> onnx.ModelProto:
    try:
        return version_converter.convert_version(proto, UPGRADE_TO)
    except Exception as exc:
        raise HlsfuseError(
            f"{source}: cannot upgrade opset {opset} to {UPGRADE_TO} with onnx's version converter: {_first_line(exc)}"
        ) from None


# --------------------------------------------------------------------------
# Decoding protobuf into the light model
# --------------------------------------------------------------------------


def _elem(elem_type: int) -> str:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return onnx.TensorProto.DataType.Name(elem_type).lower() if elem_type else "undefined"


def _shape(type_proto: onnx.TypeProto):
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in type_proto.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or None)
    return tuple(dims)


def _info(value: onnx.ValueInfoProto) -> TensorInfo:
    return TensorInfo(value.name, _shape(value.type), _elem(value.type.tensor_type.elem_type))


def _attr(attr: onnx.AttributeProto):
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_attr_item(v) for v in value]
    return value


def _attr_item(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return value


def _decode(proto: onnx.ModelProto, opset: int, source: str, stem: str) -> Model:
    graph = proto.graph
    if graph.sparse_initializer:
        raise HlsfuseError(f"{source}: sparse initializers are not supported; store the weights densely")
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    inputs = tuple(_info(v) for v in graph.input if v.name not in initializers)
    nodes = tuple(
        NodeDef(
            name=n.name or (n.output[0] if n.output else f"{n.op_type}_{i}"),
            op=n.op_type,
            inputs=tuple(n.input),
            outputs=tuple(n.output),
            attrs={a.name: _attr(a) for a in n.attribute},
            domain="" if n.domain == "ai.onnx" else n.domain,
        )
        for i, n in enumerate(graph.node)
    )
    shapes = {}
    for v in graph.value_info:
        shape = _shape(v.type)
        if shape is not None and all(isinstance(d, int) and d >= 1 for d in shape):
            shapes[v.name] = shape
    return Model(
        name=stem,
        source=source,
        opset=opset,
        inputs=inputs,
        outputs=tuple(_info(v) for v in graph.output),
        initializers=initializers,
        nodes=nodes,
        shapes=shapes,
        producer=proto.producer_name,
    )
