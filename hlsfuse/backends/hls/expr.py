"""The C++ of elementwise nodes, as statement views rendered by templates/hls/ops.j2.

Every stage kind computes its map nodes the same way (a map stage's loop body, the epilogue of a
convolution or dense group, the prologue of a reduction): ``element_body`` turns a run of nodes
into one ``Stmt`` per node plus the index counters their broadcast operands need. Each statement
declares the node's variable with the node's own type and assigns it once, so the value is
rounded exactly where the reference rounds (DESIGN.md section 3); ap_fixed arithmetic on the
right-hand side is full precision, hence exact.

Indexing broadcast operands. The loop runs over the N elements of a tensor in row-major order
(flat index i). An operand of node n that is smaller than n (a bias, a per-channel scale, a
broadcast tensor held on chip or a ROM) is read at

    index = sum over its non-broadcast dims d of ((i / inner_d) % size_d) * stride_d

after merging adjacent dims that broadcast alike. Each (inner, size) pair is a *digit*: a counter
advanced once per element (no division in hardware); the digit (1, N) is the loop index itself.

    node [2, 3, 4], bias [4]       ->  bias[k0]            k0 = i % 4
    node [2, 3, 4], x [2, 1, 4]    ->  x[k1 * 4 + k0]      k1 = (i / 12) % 2
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ...errors import HlsfuseError
from ...ops import get_op
from ...ops.elementwise import ALPHA_TYPE, _clip_bounds
from ...types import from_float
from .context import LUT_FUNCTIONS, Context
from .cxx import float_literal, literal, spell_type

__all__ = ["Term", "Operand", "Digit", "Wheel", "Stmt", "Body", "element_body", "broadcast_digits", "MAP_OPS"]


@dataclass(frozen=True)
class Term:
    """``var * stride`` in an index sum."""

    var: str
    stride: int


@dataclass(frozen=True)
class Operand:
    """A value a statement reads: a scalar variable (``index is None``) or ``name[sum of terms]``."""

    name: str
    index: tuple[Term, ...] | None = None


@dataclass(frozen=True)
class Digit:
    """Counter ``name`` = (i / inner) % count of the loop's flat index i."""

    name: str
    inner: int
    count: int


@dataclass(frozen=True)
class Wheel:
    """The digits sharing one ``inner``: they advance when ``low`` (= i % inner) wraps; every element if inner is 1."""

    low: str | None
    inner: int
    digits: tuple[Digit, ...]


@dataclass(frozen=True)
class Stmt:
    """One node: declare ``out`` of C++ type ``type`` and assign it by macro ``op`` of ops.j2."""

    op: str
    node: str
    out: str
    type: str
    args: tuple[Operand, ...]
    is_float: bool
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Body:
    """Per-element statements of a run of nodes and the counters they index with."""

    stmts: tuple[Stmt, ...]
    wheels: tuple[Wheel, ...]


# --------------------------------------------------------------------------
# Per-op statements
# --------------------------------------------------------------------------

# op -> macro of ops.j2, for ops whose statement needs no constants
_PLAIN = {
    "add": "add",
    "bias_add": "add",
    "sub": "sub",
    "mul": "mul",
    "scale": "mul",
    "maximum": "maximum",
    "minimum": "minimum",
    "relu": "relu",
    "neg": "neg",
    "abs": "abs",
    "reshape": "assign",
    "flatten": "assign",
    "squeeze": "assign",
    "expand_dims": "assign",
    "transpose": "assign",  # only an identity reorder runs in a map loop (checked by element_body)
}
MAP_OPS = frozenset(_PLAIN) | {"leaky_relu", "clip", "cast", *LUT_FUNCTIONS}
"""Every op ``element_body`` computes."""


def _special(ctx: Context, node: str) -> tuple[str, dict[str, Any]]:
    """(macro, params) of ops whose statement carries constants, tables or conversions."""
    n = ctx.graph.node(node)
    sig = ctx.graph.sigs[node]
    out_float = sig.out_dtype.is_float
    if n.op == "leaky_relu":
        if out_float:
            return "leaky_relu", {"alpha": float_literal(sig["alpha"])}
        raw = int(from_float(np.array(sig["alpha"]), ALPHA_TYPE))
        return "leaky_relu", {"alpha": literal(raw, ALPHA_TYPE, spell_type(ALPHA_TYPE))}
    if n.op == "clip":
        if out_float:
            return "clip", {"lo": float_literal(sig["min"]), "hi": float_literal(sig["max"])}
        lo, hi = _clip_bounds(sig)
        in_type, in_name = sig.dtypes[0], ctx.ctype(n.inputs[0])
        return "clip", {"lo": literal(lo, in_type, in_name), "hi": literal(hi, in_type, in_name)}
    if n.op == "cast":
        return ("to_float" if out_float and not sig.dtypes[0].is_float else "assign"), {}
    if n.op in LUT_FUNCTIONS:
        if out_float:
            return f"{n.op}_float", {}
        return "lookup", {"table": ctx.tables[node]}
    raise HlsfuseError(f"{n.where()}: the HLS backend has no C++ statement for op '{n.op}' in a map loop")


def statement(ctx: Context, node: str, args: Sequence[Operand]) -> Stmt:
    """The statement computing ``node`` from its operands (in the node's input order)."""
    n = ctx.graph.node(node)
    if n.op in _PLAIN:
        macro, params = _PLAIN[n.op], {}
    else:
        macro, params = _special(ctx, node)
    return Stmt(
        op=macro,
        node=node,
        out=ctx.value(node),
        type=ctx.ctype(node),
        args=tuple(args),
        is_float=ctx.dtype(node).is_float,
        params=MappingProxyType(params),
    )


# --------------------------------------------------------------------------
# Broadcast indexing
# --------------------------------------------------------------------------


def broadcast_digits(out_shape: Sequence[int], in_shape: Sequence[int]) -> tuple[tuple[int, int, int], ...]:
    """(inner, size, stride) per merged non-broadcast run of dims of an operand of shape ``in_shape``
    read by a node of shape ``out_shape`` (numpy broadcasting), innermost first."""
    rank = len(out_shape)
    if len(in_shape) > rank:
        raise HlsfuseError(f"shape {list(in_shape)} does not broadcast to {list(out_shape)}")
    padded = (1,) * (rank - len(in_shape)) + tuple(in_shape)
    runs: list[list] = []  # [full, size], innermost first
    for d in reversed(range(rank)):
        size = out_shape[d]
        if size == 1:
            continue
        if padded[d] not in (1, size):
            raise HlsfuseError(f"shape {list(in_shape)} does not broadcast to {list(out_shape)}")
        full = padded[d] == size
        if runs and runs[-1][0] == full:
            runs[-1][1] *= size
        else:
            runs.append([full, size])
    digits, inner, stride = [], 1, 1
    for full, size in runs:
        if full:
            digits.append((inner, size, stride))
            stride *= size
        inner *= size
    return tuple(digits)


class _Counters:
    """Names the digits an element body needs, in order of first use."""

    def __init__(self, ctx: Context, count: int, index: str):
        self.ctx, self.count, self.index = ctx, count, index
        self.digits: dict[tuple[int, int], str] = {}

    def term(self, inner: int, size: int, stride: int) -> Term:
        if inner == 1 and size == self.count:
            return Term(self.index, stride)
        key = (inner, size)
        if key not in self.digits:
            self.digits[key] = self.ctx.names.local(f"k{len(self.digits)}")
        return Term(self.digits[key], stride)

    def wheels(self) -> tuple[Wheel, ...]:
        wheels = []
        for inner in sorted({inner for inner, _ in self.digits}):
            digits = tuple(Digit(name, i, n) for (i, n), name in self.digits.items() if i == inner)
            lows = sum(1 for w in wheels if w.low)
            low = None if inner == 1 else self.ctx.names.local(f"r{lows}")
            wheels.append(Wheel(low, inner, digits))
        return tuple(wheels)


# --------------------------------------------------------------------------
# element_body
# --------------------------------------------------------------------------


def element_body(
    ctx: Context,
    nodes: Sequence[str],
    count: int,
    values: Mapping[str, str],
    arrays: Mapping[str, str],
    index: str,
) -> Body:
    """Statements computing ``nodes`` (topological order) for element ``index`` of a loop over ``count`` elements.

    ``values``: tensors available as one variable per element (streamed inputs, an anchor's
    result); ``arrays``: tensors held whole in local arrays (indexed like broadcast operands);
    constants are read from their ROMs. Every node must have ``count`` elements.
    """
    counters = _Counters(ctx, count, index)
    scalars = dict(values)
    stmts = []
    for name in nodes:
        node = ctx.graph.node(name)
        shape = ctx.type_of(name).shape
        if math.prod(shape) != count:
            raise HlsfuseError(f"{node.where()}: has {math.prod(shape)} elements, not the loop's {count}")
        if node.op not in MAP_OPS or _reorders(ctx, name):
            raise HlsfuseError(f"{node.where()}: op '{node.op}' cannot be computed element by element in a map loop")
        args = []
        for src in node.inputs:
            if src in scalars:
                args.append(Operand(scalars[src]))
                continue
            if src in arrays:
                array = arrays[src]
            elif src in ctx.graph.constant_map:
                array = ctx.rom(src)
            else:
                raise HlsfuseError(f"{node.where()}: input '{src}' is neither streamed, held nor a constant here")
            digits = broadcast_digits(shape, ctx.type_of(src).shape)
            args.append(Operand(array, tuple(counters.term(*d) for d in digits)))
        stmts.append(statement(ctx, name, args))
        scalars[name] = ctx.value(name)
    return Body(tuple(stmts), counters.wheels())


def _reorders(ctx: Context, node: str) -> bool:
    """A transpose that changes the element order cannot run in a map loop."""
    n = ctx.graph.node(node)
    return n.op == "transpose" and get_op("transpose").buffer_reason(ctx.graph.sigs[node]) is not None
