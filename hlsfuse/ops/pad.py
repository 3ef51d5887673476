"""``pad``: numpy.pad of NHWC or any tensor, in mode 'constant' (a fill value), 'reflect' or 'edge'.

Each output element is an input element or the fill, so a fixed-point result is the input re-assigned to the
output type, and the fill is ``value`` rounded (RND) and saturated (SAT) to it once (``OpDef.constants``).
In mode 'constant' it streams (it inserts the fill between input elements); 'reflect' and 'edge' copy input
elements out of stream order, so a stage buffers blocks for them.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpError
from ..types import FixedType, from_float
from .base import Attr, OpDef, Pattern, Sig, same_family
from .exact import finish
from .injective import listed
from .interval import Interval

__all__ = ["OPS", "PAD_MODES", "pad_indices"]

PAD_MODES = ("constant", "reflect", "edge")
"""numpy.pad's (and ONNX Pad's) modes: the fill ``value``; the input mirrored without repeating its
border element; the border element repeated."""


def _pad_mode(value: str) -> str | None:
    return None if value in PAD_MODES else f"must be one of {', '.join(PAD_MODES)}, not {value!r}"


def _pad_widths(sig: Sig) -> list[tuple[int, int]]:
    n, pads = len(sig.shapes[0]), sig["pads"]
    if len(pads) != 2 * n:
        raise OpError(f"attribute 'pads' must have {2 * n} values (before and after each of {n} dims), not {len(pads)}")
    if sig["mode"] != "constant" and sig["value"] != 0.0:
        raise OpError(f"attribute 'value' ({sig['value']}) applies to mode 'constant' only, not '{sig['mode']}'")
    return list(zip(pads[:n], pads[n:]))


def _pad_shape(sig: Sig) -> tuple[int, ...]:
    return tuple(d + lo + hi for d, (lo, hi) in zip(sig.shapes[0], _pad_widths(sig)))


def pad_indices(shape, widths, mode: str) -> tuple[np.ndarray, ...]:
    """Per axis of a 'reflect' or 'edge' pad, the input index each output index copies: numpy.pad of the
    indices, so the hardware's tables are the reference's own geometry."""
    return tuple(np.pad(np.arange(n), w, mode=mode) for n, w in zip(shape, widths))


def _pad_constants(sig: Sig) -> dict:
    """fill: the float of a float32 graph, else the raw value of ``value`` in the output type (RND, SAT)."""
    t = sig.out_dtype
    if t.is_float:
        return {"fill": sig["value"]}
    return {"fill": int(from_float(np.array(sig["value"]), FixedType(t.width, t.int_bits, t.signed, "RND", "SAT")))}


def _pad(args, sig):
    widths = _pad_widths(sig)
    t, mode = sig.out_dtype, sig["mode"]
    x = args[0] if t.is_float else finish(args[0], sig.dtypes[0].frac, sig)
    if mode != "constant":
        y = np.pad(x, widths, mode=mode)
    elif t.is_float:
        y = np.pad(x, widths, constant_values=np.float32(sig["value"]))
    else:
        y = np.pad(x, widths, constant_values=_pad_constants(sig)["fill"])
    return y.astype(np.float32) if t.is_float else y


def _pad_bounds(ins, sig: Sig) -> Interval:
    x, widths = ins[0], _pad_widths(sig)
    moved = x.flat() if x.per_channel and any(widths[-1]) else x.like(x.lo, x.hi)
    if sig["mode"] != "constant" or not any(sig["pads"]):
        return moved
    t = sig.out_dtype
    if t.is_float:
        return moved.union(Interval(sig["value"], sig["value"], None))
    fill = _pad_constants(sig)["fill"]
    return moved.union(Interval(fill, fill, t.frac))


def _pad_buffer(sig: Sig) -> str | None:
    if sig["mode"] == "constant" or not any(sig["pads"]):
        return None
    return f"{sig['mode']} padding copies input elements out of stream order"


def _non_negative(values) -> str | None:
    return None if all(v >= 0 for v in values) else f"must be non-negative, not {listed(values)}"


OPS = (
    OpDef(
        name="pad",
        inputs=("x",),
        attrs=(
            Attr("pads", "ints", check=_non_negative),
            Attr("value", "float", 0.0),
            Attr("mode", "str", "constant", check=_pad_mode),
        ),
        shape=_pad_shape,
        pattern=Pattern.INJECTIVE,
        check=same_family,
        compute=_pad,
        bounds=_pad_bounds,
        constants=_pad_constants,
        needs_buffer=_pad_buffer,
        stream="own",
        doc="numpy.pad, pads = [before..., after...]; mode 'constant' fills with value rounded to the output "
        "type (RND, SAT), 'reflect' mirrors, 'edge' repeats the border",
    ),
)
