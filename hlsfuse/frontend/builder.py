"""``GraphBuilder``: write a graph in Python, one method call per op.

    b = GraphBuilder("mlp", dtype="fixed<16,6>")
    x = b.input("x", [1, 64])
    w = b.constant("w", np.random.default_rng(0).normal(size=(32, 64)) * 0.1)
    y = b.relu(b.dense(x, w))
    b.output(y)
    graph = b.build()

Every method checks its node at once (shape, attributes, types) against the
tensors built so far, so an error points at the call that caused it. Methods
return the tensor's name, which later calls take as input. Attributes are
passed as keyword arguments and checked by the op registry (docs/ops.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import HlsfuseError, OpError
from ..ir import Constant, Graph, Input, Node, Scaling, TensorType, infer
from ..ops import OPS, Pattern
from ..types import DType, from_float, parse_dtype

__all__ = ["GraphBuilder"]


def _dtype(value: str | DType | None) -> DType | None:
    if value is None or not isinstance(value, str):
        return value
    return parse_dtype(value)


def _pattern(value: str | Pattern, field: str) -> Pattern:
    return value if isinstance(value, Pattern) else Pattern.parse(value, f"field '{field}'")


class GraphBuilder:
    """Builds a ``Graph``; ``dtype`` is the default type of inputs and constants."""

    def __init__(self, name: str = "graph", dtype: str | DType = "fixed<16,6>"):
        self.name = name
        self.default_dtype = _dtype(dtype)
        self._inputs: list[Input] = []
        self._constants: list[Constant] = []
        self._nodes: list[Node] = []
        self._outputs: list[str] = []
        self._types: dict[str, TensorType] = {}
        self._counts: dict[str, int] = {}
        self.scales: dict[str, Scaling] = {}  # graph inputs and outputs whose values are scaled (ir.Scaling)

    # ---------------------------------------------------------------- tensors

    def _claim(self, name: str | None, stem: str) -> str:
        if name is None:
            while True:
                n = self._counts.get(stem, 0)
                self._counts[stem] = n + 1
                name = f"{stem}{n}"
                if name not in self._types:
                    break
        if not isinstance(name, str) or not name:
            raise HlsfuseError(f"tensor name must be a non-empty string, not {name!r}")
        if name in self._types:
            raise HlsfuseError(f"name '{name}' is already used in graph '{self.name}'")
        return name

    def input(self, name: str, shape, dtype: str | DType | None = None) -> str:
        """Declare a graph input of ``shape`` (a stream port in hardware)."""
        name = self._claim(name, "input")
        shape = tuple(int(d) for d in shape)
        if not all(d >= 1 for d in shape):
            raise HlsfuseError(f"input '{name}': shape must be positive integers, not {list(shape)}")
        t = TensorType(shape, _dtype(dtype) or self.default_dtype)
        self._inputs.append(Input(name, t))
        self._types[name] = t
        return name

    def source_axes(self, name: str, axes) -> None:
        """Record how a source model's input maps onto the declared input ``name`` (``ir.Input.source_axes``)."""
        for i, port in enumerate(self._inputs):
            if port.name == name:
                self._inputs[i] = Input(port.name, port.type, tuple(axes))
                return
        raise HlsfuseError(f"'{name}' is not a declared input of graph '{self.name}'")

    def constant(self, name: str | None, data, dtype: str | DType | None = None) -> str:
        """Declare a weight tensor from real values, quantized to ``dtype``."""
        name = self._claim(name, "const")
        values = np.asarray(data, dtype=np.float64)
        t = TensorType(tuple(values.shape), _dtype(dtype) or self.default_dtype)
        try:
            raw = values.astype(np.float32) if t.dtype.is_float else from_float(values, t.dtype)
        except HlsfuseError as exc:
            raise HlsfuseError(f"constant '{name}': {exc}") from None
        self._constants.append(Constant(name, t, raw))
        self._types[name] = t
        return name

    def op(
        self,
        op: str,
        *inputs: str,
        name: str | None = None,
        dtype: str | DType | None = None,
        pattern: str | Pattern | None = None,
        edge_patterns=None,
        shape=None,
        **attrs: Any,
    ) -> str:
        """Add a node of any registered op; the per-op methods below call this."""
        if op not in OPS:
            raise HlsfuseError(f"unknown op {op!r}")
        name = self._claim(name, op)
        for i, src in enumerate(inputs):
            if src not in self._types:
                raise HlsfuseError(f"node '{name}' ({op}): input {i} '{src}' names nothing in graph '{self.name}'")
        try:
            node = Node(
                name=name,
                op=op,
                inputs=tuple(inputs),
                attrs=attrs,
                dtype=_dtype(dtype),
                pattern=None if pattern is None else _pattern(pattern, "pattern"),
                edge_patterns=None
                if edge_patterns is None
                else tuple(_pattern(e, "edge_patterns") for e in edge_patterns),
                shape=None if shape is None else tuple(int(d) for d in shape),
            )
            sig, _ = infer(node, self._types)
        except OpError as exc:
            raise HlsfuseError(f"node '{name}' ({op}): {exc}") from None
        except HlsfuseError as exc:
            raise HlsfuseError(f"node '{name}' ({op}): {exc}") from None
        self._nodes.append(node)
        self._types[name] = TensorType(sig.out_shape, sig.out_dtype)
        return name

    def output(self, *names: str) -> None:
        """Mark tensors as graph outputs (stream ports in hardware)."""
        for n in names:
            if n not in self._types:
                raise HlsfuseError(f"output '{n}' names nothing in graph '{self.name}'")
            self._outputs.append(n)

    def type_of(self, name: str) -> TensorType:
        return self._types[name]

    def build(self) -> Graph:
        return Graph(self.name, tuple(self._inputs), tuple(self._constants), tuple(self._nodes), tuple(self._outputs),
                     self.scales)

    # ---------------------------------------------------------- elementwise
    # Each method adds one node; ``name`` and ``dtype`` (the output type) are optional.

    def add(self, a, b, **kw):
        return self.op("add", a, b, **kw)

    def sub(self, a, b, **kw):
        return self.op("sub", a, b, **kw)

    def mul(self, a, b, **kw):
        return self.op("mul", a, b, **kw)

    def maximum(self, a, b, **kw):
        return self.op("maximum", a, b, **kw)

    def minimum(self, a, b, **kw):
        return self.op("minimum", a, b, **kw)

    def relu(self, x, **kw):
        return self.op("relu", x, **kw)

    def leaky_relu(self, x, **kw):
        """attrs: alpha=0.01"""
        return self.op("leaky_relu", x, **kw)

    def clip(self, x, **kw):
        """attrs: min, max"""
        return self.op("clip", x, **kw)

    def neg(self, x, **kw):
        return self.op("neg", x, **kw)

    def abs(self, x, **kw):
        return self.op("abs", x, **kw)

    def sigmoid(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("sigmoid", x, **kw)

    def tanh(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("tanh", x, **kw)

    def exp(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("exp", x, **kw)

    def elu(self, x, **kw):
        """attrs: alpha=1.0, table_bits=10"""
        return self.op("elu", x, **kw)

    def selu(self, x, **kw):
        """attrs: alpha=1.6732632, gamma=1.050701, table_bits=10"""
        return self.op("selu", x, **kw)

    def softplus(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("softplus", x, **kw)

    def softsign(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("softsign", x, **kw)

    def hard_sigmoid(self, x, **kw):
        """attrs: alpha=0.2, beta=0.5, table_bits=10"""
        return self.op("hard_sigmoid", x, **kw)

    def hard_swish(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("hard_swish", x, **kw)

    def erf(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("erf", x, **kw)

    def gelu(self, x, **kw):
        """attrs: approximate='none' ('tanh'), table_bits=10"""
        return self.op("gelu", x, **kw)

    def silu(self, x, **kw):
        """attrs: table_bits=10"""
        return self.op("silu", x, **kw)

    def cast(self, x, dtype, **kw):
        return self.op("cast", x, dtype=dtype, **kw)

    def bias_add(self, x, b, **kw):
        return self.op("bias_add", x, b, **kw)

    def scale(self, x, s, **kw):
        return self.op("scale", x, s, **kw)

    def threshold(self, x, t, **kw):
        """``t`` [C, n] or [1, n]: the count #{i : x >= t[c, i]}"""
        return self.op("threshold", x, t, **kw)

    # ------------------------------------------------------------ injective

    def reshape(self, x, shape, **kw):
        """``shape`` may hold one -1, inferred from the size"""
        return self.op("reshape", x, newshape=list(shape), **kw)

    def flatten(self, x, **kw):
        """attrs: axis=1"""
        return self.op("flatten", x, **kw)

    def transpose(self, x, **kw):
        """attrs: axes (default: reversed)"""
        return self.op("transpose", x, **kw)

    def concat(self, *xs, **kw):
        """attrs: axis=-1"""
        return self.op("concat", *xs, **kw)

    def slice(self, x, **kw):
        """attrs: begin, end, step"""
        return self.op("slice", x, **kw)

    def pad(self, x, **kw):
        """attrs: pads [before..., after...] (ONNX order), value=0.0, mode="constant" (or "reflect", "edge")"""
        return self.op("pad", x, **kw)

    def upsample2d(self, x, **kw):
        """attrs: factors [sh, sw], mode="nearest" (or "zeros": zero insertion)"""
        return self.op("upsample2d", x, **kw)

    def squeeze(self, x, **kw):
        """attrs: axes (default: every size-1 axis)"""
        return self.op("squeeze", x, **kw)

    def expand_dims(self, x, **kw):
        """attrs: axis"""
        return self.op("expand_dims", x, **kw)

    # ----------------------------------------------------------- reductions

    def sum(self, x, **kw):
        """attrs: axes (default: all), keepdims=False"""
        return self.op("sum", x, **kw)

    def mean(self, x, **kw):
        """attrs: axes (default: all), keepdims=False"""
        return self.op("mean", x, **kw)

    def max(self, x, **kw):
        """attrs: axes (default: all), keepdims=False"""
        return self.op("max", x, **kw)

    def global_avg_pool(self, x, **kw):
        return self.op("global_avg_pool", x, **kw)

    # ------------------------------------------------ out-elementwise-fusable

    def conv2d(self, x, w, **kw):
        """attrs: strides=[1,1], padding=[0,0,0,0] (top, left, bottom, right), dilation=[1,1], groups=1"""
        return self.op("conv2d", x, w, **kw)

    def dense(self, x, w, **kw):
        return self.op("dense", x, w, **kw)

    def matmul(self, a, b, **kw):
        return self.op("matmul", a, b, **kw)

    def max_pool2d(self, x, **kw):
        """attrs: pool_size, strides (default: pool_size), padding=[0,0,0,0]"""
        return self.op("max_pool2d", x, **kw)

    def avg_pool2d(self, x, **kw):
        """attrs: pool_size, strides (default: pool_size), padding=[0,0,0,0], count_include_pad=False"""
        return self.op("avg_pool2d", x, **kw)

    # --------------------------------------------------------------- opaque

    def softmax(self, x, mask=None, **kw):
        """attrs: table_bits=10, exp_dtype, recip_dtype; ``mask``: a ufixed<1,1> constant [R, N] whose 1s leave
        positions out (a ``masked_softmax`` node)"""
        if mask is not None:
            return self.op("masked_softmax", x, mask, **kw)
        return self.op("softmax", x, **kw)

    def argmax(self, x, **kw):
        """attrs: axis=-1, keepdims=False"""
        return self.op("argmax", x, **kw)

    def topk(self, x, **kw):
        """attrs: k, ret="values" | "indices" """
        return self.op("topk", x, **kw)

    def layer_norm(self, x, gamma, beta, **kw):
        """attrs: epsilon=1e-5, norm_dtype=fixed<24,8,RND,SAT>; over the last axis, gamma and beta [N]"""
        return self.op("layer_norm", x, gamma, beta, **kw)

    def rms_norm(self, x, gamma, **kw):
        """attrs: epsilon=1e-5, norm_dtype=fixed<24,8,RND,SAT>; over the last axis, gamma [N]"""
        return self.op("rms_norm", x, gamma, **kw)

    def custom(self, *inputs, pattern, shape, dtype, edge_patterns=None, **kw):
        """A user-declared op for fusion studies (cannot be run or compiled)."""
        return self.op("custom", *inputs, pattern=pattern, shape=shape, dtype=dtype, edge_patterns=edge_patterns, **kw)
