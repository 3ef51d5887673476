"""``--precision auto[:W]``: each tensor gets the integer bits its range bound needs.

    model --convert with a marker type--> probe graph (structure, and which tensors the
          precision leaves to auto: those typed with the marker)
      --per input, constant and node, in topological order-->
          exact bound (ranges: the op's rule on its inputs as already typed)
          --> the W-bit type with the fewest integer bits that holds it (ranges.fitting_type)
      --> the types, applied like calibrated ones --convert--> Graph

The import is iterative by nature: a node's bound depends on the types chosen for its
inputs, so the walk follows the graph's order. Activations get ``fixed<W,I,RND,WRAP>``
(``ufixed`` when never negative): they cannot overflow, so wrapping costs no logic.
Weights, whose values are known, get ``fixed<W,I,RND,SAT>`` with I from their values,
unless the precision gives a weight type. Graph inputs get ``fixed<W,I,RND,SAT>`` with I
from their given range (``input_ranges``), else ``fixed<W,6,RND,SAT>`` (hls4ml's 6
integer bits). Explicit per-tensor types of a precision map win; ``"auto:W"`` entries set
another width for the nodes they name. Moving ops keep their input's type, as always.

With calibration samples, each activation's integer bits narrow to what the samples need
plus one bit of margin (``precision.int_bits_for``), never more than auto's, and the
type saturates (``RND,SAT``) as values beyond the samples' can occur.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ...errors import HlsfuseError
from ...ir import Graph
from ...ops import get_op
from ...ops.interval import Interval
from ...ranges import fitting_type
from ...types import DType, FixedType, from_float
from .convert import convert
from .model import Model
from .precision import MOVING_OPS, Precision, int_bits_for

__all__ = ["AUTO_WIDTH", "parse_auto", "auto_types", "auto_graph"]

AUTO_WIDTH = 16
"""Total bits of ``--precision auto`` without a width."""

INPUT_INT_BITS = 6
"""Integer bits of a graph input without a given range (hls4ml's default fixed<16,6>)."""

_MARKER_MODES = ("RND_MIN_INF", "SAT_SYM")
"""The modes of the marker type: a combination no precision map spells, so a tensor of the probe
typed with it is one the precision leaves to auto."""


def parse_auto(text) -> int | None:
    """The width of an ``auto`` or ``auto:W`` spelling, or None for anything else."""
    if not isinstance(text, str) or not text.strip().startswith("auto"):
        return None
    spelled = text.strip()
    if spelled == "auto":
        return AUTO_WIDTH
    head, colon, width = spelled.partition(":")
    if head == "auto" and colon and width.strip().isdigit() and 2 <= int(width) <= 64:
        return int(width)
    raise HlsfuseError(f"precision {text!r}: expected auto or auto:W with a total width W of 2..64 bits")


def _marker(width: int) -> FixedType:
    return FixedType(width, INPUT_INT_BITS, True, *_MARKER_MODES)


def auto_types(model: Model, precision: Precision, input_ranges: Mapping[str, tuple[float, float]] | None = None,
               peaks: Mapping[str, float] | None = None) -> dict[str, DType]:
    """The type of every tensor ``precision`` (with ``precision.auto`` set) leaves to auto; with
    ``peaks`` (calibration: largest magnitude per tensor), activations narrowed to them."""
    width = precision.auto
    marker = _marker(width)
    probe = convert(model, replace(precision, default=marker, calibrated={}))
    given = dict(input_ranges or {})
    unknown = sorted(set(given) - {i.name for i in probe.inputs})
    if unknown:
        names = ", ".join(i.name for i in probe.inputs)
        raise HlsfuseError(f"input range for '{unknown[0]}': not an input of the model (inputs: {names})")
    types: dict[str, DType] = {}
    seen: dict[str, Interval] = {}
    dtype_of: dict[str, DType] = {}

    for inp in probe.inputs:
        dtype = inp.type.dtype
        span = Interval.of_reals(*given[inp.name]) if inp.name in given else None
        if dtype == marker:
            dtype = fitting_type(span, width, quant="RND", overflow="SAT") if span is not None else \
                FixedType(width, INPUT_INT_BITS, True, "RND", "SAT")
            types[inp.name] = dtype
        dtype_of[inp.name] = dtype
        seen[inp.name] = span.quantize(dtype)[0] if span is not None else Interval.of_type(dtype)

    for const in probe.constants:
        dtype, raw = const.type.dtype, const.data
        if dtype == marker:
            values = const.values
            span = Interval.of_reals(float(values.min()), float(values.max())) if values.size else Interval(0, 0, None)
            dtype = fitting_type(span, width, quant="RND", overflow="SAT")
            if not dtype.signed:  # weights stay signed, as the other precisions give them
                dtype = FixedType(width, dtype.int_bits + 1, True, "RND", "SAT")
            types[const.name] = dtype
            raw = from_float(values, dtype)
        dtype_of[const.name] = dtype
        seen[const.name] = Interval.of_values(raw, dtype.frac)

    for node in probe.nodes:
        sig = probe.sigs[node.name]
        dtypes = tuple(dtype_of[src] for src in node.inputs)
        declared = sig.out_dtype
        inherited = node.op in MOVING_OPS and declared == probe.types[node.inputs[0]].dtype
        node_width = precision.auto_width(node.name) or width
        if inherited:
            dtype = dtypes[0]
        elif declared == marker:
            dtype = _node_type(node, replace(sig, dtypes=dtypes), [seen[s] for s in node.inputs], node_width,
                               None if peaks is None else peaks.get(node.name))
            types[node.name] = dtype
        else:
            dtype = declared
        exact = get_op(node.op).bounds([seen[s] for s in node.inputs], replace(sig, dtypes=dtypes, out_dtype=dtype))
        seen[node.name] = exact.quantize(dtype)[0]
        dtype_of[node.name] = dtype
    return types


def _node_type(node, sig, inputs: list[Interval], width: int, peak: float | None) -> FixedType:
    """The fitting type of a node; ops whose result depends on their type (lookup tables) are
    bounded again with the chosen type until it holds (a table's entries round to its type)."""
    rule = get_op(node.op).bounds
    dtype = FixedType(width, width, True, "RND", "WRAP")
    for _ in range(8):
        exact = rule(inputs, replace(sig, out_dtype=dtype))
        chosen = fitting_type(exact, width)
        if chosen == dtype:
            break
        dtype = chosen
    if peak is not None:
        need = int_bits_for(peak, width, 1) - (0 if dtype.signed else 1)
        if need < dtype.int_bits:
            dtype = FixedType(width, need, dtype.signed, "RND", "SAT")
    return dtype


def auto_graph(model: Model, precision: Precision, input_ranges=None, peaks=None) -> Graph:
    """The graph of ``model`` with auto types."""
    types = auto_types(model, precision, input_ranges, peaks)
    final = replace(precision, default=FixedType(precision.auto, INPUT_INT_BITS, True, "RND", "SAT"))
    return convert(model, final.with_calibration(types))
