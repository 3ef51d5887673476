"""``--precision auto[:W]``: each tensor gets the integer bits its range bound needs.

    model --convert with a marker type--> probe graph (structure, and which tensors the
          precision leaves to auto: those typed with the marker)
      --ranges.auto_types: per input, constant and node, in topological order-->
          exact bound (the op's rule on its inputs as already typed)
          --> the W-bit type with the fewest integer bits that holds it
      --> the types, applied like calibrated ones --convert--> Graph

The import is iterative by nature: a node's bound depends on the types chosen for its
inputs, so the walk follows the graph's order. Activations get ``fixed<W,I,RND,WRAP>``
(``ufixed`` when never negative): they cannot overflow, so wrapping costs no logic.
Weights, whose values are known, get ``fixed<W,I,RND,SAT>`` with I from their values,
unless the precision gives a weight type. Graph inputs get ``fixed<W,I,RND,SAT>`` with I
from their given range (``input_ranges``), else ``fixed<W,6,RND,SAT>`` (hls4ml's 6
integer bits). Explicit per-tensor types of a precision map win; ``"auto:W"`` entries set
another width for the nodes they name. Moving ops keep their input's type, as always.

``exact`` is auto where every node gets the type that holds its exact result (``ranges.exact_type``):
the default for quantized models (QONNX, QDQ: quant.py), whose quantizers give the types that matter.

With calibration samples, each activation's integer bits narrow to what the samples need
plus one bit of margin (``ranges.CALIBRATION_MARGIN``), never more than auto's, and the
type saturates (``RND,SAT``) as values beyond the samples' can occur.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace

from ... import ranges
from ...errors import HlsfuseError
from ...ir import Graph
from ...types import DType, FixedType
from .convert import convert
from .model import Model
from .precision import MOVING_OPS, Precision
from .scaled import FloatTie

__all__ = ["auto_types", "auto_graph"]

_MARKER_MODES = ("RND_MIN_INF", "SAT_SYM")
"""The modes of the marker type: a combination no precision map spells, so a tensor of the probe
typed with it is one the precision leaves to auto."""


def _marker(width: int) -> FixedType:
    return FixedType(width, ranges.INPUT_INT_BITS, True, *_MARKER_MODES)


def auto_types(model: Model, precision: Precision, input_ranges: Mapping[str, tuple[float, float]] | None = None,
               peaks: Mapping[str, float] | None = None) -> dict[str, DType]:
    """The type of every tensor ``precision`` (with ``precision.auto`` set) leaves to auto; with
    ``peaks`` (calibration: largest magnitude per tensor), activations narrowed to them."""
    width = precision.auto
    marker = _marker(width)
    probe = convert(model, replace(precision, default=marker, calibrated={}))
    names = [i.name for i in probe.inputs]
    unknown = sorted(set(input_ranges or {}) - set(names))
    if unknown:
        raise HlsfuseError(f"input range for '{unknown[0]}': not an input of the model (inputs: {', '.join(names)})")
    free = {name for name, t in probe.types.items() if t.dtype == marker}
    # a moving node the precision does not name has its input's type (in the probe too)
    free |= {n.name for n in probe.nodes if n.op in MOVING_OPS and probe.types[n.inputs[0]].dtype ==
             probe.types[n.name].dtype}
    return ranges.auto_types(probe, width, input_ranges, free.__contains__, precision.auto_width, peaks,
                             precision.auto_limit, exact=precision.exact)


MAX_ROUNDS = 16
"""Conversions ``auto_graph`` may take to reach types that no longer change."""


def auto_graph(model: Model, precision: Precision, input_ranges=None, peaks=None) -> Graph:
    """The graph of ``model`` with auto types.

    Under ``exact``, a quantizer that absorbs a float scale or float BatchNorm (scaled.py) computes its constants
    from its input's type, which the probe does not know yet; so the types are computed again on the converted
    graph until they no longer change (one round per such quantizer in a chain, at most)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FloatTie)  # the probe's quantizers see marker types: the final graph warns
        types = auto_types(model, precision, input_ranges, peaks)
    final = replace(precision, default=FixedType(precision.auto, ranges.INPUT_INT_BITS, True, "RND", "SAT"))
    graph, said = _converted(model, final.with_calibration(types))
    for _ in range(MAX_ROUNDS if precision.exact else 0):
        again = ranges.auto_types(graph, precision.auto, input_ranges, types.__contains__, precision.auto_width,
                                  peaks, precision.auto_limit, exact=True)
        if again == types:
            break
        types = again
        graph, said = _converted(model, final.with_calibration(types))
    for message in said:  # the final graph's quantizers at float32 ties, once
        warnings.warn(message, stacklevel=3)
    return graph


def _converted(model: Model, precision: Precision) -> tuple[Graph, list[Warning]]:
    """``convert``, with the FloatTie warnings it gives held back (``auto_graph`` repeats the last ones)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FloatTie)
        graph = convert(model, precision)
    ties = [w.message for w in caught if issubclass(w.category, FloatTie)]
    for w in caught:
        if not issubclass(w.category, FloatTie):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return graph, ties
