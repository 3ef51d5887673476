"""Lookup-table ops: sigmoid, tanh, exp, elu, selu, softplus, softsign, hard_sigmoid, hard_swish, erf, gelu and silu.

For fixed-point inputs each op is a table from ``hlsfuse.lut`` built once from the input format, the output
type, ``table_bits`` and the function's parameters (the op's attributes of the same names, as float32
numbers); the reference, the C++ and the Verilog read the very same entries (DESIGN.md section 3), so the
output is the table entry of the input's bucket and nothing is rounded later. float32 graphs evaluate the
function in float64 and round once to float32. Adding a function is one ``hlsfuse.lut.FUNCTIONS`` entry, one
``_lut_op`` line here and its float32 spelling in templates/hls/ops.j2 (the Verilog reads tables only).

An op may choose among functions by a string attribute (gelu's ``approximate``: "none" is x * Phi(x) through
erf, "tanh" ONNX's tanh approximation, the functions ``gelu`` and ``gelu_tanh``): ``function_of`` says which
function a node's table holds, so the two variants have two tables.

hard_sigmoid is a table rather than clip(alpha * x + beta) of existing ops: alpha (0.2, 1/6) has no exact
fixed-point constant, while a table entry is the function at the bucket's middle rounded once to the output
type, the same bits in all three paths, and with ``table_bits`` >= the input width it is the correctly rounded
function of every input.
"""

from __future__ import annotations

import numpy as np

from ..lut import FUNCTIONS, MAX_TABLE_BITS, Table, extremes, make_table
from ..types import Fmt
from .base import Attr, OpDef, Pattern, Sig, same_family
from .interval import Interval

__all__ = ["OPS", "TABLE_OPS", "table_of", "params_of", "function_of", "functions_of", "GELU_VARIANTS"]


def _table_bits_check(value: int) -> str | None:
    if 1 <= value <= MAX_TABLE_BITS:
        return None
    return f"must be 1..{MAX_TABLE_BITS}, not {value}"


def params_of(function: str, sig: Sig) -> tuple[float, ...]:
    """The function's parameters: the node's attributes of their names, rounded to float32 as ONNX holds them."""
    return tuple(float(np.float32(sig[name])) for name in FUNCTIONS[function].params)


GELU_VARIANTS = {"none": "gelu", "tanh": "gelu_tanh"}
"""gelu's ``approximate`` attribute (ONNX's and torch's values) -> the function its table holds."""

_VARIANTS = {"gelu": ("approximate", GELU_VARIANTS)}


def function_of(op: str, sig: Sig) -> str:
    """The ``hlsfuse.lut.FUNCTIONS`` entry a node of table op ``op`` computes (its own name, or the variant
    its attribute chooses)."""
    if op not in _VARIANTS:
        return op
    attr, functions = _VARIANTS[op]
    return functions[sig[attr]]


def functions_of(op: str) -> tuple[str, ...]:
    """Every ``hlsfuse.lut.FUNCTIONS`` entry a node of table op ``op`` may compute."""
    return tuple(_VARIANTS[op][1].values()) if op in _VARIANTS else (op,)


def table_of(op: str, sig: Sig) -> Table:
    """The table a fixed-point node of table op ``op`` uses (shared with the backends)."""
    function = function_of(op, sig)
    return make_table(function, Fmt.of(sig.dtypes[0]), sig.out_dtype, sig["table_bits"], params_of(function, sig))


def _unary_shape(sig: Sig) -> tuple[int, ...]:
    return sig.shapes[0]


def _variant_attr(op: str):
    attr, functions = _VARIANTS[op]

    def check(value: str) -> str | None:
        return None if value in functions else f"must be one of {', '.join(map(repr, functions))}, not {value!r}"

    return Attr(attr, "str", next(iter(functions)), check=check)


def _lut_op(name: str, doc: str, *params: Attr) -> OpDef:
    if name in _VARIANTS:
        params = (_variant_attr(name), *params)

    def compute(args, sig):
        function = function_of(name, sig)
        if sig.out_dtype.is_float:
            # float64 rounded once to float32 keeps the error at one float32 rounding, also in the
            # tails; exp overflows to inf as in float32
            with np.errstate(over="ignore", invalid="ignore"):
                return FUNCTIONS[function](args[0].astype(np.float64), *params_of(function, sig)).astype(np.float32)
        return table_of(name, sig).lookup(args[0])

    def bounds(ins, sig):
        # the exact result is the table entry itself (the table rounds and saturates); a float32 result lies
        # between the function's extremes over the input interval (at its ends or a turn inside)
        x = ins[0]
        if x.frac is None:
            function = function_of(name, sig)
            lo, hi = extremes(function, x.lo, x.hi, params_of(function, sig))
            return Interval(lo, hi, None)
        lo, hi = table_of(name, sig).span(x.lo, x.hi)
        return Interval(lo, hi, sig.out_dtype.frac)

    def constants(sig):
        # a float32 graph's C++ evaluates the function with its parameters; a fixed-point node reads its table
        function = function_of(name, sig)
        if sig.out_dtype.is_float:
            return dict(zip(FUNCTIONS[function].params, params_of(function, sig)))
        return {}

    return OpDef(
        name=name,
        bounds=bounds,
        inputs=("x",),
        attrs=(*params, Attr("table_bits", "int", 10, check=_table_bits_check)),
        shape=_unary_shape,
        pattern=Pattern.ELEMWISE,
        # float32 -> float32 or fixed -> fixed: a table only produces fixed-point values
        check=same_family,
        compute=compute,
        # fixed point reads the table; float32 evaluates the function (the step ``<function>_float``)
        micro=lambda sig: f"{function_of(name, sig)}_float" if sig.out_dtype.is_float else "lookup",
        constants=constants,
        tables=lambda sig: (table_of(name, sig),),
        doc=doc,
    )


SELU_ALPHA = 1.67326319217681884765625  # ONNX's defaults, float32 values
SELU_GAMMA = 1.05070102214813232421875

OPS = (
    _lut_op("sigmoid", "1 / (1 + exp(-x)); fixed-point: a table of at most 2**table_bits entries"),
    _lut_op("tanh", "tanh(x); fixed-point: a table of at most 2**table_bits entries"),
    _lut_op("exp", "exp(x); fixed-point: a table of at most 2**table_bits entries, saturating"),
    _lut_op("elu", "x if x > 0 else alpha * (exp(x) - 1); fixed-point: a table", Attr("alpha", "float", 1.0)),
    _lut_op("selu", "gamma * (x if x > 0 else alpha * (exp(x) - 1)); fixed-point: a table",
            Attr("alpha", "float", SELU_ALPHA), Attr("gamma", "float", SELU_GAMMA)),
    _lut_op("softplus", "log(1 + exp(x)); fixed-point: a table"),
    _lut_op("softsign", "x / (1 + |x|); fixed-point: a table"),
    _lut_op("hard_sigmoid", "clip(alpha * x + beta, 0, 1); fixed-point: a table",
            Attr("alpha", "float", 0.2), Attr("beta", "float", 0.5)),
    _lut_op("hard_swish", "x * clip(x / 6 + 1 / 2, 0, 1); fixed-point: a table (non-monotone: minimum -3/8)"),
    _lut_op("erf", "erf(x); fixed-point: a table"),
    _lut_op("gelu", "x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)) (approximate 'none'), or "
            "x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (approximate 'tanh'); fixed-point: a table "
            "(non-monotone: minimum -0.17 near -0.75)"),
    _lut_op("silu", "x * sigmoid(x); fixed-point: a table (non-monotone: minimum -0.278 at -1.28)"),
)
TABLE_OPS = tuple(op.name for op in OPS)
"""Ops computed by a lookup table on fixed-point inputs (float32 graphs evaluate the function)."""
