"""The graph IR: immutable tensors, nodes and graphs, valid by construction.

A ``Graph`` holds graph inputs, constants (weights), op nodes and the names of
its outputs. Constructing one runs ``verify``: it sorts the nodes
topologically (the order in a file is free), resolves each node's attributes,
shape, output type and pattern kind from the op registry, and rejects anything
wrong with a one-line message naming the node and field. Every later stage can
therefore trust ``graph.types``, ``graph.sigs`` and ``graph.patterns``, and
``graph.input_positions``: the edges as integers, for the passes that walk them.

Values of constants are stored as the reference interpreter holds them: raw
int64 integers for fixed-point and integer types, float32 for float32.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from . import collector
from .attrs import attrs_key, canonical
from .errors import HlsfuseError, OpError
from .ops import OPS, Pattern, Sig, get_op
from .types import DType, to_float

__all__ = ["TensorType", "Input", "Constant", "Node", "Scaling", "Graph", "verify", "MAX_ELEMENTS", "check_size"]

MAX_ELEMENTS = 2**31 - 1
"""The most elements a tensor may have: a stage's loop counts them in a C++ int (and the reference holds
each as an int64 or float32 array)."""


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: DType

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def bits(self) -> int:
        return self.size * self.dtype.bits

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Input:
    """A graph input: a stream port. ``source_axes`` is set by a frontend whose model holds the input
    in another layout (the ONNX importer holds an NCHW input as NHWC): per axis, the axis of the
    model's input it holds, None for a size-1 axis the import inserted; None when the layouts are the
    same. It converts that model's arrays for the port (``onnx.to_graph_layout``) and back; the
    graph's computation never reads it. It lives here, with the port, because a graph saved as JSON
    (a compiled design's graph.json) must still know how its model's inputs map onto its ports."""

    name: str
    type: TensorType
    source_axes: tuple[int | None, ...] | None = None

    def __post_init__(self):
        if self.source_axes is None:
            return
        axes, shape = tuple(self.source_axes), self.type.shape
        kept = sorted(a for a in axes if a is not None)
        if (len(axes) != len(shape) or kept != list(range(len(kept)))
                or any(a is None and d != 1 for a, d in zip(axes, shape))):
            raise HlsfuseError(
                f"input '{self.name}': source_axes {list(axes)} must give, per axis of the shape {list(shape)}, "
                f"a distinct axis 0..k-1 of the source model's input, or null for an axis of size 1"
            )
        object.__setattr__(self, "source_axes", None if axes == tuple(range(len(axes))) else axes)


@dataclass(frozen=True, eq=False)
class Constant:
    """A weight tensor. ``data`` is raw (int64 or float32) and read-only; ``init`` keeps
    the generator spec it came from (JSON ``init``) so that saving writes it back."""

    name: str
    type: TensorType
    data: np.ndarray
    init: Mapping[str, Any] | None = None

    def __post_init__(self):
        data = np.array(self.data, dtype=np.float32 if self.type.dtype.is_float else np.int64)
        if data.shape != self.type.shape:
            raise HlsfuseError(
                f"constant '{self.name}': data has shape {list(data.shape)}, expected {list(self.type.shape)}"
            )
        data.flags.writeable = False
        object.__setattr__(self, "data", data)
        if self.init is not None:
            object.__setattr__(self, "init", MappingProxyType(dict(self.init)))

    @property
    def values(self) -> np.ndarray:
        """Real values (float64)."""
        return to_float(self.data, self.type.dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Constant):
            return NotImplemented
        return (
            self.name == other.name
            and self.type == other.type
            and dict(self.init or {}) == dict(other.init or {})
            and np.array_equal(self.data, other.data)
        )

    __hash__ = None  # type: ignore[assignment]


_set = object.__setattr__
_NO_ATTRS: Mapping[str, Any] = MappingProxyType({})  # shared by the nodes without attributes


@dataclass(frozen=True, init=False)
class Node:
    """One op application. ``attrs`` holds the attributes as written (defaults are
    resolved in ``Graph.sigs``); ``dtype`` is the declared output type, if any;
    ``pattern`` overrides the op's pattern kind; ``shape`` and ``edge_patterns``
    serve ``custom`` nodes."""

    name: str
    op: str
    inputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    dtype: DType | None = None
    pattern: Pattern | None = None
    edge_patterns: tuple[Pattern, ...] | None = None
    shape: tuple[int, ...] | None = None

    def __init__(self, name: str, op: str, inputs: Iterable[str], attrs: Mapping[str, Any] | None = None,
                 dtype: DType | None = None, pattern: Pattern | None = None,
                 edge_patterns: Iterable[Pattern] | None = None, shape: Iterable[int] | None = None):
        # The fields are filled in one step: a frozen dataclass's own __init__ sets each with a call
        # of object.__setattr__, which made a node more than twice as slow to build (a large graph
        # builds tens of thousands). Assigning a field afterwards still raises FrozenInstanceError.
        _set(self, "__dict__", {
            "name": name,
            "op": op,
            "inputs": tuple(inputs),
            "attrs": MappingProxyType({k: canonical(v) for k, v in attrs.items()}) if attrs else _NO_ATTRS,
            "dtype": dtype,
            "pattern": pattern,
            "edge_patterns": None if edge_patterns is None else tuple(edge_patterns),
            "shape": None if shape is None else tuple(shape),
        })

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return self._key() == other._key()

    def _key(self) -> tuple:
        return (
            self.name,
            self.op,
            self.inputs,
            dict(self.attrs),
            self.dtype,
            self.pattern,
            self.edge_patterns,
            self.shape,
        )

    __hash__ = None  # type: ignore[assignment]

    def where(self) -> str:
        return f"node '{self.name}' ({self.op})"


@dataclass(frozen=True)
class Scaling:
    """The real value of a graph input's or output's element: clamp(scale * value + offset, lo, hi), with one
    entry per tensor or one per position of axis ``axis`` (negative, from the end of the shape); ``lo``/``hi``
    NaN where unbounded. An import of a quantized model whose scales are not powers of two computes on the
    integer levels and leaves the scales to the host (frontend/onnx/scaled.py)."""

    scale: tuple[float, ...]
    offset: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    axis: int | None = None

    def __post_init__(self):
        sizes = {len(self.scale), len(self.offset), len(self.lo), len(self.hi)}
        if len(sizes) != 1 or (self.axis is None) != (sizes == {1}):
            raise HlsfuseError("scaling: scale, offset, lo and hi must have one entry each, or one per position of "
                               "an axis given as 'axis'")

    def check(self, name: str, shape: tuple[int, ...]) -> None:
        if self.axis is not None and not (-len(shape) <= self.axis < 0 and shape[self.axis] == len(self.scale)):
            raise HlsfuseError(f"scaling of '{name}': {len(self.scale)} channels on axis {self.axis} do not match "
                               f"its shape {list(shape)}")

    def _along(self, values: tuple[float, ...], rank: int) -> np.ndarray:
        data = np.asarray(values, dtype=np.float64)
        if self.axis is None:
            return data.reshape(())
        shape = [1] * rank
        shape[self.axis] = data.size
        return data.reshape(shape)

    def to_real(self, values) -> np.ndarray:
        """Real values (float64) of the tensor's values."""
        values = np.asarray(values, dtype=np.float64)
        real = values * self._along(self.scale, values.ndim) + self._along(self.offset, values.ndim)
        lo, hi = self._along(self.lo, values.ndim), self._along(self.hi, values.ndim)
        real = np.where(np.isnan(lo), real, np.maximum(real, np.nan_to_num(lo)))
        return np.where(np.isnan(hi), real, np.minimum(real, np.nan_to_num(hi)))

    def from_real(self, real) -> np.ndarray:
        """The values (before their type rounds them) whose real values are ``real``: (real - offset) / scale."""
        real = np.asarray(real, dtype=np.float64)
        return (real - self._along(self.offset, real.ndim)) / self._along(self.scale, real.ndim)


@dataclass(frozen=True, eq=False)
class Graph:
    """A verified dataflow graph. Nodes are kept in topological order. ``scales``: the graph inputs and
    outputs whose values are not the real values of the model the graph was imported from (``Scaling``)."""

    name: str
    inputs: tuple[Input, ...]
    constants: tuple[Constant, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[str, ...]
    scales: Mapping[str, Scaling] = field(default_factory=dict)
    types: Mapping[str, TensorType] = field(init=False, repr=False)
    sigs: Mapping[str, Sig] = field(init=False, repr=False)
    patterns: Mapping[str, Pattern] = field(init=False, repr=False)
    input_positions: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    """Per node, the position in ``nodes`` of each of its inputs (-1 for a graph input or constant)."""

    def __post_init__(self):
        for name in ("inputs", "constants", "nodes", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "scales", MappingProxyType(dict(self.scales)))
        with collector.paused():  # verifying creates no reference cycles
            nodes, types, sigs, patterns, input_positions = _verify(self)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "types", MappingProxyType(types))
        object.__setattr__(self, "sigs", MappingProxyType(sigs))
        object.__setattr__(self, "patterns", MappingProxyType(patterns))
        object.__setattr__(self, "input_positions", input_positions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return (self.name, self.inputs, self.constants, self.nodes, self.outputs, dict(self.scales)) == (
            other.name,
            other.inputs,
            other.constants,
            other.nodes,
            other.outputs,
            dict(other.scales),
        )

    __hash__ = None  # type: ignore[assignment]

    @cached_property
    def node_map(self) -> Mapping[str, Node]:
        return MappingProxyType({n.name: n for n in self.nodes})

    @cached_property
    def constant_map(self) -> Mapping[str, Constant]:
        return MappingProxyType({c.name: c for c in self.constants})

    @cached_property
    def consumers(self) -> Mapping[str, tuple[str, ...]]:
        """For every tensor, the nodes that read it (once per node, in node order)."""
        users: dict[str, list[str]] = {name: [] for name in self.types}
        for node in self.nodes:
            for src in dict.fromkeys(node.inputs):
                users[src].append(node.name)
        return MappingProxyType({k: tuple(v) for k, v in users.items()})

    def node(self, name: str) -> Node:
        try:
            return self.node_map[name]
        except KeyError:
            raise HlsfuseError(f"graph '{self.name}' has no node '{name}'") from None


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------


def verify(graph: Graph) -> tuple[tuple[Node, ...], dict[str, TensorType], dict[str, Sig], dict[str, Pattern]]:
    """Check a graph and derive its facts; returns (sorted nodes, types, sigs, patterns).

    Raises ``HlsfuseError`` with a one-line message naming the node and field for:
    duplicate names, unknown ops, inputs that name nothing, cycles, wrong arity, bad
    attributes, shape mismatches, unsupported dtypes and outputs that name nothing.
    """
    return _verify(graph)[:4]


def _verify(graph: Graph) -> tuple[tuple[Node, ...], dict[str, TensorType], dict[str, Sig], dict[str, Pattern],
                                   tuple[tuple[int, ...], ...]]:
    """``verify``, and the positions of each node's inputs (``Graph.input_positions``), which it finds
    on the way."""
    types: dict[str, TensorType] = {}
    kinds: dict[str, str] = {}

    def declare(name: str, kind: str) -> None:
        if not isinstance(name, str) or not name:
            raise HlsfuseError(f"{kind} name must be a non-empty string, not {name!r}")
        if name in kinds:
            article = "an" if kinds[name][0] in "aeiou" else "a"
            raise HlsfuseError(f"{kind} '{name}': name already used by {article} {kinds[name]}")
        kinds[name] = kind

    for name, scaling in graph.scales.items():
        if not isinstance(scaling, Scaling):
            raise HlsfuseError(f"scaling of '{name}': expected a Scaling, not {type(scaling).__name__}")
    for inp in graph.inputs:
        declare(inp.name, "input")
        _check_shape(inp.type.shape, f"input '{inp.name}'")
        types[inp.name] = inp.type
    for const in graph.constants:
        declare(const.name, "constant")
        _check_shape(const.type.shape, f"constant '{const.name}'")
        types[const.name] = const.type
    for node in graph.nodes:
        if type(node.name) is str and node.name and node.name not in kinds:
            kinds[node.name] = "node"  # the common case, without a call
        else:
            declare(node.name, "node")

    # every input names something, and its position; a node that reads a node not yet seen (a later
    # one, or itself) means the file is not in topological order (most are: every saved graph is),
    # and only then does _topological_order sort the nodes
    position = dict.fromkeys(types, -1)  # graph inputs and constants, then each node once seen
    input_positions: list[tuple[int, ...]] = []
    in_order = True
    for k, node in enumerate(graph.nodes):
        if node.op not in OPS:
            raise HlsfuseError(f"node '{node.name}': unknown op {node.op!r}{_suggest(node.op)}")
        try:
            input_positions.append(tuple(map(position.__getitem__, node.inputs)))
        except KeyError:
            for i, src in enumerate(node.inputs):
                if src not in kinds:
                    raise HlsfuseError(f"{node.where()}: input {i} '{src}' names nothing "
                                       "(no input, constant or node of that name)") from None
            in_order = False
        position[node.name] = k

    if in_order:
        order = list(graph.nodes)
    else:
        order = _topological_order(graph.nodes)
        position.update((node.name, k) for k, node in enumerate(order))
        input_positions = [tuple(map(position.__getitem__, node.inputs)) for node in order]
    sigs: dict[str, Sig] = {}
    patterns: dict[str, Pattern] = {}
    for t in _infer_all(order, types, sigs, patterns):
        if _differs_in_vitis(t.dtype):
            name = next(n for n, u in types.items() if u.dtype == t.dtype)
            where = graph.node(name).where() if kinds[name] == "node" else f"{kinds[name]} '{name}'"
            raise HlsfuseError(f"{where}: type {t.dtype} holds only 0 (SAT_SYM clips a 1-bit signed value to [0, 0]), "
                               "but AMD's ap_fixed, which Vitis HLS uses, gives -1 for a negative value; use SAT, or "
                               "a width of 2 or more")

    _check_constants(graph, order, sigs)

    if not graph.outputs:
        raise HlsfuseError(f"graph '{graph.name}' has no outputs")
    seen_outputs = set()
    for out in graph.outputs:
        if out not in kinds:
            raise HlsfuseError(f"output '{out}' names nothing (no node of that name)")
        if kinds[out] != "node":
            raise HlsfuseError(f"output '{out}' is a graph {kinds[out]}; outputs must be nodes")
        if out in seen_outputs:
            raise HlsfuseError(f"output '{out}' is listed twice")
        seen_outputs.add(out)
    ports = {i.name for i in graph.inputs} | seen_outputs
    for name, scaling in graph.scales.items():
        if name not in ports:
            raise HlsfuseError(f"scaling of '{name}': names no graph input or output")
        scaling.check(name, types[name].shape)
    return tuple(order), types, sigs, patterns, tuple(input_positions)


def _check_constants(graph: Graph, order, sigs: dict[str, Sig]) -> None:
    """The value rules of ops that have them (``OpDef.check_constants``), on their inputs that are constants."""
    constants = None
    for node in order:
        op = OPS[node.op]
        if op.check_constants is None:
            continue
        constants = graph.constant_map if constants is None else constants
        data = {name: constants[src].data for name, src in zip(op.inputs, node.inputs) if src in constants}
        try:
            op.check_constants(sigs[node.name], data)
        except HlsfuseError as exc:
            raise HlsfuseError(f"{node.where()}: {exc}") from None


def _suggest(op: object) -> str:
    close = difflib.get_close_matches(str(op), OPS, n=3, cutoff=0.75)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else " (see docs/ops.md for the list)"


def _check_shape(shape: tuple[int, ...], where: str) -> None:
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1 for d in shape):
        raise HlsfuseError(f"{where}: shape must be a list of positive integers, not {list(shape)}")
    check_size(tuple(shape), where)


def check_size(shape: tuple[int, ...], where: str) -> None:
    """Refuse a tensor of more than MAX_ELEMENTS elements; ``where`` names it (``input 'x'``)."""
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise HlsfuseError(f"{where}: shape {list(shape)} has {size} elements, more than the {MAX_ELEMENTS} "
                           "(2^31 - 1) a tensor may have")


def _topological_order(nodes: tuple[Node, ...]) -> list[Node]:
    """Depth-first post-order over nodes in file order (so a sorted file keeps its order).

    Iterative, so that 50,000-node chains need no deep recursion; reports a cycle by
    the path that closes it.
    """
    by_name = {n.name: n for n in nodes}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    order: list[Node] = []
    for root in nodes:
        if root.name in state:
            continue
        stack = [(root, 0)]
        state[root.name] = 1
        while stack:
            node, i = stack[-1]
            srcs = node.inputs
            while i < len(srcs) and (srcs[i] not in by_name or state.get(srcs[i]) == 2):
                i += 1
            if i == len(srcs):
                stack.pop()
                state[node.name] = 2
                order.append(node)
                continue
            stack[-1] = (node, i + 1)
            nxt = by_name[srcs[i]]
            if state.get(nxt.name) == 1:
                names = [n.name for n, _ in stack]
                cycle = names[names.index(nxt.name) :] + [nxt.name]
                raise HlsfuseError(f"{nxt.where()}: its inputs form a cycle: {' reads '.join(repr(c) for c in cycle)}")
            state[nxt.name] = 1
            stack.append((nxt, 0))
    return order


def _differs_in_vitis(dtype: DType) -> bool:
    """A type whose arithmetic AMD's ap_fixed gets wrong (docs/hls.md, "Which headers are tested"): a 1-bit signed
    SAT_SYM type. The other defects found are in operations that generated code avoids."""
    return not dtype.is_float and dtype.width == 1 and dtype.signed and dtype.overflow == "SAT_SYM"


def _infer_all(order: list[Node], types: dict[str, TensorType], sigs: dict[str, Sig],
               patterns: dict[str, Pattern]) -> Iterable[TensorType]:
    """Infer the nodes in (topological) ``order``, adding their types, sigs and patterns; returns the distinct
    tensor types of the graph.

    A network repeats a few kinds of node many times (conv2d, add, relu on the same types), and the
    op's rules read only a node's signature: its op, input types, attributes and declared fields.
    So each signature is inferred and checked once; one that fails is not kept, so that each node
    that has it fails with its own name. Tensor types are numbered (equal types, one number): a
    signature is then a tuple of small ints and strings, quick to hash.
    """
    numbers: dict[TensorType, int] = {}
    type_no = {name: numbers.setdefault(t, len(numbers)) for name, t in types.items()}
    inferred: dict[tuple, tuple[Sig, Pattern, TensorType, int]] = {}
    number_of = type_no.__getitem__
    for node in order:
        # the signature: what ``infer`` reads of the node, its input types by number (written out
        # here, not called: this runs once per node); None when an attribute is not plain data,
        # then the node is inferred on its own
        attrs = attrs_key(node.attrs) if node.attrs else ()
        key = None if attrs is None else (
            node.op, tuple(map(number_of, node.inputs)), attrs, node.dtype, node.pattern, node.edge_patterns, node.shape
        )
        known = inferred.get(key) if key is not None else None
        if known is None:
            try:
                sig, pattern = infer(node, types)
            except HlsfuseError as exc:  # OpError too
                raise HlsfuseError(f"{node.where()}: {exc}") from None
            check_size(sig.out_shape, node.where())
            out = TensorType(sig.out_shape, sig.out_dtype)
            known = (sig, pattern, out, numbers.setdefault(out, len(numbers)))
            if key is not None:
                inferred[key] = known
        sigs[node.name], patterns[node.name], types[node.name], type_no[node.name] = known
    return numbers.keys()


def infer(node: Node, types: dict[str, TensorType]) -> tuple[Sig, Pattern]:
    op = get_op(node.op)
    names = op.inputs
    if op.variadic:
        if len(node.inputs) < max(1, len(names)):
            raise OpError(f"expects at least {max(1, len(names))} input(s), got {len(node.inputs)}")
    elif len(node.inputs) != len(names):
        raise OpError(f"expects {len(names)} input(s) ({', '.join(names)}), got {len(node.inputs)}")
    attrs = op.normalize_attrs(node.attrs)
    in_types = [types[src] for src in node.inputs]
    sig = Sig(
        shapes=tuple(t.shape for t in in_types),
        dtypes=tuple(t.dtype for t in in_types),
        attrs=MappingProxyType(attrs),
        out_shape=node.shape,
    )
    shape = tuple(int(d) for d in op.shape(sig))
    dtype = node.dtype if node.dtype is not None else op.dtype(sig)
    sig = Sig(sig.shapes, sig.dtypes, sig.attrs, shape, dtype)
    if op.check is not None:
        op.check(sig)
    if node.op == "custom" and node.pattern is None:
        raise OpError("custom nodes need a 'pattern' field (their pattern kind)")
    if node.edge_patterns is not None and len(node.edge_patterns) != len(node.inputs):
        raise OpError(f"field 'edge_patterns' has {len(node.edge_patterns)} kinds for {len(node.inputs)} inputs")
    pattern = node.pattern if node.pattern is not None else op.pattern_of(sig)
    return sig, pattern
