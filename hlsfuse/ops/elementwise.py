"""Elementwise and broadcast ops.

Binary ops follow numpy broadcasting; their pattern is ELEMWISE when every
input already has the output's shape and BROADCAST otherwise. ``bias_add`` and
``scale`` take a 1-D per-channel operand acting on the last axis (NHWC), which
is how batch-norm is folded. Every fixed-point result is computed exactly and
assigned once to the node's output type.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpError
from ..types import FixedType, Fmt, assign, from_float, to_float
from .base import Attr, OpDef, Pattern, Sig, fixed_inputs, same_family
from .exact import aligned, finish
from .interval import Interval

__all__ = ["OPS", "broadcast_shape", "broadcast_pattern"]


def broadcast_shape(sig: Sig) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*sig.shapes))
    except ValueError:
        shapes = " and ".join(str(list(s)) for s in sig.shapes)
        raise OpError(f"input shapes {shapes} do not broadcast") from None


def broadcast_pattern(sig: Sig) -> Pattern:
    out = broadcast_shape(sig)
    return Pattern.ELEMWISE if all(tuple(s) == out for s in sig.shapes) else Pattern.BROADCAST


def _unary_shape(sig: Sig) -> tuple[int, ...]:
    return sig.shapes[0]


def _checker(rule):
    """A ``check`` that verifies the type family and that ``rule(*fmts, sig)`` fits 64 bits."""

    def check(sig: Sig) -> None:
        same_family(sig)
        fmts = fixed_inputs(sig)
        if fmts is not None:
            rule(*fmts, sig).check("the exact result")

    return check


# --------------------------------------------------------------------------
# Binary ops
# --------------------------------------------------------------------------


def _add(args, sig):
    if sig.out_dtype.is_float:
        return (args[0] + args[1]).astype(np.float32)
    (a, b), frac = aligned(args, sig)
    return finish(a + b, frac, sig)


def _sub(args, sig):
    if sig.out_dtype.is_float:
        return (args[0] - args[1]).astype(np.float32)
    (a, b), frac = aligned(args, sig)
    return finish(a - b, frac, sig)


def _mul(args, sig):
    if sig.out_dtype.is_float:
        return (args[0] * args[1]).astype(np.float32)
    frac = sig.dtypes[0].frac + sig.dtypes[1].frac
    return finish(args[0] * args[1], frac, sig)


def _extremum(fn):
    def compute(args, sig):
        if sig.out_dtype.is_float:
            return fn(args[0], args[1]).astype(np.float32)
        (a, b), frac = aligned(args, sig)
        return finish(fn(a, b), frac, sig)

    return compute


def _binary(name: str, rule, compute, bounds, doc: str) -> OpDef:
    return OpDef(
        name=name,
        micro=name,
        inputs=("a", "b"),
        shape=broadcast_shape,
        pattern=broadcast_pattern,
        check=_checker(rule),
        compute=compute,
        bounds=bounds,
        doc=doc,
    )


def _per_channel_shape(operand: str):
    """Shape rule of ``x`` combined with a 1-D operand on its last (channel) axis."""

    def shape(sig: Sig) -> tuple[int, ...]:
        x, c = sig.shapes
        if len(x) < 1:
            raise OpError("input 'x' must have at least 1 dim")
        if len(c) != 1 or c[0] != x[-1]:
            raise OpError(f"input '{operand}' must have shape [{x[-1]}] (the last axis of 'x'), not {list(c)}")
        return x

    return shape


# --------------------------------------------------------------------------
# Unary ops
# --------------------------------------------------------------------------


def _relu(args, sig):
    x = args[0]
    if sig.out_dtype.is_float:
        return np.maximum(x, np.float32(0)).astype(np.float32)
    return finish(np.maximum(x, 0), sig.dtypes[0].frac, sig)


ALPHA_TYPE = FixedType(16, 1, True, "RND", "SAT")
"""leaky_relu's slope is a constant of this type (15 fractional bits)."""


def _alpha_check(alpha: float) -> str | None:
    # outside [-1, 1) the constant would saturate and fixed graphs would silently use another slope
    if -1.0 <= alpha < 1.0:
        return None
    return f"must be in [-1, 1) (it is a {ALPHA_TYPE} constant), not {alpha}"


def _leaky_constants(sig: Sig) -> dict:
    """alpha: the float of a float32 graph, else the raw value of its ALPHA_TYPE constant."""
    alpha = sig["alpha"]
    return {"alpha": alpha if sig.out_dtype.is_float else int(from_float(np.array(alpha), ALPHA_TYPE))}


def _leaky_relu(args, sig):
    x = args[0]
    if sig.out_dtype.is_float:
        return np.where(x >= 0, x, np.float32(sig["alpha"]) * x).astype(np.float32)
    a = _leaky_constants(sig)["alpha"]
    frac = sig.dtypes[0].frac + ALPHA_TYPE.frac
    scaled = np.where(x >= 0, x << ALPHA_TYPE.frac, x * a)
    return finish(scaled, frac, sig)


def _leaky_check(sig: Sig) -> None:
    same_family(sig)
    fmts = fixed_inputs(sig)
    if fmts is not None:
        fmts[0].mul(Fmt.of(ALPHA_TYPE)).check("the exact result")


def _clip_constants(sig: Sig) -> dict:
    """lo and hi: the floats of a float32 graph, else raw values of the input type (round to nearest,
    saturate)."""
    if sig.out_dtype.is_float:
        return {"lo": sig["min"], "hi": sig["max"]}
    t = sig.dtypes[0]
    bound_type = FixedType(t.width, t.int_bits, t.signed, "RND", "SAT")
    return {"lo": int(from_float(sig["min"], bound_type)), "hi": int(from_float(sig["max"], bound_type))}


def _clip(args, sig):
    x = args[0]
    if sig.out_dtype.is_float:
        return np.clip(x, np.float32(sig["min"]), np.float32(sig["max"])).astype(np.float32)
    bounds = _clip_constants(sig)
    return finish(np.clip(x, bounds["lo"], bounds["hi"]), sig.dtypes[0].frac, sig)


def _clip_attrs_check(sig: Sig) -> None:
    same_family(sig)
    if sig["min"] > sig["max"]:
        raise OpError(f"attribute 'min' ({sig['min']}) must not exceed 'max' ({sig['max']})")


def _neg(args, sig):
    if sig.out_dtype.is_float:
        return (-args[0]).astype(np.float32)
    return finish(-args[0], sig.dtypes[0].frac, sig)


def _abs(args, sig):
    if sig.out_dtype.is_float:
        return np.abs(args[0]).astype(np.float32)
    return finish(np.abs(args[0]), sig.dtypes[0].frac, sig)


def _relu_bounds(ins, sig):
    x = ins[0]
    return x.like(np.maximum(x.lo, 0), np.maximum(x.hi, 0))


def _leaky_bounds(ins, sig):
    x, alpha = ins[0], sig["alpha"]
    if x.frac is None:
        slope = Interval(alpha, alpha, None)
        negative = x.like(np.minimum(x.lo, 0.0), np.minimum(x.hi, 0.0)) * slope
        return negative.union(x.like(np.maximum(x.lo, 0.0), np.maximum(x.hi, 0.0)))
    a = _leaky_constants(sig)["alpha"]
    negative = x.like(np.minimum(x.lo, 0), np.minimum(x.hi, 0)) * Interval(a, a, ALPHA_TYPE.frac)
    positive = x.like(np.maximum(x.lo, 0), np.maximum(x.hi, 0)).at(negative.frac)
    return negative.union(positive)


def _clip_interval(ins, sig):
    x = ins[0]
    if x.frac is None:
        return x.clip(sig["min"], sig["max"])
    bounds = _clip_constants(sig)
    return x.clip(bounds["lo"], bounds["hi"])


def _cast_micro(sig: Sig) -> str:
    """fixed -> float32 converts (to_float); every other cast assigns."""
    return "to_float" if sig.out_dtype.is_float and not sig.dtypes[0].is_float else "assign"


def _cast_dtype(sig: Sig):
    raise OpError("cast needs the node's 'dtype' field (the target type)")


def _cast(args, sig):
    src, dst = sig.dtypes[0], sig.out_dtype
    x = args[0]
    if dst.is_float:
        return to_float(x, src).astype(np.float32)
    if src.is_float:
        return from_float(x, dst)
    return assign(x, src.frac, dst)


def _bias_add(args, sig):
    if sig.out_dtype.is_float:
        return (args[0] + args[1]).astype(np.float32)
    (x, b), frac = aligned(args, sig)
    return finish(x + b, frac, sig)


OPS = (
    _binary("add", lambda a, b, sig: a.add(b), _add, lambda ins, sig: ins[0] + ins[1], "a + b"),
    _binary("sub", lambda a, b, sig: a.sub(b), _sub, lambda ins, sig: ins[0] - ins[1], "a - b"),
    _binary("mul", lambda a, b, sig: a.mul(b), _mul, lambda ins, sig: ins[0] * ins[1], "a * b"),
    _binary("maximum", lambda a, b, sig: a.union(b), _extremum(np.maximum), lambda ins, sig: ins[0].maximum(ins[1]),
            "max(a, b)"),
    _binary("minimum", lambda a, b, sig: a.union(b), _extremum(np.minimum), lambda ins, sig: ins[0].minimum(ins[1]),
            "min(a, b)"),
    OpDef(
        name="relu",
        micro="relu",
        inputs=("x",),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        check=_checker(lambda x, sig: x),
        compute=_relu,
        bounds=_relu_bounds,
        doc="max(x, 0)",
    ),
    OpDef(
        name="leaky_relu",
        micro="leaky_relu",
        constants=_leaky_constants,
        inputs=("x",),
        attrs=(Attr("alpha", "float", 0.01, check=_alpha_check),),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        check=_leaky_check,
        compute=_leaky_relu,
        bounds=_leaky_bounds,
        doc="x if x >= 0 else alpha * x; alpha is a fixed<16,1,RND,SAT> constant",
    ),
    OpDef(
        name="clip",
        micro="clip",
        constants=_clip_constants,
        inputs=("x",),
        attrs=(Attr("min", "float"), Attr("max", "float")),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        check=_clip_attrs_check,
        compute=_clip,
        bounds=_clip_interval,
        doc="min(max(x, min), max); bounds rounded to the input type",
    ),
    OpDef(
        name="neg",
        micro="neg",
        inputs=("x",),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        check=_checker(lambda x, sig: x.neg()),
        compute=_neg,
        bounds=lambda ins, sig: ins[0].neg(),
        doc="-x",
    ),
    OpDef(
        name="abs",
        micro="abs",
        inputs=("x",),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        check=_checker(lambda x, sig: x.neg()),
        compute=_abs,
        bounds=lambda ins, sig: ins[0].abs(),
        doc="|x|",
    ),
    OpDef(
        name="cast",
        micro=_cast_micro,
        inputs=("x",),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        dtype=_cast_dtype,
        compute=_cast,
        bounds=lambda ins, sig: ins[0],
        doc="assign x to the node's dtype (the only op that may change float32 <-> fixed)",
    ),
    OpDef(
        name="bias_add",
        micro="add",
        inputs=("x", "b"),
        shape=_per_channel_shape("b"),
        pattern=Pattern.BROADCAST,
        check=_checker(lambda x, b, sig: x.add(b)),
        compute=_bias_add,
        bounds=lambda ins, sig: ins[0] + ins[1],
        doc="x + b[c] on the last axis",
    ),
    OpDef(
        name="scale",
        micro="mul",
        inputs=("x", "s"),
        shape=_per_channel_shape("s"),
        pattern=Pattern.BROADCAST,
        check=_checker(lambda x, s, sig: x.mul(s)),
        compute=_mul,
        bounds=lambda ins, sig: ins[0] * ins[1],
        doc="x * s[c] on the last axis",
    ),
)
