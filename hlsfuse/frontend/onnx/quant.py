"""Quantized ONNX: QONNX's ``Quant``, ``BipolarQuant`` and ``Trunc``, and QDQ's
``QuantizeLinear -> DequantizeLinear`` pairs, mapped onto exact fixed-point types.

A quantizer with a power-of-two scale 2^-F rounds x / 2^-F to an integer with its rounding
mode and clips it to [lo, hi]: that is exactly an assignment to a fixed type on the grid
2^-F whose raw range is [lo, hi], with the matching ap_fixed modes (docs/onnx.md has the
table):

    Quant(b bits, signed)            fixed<b, b-F, Q, SAT>        narrow: SAT_SYM
    Quant(b bits, unsigned)          ufixed<b, b-F, Q, SAT>       narrow: and a clip to 2^b - 2
    QuantizeLinear/DequantizeLinear  the type of [qmin - zp, qmax - zp], RND_CONV, SAT (+ clip)
    ROUND -> RND_CONV   FLOOR -> TRN   ROUND_TO_ZERO -> TRN_ZERO   CEIL -> -(floor(-x)): two negs

On a constant (a weight) the quantizer is evaluated here with numpy and the constant gets the
narrowest type on the grid that holds the quantized values, so per-channel scales fold exactly
(the finest grid and the widest range of the channels). On a computed tensor it becomes a
``cast`` (or the graph input's own type, when the input feeds only this quantizer); one
hlsfuse tensor has one type, so per-channel scales on activations are refused. Scales that are
not powers of two are refused unless ``Precision.approximate_scales``, which takes the nearest
power of two and warns (``ScaleApproximation``) with the relative error.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ...types import FLOAT32, FixedType
from . import layout
from .context import Context, Value
from .model import Model, NodeDef, Unsupported

__all__ = ["QONNX_DOMAINS", "QONNX_CONVERTERS", "QDQ_CONVERTERS", "QUANTIZER_OPS", "ScaleApproximation",
           "is_quantized", "input_types"]

QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "onnx.brevitas")

CEIL = "CEIL"
ROUNDING = {"ROUND": "RND_CONV", "HALF_EVEN": "RND_CONV", "FLOOR": "TRN", "ROUND_TO_ZERO": "TRN_ZERO",
            "DOWN": "TRN_ZERO", "HALF_UP": "RND_INF", "HALF_DOWN": "RND_ZERO", "CEIL": CEIL}
"""QONNX rounding modes -> ap_fixed quantization modes (CEIL has none: it is floor of the negation, negated)."""

QUANTIZER_OPS = frozenset({"Quant", "BipolarQuant", "Trunc", "QuantizeLinear", "DequantizeLinear"})

_QDQ_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
               "int32": (-(1 << 31), (1 << 31) - 1)}  # int32: biases (DequantizeLinear of a constant)


class ScaleApproximation(UserWarning):
    """A quantizer scale that is not a power of two, replaced by the nearest one (approximate_scales)."""


@dataclass(frozen=True)
class Quantizer:
    """round(x * 2^frac) with ``mode``, clipped to [lo, hi], times 2^-frac; ``frac`` is an int, or an
    array broadcasting against a constant (per-channel scales); ``bipolar``: +-2^-frac by sign."""

    frac: object
    lo: int
    hi: int
    mode: str
    bipolar: bool = False

    def apply(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(integers q, exact real values q * 2^-frac) of constant ``x``."""
        v = np.ldexp(np.asarray(x, dtype=np.float64), np.asarray(self.frac, dtype=np.int64))
        if self.bipolar:
            q = np.where(v >= 0, 1.0, -1.0)
        else:
            q = np.clip(_ROUND[self.mode](v), self.lo, self.hi)
        q = q.astype(np.int64)
        return q, np.ldexp(q.astype(np.float64), -np.asarray(self.frac, dtype=np.int64))


_ROUND = {
    "RND_CONV": np.round,
    "TRN": np.floor,
    "TRN_ZERO": np.trunc,
    "RND_INF": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
    "RND_ZERO": lambda v: np.sign(v) * np.ceil(np.abs(v) - 0.5),
    CEIL: np.ceil,
}


def range_type(lo: int, hi: int, frac: int, quant: str) -> tuple[FixedType, bool]:
    """The narrowest type on the grid 2^-frac whose raw range holds [lo, hi], saturating, and whether
    a clip to [lo, hi] must follow (the range is not the type's, nor its symmetric one)."""
    if lo >= 0:
        width = max(hi.bit_length(), 1)
        return FixedType(width, width - frac, False, quant, "SAT"), lo != 0 or hi != (1 << width) - 1
    width = max((-lo - 1).bit_length(), hi.bit_length()) + 1
    top = (1 << (width - 1)) - 1
    if lo == -top - 1 and hi == top:
        return FixedType(width, width - frac, True, quant, "SAT"), False
    if lo == -top and hi == top:
        return FixedType(width, width - frac, True, quant, "SAT_SYM"), False
    return FixedType(width, width - frac, True, quant, "SAT"), True


def constant_type(q: np.ndarray, frac) -> FixedType:
    """The narrowest type holding the values q * 2^-frac exactly (``frac`` per element or one)."""
    fracs = np.broadcast_to(np.asarray(frac, dtype=np.int64), q.shape)
    top = int(fracs.max()) if q.size else 0
    raw = q * (np.int64(1) << (top - fracs)) if q.size else q
    lo, hi = (int(raw.min()), int(raw.max())) if q.size else (0, 0)
    dtype, _ = range_type(min(lo, 0), max(hi, 0), top, "TRN")
    return FixedType(dtype.width, dtype.int_bits)


# --------------------------------------------------------------------------
# Reading a quantizer's parameters
# --------------------------------------------------------------------------


def _const(node: NodeDef, consts, index: int, what: str) -> np.ndarray:
    if not node.input(index):
        raise Unsupported(f"input '{what}' is required")
    if consts[index] is None:
        raise Unsupported(f"input '{what}' must be a constant")
    return np.asarray(consts[index])


def _frac(node: NodeDef, scale: np.ndarray, approximate: bool) -> np.ndarray:
    """-log2 of each scale (integers), or the nearest ones with a warning when ``approximate``."""
    s = np.asarray(scale, dtype=np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise Unsupported(f"scale {_show(s)} must be positive and finite")
    exp = np.log2(s)
    near = np.round(exp)
    if np.array_equal(np.ldexp(1.0, near.astype(np.int64)), s):
        return (-near).astype(np.int64)
    if not approximate:
        raise Unsupported(f"scale {_show(s)} is not a power of two (hlsfuse maps power-of-two scales exactly; "
                          "approximate_scales=True, --approximate-scales on the command line, takes the nearest one)")
    error = float(np.max(np.abs(np.ldexp(1.0, near.astype(np.int64)) - s) / s))
    warnings.warn(ScaleApproximation(f"{node.where()}: scale {_show(s)} approximated by the nearest power of two "
                                     f"{_show(np.ldexp(1.0, near.astype(np.int64)))} (relative error up to "
                                     f"{error:.3g})"), stacklevel=2)
    return (-near).astype(np.int64)


def _show(values: np.ndarray) -> str:
    flat = np.ravel(values)
    if flat.size == 1 or np.all(flat == flat[0]):
        return f"{float(flat[0]):g}"
    return "[" + ", ".join(f"{float(v):g}" for v in flat[:4]) + (", ...]" if flat.size > 4 else "]")


def _int_attr(node: NodeDef, name: str, default: int) -> int:
    value = node.attr(name, default)
    if value not in (0, 1):
        raise Unsupported(f"attribute '{name}' must be 0 or 1, not {value}")
    return int(value)


def _mode(node: NodeDef, default: str) -> str:
    name = str(node.attr("rounding_mode", default)).upper()
    if name not in ROUNDING:
        raise Unsupported(f"attribute 'rounding_mode' is '{name}', expected one of {', '.join(ROUNDING)}")
    return ROUNDING[name]


def _bit_range(bits: int, signed: int, narrow: int) -> tuple[int, int]:
    if signed:
        return -(1 << (bits - 1)) + narrow, (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1 - narrow


def _bits(node: NodeDef, value: np.ndarray, what: str) -> int:
    if value.size != 1 or float(value.flat[0]) != int(value.flat[0]) or not 1 <= int(value.flat[0]) <= 62:
        raise Unsupported(f"input '{what}' must be one integer from 1 to 62, not {_show(value)}")
    return int(value.flat[0])


def _zero(node: NodeDef, consts, index: int) -> None:
    zero = _const(node, consts, index, "zeropt")
    if np.any(zero != 0):
        raise Unsupported(f"zero point {_show(zero)} must be 0 (hlsfuse maps symmetric quantizers; a zero point "
                          "shifts the grid)")


def quant_of(node: NodeDef, consts, approximate: bool) -> Quantizer:
    """The quantizer of a QONNX Quant or BipolarQuant node (its input 0 aside)."""
    frac = _frac(node, _const(node, consts, 1, "scale"), approximate)
    if node.op == "BipolarQuant":
        return Quantizer(frac, -1, 1, "TRN", bipolar=True)
    _zero(node, consts, 2)
    bits = _bits(node, _const(node, consts, 3, "bitwidth"), "bitwidth")
    signed, narrow = _int_attr(node, "signed", 1), _int_attr(node, "narrow", 0)
    if bits == 1 and signed:  # as qonnx executes it: a 1-bit signed Quant is bipolar
        return Quantizer(frac, -1, 1, "TRN", bipolar=True)
    return Quantizer(frac, *_bit_range(bits, signed, narrow), _mode(node, "ROUND"))


def qdq_of(node: NodeDef, consts, approximate: bool, rank: int) -> tuple[Quantizer, np.ndarray, str]:
    """(quantizer on the integer range less the zero point, zero point, integer type) of a QuantizeLinear
    or DequantizeLinear node; per-axis scales are shaped to broadcast along ``axis`` of a ``rank``-dim input."""
    scale = _const(node, consts, 1, "scale")
    zero = np.asarray(consts[2]) if node.input(2) and consts[2] is not None else np.zeros((), np.uint8)
    if node.input(2) and consts[2] is None:
        raise Unsupported("input 'zero_point' must be a constant")
    kind = zero.dtype.name
    if kind not in _QDQ_RANGES:
        raise Unsupported(f"zero point type {kind} is not supported (expected {', '.join(_QDQ_RANGES)})")
    if node.attr("block_size", 0):
        raise Unsupported("blocked quantization (attribute 'block_size') is not supported")
    if scale.ndim == 1 and scale.size > 1:
        axis = int(node.attr("axis", 1)) % max(rank, 1)
        shape = [1] * rank
        shape[axis] = scale.size
        scale, zero = scale.reshape(shape), (zero.reshape(shape) if zero.ndim == 1 else zero)
    frac = _frac(node, scale, approximate)
    qmin, qmax = _QDQ_RANGES[kind]
    zero = zero.astype(np.int64)
    if zero.size == 1:
        return Quantizer(frac, qmin - int(zero.flat[0]), qmax - int(zero.flat[0]), "RND_CONV"), zero, kind
    return Quantizer(frac, qmin - int(zero.max()), qmax - int(zero.min()), "RND_CONV"), zero, kind


def _per_tensor(q: Quantizer, what: str = "scale") -> Quantizer:
    frac = np.ravel(q.frac)
    if frac.size and np.any(frac != frac[0]):
        raise Unsupported(f"per-channel {what}s on a computed tensor are not supported (an hlsfuse tensor has one "
                          "type; quantize activations per tensor)")
    return Quantizer(int(frac[0]), q.lo, q.hi, q.mode, q.bipolar)


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
    """A quantizer on a constant: its exact values, and the type that holds them for its readers."""
    ints, values = q.apply(x)
    out = node.outputs[0]
    ctx.define(out, values)
    ctx.exact_types[out] = constant_type(ints, q.frac)


# --------------------------------------------------------------------------
# Converters
# --------------------------------------------------------------------------


def _quant(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    q = quant_of(node, consts, ctx.precision.approximate_scales)
    if consts[0] is not None:
        _fold(ctx, node, consts[0], q)
        return
    quantize(ctx, node.outputs[0], ctx.value(node.inputs[0]), _per_tensor(q))


def _trunc(ctx: Context, node: NodeDef) -> None:
    """Trunc v2 (6 inputs): round to the input grid, then quantize to ``out_scale`` with ``out_bit_width``
    bits; Trunc v1 (5 inputs): drop in_bw - out_bw LSBs and keep the input scale (as qonnx executes it)."""
    consts = ctx.consts(node)
    approximate = ctx.precision.approximate_scales
    if len(node.inputs) not in (5, 6):
        raise Unsupported(f"expected 5 inputs (Trunc v1) or 6 (Trunc v2), not {len(node.inputs)}")
    frac = int(_per_tensor(Quantizer(_frac(node, _const(node, consts, 1, "scale"), approximate), 0, 0, "TRN")).frac)
    _zero(node, consts, 2)
    in_bits = _bits(node, _const(node, consts, 3, "in_bit_width"), "in_bit_width")
    mode = _mode(node, "FLOOR")
    if consts[0] is not None:
        raise Unsupported("Trunc of a constant is not supported")
    x = ctx.value(node.inputs[0])
    t = node.outputs[0]
    if len(node.inputs) == 6:
        out_frac = _frac(node, _const(node, consts, 4, "out_scale"), approximate)
        out_q = _per_tensor(Quantizer(out_frac, 0, 0, mode), "out_scale")
        out_bits = _bits(node, _const(node, consts, 5, "out_bit_width"), "out_bit_width")
        lo, hi = _bit_range(out_bits, _int_attr(node, "signed", 1), _int_attr(node, "narrow", 0))
        quantize(ctx, t, _on_grid(ctx, t, x, frac, in_bits), Quantizer(out_q.frac, lo, hi, mode))
        return
    drop = in_bits - _bits(node, _const(node, consts, 4, "out_bit_width"), "out_bit_width")
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
    q, zero, kind = qdq_of(node, consts, ctx.precision.approximate_scales, rank)
    out = node.outputs[0]
    if consts[0] is not None:
        ints, _ = q.apply(consts[0])
        ctx.define(out, (ints + zero).astype(kind))
        return
    readers = [n for n in ctx.model.nodes if out in n.inputs]
    if out in ctx.outputs or any(n.op != "DequantizeLinear" or n.inputs[0] != out for n in readers):
        raise Unsupported(f"output '{out}' must feed DequantizeLinear nodes only (hlsfuse computes real values, "
                          "not integer tensors)")
    ctx.pending[out] = (node, consts, _per_tensor(q), ctx.value(node.inputs[0]))


def _dequantize_linear(ctx: Context, node: NodeDef) -> None:
    consts = ctx.consts(node)
    pending = ctx.pending.get(node.inputs[0])
    rank = pending[3].rank if pending is not None else len(ctx.shape(node.inputs[0]))
    q, zero, _ = qdq_of(node, consts, ctx.precision.approximate_scales, rank)
    out = node.outputs[0]
    if consts[0] is not None:
        ints = np.asarray(consts[0]).astype(np.int64) - zero
        ctx.define(out, np.ldexp(ints.astype(np.float64), -np.asarray(q.frac, dtype=np.int64)))
        ctx.exact_types[out] = constant_type(ints, q.frac)
        return
    if pending is None:
        raise Unsupported(f"input '{node.inputs[0]}' must be a constant or the output of a QuantizeLinear")
    source, source_consts, quantizer, x = pending
    same = all(_same(source_consts[i], consts[i]) for i in (1, 2)) and source.attr("axis", 1) == node.attr("axis", 1)
    if not same:
        raise Unsupported(f"scale and zero point must be those of QuantizeLinear '{source.name}'")
    quantize(ctx, out, x, quantizer)


def _same(a, b) -> bool:
    if a is None or b is None:
        return (a is None or not np.any(a)) and (b is None or not np.any(b))
    return np.array_equal(np.asarray(a), np.asarray(b))


QONNX_CONVERTERS = {"Quant": _quant, "BipolarQuant": _quant, "Trunc": _trunc}
QDQ_CONVERTERS = {"QuantizeLinear": _quantize_linear, "DequantizeLinear": _dequantize_linear}


# --------------------------------------------------------------------------
# Whole-model facts
# --------------------------------------------------------------------------


def is_quantized(model: Model) -> bool:
    """Whether ``model`` has QONNX or QDQ quantizers (it is then imported with precision ``exact``)."""
    return any(n.op in QDQ_CONVERTERS or (n.domain in QONNX_DOMAINS and n.op in QONNX_CONVERTERS) for n in model.nodes)


def input_types(model: Model, approximate: bool) -> dict[str, FixedType]:
    """Graph inputs read only by one kind of per-tensor quantizer that rounds with an ap_fixed mode: such
    an input gets the quantizer's type, so that the real input is rounded once, exactly as the quantizer
    rounds it (a clip to a narrower range may follow), and the quantizer costs nothing else."""
    found: dict[str, FixedType] = {}
    names = {i.name for i in model.inputs}
    for name in names:
        readers = [n for n in model.nodes if name in n.inputs]
        types = {_input_type(model, n, name, approximate) for n in readers}
        if len(types) == 1 and None not in types:
            found[name] = types.pop()
    return found


def _input_type(model: Model, node: NodeDef, name: str, approximate: bool) -> FixedType | None:
    if node.inputs[0] != name or name in node.inputs[1:]:
        return None
    consts = [model.initializers.get(i) if i else None for i in node.inputs]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ScaleApproximation)  # the node warns when it is converted
            if node.domain in QONNX_DOMAINS and node.op in ("Quant", "BipolarQuant"):
                q = _per_tensor(quant_of(node, consts, approximate))
            elif node.op == "QuantizeLinear" and not node.domain:
                q = _per_tensor(qdq_of(node, consts, approximate, 0)[0])
            else:
                return None
    except Unsupported:
        return None
    if q.bipolar or q.mode == CEIL:
        return None
    return range_type(q.lo, q.hi, q.frac, q.mode)[0]
