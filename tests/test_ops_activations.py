"""The table activations elu, selu, softplus, softsign, hard_sigmoid, hard_swish, erf, gelu and silu
(hlsfuse/ops/lut.py).

Fixed point: within the output's rounding step plus the bucket error of the true function on every
representable input; one table per distinct parameter set; range analysis right for non-monotone functions
(hard_swish's minimum -3/8 inside the input interval, elu with a negative alpha). float32: checked tightly
against an independent float64 formula. The C++ of every float32 function exists (emitting fails otherwise).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_ops_lut import run_node

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, fuse, parse_dtype
from hlsfuse.backends.hls import emit_hls
from hlsfuse.backends.hls.context import make_context
from hlsfuse.backends.hls.options import HlsOptions
from hlsfuse.lower import lower
from hlsfuse.lut import FUNCTIONS
from hlsfuse.ops import OPS
from hlsfuse.ops.lut import GELU_VARIANTS, table_of
from hlsfuse.ranges import ranges

SELU_A, SELU_G = 1.67326319217681884765625, 1.05070102214813232421875


def _hs(x, a, b):
    return np.minimum(np.maximum(a * x + b, 0.0), 1.0)


# op -> (attrs, the function written independently, the largest |slope|)
CASES = {
    "elu": ({}, lambda x: np.where(x > 0, x, np.exp(x) - 1), 1.0),
    "elu-alpha": ({"alpha": 0.375}, lambda x: np.where(x > 0, x, 0.375 * (np.exp(x) - 1)), 1.0),
    "selu": ({}, lambda x: SELU_G * np.where(x > 0, x, SELU_A * (np.exp(x) - 1)), SELU_G * SELU_A),
    "softplus": ({}, lambda x: np.log(1 + np.exp(x)), 1.0),
    "softsign": ({}, lambda x: x / (1 + np.abs(x)), 1.0),
    "hard_sigmoid": ({}, lambda x: _hs(x, 0.2, 0.5), 0.2),
    "hard_sigmoid-attrs": ({"alpha": 0.5, "beta": 0.25}, lambda x: _hs(x, 0.5, 0.25), 0.5),
    "hard_swish": ({}, lambda x: x * _hs(x, 1 / 6, 0.5), 1.5),
    "erf": ({}, lambda x: _vector(math.erf)(x), 1.129),
    "gelu": ({}, lambda x: x * (1 + _vector(math.erf)(x / math.sqrt(2))) / 2, 1.129),
    "gelu-tanh": ({"approximate": "tanh"}, lambda x: x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3))) / 2,
                  1.13),
    "silu": ({}, lambda x: x / (1 + np.exp(-x)), 1.1),
}


def _vector(fn):
    return lambda x: np.array([fn(v) for v in np.ravel(x)]).reshape(np.shape(x))


def op_of(case: str) -> str:
    return case.split("-")[0]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("tin,tout,table_bits", [
    ("fixed<16,6>", "fixed<16,6,RND,SAT>", 10),  # buckets of 64 inputs
    ("fixed<12,4,RND,SAT>", "fixed<12,4,RND,SAT>", 12),  # one entry per input: only the output rounding remains
    ("int8", "fixed<16,8,RND,SAT>", 8),
    ("fixed<10,3>", "fixed<8,3>", 6),
])
def test_fixed_within_rounding_and_bucket_error(case, tin, tout, table_bits):
    attrs, fn, slope = CASES[case]
    t_in = parse_dtype(tin)
    x = np.arange(t_in.raw_min, t_in.raw_max + 1, dtype=np.int64)
    got, g = run_node(op_of(case), tin, x, dtype=tout, table_bits=table_bits, **attrs)
    t = g.types["y"].dtype
    xr = x * 2.0**-t_in.frac
    shift = max(0, t_in.width - table_bits)
    half_bucket = 2.0 ** (shift - 1) * 2.0**-t_in.frac if shift else 0.0
    lsb = 2.0**-t.frac
    with np.errstate(over="ignore"):
        exact = np.clip(fn(xr), t.raw_min * lsb, t.raw_max * lsb)  # tables saturate
    step = lsb if t.quant.startswith("TRN") else lsb / 2
    assert np.all(np.abs(got * lsb - exact) <= step + slope * half_bucket + 1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_float32_tight(case):
    attrs, fn, _ = CASES[case]
    x = np.linspace(-12, 12, 601, dtype=np.float32)
    got, g = run_node(op_of(case), "float32", x, **attrs)
    assert got.dtype == np.float32
    # the parameters are float32 numbers, as ONNX stores them
    np.testing.assert_allclose(got, fn(x.astype(np.float64)).astype(np.float32), rtol=4e-7, atol=1e-7)


def test_hard_swish_bounds_cover_its_minimum_inside_the_input_interval():
    # fixed<8,3> inputs in [-4, 3.97]: hard_swish goes down to -3/8 at -1.5, its ends give 0 and 3.97 (x itself
    # from 3 on); the table has one entry per input (8 bits), -1.5 among them
    b = GraphBuilder("t", dtype="fixed<8,3>")
    x = b.input("x", [4])
    b.output(b.hard_swish(x, name="y", dtype="fixed<12,3,RND,SAT>", table_bits=8))
    g = b.build()
    lo, hi = ranges(g)["y"].exact.reals()
    assert (lo, hi) == (-0.375, 3.96875)
    # float32: the extremes over the interval, not the ends
    b = GraphBuilder("f", dtype="float32")
    x = b.input("x", [4])
    b.output(b.hard_swish(x, name="y"), b.elu(x, name="e", alpha=-0.5))
    g = b.build()
    found = ranges(g, {"x": (-4.0, 2.0)})
    assert found["y"].exact.reals() == (-0.375, 2.0 * (2.0 / 6 + 0.5))
    # elu with a negative alpha falls to 0 at 0 and rises on both sides: over [-4, 2], 0 to 2
    assert found["e"].exact.reals() == (0.0, 2.0)


def test_one_table_per_parameter_set():
    b = GraphBuilder("t", dtype="fixed<10,3>")
    x = b.input("x", [4])
    b.output(b.elu(x, name="a"), b.elu(x, name="b", alpha=0.5), b.elu(x, name="c", alpha=0.5),
             b.hard_sigmoid(x, name="d"))
    g = b.build()
    tables = {n: table_of(g.node(n).op, g.sigs[n]) for n in "abcd"}
    assert tables["b"] is tables["c"] and tables["a"] is not tables["b"]
    assert tables["a"].params == (1.0,) and tables["b"].params == (0.5,)
    assert not np.array_equal(tables["a"].entries, tables["b"].entries)
    plan = lower(g, fuse(g))
    ctx = make_context(g, plan, HlsOptions())
    names = {n: ctx.tables[n][0].name for n in "abcd"}
    assert names["b"] == names["c"] and len(set(names.values())) == 3
    assert "lut_elu_0" in emit_hls(g, plan)["luts.h"] and "lut_elu_1" in emit_hls(g, plan)["luts.h"]


def test_every_table_function_is_an_op_of_one_entry():
    """A function of hlsfuse/lut.py (except softmax's reciprocal and the normalisations' reciprocal square root) is
    an elementwise table op whose attributes are the function's parameters and table_bits."""
    variants = dict.fromkeys(GELU_VARIANTS.values(), "gelu")  # gelu's approximate chooses one
    for name, function in FUNCTIONS.items():
        if name in ("recip", "rsqrt"):
            continue
        op = OPS[variants.get(name, name)]
        assert op.pattern == Pattern.ELEMWISE and op.stream == "map"
        chooser = ["approximate"] if name in variants else []
        assert [a.name for a in op.attrs] == [*chooser, *function.params, "table_bits"]


def test_float32_functions_have_cxx():
    b = GraphBuilder("f", dtype="float32")
    x = b.input("x", [2, 3])
    b.output(*(b.op(name, x, name=name) for name in ("elu", "selu", "softplus", "softsign", "hard_sigmoid",
                                                     "hard_swish", "erf", "gelu", "silu")),
             b.gelu(x, name="gelu_tanh", approximate="tanh"))
    g = b.build()
    files = emit_hls(g, lower(g, fuse(g)))
    text = "".join(v for k, v in files.items() if k.endswith(".cpp"))
    assert "std::expm1" in text and "std::log1p" in text and "#include <cmath>" in files["f.cpp"]
    assert "std::erf(x)" in text and "std::erfc(" in text and "0.044715" in text
    assert "static_cast<double>(1.6732631921768188f)" in text  # selu's alpha, its float32 value exactly


def test_defaults_and_attribute_errors():
    _, g = run_node("selu", "fixed<10,3>", np.zeros(2, np.int64))
    assert (g.sigs["y"]["alpha"], g.sigs["y"]["gamma"]) == (SELU_A, SELU_G)
    _, g = run_node("hard_sigmoid", "fixed<10,3>", np.zeros(2, np.int64))
    assert (g.sigs["y"]["alpha"], g.sigs["y"]["beta"], g.sigs["y"]["table_bits"]) == (0.2, 0.5, 10)
    with pytest.raises(HlsfuseError) as info:
        run_node("elu", "fixed<10,3>", np.zeros(2, np.int64), alpha="big")
    assert str(info.value) == "node 'y' (elu): attribute 'alpha' must be a number, not 'big'"
    with pytest.raises(HlsfuseError) as info:
        run_node("hard_swish", "fixed<10,3>", np.zeros(2, np.int64), alpha=0.5)
    assert str(info.value) == "node 'y' (hard_swish): unknown attribute 'alpha' (expected: table_bits)"


def test_selu_table_bit_exact_on_a_small_input():
    # ufixed<4,2>: 16 inputs 0 .. 3.75, each its own entry: gamma * x rounded (RND) to 5 fractional bits
    got, _ = run_node("selu", "ufixed<4,2>", np.arange(16), dtype="fixed<10,5,RND,SAT>")
    assert got.tolist() == [math.floor(SELU_G * v / 4 * 32 + 0.5) for v in range(16)]
