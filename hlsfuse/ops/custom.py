"""``custom``: an op hlsfuse does not implement, declared by the user for fusion studies.

The node itself gives its pattern kind (``pattern``), output ``shape`` and ``dtype``
and, optionally, one pattern kind per input edge (``edge_patterns``), so that
graphs from other compilers can be verified and fused. It cannot be run or compiled.
"""

from __future__ import annotations

from ..errors import OpError
from .base import OpDef, Pattern, Sig
from .interval import Interval

__all__ = ["CUSTOM"]


def _shape(sig: Sig) -> tuple[int, ...]:
    if sig.out_shape is None:
        raise OpError("custom nodes need a 'shape' field (the output shape)")
    return sig.out_shape


def _dtype(sig: Sig):
    raise OpError("custom nodes need a 'dtype' field (the output dtype)")


CUSTOM = OpDef(
    name="custom",
    inputs=(),
    variadic=True,
    shape=_shape,
    dtype=_dtype,
    pattern=Pattern.OPAQUE,
    compute=None,
    # nothing is known of what it computes: anything its declared type holds
    bounds=lambda ins, sig: Interval.of_type(sig.out_dtype),
    doc="user-declared op for fusion studies; not runnable",
)
