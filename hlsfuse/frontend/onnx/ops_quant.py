"""Converters of quantized ONNX ops (the quantizers themselves are quant.py's): QONNX's ``Quant``,
``BipolarQuant``, ``Trunc`` and ``MultiThreshold``, and QDQ's ``QuantizeLinear -> DequantizeLinear``.

On a constant a quantizer is evaluated with numpy and the constant is typed to hold the result
exactly; on a computed tensor it becomes nodes, named after the ONNX tensor:

    rounding with an ap_fixed mode    cast -> T                (T: quant.range_type, with Q and SAT)
    CEIL                              neg -> mirror, neg -> T  (ceil(v) = -floor(-v))
    a range that is not T's           ... -> clip to [lo, hi]
    bipolar                           cast -> fixed<1,1,TRN,SAT> ({-1, 0}), scale by 2s, bias_add s (on a tensor
                                      with an affine: its 1-bit code, ops_scaled.quantize_scaled)
    float32 graphs                    the same, then cast -> float32
"""

from __future__ import annotations

import math

import numpy as np

from ...types import FLOAT32, FixedType
from . import layout
from .context import Context, Value
from .model import NodeDef, Unsupported
from .ops_scaled import materialize_inputs, multithreshold_scaled, quantize_scaled
from .quant import (
    CEIL,
    Quantizer,
    bit_range,
    bit_width,
    const_input,
    constant_type,
    flag,
    per_tensor,
    qdq_of,
    quant_of,
    range_type,
    require_zero,
    rounding,
    scale_fracs,
    tensor_frac,
)

__all__ = ["QONNX_CONVERTERS", "QDQ_CONVERTERS", "quantize"]

# --------------------------------------------------------------------------
# Emitting a quantizer on a computed tensor
# --------------------------------------------------------------------------


def quantize(ctx: Context, tensor: str, x: Value, q: Quantizer) -> None:
    """Define ONNX tensor ``tensor`` as ``q`` applied to ``x``: nodes named ``tensor`` and ``tensor.<part>``."""
    src = ctx.builder.type_of(x.hls).dtype
    if q.bipolar:
        _bipolar(ctx, tensor, x, q.frac)
        return
    target, clip = range_type(q.lo, q.hi, q.frac, "TRN" if q.mode == CEIL else q.mode)
    if not src.is_float and _holds(src, q):
        ctx.define(tensor, x)  # already on the grid and within the range: the quantizer changes nothing
        return
    steps = []
    if src == target:
        pass  # the graph input has the quantizer's type already (input_types): only the clip is left
    elif q.mode == CEIL:  # ceil(v) = -floor(-v); the negation saturates to a range that holds [-hi, -lo]
        mirror, _ = range_type(-q.hi, -q.lo, q.frac, "TRN")
        steps += [("neg", None), ("cast", mirror)] if src.is_float else [("neg", mirror)]
        steps.append(("neg", target))
    else:
        steps.append(("cast", target))
    if clip:
        steps.append(("clip", target))
    if ctx.precision.is_float:
        steps.append(("cast", FLOAT32))
    if not steps:  # a graph input of the quantizer's own type (a symmetric one: SAT_SYM)
        ctx.define(tensor, x)
        return
    _chain(ctx, tensor, x, steps, min=math.ldexp(q.lo, -q.frac), max=math.ldexp(q.hi, -q.frac))


def _holds(src: FixedType, q: Quantizer) -> bool:
    if src.frac > q.frac:
        return False
    shift = q.frac - src.frac
    return (src.raw_min << shift) >= q.lo and (src.raw_max << shift) <= q.hi


def _chain(ctx: Context, tensor: str, x: Value, steps, **clip) -> Value:
    """Nodes ``op -> dtype`` one after the other; the last computes ``tensor``."""
    current = x
    for i, (op, dtype) in enumerate(steps):
        last = i == len(steps) - 1
        attrs = clip if op == "clip" else {}
        part = None if last else f"{op}{i}" if op != "cast" else f"q{i}"
        current = ctx.node(tensor, op, [current.hls], current.order, part=part, dtype=dtype, **attrs)
    return current


def _bipolar(ctx: Context, tensor: str, x: Value, frac: int) -> None:
    """+2^-frac where x >= 0, else -2^-frac: u = floor(x) saturated to {-1, 0}, then 2^(1-frac) u + 2^-frac."""
    if x.rank == 0:
        raise Unsupported("a bipolar quantizer on a scalar is not supported")
    channels = layout.hls_shape(x.shape, x.order)[-1]
    sign = ctx.node(tensor, "cast", [x.hls], x.order, part="sign", dtype=FixedType(1, 1, True, "TRN", "SAT"))
    out = FixedType(2, 2 - frac)
    twice = ctx.weight(np.full(channels, math.ldexp(1.0, 1 - frac)), f"{tensor}.twice", FixedType(2, 3 - frac))
    scaled = ctx.node(tensor, "scale", [sign.hls, twice], x.order, part="twice", dtype=out)
    half = ctx.weight(np.full(channels, math.ldexp(1.0, -frac)), f"{tensor}.step", out)
    as_float = ctx.precision.is_float
    final = ctx.node(tensor, "bias_add", [scaled.hls, half], x.order, part="step" if as_float else None, dtype=out)
    if as_float:
        ctx.node(tensor, "cast", [final.hls], x.order, dtype=FLOAT32)


def _fold(ctx: Context, node: NodeDef, x: np.ndarray, q: Quantizer) -> None:
    """A quantizer on a constant: its exact values, and the type that holds them for its readers (with float
    scales: the scale of each element, from which a layer takes the integers: ops_scaled.py)."""
    ints, values = q.apply(x)
    _constant(ctx, node.outputs[0], ints, values, q)


def _constant(ctx: Context, out: str, ints: np.ndarray, values: np.ndarray, q: Quantizer) -> None:
    ctx.define(out, values)
    if q.frac is None:
        ctx.grids[out] = np.broadcast_to(q.scales, ints.shape).copy()
    else:
        ctx.exact_types[out] = constant_type(ints, q.frac)


def _scaled(ctx: Context, x: Value, q: Quantizer) -> bool:
    """Whether ``q`` on ``x`` needs the exact step-function form (ops_scaled.quantize_scaled): a float scale,
    per-channel scales, or an input whose real value is an affine of what it holds."""
    return (q.frac is None or np.size(q.frac) > 1 and np.any(np.ravel(q.frac) != np.ravel(q.frac)[0])
            or (x.affine is not None and not x.affine.is_identity))


# --------------------------------------------------------------------------
# Converters
# --------------------------------------------------------------------------


def _quant(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    q = quant_of(node, consts, ctx.precision.approximate_scales, exact=not ctx.precision.is_float)
    if consts[0] is not None:
        _fold(ctx, node, consts[0], q)
        return
    x = ctx.value(node.inputs[0])
    if _scaled(ctx, x, q):
        quantize_scaled(ctx, node.outputs[0], x, q, node.where())
        return
    quantize(ctx, node.outputs[0], x, per_tensor(q))


def _trunc(ctx: Context, node: NodeDef) -> None:
    """Trunc v2 (6 inputs): round to the input grid, then quantize to ``out_scale`` with ``out_bit_width``
    bits; Trunc v1 (5 inputs): drop in_bw - out_bw LSBs and keep the input scale (as qonnx executes it)."""
    consts = ctx.consts(node)
    approximate = ctx.precision.approximate_scales
    if len(node.inputs) not in (5, 6):
        raise Unsupported(f"expected 5 inputs (Trunc v1) or 6 (Trunc v2), not {len(node.inputs)}")
    frac = tensor_frac(node, consts, 1, "scale", approximate)
    require_zero(node, consts, 2)
    in_bits = bit_width(node, const_input(node, consts, 3, "in_bit_width"), "in_bit_width")
    mode = rounding(node, "FLOOR")
    if consts[0] is not None:
        raise Unsupported("Trunc of a constant is not supported")
    materialize_inputs(ctx, node)
    x = ctx.value(node.inputs[0])
    t = node.outputs[0]
    if len(node.inputs) == 6:
        out_frac = tensor_frac(node, consts, 4, "out_scale", approximate)
        out_bits = bit_width(node, const_input(node, consts, 5, "out_bit_width"), "out_bit_width")
        lo, hi = bit_range(out_bits, flag(node, "signed", 1), flag(node, "narrow", 0))
        quantize(ctx, t, _on_grid(ctx, t, x, frac, in_bits), Quantizer(out_frac, lo, hi, mode))
        return
    drop = in_bits - bit_width(node, const_input(node, consts, 4, "out_bit_width"), "out_bit_width")
    width = in_bits - drop + 1
    grid = Quantizer(frac - drop, -(1 << (width - 1)), (1 << (width - 1)) - 1, mode)
    cut = f"{t}.cut"
    quantize(ctx, cut, _on_grid(ctx, t, x, frac, in_bits), grid)
    kept = ctx.value(cut)
    dtype = ctx.builder.type_of(kept.hls).dtype
    if dtype.is_float:
        ctx.node(t, "mul", [kept.hls, ctx.weight(np.array(math.ldexp(1.0, -drop)), f"{t}.shift")], kept.order)
        return
    channels = layout.hls_shape(kept.shape, kept.order)[-1]
    shift = ctx.weight(np.full(channels, math.ldexp(1.0, -drop)), f"{t}.shift", FixedType(2, 2 - drop))
    ctx.node(t, "scale", [kept.hls, shift], kept.order, dtype=FixedType(dtype.width, dtype.int_bits - drop,
                                                                             dtype.signed))


def _on_grid(ctx: Context, tensor: str, x: Value, frac: int, bits: int) -> Value:
    """``x`` rounded to the grid 2^-frac (half to even) unless it is on it already (Trunc's first step)."""
    src = ctx.builder.type_of(x.hls).dtype
    if not src.is_float and src.frac <= frac:
        return x
    rounded = f"{tensor}.in"
    quantize(ctx, rounded, x, Quantizer(frac, -(1 << bits), (1 << bits) - 1, "RND_CONV"))
    return ctx.value(rounded)


def _quantize_linear(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    rank = len(ctx.shape(node.inputs[0]))
    q, zero, kind = qdq_of(node, consts, ctx.precision.approximate_scales, rank, exact=not ctx.precision.is_float)
    out = node.outputs[0]
    if consts[0] is not None:  # the integers, clipped to the integer type (per-axis zero points included)
        rounded = np.round(np.asarray(consts[0], dtype=np.float32) / q.scales.astype(np.float32))
        info = np.iinfo(kind)
        ctx.define(out, np.clip(rounded + zero, info.min, info.max).astype(kind))
        return
    readers = [n for n in ctx.model.nodes if out in n.inputs]
    if out in ctx.outputs or any(n.op != "DequantizeLinear" or n.inputs[0] != out for n in readers):
        raise Unsupported(f"output '{out}' must feed DequantizeLinear nodes only (hlsfuse computes real values, "
                          "not integer tensors)")
    ctx.pending[out] = (node, consts, q, ctx.value(node.inputs[0]))


def _dequantize_linear(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    pending = ctx.pending.get(node.inputs[0])
    rank = pending[3].rank if pending is not None else len(ctx.shape(node.inputs[0]))
    q, zero, _ = qdq_of(node, consts, ctx.precision.approximate_scales, rank, exact=not ctx.precision.is_float)
    out = node.outputs[0]
    if consts[0] is not None:
        ints = np.asarray(consts[0]).astype(np.int64) - zero
        _constant(ctx, out, ints, ints.astype(np.float64) * q.scales, q)
        return
    if pending is None:
        raise Unsupported(f"input '{node.inputs[0]}' must be a constant or the output of a QuantizeLinear")
    source, source_consts, quantizer, x = pending
    same = all(_same(source_consts[i], consts[i]) for i in (1, 2)) and source.attr("axis", 1) == node.attr("axis", 1)
    if not same:
        raise Unsupported(f"scale and zero point must be those of QuantizeLinear '{source.name}'")
    if _scaled(ctx, x, quantizer):
        quantize_scaled(ctx, out, x, quantizer, node.where())
        return
    quantize(ctx, out, x, per_tensor(quantizer))


def _same(a, b) -> bool:
    if a is None or b is None:
        return (a is None or not np.any(a)) and (b is None or not np.any(b))
    return np.array_equal(np.asarray(a), np.asarray(b))


_LAYOUT_CHANNEL = {2: 1, 3: 2, 4: 1}  # MultiThreshold's default data_layout per rank: NC, NWC, NCHW


def _multithreshold(ctx: Context, node: NodeDef) -> None:
    """count = #{i : x >= t[c, i]}, then out_scale * count + out_bias, exactly. A fixed-point x: a ladder on x's
    grid (ops_scaled.multithreshold_scaled); a float32 x (precision float32):

        x [.., C] -> reshape [.., C, 1] -> add -t -> fixed<1,1,TRN,SAT>: -1 where x < t, else 0
          -> sum over the n thresholds [.., C]: count - n -> scale by out_scale -> bias_add n * out_scale + out_bias
    """
    consts = ctx.consts(node)
    thresholds = np.asarray(const_input(node, consts, 1, "thresholds"), dtype=np.float64)
    if consts[0] is not None:
        raise Unsupported("MultiThreshold of a constant is not supported")
    x = ctx.value(node.inputs[0])
    layout_attr = node.attr("data_layout", "")
    channel = layout_attr.index("C") if layout_attr and "C" in layout_attr else _LAYOUT_CHANNEL.get(x.rank)
    if channel is None or channel >= x.rank:
        raise Unsupported(f"the channel axis of a {x.rank}-dim input is unknown (set attribute 'data_layout')")
    channels = x.shape[channel]
    if thresholds.ndim != 2 or thresholds.shape[0] not in (1, channels) or not np.all(np.isfinite(thresholds)):
        raise Unsupported(f"input 'thresholds' must be finite, of shape [{channels}, n] or [1, n], not "
                          f"{list(thresholds.shape)}")
    if not ctx.builder.type_of(x.hls).dtype.is_float:
        multithreshold_scaled(ctx, node.outputs[0], x, thresholds, channel, float(node.attr("out_scale", 1.0)),
                              float(node.attr("out_bias", 0.0)), node.where())
        return
    count = thresholds.shape[1]
    scale = scale_fracs(node, np.array(float(node.attr("out_scale", 1.0))), ctx.precision.approximate_scales)
    step = -int(scale)  # out_scale = 2^step
    offset = math.ldexp(count, step) + float(node.attr("out_bias", 0.0))
    offset_frac = _dyadic(offset, "out_bias")
    t = node.outputs[0]
    order = tuple(a for a in x.order if a != channel) + (channel,)
    wide = order + (None,)
    xin = ctx.in_order(x, order)
    shape = list(ctx.builder.type_of(xin).shape)
    column = ctx.node(t, "reshape", [xin], wide, part="x", newshape=shape + [1])
    limits = np.broadcast_to(thresholds, (channels, count)).reshape([1] * (len(shape) - 1) + [channels, count])
    diff = ctx.node(t, "add", [column.hls, ctx.weight(-limits, f"{t}.thresholds")], wide, part="diff")
    below = ctx.node(t, "cast", [diff.hls], wide, part="below", dtype=FixedType(1, 1, True, "TRN", "SAT"))
    tally, _ = range_type(-count, 0, 0, "TRN")
    current = ctx.node(t, "sum", [below.hls], order, part="count", dtype=FixedType(tally.width, tally.width),
                       axes=[len(shape)], keepdims=False)
    frac = max(-step, offset_frac)
    lo, hi = math.ldexp(offset - math.ldexp(count, step), frac), math.ldexp(offset, frac)
    out, _ = range_type(min(int(lo), 0), max(int(hi), 0), frac, "TRN")
    out = FixedType(out.width, out.int_bits, out.signed)
    finals = [("scale", step != 0), ("bias_add", offset != 0), ("cast", ctx.precision.is_float)]
    wanted = [op for op, needed in finals if needed] or ["cast"]
    for i, op in enumerate(wanted):
        last = i == len(wanted) - 1
        part = None if last else op
        if op == "scale":
            factor = ctx.weight(np.full(channels, math.ldexp(1.0, step)), f"{t}.out_scale", FixedType(2, 2 + step))
            scaled, _ = range_type(-count, 0, -step, "TRN")
            scaled = out if last else FixedType(scaled.width, scaled.int_bits, True)
            current = ctx.node(t, "scale", [current.hls, factor], order, part=part, dtype=scaled)
        elif op == "bias_add":
            bias_type = constant_type(np.array([int(math.ldexp(offset, offset_frac))]), offset_frac)
            bias = ctx.weight(np.full(channels, offset), f"{t}.out_bias", bias_type)
            current = ctx.node(t, "bias_add", [current.hls, bias], order, part=part, dtype=out)
        else:
            current = ctx.node(t, "cast", [current.hls], order, part=part,
                               dtype=FLOAT32 if ctx.precision.is_float else out)


def _dyadic(value: float, what: str) -> int:
    """The fewest fractional bits (at most 40) that hold ``value`` exactly."""
    for frac in range(0, 41):
        if math.ldexp(value, frac) == round(math.ldexp(value, frac)):
            return frac
    raise Unsupported(f"attribute '{what}' {value:g} needs more than 40 fractional bits")


QONNX_CONVERTERS = {"Quant": _quant, "BipolarQuant": _quant, "Trunc": _trunc, "MultiThreshold": _multithreshold}
QDQ_CONVERTERS = {"QuantizeLinear": _quantize_linear, "DequantizeLinear": _dequantize_linear}

