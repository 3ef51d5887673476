"""``upsample2d``: NHWC upsampling by integer factors, nearest (ONNX Resize/Upsample) or zero insertion.

    nearest   y[n, i, j, c] = x[n, i // sh, j // sw, c]          (a pixel repeated sh x sw times)
    zeros     y[n, i, j, c] = x[n, i / sh, j / sw, c] where sh divides i and sw divides j, else 0

Mode 'zeros' is the input side of a strided transposed convolution: ConvTranspose imports as zero
insertion, padding and a stride-1 conv2d with the flipped kernel (frontend/onnx/ops_more.py). Each output
element is an input element or zero, so a fixed-point result is the input re-assigned to the output type.
It streams: per input row, sh output rows, each pixel written sw times (stage_own.py: a row buffer for
nearest, none for zeros).
"""

from __future__ import annotations

import numpy as np

from ..errors import OpError
from .base import Attr, OpDef, Pattern, Sig, same_family
from .exact import finish
from .injective import listed
from .interval import Interval

__all__ = ["OPS", "UPSAMPLE_MODES"]

UPSAMPLE_MODES = ("nearest", "zeros")


def _factors_check(values) -> str | None:
    return None if all(v >= 1 for v in values) else f"must be at least 1, not {listed(values)}"


def _mode_check(value: str) -> str | None:
    return None if value in UPSAMPLE_MODES else f"must be one of {', '.join(UPSAMPLE_MODES)}, not {value!r}"


def _shape(sig: Sig) -> tuple[int, ...]:
    x = sig.shapes[0]
    if len(x) != 4:
        raise OpError(f"input 'x' must have 4 dims (NHWC), not {len(x)}")
    sh, sw = sig["factors"]
    return (x[0], x[1] * sh, x[2] * sw, x[3])


def _upsample(args, sig):
    sh, sw = sig["factors"]
    t = sig.out_dtype
    x = args[0] if t.is_float else finish(args[0], sig.dtypes[0].frac, sig)
    if sig["mode"] == "nearest":
        y = np.repeat(np.repeat(x, sh, axis=1), sw, axis=2)
    else:
        y = np.zeros(_shape(sig), dtype=x.dtype)
        y[:, ::sh, ::sw, :] = x
    return y.astype(np.float32) if t.is_float else y


def _bounds(ins, sig: Sig) -> Interval:
    x = ins[0].like(ins[0].lo, ins[0].hi)
    zeros = sig["mode"] == "zeros" and tuple(sig["factors"]) != (1, 1)
    return x.with_zero() if zeros else x


OPS = (
    OpDef(
        name="upsample2d",
        inputs=("x",),
        attrs=(Attr("factors", "ints", length=2, check=_factors_check),
               Attr("mode", "str", "nearest", check=_mode_check)),
        shape=_shape,
        pattern=Pattern.INJECTIVE,
        check=same_family,
        compute=_upsample,
        bounds=_bounds,
        stream="own",
        doc="NHWC [N, H, W, C] to [N, H*sh, W*sw, C], factors = [sh, sw]; mode 'nearest' repeats each pixel, "
        "'zeros' puts it at the top-left of its sh x sw block and zeros elsewhere",
    ),
)
