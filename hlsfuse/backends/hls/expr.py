"""The C++ of elementwise nodes, as statement views rendered by templates/hls/ops.j2.

The lowering decides which map nodes a loop computes per element and how each operand is indexed
(``lower.elements``: programs of steps, broadcast digits); ``body`` names them for C++: one
``Stmt`` per step, declaring the node's variable with the node's own type and assigning it once,
so the value is rounded exactly where the reference rounds (DESIGN.md section 3); ap_fixed
arithmetic on the right-hand side is full precision, hence exact. Array and ROM operands read
``name[sum of counter * stride]``: each distinct digit (inner, size) is a counter advanced once per
element (no division in hardware), grouped into *wheels* that share an ``inner``; the digit
(1, count) is the loop index itself.

    node [2, 3, 4], bias [4]       ->  bias[k0]            k0 = i % 4
    node [2, 3, 4], x [2, 1, 4]    ->  x[k1 * 4 + k0]      k1 = (i / 12) % 2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ...errors import HlsfuseError
from ...lower.elements import Program
from ...ops.elementwise import ALPHA_TYPE, _clip_bounds
from ...types import from_float
from .context import LUT_FUNCTIONS, Context
from .cxx import float_literal, literal, spell_type

__all__ = ["Term", "Operand", "Digit", "Wheel", "Stmt", "Body", "body", "MAP_OPS"]


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
    element: str | None = None  # the array holds raw integers: read back as this type (hlsf::element)


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
    "relu": "relu",
    "neg": "neg",
    "abs": "abs",
    "reshape": "assign",
    "flatten": "assign",
    "squeeze": "assign",
    "expand_dims": "assign",
    "transpose": "assign",  # only an identity reorder runs in a map loop (lower.elements checks it)
}
MAP_OPS = frozenset(_PLAIN) | {"maximum", "minimum", "leaky_relu", "clip", "cast", *LUT_FUNCTIONS}
"""Every op ``body`` computes."""


def _special(ctx: Context, node: str) -> tuple[str, dict[str, Any]]:
    """(macro, params) of ops whose statement carries constants, tables or conversions."""
    n = ctx.graph.node(node)
    sig = ctx.graph.sigs[node]
    out_float = sig.out_dtype.is_float
    if n.op in ("maximum", "minimum"):
        # which operand is the signed one when exactly one is (ops.j2's `greater` decides its sign first)
        a, b = sig.dtypes
        signed = None if out_float or a.is_float or b.is_float or a.signed == b.signed else int(b.signed)
        return n.op, {"signed": signed}
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
# Programs
# --------------------------------------------------------------------------


class _Counters:
    """Names the digits a body needs, in order of first use."""

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


def body(ctx: Context, program: Program, values: Mapping[str, str], index: str, lane: str | None = None) -> Body:
    """The statements of ``program`` for element ``index`` of its loop (over wide tokens: for lane ``lane``
    of token ``index``, ``lower.elements.tokens``).

    ``values``: the variable holding each per-element tensor (streamed inputs, the head's result);
    held inputs and pre-loop results are read from their arrays, constants from their ROMs."""
    counters = _Counters(ctx, program.count, index)
    scalars = dict(values)
    stmts = []
    for step in program.steps:
        args = []
        for o in step.operands:
            if o.source == "value":
                if o.tensor not in scalars:
                    raise HlsfuseError(f"{ctx.graph.node(step.node).where()}: input '{o.tensor}' has no value here")
                args.append(Operand(scalars[o.tensor]))
                continue
            array = ctx.array(o.tensor) if o.source == "array" else ctx.rom(o.tensor)
            raw = o.source != "array" and ctx.rom_storage[o.tensor] is not None
            terms = tuple(counters.term(*d) for d in o.digits)
            if o.lane:
                if lane is None:
                    raise HlsfuseError(f"{ctx.graph.node(step.node).where()}: a lane offset outside a loop over lanes")
                terms += (Term(lane, o.lane),)
            args.append(Operand(array, terms, ctx.ctype(o.tensor) if raw else None))
        stmts.append(statement(ctx, step.node, args))
        scalars[step.node] = ctx.value(step.node)
    return Body(tuple(stmts), counters.wheels())
