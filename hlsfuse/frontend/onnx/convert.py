"""From a decoded ONNX ``Model`` to a verified hlsfuse ``Graph``.

    Model --frames--> Model for one sample --fold_batchnorm--> --rewrite_patterns (GELU, SiLU)--> Model
        --per node, in order--> GraphBuilder --> Graph
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

from dataclasses import replace

import numpy as np

from ...errors import HlsfuseError
from ...ir import Graph
from . import layout
from .batch import frames
from .channels_last import CHANNELS_LAST_DOMAIN, channels_last_converters
from .context import Context
from .fold import FOLDERS, fold, fold_batchnorm, shape_slice
from .masks import attention_mask, refuse_masked
from .model import Model, NodeDef, Unsupported
from .ops_more import MORE_CONVERTERS, MORE_PASS_THROUGH, MORE_SPATIAL, PATTERN_CONVERTERS
from .ops_nn import NN_CONVERTERS
from .ops_quant import QDQ_CONVERTERS, QONNX_CONVERTERS
from .ops_scaled import affine_of, bipolar_affine, convert_scaled, materialize_inputs
from .ops_select import SELECT_CONVERTERS
from .ops_tensor import TENSOR_CONVERTERS
from .patterns import PATTERN_DOMAIN, rewrite_patterns
from .quant import QONNX_DOMAINS, input_types
from .scaled import Affine, scaling_of

__all__ = ["convert", "CONVERTERS", "input_orders", "supported_ops"]

CONVERTERS = {**TENSOR_CONVERTERS, **NN_CONVERTERS, **QDQ_CONVERTERS, **MORE_CONVERTERS, **SELECT_CONVERTERS}
CUSTOM_CONVERTERS = {
    **{(domain, op): convert for domain in QONNX_DOMAINS for op, convert in QONNX_CONVERTERS.items()},
    **{(CHANNELS_LAST_DOMAIN, op): convert for op, convert in channels_last_converters(NN_CONVERTERS).items()},
    **{(PATTERN_DOMAIN, op): convert for op, convert in PATTERN_CONVERTERS.items()},
}
"""Converters of the ops in custom domains, by (domain, op)."""

_FLOAT_ELEMS = ("float32", "float16", "float64")

# ops whose input 0 is a channel-first tensor with spatial axes (held channel-last, layout.py), and ops
# whose result keeps their inputs' layout, through which an input reaching the former is still held for it
_SPATIAL_OPS = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                "BatchNormalization"} | MORE_SPATIAL
_PASS_THROUGH = {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "Identity", "Dropout", "Abs", "Neg", "Exp",
                 "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Pad",
                 "Quant", "BipolarQuant", "Trunc", "QuantizeLinear", "DequantizeLinear"} | MORE_PASS_THROUGH


def supported_ops() -> tuple[list[str], list[str]]:
    """(ops imported as hlsfuse ops, ops supported only on constants, which are folded)."""
    computed = sorted(CONVERTERS)
    constant_only = sorted(set(FOLDERS) - set(CONVERTERS) | {"Shape"})
    return computed, constant_only


def convert(model: Model, precision) -> Graph:
    """Build the hlsfuse graph of ``model`` with the types chosen by ``precision``; a model exported for a
    batch is built for one sample (batch.py: the batch is frames)."""
    model, _ = frames(model)
    model = rewrite_patterns(fold_batchnorm(model))
    ctx = Context(model, precision)
    problems: list[str] = []
    unknown_op = False
    lost: set[str] = set()  # outputs of failed nodes that have no stand-in

    orders = input_orders(model)
    quantized = {} if precision.is_float else input_types(model, precision.approximate_scales, exact=True)
    for info in model.inputs:
        try:
            _graph_input(ctx, info, orders.get(info.name), quantized.get(info.name))
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
            custom = (node.domain, node.op) in CUSTOM_CONVERTERS
            unknown_op |= not custom and (node.op not in CONVERTERS or bool(node.domain))
            problems.append(f"{node.where()}: {exc}")
            for out in node.outputs:
                if out and not _stand_in(ctx, out, node):
                    lost.add(out)

    for info in model.outputs:
        if info.name in lost:
            continue
        try:
            affine = affine_of(ctx, info.name)
            ctx.output(info.name)
            if affine is not None:  # the host applies it to the integers (ir.Scaling)
                ctx.builder.scales[info.name] = scaling_of(affine, len(ctx.shape(info.name)))
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


def input_orders(model: Model) -> dict[str, layout.Order]:
    """The layout each graph input of known rank is held in (its ``ir.Input.source_axes``): the one its
    first layout-minded reader wants, so that no transpose stage follows the input. Walking from the input
    through ops that keep its layout, and through Transposes (which only relabel it, so the input is held
    in the order that makes the Transpose's result what its reader wants): a Conv, pool or BatchNormalization
    of rank 3 or 4 wants it channel-last (an NCHW input is held NHWC; a Keras NHWC input going through
    Transpose(0, 3, 1, 2) into a Conv is held as it is), qonnx's channels-last ops and graph outputs want it
    as the model has it, a Softmax wants its axis last. An input no such reader decides is held as the model
    declares it."""
    ranks = {name: len(shape) for name, shape in model.shapes.items()}
    ranks.update((i.name, len(i.shape)) for i in (*model.inputs, *model.outputs) if i.shape is not None)
    wants: dict[str, layout.Order] = {o.name: layout.plain(ranks[o.name]) for o in model.outputs if o.name in ranks}
    for node in reversed(model.nodes):  # so the first reader in model order decides
        x = node.input(0)
        rank = ranks.get(x)
        if rank is None:
            continue
        want = wants.get(node.outputs[0]) if node.outputs else None
        if node.domain == CHANNELS_LAST_DOMAIN:
            wants[x] = layout.plain(rank)
        elif not node.domain and node.op in _SPATIAL_OPS and rank in (3, 4) and node.attr("spatial", 1):
            wants[x] = layout.channel_last(rank, unit_height=True)
        elif not node.domain and node.op == "Transpose" and want is not None:
            perm = node.attr("perm") or list(reversed(range(rank)))
            wants[x] = tuple(None if a is None else perm[a] for a in want)
        elif node.op in _PASS_THROUGH and want is not None or _softmax_keeps(node, want, model.opset):
            held_rank = sum(a is not None for a in want)
            wants.update((name, want) for name in node.inputs if name and ranks.get(name) == held_rank)
    return {i.name: wants.get(i.name, layout.plain(len(i.shape))) for i in model.inputs if i.shape is not None}


def _softmax_keeps(node: NodeDef, want: layout.Order | None, opset: int) -> bool:
    """A Softmax (opset 13 on) whose reader wants it in a layout with the Softmax's axis last: its input
    in that layout needs no conversion either."""
    if node.domain or node.op != "Softmax" or want is None or opset < 13:
        return False
    return want[-1] == node.attr("axis", -1) % len(want)


def _graph_input(ctx: Context, info, order: layout.Order | None, typed=None) -> None:
    """Declare graph input ``info`` held in ``order``; ``typed``: (type, float scale or None, bipolar) of the
    quantizer reading it (``quant.input_types``)."""
    dtype, scale, bipolar = typed or (None, None, False)
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
        example = ",".join(str(d) if isinstance(d, int) and d >= 1 else "N" for d in info.shape)
        raise Unsupported(f"{where} has a dynamic shape ({', '.join(dynamic)}); give every dim a fixed size "
                          f"(hardware streams fixed shapes, e.g. a fixed sequence length): --input-shape "
                          f"{info.name}={example} with N the size to build for, or export with static shapes")
    value = ctx.graph_input(info.name, tuple(info.shape), order, dtype)
    if not layout.is_plain(order):
        ctx.builder.source_axes(value.hls, order)  # how to_graph_layout and to_onnx_layout convert its arrays
    if scale is not None:  # the input holds the integer levels (a bipolar code); the host computes them
        affine = bipolar_affine([scale], None) if bipolar else Affine.of([scale])
        ctx.define(info.name, replace(value, affine=affine))
        ctx.builder.scales[info.name] = scaling_of(affine, len(info.shape))


def _convert_node(ctx: Context, node: NodeDef) -> None:
    if node.domain:
        refuse_masked(ctx, node)
        custom = CUSTOM_CONVERTERS.get((node.domain, node.op))
        if custom is not None:
            if node.op not in ("Quant", "BipolarQuant", "MultiThreshold"):  # those absorb an affine
                materialize_inputs(ctx, node)
            custom(ctx, node)
            return
        raise Unsupported(f"unsupported op (domain '{node.domain}')")
    if node.op == "Shape":
        ctx.define(node.outputs[0], shape_slice(node, ctx.shape(node.inputs[0])))
        return
    if attention_mask(ctx, node):
        return
    refuse_masked(ctx, node)
    args = ctx.consts(node)
    if node.op in FOLDERS and all(a is not None for name, a in zip(node.inputs, args) if name):
        for out, value in zip(node.outputs, fold(node, args, ctx.opset)):
            ctx.define(out, np.asarray(value))
        _keep_exact_type(ctx, node)
        return
    if convert_scaled(ctx, node):
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


def _stand_in(ctx: Context, tensor: str, node: NodeDef) -> bool:
    """A placeholder of ``tensor``'s shape (ONNX shape inference's, or for a QONNX quantizer, whose shape
    inference onnx does not know, its input's), so that the nodes after a failed one are still checked."""
    shape = ctx.model.shapes.get(tensor)
    if shape is None and node.domain in QONNX_DOMAINS and node.inputs and node.inputs[0] in ctx.values:
        shape = ctx.shape(node.inputs[0])  # Quant, BipolarQuant, Trunc, MultiThreshold keep the shape
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
