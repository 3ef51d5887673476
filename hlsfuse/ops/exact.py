"""Exact fixed-point arithmetic on raw int64 arrays, for the op references.

A value is a pair (raw int64 array, fractional bits). Sums and products are
exact (the op's ``check`` rule has proven that they fit 64 bits); ``finish``
assigns the exact result to the node's output type, the one place a node
rounds (DESIGN.md section 3).
"""

from __future__ import annotations

import math

import numpy as np

from ..types import FixedType, assign
from .base import Sig

__all__ = ["frac_of", "align", "aligned", "finish", "reciprocal"]


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


def reciprocal(n: int, in_int_bits: int, out_frac: int) -> tuple[int, int]:
    """The constant used to divide an exact sum of ``n`` terms by ``n`` (mean, avg pools).

    Returns ``(R, Fr)`` with ``R = round(2**Fr / n)``, so ``sum / n`` is computed as the
    exact product ``sum * R`` with ``F_sum + Fr`` fractional bits, then assigned to the
    output type. ``Fr = out_frac + max(in_int_bits, 0) + ceil(log2 n) + 1`` keeps the
    error of R below half an output LSB for any sum of ``n`` inputs with ``in_int_bits``
    integer bits; for a power-of-two ``n`` R is exact. The C++ and Verilog use the same R.
    """
    if n < 1:
        raise ValueError(f"reciprocal of {n}")
    frac = max(0, out_frac + max(in_int_bits, 0) + math.ceil(math.log2(n)) + 1)
    return (2 * (1 << frac) + n) // (2 * n), frac
