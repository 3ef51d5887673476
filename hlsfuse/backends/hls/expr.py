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

from ...errors import HlsfuseError
from ...lower.elements import Program
from ...lower.shift_add import shift_add
from ...ops import get_op
from ...ops.elementwise import ALPHA_TYPE
from ...ops.threshold import count_type
from .context import Context
from .cxx import float_literal, literal, spell_type

__all__ = ["Term", "Operand", "Digit", "Wheel", "Stmt", "Body", "body"]


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
    row: int = 0  # > 0: ``name[index]`` is a row of this many values (a ROM read a row at a time)


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

def _extremum(ctx: Context, node: str) -> dict[str, Any]:
    """Which operand is the signed one when exactly one is (ops.j2's ``greater`` decides its sign first)."""
    sig = ctx.graph.sigs[node]
    a, b = sig.dtypes
    float_ = sig.out_dtype.is_float or a.is_float or b.is_float
    return {"signed": None if float_ or a.signed == b.signed else int(b.signed)}


def _leaky_relu(ctx: Context, node: str) -> dict[str, Any]:
    alpha = get_op("leaky_relu").constants_of(ctx.graph.sigs[node])["alpha"]
    if ctx.dtype(node).is_float:
        return {"alpha": float_literal(alpha)}
    return {"alpha": literal(alpha, ALPHA_TYPE, spell_type(ALPHA_TYPE))}


def _clip(ctx: Context, node: str) -> dict[str, Any]:
    sig = ctx.graph.sigs[node]
    bounds = get_op("clip").constants_of(sig)
    if sig.out_dtype.is_float:
        return {k: float_literal(v) for k, v in bounds.items()}
    in_type, in_name = sig.dtypes[0], ctx.ctype(ctx.graph.node(node).inputs[0])
    return {k: literal(v, in_type, in_name) for k, v in bounds.items()}


def _threshold(ctx: Context, node: str) -> dict[str, Any]:
    """The counter (a local of type 0..n, exact), the loop index over the row, and which operand is the signed
    one when exactly one is."""
    sig = ctx.graph.sigs[node]
    return {"signed": _extremum(ctx, node)["signed"], "count_type": f"ap_uint<{count_type(sig.shapes[1][-1]).width}>",
            "count": ctx.names.local("count"), "j": ctx.names.local("j")}


def _mul(ctx: Context, node: str) -> dict[str, Any]:
    """By a constant of one value built as shifts and adds (``lower.shift_add``): the other operand's index, the
    product's bits and fractional bits, its terms (shift, sign) highest first and two locals; else nothing."""
    wired = shift_add(ctx.graph, node)
    if wired is None:
        return {"wired": False}
    return {"wired": True, "x": 1 - wired.operand, "width": wired.width, "frac": wired.frac, "terms": wired.terms,
            "m": ctx.names.local("m"), "p": ctx.names.local("p")}


_PARAMS = {
    "mul": _mul,
    "maximum": _extremum,
    "minimum": _extremum,
    "threshold": _threshold,
    "leaky_relu": _leaky_relu,
    "clip": _clip,
    "lookup": lambda ctx, node: {"table": ctx.tables[node][0]},
}
"""micro-op -> the params of its ops.j2 macro that come from the node (constants, tables, operand signs)."""


def statement(ctx: Context, node: str, args: Sequence[Operand]) -> Stmt:
    """The statement computing ``node`` from its operands (in the node's input order): the macro of ops.j2
    named by the op's micro-op (``OpDef.micro``)."""
    n = ctx.graph.node(node)
    micro = get_op(n.op).micro_of(ctx.graph.sigs[node])
    if micro is None:
        raise HlsfuseError(f"{n.where()}: the HLS backend has no C++ statement for op '{n.op}' in a map loop")
    if micro in _PARAMS:
        params = _PARAMS[micro](ctx, node)
    elif ctx.dtype(node).is_float:  # a float32 function's parameters (elu's alpha ...): float32 literals
        params = {k: float_literal(v) for k, v in get_op(n.op).constants_of(ctx.graph.sigs[node]).items()}
    else:
        params = {}
    return Stmt(
        op=micro,
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
            if o.source == "wired":  # built into the statement (ops.j2 ``mul``), never read
                args.append(Operand(ctx.rom(o.tensor)))
                continue
            array = ctx.array(o.tensor) if o.source == "array" else ctx.rom(o.tensor)
            raw = o.source != "array" and ctx.rom_storage[o.tensor] is not None
            terms = tuple(counters.term(*d) for d in o.digits)
            if o.lane:
                if lane is None:
                    raise HlsfuseError(f"{ctx.graph.node(step.node).where()}: a lane offset outside a loop over lanes")
                terms += (Term(lane, o.lane),)
            args.append(Operand(array, terms, ctx.ctype(o.tensor) if raw else None, o.row))
        stmts.append(statement(ctx, step.node, args))
        scalars[step.node] = ctx.value(step.node)
    return Body(tuple(stmts), counters.wheels())
