"""Lookup tables for non-linear functions (sigmoid, tanh, exp, elu, selu, softplus, softsign, hard_sigmoid,
hard_swish, erf, gelu and its tanh approximation, silu, reciprocal, reciprocal square root).

A table is computed once in Python from the input format and the output type,
and the reference, the C++ and the Verilog all use the very same entries:

    index = (X - X_min) >> shift        X: raw input, X_min: its format's minimum
    shift = max(0, W_in - table_bits)   (at most 2**table_bits entries)
    entry = f(x_mid) assigned to the output type with its quantization mode,
            saturating to its range (x_mid: the real value at the middle of the
            bucket, or the exact input value when shift == 0)

A function may take parameters (elu's alpha, selu's alpha and gamma, hard_sigmoid's alpha and beta): they are
float32 numbers (ONNX stores them so) and part of the table's ``key``, so there is one table per distinct
parameter set. ``make_table`` is cached, so every node with the same types and parameters shares one table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .errors import HlsfuseError
from .types import FixedType, Fmt, from_float

__all__ = ["Function", "FUNCTIONS", "Table", "make_table", "extremes"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-|x|) never overflows, and e / (1 + e) keeps the negative tail's relative precision
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _recip(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(x == 0, np.inf, 1.0 / np.where(x == 0, 1.0, x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, 1.0 / np.sqrt(np.where(x > 0, x, 1.0)), np.inf)


def _elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _softplus(x: np.ndarray) -> np.ndarray:
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(alpha * x + beta, 0.0, 1.0)


_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf; the C library's (Python's math.erf, C++'s std::erf), elementwise
    return np.asarray(_ERF(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _gelu(x: np.ndarray) -> np.ndarray:
    # x * Phi(x) = x / 2 * erfc(-x / sqrt 2): erfc keeps the negative tail's relative precision (1 + erf cancels)
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * np.asarray(_ERFC(-x / math.sqrt(2.0)), dtype=np.float64)


GELU_TANH_C = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    # ONNX Gelu(approximate="tanh") and torch's nn.GELU(approximate="tanh")
    return 0.5 * x * (1.0 + np.tanh(GELU_TANH_C * (x + 0.044715 * x * x * x)))


@dataclass(frozen=True)
class Function:
    """A function tables compute: ``evaluate(x, *params)`` in float64, the names of its parameters (the op's
    attributes of those names), and ``turns(*params)``, the points where it may change direction: its extremes
    over an interval lie at the interval's ends or at these points (``extremes``), so range analysis is right
    for non-monotone functions (hard_swish, elu with a negative alpha)."""

    evaluate: Callable[..., np.ndarray]
    params: tuple[str, ...] = ()
    turns: Callable[..., tuple[float, ...]] = lambda *params: ()

    def __call__(self, x: np.ndarray, *params: float) -> np.ndarray:
        return self.evaluate(x, *params)


FUNCTIONS = {
    "sigmoid": Function(_sigmoid),
    "tanh": Function(np.tanh),
    "exp": Function(np.exp),
    "recip": Function(_recip),
    "rsqrt": Function(_rsqrt),  # the first guess of layer_norm's and rms_norm's Newton step (ops/norm.py)
    "elu": Function(_elu, ("alpha",), lambda alpha: (0.0,)),
    "selu": Function(lambda x, alpha, gamma: gamma * _elu(x, alpha), ("alpha", "gamma"), lambda alpha, gamma: (0.0,)),
    "softplus": Function(_softplus),
    "softsign": Function(lambda x: x / (1.0 + np.abs(x))),
    "hard_sigmoid": Function(_hard_sigmoid, ("alpha", "beta")),
    # x * hard_sigmoid(x, 1/6, 1/2): its minimum -3/8 at x = -3/2
    "hard_swish": Function(lambda x: x * _hard_sigmoid(x, 1.0 / 6.0, 0.5), (), lambda: (-1.5,)),
    "erf": Function(_erf),
    # the minima of gelu (x * Phi(x)), its tanh form and silu (x * sigmoid(x)), where their slopes are 0
    "gelu": Function(_gelu, (), lambda: (-0.7517915246935645,)),
    "gelu_tanh": Function(_gelu_tanh, (), lambda: (-0.7524614220710162,)),
    "silu": Function(lambda x: x * _sigmoid(x), (), lambda: (-1.278464542761074,)),
}


def extremes(function: str, lo: np.ndarray, hi: np.ndarray, params: tuple[float, ...] = ()
             ) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest values of ``function`` over ``lo..hi`` (real, elementwise arrays): at the ends or
    at a turn inside (a turn outside, clipped to the interval, is one of its points and harmless)."""
    f = FUNCTIONS[function]
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    points = [lo, hi] + [np.clip(t, lo, hi) for t in f.turns(*params)]
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.stack([f(p, *params) for p in points])
    return values.min(axis=0), values.max(axis=0)


MAX_TABLE_BITS = 16


@dataclass(frozen=True, eq=False)
class Table:
    """A lookup table from raw inputs of ``in_fmt`` to raw values of ``out_type``."""

    function: str
    in_fmt: Fmt
    out_type: FixedType
    shift: int
    entries: np.ndarray  # int64 raw values of out_type, read-only
    params: tuple[float, ...] = ()  # the function's parameters (float32 values)

    @property
    def key(self) -> tuple:
        """What tables equal in content share: the function, its parameters, the formats and the size."""
        return (self.function, self.params, self.in_fmt, self.out_type, self.shift)

    @property
    def in_min(self) -> int:
        return -(1 << (self.in_fmt.width - 1)) if self.in_fmt.signed else 0

    def lookup(self, raw: np.ndarray) -> np.ndarray:
        index = (np.asarray(raw, dtype=np.int64) - self.in_min) >> self.shift
        return self.entries[index]

    def span(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and largest entries looked up by raw inputs in ``lo..hi`` (elementwise arrays)."""
        first = (np.asarray(lo, dtype=np.int64) - self.in_min) >> self.shift
        last = (np.asarray(hi, dtype=np.int64) - self.in_min) >> self.shift
        low = [self.entries[a:b + 1].min() for a, b in zip(first.ravel(), last.ravel())]
        high = [self.entries[a:b + 1].max() for a, b in zip(first.ravel(), last.ravel())]
        return np.reshape(low, first.shape).astype(np.int64), np.reshape(high, first.shape).astype(np.int64)


@lru_cache(maxsize=256)
def make_table(function: str, in_fmt: Fmt, out_type: FixedType, table_bits: int, params: tuple[float, ...] = ()
               ) -> Table:
    """The table of ``FUNCTIONS[function]`` with ``params`` for inputs of ``in_fmt``."""
    if function not in FUNCTIONS:
        raise HlsfuseError(f"no lookup-table function {function!r} (known: {', '.join(FUNCTIONS)})")
    if not 1 <= table_bits <= MAX_TABLE_BITS:
        raise HlsfuseError(f"table_bits must be 1..{MAX_TABLE_BITS}, not {table_bits}")
    if len(params) != len(FUNCTIONS[function].params):
        raise HlsfuseError(f"function {function!r} takes parameters ({', '.join(FUNCTIONS[function].params)}), "
                           f"not {len(params)} values")
    if out_type.is_float:
        raise HlsfuseError("lookup tables produce fixed-point values")
    shift = max(0, in_fmt.width - table_bits)
    count = 1 << min(in_fmt.width, table_bits)
    in_min = -(1 << (in_fmt.width - 1)) if in_fmt.signed else 0
    raw = in_min + (np.arange(count, dtype=np.int64) << shift)
    if shift > 0:
        raw = raw + (1 << (shift - 1))
    x = np.ldexp(raw.astype(np.float64), -in_fmt.frac)
    with np.errstate(over="ignore", invalid="ignore"):
        y = FUNCTIONS[function](x, *params)
    top = math.ldexp(out_type.raw_max + 1, -out_type.frac)
    bottom = math.ldexp(out_type.raw_min - 1, -out_type.frac)
    y = np.clip(np.nan_to_num(y, nan=0.0, posinf=top, neginf=bottom), bottom, top)
    # tables saturate whatever the overflow mode (a wrapped exp is useless); SAT_SYM keeps its symmetric range
    overflow = "SAT_SYM" if out_type.overflow == "SAT_SYM" else "SAT"
    saturating = FixedType(out_type.width, out_type.int_bits, out_type.signed, out_type.quant, overflow)
    entries = from_float(y, saturating)
    entries.flags.writeable = False
    return Table(function, in_fmt, out_type, shift, entries, tuple(params))
