"""The op registry: one ``OpDef`` per op, collected explicitly from the op modules."""

from __future__ import annotations

from ..errors import OpError
from . import custom, elementwise, injective, lut, nn, norm, opaque, pad, reduce, threshold, upsample
from .base import REQUIRED, Attr, OpDef, Pattern, Sig

__all__ = ["OPS", "get_op", "OpDef", "Attr", "Pattern", "Sig", "REQUIRED"]

OPS: dict[str, OpDef] = {
    op.name: op
    for op in (
        *elementwise.OPS,
        *threshold.OPS,
        *lut.OPS,
        *injective.OPS,
        *pad.OPS,
        *upsample.OPS,
        *reduce.OPS,
        *nn.OPS,
        *opaque.OPS,
        *norm.OPS,
        custom.CUSTOM,
    )
}


def get_op(name: str) -> OpDef:
    """The registry entry of ``name``; unknown names raise a one-line error."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        raise OpError(f"unknown op {name!r}") from None
