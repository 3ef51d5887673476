"""Out-elementwise-fusable ops: convolution, dense, matmul and 2-D pools (NHWC).

Each is an "anchor" in TVM's sense: elementwise ops after it fuse into its
output loop. In hardware they stream with line buffers, so none needs a
buffered stage (a matmul whose ``b`` is not a constant is the lowering's
business; the op cannot tell).

Fixed-point results are exact and assigned once to the output type. Products
are summed in int64; the ``check`` rules prove that the accumulation fits. An
average pool's window sum is divided by its count with ``types.assign_quotient``
(the exact quotient, rounded once); ``pool_counts`` gives the counts. The
sums run as one BLAS matmul in float64 when that is provably exact (every
partial sum of integer products below 2**53), and as an int64 matmul otherwise:

    x (padded)  --sliding windows-->  patches [M, G, KH*KW*Cin/G]
    w [KH, KW, Cin/G, Cout]  ------>  [G, KH*KW*Cin/G, Cout/G]   ->  matmul per group

Window geometry (padding is [top, left, bottom, right], ONNX order):

    out = floor((size + pad_before + pad_after - dilation * (kernel - 1) - 1) / stride) + 1
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import OpError
from ..types import assign_quotient
from .base import Attr, OpDef, Pattern, Sig, fixed_inputs, same_family
from .exact import finish
from .head import Head, Window
from .interval import Interval, corners

__all__ = ["OPS", "exact_matmul", "pool_counts"]

FLOAT_EXACT_LIMIT = 1 << 53


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _positive(value: tuple[int, ...]) -> str | None:
    return None if all(v >= 1 for v in value) else f"must be positive, not {list(value)}"


def _non_negative(value: tuple[int, ...]) -> str | None:
    return None if all(v >= 0 for v in value) else f"must not be negative, not {list(value)}"


def _at_least_one(value: int) -> str | None:
    return None if value >= 1 else f"must be at least 1, not {value}"


def _magnitude(a: np.ndarray) -> int:
    """Largest |value| of an int64 array as a Python int (no overflow at the int64 minimum)."""
    return max(-int(a.min()), int(a.max()), 0) if a.size else 0


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul`` of int64 arrays, exactly, fast when possible.

    Every partial sum BLAS forms (in any order, with or without FMA) is an integer of
    magnitude at most K * max|a| * max|b|; below 2**53 float64 represents all of them,
    so the float64 matmul is exact. numpy's int64 matmul does not use BLAS and is much
    slower, so it is kept for the cases that need it.
    """
    bound = a.shape[-1] * _magnitude(a) * _magnitude(b)
    if bound < FLOAT_EXACT_LIMIT:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return np.matmul(a, b)


def _matmul(a: np.ndarray, b: np.ndarray, sig: Sig) -> np.ndarray:
    """a @ b for the op's inputs: float32 via float64, fixed exactly then assigned."""
    if sig.out_dtype.is_float:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    return finish(exact_matmul(a, b), sig.dtypes[0].frac + sig.dtypes[1].frac, sig)


def _product_checker(terms):
    """A ``check``: same type family, and ``terms(sig)`` products of a*b fit 64 bits."""

    def check(sig: Sig) -> None:
        same_family(sig)
        fmts = fixed_inputs(sig)
        if fmts is not None:
            fmts[0].mul(fmts[1]).accumulate(terms(sig)).check("the exact accumulation")

    return check


def _out_size(size: int, before: int, after: int, kernel: int, stride: int, dilation: int = 1) -> int:
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def _nhwc(shape: tuple[int, ...]) -> None:
    if len(shape) != 4:
        raise OpError(f"input 'x' must have 4 dims (NHWC), not {len(shape)}")


def _windows(x: np.ndarray, kernel, strides, padding, dilation=(1, 1), fill=0) -> np.ndarray:
    """Padded, strided, dilated windows of NHWC ``x``: [N, OH, OW, C, KH, KW] (a view)."""
    top, left, bottom, right = padding
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, strides
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    view = sliding_window_view(padded, span, axis=(1, 2))
    return view[:, ::sh, ::sw, :, ::dh, ::dw]


def _terms(w: Interval, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of every weight of a tensor of ``shape``: its raw values when it is a constant, else
    its per-channel (last-axis) bounds."""
    if w.values is not None:
        return w.values, w.values
    return np.broadcast_to(w.lo, shape), np.broadcast_to(w.hi, shape)


def _products(xlo, xhi, wlo, whi, axes) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of sums of products x*w over ``axes``: each term at its own extremes, so positive and
    negative weights take the opposite ends of x's range."""
    lo, hi = corners(xlo, xhi, wlo, whi)
    return lo.sum(axis=axes), hi.sum(axis=axes)


def _product_frac(x: Interval, w: Interval) -> int | None:
    return None if x.frac is None or w.frac is None else x.frac + w.frac


# --------------------------------------------------------------------------
# conv2d
# --------------------------------------------------------------------------


def _conv_shape(sig: Sig) -> tuple[int, ...]:
    x, w = sig.shapes
    _nhwc(x)
    if len(w) != 4:
        raise OpError(f"input 'w' must have 4 dims ([KH, KW, Cin/groups, Cout]), not {len(w)}")
    n, h, wd, cin = x
    kh, kw, cg, cout = w
    groups = sig["groups"]
    if cin % groups:
        raise OpError(f"attribute 'groups' ({groups}) must divide the input channels ({cin})")
    if cout % groups:
        raise OpError(f"attribute 'groups' ({groups}) must divide the output channels of 'w' ({cout})")
    if cg != cin // groups:
        raise OpError(f"input 'w' must have {cin // groups} input channels (Cin/groups) on axis 2, not {cg}")
    top, left, bottom, right = sig["padding"]
    (sh, sw), (dh, dw) = sig["strides"], sig["dilation"]
    for axis, size, before, after, k, d in (("height", h, top, bottom, kh, dh), ("width", wd, left, right, kw, dw)):
        span = d * (k - 1) + 1
        if span > size + before + after:
            raise OpError(
                f"the kernel spans {span} along the {axis} (size {k}, dilation {d}), "
                f"more than the padded input ({size + before + after})"
            )
    return (n, _out_size(h, top, bottom, kh, sh, dh), _out_size(wd, left, right, kw, sw, dw), cout)


def _conv_terms(sig: Sig) -> int:
    kh, kw, cg, _ = sig.shapes[1]
    return kh * kw * cg


def _mac_head(terms, products_innermost=False, window=None):
    """A ``head`` rule of a MAC op of ``terms(sig)`` products per output, weights in input 1;
    ``products_innermost``: a bool, or a rule of the signature."""

    def head(sig: Sig) -> Head:
        n = terms(sig)
        fmts = fixed_inputs(sig)
        acc = fmts[0].mul(fmts[1]).accumulate(n) if fmts is not None else None
        groups = sig["groups"] if window is not None else 1
        innermost = products_innermost(sig) if callable(products_innermost) else products_innermost
        return Head("mac", n, 1, innermost, acc, window(sig) if window else None, groups)

    return head


def _conv_window(sig: Sig) -> Window:
    kh, kw = sig.shapes[1][:2]
    return Window((kh, kw), sig["strides"], sig["padding"], sig["dilation"])


def _conv2d(args, sig):
    x, w = args
    kh, kw, cg, cout = w.shape
    groups = sig["groups"]
    n, oh, ow, _ = sig.out_shape
    win = _windows(x, (kh, kw), sig["strides"], sig["padding"], sig["dilation"])
    # [N, OH, OW, G, Cg, KH, KW] -> rows of (KH, KW, Cg), matching w's memory order
    win = win.reshape(n, oh, ow, groups, cg, kh, kw).transpose(3, 0, 1, 2, 5, 6, 4)
    patches = win.reshape(groups, n * oh * ow, kh * kw * cg)
    kernel = w.reshape(kh * kw * cg, groups, cout // groups).transpose(1, 0, 2)
    out = _matmul(patches, kernel, sig)  # [G, M, Cout/G]
    return out.transpose(1, 0, 2).reshape(n, oh, ow, cout)


def _conv_bounds(ins, sig):
    x, w = ins
    kh, kw, cg, cout = sig.shapes[1]
    cin = sig.shapes[0][3]
    if any(sig["padding"]):
        x = x.with_zero()  # border windows read zeros
    x = x.channels(cin)
    group = np.arange(cout) // (cout // sig["groups"])
    index = group[None, :] * cg + np.arange(cg)[:, None]  # [Cg, Cout]: the input channel of each term
    wlo, whi = _terms(w, (kh, kw, cg, cout))
    lo, hi = _products(x.lo[index], x.hi[index], wlo, whi, (0, 1, 2))
    return Interval(lo, hi, _product_frac(x, w))


# --------------------------------------------------------------------------
# dense and matmul
# --------------------------------------------------------------------------


def _dense_shape(sig: Sig) -> tuple[int, ...]:
    x, w = sig.shapes
    if len(x) < 1:
        raise OpError("input 'x' must have at least 1 dim")
    if len(w) != 2:
        raise OpError(f"input 'w' must have 2 dims ([N, K]), not {len(w)}")
    if w[1] != x[-1]:
        raise OpError(f"input 'w' must have {x[-1]} columns (the last axis of 'x'), not {w[1]}")
    return (*x[:-1], w[0])


def _dense(args, sig):
    x, w = args
    return _matmul(x, w.T, sig)


def _dense_bounds(ins, sig):
    x, w = ins
    n, k = sig.shapes[1]
    x = x.channels(k)
    wlo, whi = _terms(w, (n, k))  # w's channels are its columns (K); the terms' rows are the outputs (N)
    lo, hi = _products(x.lo[None, :], x.hi[None, :], wlo, whi, 1)
    return Interval(lo, hi, _product_frac(x, w))


def _matrix_b(shape: tuple[int, ...], sig: Sig) -> tuple[int, ...]:
    """The shape of matmul's b as the product reads it, [..., K, N] (``transpose_b``: b holds [..., N, K])."""
    return (*shape[:-2], shape[-1], shape[-2]) if sig["transpose_b"] and len(shape) >= 2 else tuple(shape)


def _matmul_bounds(ins, sig):
    a, b = ins
    blo, bhi = _terms(b, sig.shapes[1])
    if sig["transpose_b"]:
        blo, bhi = np.swapaxes(blo, -1, -2), np.swapaxes(bhi, -1, -2)
    k, n = blo.shape[-2:]
    a = a.channels(k)
    lo, hi = _products(a.lo[:, None], a.hi[:, None], blo, bhi, -2)  # [..., N]
    batch = tuple(range(lo.ndim - 1))
    return Interval(lo.min(axis=batch), hi.max(axis=batch), _product_frac(a, b))


def _matmul_shape(sig: Sig) -> tuple[int, ...]:
    a, b = sig.shapes
    for name, shape in (("a", a), ("b", b)):
        if len(shape) < 2:
            hint = "use dense, or reshape vectors to matrices"
            raise OpError(f"input '{name}' must have at least 2 dims, not {len(shape)} ({hint})")
    if sig["transpose_b"] and b[-1] != a[-1]:
        raise OpError(f"input 'b' must have {a[-1]} columns (axis -1, the last axis of 'a', as transpose_b is set), "
                      f"not {b[-1]}")
    b = _matrix_b(b, sig)
    if b[-2] != a[-1]:
        raise OpError(f"input 'b' must have {a[-1]} rows (axis -2, the last axis of 'a'), not {b[-2]}")
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise OpError(f"batch dims {list(a[:-2])} of 'a' and {list(b[:-2])} of 'b' do not broadcast") from None
    return (*batch, a[-2], b[-1])


def _matmul_op(args, sig):
    b = np.swapaxes(args[1], -1, -2) if sig["transpose_b"] else args[1]
    return _matmul(args[0], b, sig)


# --------------------------------------------------------------------------
# Pools
# --------------------------------------------------------------------------


def _pool_params(sig: Sig) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    pool = sig["pool_size"]
    strides = sig["strides"] if sig["strides"] is not None else pool
    return pool, strides, sig["padding"]


def _pool_shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    _nhwc(x)
    n, h, w, c = x
    (kh, kw), (sh, sw), (top, left, bottom, right) = _pool_params(sig)
    # a pad as large as the pool would make windows of padding only (no maximum, no count)
    if max(top, bottom) >= kh or max(left, right) >= kw:
        raise OpError(f"attribute 'padding' {[top, left, bottom, right]} must be smaller than the pool size {[kh, kw]}")
    padded = [h + top + bottom, w + left + right]
    if kh > padded[0] or kw > padded[1]:
        raise OpError(f"attribute 'pool_size' {[kh, kw]} is larger than the padded input {padded}")
    return (n, _out_size(h, top, bottom, kh, sh), _out_size(w, left, right, kw, sw), c)


def _pool_check(sig: Sig) -> None:
    same_family(sig)


def _pool_head(combine: str):
    """A ``head`` rule of a pool: ``combine`` over the KH x KW taps of its window."""

    def head(sig: Sig) -> Head:
        pool, strides, padding = _pool_params(sig)
        taps = pool[0] * pool[1]
        fmts = fixed_inputs(sig)
        acc = fmts[0].accumulate(taps) if fmts is not None and combine != "max" else None
        return Head(combine, taps, accumulator=acc, window=Window(pool, strides, padding))

    return head


def _max_pool2d(args, sig):
    x = args[0]
    pool, strides, padding = _pool_params(sig)
    fill = -np.inf if sig.dtypes[0].is_float else np.iinfo(np.int64).min  # padding never wins
    best = _windows(x, pool, strides, padding, fill=fill).max(axis=(-2, -1))
    if sig.out_dtype.is_float:
        return best.astype(np.float32)
    return finish(best, sig.dtypes[0].frac, sig)


def _axis_counts(size: int, before: int, kernel: int, stride: int, out: int) -> np.ndarray:
    """How many real (not padded) elements each window covers along one axis."""
    start = np.arange(out) * stride - before
    return np.minimum(start + kernel, size) - np.maximum(start, 0)


def pool_counts(sig: Sig) -> np.ndarray:
    """The divisor of each output position of an avg_pool2d node, shape [OH, OW]."""
    (kh, kw), (sh, sw), (top, left, _, _) = _pool_params(sig)
    _, h, w, _ = sig.shapes[0]
    _, oh, ow, _ = sig.out_shape
    if sig["count_include_pad"]:
        return np.full((oh, ow), kh * kw, dtype=np.int64)
    return np.outer(_axis_counts(h, top, kh, sh, oh), _axis_counts(w, left, kw, sw, ow))


def _pool_bounds(ins, sig):
    x = ins[0]  # a window maximum is one of the window's elements; padding never wins
    return x.like(x.lo, x.hi)


def _avg_bounds(ins, sig):
    x = ins[0]  # a mean of the window's elements, and of zeros when they count padding
    if sig["count_include_pad"] and any(sig["padding"]):
        x = x.with_zero()
    return x.like(x.lo, x.hi)


def _avg_check(sig: Sig) -> None:
    same_family(sig)
    fmts = fixed_inputs(sig)
    if fmts is not None:
        kh, kw = sig["pool_size"]
        window_sum = fmts[0].accumulate(kh * kw).check("the exact window sum")
        window_sum.dividend(sig.out_dtype).check("the division of the window sum by its count")


def _avg_pool2d(args, sig):
    x = args[0]
    pool, strides, padding = _pool_params(sig)
    if sig.out_dtype.is_float:
        total = _windows(x.astype(np.float64), pool, strides, padding).sum(axis=(-2, -1))
        return (total / pool_counts(sig)[None, :, :, None]).astype(np.float32)
    total = _windows(x, pool, strides, padding).sum(axis=(-2, -1))
    return assign_quotient(total, sig.dtypes[0].frac, pool_counts(sig)[None, :, :, None], sig.out_dtype)


_POOL_ATTRS = (
    Attr("pool_size", "ints", length=2, check=_positive),
    Attr("strides", "ints", None, length=2, check=_positive),
    Attr("padding", "ints", (0, 0, 0, 0), length=4, check=_non_negative),
)


OPS = (
    OpDef(
        name="conv2d",
        stream="window",
        inputs=("x", "w"),
        attrs=(
            Attr("strides", "ints", (1, 1), length=2, check=_positive),
            Attr("padding", "ints", (0, 0, 0, 0), length=4, check=_non_negative),
            Attr("dilation", "ints", (1, 1), length=2, check=_positive),
            Attr("groups", "int", 1, check=_at_least_one),
        ),
        shape=_conv_shape,
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        check=_product_checker(_conv_terms),
        head=_mac_head(_conv_terms, window=_conv_window),
        compute=_conv2d,
        bounds=_conv_bounds,
        doc="2-D convolution, x NHWC, w [KH, KW, Cin/groups, Cout], padding [top, left, bottom, right]",
    ),
    OpDef(
        name="dense",
        stream="rows",
        inputs=("x", "w"),
        shape=_dense_shape,
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        check=_product_checker(lambda sig: sig.shapes[1][1]),
        head=_mac_head(lambda sig: sig.shapes[1][1], products_innermost=True),
        compute=_dense,
        bounds=_dense_bounds,
        doc="x [..., K] times w [N, K] transposed -> [..., N]",
    ),
    OpDef(
        name="matmul",
        stream="rows",
        inputs=("a", "b"),
        attrs=(Attr("transpose_b", "bool", False),),
        shape=_matmul_shape,
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        check=_product_checker(lambda sig: sig.shapes[0][-1]),
        head=_mac_head(lambda sig: sig.shapes[0][-1], products_innermost=lambda sig: sig["transpose_b"]),
        compute=_matmul_op,
        bounds=_matmul_bounds,
        doc="a @ b with numpy's broadcasting of batch dims; both inputs need at least 2 dims; transpose_b: b holds "
            "[..., N, K] (a @ b^T, attention's scores from K as it streams)",
    ),
    OpDef(
        name="max_pool2d",
        stream="window",
        inputs=("x",),
        attrs=_POOL_ATTRS,
        shape=_pool_shape,
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        check=_pool_check,
        head=_pool_head("max"),
        compute=_max_pool2d,
        bounds=_pool_bounds,
        doc="window maximum over H and W of NHWC x; padded positions never win",
    ),
    OpDef(
        name="avg_pool2d",
        stream="window",
        inputs=("x",),
        attrs=(*_POOL_ATTRS, Attr("count_include_pad", "bool", False)),
        shape=_pool_shape,
        pattern=Pattern.OUT_ELEMWISE_FUSABLE,
        check=_avg_check,
        head=_pool_head("mean"),
        compute=_avg_pool2d,
        bounds=_avg_bounds,
        doc="window mean over H and W of NHWC x; the exact sum divided by the position's count, rounded once",
    ),
)
