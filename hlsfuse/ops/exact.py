"""Exact fixed-point arithmetic on raw int64 arrays, for the op references.

A value is a pair (raw int64 array, fractional bits). Sums and products are
exact (the op's ``check`` rule has proven that they fit 64 bits); ``finish``
assigns the exact result to the node's output type, the one place a node
rounds (DESIGN.md section 3).
"""

from __future__ import annotations

import numpy as np

from ..types import FixedType, assign
from .base import Sig

__all__ = ["frac_of", "align", "aligned", "finish"]


def frac_of(dtype: FixedType) -> int:
    return dtype.frac


def align(raw: np.ndarray, frac: int, to_frac: int) -> np.ndarray:
    """Re-express ``raw * 2**-frac`` with ``to_frac >= frac`` fractional bits (exact)."""
    return np.asarray(raw, dtype=np.int64) << (to_frac - frac)


def aligned(args: list[np.ndarray], sig: Sig) -> tuple[list[np.ndarray], int]:
    """All fixed inputs on a common number of fractional bits (the largest)."""
    fracs = [d.frac for d in sig.dtypes]
    common = max(fracs)
    return [align(a, f, common) for a, f in zip(args, fracs)], common


def finish(raw: np.ndarray, frac: int, sig: Sig) -> np.ndarray:
    """Assign an exact result to the node's output type (fixed) ."""
    return assign(raw, frac, sig.out_dtype)
