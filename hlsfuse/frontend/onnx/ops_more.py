"""Converters of activations, Resize/Upsample and ConvTranspose.

    Elu, Selu, Softplus, Softsign,     the table ops of the same names (hlsfuse/ops/lut.py), their
    HardSigmoid, HardSwish, Erf        alpha, beta and gamma attributes passed on (ONNX's defaults)
    Gelu (opset 20; patterns.py        ``gelu``, ``approximate`` "none" or "tanh"; ``silu``
    rewrites decompositions into it),
    Silu (patterns.py's domain)
    Resize (opset 10..), Upsample      ``upsample2d`` nearest, when every output index reads input index
                                       out // s (integer factors on H and W; the coordinate and rounding
                                       modes are checked by computing ONNX's source index of every output
                                       index); bilinear and cubic are refused
    ConvTranspose                      zero insertion (``upsample2d`` mode 'zeros'), a crop where ONNX's
                                       padding exceeds the kernel, then a stride-1 ``conv2d`` of the flipped,
                                       transposed kernel:

        y = conv2d(zeros(x, s), flip(W)^T, padding: begin k-1-p_begin, end k-1-p_end+output_padding-(s-1))

    The zero-inserted input has H * s rows (its last s - 1 rows are the zeros after the last input row),
    so the end padding subtracts them. A 1-D op on [N, C, L] runs as the 2-D op on [N, 1, L, C].
"""

from __future__ import annotations

import math

import numpy as np

from . import layout
from .context import Context
from .fold import constant_input
from .model import NodeDef, Unsupported
from .ops_nn import NORM_PATTERN_CONVERTERS, conv_operands
from .ops_tensor import FINE_TABLE_BITS

__all__ = ["MORE_CONVERTERS", "MORE_SPATIAL", "MORE_PASS_THROUGH", "PATTERN_CONVERTERS"]


def _out(node: NodeDef) -> str:
    return node.outputs[0]


# --------------------------------------------------------------------------
# Activations: one table op each
# --------------------------------------------------------------------------


def _activation(op: str, table_bits: int | None = None, **defaults: float):
    def convert(ctx: Context, node: NodeDef) -> None:
        x = ctx.value(node.inputs[0])
        attrs = {name: float(node.attr(name, default)) for name, default in defaults.items()}
        if table_bits is not None:
            attrs["table_bits"] = table_bits
        ctx.node(_out(node), op, [x.hls], x.order, **attrs)

    return convert


_GELU_APPROXIMATIONS = ("none", "tanh")


def _gelu(ctx: Context, node: NodeDef) -> None:
    approximate = node.attr("approximate", "none")
    if approximate not in _GELU_APPROXIMATIONS:
        raise Unsupported(f"attribute 'approximate' is '{approximate}', expected one of "
                          f"{', '.join(_GELU_APPROXIMATIONS)}")
    x = ctx.value(node.inputs[0])
    ctx.node(_out(node), "gelu", [x.hls], x.order, approximate=approximate, table_bits=FINE_TABLE_BITS)


# --------------------------------------------------------------------------
# Resize and Upsample: nearest, integer factors
# --------------------------------------------------------------------------

_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nearest")
_ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_index(out: np.ndarray, scale: float, size_in: int, size_out: int, coordinates: str, rounding: str):
    """ONNX's input index of each output index ``out`` along one axis (onnx's reference implementation)."""
    if coordinates == "asymmetric":
        x = out / scale
    elif coordinates == "half_pixel":
        x = (out + 0.5) / scale - 0.5
    elif coordinates == "half_pixel_symmetric":
        adjustment = size_out / (scale * size_in)
        x = size_in / 2 * (1 - adjustment) + (out + 0.5) / scale - 0.5
    elif coordinates == "pytorch_half_pixel":
        x = (out + 0.5) / scale - 0.5 if size_out > 1 else np.zeros_like(out, dtype=np.float64)
    elif coordinates == "align_corners":
        x = out * (size_in - 1) / (size_out - 1) if size_out > 1 else np.zeros_like(out, dtype=np.float64)
    else:  # tf_half_pixel_for_nearest
        x = (out + 0.5) / scale
    if rounding == "floor":
        index = np.floor(x)
    elif rounding == "ceil":
        index = np.ceil(x)
    else:
        tie = x == np.floor(x) + 0.5
        index = np.where(tie, np.floor(x) if rounding == "round_prefer_floor" else np.ceil(x), np.round(x))
    return np.clip(index, 0, size_in - 1).astype(np.int64)


def _upsample(ctx: Context, node: NodeDef, scales, sizes, coordinates: str, rounding: str) -> None:
    """``upsample2d`` nearest of input 0 to ``sizes`` (or by ``scales``), per NCHW (or NCL) axis."""
    x = ctx.value(node.inputs[0])
    if x.rank not in (3, 4):
        raise Unsupported(f"input 'X' has {x.rank} dims; Resize/Upsample supports [N, C, L] and [N, C, H, W]")
    if sizes is None:
        if len(scales) != x.rank:
            raise Unsupported(f"input 'scales' has {len(scales)} values, expected {x.rank} (one per dim of 'X')")
        sizes = [math.floor(d * s) for d, s in zip(x.shape, scales)]
    else:
        if len(sizes) != x.rank:
            raise Unsupported(f"input 'sizes' has {len(sizes)} values, expected {x.rank} (one per dim of 'X')")
        scales = [o / d for o, d in zip(sizes, x.shape)]
    factors = []
    for axis, (d, o, s) in enumerate(zip(x.shape, sizes, scales)):
        if o % d or o < d:
            raise Unsupported(f"scale {s:g} of axis {axis} ({d} to {o}) is not an integer factor")
        f = o // d
        if axis < 2 and f != 1:
            raise Unsupported(f"scale {s:g} of axis {axis} ({'N' if axis == 0 else 'C'}) must be 1")
        index = _source_index(np.arange(o), float(s), d, o, coordinates, rounding)
        if not np.array_equal(index, np.arange(o) // f):
            raise Unsupported(f"coordinate_transformation_mode '{coordinates}' with nearest_mode '{rounding}' "
                              f"does not repeat each element {f} times along axis {axis}")
        factors.append(f)
    if all(f == 1 for f in factors):
        ctx.define(_out(node), x)
        return
    order = layout.channel_last(x.rank, unit_height=True)
    ctx.node(_out(node), "upsample2d", [ctx.in_order(x, order)], order, factors=factors[2:] if x.rank == 4
             else [1, factors[2]], mode="nearest")


def _nearest_only(node: NodeDef) -> None:
    mode = node.attr("mode", "nearest") or "nearest"
    if mode != "nearest":
        raise Unsupported(f"attribute 'mode' is '{mode}'; only 'nearest' is supported (interpolation is not)")


def _floats(value) -> list[float] | None:
    return None if value is None or np.size(value) == 0 else [float(v) for v in np.ravel(value)]


def _resize(ctx: Context, node: NodeDef) -> None:
    _nearest_only(node)
    consts = ctx.consts(node)
    rank = len(ctx.shape(node.inputs[0]))
    if ctx.opset < 11:
        scales, sizes = _floats(constant_input(node, consts, 1, "scales")), None
        coordinates, rounding = "asymmetric", "floor"  # Resize-10's nearest is Upsample's
    else:
        scales = _floats(constant_input(node, consts, 2, "scales"))
        sizes = constant_input(node, consts, 3, "sizes")
        sizes = None if sizes is None or np.size(sizes) == 0 else [int(v) for v in np.ravel(sizes)]
        coordinates = node.attr("coordinate_transformation_mode", "half_pixel") or "half_pixel"
        rounding = node.attr("nearest_mode", "round_prefer_floor") or "round_prefer_floor"
    if coordinates not in _COORDINATES:
        raise Unsupported(f"attribute 'coordinate_transformation_mode' is '{coordinates}', expected one of "
                          f"{', '.join(_COORDINATES)}")
    if rounding not in _ROUNDING:
        raise Unsupported(f"attribute 'nearest_mode' is '{rounding}', expected one of {', '.join(_ROUNDING)}")
    if (node.attr("keep_aspect_ratio_policy", "stretch") or "stretch") != "stretch" and sizes is not None:
        raise Unsupported(f"attribute 'keep_aspect_ratio_policy' is '{node.attr('keep_aspect_ratio_policy')}'; "
                          "only 'stretch' is supported")
    axes = node.attr("axes")
    if axes is not None:  # opset 18: scales or sizes of the listed axes only
        given = scales if sizes is None else sizes
        if given is None or len(given) != len(axes):
            raise Unsupported(f"attribute 'axes' lists {len(axes)} axes but 'scales'/'sizes' has another count")
        full = [1.0] * rank if sizes is None else list(ctx.shape(node.inputs[0]))
        for a, v in zip(axes, given):
            full[a % rank] = v
        scales, sizes = (full, None) if sizes is None else (None, full)
    if scales is None and sizes is None:
        raise Unsupported("needs input 'scales' or 'sizes' as a constant")
    _upsample(ctx, node, scales, sizes, coordinates, rounding)


def _legacy_upsample(ctx: Context, node: NodeDef) -> None:
    _nearest_only(node)
    if ctx.opset < 9:
        scales = _floats(node.attr("scales"))
    else:
        scales = _floats(constant_input(node, ctx.consts(node), 1, "scales"))
    if scales is None:
        raise Unsupported("needs 'scales' (an attribute before opset 9, a constant input from it)")
    _upsample(ctx, node, scales, None, "asymmetric", "floor")


# --------------------------------------------------------------------------
# ConvTranspose
# --------------------------------------------------------------------------


def _conv_transpose(ctx: Context, node: NodeDef) -> None:
    x, w, b = conv_operands(ctx, node)
    spatial = w.ndim - 2
    if spatial not in (1, 2) or x.rank != spatial + 2:
        raise Unsupported(f"a {x.rank}-dim input is not supported (1-D [N,C,L] and 2-D [N,C,H,W] are)")
    if int(node.attr("group", 1)) != 1:
        raise Unsupported(f"attribute 'group' is {node.attr('group')}; only 1 is supported")
    if any(d != 1 for d in node.attr("dilations") or []):
        raise Unsupported(f"attribute 'dilations' {list(node.attr('dilations'))} must be all 1")
    if (node.attr("auto_pad", "NOTSET") or "NOTSET") not in ("NOTSET", "VALID"):
        raise Unsupported(f"attribute 'auto_pad' is '{node.attr('auto_pad')}'; give explicit 'pads' instead")
    if node.attr("output_shape") is not None:
        raise Unsupported("attribute 'output_shape' is not supported; give 'pads' and 'output_padding' instead")
    kernel = list(w.shape[2:])
    strides = list(node.attr("strides") or [1] * spatial)
    pads = list(node.attr("pads") or [0] * 2 * spatial) if node.attr("auto_pad", "NOTSET") != "VALID" \
        else [0] * 2 * spatial
    extra = list(node.attr("output_padding") or [0] * spatial)
    if len(strides) != spatial or len(pads) != 2 * spatial or len(extra) != spatial:
        raise Unsupported(f"attributes 'strides', 'pads' and 'output_padding' must have {spatial}, {2 * spatial} "
                          f"and {spatial} values")
    if any(e >= s for e, s in zip(extra, strides)):
        raise Unsupported(f"attribute 'output_padding' {extra} must be smaller than 'strides' {strides}")
    begin = [k - 1 - p for k, p in zip(kernel, pads[:spatial])]
    end = [k - 1 - p + e - (s - 1) for k, p, e, s in zip(kernel, pads[spatial:], extra, strides)]
    if spatial == 1:
        w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
        strides, begin, end = [1, *strides], [0, *begin], [0, *end]
    t = _out(node)
    order = layout.channel_last(x.rank, unit_height=True)
    current = ctx.in_order(x, order)
    if strides != [1, 1]:
        current = ctx.node(t, "upsample2d", [current], order, part="zeros", factors=strides, mode="zeros").hls
    if any(v < 0 for v in begin + end):  # ONNX's padding beyond the kernel crops the zero-inserted input
        n, h, wd, c = ctx.builder.type_of(current).shape
        start = [0, max(0, -begin[0]), max(0, -begin[1])]
        stop = [n, h - max(0, -end[0]), wd - max(0, -end[1])]
        current = ctx.node(t, "slice", [current], order, part="crop", begin=start, end=stop).hls
    flipped = np.transpose(w[:, :, ::-1, ::-1], (2, 3, 0, 1))  # [KH, KW, C_in, C_out]
    attrs = {"padding": [max(0, begin[0]), max(0, begin[1]), max(0, end[0]), max(0, end[1])]}
    weights = ctx.weight(flipped, node.inputs[1])
    if b is None:
        ctx.node(t, "conv2d", [current, weights], order, **attrs)
        return
    conv = ctx.node(t, "conv2d", [current, weights], order, part="conv", **attrs)
    ctx.node(t, "bias_add", [conv.hls, ctx.weight(b, node.input(2))], order)


MORE_CONVERTERS = {
    "Elu": _activation("elu", alpha=1.0),
    "Selu": _activation("selu", alpha=1.67326319217681884765625, gamma=1.05070102214813232421875),
    "Softplus": _activation("softplus"),
    "Softsign": _activation("softsign"),
    "HardSigmoid": _activation("hard_sigmoid", alpha=0.2, beta=0.5),
    "HardSwish": _activation("hard_swish"),
    "Erf": _activation("erf", FINE_TABLE_BITS),
    "Gelu": _gelu,
    "Resize": _resize,
    "Upsample": _legacy_upsample,
    "ConvTranspose": _conv_transpose,
}

PATTERN_CONVERTERS = {"Silu": _activation("silu", FINE_TABLE_BITS), **NORM_PATTERN_CONVERTERS}
"""Converters of the nodes patterns.py writes in its own domain."""

MORE_SPATIAL = {"ConvTranspose", "Resize", "Upsample"}
"""Ops whose input 0 is a channel-first tensor with spatial axes (a 3-D graph input reaching them is held N1LC)."""

MORE_PASS_THROUGH = {"Elu", "Selu", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "Erf", "Gelu", "Silu"}
"""Ops that pass such a tensor through unchanged."""
