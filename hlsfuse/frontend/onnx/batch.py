"""The batch axis of an exported model: frames, not a dimension of the design.

PyTorch and Keras export a model for the batch they were traced with: a symbolic ``N`` or
``batch_size``, or a baked size (a dataset's 789444 rows; a fixed size counts as a batch in a model
written by one of the EXPORTERS, else it is the model's own dimension). hlsfuse streams one sample per frame, so
a leading dimension that every graph input and output shares (rank 2 or more, size other than 1)
and that no op mixes across is the frame axis: the model is rewritten for one sample, and a batch
of inputs is that many frames (``run``, ``csim`` and ``rtlsim`` split arrays of [K, ...] into K).

    Model --find the shared leading dim--> batch? --propagate its axis node by node--> every node keeps
          samples apart? --yes--> Model for one sample (dim 1; a Reshape's baked N becomes 1)
                         --no---> one-line error naming the node that mixes them

The propagation is sound rather than clever: each op either provably keeps every output sample a
function of the same input sample (elementwise ops with per-sample or shared operands, convolutions
and pools on axis 0, a MatMul or Gemm whose batched operand gives the rows, softmax or reductions
over other axes, reshapes keeping dim 0, transposes that leave the batch axis in place), or it is
refused: reductions, softmax, concat, slices, pads or transposes on the batch axis, a MatMul whose
computed operand has the batch on a contracted axis, and ops this module does not know.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ...errors import HlsfuseError
from .model import Model, NodeDef, TensorInfo

__all__ = ["Batch", "frames", "with_input_shapes", "split_frames"]

BATCH = "batch"  # an entry of a shape vector: the batch size, whatever it is

EXPORTERS = ("pytorch", "tf2onnx", "keras2onnx", "onnxmltools", "skl2onnx", "paddle2onnx")
"""Producers (``producer_name``) that trace a model with a batch: their baked leading size is the batch. A
symbolic or unknown leading dim is a batch whoever wrote the model; a fixed one in a model written by
anything else (onnx.helper, a hand-made graph) is the model's own dimension, as declared."""

_ELEMENTWISE = {
    "Abs", "Neg", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Clip",
    "Identity", "Dropout", "Cast", "Floor", "Ceil", "Round", "Sign", "Erf", "Elu", "Selu", "Softplus", "Softsign",
    "HardSigmoid", "HardSwish", "Gelu", "Mish", "Celu", "ThresholdedRelu", "Not", "Add", "Sub", "Mul", "Div", "Pow",
    "Max", "Min", "Sum", "Mean", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Where", "And", "Or",
    "Xor", "Mod", "QuantizeLinear", "DequantizeLinear", "Quant", "BipolarQuant", "Trunc", "MultiThreshold",
}
_PER_SAMPLE = {  # ops on [N, C, ...] that compute each sample from itself: the batch must be axis 0
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool",
    "GlobalLpPool", "BatchNormalization", "InstanceNormalization", "LRN", "DepthToSpace", "SpaceToDepth",
}
_REDUCE = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
_AXIS_OPS = {"Softmax", "LogSoftmax", "Hardmax", "ArgMax", "ArgMin", "Concat", "Split", "Gather", "CumSum",
             "Flatten", "LpNormalization"}


@dataclass(frozen=True)
class Batch:
    """The frame axis found: its ``size`` as exported (an int, a symbolic name, or None: unknown)."""

    size: int | str | None

    @property
    def text(self) -> str:
        return f"'{self.size}'" if isinstance(self.size, str) else str(self.size) if self.size else "unknown"


class _Mixes(HlsfuseError):
    pass


def with_input_shapes(model: Model, shapes: dict[str, tuple[int, ...]]) -> Model:
    """``model`` with the declared shapes of the inputs named in ``shapes`` replaced (``--input-shape``); the
    shapes ONNX shape inference found for other tensors are dropped, as they followed the old ones."""
    known = {i.name for i in model.inputs}
    for name in shapes:
        if name not in known:
            raise HlsfuseError(f"--input-shape: the model has no input '{name}' (inputs: {', '.join(sorted(known))})")
    inputs = tuple(replace(i, shape=tuple(shapes[i.name])) if i.name in shapes else i for i in model.inputs)
    return replace(model, inputs=inputs, shapes={}) if shapes else model


def _leading(info: TensorInfo):
    return info.shape[0] if info.shape else None


def find(model: Model) -> Batch | None:
    """The batch axis of ``model``: dim 0 shared by every input, each of rank >= 2: symbolic or unknown, or a size
    other than 1 baked in by one of the EXPORTERS (the outputs must keep it: ``frames`` refuses the node that
    mixes it away)."""
    tensors = model.inputs
    if not tensors or any(t.shape is None or len(t.shape) < 2 for t in tensors):
        return None
    sizes = {_leading(t) for t in tensors}
    if len(sizes) != 1:
        return None
    (size,) = sizes
    if size == 1 or (isinstance(size, int) and (size < 1 or model.producer.lower() not in EXPORTERS)):
        return None
    return Batch(size)


def frames(model: Model) -> tuple[Model, Batch | None]:
    """``model`` for one sample and the batch it was exported with, or ``model`` and None when it has no batch
    axis. A model whose batch axis an op mixes is refused, naming the node."""
    batch = find(model)
    if batch is None:
        return model, None
    walk = _Walk(model, batch)
    for node in model.nodes:
        try:
            walk.node(node)
        except _Mixes as exc:
            raise HlsfuseError(f"{model.source}: {node.where()} {exc}; hlsfuse takes dim 0 of every input "
                               f"(size {batch.text}) as the batch, one sample per frame, so no op may mix "
                               "samples (--input-shape NAME=1,... builds the model for one sample as it is)") from None
    for out in model.outputs:
        if walk.axis.get(out.name) != 0:
            raise HlsfuseError(f"{model.source}: output '{out.name}' does not keep the batch on its dim 0 (size "
                               f"{batch.text}); hlsfuse streams a batch as frames of one sample")
    return walk.rewritten(), batch


class _Walk:
    """The batch axis of every tensor (``axis``), the ranks it knows, shape vectors computed from Shape."""

    def __init__(self, model: Model, batch: Batch):
        self.model, self.batch = model, batch
        self.axis: dict[str, int] = {i.name: 0 for i in model.inputs}
        self.rank: dict[str, int] = {i.name: len(i.shape) for i in model.inputs}
        self.consts: dict[str, np.ndarray] = dict(model.initializers)
        self.vectors: dict[str, list] = {}  # 1-D shape data holding BATCH (from Shape of a batched tensor)
        self.baked: dict[tuple[str, int], np.ndarray] = {}  # (node, input) -> a Reshape's shape with N made 1

    # -- facts about tensors
    def rank_of(self, name: str) -> int | None:
        if name in self.rank:
            return self.rank[name]
        if name in self.consts:
            return np.asarray(self.consts[name]).ndim
        shape = self.model.shapes.get(name)
        return len(shape) if shape is not None else None

    def shape_of(self, name: str):
        if name in self.consts:
            return np.asarray(self.consts[name]).shape
        return self.model.shapes.get(name)

    def batched(self, node: NodeDef) -> list[int]:
        return [k for k, name in enumerate(node.inputs) if name and name in self.axis]

    def set(self, name: str, axis: int | None, rank: int | None) -> None:
        if axis is not None:
            self.axis[name] = axis
        if rank is not None:
            self.rank[name] = rank

    # -- the rules
    def node(self, node: NodeDef) -> None:
        if node.op == "Constant" and node.outputs:
            value = node.attr("value")
            if value is not None:
                self.consts[node.outputs[0]] = np.asarray(value)
            return
        vectors = [k for k, name in enumerate(node.inputs) if name in self.vectors]
        if vectors:
            self.shape_data(node)
            return
        batched = self.batched(node)
        if node.op == "Shape" and batched:
            self.shape(node)
            return
        if not batched:
            return  # constants and what is computed from them
        op = node.op
        if op in _ELEMENTWISE:
            self.elementwise(node, batched)
        elif op in _PER_SAMPLE:
            if batched != [0] or self.axis[node.inputs[0]] != 0:
                raise _Mixes("reads the batch where it needs channels or features")
            for out in node.outputs[:1]:
                self.set(out, 0, self.rank_of(node.inputs[0]))
        elif op in ("MatMul", "Gemm"):
            self.matmul(node, batched)
        elif op in _REDUCE:
            self.reduce(node)
        elif op in _AXIS_OPS:
            self.along_axis(node, batched)
        elif op == "Transpose":
            a, r = self.axis[node.inputs[0]], self.rank_of(node.inputs[0])
            perm = list(node.attr("perm") or (range(r - 1, -1, -1) if r is not None else []))
            if a >= len(perm) or perm[a] != a:
                raise _Mixes("moves the batch axis (a transpose that changes where dim 0 is)")
            self.set(node.outputs[0], a, len(perm))
        elif op in ("Reshape",):
            self.reshape(node)
        elif op in ("Squeeze", "Unsqueeze"):
            self.squeeze(node)
        elif op in ("Slice", "Pad", "Resize", "Upsample", "Expand", "Tile"):
            self.keeps_axis0(node)
        else:
            raise _Mixes("is an op whose effect on the batch axis hlsfuse cannot tell")

    def elementwise(self, node: NodeDef, batched: list[int]) -> None:
        ranks = [self.rank_of(n) for n in node.inputs if n]
        if any(r is None for r in ranks):
            raise _Mixes("has an operand of unknown rank")
        out_rank = max(ranks)
        aligned = {out_rank - self.rank_of(node.inputs[k]) + self.axis[node.inputs[k]] for k in batched}
        if len(aligned) != 1:
            raise _Mixes("lines up the batch axes of its operands differently")
        (axis,) = aligned
        for k, name in enumerate(node.inputs):
            if not name or k in batched:
                continue
            shape = self.shape_of(name)
            if shape is None:
                continue
            at = axis - (out_rank - len(shape))
            if 0 <= at < len(shape) and shape[at] != 1:
                raise _Mixes(f"applies operand '{name}' of {shape[at]} entries along the batch axis, one per sample")
        for out in node.outputs[:1]:
            self.set(out, axis, out_rank)

    def matmul(self, node: NodeDef, batched: list[int]) -> None:
        a, b = node.inputs[0], node.inputs[1]
        ra, rb = self.rank_of(a), self.rank_of(b)
        if node.op == "Gemm":
            if batched != [0] and batched != [0, 2]:
                raise _Mixes("has a computed operand B (or C) on the batch axis")
            if node.attr("transA", 0) or self.axis[a] != 0:
                raise _Mixes("contracts over the batch axis (transA)")
            if 2 in batched and not (self.rank_of(node.inputs[2]) == 2 and self.axis[node.inputs[2]] == 0):
                raise _Mixes("adds a C whose batch axis is not its rows")
            self.set(node.outputs[0], 0, 2)
            return
        if ra is None or rb is None or ra < 2:
            raise _Mixes("multiplies a batched operand of unknown or 1-D shape")
        r = max(ra, rb)
        places = set()
        if 0 in batched:
            if self.axis[a] == ra - 1:
                raise _Mixes("contracts over the batch axis (it is the last axis of A)")
            places.add(r - ra + self.axis[a])
        if 1 in batched:
            if rb < 2 or self.axis[b] >= rb - 2:
                raise _Mixes("has a computed operand B with the batch on a matrix axis")
            places.add(r - rb + self.axis[b])
        if len(places) != 1:
            raise _Mixes("lines up the batch axes of A and B differently")
        (axis,) = places
        if 0 in batched and self.axis[a] == ra - 2 and axis != r - 2:
            raise _Mixes("broadcasts the batch rows against B's batches")
        self.set(node.outputs[0], axis, r)

    def _axes(self, node: NodeDef, default: list[int] | None) -> list[int] | None:
        axes = node.attr("axes")
        if axes is None and len(node.inputs) > 1 and node.inputs[1]:
            value = self.consts.get(node.inputs[1])
            if value is None:
                raise _Mixes("takes its axes from a computed tensor")
            axes = np.asarray(value).reshape(-1).tolist()
        return list(axes) if axes is not None else default

    def reduce(self, node: NodeDef) -> None:
        x = node.inputs[0]
        a, r = self.axis[x], self.rank_of(x)
        axes = self._axes(node, None)
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                self.set(node.outputs[0], a, r)
                return
            raise _Mixes("reduces over every axis, the batch axis too")
        if r is None:
            raise _Mixes("reduces a tensor of unknown rank")
        axes = [k % r for k in axes]
        if a in axes:
            raise _Mixes(f"reduces over axis {a}, the batch axis")
        keep = node.attr("keepdims", 1)
        self.set(node.outputs[0], a if keep else a - sum(k < a for k in axes), r if keep else r - len(axes))

    def along_axis(self, node: NodeDef, batched: list[int]) -> None:
        x = node.inputs[0]
        if node.op == "Gather" and batched != [0]:
            raise _Mixes("gathers with computed indices")
        if node.op == "Concat" and len(batched) != len([n for n in node.inputs if n]):
            raise _Mixes("joins batched tensors with constants along the batch axis' neighbours")
        a, r = self.axis[x], self.rank_of(x)
        if r is None:
            raise _Mixes("works along an axis of a tensor of unknown rank")
        opset = self.model.opset
        default = {"Softmax": -1 if opset >= 13 else 1, "LogSoftmax": -1 if opset >= 13 else 1,
                   "Hardmax": -1 if opset >= 13 else 1, "Flatten": 1, "LpNormalization": -1}.get(node.op, 0)
        axis = node.attr("axis", default) % r if node.op != "Flatten" else node.attr("axis", 1) % (r + 1)
        if node.op == "Flatten":
            if axis <= a:
                raise _Mixes(f"flattens from axis {axis}, merging the batch axis with the others")
            self.set(node.outputs[0], a, 2)
            return
        if node.op in ("Softmax", "LogSoftmax", "Hardmax") and opset < 13:
            if axis <= a:
                raise _Mixes(f"normalizes over axes {axis} onwards, the batch axis among them")
        elif axis == a:
            raise _Mixes(f"works along axis {axis}, the batch axis")
        keep = node.op not in ("ArgMax", "ArgMin") or node.attr("keepdims", 1)
        shift = node.op == "Gather" and np.asarray(self.consts.get(node.inputs[1], 0)).ndim == 0
        for out in node.outputs:
            if out:
                self.set(out, a - (1 if (not keep or shift) and axis < a else 0),
                         r - (1 if (not keep or shift) else 0))

    def squeeze(self, node: NodeDef) -> None:
        x = node.inputs[0]
        a, r = self.axis[x], self.rank_of(x)
        axes = self._axes(node, None)
        if axes is None or r is None:
            raise _Mixes("has axes hlsfuse cannot tell (give them as constants)")
        if node.op == "Squeeze":
            axes = [k % r for k in axes]
            if a in axes:
                raise _Mixes("removes the batch axis")
            self.set(node.outputs[0], a - sum(k < a for k in axes), r - len(axes))
        else:
            out_rank = r + len(axes)
            axes = sorted(k % out_rank for k in axes)
            for k in axes:
                if k <= a:
                    a += 1
            self.set(node.outputs[0], a, out_rank)

    def keeps_axis0(self, node: NodeDef) -> None:
        """Slice, Pad, Resize, Expand, Tile: allowed when their constants leave the batch axis (axis 0) alone."""
        x = node.inputs[0]
        if self.batched(node) != [0] or self.axis[x] != 0:
            raise _Mixes("has a computed operand besides its data, or the batch off axis 0")
        r = self.rank_of(x)
        if node.op == "Slice":
            starts = self.consts.get(node.inputs[1]) if len(node.inputs) > 1 else node.attr("starts")
            axes = self._axes_of_slice(node, r)
            if starts is None or axes is None:
                raise _Mixes("slices along axes given by computed tensors")
            if 0 in axes:
                raise _Mixes("slices along the batch axis")
        elif node.op == "Pad":
            pads = self.consts.get(node.input(1)) if node.input(1) else node.attr("pads")
            if pads is None:
                raise _Mixes("has computed pads")
            pads = np.asarray(pads).reshape(-1).tolist()
            if len(node.inputs) > 3 and node.inputs[3]:
                raise _Mixes("pads along axes given as a tensor; hlsfuse cannot tell whether the batch axis is one")
            if r is None or pads[0] or pads[len(pads) // 2]:
                raise _Mixes("pads the batch axis")
        elif node.op in ("Resize", "Upsample"):
            scales = next((self.consts.get(n) for n in node.inputs[1:] if n and np.asarray(
                self.consts.get(n, np.zeros(0))).size), None)
            if scales is None or float(np.asarray(scales).reshape(-1)[0]) not in (1.0, self._size_or_nan()):
                raise _Mixes("scales the batch axis, or has scales hlsfuse cannot read")
        else:  # Expand, Tile
            raise _Mixes("repeats values along axes hlsfuse does not check for the batch axis")
        self.set(node.outputs[0], 0, r)

    def _size_or_nan(self) -> float:
        return float(self.batch.size) if isinstance(self.batch.size, int) else math.nan

    def _axes_of_slice(self, node: NodeDef, rank: int | None):
        if len(node.inputs) > 3 and node.inputs[3]:
            axes = self.consts.get(node.inputs[3])
            return None if axes is None or rank is None else [k % rank for k in np.asarray(axes).reshape(-1)]
        axes = node.attr("axes")
        if axes is not None:
            return [k % rank for k in axes] if rank is not None else None
        starts = self.consts.get(node.input(1)) if node.input(1) else node.attr("starts")
        return None if starts is None else list(range(np.asarray(starts).size))

    def reshape(self, node: NodeDef) -> None:
        x, s = node.inputs[0], node.input(1)
        if self.axis[x] != 0:
            raise _Mixes("reshapes a tensor whose batch is not on axis 0")
        if s in self.vectors:
            target = list(self.vectors[s])
        elif s in self.consts:
            target = np.asarray(self.consts[s]).reshape(-1).tolist()
        elif s in self.axis:
            raise _Mixes("reshapes to a shape computed from the data")
        else:
            raise _Mixes("reshapes to a shape hlsfuse cannot read")
        first = target[0] if target else None
        size = self.batch.size
        if first == BATCH or first == 0 or (isinstance(size, int) and first == size):
            if first != BATCH and first != 0 and s not in self.vectors:
                self.baked[(node.name, 1)] = np.asarray([1] + [int(v) for v in target[1:]], dtype=np.int64)
            self.set(node.outputs[0], 0, len(target))
            return
        shape = self.shape_of(x)
        rest = [int(v) for v in target[1:] if v != BATCH]
        if first == -1 and shape is not None and len(rest) == len(target) - 1 and all(v > 0 for v in rest) and \
                math.prod(rest) == math.prod(shape[1:]):
            self.set(node.outputs[0], 0, len(target))
            return
        raise _Mixes(f"reshapes dim 0 (the batch) to {first}: samples would be split or merged")

    # -- shape data: Shape of a batched tensor, and the ops that pass its entries on
    def shape(self, node: NodeDef) -> None:
        x = node.inputs[0]
        r = self.rank_of(x)
        if r is None:
            raise _Mixes("takes the shape of a tensor of unknown rank")
        dims = list(self.shape_of(x) or [None] * r)
        dims[self.axis[x]] = BATCH
        start, end = node.attr("start", 0), node.attr("end", r)
        self.vectors[node.outputs[0]] = dims[slice(start, end)]

    def shape_data(self, node: NodeDef) -> None:
        values = [self.vectors.get(n) if n in self.vectors else (
            np.asarray(self.consts[n]).reshape(-1).tolist() if n in self.consts else None) for n in node.inputs]
        op, out = node.op, node.outputs[0] if node.outputs else ""
        if op in ("Cast", "Identity"):
            self.vectors[out] = values[0]
        elif op == "Gather" and values[1] is not None:
            picked = [values[0][int(k)] for k in values[1]]
            self.vectors[out] = picked
        elif op in ("Unsqueeze", "Squeeze"):
            self.vectors[out] = values[0]
        elif op == "Concat" and all(v is not None for v in values):
            self.vectors[out] = [e for v in values for e in v]
        elif op == "Slice" and all(v is not None for v in values[1:3]):
            self.vectors[out] = values[0][int(values[1][0]):int(values[2][0])]
        elif op == "Reshape" and node.inputs[0] in self.axis:
            self.reshape(node)
        else:
            raise _Mixes("computes with the batch size (from a Shape of the data), which hlsfuse cannot follow")

    # -- the model for one sample
    def rewritten(self) -> Model:
        model = self.model

        def one(info: TensorInfo) -> TensorInfo:
            return replace(info, shape=(1, *info.shape[1:]))

        initializers = dict(model.initializers)
        nodes = []
        for node in model.nodes:
            baked = self.baked.get((node.name, 1))
            if baked is not None:
                name = f"{node.inputs[1]}.one_sample"
                initializers[name] = baked
                node = replace(node, inputs=(node.inputs[0], name, *node.inputs[2:]))
            nodes.append(node)
        shapes = {}
        for name, shape in model.shapes.items():
            axis = self.axis.get(name)
            if axis is None:
                shapes[name] = shape
            elif axis < len(shape):
                shapes[name] = tuple(1 if k == axis else d for k, d in enumerate(shape))
        return replace(model, inputs=tuple(one(i) for i in model.inputs), outputs=tuple(one(o) for o in model.outputs),
                       initializers=initializers, nodes=tuple(nodes), shapes=shapes)


def split_frames(graph, arrays: dict) -> list[dict]:
    """Input arrays of a batch, [K, ...] for a graph input of [1, ...] (a model built for one sample), as K
    frames of one sample each (in the order of dim 0); other arrays are one frame. Every input must then have
    the same K: one sample of each per frame."""
    inputs = {i.name: i.type.shape for i in graph.inputs}
    leads = {name: np.shape(value)[0] for name, value in arrays.items()
             if name in inputs and inputs[name] and inputs[name][0] == 1 and np.ndim(value) == len(inputs[name])}
    counts = set(leads.values())
    if not counts or counts == {1} or len(leads) != len(inputs):
        return [arrays]
    if len(counts) != 1:
        detail = ", ".join(f"'{k}' {v}" for k, v in sorted(leads.items()))
        raise HlsfuseError(f"the inputs are batches of different sizes ({detail}); give every input the same "
                           "number of samples along dim 0")
    (count,) = counts
    return [{name: (np.asarray(value)[k:k + 1] if name in leads else value) for name, value in arrays.items()}
            for k in range(count)]
