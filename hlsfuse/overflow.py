"""Overflow: where a graph's declared types can overflow, and where they did on a run.

    risks(graph, input_ranges)  the nodes whose declared type cannot hold every value the range
                                analysis (ranges.py) allows, worst first
    events(graph, values)       the nodes whose exact results left their type on a run, with how
                                many values saturated or wrapped
    warning(risks) / report(events)   one summarised line / one line per node, for the commands

A node's result is exact until its one assignment to its declared type (DESIGN.md section 3);
that assignment is where a value can saturate (SAT, SAT_SYM, SAT_ZERO) or wrap (WRAP). To see it
happen, ``events`` computes each node at risk a second time into a 64-bit saturating type with
the same fractional bits and rounding: the same rounded values, but nothing of the range cut
off, so every value outside the declared range is one event. Nodes the analysis proves safe
cannot overflow, so they are not computed again. A table op's (sigmoid, exp, ...) result is its
table entry, which saturates when the table is built, as the analysis takes it too; a cast into a
saturating type clips on purpose (a quantizer); neither is reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from .errors import HlsfuseError
from .ir import Graph
from .ops import get_op
from .ranges import Range, ranges
from .types import MAX_WIDTH, FixedType, to_float

__all__ = ["risks", "warning", "Event", "events", "report", "NAMED"]

NAMED = 3
"""Nodes a summarised warning names (the worst ones); the rest are counted."""


def risks(graph: Graph, input_ranges: Mapping[str, tuple[float, float]] | None = None) -> list[Range]:
    """The nodes whose declared type can overflow, the largest excess over the type's range first
    (graph order among equals); a float32 node cannot (it has no range to leave). Inputs take ``input_ranges``
    where given, else their types' range. A ``cast`` into a saturating type is not one of them: it clips on
    purpose (a quantizer of a quantized model, or a cast written for that)."""
    found = [r for r in ranges(graph, input_ranges).values()
             if not (r.dtype.is_float or r.fits or r.op == "input" or _clips(r.op, r.dtype))]
    order = {node.name: k for k, node in enumerate(graph.nodes)}
    return sorted(found, key=lambda r: (-_excess(r), order[r.name]))


def _clips(op: str, dtype) -> bool:
    """A cast into a saturating type: it clips on purpose."""
    return op == "cast" and dtype.overflow != "WRAP"


def _excess(r: Range) -> float:
    """How many times the bound's magnitude exceeds the type's (a float: bounds can pass 2**64)."""
    reach = math.ldexp(1.0, r.dtype.int_bits - (1 if r.dtype.signed else 0))
    return max(float(-r.lo), float(r.hi)) / reach


def warning(found: list[Range], given_ranges: bool = False) -> str:
    """One line naming the worst nodes of ``risks`` and what to do about them."""
    worst = ", ".join(f"'{r.name}' ({r.op}, {r.dtype}) can reach [{float(r.lo):.4g}, {float(r.hi):.4g}]"
                      for r in found[:NAMED])
    more = f" and {len(found) - NAMED} more" if len(found) > NAMED else ""
    inputs = "the given input ranges" if given_ranges else "inputs anywhere in their types' ranges"
    nodes = f"{len(found)} node{'s' if len(found) != 1 else ''}"
    return (f"{nodes} can overflow {'their types' if len(found) != 1 else 'its type'} (range analysis, {inputs}): "
            f"{worst}{more}; check --ranges lists them, --input-range, --precision auto or wider types make them "
            "safe")


@dataclass(frozen=True)
class Event:
    """Values of node ``name`` that left its declared type on a run: ``count`` of ``size``
    saturated or wrapped; ``lo``/``hi`` are the exact (rounded) extremes they reached."""

    name: str
    op: str
    dtype: FixedType
    count: int
    size: int
    lo: float
    hi: float

    @property
    def what(self) -> str:
        return "wrapped" if self.dtype.overflow == "WRAP" else "saturated"


def events(graph: Graph, values: Mapping[str, np.ndarray], candidates: Iterable[str] | None = None) -> list[Event]:
    """The nodes among ``candidates`` (default: those of ``risks``) whose values overflowed in
    ``values``, the raw values of every tensor of a run (``reference.run_raw``), in graph order."""
    names = {r.name for r in risks(graph)} if candidates is None else set(candidates)
    found = []
    for node in graph.nodes:
        sig = graph.sigs[node.name]
        dtype = sig.out_dtype
        if node.name not in names or dtype.is_float or _table_entry(node.op, sig) or _clips(node.op, dtype):
            continue  # a table op's result is its entry, saturated when the table is built (lut.py)
        wide = _wide(dtype)
        exact = np.asarray(get_op(node.op).compute([values[src] for src in node.inputs], replace(sig, out_dtype=wide)))
        outside = (exact < dtype.raw_min) | (exact > dtype.raw_max)
        count = int(np.count_nonzero(outside))
        if count:
            reals = to_float(exact, wide)
            found.append(Event(node.name, node.op, dtype, count, exact.size, float(reals.min()), float(reals.max())))
    return found


def _table_entry(op: str, sig) -> bool:
    """An elementwise table op, whose result is its table's entry (a softmax or a normalisation reads tables but
    assigns a product, which can overflow)."""
    entry = get_op(op)
    return entry.tables is not None and entry.stream_kind(sig) == "map"


def _wide(dtype: FixedType) -> FixedType:
    """The 64-bit saturating type with ``dtype``'s fractional bits and rounding: it holds every value
    ``dtype`` can (and, saturating, flags the ones beyond 64 bits as outside ``dtype`` too)."""
    try:
        return FixedType(MAX_WIDTH, MAX_WIDTH - dtype.frac, True, dtype.quant, "SAT")
    except HlsfuseError:  # fractional bits beyond what a 64-bit type may have
        raise HlsfuseError(f"cannot check {dtype} for overflow: its {dtype.frac} fractional bits leave no "
                           "64-bit type to compare it with") from None


def report(found: list[Event]) -> list[str]:
    """One line per node that overflowed on a run."""
    return [f"'{e.name}' ({e.op}, {e.dtype}): {e.count} of {e.size} values {e.what} "
            f"(its exact values reached [{e.lo:.4g}, {e.hi:.4g}])" for e in found]
