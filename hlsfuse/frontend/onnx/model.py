"""A light, decoded view of an ONNX model: plain Python values and numpy arrays.

The importer turns a ``ModelProto`` into a ``Model`` once; everything after it
(folding, layout, conversion) works on this view and never touches protobuf,
so only the importer needs the ``onnx`` package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ...errors import HlsfuseError

__all__ = ["NodeDef", "TensorInfo", "Model", "Dim", "Unsupported"]

Dim = int | str | None
"""One dimension of a declared shape: a size, a symbolic name, or unknown."""


class Unsupported(HlsfuseError):
    """A node hlsfuse cannot import as it is; the importer collects these per node."""


@dataclass(frozen=True)
class NodeDef:
    """One ONNX node. ``inputs`` holds '' for an omitted optional input; ``attrs`` holds
    decoded values (int, float, str, lists of them, numpy arrays for tensors)."""

    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    domain: str = ""

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))

    def where(self) -> str:
        return f"node '{self.name}' ({self.op})"

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int) -> str:
        """Name of input ``i``, or '' when it is omitted."""
        return self.inputs[i] if i < len(self.inputs) else ""


@dataclass(frozen=True)
class TensorInfo:
    """A declared graph input or output: ``shape`` is None when even the rank is unknown."""

    name: str
    shape: tuple[Dim, ...] | None
    elem: str  # numpy dtype name, e.g. 'float32', 'int64'

    @property
    def static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) and d >= 1 for d in self.shape)


@dataclass(frozen=True, eq=False)
class Model:
    """A decoded model. ``opset`` is the default domain's version; ``shapes`` holds the
    static shapes ONNX shape inference found for intermediate tensors."""

    name: str
    source: str
    opset: int
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    initializers: Mapping[str, np.ndarray]
    nodes: tuple[NodeDef, ...]
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    producer: str = ""  # the exporter that wrote the file (its producer_name: "pytorch", "tf2onnx", ...)

    def __post_init__(self):
        for name in ("inputs", "outputs", "nodes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "initializers", MappingProxyType(dict(self.initializers)))
        object.__setattr__(self, "shapes", MappingProxyType(dict(self.shapes)))
