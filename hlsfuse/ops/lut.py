"""Lookup-table ops: sigmoid, tanh and exp.

For fixed-point inputs each op is a table from ``hlsfuse.lut`` built once from
the input format, the output type and ``table_bits``; the reference, the C++
and the Verilog read the very same entries (DESIGN.md section 3), so the
output is the table entry of the input's bucket and nothing is rounded later.
float32 graphs evaluate the function in float64 and round once to float32.
"""

from __future__ import annotations

import numpy as np

from ..lut import FUNCTIONS, MAX_TABLE_BITS, Table, make_table
from ..types import Fmt
from .base import Attr, OpDef, Pattern, Sig, same_family
from .interval import Interval

__all__ = ["OPS", "TABLE_OPS", "table_of"]


def _table_bits_check(value: int) -> str | None:
    if 1 <= value <= MAX_TABLE_BITS:
        return None
    return f"must be 1..{MAX_TABLE_BITS}, not {value}"


def table_of(function: str, sig: Sig) -> Table:
    """The table a fixed-point node of ``function`` uses (shared with the backends)."""
    return make_table(function, Fmt.of(sig.dtypes[0]), sig.out_dtype, sig["table_bits"])


def _unary_shape(sig: Sig) -> tuple[int, ...]:
    return sig.shapes[0]


def _lut_op(function: str, doc: str) -> OpDef:
    def compute(args, sig):
        if sig.out_dtype.is_float:
            # float64 rounded once to float32 keeps the error at one float32 rounding, also in the
            # tails; exp overflows to inf as in float32
            with np.errstate(over="ignore"):
                return FUNCTIONS[function](args[0].astype(np.float64)).astype(np.float32)
        return table_of(function, sig).lookup(args[0])

    def bounds(ins, sig):
        # the exact result is the table entry itself (the table rounds and saturates)
        x = ins[0]
        if x.frac is None:  # sigmoid, tanh and exp are non-decreasing
            with np.errstate(over="ignore"):
                return Interval(FUNCTIONS[function](x.lo), FUNCTIONS[function](x.hi), None)
        lo, hi = table_of(function, sig).span(x.lo, x.hi)
        return Interval(lo, hi, sig.out_dtype.frac)

    return OpDef(
        name=function,
        bounds=bounds,
        inputs=("x",),
        attrs=(Attr("table_bits", "int", 10, check=_table_bits_check),),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        # float32 -> float32 or fixed -> fixed: a table only produces fixed-point values
        check=same_family,
        compute=compute,
        # fixed point reads the table; float32 evaluates the function (the step ``<function>_float``)
        micro=lambda sig: f"{function}_float" if sig.out_dtype.is_float else "lookup",
        tables=lambda sig: (table_of(function, sig),),
        doc=doc,
    )


OPS = (
    _lut_op("sigmoid", "1 / (1 + exp(-x)); fixed-point: a table of at most 2**table_bits entries"),
    _lut_op("tanh", "tanh(x); fixed-point: a table of at most 2**table_bits entries"),
    _lut_op("exp", "exp(x); fixed-point: a table of at most 2**table_bits entries, saturating"),
)
TABLE_OPS = tuple(op.name for op in OPS)
"""Ops computed by a lookup table on fixed-point inputs (float32 graphs evaluate the function)."""
