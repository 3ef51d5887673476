"""Constants: numpy evaluation of constant subgraphs, batch-norm folding, shared attribute helpers.

Exporters compute shapes in the graph (``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape`` is how PyTorch writes ``x.view(x.size(0), -1)``). Any node whose inputs are all
constants and whose op is in ``FOLDERS`` is evaluated here with numpy, and ``Shape`` of
a converted tensor is its known static shape, so such subgraphs never reach hlsfuse.

``fold_batchnorm`` rewrites a layer followed by BatchNormalization into the layer alone,
its weights and bias absorbing the normalisation (exact in float), when the layer's output
feeds nothing else and every parameter is a constant:

    Conv -> BN                    Conv (any rank; qonnx's channels-last Conv -> BN too)
    Gemm -> BN                    Gemm
    MatMul [M, K]x[K, C] -> BN    MatMul -> Add(shift)     (PyTorch Linear(bias=False) -> BatchNorm1d)
    MatMul -> Add(bias) -> BN     MatMul -> Add(bias')     (Keras Dense -> BatchNormalization)

BN's channel axis is 1, so a MatMul folds only when its output has rank 2 (C is then its last
axis, the weights' columns).
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter

import numpy as np

from .channels_last import CHANNELS_LAST_DOMAIN
from .model import Model, NodeDef, Unsupported

__all__ = [
    "FOLDERS",
    "fold",
    "fold_batchnorm",
    "constant_input",
    "ints_input",
    "normalize_axes",
    "reshape_target",
    "slice_plan",
    "split_sizes",
    "numpy_slices",
    "shape_slice",
    "static_constants",
]

# ONNX TensorProto element types -> numpy (the ones a shape computation or weight uses)
_NUMPY_TYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}


# --------------------------------------------------------------------------
# Helpers shared with the converters
# --------------------------------------------------------------------------


def constant_input(node: NodeDef, consts: list, index: int, what: str) -> np.ndarray | None:
    """Input ``index`` as a constant, None when omitted; a computed tensor is unsupported."""
    if not node.input(index):
        return None
    if consts[index] is None:
        raise Unsupported(f"input '{what}' must be a constant (computed values are not supported here)")
    return consts[index]


def ints_input(node: NodeDef, consts: list, opset: int, since: int, name: str, index: int):
    """An int list given as attribute ``name`` before opset ``since`` and as input ``index`` from it."""
    if opset < since:
        value = node.attr(name)
    else:
        value = constant_input(node, consts, index, name)
    return None if value is None else tuple(int(v) for v in np.ravel(value))


def normalize_axes(axes, rank: int, what: str = "axes") -> tuple[int, ...]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise Unsupported(f"attribute '{what}' value {a} is out of range for a {rank}-dim tensor")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def reshape_target(shape: tuple[int, ...], target, allowzero: int = 0) -> tuple[int, ...]:
    """ONNX Reshape's output shape: 0 copies the input's dim (unless ``allowzero``), -1 is inferred."""
    dims = [int(d) for d in target]
    if not allowzero:
        dims = [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(dims)]
    size = math.prod(shape)
    if dims.count(-1) == 1:
        known = math.prod(d for d in dims if d != -1)
        if known and size % known == 0:
            dims = [size // known if d == -1 else d for d in dims]
    if any(d < 1 for d in dims) or math.prod(dims) != size:
        raise Unsupported(f"cannot reshape {list(shape)} to {[int(d) for d in target]}")
    return tuple(dims)


def slice_plan(shape, starts, ends, axes, steps) -> dict[int, tuple[int, int, int]]:
    """Per sliced axis, (start, end, step) clamped as ONNX Slice does; end -1 means 'before 0'."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Unsupported("inputs 'starts', 'ends', 'axes' and 'steps' must have the same length")
    plan = {}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if not -rank <= axis < rank:
            raise Unsupported(f"slice axis {axis} is out of range for a {rank}-dim tensor")
        if step == 0:
            raise Unsupported("slice step must not be 0")
        axis, dim = axis % rank, shape[axis % rank]
        start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        plan[axis] = (start, end, step)
    return plan


def split_sizes(node: NodeDef, consts: list, opset: int, dim: int) -> list[int]:
    """The sizes of Split's outputs along its axis (of size ``dim``), checked against the output count."""
    count = len(node.outputs)
    sizes = ints_input(node, consts, opset, 13, "split", 1)
    if sizes is None and opset >= 18 and node.attr("num_outputs") is not None:
        parts = int(node.attr("num_outputs"))
        if parts != count or parts < 1:
            raise Unsupported(f"attribute 'num_outputs' is {parts} but the node has {count} outputs")
        chunk = math.ceil(dim / parts)  # opset 18: the last part is smaller when dim does not divide
        sizes = (*[chunk] * (parts - 1), dim - chunk * (parts - 1))
    elif sizes is None:
        if dim % count:
            raise Unsupported(f"axis of size {dim} does not split into {count} equal parts; give 'split'")
        sizes = (dim // count,) * count
    if len(sizes) != count or sum(sizes) != dim or any(s < 0 for s in sizes):
        raise Unsupported(f"'split' {list(sizes)} must have {count} sizes >= 0 adding up to {dim}, the axis size")
    return list(sizes)


def numpy_slices(shape, plan) -> tuple[slice, ...]:
    """Python slices for a ``slice_plan`` (an end of -1 with a negative step runs to index 0)."""
    out = []
    for axis in range(len(shape)):
        if axis not in plan:
            out.append(slice(None))
            continue
        start, end, step = plan[axis]
        out.append(slice(start, None if end == -1 and step < 0 else end, step))
    return tuple(out)


def shape_slice(node: NodeDef, shape: tuple[int, ...]) -> np.ndarray:
    """ONNX Shape's output (with opset 15's start/end)."""
    rank = len(shape)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(shape[start:end], dtype=np.int64)


# --------------------------------------------------------------------------
# Folders: numpy evaluation of nodes whose inputs are all constants
# --------------------------------------------------------------------------


def _constant(node, args, opset):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in node.attrs:
            value = node.attrs[key]
            kind = np.float32 if key.startswith("value_float") else np.int64 if key.startswith("value_int") else None
            return [np.asarray(value, dtype=kind)]
    raise Unsupported("only tensor and number constants are supported (not strings or sparse tensors)")


def _cast(node, args, opset):
    target = _NUMPY_TYPES.get(node.attr("to"))
    if target is None:
        raise Unsupported(f"attribute 'to' ({node.attr('to')}) is not a numeric type")
    return [args[0].astype(target)]


def _constant_of_shape(node, args, opset):
    value = node.attr("value")
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return [np.full(tuple(int(d) for d in args[0]), fill[0], dtype=fill.dtype)]


def _axes(node, args, opset, since, rank):
    axes = ints_input(node, args, opset, since, "axes", 1)
    return None if axes is None else normalize_axes(axes, rank)


def _squeeze(node, args, opset):
    axes = _axes(node, args, opset, 13, args[0].ndim)
    return [np.squeeze(args[0], axis=axes)]


def _unsqueeze(node, args, opset):
    axes = ints_input(node, args, opset, 13, "axes", 1)
    out = args[0]
    for a in normalize_axes(axes, args[0].ndim + len(axes)):
        out = np.expand_dims(out, a)
    return [out]


def _slice(node, args, opset):
    x = args[0]
    if opset < 10:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    else:
        starts, ends, axes, steps = (ints_input(node, args, opset, 10, n, i) for i, n in
                                     enumerate(("starts", "ends", "axes", "steps"), start=1))
    return [x[numpy_slices(x.shape, slice_plan(x.shape, starts, ends, axes, steps))]]


def _reduce_prod(node, args, opset):
    axes = _axes(node, args, opset, 18, args[0].ndim)
    return [np.prod(args[0], axis=axes, keepdims=bool(node.attr("keepdims", 1)))]


def _div(node, args, opset):
    a, b = args
    if np.issubdtype(np.result_type(a, b), np.integer):
        return [np.trunc(a / b).astype(np.result_type(a, b))]
    return [np.asarray(a / b, dtype=np.result_type(a, b))]


def _binary(fn):
    return lambda node, args, opset: [np.asarray(fn(args[0], args[1]))]


def _unary(fn):
    return lambda node, args, opset: [np.asarray(fn(args[0]), dtype=args[0].dtype)]


def _split(node, args, opset):
    axis = node.attr("axis", 0)
    sizes = split_sizes(node, args, opset, args[0].shape[axis])
    return np.split(args[0], np.cumsum(sizes)[:-1], axis=axis)


def _mod(node, args, opset):
    fn = np.fmod if node.attr("fmod", 0) else np.mod  # fmod takes the dividend's sign, Mod the divisor's
    return [np.asarray(fn(args[0], args[1]))]


def _trilu(node, args, opset):
    k = int(args[1]) if len(args) > 1 and args[1] is not None else 0
    fn = np.triu if node.attr("upper", 1) else np.tril
    return [fn(args[0], k)]


def _range(node, args, opset):
    start, limit, delta = (a.item() for a in args)
    return [np.arange(start, limit, delta, dtype=args[0].dtype)]


FOLDERS = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Identity": lambda node, args, opset: [args[0]],
    "Cast": _cast,
    "Gather": lambda node, args, opset: [np.take(args[0], args[1], axis=node.attr("axis", 0))],
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": lambda node, args, opset: [np.concatenate(args, axis=node.attr("axis"))],
    "Reshape": lambda node, args, opset: [
        args[0].reshape(reshape_target(args[0].shape, args[1], node.attr("allowzero", 0)))
    ],
    "Flatten": lambda node, args, opset: [
        args[0].reshape(math.prod(args[0].shape[: node.attr("axis", 1)]), -1)
    ],
    "Transpose": lambda node, args, opset: [np.transpose(args[0], node.attr("perm"))],
    "Slice": _slice,
    "Split": _split,
    "Expand": lambda node, args, opset: [args[0] * np.ones(tuple(int(d) for d in args[1]), dtype=args[0].dtype)],
    "Range": _range,
    "ReduceProd": _reduce_prod,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _div,
    "Pow": _binary(np.power),
    "Equal": _binary(np.equal),
    "Less": _binary(np.less),
    "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal),
    "GreaterOrEqual": _binary(np.greater_equal),
    "And": _binary(np.logical_and),
    "Or": _binary(np.logical_or),
    "Xor": _binary(np.logical_xor),
    "Mod": _mod,
    "Trilu": _trilu,
    "Tile": lambda node, args, opset: [np.tile(args[0], tuple(int(r) for r in args[1]))],
    "Max": lambda node, args, opset: [np.maximum.reduce(np.broadcast_arrays(*args))],
    "Min": lambda node, args, opset: [np.minimum.reduce(np.broadcast_arrays(*args))],
    "Where": lambda node, args, opset: [np.where(args[0], args[1], args[2])],
    "Not": lambda node, args, opset: [np.logical_not(args[0])],
    "Neg": _unary(np.negative),
    "Abs": _unary(np.abs),
    "Sqrt": _unary(np.sqrt),
    "Reciprocal": _unary(np.reciprocal),
    "Floor": _unary(np.floor),
    "Erf": _unary(np.frompyfunc(math.erf, 1, 1)),
    "Ceil": _unary(np.ceil),
    "Sign": _unary(np.sign),
    "Exp": _unary(np.exp),
    "Log": _unary(np.log),
    "Sin": _unary(np.sin),
    "Cos": _unary(np.cos),
}


def fold(node: NodeDef, args: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Evaluate a node whose inputs are all constants (``args`` is None for an omitted input)."""
    try:
        with np.errstate(all="ignore"):
            return FOLDERS[node.op](node, args, opset)
    except (ValueError, IndexError, TypeError) as exc:  # numpy's complaint about the model's constants
        raise Unsupported(f"cannot evaluate it on its constant inputs: {exc}") from None


# --------------------------------------------------------------------------
# Batch-norm folding
# --------------------------------------------------------------------------


def static_constants(model: Model) -> dict[str, np.ndarray]:
    """The initializers and the values of Constant nodes, by tensor name, and the Identity of either (PyTorch's
    TorchScript exporter keeps one initializer of equal weights and names the others by Identity nodes)."""
    consts = dict(model.initializers)
    for node in model.nodes:
        if node.op == "Constant" and not node.domain:
            with contextlib.suppress(Unsupported):  # not foldable here; the converter reports it where it matters
                consts[node.outputs[0]] = _constant(node, [], model.opset)[0]
        elif node.op == "Identity" and not node.domain and node.inputs and node.inputs[0] in consts:
            consts[node.outputs[0]] = consts[node.inputs[0]]
    return consts


def fold_batchnorm(model: Model) -> Model:
    """Fold each BatchNormalization into the layer before it where that is exact (see the module note)."""
    consts = static_constants(model)
    readers = Counter(name for node in model.nodes for name in node.inputs if name)
    readers.update(o.name for o in model.outputs)
    producer = {out: node for node in model.nodes for out in node.outputs}
    taken = set(consts) | set(producer) | {i.name for i in model.inputs}
    rewritten: dict[str, NodeDef | None] = {}  # node name -> its replacement, None to drop it
    initializers = dict(model.initializers)

    def new_constant(base: str, data: np.ndarray) -> str:
        name, n = f"{base}_bn", 1
        while name in taken:
            name, n = f"{base}_bn{n}", n + 1
        taken.add(name)
        initializers[name] = data.astype(np.float32)
        return name

    for bn in model.nodes:
        if bn.op != "BatchNormalization" or bn.domain not in ("", CHANNELS_LAST_DOMAIN):
            continue
        if bn.attr("training_mode", 0) or not bn.attr("spatial", 1) or any(readers[o] for o in bn.outputs[1:] if o):
            continue
        x = bn.inputs[0]
        layer = producer.get(x)
        params = [consts.get(n) for n in bn.inputs[1:5]]
        if layer is None or layer.name in rewritten or readers[x] != 1 or any(p is None for p in params):
            continue
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)
        scale = gamma / np.sqrt(var + float(bn.attr("epsilon", 1e-5)))
        affine = (scale, beta - mean * scale)
        if layer.domain != bn.domain:
            continue
        if layer.op in ("Conv", "Gemm"):
            folded = _fold_into(layer, affine, consts, new_constant, bn.outputs[0])
            changes = None if folded is None else {layer.name: folded, bn.name: None}
        else:
            changes = _fold_into_matmul(model, bn, layer, affine, consts, readers, producer, new_constant)
        if changes is not None:
            rewritten.update(changes)

    if not rewritten:
        return model
    nodes = [rewritten.get(n.name, n) for n in model.nodes]
    nodes = [n for n in nodes if n is not None]
    return Model(model.name, model.source, model.opset, model.inputs, model.outputs, initializers, nodes, model.shapes)


def _bias_name(conv: NodeDef, output: str) -> str:
    """The folded bias is named after the layer's bias, or its weight ('conv1.weight' -> 'conv1.bias')."""
    if conv.input(2):
        return conv.input(2)
    weight = conv.input(1)
    return f"{weight[: -len('weight')]}bias" if weight.endswith(".weight") else f"{output}.bias"


def _fold_into(conv: NodeDef, affine, consts, new_constant, output: str) -> NodeDef | None:
    s, shift = affine
    if conv.op == "Conv":
        # C_out is axis 0 of the weights in both layouts, [C_out, C_in/g, *K] and channels-last [C_out, *K, C_in/g]
        w = consts.get(conv.input(1))
        b = consts.get(conv.input(2)) if conv.input(2) else np.zeros(s.shape)
        if w is None or b is None or w.shape[0] != s.shape[0]:
            return None
        w2 = w.astype(np.float64) * s.reshape(-1, *([1] * (w.ndim - 1)))
        b2 = b.astype(np.float64) * s + shift
        inputs = (conv.inputs[0], new_constant(conv.input(1), w2), new_constant(_bias_name(conv, output), b2))
        return NodeDef(conv.name, conv.op, inputs, (output,), conv.attrs, conv.domain)
    w = consts.get(conv.input(1))
    c = consts.get(conv.input(2)) if conv.input(2) else np.zeros(s.shape)
    if w is None or c is None:
        return None
    trans_b = conv.attr("transB", 0)
    n = w.shape[0] if trans_b else w.shape[1]
    if n != s.shape[0]:
        return None
    w2 = w.astype(np.float64) * (s[:, None] if trans_b else s[None, :])
    beta_gemm = float(conv.attr("beta", 1.0)) if conv.input(2) else 0.0
    c2 = beta_gemm * c.astype(np.float64) * s + shift
    attrs = {**conv.attrs, "beta": 1.0}
    inputs = (conv.inputs[0], new_constant(conv.input(1), w2), new_constant(_bias_name(conv, output), c2))
    return NodeDef(conv.name, conv.op, inputs, (output,), attrs)


def _fold_into_matmul(model: Model, bn: NodeDef, layer: NodeDef, affine, consts, readers, producer,
                      new_constant) -> dict[str, NodeDef | None] | None:
    """MatMul -> BN or MatMul -> Add(bias) -> BN as MatMul -> Add, the changes by node name; None when
    the pattern does not hold (the MatMul's output must have rank 2 and C columns, the bias a constant
    of shape [C] or [1, C])."""
    s, shift = affine
    bias_name, matmul = None, layer
    if layer.op == "Add":
        computed = [n for n in layer.inputs if consts.get(n) is None]
        if len(computed) != 1 or readers[computed[0]] != 1:
            return None
        bias_name = next(n for n in layer.inputs if n != computed[0])
        matmul = producer.get(computed[0])
    if matmul is None or matmul.op != "MatMul" or matmul.domain:
        return None
    w = consts.get(matmul.input(1))
    bias = np.zeros(s.shape) if bias_name is None else consts[bias_name]
    channels = s.shape[0]
    if w is None or w.shape != (w.shape[0], channels) or bias.shape not in ((channels,), (1, channels)):
        return None
    if _rank(model, matmul.inputs[0]) != 2 or consts.get(matmul.inputs[0]) is not None:
        return None
    w2 = new_constant(matmul.input(1), w.astype(np.float64) * s[None, :])
    b2 = new_constant(bias_name or _bias_name(matmul, bn.outputs[0]), bias.astype(np.float64) * s + shift)
    changes = {matmul.name: NodeDef(matmul.name, "MatMul", (matmul.inputs[0], w2), matmul.outputs, matmul.attrs)}
    add = NodeDef(bn.name if bias_name is None else layer.name, "Add", (matmul.outputs[0], b2), (bn.outputs[0],))
    if bias_name is None:
        changes[bn.name] = add
    else:
        changes.update({layer.name: add, bn.name: None})
    return changes


def _rank(model: Model, tensor: str) -> int | None:
    """The rank of ``tensor`` where shape inference or the graph inputs tell it."""
    if tensor in model.shapes:
        return len(model.shapes[tensor])
    declared = next((i.shape for i in model.inputs if i.name == tensor), None)
    return None if declared is None else len(declared)
