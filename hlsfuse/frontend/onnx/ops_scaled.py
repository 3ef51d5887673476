"""Converters that keep a tensor's affine (scaled.py) instead of computing it: the ops between an integer
accumulator and the next quantizer, the quantizers that absorb it, and the layers whose weights have float
scales.

    Relu, Clip                      clamp the affine                     (no node)
    Add/Sub/Mul/Div by a constant,  compose the affine                   (no node)
      BatchNormalization
    Transpose, Reshape, Flatten,    move the affine's channel axis       (the usual nodes on hw)
      Squeeze, Unsqueeze, MaxPool,
      GlobalMaxPool
    GlobalAveragePool               a sum on hw, the scale over the count
    Add/Sub of two computed tensors integer multiples of each on hw when the scales' ratio is p / q
    MatMul, Gemm, Conv              integer weights on hw; scale = input scale x weight scale per channel,
                                    offset = the bias and what the input offset contributes
    Quant, BipolarQuant,            the level, a step function of hw     (scaled.steps)
      QuantizeLinear/Dequantize-
      Linear, MultiThreshold

Any other op reading a tensor with an affine gets it materialized first (scaled.materialize).
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .context import Context, Deferred, Value
from .model import NodeDef, Unsupported
from .ops_nn import NN_CONVERTERS, global_pool
from .ops_tensor import TENSOR_CONVERTERS, binary, clip_bounds
from .quant import Quantizer, constant_type
from .scaled import (
    IDENTITY,
    TIE_BITS,
    Affine,
    Steps,
    fraction,
    materialize,
    steps,
    vector,
)

__all__ = ["convert_scaled", "materialize_inputs", "affine_of", "quantize_scaled", "multithreshold_scaled",
           "bipolar_affine"]

_ARITHMETIC = ("Add", "Sub", "Mul", "Div")
_EXACT_BITS = 32  # a float constant wider than this is not held exactly by a node type (precision exact)


def affine_of(ctx: Context, name: str) -> Affine | None:
    """The affine of ONNX tensor ``name`` (None: it is what its hlsfuse tensor holds)."""
    entry = ctx.values.get(name)
    if isinstance(entry, Deferred):
        entry = entry.source
    if isinstance(entry, Value) and entry.affine is not None and not entry.affine.is_identity:
        return entry.affine
    return None


def _set_affine(ctx: Context, name: str, affine: Affine | None) -> None:
    entry = ctx.values[name]
    if isinstance(entry, Deferred):
        ctx.values[name] = replace(entry, source=replace(entry.source, affine=affine))
    else:
        ctx.values[name] = replace(entry, affine=affine)


def convert_scaled(ctx: Context, node: NodeDef) -> bool:
    """Convert ``node`` here when it reads a tensor with an affine or a weight with float scales, or is a float
    affine op of a quantized model (precision exact); otherwise materialize the affines it reads and return
    False (the usual converter runs)."""
    affine = [n for n in node.inputs if n and affine_of(ctx, n) is not None]
    handler = _HANDLERS.get(node.op)
    scaled_weights = any(n in ctx.grids for n in node.inputs)
    wanted = handler is not None and (affine or scaled_weights or _starts_affine(ctx, node))
    if wanted and handler(ctx, node):
        return True
    if node.op not in ("Identity", "Dropout", "Cast", "QuantizeLinear"):  # an alias (or a QDQ pair) keeps it
        materialize_inputs(ctx, node)
    return False


def materialize_inputs(ctx: Context, node: NodeDef) -> None:
    """Compute the affines of ``node``'s inputs by nodes (for an op that reads real values)."""
    for name in node.inputs:
        if not name or affine_of(ctx, name) is None:
            continue
        entry = ctx.values[name]
        if isinstance(entry, Deferred):
            ctx.values[name] = entry = ctx.value(name)  # the flatten done, in ONNX order
        ctx.values[name] = materialize(ctx, name, entry, node.where())


def _starts_affine(ctx: Context, node: NodeDef) -> bool:
    """A float affine op on a plain tensor of a quantized model: BatchNormalization always (its constants are
    float64 quotients), arithmetic with a constant that no type of at most 32 bits holds exactly."""
    if not ctx.precision.exact:
        return False
    if node.op == "BatchNormalization":
        return True
    if node.op not in _ARITHMETIC:
        return False
    consts = [ctx.const(n) for n in node.inputs[:2]]
    computed = [n for n, c in zip(node.inputs[:2], consts) if c is None]
    if len(computed) != 1:
        return False
    const = next(c for c in consts if c is not None)
    if node.op == "Div":
        return True
    if node.op == "Mul" and not all(_power_of_two(v) for v in np.ravel(const)):
        return True  # a float scale (TensorNorm's): the next quantizer absorbs it, or the host applies it at an output
    return not all(_held(v) for v in np.ravel(const))


def _power_of_two(value: float) -> bool:
    """Whether ``value`` is 0 or +-2^k: a multiplication by it is a shift."""
    f = abs(Fraction(float(value)))
    return f == 0 or (f.numerator & (f.numerator - 1) == 0 and f.denominator & (f.denominator - 1) == 0)


def _held(value: float) -> bool:
    """Whether a type of at most _EXACT_BITS bits holds ``value`` exactly (its raw integer and a sign bit)."""
    f = Fraction(float(value))
    return f.denominator & (f.denominator - 1) == 0 and abs(f.numerator).bit_length() + 1 <= _EXACT_BITS


# --------------------------------------------------------------------------
# Ops that only change the affine
# --------------------------------------------------------------------------


def _x(ctx: Context, node: NodeDef) -> tuple[Value, Affine]:
    x = ctx.value(node.inputs[0])
    return x, affine_of(ctx, node.inputs[0]) or IDENTITY


def _relu(ctx: Context, node: NodeDef) -> bool:
    x, a = _x(ctx, node)
    ctx.define(node.outputs[0], replace(x, affine=a.clamped(Fraction(0), None)))
    return True


def _clip(ctx: Context, node: NodeDef) -> bool:
    lo, hi = clip_bounds(ctx, node)
    x, a = _x(ctx, node)
    bound = (None if v is None else fraction(v) for v in (lo, hi))
    ctx.define(node.outputs[0], replace(x, affine=a.clamped(*bound)))
    return True


def _arithmetic(ctx: Context, node: NodeDef) -> bool:
    a_name, b_name = node.inputs[:2]
    ca, cb = ctx.const(a_name), ctx.const(b_name)
    if ca is None and cb is None:
        return node.op in ("Add", "Sub") and _sum_of_two(ctx, node)
    if ca is not None and cb is not None:
        return False
    computed, const = (b_name, ca) if ca is not None else (a_name, cb)
    x, a = ctx.value(computed), affine_of(ctx, computed) or IDENTITY
    found = vector(const, x.shape)
    if found is None or np.broadcast_shapes(np.shape(const), x.shape) != x.shape:
        return False
    values, axis = found
    c = [fraction(v) for v in values]
    zero, one = [Fraction(0)], [Fraction(1)]
    if node.op == "Add":
        mul, add = one, c
    elif node.op == "Sub":
        mul, add = (one, [-v for v in c]) if ca is None else ([Fraction(-1)], c)
    elif node.op == "Mul":
        mul, add = c, zero
    elif ca is None and all(v != 0 for v in c):  # x / c
        mul, add = [1 / v for v in c], zero
    else:
        return False
    ctx.define(node.outputs[0], replace(x, affine=a.then(mul, add, axis)))
    return True


def _batchnorm(ctx: Context, node: NodeDef) -> bool:
    if node.attr("training_mode", 0) or any(ctx.is_read(o) for o in node.outputs[1:]):
        return False
    consts = ctx.consts(node)
    if any(c is None for c in consts[1:5]):
        return False
    gamma, beta, mean, var = (np.asarray(c, dtype=np.float64).reshape(-1) for c in consts[1:5])
    x, a = _x(ctx, node)
    if x.rank < 2:
        return False
    s = gamma / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
    shift = beta - mean * s
    ctx.define(node.outputs[0], replace(x, affine=a.then(s, shift, 1, terms=4)))
    return True


# --------------------------------------------------------------------------
# Ops that move values: the usual nodes on hw, the affine's channel axis moved
# --------------------------------------------------------------------------


def _moved_axis(node: NodeDef, axis: int, shape_in, shape_out) -> int | None:
    if node.op == "Transpose":
        perm = list(node.attr("perm") or reversed(range(len(shape_in))))
        return perm.index(axis)
    before = math.prod(shape_in[:axis])
    for j, d in enumerate(shape_out):
        if d == shape_in[axis] and math.prod(shape_out[:j]) == before:
            return j
    return None


def _moving(ctx: Context, node: NodeDef) -> bool:
    a = affine_of(ctx, node.inputs[0])
    name = node.inputs[0]
    if node.op in ("MaxPool", "GlobalMaxPool") and any(s <= 0 for s in a.scale):
        return False  # max of a falling affine is a min
    shape_in = ctx.shape(name)
    _strip_and_run(ctx, node, a)
    if a.channels > 1:
        axis = a.axis if node.op in ("MaxPool", "GlobalMaxPool") else _moved_axis(node, a.axis, shape_in,
                                                                                   ctx.shape(node.outputs[0]))
        if axis is None:
            raise Unsupported(f"input '{name}' has a scale per channel, which this reshape mixes; put a quantizer "
                              "with one scale before it")
        a = a.moved(axis)
    _set_affine(ctx, node.outputs[0], a)
    return True


def _strip_and_run(ctx: Context, node: NodeDef, a: Affine, converter=None) -> None:
    name = node.inputs[0]
    kept = ctx.values[name]
    _set_affine(ctx, name, None)
    try:
        (converter or _USUAL[node.op])(ctx, node)
    finally:
        ctx.values[name] = kept


def _global_average(ctx: Context, node: NodeDef) -> bool:
    a = affine_of(ctx, node.inputs[0])
    if not a.unclamped:
        return False
    shape = ctx.shape(node.inputs[0])
    count = math.prod(shape[2:])
    _strip_and_run(ctx, node, a, global_pool("sum"))
    _set_affine(ctx, node.outputs[0], a.then([Fraction(1, count)], [Fraction(0)], None))
    return True


def _sum_of_two(ctx: Context, node: NodeDef) -> bool:
    """a +- b with affines s_a * h_a + o_a and s_b * h_b + o_b: with s_a / s_b = p / q per channel (lowest terms),
    g * (p * h_a +- q * h_b) + (o_a +- o_b), g = s_a / p; p and q must be at most 2^16."""
    names = node.inputs[:2]
    values = [ctx.value(n) for n in names]
    affines = [affine_of(ctx, n) or IDENTITY for n in names]
    if values[0].shape != values[1].shape or not all(a.unclamped for a in affines):
        return False
    axes = {a.axis for a in affines if a.channels > 1}
    if len(axes) > 1:
        return False
    axis = axes.pop() if axes else None
    channels = values[0].shape[axis] if axis is not None else 1
    sa, sb = ([a.at(c)[0] for c in range(channels)] for a in affines)
    ratios = [x / y if y else None for x, y in zip(sa, sb)]
    if any(r is None or r <= 0 for r in ratios):
        return False
    p = [r.numerator for r in ratios]
    q = [r.denominator for r in ratios]
    if max(p + q) > 1 << 16:
        raise Unsupported(f"the scales of '{names[0]}' and '{names[1]}' are in the ratio {p[0]}/{q[0]}; an exact sum "
                          "needs multipliers of more than 16 bits (quantize both with one scale)")
    t = node.outputs[0]
    shape = [1] * values[0].rank
    if axis is not None:
        shape[axis] = channels
    stripped = [replace(v, affine=None) for v in values]
    terms = []
    for i, (v, factor) in enumerate(zip(stripped, (p, q))):
        if all(f == 1 for f in factor):
            terms.append(v)
        else:
            weights = np.asarray(factor, dtype=np.float64).reshape(shape) if axis is not None else np.float64(factor[0])
            terms.append(binary(ctx, t, "mul", v, weights, hints=("", f"{t}.ratio{i}"), part=f"ratio{i}"))
    op = "add" if node.op == "Add" else "sub"
    out = binary(ctx, t, op, terms[0], terms[1])
    g = [x / f for x, f in zip(sa, p)]
    offsets = [affines[0].at(c)[1] + (1 if op == "add" else -1) * affines[1].at(c)[1] for c in range(channels)]
    terms_count = affines[0].terms + affines[1].terms
    ctx.define(t, replace(out, affine=Affine.of(g, offsets, axis, terms_count)))
    return True


# --------------------------------------------------------------------------
# Layers with constant weights
# --------------------------------------------------------------------------


def _layer(ctx: Context, node: NodeDef) -> bool:
    """MatMul / Gemm / Conv with constant weights on hw: integer weights where they have float scales, and an
    input scale per input channel folded into them when the scales are small integer multiples of one."""
    x_name, w_name = node.inputs[:2]
    w = ctx.const(w_name)
    if w is None or ctx.const(x_name) is not None:
        return False
    a = affine_of(ctx, x_name) or IDENTITY
    axes = _weight_axes(node, w)
    x_rank = len(ctx.shape(x_name))
    if axes is None or not a.unclamped or (a.channels > 1 and a.axis != (1 if node.op == "Conv" else x_rank - 1)):
        return False  # materialized first (a quantizer normally sits between)
    out_axis, in_axis = axes
    channels = w.shape[out_axis]
    grid = ctx.grids.get(w_name)
    ints, w_scale = w, [Fraction(1)] * channels
    if grid is not None:
        g = np.broadcast_to(grid, w.shape)
        per_channel = np.moveaxis(g, out_axis, 0).reshape(channels, -1)
        if np.all(per_channel == per_channel[:, :1]):  # else the weights stay real (exact dyadic) values
            ints, w_scale = np.round(w / g), [fraction(v) for v in per_channel[:, 0]]
    unit, ratios = _common_unit(x_name, [a.at(k)[0] for k in range(w.shape[in_axis])])
    shape = [1] * w.ndim
    shape[in_axis] = -1
    if any(r != 1 for r in ratios):
        ints = ints * np.asarray(ratios, dtype=np.float64).reshape(shape)
    offsets_in = np.asarray([a.at(k)[1] for k in range(w.shape[in_axis])], dtype=object).reshape(shape)
    padded = any(node.attr("pads") or []) or node.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID")
    if any(a.offset) and node.op == "Conv" and padded:
        return False  # the padding is a real 0, which is no level: materialized first
    key = w_name
    if ints is not w or any(r != 1 for r in ratios):
        key = ctx.fresh(f"{w_name}.levels")
        ctx.values[key] = ints
        if ints is not w:  # integer levels: held exactly (real weights times ratios: the precision's type)
            ctx.exact_types[key] = constant_type(ints.astype(np.int64), 0)
    alpha = fraction(node.attr("alpha", 1.0)) if node.op == "Gemm" else Fraction(1)
    bias = _bias(ctx, node, channels)
    if bias is None:
        return False
    # what the input offsets add to each output channel: the sum of its real weights times the offsets (exact)
    sums = [Fraction(0)] * channels
    if any(a.offset):
        weights = np.vectorize(fraction, otypes=[object])(np.asarray(w, dtype=np.float64))
        sums = [sum(row) for row in np.moveaxis(weights * offsets_in, out_axis, 0).reshape(channels, -1)]
    scales = [unit * s * alpha for s in w_scale]
    offsets = [total * alpha + b for total, b in zip(sums, bias)]
    attrs = {k: v for k, v in node.attrs.items() if k not in ("alpha", "beta")}
    inner = replace(node, inputs=(x_name, key), attrs=attrs)
    _strip_and_run(ctx, inner, a, NN_CONVERTERS[node.op])
    fan_in = int(np.prod(w.shape)) // channels
    out_rank = len(ctx.shape(node.outputs[0]))
    axis = 1 if node.op == "Conv" else out_rank - 1
    _set_affine(ctx, node.outputs[0], Affine.of(scales, offsets, axis, a.terms + fan_in))
    return True


def _common_unit(x_name: str, scales: list[Fraction]) -> tuple[Fraction, list[int]]:
    """(g, p) with scales[k] = g * p[k], p integers: g the greatest such rational; p at most 2^16."""
    nonzero = [v for v in scales if v != 0] or [Fraction(1)]
    numerators = math.gcd(*(v.numerator for v in nonzero))
    denominators = math.lcm(*(v.denominator for v in nonzero))
    unit = Fraction(numerators, denominators)
    ratios = [int(v / unit) for v in scales]
    if max(abs(r) for r in ratios) > 1 << 16:
        shown = ", ".join(f"{float(v):.4g}" for v in scales[:3])
        raise Unsupported(f"input '{x_name}' has a scale per channel ({shown}, ...) whose ratios need integer weights "
                          "of more than 16 more bits; quantize it with one scale per tensor (as Brevitas does by "
                          "default) or with power-of-two ratios")
    return unit, ratios


def _weight_axes(node: NodeDef, w: np.ndarray) -> tuple[int, int] | None:
    """(the output-channel axis of the weights, their input-channel axis), or None when not a plain layer."""
    if node.op == "Conv":
        return (0, 1) if int(node.attr("group", 1)) == 1 else None
    if w.ndim != 2 or (node.op == "Gemm" and node.attr("transA", 0)):
        return None
    if node.op == "Gemm" and node.attr("transB", 0):
        return 0, 1
    return 1, 0


def _bias(ctx: Context, node: NodeDef, channels: int) -> list[Fraction] | None:
    index = {"Conv": 2, "Gemm": 2}.get(node.op)
    name = node.input(index) if index else ""
    if not name:
        return [Fraction(0)] * channels
    c = ctx.const(name)
    if c is None:
        return None
    beta = float(node.attr("beta", 1.0)) if node.op == "Gemm" else 1.0
    data = np.asarray(c, dtype=np.float64).reshape(-1) if np.size(c) in (1, channels) else None
    if data is None or (np.ndim(c) == 2 and np.shape(c)[0] != 1):
        return None
    data = np.broadcast_to(data, (channels,))
    return [fraction(v) * fraction(beta) for v in data]


# --------------------------------------------------------------------------
# Quantizers absorbing an affine
# --------------------------------------------------------------------------


def quantize_scaled(ctx: Context, tensor: str, x: Value, q: Quantizer, where: str) -> None:
    """Define ``tensor`` as ``q`` applied to the real value of ``x`` (its affine absorbed): the level as a step
    function of x's hlsfuse tensor. A per-tensor power-of-two scale gives the real values (a fixed type), any
    other scale the integer levels with the scale as the output's affine."""
    a = x.affine or IDENTITY
    found = vector(q.scales, x.shape)
    if found is None:
        raise Unsupported("scales that vary along more than one axis are not supported on a computed tensor")
    s_values, s_axis = found
    if a.channels > 1 and s_axis is not None and a.axis != s_axis:
        raise Unsupported(f"scales along axis {s_axis} and an input scaled along axis {a.axis} are not supported")
    axis = a.axis if a.channels > 1 else s_axis
    channels = x.shape[axis] if axis is not None else 1
    s = [fraction(v) for v in s_values]
    s = s * channels if len(s) == 1 else s
    power = len(set(s)) == 1 and s[0].numerator == 1 and s[0].denominator & (s[0].denominator - 1) == 0 or (
        len(set(s)) == 1 and s[0].denominator == 1 and s[0].numerator & (s[0].numerator - 1) == 0)
    if _holds_levels(ctx, x, a, s, q, power):
        ctx.define(tensor, replace(x, affine=a))
        return
    n, base, step = (1, -1, 2) if q.bipolar else (q.hi - q.lo, q.lo, 1)
    lines: dict[tuple[int, int], tuple] = {}

    def line(c: int, frac: int) -> tuple:
        """x / s at raw input r of grid 2^-frac as (P * r + Q) / D in integers, and the clamp bounds of x / s."""
        if (c, frac) not in lines:
            scale, offset, lo, hi = a.at(c)
            slope_, shift = scale / s[c] / (1 << frac) if frac >= 0 else scale / s[c] * (1 << -frac), offset / s[c]
            den = math.lcm(slope_.denominator, shift.denominator)
            bounds = tuple(None if v is None else v / s[c] for v in (lo, hi))
            lines[c, frac] = (int(slope_ * den), int(shift * den), den, *bounds)
        return lines[c, frac]

    def ratio(c: int, raw: int, frac: int) -> tuple[int, int, bool]:
        """x / s at ``raw`` as (numerator, denominator), and whether a clamp decided it."""
        p, q0, den, lo, hi = line(c, frac)
        num = p * raw + q0
        if lo is not None and num * lo.denominator <= lo.numerator * den:
            return lo.numerator, lo.denominator, True
        if hi is not None and num * hi.denominator >= hi.numerator * den:
            return hi.numerator, hi.denominator, True
        return num, den, False

    def count(c: int, raw: int, frac: int) -> int:
        num, den, _ = ratio(c, raw, frac)
        return (q.level_of(num, den) - base) // step

    tolerance = Fraction(a.terms + 2, 1 << TIE_BITS)

    def near(c: int, raw: int, frac: int) -> bool:
        num, den, clamped = ratio(c, raw, frac)
        return not clamped and q.near_boundary(num, den, tolerance)

    def edges(c: int, i: int) -> tuple[Fraction, ...]:
        """The hw values where x / s crosses level base + step * i's rounding boundaries (unclamped)."""
        scale, offset, _, _ = a.at(c)
        if scale == 0:
            return ()
        k = base + step * i
        ys = (Fraction(0),) if q.bipolar else (Fraction(k - 1), k - Fraction(1, 2), Fraction(k))
        return tuple((y * s[c] - offset) / scale for y in ys)

    rising = tuple(a.at(c)[0] >= 0 for c in range(channels))
    slope = tuple(abs(a.at(c)[0]) / s[c] / step for c in range(channels))
    unit = s[0] if power else Fraction(1)
    key = (a, tuple(s), q.lo, q.hi, q.mode, q.bipolar)
    if q.bipolar:  # the 1-bit code b (1: +s), its real value the affine 2 s b - s for the next layer to absorb
        value = steps(ctx, tensor, x, axis, Steps(n, Fraction(0), Fraction(1), count, rising, slope, near, edges,
                                                  key), where)
        ctx.define(tensor, replace(value, affine=bipolar_affine(s_values, s_axis)))
        return
    spec = Steps(n, base * unit, step * unit, count, rising, slope, near, edges, key)
    value = steps(ctx, tensor, x, axis, spec, where)
    if not power:
        ctx.define(tensor, replace(value, affine=Affine.of(s_values, [0], s_axis)))


def bipolar_affine(scales, axis: int | None) -> Affine:
    """The real value of a bipolar quantizer's 1-bit code b (1 where the input is at least 0): s (2 b - 1), per
    tensor or per channel of ONNX axis ``axis``. A layer with constant weights reading it absorbs the affine
    (``_layer``: W (2 s b - s) = 2 s W b - s W 1), so the code travels between stages as one bit and the layer's
    products are the code times the weights (lower/products.py: xnor for bipolar weights)."""
    s = np.ravel(np.asarray(scales, dtype=np.float64))
    return Affine.of(2 * s, -s, axis)


def _holds_levels(ctx: Context, x: Value, a: Affine, s, q: Quantizer, power: bool) -> bool:
    """Whether ``x`` already holds q's levels (a graph input typed by its quantizer: convert.input_types)."""
    if q.bipolar:  # a graph input holding the code b of s (2 b - 1) (quant.input_types)
        dtype = ctx.builder.type_of(x.hls).dtype
        return (not dtype.is_float and dtype.width == 1 and not dtype.signed and dtype.frac == 0 and a.unclamped
                and all(a.at(c)[:2] == (2 * s[c], -s[c]) for c in range(len(s))))
    if q.bipolar or not a.unclamped or any(o != 0 for o in a.offset) or power:
        return False
    dtype = ctx.builder.type_of(x.hls).dtype
    if dtype.is_float or dtype.frac != 0 or dtype.raw_min < q.lo or dtype.raw_max > q.hi:
        return False
    return all(a.at(c)[0] == s[c] for c in range(len(s)))


def multithreshold_scaled(ctx: Context, tensor: str, x: Value, thresholds: np.ndarray, channel: int,
                          out_scale: float, out_bias: float, where: str) -> None:
    """MultiThreshold on a fixed-point x: out_scale * #{i : x >= t[c, i]} + out_bias as a ladder on x's hlsfuse
    tensor (x's affine absorbed); the output is real (a fixed type) when out_scale and out_bias are dyadic, else
    the count with the affine out_scale * count + out_bias."""
    a = x.affine or IDENTITY
    if a.channels > 1 and a.axis != channel:
        raise Unsupported(f"an input scaled along axis {a.axis} with thresholds along axis {channel} is not supported")
    per_channel = thresholds.shape[0] > 1 or a.channels > 1
    axis = channel if per_channel else None
    channels = x.shape[channel] if per_channel else 1
    limits = [[fraction(v) for v in row] for row in np.broadcast_to(thresholds, (channels, thresholds.shape[1]))]
    n = thresholds.shape[1]

    def count(c: int, raw: int, frac: int) -> int:
        v = a.value(c, Fraction(raw, 1 << frac) if frac >= 0 else Fraction(raw << -frac))
        return sum(v >= t for t in limits[c])

    rising = tuple(a.at(c)[0] >= 0 for c in range(channels))
    scale, bias = fraction(out_scale), fraction(out_bias)
    dyadic = all(v.denominator & (v.denominator - 1) == 0 for v in (scale, bias))
    key = ("thresholds", a, tuple(map(tuple, limits)))
    spec = Steps(n, bias if dyadic else Fraction(0), scale if dyadic else Fraction(1), count, rising, (None,),
                 key=key)
    value = steps(ctx, tensor, x, axis, spec, where)
    if not dyadic:
        ctx.define(tensor, replace(value, affine=Affine.of([scale], [bias])))


_USUAL = {**TENSOR_CONVERTERS, **NN_CONVERTERS}

_HANDLERS = {
    "Relu": _relu,
    "Clip": _clip,
    "Add": _arithmetic,
    "Sub": _arithmetic,
    "Mul": _arithmetic,
    "Div": _arithmetic,
    "BatchNormalization": _batchnorm,
    "Transpose": _moving,
    "Reshape": _moving,
    "Flatten": _moving,
    "Squeeze": _moving,
    "Unsqueeze": _moving,
    "MaxPool": _moving,
    "GlobalMaxPool": _moving,
    "GlobalAveragePool": _global_average,
    "MatMul": _layer,
    "Gemm": _layer,
    "Conv": _layer,
}
