"""Lookup-table ops (hlsfuse/ops/lut.py): sigmoid, tanh, exp.

The fixed-point reference must stay within the output's rounding step plus the
bucket error (max |f'| times half a bucket) of the true function on every
representable input; small tables are checked bit for bit against an
independent bucket formula; float32 is checked tightly against float64.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference
from hlsfuse.ops.lut import table_of

FUNCS = {
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
}


def run_node(op, tin, x, dtype=None, **attrs):
    """One node ``y = op(x)`` on raw (or float32) values; returns (raw output, graph)."""
    b = GraphBuilder("t")
    xin = b.input("x", np.shape(x), tin)
    if dtype is not None:
        attrs["dtype"] = dtype
    b.output(b.op(op, xin, name="y", **attrs))
    g = b.build()
    return reference.run_raw(g, {"x": np.asarray(x)})["y"], g


def all_raw(t):
    return np.arange(t.raw_min, t.raw_max + 1, dtype=np.int64)


def slope_bound(op, x, half_bucket):
    """max |f'| over the bucket around x, times half a bucket."""
    if op == "sigmoid":
        return 0.25 * half_bucket
    if op == "tanh":
        return 1.0 * half_bucket
    with np.errstate(over="ignore"):
        return np.where(half_bucket == 0, 0.0, np.exp(x + half_bucket) * half_bucket)


@pytest.mark.parametrize("op", sorted(FUNCS))
@pytest.mark.parametrize("tin,tout,table_bits", [
    ("fixed<16,6>", None, 10),  # buckets of 64 inputs
    ("fixed<12,4,RND,SAT>", None, 12),  # one entry per input: only the output rounding remains
    ("ufixed<8,3>", "ufixed<8,0,RND>", 10),
    ("int8", "fixed<16,2,RND,SAT>", 6),
    ("int16", "fixed<16,1,RND_CONV,SAT>", 10),
    ("fixed<10,2>", "fixed<8,1>", 5),
    ("fixed<16,6>", "fixed<12,2,RND,SAT_SYM>", 16),
    ("fixed<16,6>", "fixed<16,8,TRN_ZERO,SAT>", 3),
])
def test_fixed_within_rounding_and_bucket_error(op, tin, tout, table_bits):
    t_in = parse_dtype(tin)
    x = all_raw(t_in)
    got, g = run_node(op, tin, x, dtype=tout, table_bits=table_bits)
    t = g.types["y"].dtype
    assert str(t) == (tout or tin)
    xr = x * 2.0**-t_in.frac
    shift = max(0, t_in.width - table_bits)
    half_bucket = 2.0 ** (shift - 1) * 2.0**-t_in.frac if shift else 0.0
    lsb = 2.0**-t.frac
    hi = t.raw_max * lsb
    lo = -hi if t.overflow == "SAT_SYM" else t.raw_min * lsb
    with np.errstate(over="ignore"):
        exact = np.clip(FUNCS[op](xr), lo, hi)  # tables saturate, whatever the overflow mode
    step = lsb if t.quant.startswith("TRN") else lsb / 2
    err = np.abs(got * lsb - exact)
    assert np.all(err <= step + slope_bound(op, xr, half_bucket) + 1e-12)
    assert got.min() >= lo / lsb and got.max() <= t.raw_max


@pytest.mark.parametrize("op", sorted(FUNCS))
def test_float32_tight(op):
    x = np.linspace(-20, 20, 801, dtype=np.float32)
    got, g = run_node(op, "float32", x)
    assert g.types["y"].dtype.is_float and got.dtype == np.float32
    np.testing.assert_allclose(got, FUNCS[op](x.astype(np.float64)), rtol=2**-23, atol=0)


def test_float32_exp_overflows_to_inf_quietly():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, _ = run_node("exp", "float32", np.array([100.0, -200.0], dtype=np.float32))
    np.testing.assert_array_equal(got, np.array([np.inf, 0.0], dtype=np.float32))
    # the negative tail keeps its relative precision down to float32's normal numbers (1.8e-35 here)
    got, _ = run_node("sigmoid", "float32", np.array([-80.0, 100.0], dtype=np.float32))
    np.testing.assert_allclose(got, [1 / (1 + math.exp(80)), 1.0], rtol=2**-23, atol=0)


# --------------------------------------------------------------------------
# bit-exact tables
# --------------------------------------------------------------------------


def test_buckets_bit_exact():
    # fixed<8,2> with 4 table bits: 16 buckets of 16 raw inputs; bucket k holds raw -128 + 16k .. -128 + 16k + 15
    # and its entry is tanh at raw -128 + 16k + 8 (real: raw / 64), rounded (RND: half up) to 7 fractional bits
    # and saturated
    x = all_raw(parse_dtype("fixed<8,2>"))
    got, _ = run_node("tanh", "fixed<8,2>", x, dtype="fixed<8,1,RND,SAT>", table_bits=4)
    expected = []
    for raw in x.tolist():
        k = (raw + 128) // 16
        mid = (-128 + 16 * k + 8) / 64
        expected.append(min(max(math.floor(math.tanh(mid) * 128 + 0.5), -128), 127))
    assert got.tolist() == expected
    assert len(set(expected)) == 16  # every bucket has its own entry


def test_one_entry_per_input_bit_exact():
    # ufixed<4,2>: 16 inputs 0, 0.25, ..., 3.75, each with its own entry; ufixed<8,0,RND> saturates 1.0 to 255/256
    x = np.arange(16)
    got, _ = run_node("sigmoid", "ufixed<4,2>", x, dtype="ufixed<8,0,RND>")
    assert got.tolist() == [min(math.floor(256 / (1 + math.exp(-v / 4)) + 0.5), 255) for v in range(16)]
    # int8 -> exp in fixed<16,6> (TRN): floor(exp(v) * 1024), saturated at 32767 for v >= 4 (exp(4) = 54.6 > 32)
    x = np.arange(-128, 128)
    got, _ = run_node("exp", "int8", x, dtype="fixed<16,6>", table_bits=8)
    assert got.tolist() == [min(math.floor(math.exp(v) * 1024), 32767) for v in range(-128, 128)]


def test_saturation_modes():
    x = np.array([-128, 0, 127])  # fixed<8,4>: -8, 0, 7.9375
    # SAT_SYM: tanh(-8) = -1 would be raw -128, the symmetric range stops at -127
    got, _ = run_node("tanh", "fixed<8,4>", x, dtype="fixed<8,1,RND,SAT_SYM>", table_bits=8)
    assert got.tolist() == [-127, 0, 127]
    got, _ = run_node("tanh", "fixed<8,4>", x, dtype="fixed<8,1,RND,SAT>", table_bits=8)
    assert got.tolist() == [-128, 0, 127]
    # a WRAP output still saturates in the table: exp(7.9375) = 2796 becomes the max 7.9375, not a wrapped value
    got, _ = run_node("exp", "fixed<8,4>", x, table_bits=8)
    assert got.tolist() == [math.floor(math.exp(-8) * 16), 16, 127]


def test_widest_inputs_index_the_right_bucket():
    # 64-bit input: the bucket index (X - min) >> 54 must not be confused by int64 overflow of X - min
    t = parse_dtype("fixed<64,32>")
    x = np.array([t.raw_min, t.raw_min + 1, -(1 << 40), -1, 0, 1 << 40, 3 << 60, t.raw_max], dtype=np.int64)
    got, _ = run_node("tanh", "fixed<64,32>", x, dtype="fixed<16,2>")
    expected = []
    for raw in x.tolist():
        k = (raw + (1 << 63)) >> 54
        mid = k * (1 << 54) - (1 << 63) + (1 << 53)
        expected.append(min(max(math.floor(math.tanh(mid / 2**32) * 2**14), -(1 << 15)), (1 << 15) - 1))
    assert got.tolist() == expected
    # unsigned 63-bit input: index X >> 53
    u = np.array([0, 1 << 52, 1 << 53, (1 << 63) - 1], dtype=np.int64)
    got, _ = run_node("sigmoid", "ufixed<63,50>", u, dtype="ufixed<16,0,RND>")
    mids = [((raw >> 53) * (1 << 53) + (1 << 52)) / 2**13 for raw in u.tolist()]
    assert got.tolist() == [min(math.floor(65536 / (1 + math.exp(-m)) + 0.5), 65535) for m in mids]


# --------------------------------------------------------------------------
# types, attributes, pattern
# --------------------------------------------------------------------------


def build(op, tin, dtype=None, **attrs):
    b = GraphBuilder("t")
    x = b.input("x", [2, 3, 4], tin)
    if dtype is not None:
        attrs["dtype"] = dtype
    b.output(b.op(op, x, name="y", **attrs))
    return b.build()


def error_of(fn):
    with pytest.raises(HlsfuseError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("op", sorted(FUNCS))
def test_shape_pattern_default_type_and_table_bits(op):
    g = build(op, "fixed<16,6>")
    assert g.types["y"].shape == (2, 3, 4)
    assert str(g.types["y"].dtype) == "fixed<16,6>"
    assert g.patterns["y"] == Pattern.ELEMWISE
    assert g.sigs["y"]["table_bits"] == 10
    assert table_of(op, g.sigs["y"]).entries.size == 1024
    assert build(op, "float32").types["y"].dtype.is_float
    g = build(op, "ufixed<8,3>", dtype="ufixed<8,0,RND>", table_bits=16)
    assert g.sigs["y"]["table_bits"] == 16
    assert table_of(op, g.sigs["y"]).entries.size == 256  # never more entries than inputs


def test_nodes_with_the_same_types_share_one_table():
    b = GraphBuilder("t")
    x = b.input("x", [4])
    y1, y2 = b.sigmoid(x, name="y1"), b.sigmoid(x, name="y2")
    b.output(y1, y2)
    g = b.build()
    assert table_of("sigmoid", g.sigs["y1"]) is table_of("sigmoid", g.sigs["y2"])


@pytest.mark.parametrize("op", sorted(FUNCS))
def test_family_errors(op):
    assert error_of(lambda: build(op, "fixed<16,6>", dtype="float32")) == (
        f"node 'y' ({op}): output dtype float32 does not match the inputs' family; use cast to convert")
    assert error_of(lambda: build(op, "float32", dtype="fixed<8,1>")) == (
        f"node 'y' ({op}): output dtype fixed<8,1> does not match the inputs' family; use cast to convert")


@pytest.mark.parametrize("value,problem", [
    (0, "must be 1..16, not 0"),
    (17, "must be 1..16, not 17"),
    (-3, "must be 1..16, not -3"),
    (2.5, "must be an integer, not 2.5"),
    (True, "must be an integer, not True"),
])
def test_table_bits_validation(value, problem):
    assert error_of(lambda: build("tanh", "fixed<16,6>", table_bits=value)) == (
        f"node 'y' (tanh): attribute 'table_bits' {problem}")
    # a float graph has no table but the same attribute rules
    assert error_of(lambda: build("exp", "float32", table_bits=value)) == (
        f"node 'y' (exp): attribute 'table_bits' {problem}")


def test_unknown_attribute():
    assert error_of(lambda: build("sigmoid", "fixed<16,6>", bits=8)) == (
        "node 'y' (sigmoid): unknown attribute 'bits' (expected: table_bits)")
