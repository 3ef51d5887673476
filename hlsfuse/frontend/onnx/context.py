"""The state of one conversion: what each ONNX tensor became, and how new nodes are named.

Every ONNX tensor name maps to one of

    np.ndarray   a constant (an initializer, or folded from a constant subgraph)
    Value        an hlsfuse tensor holding it in a layout ``order`` (see layout.py)
    Deferred     a flatten to [N, K] of a tensor whose elements are not in ONNX order,
                 left undone: a Gemm/MatMul with constant weights reads the hlsfuse
                 elements as they are and permutes its weight rows (``columns``) instead;
                 any other reader gets it converted to the ONNX order

Naming: the node that computes ONNX tensor ``t`` is named ``t`` (so precision maps and
outputs use the model's names); helper nodes are ``t.<part>``; weights keep their
initializer names. A graph output is always produced in the ONNX layout by a node named
after it (a final transpose when the computed layout differs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...types import DType, from_float, to_float
from ..builder import GraphBuilder
from . import layout
from .layout import Order
from .model import Model, Unsupported

__all__ = ["Value", "Deferred", "Context"]


@dataclass(frozen=True)
class Value:
    """ONNX tensor of ``shape`` held by hlsfuse tensor ``hls`` in layout ``order``."""

    hls: str
    shape: tuple[int, ...]
    order: Order
    affine: object = None  # scaled.Affine: the real value is an affine of what ``hls`` holds (None: it)
    # an attention mask (masks.py): bool of ``shape``, True where a constant <= -1e4 was added (None: no mask)
    mask: np.ndarray | None = field(default=None, compare=False)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, eq=False)
class Deferred:
    """A flatten of ``source`` to ``shape`` = [N, K], not yet done (see the module note)."""

    shape: tuple[int, int]
    source: Value
    columns: np.ndarray


class Context:
    """Conversion state shared by the op converters (one per ``convert`` call)."""

    def __init__(self, model: Model, precision):
        self.model = model
        self.opset = model.opset
        self.precision = precision
        self.builder = GraphBuilder(model.name, dtype=precision.default)
        self.values: dict[str, Value | Deferred | np.ndarray] = dict(model.initializers)
        self.outputs = {o.name for o in model.outputs}
        self.readers: dict[str, int] = {}
        for node in model.nodes:
            for name in node.inputs:
                self.readers[name] = self.readers.get(name, 0) + 1
        self._reserved = {i.name for i in model.inputs} | {o for n in model.nodes for o in n.outputs}
        self._reserved |= set(model.initializers)
        self._used: set[str] = set()
        self._layouts: dict[tuple[str, Order, Order], str] = {}  # (hls, from, to) -> converted hls
        self._flat: dict[str, str] = {}  # hls name -> its flattening for a Deferred
        self._weights: dict[str, np.ndarray] = {}
        # types a quantizer gives constants (by ONNX name, or the hint of a helper constant), held
        # exactly; and the quantizers of computed tensors awaiting their DequantizeLinear (quant.py)
        self.exact_types: dict[str, DType] = {}
        self.pending: dict[str, object] = {}
        # constants quantized with float scales: their scale per element (ops_scaled.py reads their integers)
        self.grids: dict[str, np.ndarray] = {}

    # ---------------------------------------------------------------- names

    def fresh(self, base: str) -> str:
        """An unused name starting with ``base`` that no ONNX tensor will claim."""
        name, n = base, 1
        while name in self._used or name in self._reserved:
            name, n = f"{base}.{n}", n + 1
        return name

    def _claim(self, name: str) -> str:
        if name in self._used:
            name = self.fresh(name)
        self._used.add(name)
        return name

    def final_name(self, tensor: str, order: Order) -> str:
        """Name of the node computing ONNX tensor ``tensor`` in layout ``order``."""
        if tensor in self.outputs and not layout.is_plain(order):
            # the output itself is made in ONNX layout later, under the output's name
            suffix = "nhwc" if order == layout.channel_last(4) else "hls"
            return self._claim(self.fresh(f"{tensor}.{suffix}"))
        return self._claim(tensor)

    # -------------------------------------------------------------- reading

    def const(self, name: str) -> np.ndarray | None:
        entry = self.values.get(name) if name else None
        return entry if isinstance(entry, np.ndarray) else None

    def consts(self, node) -> list[np.ndarray | None]:
        return [self.const(n) for n in node.inputs]

    def entry(self, name: str) -> Value | Deferred | np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise Unsupported(f"input '{name}' is not computed before this node (the graph is not sorted)") from None

    def is_read(self, name: str) -> bool:
        return bool(name) and (self.readers.get(name, 0) > 0 or name in self.outputs)

    def shape(self, name: str) -> tuple[int, ...]:
        entry = self.entry(name)
        return tuple(entry.shape)

    def value(self, name: str) -> Value:
        """ONNX tensor ``name`` as an hlsfuse tensor (constants become weight tensors)."""
        entry = self.entry(name)
        if isinstance(entry, np.ndarray):
            data = np.asarray(entry, dtype=np.float64)
            return Value(self.weight(data, name), data.shape, layout.plain(data.ndim))
        if isinstance(entry, Deferred):
            hls = self.in_order(entry.source, layout.plain(entry.source.rank))
            name_out = self._claim(name)
            self.builder.reshape(hls, entry.shape, name=name_out, dtype=None)
            value = Value(name_out, entry.shape, layout.plain(2), entry.source.affine)
            self.values[name] = value
            return value
        return entry

    def operand(self, name: str) -> Value | np.ndarray:
        """A constant as its array, anything else as a ``Value``."""
        entry = self.entry(name)
        return entry if isinstance(entry, np.ndarray) else self.value(name)

    def matrix(self, name: str) -> tuple[str, np.ndarray | None]:
        """A 2-D tensor for Gemm/MatMul: (hlsfuse name, ONNX column of each column or None)."""
        entry = self.entry(name)
        if isinstance(entry, Deferred):
            source = entry.source.hls
            if source not in self._flat:
                hls = self._claim(self.fresh(f"{name}.flat"))
                self._flat[source] = self.builder.reshape(source, entry.shape, name=hls, dtype=None)
            return self._flat[source], entry.columns
        return self.plain(self.value(name)), None

    # ------------------------------------------------------------- layouts

    def in_order(self, value: Value, order: Order, final: str | None = None) -> str:
        """hlsfuse name of ``value`` in layout ``order``, converting it (cached) if needed.

        With ``final`` the last node is named ``final`` (an output), even when no
        conversion is needed (then it is an identity reshape).
        """
        key = (value.hls, value.order, order)
        if final is None and (value.order == order or key in self._layouts):
            return value.hls if value.order == order else self._layouts[key]
        plan = layout.steps(value.shape, value.order, order)
        if not plan:
            plan = [("reshape", layout.hls_shape(value.shape, order))]
        current = value.hls
        for i, (kind, arg) in enumerate(plan):
            last = i == len(plan) - 1
            name = self._claim(final) if last and final else self._claim(self.fresh(f"{value.hls}.{kind[0]}"))
            if kind == "reshape":
                current = self.builder.reshape(current, arg, name=name, dtype=None)
            else:
                current = self.builder.transpose(current, axes=list(arg), name=name, dtype=None)
        if final is None:
            self._layouts[key] = current
        return current

    def plain(self, value: Value) -> str:
        return self.in_order(value, layout.plain(value.rank))

    # -------------------------------------------------------------- writing

    def weight(self, data: np.ndarray, hint: str, dtype: DType | None = None) -> str:
        """A constant tensor (real values), named after ``hint`` and typed by ``dtype``, else by the
        quantizer that made it (``exact_types``), else by the precision.

        The same data under the same hint is added once; other data gets ``hint.1``, ...
        """
        data = np.asarray(data, dtype=np.float64)
        name, n = hint, 1
        while True:
            existing = self._weights.get(name)
            if existing is not None:
                if existing.shape == data.shape and np.array_equal(existing, data):
                    return name
            elif name not in self._used and (name not in self._reserved or self.const(name) is not None):
                break
            name, n = f"{hint}.{n}", n + 1
        self._used.add(name)
        self._weights[name] = data
        return self.builder.constant(name, data, dtype=dtype or self._weight_type(data, hint, name))

    def _weight_type(self, data: np.ndarray, hint: str, name: str) -> DType:
        """A quantizer's type when it holds ``data`` exactly (a float32 graph keeps float32), else the
        precision's."""
        exact = self.exact_types.get(hint)
        held = exact is not None and not self.precision.is_float
        if held and np.array_equal(to_float(from_float(data, exact), exact), data):
            return exact
        return self.precision.weight(name)

    def node(self, tensor: str, op: str, inputs, order: Order, part: str | None = None, dtype: DType | None = None,
             **attrs) -> Value:
        """Add an hlsfuse node for ONNX tensor ``tensor``, whose result is held in ``order``.

        Without ``part`` it is the node computing ``tensor`` (recorded as its value); with
        ``part`` it is a helper node ``<tensor>.<part>`` of that conversion. ``dtype`` (a
        quantizer's type) wins over the precision.
        """
        name = self.final_name(tensor, order) if part is None else self._claim(self.fresh(f"{tensor}.{part}"))
        dtype = dtype or self.precision.node(name, tensor, op)
        hls = self.builder.op(op, *inputs, name=name, dtype=dtype, **attrs)
        value = Value(hls, self.onnx_shape(hls, order), order)
        if part is None:
            self.values[tensor] = value
        return value

    def onnx_shape(self, hls: str, order: Order) -> tuple[int, ...]:
        """The ONNX shape of hlsfuse tensor ``hls`` held in ``order``."""
        dims = self.builder.type_of(hls).shape
        shape = [0] * sum(a is not None for a in order)
        for d, a in zip(dims, order):
            if a is not None:
                shape[a] = d
        return tuple(shape)

    def expanded(self, value: Value, rank: int) -> Value:
        """``value`` with leading size-1 axes up to ``rank`` (ONNX broadcasting), in ONNX order."""
        if value.rank == rank:
            return value
        shape = (1,) * (rank - value.rank) + value.shape
        name = self._claim(self.fresh(f"{value.hls}.x"))
        hls = self.builder.reshape(self.plain(value), shape, name=name, dtype=None)
        return Value(hls, shape, layout.plain(rank))

    def define(self, tensor: str, entry: Value | Deferred | np.ndarray) -> None:
        self.values[tensor] = entry

    def graph_input(self, name: str, shape: tuple[int, ...], order: Order, dtype: DType | None = None) -> Value:
        dtype = dtype or self.precision.input(name)
        hls = self.builder.input(self._claim(name), layout.hls_shape(shape, order), dtype=dtype)
        value = Value(hls, tuple(shape), order)
        self.values[name] = value
        return value

    def placeholder(self, tensor: str, shape: tuple[int, ...]) -> None:
        """Stand-in for the output of a node that failed, so later nodes are still checked."""
        hls = self.builder.input(self._claim(self.fresh(f"{tensor}.unconverted")), shape, dtype=self.precision.default)
        self.values[tensor] = Value(hls, tuple(shape), layout.plain(len(shape)))

    def output(self, tensor: str) -> None:
        """Make ONNX graph output ``tensor`` an hlsfuse output of that name, in ONNX layout."""
        entry = self.entry(tensor)
        if isinstance(entry, np.ndarray):
            raise Unsupported(f"graph output '{tensor}' is a constant; hlsfuse outputs must be computed")
        value = self.value(tensor)
        if value.mask is not None:
            raise Unsupported("it holds an attention mask: an additive mask (entries <= -1e4) is supported only "
                              "right before a Softmax over the last axis")
        if value.hls == tensor and layout.is_plain(value.order):
            self.builder.output(tensor)
            return
        if tensor in self._used:
            raise Unsupported(f"graph output '{tensor}' is also a graph input; hlsfuse outputs must be computed")
        self.builder.output(self.in_order(value, layout.plain(value.rank), final=tensor))
