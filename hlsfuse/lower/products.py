"""Products without multipliers: what a MAC stage's 1- and 2-bit weights make of its products.

A MAC stage (conv2d, dense, matmul) whose weights are a constant knows every weight at compile time. When
every raw weight is -1, 0 or +1, a product is the input itself, its negation or nothing, and no multiplier
is needed at all (no DSP, no LUT product). The kind follows from the weights' raw values and the operand
types alone, so it is computed here once, and the resource model and both backends read it:

    kind     when (raw integers)                    each product w x                   spelled
    sign     every weight in {-1, +1}               +x or -x                           w < 0 ? -x : x
    ternary  every weight in {-1, 0, +1}            +x, -x or 0                        w == 0 ? 0 : w < 0 ? -x : x
    xnor     every weight in {-1, +1}, and x one    +b or -b, b the bit of x           2 popcount(b & p) - popcount(b)
             bit wide (a {0, 1} or {-1, 0} code)                                         (times -1 for a signed x)

with p the weight's bit "w > 0". The xnor kind is the XNOR-popcount of binarized networks: for a bipolar
x = 2b - 1 and w = 2p - 1, w x = 2 xnor(b, p) - 1. hlsfuse streams the 1-bit code b itself (the ONNX import
keeps a bipolar activation's affine 2b - 1 for the next layer to absorb, docs/onnx.md), so the stage computes
sum_j w_j b_j = sum over p_j of b_j - sum over not p_j of b_j = 2 popcount(b & p) - popcount(b), the second
popcount shared by every output the stage computes from the same row or window. The values are exactly the
products' (the raw product w x, with x's and w's fractional bits, as any other MAC), so the reference
interpreter needs no change.

``product_kind`` is None for anything else (a float, a weight computed by another stage, any other weight):
the products are multipliers, on DSPs or LUTs as ``schedule.MULTIPLIERS`` says.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..ir import Graph
from ..types import DType
from .plan import Stage

__all__ = ["PRODUCT_KINDS", "product_kind", "weight_kind"]

PRODUCT_KINDS = ("sign", "ternary", "xnor")
"""The products a MAC stage builds without a multiplier, by its constant weights' raw values (module docstring)."""


def weight_kind(raw: np.ndarray, x: DType, w: DType) -> str | None:
    """The product kind of weights with raw integers ``raw`` times an ``x`` value (None: a multiplier)."""
    if x.is_float or w.is_float or raw.size == 0 or raw.min() < -1 or raw.max() > 1:  # (no copy of the weights)
        return None
    if np.count_nonzero(raw) == raw.size:
        return "xnor" if x.bits == 1 else "sign"
    return "ternary"


_KINDS: dict[int, tuple[weakref.ref, DType, DType, str | None]] = {}
"""The kinds found, by the id of the weights' array (held weakly: an entry leaves with its array), so that the
solver's thousands of pricings read a large model's weights once."""


def _kind_of(data: np.ndarray, x: DType, w: DType) -> str | None:
    key = id(data)
    hit = _KINDS.get(key)
    if hit is not None and hit[0]() is data and hit[1:3] == (x, w):
        return hit[3]
    kind = weight_kind(data, x, w)
    _KINDS[key] = (weakref.ref(data, lambda _, k=key: _KINDS.pop(k, None)), x, w, kind)
    return kind


def product_kind(graph: Graph, stage: Stage) -> str | None:
    """The kind of stage ``stage``'s products (``PRODUCT_KINDS``), or None when they are multipliers: a MAC
    stage (its schedule has multipliers) whose weights, the head's second input, are a fixed-point constant of
    raw values in {-1, 0, +1}, times a fixed-point input."""
    if not stage.schedule.multipliers or stage.head is None:
        return None
    head = graph.node(stage.head)
    if len(head.inputs) < 2:
        return None
    const = graph.constant_map.get(head.inputs[1])
    if const is None:
        return None
    x, w = graph.types[head.inputs[0]].dtype, const.type.dtype
    if x.is_float or w.is_float:
        return None
    return _kind_of(const.data, x, w)
