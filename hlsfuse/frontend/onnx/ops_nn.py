"""Converters of the network ONNX ops: Conv, pools, Gemm/MatMul, BatchNormalization,
LayerNormalization, RMSNormalization, Softmax and reductions.

Convolutions and pools run channel-last: their input is converted to NHWC (free when
it already is), weights are transposed to hlsfuse's [KH, KW, Cin/groups, Cout] once at
import, and a 1-D op on [N, C, L] runs as the 2-D op on [N, 1, L, C]. ``auto_pad`` and
``ceil_mode`` become explicit padding. A Gemm/MatMul with constant weights is a
``dense``; when its input is a deferred flatten of a channel-last tensor, the weight
columns are permuted instead of the activations (no transpose stage).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import layout
from .context import Context, Value
from .fold import constant_input, ints_input, normalize_axes
from .masks import EXP_INT_BITS, masked_softmax
from .model import NodeDef, Unsupported
from .ops_tensor import binary

__all__ = ["NN_CONVERTERS", "NORM_PATTERN_CONVERTERS", "conv_operands", "global_pool"]

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _out(node: NodeDef) -> str:
    return node.outputs[0]


# --------------------------------------------------------------------------
# Windows: padding, 1-D as 2-D
# --------------------------------------------------------------------------


def _pads(node: NodeDef, sizes, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """(begin, end) padding per spatial axis, resolving ``auto_pad``."""
    n = len(sizes)
    auto = node.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto not in _AUTO_PADS:
        raise Unsupported(f"attribute 'auto_pad' is '{auto}', expected one of {', '.join(_AUTO_PADS)}")
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto == "NOTSET":
        pads = list(node.attr("pads") or [0] * 2 * n)
        if len(pads) != 2 * n:
            raise Unsupported(f"attribute 'pads' must have {2 * n} values, not {len(pads)}")
        if any(p < 0 for p in pads):
            raise Unsupported(f"attribute 'pads' {pads} must not be negative")
        return pads[:n], pads[n:]
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin, end


def _ceil_extra(size: int, begin: int, end: int, k: int, s: int) -> int:
    """Extra end padding that makes floor division give ``ceil_mode``'s output size.

    As in ONNX Runtime and PyTorch, a last window that would start in the end padding is
    dropped.
    """
    span = size + begin + end - k
    out = -(-span // s) + 1
    if (out - 1) * s >= size + begin:
        out -= 1
    return max(0, (out - 1) * s + k - (size + begin + end))


def _spatial(x: Value, spatial: int, what: str) -> layout.Order:
    if spatial not in (1, 2) or x.rank != spatial + 2:
        raise Unsupported(f"{what} on a {x.rank}-dim input is not supported (1-D [N,C,L] and 2-D [N,C,H,W] are)")
    return layout.channel_last(x.rank, unit_height=True)


def _as_2d(spatial: int, strides, dilations, begin, end):
    """hlsfuse attributes (2 values, padding [top, left, bottom, right]) of a 1-D or 2-D window."""
    if spatial == 1:
        return [1, strides[0]], [1, dilations[0]], [0, begin[0], 0, end[0]]
    return list(strides), list(dilations), [begin[0], begin[1], end[0], end[1]]


# --------------------------------------------------------------------------
# Conv and pools
# --------------------------------------------------------------------------


def conv_operands(ctx: Context, node: NodeDef) -> tuple[Value, np.ndarray, np.ndarray | None]:
    """(X, the constant W, the constant B or None) of a Conv or ConvTranspose."""
    consts = ctx.consts(node)
    w = constant_input(node, consts, 1, "W")
    if w is None:
        raise Unsupported("input 'W' is required")
    return ctx.value(node.inputs[0]), w, constant_input(node, consts, 2, "B")


def _conv(ctx: Context, node: NodeDef) -> None:
    x, w, b = conv_operands(ctx, node)
    spatial = w.ndim - 2
    order = _spatial(x, spatial, "convolution")
    kernel = tuple(w.shape[2:])
    if node.attr("kernel_shape") and tuple(node.attr("kernel_shape")) != kernel:
        given = list(node.attr("kernel_shape"))
        raise Unsupported(f"attribute 'kernel_shape' {given} differs from the weights' {list(kernel)}")
    strides = node.attr("strides") or [1] * spatial
    dilations = node.attr("dilations") or [1] * spatial
    begin, end = _pads(node, x.shape[2:], kernel, strides, dilations)
    strides, dilations, padding = _as_2d(spatial, strides, dilations, begin, end)
    w4 = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2]) if spatial == 1 else w
    weights = ctx.weight(np.transpose(w4, (2, 3, 1, 0)), node.inputs[1])
    attrs = {"strides": strides, "padding": padding, "dilation": dilations, "groups": int(node.attr("group", 1))}
    xin = ctx.in_order(x, order)
    t = _out(node)
    if b is None:
        ctx.node(t, "conv2d", [xin, weights], order, **attrs)
        return
    conv = ctx.node(t, "conv2d", [xin, weights], order, part="conv", **attrs)
    ctx.node(t, "bias_add", [conv.hls, ctx.weight(b, node.input(2))], order)


def _pool(op: str):
    def convert(ctx: Context, node: NodeDef) -> None:
        x = ctx.value(node.inputs[0])
        kernel = list(node.attr("kernel_shape") or [])
        order = _spatial(x, len(kernel), "pooling")
        if any(ctx.is_read(o) for o in node.outputs[1:]):
            raise Unsupported("output 'Indices' is not supported")
        if any(d != 1 for d in node.attr("dilations") or []):
            raise Unsupported(f"attribute 'dilations' {node.attr('dilations')} must be all 1 for pools")
        strides = node.attr("strides") or [1] * len(kernel)
        begin, end = _pads(node, x.shape[2:], kernel, strides, [1] * len(kernel))
        include_pad = bool(node.attr("count_include_pad", 0))
        if node.attr("ceil_mode", 0):
            extra = [_ceil_extra(*args) for args in zip(x.shape[2:], begin, end, kernel, strides)]
            if include_pad and any(extra):
                raise Unsupported("ceil_mode=1 with count_include_pad=1 is not supported")
            end = [e + more for e, more in zip(end, extra)]
        strides, _, padding = _as_2d(len(kernel), strides, [1] * len(kernel), begin, end)
        pool_size = [1, kernel[0]] if len(kernel) == 1 else kernel
        attrs = {"pool_size": pool_size, "strides": strides, "padding": padding}
        if op == "avg_pool2d":
            attrs["count_include_pad"] = include_pad
        ctx.node(_out(node), op, [ctx.in_order(x, order)], order, **attrs)

    return convert


def global_pool(op: str):
    """GlobalAveragePool (``mean``) or another reduction ``op`` over the spatial axes, keeping them."""

    def convert(ctx: Context, node: NodeDef) -> None:
        x = ctx.value(node.inputs[0])
        if x.rank < 3:
            raise Unsupported(f"input must have at least 3 dims [N, C, ...], not {x.rank}")
        if op == "mean" and x.rank in (3, 4):
            order = layout.channel_last(x.rank, unit_height=True)
            ctx.node(_out(node), "global_avg_pool", [ctx.in_order(x, order)], order)
            return
        axes = sorted(layout.axis_of(x.order, a) for a in range(2, x.rank))
        ctx.node(_out(node), op, [x.hls], x.order, axes=axes, keepdims=True)

    return convert


# --------------------------------------------------------------------------
# Gemm and MatMul
# --------------------------------------------------------------------------


def _transposed_view(x: Value) -> Value:
    return Value(x.hls, x.shape[::-1], layout.transposed(x.order, (1, 0)))


def _gemm_c(ctx: Context, node: NodeDef, beta: float, a_shape, b_shape):
    """Gemm's C as ``beta * C`` (a constant folded, or a Value with beta still to apply), None when it adds
    nothing; C must broadcast to the output [M, N] (ONNX's unidirectional broadcasting)."""
    name = node.input(2)
    if not name or beta == 0.0:
        return None
    c = ctx.operand(name)
    shape = tuple(np.shape(c)) if isinstance(c, np.ndarray) else c.shape
    out = (a_shape[1] if node.attr("transA", 0) else a_shape[0], b_shape[0] if node.attr("transB", 0) else b_shape[1])
    try:
        fits = len(shape) <= 2 and np.broadcast_shapes(shape, out) == out
    except ValueError:
        fits = False
    if not fits:
        raise Unsupported(f"input 'C' has shape {list(shape)}, expected one that broadcasts to the output {list(out)}")
    return beta * np.asarray(c, dtype=np.float64) if isinstance(c, np.ndarray) else c


def _gemm(ctx: Context, node: NodeDef) -> None:
    t = _out(node)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    c = _gemm_c(ctx, node, beta, ctx.shape(node.inputs[0]), ctx.shape(node.inputs[1]))
    bias = c is not None
    b = ctx.const(node.inputs[1])
    if b is not None:
        w = (b if node.attr("transB", 0) else b.T) * alpha  # [N, K], as dense takes it
        if node.attr("transA", 0):
            x, columns = ctx.plain(_transposed_view(ctx.value(node.inputs[0]))), None
        else:
            x, columns = ctx.matrix(node.inputs[0])
        if columns is not None:
            w = w[:, columns]
        y = ctx.node(t, "dense", [x, ctx.weight(w, node.inputs[1])], layout.plain(2), part="dense" if bias else None)
    else:
        a = ctx.value(node.inputs[0])
        bv = ctx.value(node.inputs[1])
        a = _transposed_view(a) if node.attr("transA", 0) else a
        bv = _transposed_view(bv) if node.attr("transB", 0) else bv
        last = not bias and alpha == 1.0
        y = ctx.node(t, "matmul", [ctx.plain(a), ctx.plain(bv)], layout.plain(2), part=None if last else "matmul")
        if alpha != 1.0:
            y = binary(ctx, t, "mul", y, np.array(alpha), hints=("", f"{t}.alpha"), part="alpha" if bias else None)
    if isinstance(c, Value) and beta != 1.0:  # a computed C: beta * C by its own node
        c = binary(ctx, t, "mul", c, np.array(beta), hints=("", f"{t}.beta"), part="beta")
    if bias:
        binary(ctx, t, "add", y, c, hints=("", node.inputs[2]))


def _moves_innermost(value: Value) -> bool:
    """Holding ``value`` in plain layout takes a transpose that moves its innermost axis (a stage of its own that
    buffers the tensor and cannot fold its lanes)."""
    return any(kind == "transpose" and arg[-1] != len(arg) - 1
               for kind, arg in layout.steps(value.shape, value.order, layout.plain(value.rank)))


def _swap_last(value: Value) -> Value:
    """``value`` with its last two axes swapped (a Transpose that is not done, only a layout)."""
    perm = (*range(value.rank - 2), value.rank - 1, value.rank - 2)
    shape = tuple(value.shape[p] for p in perm)
    return replace(value, shape=shape, order=layout.transposed(value.order, perm))


def _matmul(ctx: Context, node: NodeDef) -> None:
    t = _out(node)
    a_name, b_name = node.inputs[:2]
    b = ctx.const(b_name)
    if b is not None and b.ndim <= 2 and ctx.const(a_name) is None:
        a_shape = ctx.shape(a_name)
        w = b[None, :] if b.ndim == 1 else b.T  # [N, K]
        if len(a_shape) == 2:
            x, columns = ctx.matrix(a_name)
            w = w if columns is None else w[:, columns]
        else:
            x = ctx.plain(ctx.value(a_name))
        rank = len(a_shape)
        if b.ndim == 2:
            ctx.node(t, "dense", [x, ctx.weight(w, b_name)], layout.plain(rank))
            return
        d = ctx.node(t, "dense", [x, ctx.weight(w, b_name)], layout.plain(rank), part="dense")
        ctx.node(t, "reshape", [d.hls], layout.plain(rank - 1), newshape=list(a_shape[:-1]))
        return
    # general case: numpy matmul of two tensors; a 1-D operand is a matrix whose added axis is dropped
    inputs, dropped, attrs = [], [], {}
    for i, name in enumerate((a_name, b_name)):
        entry = ctx.operand(name)
        vector = np.ndim(entry) == 1 if isinstance(entry, np.ndarray) else entry.rank == 1
        if vector:
            dropped.append(-2 if i == 0 else -1)
        if isinstance(entry, np.ndarray):
            inputs.append(ctx.weight(entry.reshape((1, -1) if i == 0 else (-1, 1)) if vector else entry, name))
        elif vector:
            shape = [1, entry.shape[0]] if i == 0 else [entry.shape[0], 1]
            matrix = ctx.node(t, "reshape", [ctx.plain(entry)], layout.plain(2), part=f"in{i}", newshape=shape)
            inputs.append(matrix.hls)
        elif i == 1 and _moves_innermost(entry) and not _moves_innermost(swapped := _swap_last(entry)):
            inputs.append(ctx.plain(swapped))  # attention's K^T: the stage holds K as it streams, read transposed
            attrs["transpose_b"] = True
        else:
            inputs.append(ctx.plain(entry))
    rank = max(len(ctx.builder.type_of(name).shape) for name in inputs)
    if not dropped:
        ctx.node(t, "matmul", inputs, layout.plain(rank), **attrs)
        return
    product = ctx.node(t, "matmul", inputs, layout.plain(rank), part="matmul", **attrs)
    keep = [d for i, d in enumerate(product.shape) if i - rank not in dropped]
    ctx.node(t, "reshape", [product.hls], layout.plain(len(keep)), newshape=keep)


# --------------------------------------------------------------------------
# BatchNormalization, Softmax, reductions
# --------------------------------------------------------------------------


def _batchnorm(ctx: Context, node: NodeDef) -> None:
    if node.attr("training_mode", 0):
        raise Unsupported("attribute 'training_mode' must be 0 (inference)")
    if any(ctx.is_read(o) for o in node.outputs[1:]):
        raise Unsupported("only output 'Y' is supported (the running statistics are training outputs)")
    x = ctx.value(node.inputs[0])
    if x.rank < 2:
        raise Unsupported(f"input 'X' must have at least 2 dims [N, C, ...], not {x.rank}")
    consts = ctx.consts(node)
    gamma, beta, mean, var = (
        np.asarray(constant_input(node, consts, i, what), dtype=np.float64)
        for i, what in enumerate(("scale", "B", "input_mean", "input_var"), start=1)
    )
    s = gamma / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
    t = _out(node)
    if not node.attr("spatial", 1):
        # opsets 6-8, spatial=0: statistics per element of a sample, [C, D1, ...]: an elementwise affine map
        if gamma.shape != x.shape[1:]:
            raise Unsupported(f"input 'scale' must have shape {list(x.shape[1:])} (spatial=0), not {list(gamma.shape)}")
        scaled = binary(ctx, t, "mul", x, s[None], hints=("", f"{t}.scale"), part="scale")
        binary(ctx, t, "add", scaled, (beta - mean * s)[None], hints=("", f"{t}.shift"))
        return
    order = x.order if x.order[-1] == 1 else layout.channel_last(x.rank, unit_height=True)
    scaled = ctx.node(t, "scale", [ctx.in_order(x, order), ctx.weight(s, f"{t}.scale")], order, part="scale")
    ctx.node(t, "bias_add", [scaled.hls, ctx.weight(beta - mean * s, f"{t}.shift")], order)


def _norm_weight(value: np.ndarray | None, n: int, what: str, default: float) -> np.ndarray:
    """A LayerNormalization's Scale or B as [N] (``default`` when omitted): [N], or a shape of ones ending in N or 1."""
    if value is None:
        return np.full(n, default)
    value = np.asarray(value, dtype=np.float64)
    if value.size not in (1, n) or any(d != 1 for d in value.shape[:-1]):
        raise Unsupported(f"input '{what}' must have shape [{n}] (the normalized axis), not {list(value.shape)}")
    return np.broadcast_to(value.reshape(-1), (n,)).copy()


def _normalization(op: str, inputs: tuple[tuple[str, float, str], ...]):
    """LayerNormalization (opset 17) and RMSNormalization (ONNX's opset 23, the node patterns.py writes for an
    RMSNorm decomposition) over the last axis, as ``op``: constant Scale (ones when omitted) and B (zeros when
    omitted) of the axis's size; stash_type is not needed (fixed point sums exactly, float32 in float64); only
    output Y."""

    def convert(ctx: Context, node: NodeDef) -> None:
        if any(ctx.is_read(o) for o in node.outputs[1:]):
            raise Unsupported("only output 'Y' is supported (Mean and InvStdDev are training outputs)")
        x = ctx.value(node.inputs[0])
        axis = node.attr("axis", -1)
        if not -x.rank <= axis < x.rank or axis % x.rank != x.rank - 1:
            raise Unsupported(f"attribute 'axis' is {axis}; only the last axis (-1) of the {x.rank}-dim input is "
                              "supported")
        axis %= x.rank
        n = x.shape[axis]
        consts = ctx.consts(node)
        t = _out(node)
        weights = []
        for i, (what, default, hint) in enumerate(inputs, start=1):
            value = _norm_weight(constant_input(node, consts, i, what), n, what, default)
            weights.append(ctx.weight(value, node.input(i) or f"{t}.{hint}"))
        order = tuple(a for a in x.order if a != axis) + (axis,)  # the normalized axis last
        ctx.node(t, op, [ctx.in_order(x, order), *weights], order, epsilon=float(node.attr("epsilon", 1e-5)))

    return convert


NORM_PATTERN_CONVERTERS = {"RMSNormalization": _normalization("rms_norm", (("scale", 1.0, "gamma"),))}
"""The converter of the RMSNormalization nodes patterns.py writes in its own domain (hlsfuse reads opsets up to 21,
before ONNX's RMSNormalization)."""


def _softmax(ctx: Context, node: NodeDef) -> None:
    x = ctx.value(node.inputs[0])
    t = _out(node)
    default = 1 if ctx.opset < 13 else -1
    axis = node.attr("axis", default)
    if not -x.rank <= axis < x.rank:
        raise Unsupported(f"attribute 'axis' {axis} is out of range for a {x.rank}-dim input")
    axis %= x.rank
    if x.mask is not None:  # an attention mask added or selected before it (masks.py)
        masked_softmax(ctx, t, x, axis if ctx.opset >= 13 or axis == x.rank - 1 else None)
        return
    if ctx.opset < 13 and math.prod(x.shape[axis + 1:]) > 1:
        # before opset 13 Softmax normalises over all axes from 'axis' on, as a 2-D [outer, inner]
        rows = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
        flat = ctx.node(t, "reshape", [ctx.plain(x)], layout.plain(2), part="2d", newshape=list(rows))
        soft = ctx.node(t, "softmax", [flat.hls], layout.plain(2), part="softmax", exp_int_bits=EXP_INT_BITS)
        ctx.node(t, "reshape", [soft.hls], layout.plain(x.rank), newshape=list(x.shape))
        return
    # hlsfuse's softmax runs over the last axis: hold the input with 'axis' last
    order = tuple(a for a in x.order if a != axis) + (axis,)
    ctx.node(t, "softmax", [ctx.in_order(x, order)], order, exp_int_bits=EXP_INT_BITS)


def _reduce(op: str, since: int):
    def convert(ctx: Context, node: NodeDef) -> None:
        x = ctx.value(node.inputs[0])
        axes = ints_input(node, ctx.consts(node), ctx.opset, since, "axes", 1)
        keep = bool(node.attr("keepdims", 1))
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                ctx.define(_out(node), x)
                return
            axes = tuple(range(x.rank))
        axes = normalize_axes(axes, x.rank)
        hls_axes = sorted(layout.axis_of(x.order, a) for a in axes)
        order = x.order if keep else layout.without(x.order, axes)
        ctx.node(_out(node), op, [x.hls], order, axes=hls_axes, keepdims=keep)

    return convert


NN_CONVERTERS = {
    "Conv": _conv,
    "MaxPool": _pool("max_pool2d"),
    "AveragePool": _pool("avg_pool2d"),
    "GlobalAveragePool": global_pool("mean"),
    "GlobalMaxPool": global_pool("max"),
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batchnorm,
    "LayerNormalization": _normalization("layer_norm", (("Scale", 1.0, "gamma"), ("B", 0.0, "beta"))),
    "Softmax": _softmax,
    "ReduceSum": _reduce("sum", 13),
    "ReduceMean": _reduce("mean", 18),
    "ReduceMax": _reduce("max", 18),
}
