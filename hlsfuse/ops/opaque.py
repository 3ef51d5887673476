"""Opaque ops: softmax (with or without a constant mask), argmax and topk.

They see a whole row (or more) before they can emit, so nothing fuses into
them (TVM's OPAQUE) and, except for argmax over the innermost axis, they are
buffered stages in ``fpga`` fusion mode.

Fixed-point softmax over the last axis is defined exactly, step by step:

    m = max(x)                      d = x - m          (exact, Fmt(x).sub(Fmt(x)))
    e = LUT_exp(d)   -> exp_dtype   s = sum(e)         (exact, Fmt(exp_dtype).accumulate(n))
    r = LUT_recip(s) -> recip_dtype y = e * r          (exact, then assigned to the output type)

The two tables come from ``hlsfuse.lut.make_table``, so the reference, the C++
and the Verilog use the same entries.

``masked_softmax(x, mask)`` is softmax with a constant 0/1 mask (an attention mask): ``mask`` is
[R, N] of ufixed<1,1>, N the last axis of x and R 1 or x's second-to-last dimension; row r of x
(rows counted over all leading axes) reads mask row r mod R. A position the mask sets (1) is left
out of the max and of the sum and outputs exactly 0; the others are the softmax of the positions
kept, by the same steps and tables. One mask row serves every row (padding masks); S rows serve the
S queries of every head and batch (causal masks).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpError
from ..lut import MAX_TABLE_BITS, make_table
from ..types import FixedType, Fmt
from .base import Attr, OpDef, Pattern, Sig, same_family
from .exact import finish
from .interval import Interval, corners

__all__ = ["OPS", "softmax_tables", "exp_window", "exp_int_bits_for", "INDEX_TYPE"]

INDEX_TYPE = FixedType(32, 32)
"""Default output type of argmax and of topk with ret="indices" (int32)."""


def _rank_at_least_one(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    if len(x) < 1:
        raise OpError("input 'x' must have at least 1 dim")
    return x


def _indices(idx: np.ndarray, sig: Sig) -> np.ndarray:
    """Indices (int64) as values of the output type."""
    if sig.out_dtype.is_float:
        return idx.astype(np.float32)
    return finish(idx.astype(np.int64), 0, sig)


def _check_index_type(sig: Sig, largest: int) -> None:
    """An index output must hold ``0..largest`` exactly (any float32 or fixed type that does)."""
    t = sig.out_dtype
    if t.is_float:
        return
    # a type with negative fractional bits steps by 2 or more and skips index 1
    if t.raw_max * t.lsb < largest or (t.frac < 0 and largest > 0):
        raise OpError(f"output dtype {t} cannot hold indices up to {largest}")


# --------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------


def _table_bits(value: int) -> str | None:
    return None if 1 <= value <= MAX_TABLE_BITS else f"must be 1..{MAX_TABLE_BITS}, not {value}"


def _exp_int_bits(value: int) -> str | None:
    return None if 0 <= value <= 62 else f"must be 0 (off) or 1..62, not {value}"


def _fixed_attr(value) -> str | None:
    return f"must be a fixed-point type, not {value}" if value.is_float else None


def exp_window(sig: Sig) -> Fmt | None:
    """The format the exp table reads d = x - max(x) in when ``exp_int_bits`` narrows it (None: d's own format,
    Fmt(x).sub(Fmt(x))): signed, exp_int_bits integer bits above d's fractional ones, so d saturates at
    -2^exp_int_bits."""
    x = Fmt.of(sig.dtypes[0])
    d_fmt, bits = x.sub(x), sig["exp_int_bits"]
    if not bits or bits + 1 >= d_fmt.int_bits:
        return None
    return Fmt(bits + 1 + d_fmt.frac, bits + 1, True)


def exp_int_bits_for(exp_dtype) -> int:
    """The smallest ``exp_int_bits`` that changes no entry: exp(-2^I) below half of exp_dtype's LSB, so every d
    below -2^I has the entry 0 anyway (4 for the default ufixed<18,1>: exp(-16) < 2^-18)."""
    bits = 1
    while math.exp(-(2.0 ** bits)) >= 2.0 ** -(exp_dtype.frac + 1):
        bits += 1
    return bits


def softmax_tables(sig: Sig):
    """The exp and recip tables of a fixed-point softmax node, and the sum's format."""
    n = sig.shapes[0][-1]
    x = Fmt.of(sig.dtypes[0])
    d_fmt = exp_window(sig) or x.sub(x)
    s_fmt = Fmt.of(sig["exp_dtype"]).accumulate(n)
    exp = make_table("exp", d_fmt, sig["exp_dtype"], sig["table_bits"])
    recip = make_table("recip", s_fmt, sig["recip_dtype"], sig["table_bits"])
    return exp, recip, s_fmt


def _windowed(d, sig: Sig):
    """d = x - max(x) (raw) as the exp table reads it: saturated at -2^exp_int_bits when that narrows it (and
    below 2^exp_int_bits: only a masked position, whose exponential is dropped, can lie above the kept max)."""
    window = exp_window(sig)
    return d if window is None else np.clip(d, -(1 << (window.width - 1)), (1 << (window.width - 1)) - 1)


def _softmax_products(sig: Sig):
    """Per lane, an exponential times the reciprocal of the row's sum (the normalisation)."""
    return ((sig["exp_dtype"], sig["recip_dtype"], True),)


def _softmax_check(sig: Sig) -> None:
    same_family(sig)
    if sig.dtypes[0].is_float:
        return
    x = Fmt.of(sig.dtypes[0])
    x.sub(x).check("the difference x - max(x)")
    e, r = Fmt.of(sig["exp_dtype"]), Fmt.of(sig["recip_dtype"])
    e.accumulate(sig.shapes[0][-1]).check("the exact sum of exponentials")
    e.mul(r).check("the exact product e * r")


def _softmax(args, sig, masked=None):
    """The softmax of each row of ``args[0]``; ``masked`` (bool, x's shape): the positions left out."""
    x = args[0]
    if sig.out_dtype.is_float:
        if masked is not None:  # exp(-inf - max) is exactly 0
            x = np.where(masked, np.float32(-np.inf), x)
        shifted = x - x.max(axis=-1, keepdims=True)
        e = np.exp(shifted, dtype=np.float32)
        return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float32)
    exp, recip, _ = softmax_tables(sig)
    top = x if masked is None else np.where(masked, np.iinfo(np.int64).min, x)
    d = x - top.max(axis=-1, keepdims=True)
    e = exp.lookup(_windowed(d, sig))
    if masked is not None:
        e = np.where(masked, 0, e)
    r = recip.lookup(e.sum(axis=-1, keepdims=True))
    return finish(e * r, sig["exp_dtype"].frac + sig["recip_dtype"].frac, sig)


def _softmax_bounds(ins, sig, kept=None, zeros=False):
    """``kept``: (fewest, most) positions a row keeps (default: all n); ``zeros``: some output is a masked 0."""
    x = ins[0].flat()
    if x.frac is None:
        return Interval(0.0, 1.0, None)
    exp, recip, _ = softmax_tables(sig)
    n = sig.shapes[0][-1]
    k_lo, k_hi = kept or (n, n)
    d_lo = int(_windowed(min(int(x.lo) - int(x.hi), 0), sig))  # d = x - max(x) lies in [lo - hi, 0], 0 at the max
    e_lo, e_hi = exp.span(d_lo, 0)
    e_zero = exp.span(0, 0)[0]  # the maximum's own exponential, exp(0)
    s_lo, s_hi = e_zero + (k_lo - 1) * e_lo, e_zero + (k_hi - 1) * e_hi
    r_lo, r_hi = recip.span(s_lo, s_hi)
    lo, hi = corners(e_lo, e_hi, r_lo, r_hi)
    return Interval(0 if zeros else lo, hi, sig["exp_dtype"].frac + sig["recip_dtype"].frac)


def _index_bounds(largest: int) -> Interval:
    """Indices 0..largest, exact integers whatever the output type."""
    return Interval(0, largest, 0)


def _softmax_buffer(sig: Sig) -> str:
    return "softmax needs the whole row (max and sum) before emitting"


# --------------------------------------------------------------------------
# masked_softmax
# --------------------------------------------------------------------------


def _masked_shape(sig: Sig) -> tuple[int, ...]:
    x, m = _rank_at_least_one(sig), sig.shapes[1]
    rows = (1,) if len(x) < 2 else (1, x[-2])
    if len(m) != 2 or m[1] != x[-1] or m[0] not in rows:
        spelled = " or ".join(f"[{r}, {x[-1]}]" for r in dict.fromkeys(rows))
        raise OpError(f"input 'mask' must have shape {spelled} (row r of x reads mask row r mod R), not {list(m)}")
    return x


def _masked_check(sig: Sig) -> None:
    m = sig.dtypes[1]
    if m.is_float or (m.width, m.int_bits, m.signed) != (1, 1, False):
        raise OpError(f"input 'mask' must be ufixed<1,1> (1: left out, 0: kept), not {m}")
    _softmax_check(Sig(sig.shapes[:1], sig.dtypes[:1], sig.attrs, sig.out_shape, sig.out_dtype))


def _masked_positions(mask: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The positions of a tensor of ``shape`` that a [R, N] mask leaves out: row r reads mask row r mod R."""
    rows = math.prod(shape[:-1])
    return np.broadcast_to(np.asarray(mask) != 0, (rows // mask.shape[0], *mask.shape)).reshape(shape)


def _masked_check_constants(sig: Sig, data) -> None:
    if "mask" not in data:
        raise OpError("input 'mask' must be a graph constant (the stage holds it in a ROM)")
    full = np.flatnonzero(np.all(np.asarray(data["mask"]) != 0, axis=-1))
    if full.size:
        raise OpError(f"mask row {int(full[0])} leaves out all {sig.shapes[0][-1]} positions: the softmax of an "
                      "empty row is undefined")


def _masked_softmax(args, sig):
    return _softmax(args[:1], sig, _masked_positions(args[1], args[0].shape))


def _masked_bounds(ins, sig):
    n, mask = sig.shapes[0][-1], ins[1].values
    if mask is None:  # not a constant: any row keeps from 1 to n positions
        return _softmax_bounds(ins, sig, (1, n), True)
    kept = n - np.count_nonzero(np.asarray(mask).reshape(-1, n), axis=-1)
    return _softmax_bounds(ins, sig, (max(1, int(kept.min())), int(kept.max())), bool(kept.min() < n))


def _masked_buffer(sig: Sig) -> str:
    return "masked_softmax needs the whole row (max and sum) before emitting"


# --------------------------------------------------------------------------
# argmax
# --------------------------------------------------------------------------


def _axis(sig: Sig) -> int:
    rank, axis = len(sig.shapes[0]), sig["axis"]
    if not -rank <= axis < rank:
        raise OpError(f"attribute 'axis' ({axis}) is out of range for {rank} dims")
    return axis % rank


def _argmax_shape(sig: Sig) -> tuple[int, ...]:
    x = _rank_at_least_one(sig)
    axis = _axis(sig)
    if sig["keepdims"]:
        return (*x[:axis], 1, *x[axis + 1 :])
    return (*x[:axis], *x[axis + 1 :])


def _argmax_check(sig: Sig) -> None:
    _check_index_type(sig, sig.shapes[0][_axis(sig)] - 1)


def _argmax(args, sig):
    idx = np.argmax(args[0], axis=_axis(sig), keepdims=sig["keepdims"])  # first index of the max
    return _indices(idx, sig)


def _argmax_bounds(ins, sig):
    return _index_bounds(sig.shapes[0][_axis(sig)] - 1)


def _argmax_buffer(sig: Sig) -> str | None:
    axis = _axis(sig)
    if axis == len(sig.shapes[0]) - 1:
        return None  # one running maximum per row, in stream order
    return f"argmax over axis {axis}, not the innermost, needs the whole tensor before emitting"


# --------------------------------------------------------------------------
# topk
# --------------------------------------------------------------------------


def _k(value: int) -> str | None:
    return None if value >= 1 else f"must be at least 1, not {value}"


def _ret(value: str) -> str | None:
    return None if value in ("values", "indices") else f"must be 'values' or 'indices', not {value!r}"


def _topk_shape(sig: Sig) -> tuple[int, ...]:
    x = _rank_at_least_one(sig)
    if sig["k"] > x[-1]:
        raise OpError(f"attribute 'k' ({sig['k']}) exceeds the size of the last axis ({x[-1]})")
    return (*x[:-1], sig["k"])


def _topk_dtype(sig: Sig):
    return INDEX_TYPE if sig["ret"] == "indices" else sig.dtypes[0]


def _topk_check(sig: Sig) -> None:
    if sig["ret"] == "indices":
        _check_index_type(sig, sig.shapes[0][-1] - 1)
    else:
        same_family(sig)


def _topk(args, sig):
    x = args[0]
    # a stable ascending sort of an order-reversing key keeps lower indices first among ties;
    # ~x (= -x - 1) reverses int64 order without overflowing at the int64 minimum
    key = -x if sig.dtypes[0].is_float else ~x
    idx = np.argsort(key, axis=-1, kind="stable")[..., : sig["k"]]
    if sig["ret"] == "indices":
        return _indices(idx, sig)
    values = np.take_along_axis(x, idx, axis=-1)
    if sig.out_dtype.is_float:
        return values.astype(np.float32)
    return finish(values, sig.dtypes[0].frac, sig)


def _topk_bounds(ins, sig):
    x = ins[0]
    if sig["ret"] == "values":
        return x.flat()  # the values are input elements, re-ordered along the last axis
    return _index_bounds(sig.shapes[0][-1] - 1)


def _topk_buffer(sig: Sig) -> str:
    return "topk sorts the whole last axis before emitting"


_UFIXED18 = FixedType(18, 1, False, "RND", "SAT")
_SOFTMAX_ATTRS = (
    Attr("table_bits", "int", 10, check=_table_bits),
    Attr("exp_dtype", "dtype", _UFIXED18, check=_fixed_attr),
    Attr("exp_int_bits", "int", 0, check=_exp_int_bits),
    Attr("recip_dtype", "dtype", _UFIXED18, check=_fixed_attr),
)

OPS = (
    OpDef(
        name="softmax",
        inputs=("x",),
        attrs=_SOFTMAX_ATTRS,
        shape=_rank_at_least_one,
        pattern=Pattern.OPAQUE,
        tables=lambda sig: softmax_tables(sig)[:2],
        products=_softmax_products,
        stream="own",
        check=_softmax_check,
        compute=_softmax,
        bounds=_softmax_bounds,
        needs_buffer=_softmax_buffer,
        doc="softmax over the last axis; fixed point via exp and reciprocal lookup tables",
    ),
    OpDef(
        name="masked_softmax",
        inputs=("x", "mask"),
        attrs=_SOFTMAX_ATTRS,
        shape=_masked_shape,
        pattern=Pattern.OPAQUE,
        tables=lambda sig: softmax_tables(sig)[:2],
        products=_softmax_products,
        stream="own",
        check=_masked_check,
        check_constants=_masked_check_constants,
        compute=_masked_softmax,
        bounds=_masked_bounds,
        needs_buffer=_masked_buffer,
        doc="softmax over the last axis of the positions a constant 0/1 mask [R, N] keeps; the others are 0",
    ),
    OpDef(
        name="argmax",
        inputs=("x",),
        attrs=(Attr("axis", "int", -1), Attr("keepdims", "bool", False)),
        shape=_argmax_shape,
        dtype=lambda sig: INDEX_TYPE,
        pattern=Pattern.OPAQUE,
        stream="own",
        check=_argmax_check,
        compute=_argmax,
        bounds=_argmax_bounds,
        needs_buffer=_argmax_buffer,
        doc="index of the first maximum along 'axis' (int32 by default)",
    ),
    OpDef(
        name="topk",
        inputs=("x",),
        attrs=(Attr("k", "int", check=_k), Attr("ret", "str", "values", check=_ret)),
        shape=_topk_shape,
        dtype=_topk_dtype,
        pattern=Pattern.OPAQUE,
        stream="own",
        check=_topk_check,
        compute=_topk,
        bounds=_topk_bounds,
        needs_buffer=_topk_buffer,
        doc="the k largest along the last axis, descending, ties by lower index; 'values' or 'indices'",
    ),
)
