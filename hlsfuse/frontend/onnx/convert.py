"""From a decoded ONNX ``Model`` to a verified hlsfuse ``Graph``.

    Model --frames--> Model for one sample --fold_batchnorm--> Model --per node, in order--> GraphBuilder --> Graph
                                      constant inputs only   -> numpy (fold.FOLDERS)
                                      Shape                  -> the known static shape
                                      otherwise              -> CONVERTERS[op]

A node that cannot be imported (unsupported op, attribute value or dynamic shape) does
not stop the import: its problem is recorded, its outputs get stand-ins of the shapes
ONNX shape inference found, and the rest of the graph is still checked. At the end,
all problems are raised together as one ``HlsfuseError``, so a user sees every
offending node at once and nothing is built.
"""

from __future__ import annotations

import numpy as np

from ...errors import HlsfuseError
from ...ir import Graph
from . import layout
from .batch import frames
from .context import Context
from .fold import FOLDERS, fold, fold_batchnorm, shape_slice
from .model import Model, NodeDef, Unsupported
from .ops_nn import NN_CONVERTERS
from .ops_quant import QDQ_CONVERTERS, QONNX_CONVERTERS
from .ops_tensor import TENSOR_CONVERTERS
from .quant import QONNX_DOMAINS, input_types

__all__ = ["convert", "CONVERTERS", "supported_ops"]

CONVERTERS = {**TENSOR_CONVERTERS, **NN_CONVERTERS, **QDQ_CONVERTERS}

_FLOAT_ELEMS = ("float32", "float16", "float64")

# ops whose input 0 is a channel-first tensor with spatial axes, and ops that pass
# such a tensor through unchanged (a 3-D graph input reaching the former is held N1LC)
_SPATIAL_OPS = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization"}
_PASS_THROUGH = {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "Identity", "Dropout", "Abs", "Neg", "Exp",
                 "Quant", "BipolarQuant", "Trunc", "QuantizeLinear", "DequantizeLinear"}


def supported_ops() -> tuple[list[str], list[str]]:
    """(ops imported as hlsfuse ops, ops supported only on constants, which are folded)."""
    computed = sorted(CONVERTERS)
    constant_only = sorted(set(FOLDERS) - set(CONVERTERS) | {"Shape"})
    return computed, constant_only


def convert(model: Model, precision) -> Graph:
    """Build the hlsfuse graph of ``model`` with the types chosen by ``precision``; a model exported for a
    batch is built for one sample (batch.py: the batch is frames)."""
    model, _ = frames(model)
    model = fold_batchnorm(model)
    ctx = Context(model, precision)
    problems: list[str] = []
    unknown_op = False
    lost: set[str] = set()  # outputs of failed nodes that have no stand-in

    spatial = _feeds_spatial(model)
    quantized = {} if precision.is_float else input_types(model, precision.approximate_scales)
    for info in model.inputs:
        try:
            _graph_input(ctx, info, info.name in spatial, quantized.get(info.name))
        except HlsfuseError as exc:
            problems.append(str(exc))
            if info.name not in ctx.values:
                lost.add(info.name)

    for node in model.nodes:
        if any(name in lost for name in node.inputs if name):
            lost.update(o for o in node.outputs if o)
            continue
        try:
            _convert_node(ctx, node)
        except HlsfuseError as exc:
            qonnx = node.domain in QONNX_DOMAINS and node.op in QONNX_CONVERTERS
            unknown_op |= not qonnx and (node.op not in CONVERTERS or bool(node.domain))
            problems.append(f"{node.where()}: {exc}")
            for out in node.outputs:
                if out and not _stand_in(ctx, out):
                    lost.add(out)

    for info in model.outputs:
        if info.name in lost:
            continue
        try:
            ctx.output(info.name)
            _check_declared(ctx, info)
        except HlsfuseError as exc:
            problems.append(f"output '{info.name}': {exc}")

    if problems:
        raise HlsfuseError(_report(model, problems, unknown_op))
    try:
        return ctx.builder.build()
    except HlsfuseError as exc:  # a constant the graph cannot hold (an initializer with no elements): say whose
        empty = [f"initializer '{k}' has shape {list(v.shape)}, no elements"
                 for k, v in model.initializers.items() if v.size == 0 and f"'{k}" in str(exc)]
        detail = "; ".join(empty) + " (a weight or constant operand needs at least one)" if empty else str(exc)
        raise HlsfuseError(f"{model.source}: cannot import the model: {detail}") from None


def _feeds_spatial(model: Model) -> set[str]:
    wants: set[str] = set()
    for node in reversed(model.nodes):
        if not node.inputs:
            continue
        if node.op in _SPATIAL_OPS or (node.op in _PASS_THROUGH and node.outputs and node.outputs[0] in wants):
            wants.add(node.inputs[0])
    return wants


def _graph_input(ctx: Context, info, feeds_spatial: bool, dtype=None) -> None:
    where = f"input '{info.name}'"
    if info.elem not in _FLOAT_ELEMS:
        raise Unsupported(f"{where} has element type {info.elem}; only float inputs are supported")
    if info.shape is None:
        raise Unsupported(f"{where} has no declared shape (dynamic shapes are not supported)")
    dynamic = [f"dim {i} is '{d}'" if isinstance(d, str) else f"dim {i} is unknown"
               for i, d in enumerate(info.shape) if not isinstance(d, int) or d < 1]
    if dynamic:
        # later nodes are still checked against size 1 in place of the dynamic dims
        ctx.graph_input(info.name, tuple(d if isinstance(d, int) and d >= 1 else 1 for d in info.shape),
                        layout.plain(len(info.shape)))
        raise Unsupported(f"{where} has a dynamic shape ({', '.join(dynamic)}); give every dim a fixed size, "
                          "e.g. export with static shapes or use onnx.tools.update_model_dims")
    shape = tuple(info.shape)
    if len(shape) == 4 or (len(shape) == 3 and feeds_spatial):  # the rule layout.to_graph_layout follows
        order = layout.channel_last(len(shape), unit_height=True)
    else:
        order = layout.plain(len(shape))
    ctx.graph_input(info.name, shape, order, dtype)


def _convert_node(ctx: Context, node: NodeDef) -> None:
    if node.domain:
        if node.domain in QONNX_DOMAINS and node.op in QONNX_CONVERTERS:
            QONNX_CONVERTERS[node.op](ctx, node)
            return
        raise Unsupported(f"unsupported op (domain '{node.domain}')")
    if node.op == "Shape":
        ctx.define(node.outputs[0], shape_slice(node, ctx.shape(node.inputs[0])))
        return
    args = ctx.consts(node)
    if node.op in FOLDERS and all(a is not None for name, a in zip(node.inputs, args) if name):
        for out, value in zip(node.outputs, fold(node, args, ctx.opset)):
            ctx.define(out, np.asarray(value))
        _keep_exact_type(ctx, node)
        return
    converter = CONVERTERS.get(node.op)
    if converter is None:
        if node.op in FOLDERS:
            computed = next(name for name, a in zip(node.inputs, args) if name and a is None)
            raise Unsupported(f"supported on constants only, but input '{computed}' is computed")
        raise Unsupported("unsupported op")
    converter(ctx, node)
    _keep_exact_type(ctx, node)


def _keep_exact_type(ctx: Context, node: NodeDef) -> None:
    """A constant computed from a quantized one (a Transpose, Reshape, Identity of it) may still be held by
    that quantizer's type: ``ctx.weight`` takes it where it holds the values exactly."""
    source = ctx.exact_types.get(node.input(0))
    for out in node.outputs:
        if source is not None and ctx.const(out) is not None and out not in ctx.exact_types:
            ctx.exact_types[out] = source


def _stand_in(ctx: Context, tensor: str) -> bool:
    shape = ctx.model.shapes.get(tensor)
    if shape is None:
        return False
    try:
        ctx.placeholder(tensor, shape)
    except HlsfuseError:
        return False
    return True


def _check_declared(ctx: Context, info) -> None:
    if info.shape is None or not all(isinstance(d, int) and d >= 1 for d in info.shape):
        return
    got = ctx.shape(info.name)
    if tuple(info.shape) != got:
        raise Unsupported(f"computed shape {list(got)} differs from the declared shape {list(info.shape)}")


def _report(model: Model, problems: list[str], unknown_op: bool) -> str:
    count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    text = f"{model.source}: cannot import the model ({count}): " + "; ".join(problems)
    if unknown_op:
        computed, constant_only = supported_ops()
        text += f". Supported ops: {', '.join(computed)}; on constants only: {', '.join(constant_only)}"
    return text
