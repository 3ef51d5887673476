"""qonnx's channels-last ops: Conv, MaxPool and BatchNormalization in the domain
``qonnx.custom_op.channels_last``, as qonnx's ``ConvertToChannelsLastAndClean`` writes them.

qonnx executes such a node (``ChannelsLastWrappedOp.execute_node``) as the standard ONNX op
on its input moved to channels-first, and moves the result back:

    x [N, H, W, C] --to_channels_first--> [N, C, H, W] --standard op--> [N, C', H', W']
        --to_channels_last--> y [N, H', W', C']

A Conv's weights are moved the same way ([C_out, KH, KW, C_in/groups] -> [C_out, C_in/groups,
KH, KW]); its bias and the BatchNormalization parameters are per channel and stay as they are.
Here both moves of the activations are layout relabels, as an ONNX Transpose is (layout.py),
and the weight move is a numpy transpose at import, so a channels-last node becomes exactly the
hlsfuse nodes of the standard op, and an NHWC tensor between two such nodes stays as it is
held: no transpose stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from . import layout
from .context import Context, Value
from .model import NodeDef

__all__ = ["CHANNELS_LAST_DOMAIN", "CHANNELS_LAST_OPS", "to_channels_first", "channels_last_converters"]

CHANNELS_LAST_DOMAIN = "qonnx.custom_op.channels_last"
CHANNELS_LAST_OPS = ("Conv", "MaxPool", "BatchNormalization")

Converter = Callable[[Context, NodeDef], None]


def to_channels_first(rank: int) -> tuple[int, ...]:
    """qonnx's ``to_channels_first_args``: the Transpose perm taking [N, ..., C] to [N, C, ...]."""
    return (0, rank - 1, *range(1, rank - 1))


def _to_channels_last(rank: int) -> tuple[int, ...]:
    return (0, *range(2, rank), 1)


def _moved(value: Value, perm: tuple[int, ...]) -> Value:
    """``value`` seen through ``Transpose(perm)``: the same hlsfuse tensor, another layout."""
    return Value(value.hls, tuple(value.shape[p] for p in perm), layout.transposed(value.order, perm))


def _wrapped(standard: Converter) -> Converter:
    def convert(ctx: Context, node: NodeDef) -> None:
        x_name = node.inputs[0]
        x = ctx.value(x_name)
        first = to_channels_first(x.rank)
        views: dict[str, object] = {x_name: _moved(x, first)}
        if node.op == "Conv" and node.input(1) and ctx.const(node.input(1)) is not None:
            views[node.input(1)] = np.transpose(ctx.const(node.input(1)), first)
        # the standard converter reads the channels-first views under the model's own names, so that
        # the nodes and weights it adds are named as for a standard op; the model's values come back after
        saved = {name: ctx.values[name] for name in views}
        ctx.values.update(views)
        try:
            standard(ctx, NodeDef(node.name, node.op, node.inputs, node.outputs, node.attrs))
        finally:
            ctx.values.update(saved)
        y = ctx.value(node.outputs[0])
        ctx.define(node.outputs[0], _moved(y, _to_channels_last(y.rank)))

    return convert


def channels_last_converters(standard: Mapping[str, Converter]) -> dict[str, Converter]:
    """The converters of the channels-last ops, made from those of the standard ops."""
    return {op: _wrapped(standard[op]) for op in CHANNELS_LAST_OPS}
