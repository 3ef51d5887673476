"""Quantized ONNX: what QONNX's ``Quant``, ``BipolarQuant`` and ``Trunc`` and QDQ's
``QuantizeLinear -> DequantizeLinear`` pairs mean as exact fixed-point types (ops_quant.py emits
them, and MultiThreshold; docs/onnx.md has the tables).

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
``cast`` (or the graph input's own type, when the input feeds only this quantizer). A scale that
is not a power of two is kept as a float (``Quantizer.scale``): its weights are integer levels with
a scale per element (``Context.grids``) and on a computed tensor it is the step function of
scaled.py / ops_scaled.py, as are per-channel scales on activations; only float32 graphs refuse
it. ``Precision.approximate_scales`` takes the nearest power of two instead and warns
(``ScaleApproximation``) with the relative error.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...types import FixedType
from .model import Model, NodeDef, Unsupported

__all__ = ["QONNX_DOMAINS", "QONNX_OPS", "QDQ_OPS", "CEIL", "ROUNDING", "ScaleApproximation", "Quantizer",
           "range_type", "constant_type", "quant_of", "qdq_of", "per_tensor", "tensor_frac", "is_quantized",
           "input_types"]

QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "onnx.brevitas")

CEIL = "CEIL"
ROUNDING = {"ROUND": "RND_CONV", "HALF_EVEN": "RND_CONV", "FLOOR": "TRN", "ROUND_TO_ZERO": "TRN_ZERO",
            "DOWN": "TRN_ZERO", "HALF_UP": "RND_INF", "HALF_DOWN": "RND_ZERO", "CEIL": CEIL}
"""QONNX rounding modes -> ap_fixed quantization modes (CEIL has none: it is floor of the negation, negated)."""

QONNX_OPS = frozenset({"Quant", "BipolarQuant", "Trunc", "MultiThreshold"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})

_QDQ_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
               "int32": (-(1 << 31), (1 << 31) - 1)}  # int32: biases (DequantizeLinear of a constant)


_OUTPUT_DTYPES = {2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16}
"""QuantizeLinear's ``output_dtype`` (opset 21, without a zero point): ONNX element types -> numpy."""


class ScaleApproximation(UserWarning):
    """A quantizer scale that is not a power of two, replaced by the nearest one (approximate_scales)."""


@dataclass(frozen=True)
class Quantizer:
    """round(x / s) with ``mode``, clipped to [lo, hi], times s, where s = 2^-frac (``frac`` an int, or an
    array broadcasting against the input: per-channel scales), or s = ``scale`` (float64 values of float32
    scales, same shapes) when a scale is not a power of two and ``frac`` is None; ``bipolar``: +-s by sign."""

    frac: object
    lo: int
    hi: int
    mode: str
    bipolar: bool = False
    scale: object = None

    @property
    def scales(self) -> np.ndarray:
        """s, as float64 (exact)."""
        if self.frac is None:
            return np.asarray(self.scale, dtype=np.float64)
        return np.ldexp(1.0, -np.asarray(self.frac, dtype=np.int64))

    def apply(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(integers q, exact real values q * s) of constant ``x``; with a float scale, x / s is computed in
        float32 as qonnx computes it, so the integers are qonnx's."""
        if self.frac is None:
            v = (np.asarray(x, dtype=np.float32) / np.asarray(self.scale, dtype=np.float32)).astype(np.float64)
        else:
            v = np.ldexp(np.asarray(x, dtype=np.float64), np.asarray(self.frac, dtype=np.int64))
        if self.bipolar:
            q = np.where(v >= 0, 1.0, -1.0)
        else:
            q = np.clip(_ROUND[self.mode](v), self.lo, self.hi)
        q = q.astype(np.int64)
        scales = np.broadcast_to(self.scales, np.broadcast_shapes(q.shape, np.shape(self.scales)))
        return q, q.astype(np.float64) * scales

    def level_of(self, num: int, den: int) -> int:
        """The integer level of the exact value num / den (den > 0) of x / s, in integer arithmetic."""
        if self.bipolar:
            return 1 if num >= 0 else -1
        return min(max(_round_ratio(num, den, self.mode), self.lo), self.hi)

    def near_boundary(self, num: int, den: int, tolerance: Fraction) -> bool:
        """Whether num / den (den > 0) lies within ``tolerance`` times max(1, |num / den|) of a value where the
        level changes."""
        if self.bipolar:
            distance_num, distance_den = abs(num), den
        else:
            rest = num % den
            if self.mode in ("TRN", "TRN_ZERO", CEIL):
                distance_num, distance_den = min(rest, den - rest), den
            else:
                distance_num, distance_den = abs(2 * rest - den), 2 * den
        size = max(den, abs(num))  # max(1, |y|) * den
        return distance_num * den * tolerance.denominator <= tolerance.numerator * size * distance_den


def _round_ratio(num: int, den: int, mode: str) -> int:
    """num / den (den > 0) rounded to an integer with ap_fixed quantization ``mode`` (or CEIL)."""
    low, rest = divmod(num, den)
    if mode == "TRN":
        return low
    if mode == CEIL:
        return low + (rest != 0)
    if mode == "TRN_ZERO":
        return low + (rest != 0 and num < 0)
    twice = 2 * rest
    if twice != den:
        return low + (twice > den)
    if mode == "RND_CONV":  # a tie: to even
        return low + (low & 1)
    if mode == "RND_INF":  # away from zero: up when the value low + 1/2 is positive
        return low + (low >= 0)
    return low + (low < 0)  # RND_ZERO: toward zero


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
    return FixedType(dtype.width, dtype.int_bits, dtype.signed)


# --------------------------------------------------------------------------
# Reading a quantizer's parameters
# --------------------------------------------------------------------------


def const_input(node: NodeDef, consts, index: int, what: str) -> np.ndarray:
    if not node.input(index):
        raise Unsupported(f"input '{what}' is required")
    if consts[index] is None:
        raise Unsupported(f"input '{what}' must be a constant")
    return np.asarray(consts[index])


def scale_fracs(node: NodeDef, scale: np.ndarray, approximate: bool, exact: bool = False) -> np.ndarray | None:
    """-log2 of each scale (integers), or the nearest ones with a warning when ``approximate``; None when a
    scale is not a power of two and ``exact`` (the caller keeps the float scales: scaled.py)."""
    s = np.asarray(scale, dtype=np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise Unsupported(f"scale {show(s)} must be positive and finite")
    exp = np.log2(s)
    near = np.round(exp)
    if np.array_equal(np.ldexp(1.0, near.astype(np.int64)), s):
        return (-near).astype(np.int64)
    if exact and not approximate:
        return None
    if not approximate:
        raise Unsupported(f"scale {show(s)} is not a power of two, which precision float32 cannot hold (it runs "
                          "quantizers as casts to fixed types; the default precision, exact, computes float scales "
                          "exactly, and --approximate-scales takes the nearest power of two)")
    error = float(np.max(np.abs(np.ldexp(1.0, near.astype(np.int64)) - s) / s))
    warnings.warn(ScaleApproximation(f"{node.where()}: scale {show(s)} approximated by the nearest power of two "
                                     f"{show(np.ldexp(1.0, near.astype(np.int64)))} (relative error up to "
                                     f"{error:.3g})"), stacklevel=2)
    return (-near).astype(np.int64)


def show(values: np.ndarray) -> str:
    flat = np.ravel(values)
    if flat.size == 1 or np.all(flat == flat[0]):
        return f"{float(flat[0]):g}"
    return "[" + ", ".join(f"{float(v):g}" for v in flat[:4]) + (", ...]" if flat.size > 4 else "]")


def flag(node: NodeDef, name: str, default: int) -> int:
    value = node.attr(name, default)
    if value not in (0, 1):
        raise Unsupported(f"attribute '{name}' must be 0 or 1, not {value}")
    return int(value)


def rounding(node: NodeDef, default: str) -> str:
    name = str(node.attr("rounding_mode", default)).upper()
    if name not in ROUNDING:
        raise Unsupported(f"attribute 'rounding_mode' is '{name}', expected one of {', '.join(ROUNDING)}")
    return ROUNDING[name]


def bit_range(bits: int, signed: int, narrow: int) -> tuple[int, int]:
    if signed:
        return -(1 << (bits - 1)) + narrow, (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1 - narrow


def bit_width(node: NodeDef, value: np.ndarray, what: str) -> int:
    if value.size != 1 or float(value.flat[0]) != int(value.flat[0]) or not 1 <= int(value.flat[0]) <= 62:
        raise Unsupported(f"input '{what}' must be one integer from 1 to 62, not {show(value)}")
    return int(value.flat[0])


def require_zero(node: NodeDef, consts, index: int) -> None:
    zero = const_input(node, consts, index, "zeropt")
    if np.any(zero != 0):
        raise Unsupported(f"zero point {show(zero)} must be 0 (hlsfuse maps symmetric quantizers; a zero point "
                          "shifts the grid)")


def quant_of(node: NodeDef, consts, approximate: bool, exact: bool = False) -> Quantizer:
    """The quantizer of a QONNX Quant or BipolarQuant node (its input 0 aside); with ``exact`` a scale that
    is not a power of two is kept as it is (``Quantizer.scale``) instead of being refused."""
    scale = const_input(node, consts, 1, "scale")
    frac = scale_fracs(node, scale, approximate, exact)
    real = np.asarray(scale, dtype=np.float32).astype(np.float64) if frac is None else None
    if node.op == "BipolarQuant":
        return Quantizer(frac, -1, 1, "TRN", bipolar=True, scale=real)
    require_zero(node, consts, 2)
    bits = bit_width(node, const_input(node, consts, 3, "bitwidth"), "bitwidth")
    signed, narrow = flag(node, "signed", 1), flag(node, "narrow", 0)
    if bits == 1 and signed:  # as qonnx executes it: a 1-bit signed Quant is bipolar
        return Quantizer(frac, -1, 1, "TRN", bipolar=True, scale=real)
    return Quantizer(frac, *bit_range(bits, signed, narrow), rounding(node, "ROUND"), scale=real)


def qdq_of(node: NodeDef, consts, approximate: bool, rank: int,
           exact: bool = False) -> tuple[Quantizer, np.ndarray, str]:
    """(quantizer on the integer range less the zero point, zero point, integer type) of a QuantizeLinear
    or DequantizeLinear node; per-axis scales are shaped to broadcast along ``axis`` of a ``rank``-dim input."""
    scale = const_input(node, consts, 1, "scale")
    default = _OUTPUT_DTYPES.get(int(node.attr("output_dtype", 0) or 2), np.float32)  # no zero point: uint8
    zero = np.asarray(consts[2]) if node.input(2) and consts[2] is not None else np.zeros((), default)
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
    frac = scale_fracs(node, scale, approximate, exact)
    real = np.asarray(scale, dtype=np.float32).astype(np.float64) if frac is None else None
    qmin, qmax = _QDQ_RANGES[kind]
    zero = zero.astype(np.int64)
    if zero.size == 1:
        return Quantizer(frac, qmin - int(zero.flat[0]), qmax - int(zero.flat[0]), "RND_CONV", scale=real), zero, kind
    return Quantizer(frac, qmin - int(zero.max()), qmax - int(zero.min()), "RND_CONV", scale=real), zero, kind


def per_tensor(q: Quantizer, what: str = "scale") -> Quantizer:
    """``q`` with one ``frac`` for the whole tensor (a computed tensor has one type)."""
    frac = np.ravel(q.frac)
    if frac.size and np.any(frac != frac[0]):
        raise Unsupported(f"per-channel {what}s on a computed tensor are not supported (an hlsfuse tensor has one "
                          "type; quantize activations per tensor)")
    return Quantizer(int(frac[0]), q.lo, q.hi, q.mode, q.bipolar)


def tensor_frac(node: NodeDef, consts, index: int, what: str, approximate: bool) -> int:
    """-log2 of a per-tensor scale given as input ``index``."""
    return int(per_tensor(Quantizer(scale_fracs(node, const_input(node, consts, index, what), approximate), 0, 0,
                                    "TRN"), what).frac)


# --------------------------------------------------------------------------
# Whole-model facts
# --------------------------------------------------------------------------


def is_quantized(model: Model) -> bool:
    """Whether ``model`` has QONNX or QDQ quantizers (it is then imported with precision ``exact``)."""
    return any((not n.domain and n.op in QDQ_OPS) or (n.domain in QONNX_DOMAINS and n.op in QONNX_OPS)
               for n in model.nodes)


def input_types(model: Model, approximate: bool,
                exact: bool = False) -> dict[str, tuple[FixedType, float | None, bool]]:
    """Graph inputs read only by one kind of per-tensor quantizer that rounds with an ap_fixed mode: such
    an input gets the quantizer's type, so that the real input is rounded once, exactly as the quantizer
    rounds it (a clip to a narrower range may follow), and the quantizer costs nothing else. With ``exact``
    a float scale s is kept: the input is the integer level (type on the grid 1), its real value s times it
    (the second item; None for a power of two). A bipolar quantizer's input (third item True) is its 1-bit code
    b, 1 where x >= 0, of real value s (2 b - 1) (the second item s): the host rounds (x / s + 1) / 2 to it."""
    found: dict[str, tuple[FixedType, float | None, bool]] = {}
    for info in model.inputs:
        readers = [n for n in model.nodes if info.name in n.inputs]
        rank = len(info.shape or ())
        types = {_input_type(model, n, info.name, rank, approximate, exact) for n in readers}
        if len(types) == 1 and None not in types:
            found[info.name] = types.pop()
    return found


def _input_type(model: Model, node: NodeDef, name: str, rank: int, approximate: bool, exact: bool):
    if node.inputs[0] != name or name in node.inputs[1:]:
        return None
    consts = [model.initializers.get(i) if i else None for i in node.inputs]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ScaleApproximation)  # the node warns when it is converted
            if node.domain in QONNX_DOMAINS and node.op in ("Quant", "BipolarQuant"):
                q = quant_of(node, consts, approximate, exact)
            elif node.op == "QuantizeLinear" and not node.domain:
                q = qdq_of(node, consts, approximate, rank, exact)[0]
            else:
                return None
            scales = np.ravel(q.scales)
            if scales.size != 1 and np.any(scales != scales[0]):
                return None
            q = Quantizer(None if q.frac is None else int(np.ravel(q.frac)[0]), q.lo, q.hi, q.mode, q.bipolar,
                          None if q.frac is not None else float(scales[0]))
    except Unsupported:
        return None
    # its 1-bit code b = [x >= 0], a ufixed<1,1> rounding (x / s + 1) / 2 (ops_scaled.bipolar_affine)
    if q.bipolar and np.ravel(q.scales)[0] > 0:
        return FixedType(1, 1, False, "RND", "SAT"), float(np.ravel(q.scales)[0]), True
    if q.bipolar or q.mode == CEIL:
        return None
    if q.frac is None:
        return range_type(q.lo, q.hi, 0, q.mode)[0], float(q.scale), False
    return range_type(q.lo, q.hi, q.frac, q.mode)[0], None, False
