"""Range analysis: an interval bound for every tensor of a graph, and where a type can overflow.

    input types (or given ranges), constants' values
        --per node, in topological order: OpDef.bounds on the inputs' quantized intervals-->
    exact interval of the node's result --quantize to its declared type--> what consumers see

A node's bound is on its *exact* value, before the one assignment to its declared type
(DESIGN.md section 3), computed from the bounds of its inputs *as quantized* (so a
saturating or wrapping input type is accounted for). The node's type can overflow when
the exact bound, rounded to the type's grid, leaves the type's range. Each op's rule lives
with its definition in the op registry; ``ops/interval.py`` holds the interval arithmetic.
Bounds are exact for fixed-point tensors (raw integers), approximate for float32 ones.

    ranges(graph, input_ranges)  -> {tensor: Range}   (inputs and nodes)
    bounds(graph, input_ranges)  -> {tensor: (lo, hi)} as exact Fractions

``auto_types`` turns the analysis into types (``--precision auto:W``): in the same order, each
tensor gets the W-bit type with the fewest integer bits that holds its bound, so that no node
can overflow; its consumers are then bounded with that type. ``retyped`` applies such types.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from .errors import HlsfuseError
from .ir import Constant, Graph, Node, TensorType
from .ops import Pattern, get_op
from .ops.interval import Interval
from .types import FLOAT32, DType, FixedType, from_float

__all__ = ["Range", "ranges", "bounds", "input_intervals", "int_bits_needed", "fitting_type", "auto_types",
           "exact_type", "retyped", "INPUT_INT_BITS", "CALIBRATION_MARGIN", "EXACT_CONSTANT_BITS"]

INPUT_INT_BITS = 6
"""Integer bits auto gives a graph input without a given range (hls4ml's default fixed<16,6>)."""

CALIBRATION_MARGIN = 1
"""Bits auto keeps above the largest magnitude calibration samples reach, when it narrows to them."""


@dataclass(frozen=True, eq=False)
class Range:
    """One tensor's bound: ``exact`` (before its assignment), ``quantized`` (after), and whether
    its declared ``dtype`` holds every value of ``exact``."""

    name: str
    op: str
    dtype: DType
    exact: Interval
    quantized: Interval
    fits: bool

    @property
    def lo(self) -> Fraction:
        return _fraction(self.exact.lo.min(), self.exact.frac)

    @property
    def hi(self) -> Fraction:
        return _fraction(self.exact.hi.max(), self.exact.frac)

    @property
    def int_bits(self) -> int:
        """Integer bits a type needs to hold the bound (signed unless it is never negative)."""
        return int_bits_needed(self.lo, self.hi)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _fraction(raw, frac: int | None) -> Fraction:
    if frac is None:  # a real bound; an infinite one (an overflowing float32 exp) as float32's largest
        value = float(raw)
        return Fraction(value if math.isfinite(value) else math.copysign(_FLOAT32_MAX, value))
    return Fraction(int(raw), 1 << frac) if frac >= 0 else Fraction(int(raw) << -frac)


def int_bits_needed(lo: Fraction, hi: Fraction) -> int:
    """Smallest I such that fixed<W,I> (ufixed<W,I> when ``lo >= 0``) holds ``[lo, hi]`` at any
    width: signed needs -2**(I-1) <= lo and hi < 2**(I-1), unsigned hi < 2**I."""
    signed = lo < 0
    magnitude = max(-lo, hi) if signed else hi
    if magnitude == 0:
        return 1 if signed else 0
    bits = math.floor(math.log2(magnitude)) - 2
    while not (_holds(lo, hi, bits, signed)):
        bits += 1
    while _holds(lo, hi, bits - 1, signed):
        bits -= 1
    return bits


def _holds(lo: Fraction, hi: Fraction, bits: int, signed: bool) -> bool:
    top = Fraction(2) ** (bits - 1 if signed else bits)
    return hi < top and (not signed or -top <= lo)


def fitting_type(exact: Interval, width: int, int_bits: int | None = None, quant: str = "RND",
                 overflow: str = "WRAP") -> FixedType:
    """The ``width``-bit type with the fewest integer bits that holds ``exact`` once rounded
    (``int_bits``, when given, is a lower limit); unsigned when ``exact`` is never negative."""
    lo = _fraction(exact.lo.min(), exact.frac)
    hi = _fraction(exact.hi.max(), exact.frac)
    signed = lo < 0
    first = int_bits_needed(lo, hi) if int_bits is None else int_bits
    for bits in range(first, first + 3):  # rounding up to the grid needs at most one more bit
        dtype = FixedType(width, bits, signed, quant, overflow)
        if exact.quantize(dtype)[1]:
            return dtype
    raise HlsfuseError(f"no {width}-bit type holds the range [{float(lo):.6g}, {float(hi):.6g}]")


def input_intervals(graph: Graph, input_ranges: Mapping[str, tuple[float, float]] | None = None
                    ) -> dict[str, Interval]:
    """Each input's values as its type holds them: its whole range, or a given range ``(lo, hi)``
    assigned to its type."""
    given = dict(input_ranges or {})
    known = [i.name for i in graph.inputs]
    for name, (lo, hi) in given.items():
        if name not in known:
            raise HlsfuseError(f"input range for '{name}': not an input of graph '{graph.name}' "
                               f"(inputs: {', '.join(known)})")
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise HlsfuseError(f"input range for '{name}': expected finite LO <= HI, not {lo}:{hi}")
    out = {}
    for inp in graph.inputs:
        dtype = inp.type.dtype
        if inp.name in given:
            out[inp.name] = Interval.of_reals(*given[inp.name]).quantize(dtype)[0]
        else:
            out[inp.name] = Interval.of_type(dtype)
    return out


def ranges(graph: Graph, input_ranges: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Range]:
    """The bound of every input and node of ``graph`` (see the module note)."""
    seen: dict[str, Interval] = {}
    result: dict[str, Range] = {}
    for name, interval in input_intervals(graph, input_ranges).items():
        seen[name] = interval
        result[name] = Range(name, "input", graph.types[name].dtype, interval, interval, True)
    for const in graph.constants:
        dtype = const.type.dtype
        seen[const.name] = Interval.of_values(const.data, None if dtype.is_float else dtype.frac)
    for node in graph.nodes:
        sig = graph.sigs[node.name]
        exact = get_op(node.op).bounds([seen[src] for src in node.inputs], sig)
        quantized, fits = exact.quantize(sig.out_dtype)
        seen[node.name] = quantized
        result[node.name] = Range(node.name, node.op, sig.out_dtype, exact, quantized, fits)
    return result


def bounds(graph: Graph, input_ranges: Mapping[str, tuple[float, float]] | None = None
           ) -> dict[str, tuple[Fraction, Fraction]]:
    """``(lo, hi)`` of the exact value of every input and node, as Fractions."""
    return {name: (r.lo, r.hi) for name, r in ranges(graph, input_ranges).items()}


# --------------------------------------------------------------------------
# Types from bounds (--precision auto)
# --------------------------------------------------------------------------


def _moves(graph: Graph, node: Node) -> bool:
    """Nodes that only move values (single-input injective ops) keep their input's type."""
    return len(node.inputs) == 1 and graph.patterns[node.name] == Pattern.INJECTIVE


def auto_types(graph: Graph, width: int, input_ranges: Mapping[str, tuple[float, float]] | None = None,
               free: Callable[[str], bool] | None = None, widths: Callable[[str], int | None] | None = None,
               peaks: Mapping[str, float] | None = None, limit: int | None = None,
               exact: bool = False) -> dict[str, DType]:
    """Types for the tensors of ``graph`` that ``free(name)`` leaves to auto (default: all).

    Graph inputs: ``fixed<W,I,RND,SAT>`` holding the given range, else with INPUT_INT_BITS.
    Constants: ``fixed<W,I,RND,SAT>`` holding their values. Nodes: ``fixed<W,I,RND,WRAP>``
    (``ufixed`` when never negative) holding their exact bound, so they cannot overflow; with
    ``peaks`` (calibration: the largest magnitude per tensor), narrowed to the peak plus
    CALIBRATION_MARGIN bits (never wider) and saturating. ``widths(name)`` may give a node
    another width. Nodes that only move values take their input's type. ``limit``: the most
    integer bits an input or node gets; one whose bound needs more gets ``limit`` bits and
    saturates (``RND,SAT``): it can overflow, and ``overflow.risks`` names it.

    ``exact`` (``--precision exact``): each node gets the type holding its exact result (``exact_type``),
    and each constant the type holding its values exactly when that needs at most EXACT_CONSTANT_BITS.
    """
    free = free or (lambda name: True)
    given = dict(input_ranges or {})
    input_intervals(graph, given)  # checks the names and ranges
    types: dict[str, DType] = {}
    seen: dict[str, Interval] = {}
    dtype_of: dict[str, DType] = {}
    for inp in graph.inputs:
        dtype = inp.type.dtype
        span = Interval.of_reals(*given[inp.name]) if inp.name in given else None
        if free(inp.name):
            dtype = fitting_type(span, width, quant="RND", overflow="SAT") if span is not None else \
                FixedType(width, INPUT_INT_BITS, True, "RND", "SAT")
            dtype = _limited(dtype, limit)
            types[inp.name] = dtype
        dtype_of[inp.name] = dtype
        seen[inp.name] = span.quantize(dtype)[0] if span is not None else Interval.of_type(dtype)
    for const in graph.constants:
        dtype, raw = const.type.dtype, const.data
        if free(const.name):
            values = const.values
            span = Interval.of_reals(float(values.min()), float(values.max())) if values.size else Interval(0, 0, None)
            dtype = _exact_constant(values) if exact else None
            if dtype is None:
                dtype = fitting_type(span, width, quant="RND", overflow="SAT")
                dtype = FixedType(width, dtype.int_bits + (0 if dtype.signed else 1), True, "RND", "SAT")  # signed
            types[const.name] = dtype
            raw = from_float(values, dtype)
        dtype_of[const.name] = dtype
        seen[const.name] = Interval.of_values(raw, dtype.frac)
    for node in graph.nodes:
        sig = replace(graph.sigs[node.name], dtypes=tuple(dtype_of[src] for src in node.inputs))
        inputs = [seen[src] for src in node.inputs]
        dtype = sig.out_dtype
        if free(node.name):
            if _moves(graph, node):
                dtype = sig.dtypes[0]
                types[node.name] = dtype
            else:
                peak = None if peaks is None else peaks.get(node.name)
                node_width = (widths and widths(node.name)) or width
                dtype = exact_type(node, sig, inputs, node_width) if exact else None
                dtype = dtype or _node_type(node, sig, inputs, node_width, peak, limit)
                types[node.name] = dtype
        op = get_op(node.op)
        if op.check is not None:
            _check_types(node, op, replace(sig, out_dtype=dtype), seen, "exact" if exact else f"auto:{width}")
        bound = op.bounds(inputs, replace(sig, out_dtype=dtype))
        seen[node.name] = bound.quantize(dtype)[0]
        dtype_of[node.name] = dtype
    return types


def _check_types(node: Node, op, sig, seen: Mapping[str, Interval], label: str) -> None:
    """The op's check of its exact intermediates with the chosen types, failing with what auto chose."""
    try:
        op.check(sig)
    except HlsfuseError as exc:
        chosen = ", ".join(f"'{src}' {t} in [{seen[src].reals()[0]:.6g}, {seen[src].reals()[1]:.6g}]"
                           for src, t in zip(node.inputs, sig.dtypes))
        raise HlsfuseError(f"{label}: {node.where()}: {exc} (inputs {chosen}); give the inputs narrower "
                           "ranges, or calibrate") from None


def _limited(dtype: FixedType, limit: int | None) -> FixedType:
    """``dtype`` with at most ``limit`` integer bits, saturating where that cuts its range."""
    if limit is None or dtype.int_bits <= limit:
        return dtype
    return FixedType(dtype.width, limit, dtype.signed, "RND", "SAT")


def _node_type(node: Node, sig, inputs: list[Interval], width: int, peak: float | None,
               limit: int | None) -> FixedType:
    """The fitting type of a node. A table op's result depends on its type (the entries round to
    it), so it is bounded again with the chosen type until the choice holds."""
    rule = get_op(node.op).bounds
    dtype = FixedType(width, width, True, "RND", "WRAP")
    negative = _goes_negative(node, sig, inputs)
    for _ in range(8):
        chosen = fitting_type(rule(inputs, replace(sig, out_dtype=dtype)), width)
        if negative and not chosen.signed:  # the same range, signed
            chosen = FixedType(width, chosen.int_bits + 1, True, chosen.quant, chosen.overflow)
        chosen = _limited(chosen, limit)
        if chosen == dtype:
            break
        dtype = chosen
    if peak is not None:
        need = _peak_bits(peak, width) - (0 if dtype.signed else 1)
        if need < dtype.int_bits:
            dtype = FixedType(width, need, dtype.signed, "RND", "SAT")
    return dtype


def _goes_negative(node: Node, sig, inputs: list[Interval]) -> bool:
    """Whether an elementwise table op's function goes below 0 over its input's real span. Such a function with a
    small negative minimum (gelu -0.17, silu -0.28, hard_swish -0.375) keeps a signed type: the search's first,
    integer-only type rounds that minimum to 0, and the unsigned type fitted to it would clip it for good."""
    op = get_op(node.op)
    if op.tables is None or op.pattern != Pattern.ELEMWISE or len(inputs) != 1 or inputs[0].frac is None:
        return False
    real = op.bounds([Interval.of_reals(*inputs[0].reals())], replace(sig, out_dtype=FLOAT32))
    return float(np.min(real.lo)) < 0


EXACT_CONSTANT_BITS = 32
"""The widest type ``exact`` gives a constant to hold its values exactly (wider: auto's W-bit type)."""

_MEAN_OPS = frozenset({"mean", "global_avg_pool", "avg_pool2d"})


def exact_type(node: Node, sig, inputs: list[Interval], width: int) -> FixedType | None:
    """The type holding a node's exact result: its bound's grid and integer bits, ``TRN,WRAP`` (it
    never rounds or overflows). Tables have no exact grid (None: a ``width``-bit type); a mean is exact
    when its divisors are powers of two (its grid gains their bits) and rounds (``RND``) 16 bits further
    down otherwise. A result wider than 64 bits is an error naming the node."""
    if get_op(node.op).tables is not None or any(i.frac is None for i in inputs):
        return None
    bound = get_op(node.op).bounds(inputs, replace(sig, out_dtype=FixedType(64, 32)))
    frac, quant = bound.frac, "TRN"
    if node.op in _MEAN_OPS:
        from .ops.nn import pool_counts
        from .ops.reduce import count

        counts = set(np.unique(pool_counts(sig)).tolist()) if node.op == "avg_pool2d" else {count(sig)}
        extra = max(math.ceil(math.log2(n)) for n in counts)
        if any(n & (n - 1) for n in counts):
            extra, quant = extra + 16, "RND"
        frac += extra
    lo, hi = _fraction(bound.lo.min(), bound.frac), _fraction(bound.hi.max(), bound.frac)
    bits = int_bits_needed(lo, hi)
    signed = lo < 0
    total = max(bits + frac, 1)
    if total > 64 - (0 if signed else 1):
        raise HlsfuseError(f"exact: {node.where()} needs a {total}-bit type to hold its exact result "
                           f"[{float(lo):.6g}, {float(hi):.6g}] on a grid of 2^-{frac}; quantize its inputs more "
                           "narrowly, or use --precision auto")
    return FixedType(total, total - frac, signed, quant, "WRAP")


def _exact_constant(values: np.ndarray) -> FixedType | None:
    """The narrowest signed type holding every value exactly, if at most EXACT_CONSTANT_BITS wide."""
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    nonzero = values[values != 0]
    if nonzero.size == 0:
        return FixedType(1, 1)
    frac = max(-int(np.frexp(v)[1]) + 53 - _trailing_zeros(v) for v in np.unique(nonzero))
    lo, hi = Fraction(float(values.min())), Fraction(float(values.max()))
    bits = int_bits_needed(min(lo, Fraction(-1, 1 << 64)), hi)  # signed: weights may meet negative values
    total = bits + frac
    if total > EXACT_CONSTANT_BITS:
        return None
    return FixedType(max(total, 1), max(total, 1) - frac)


def _trailing_zeros(value: float) -> int:
    """Trailing zero bits of the 53-bit significand of ``value``."""
    mantissa = int(math.ldexp(abs(np.frexp(value)[0]), 53))
    return (mantissa & -mantissa).bit_length() - 1


def _peak_bits(magnitude: float, width: int) -> int:
    """Signed integer bits holding ``magnitude`` with CALIBRATION_MARGIN spare bits."""
    if not math.isfinite(magnitude):
        return width
    if magnitude <= 0.0:
        return 1 + CALIBRATION_MARGIN
    return max(-width, math.floor(math.log2(magnitude)) + 2 + CALIBRATION_MARGIN)


def retyped(graph: Graph, types: Mapping[str, DType]) -> Graph:
    """``graph`` with the tensors named in ``types`` given those types (constants' values re-assigned
    to theirs)."""
    inputs = [replace(i, type=TensorType(i.type.shape, types.get(i.name, i.type.dtype))) for i in graph.inputs]
    constants = []
    for c in graph.constants:
        if c.name in types:
            c = Constant(c.name, TensorType(c.type.shape, types[c.name]), from_float(c.values, types[c.name]))
        constants.append(c)
    nodes = []
    for node in graph.nodes:
        nodes.append(replace(node, dtype=types.get(node.name, node.dtype)))
    return Graph(graph.name, inputs, constants, nodes, graph.outputs, graph.scales)
