"""Elementwise and broadcast ops (hlsfuse/ops/elementwise.py) against independent models.

Three kinds of evidence:
- tolerance: the reference versus numpy float64 on the real input values, within the
  quantization step of the output type (and saturation for SAT types);
- bit-exact: small cases worked out by hand in the comments;
- hypothesis: random shapes, types and values of the binary ops versus exact
  ``Fraction`` arithmetic and a rounding function written from the ap_fixed mode names.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays, mutually_broadcastable_shapes

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


# --------------------------------------------------------------------------
# helpers: graphs of one node, real values, tolerance
# --------------------------------------------------------------------------


def run_node(op, inputs, dtype=None, **attrs):
    """Run one node of ``op`` on ``inputs`` = [(dtype, raw or float32 array)]; returns (raw out, out dtype)."""
    b = GraphBuilder("t")
    names = [b.input(f"i{k}", np.shape(v), t) for k, (t, v) in enumerate(inputs)]
    if dtype is not None:
        attrs["dtype"] = dtype
    y = b.op(op, *names, name="y", **attrs)
    b.output(y)
    g = b.build()
    raw = {f"i{k}": np.asarray(v) for k, (_, v) in enumerate(inputs)}
    return reference.run_raw(g, raw)["y"], g.types["y"].dtype


def real(raw, t):
    """Real value of raw integers of fixed type ``t`` (exact for widths <= 53)."""
    t = parse_dtype(t) if isinstance(t, str) else t
    return np.asarray(raw, dtype=np.float64) * 2.0 ** -t.frac


def random_raw(rng, t, shape, limit=4.0):
    """Uniform raw values of ``t`` whose real values lie within +-limit."""
    t = parse_dtype(t)
    if t.is_float:
        return (rng.standard_normal(shape) * limit).astype(np.float32)
    bound = int(limit * 2**t.frac)
    return rng.integers(max(t.raw_min, -bound), min(t.raw_max, bound), size=shape, endpoint=True)


def assert_quantized(got_raw, exact, t, extra=0.0):
    """``got_raw`` (raw of fixed ``t``) is ``exact`` (float64) assigned to ``t``, up to its rounding step.

    TRN-family modes may be off by less than 1 LSB, RND-family by at most 0.5 LSB; SAT and
    SAT_SYM types clip ``exact`` to the range first; for WRAP and SAT_ZERO types only the
    elements whose exact value is safely inside the range are compared (at least a quarter
    must be). ``extra`` (a number or an array like ``exact``) widens the bound.
    """
    lsb = 2.0**-t.frac
    lo, hi = t.raw_min * lsb, t.raw_max * lsb
    if t.overflow == "SAT_SYM" and t.signed:
        lo = -hi  # the symmetric range leaves out the most negative value
    if t.overflow in ("WRAP", "SAT_ZERO"):
        inside = (exact >= lo) & (exact <= hi - lsb)
        assert inside.mean() >= 0.25, "test values mostly overflow; choose other ones"
    else:
        exact = np.clip(exact, lo, hi)
        inside = np.ones(exact.shape, dtype=bool)
    step = lsb if t.quant.startswith("TRN") else lsb / 2
    err = np.abs(real(got_raw, t) - exact)[inside]
    bound = (step + np.broadcast_to(extra, exact.shape))[inside]
    assert np.all(err <= bound + 1e-12), f"max error {np.max(err - bound)} beyond the bound for {t}"
    assert np.all((got_raw >= t.raw_min) & (got_raw <= t.raw_max))


FIXED_BINARY_CASES = [
    ("fixed<16,6>", "fixed<16,6>", "fixed<16,6>"),
    ("fixed<12,4,RND,SAT>", "fixed<16,6>", "fixed<12,4,RND,SAT>"),
    ("ufixed<8,3>", "ufixed<8,3>", "ufixed<8,3>"),
    ("int8", "int8", "int16"),
    ("int16", "fixed<12,4,RND,SAT>", "fixed<16,10,RND_CONV,SAT>"),
    ("fixed<12,4,RND,SAT>", "ufixed<8,3>", "fixed<10,3,TRN_ZERO,SAT>"),
    ("fixed<16,6>", "int8", "ufixed<8,3,RND_INF,SAT>"),
]


# --------------------------------------------------------------------------
# tolerance against numpy float64
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("ta,tb,tout", FIXED_BINARY_CASES)
def test_binary_fixed_within_one_step_of_float64(op, ta, tb, tout):
    rng = np.random.default_rng(1)
    a, b = random_raw(rng, ta, (20, 20)), random_raw(rng, tb, (20, 20))
    got, t = run_node(op, [(ta, a), (tb, b)], dtype=tout)
    assert str(t) == tout
    assert_quantized(got, BINARY[op](real(a, ta), real(b, tb)), t)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_float32_tight(op):
    rng = np.random.default_rng(2)
    a, b = random_raw(rng, "float32", (50,)), random_raw(rng, "float32", (50,))
    got, t = run_node(op, [("float32", a), ("float32", b)])
    assert t.is_float and got.dtype == np.float32
    exact = BINARY[op](a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=2**-23, atol=0)


# (op, attrs, float64 model with the attributes' exact values)
UNARY_CASES = [
    ("relu", {}, lambda x: np.maximum(x, 0.0)),
    ("neg", {}, lambda x: -x),
    ("abs", {}, np.abs),
    ("leaky_relu", {"alpha": 0.1}, lambda x: np.where(x >= 0, x, 0.1 * x)),
    ("leaky_relu", {"alpha": -0.3}, lambda x: np.where(x >= 0, x, -0.3 * x)),
    ("clip", {"min": -1.3, "max": 2.7}, lambda x: np.clip(x, -1.3, 2.7)),
]


UNARY_TYPES = [
    ("fixed<16,6>", "fixed<16,6>"),
    ("fixed<12,4,RND,SAT>", "fixed<12,4,RND,SAT>"),
    ("ufixed<8,3>", "fixed<8,4,RND,SAT>"),
    ("int8", "int8"),
    ("int16", "fixed<16,10,RND_CONV,SAT>"),
    ("fixed<16,6>", "fixed<8,3,RND_ZERO,SAT_SYM>"),
]


@pytest.mark.parametrize("op,attrs,model", UNARY_CASES)
@pytest.mark.parametrize("tin,tout", UNARY_TYPES)
def test_unary_fixed_within_one_step_of_float64(op, attrs, model, tin, tout):
    rng = np.random.default_rng(3)
    x = random_raw(rng, tin, (400,))
    got, t = run_node(op, [(tin, x)], dtype=tout, **attrs)
    xr = real(x, tin)
    lsb_in = 2.0 ** -parse_dtype(tin).frac
    if op == "leaky_relu":
        # the slope is a fixed<16,1,RND> constant: |alpha - alpha_q| <= 2**-16
        extra = np.abs(xr) * 2.0**-16
    elif op == "clip":
        # the bounds are rounded to the input type: off by at most half an input LSB
        extra = lsb_in / 2
    else:
        extra = 0.0
    assert_quantized(got, model(xr), t, extra=extra)


@pytest.mark.parametrize("op,attrs,model", UNARY_CASES)
def test_unary_float32_tight(op, attrs, model):
    rng = np.random.default_rng(4)
    x = random_raw(rng, "float32", (200,))
    got, t = run_node(op, [("float32", x)], **attrs)
    assert t.is_float and got.dtype == np.float32
    np.testing.assert_allclose(got, model(x.astype(np.float64)), rtol=2**-23, atol=0)


@pytest.mark.parametrize("tin,tout", [("fixed<16,6>", "fixed<8,4,RND,SAT>"), ("int16", "fixed<12,4>"),
                                      ("ufixed<8,3>", "int8"), ("fixed<12,4,RND,SAT>", "ufixed<10,2,RND_CONV,SAT>")])
def test_cast_fixed_within_one_step(tin, tout):
    rng = np.random.default_rng(5)
    x = random_raw(rng, tin, (300,), limit=3.0)
    got, t = run_node("cast", [(tin, x)], dtype=tout)
    assert_quantized(got, real(x, tin), t)


@pytest.mark.parametrize("tout", ["fixed<16,6>", "fixed<12,4,RND,SAT>", "ufixed<8,3,RND,SAT>", "int8"])
def test_cast_float32_to_fixed_and_back(tout):
    rng = np.random.default_rng(6)
    x = random_raw(rng, "float32", (300,), limit=1.5)
    got, t = run_node("cast", [("float32", x)], dtype=tout)
    assert_quantized(got, x.astype(np.float64), t)
    back, tf = run_node("cast", [(tout, got)], dtype="float32")
    assert tf.is_float and back.dtype == np.float32
    np.testing.assert_array_equal(back, real(got, tout))  # every value of these types is a float32


@pytest.mark.parametrize("op", ["bias_add", "scale"])
@pytest.mark.parametrize("tx,tc,tout", [("fixed<16,6>", "fixed<16,6>", "fixed<16,6>"),
                                        ("int8", "fixed<12,4,RND,SAT>", "fixed<12,4,RND,SAT>"),
                                        ("fixed<12,4,RND,SAT>", "ufixed<8,3>", "fixed<16,8,RND_CONV>")])
def test_per_channel_fixed_within_one_step(op, tx, tc, tout):
    rng = np.random.default_rng(7)
    x, c = random_raw(rng, tx, (2, 3, 5, 4)), random_raw(rng, tc, (4,))
    got, t = run_node(op, [(tx, x), (tc, c)], dtype=tout)
    model = np.add if op == "bias_add" else np.multiply
    assert got.shape == (2, 3, 5, 4)
    assert_quantized(got, model(real(x, tx), real(c, tc)[None, None, None, :]), t)


@pytest.mark.parametrize("op", ["bias_add", "scale"])
def test_per_channel_float32_tight(op):
    rng = np.random.default_rng(8)
    x, c = random_raw(rng, "float32", (3, 4)), random_raw(rng, "float32", (4,))
    got, _ = run_node(op, [("float32", x), ("float32", c)])
    model = np.add if op == "bias_add" else np.multiply
    np.testing.assert_allclose(got, model(x.astype(np.float64), c.astype(np.float64)), rtol=2**-23, atol=0)


# --------------------------------------------------------------------------
# bit-exact cases worked out by hand
# --------------------------------------------------------------------------


def run_real(op, inputs, dtype=None, **attrs):
    """Run one node on real values [(dtype, values)]; returns the real output values."""
    b = GraphBuilder("t")
    names = [b.input(f"i{k}", np.shape(v), t) for k, (t, v) in enumerate(inputs)]
    if dtype is not None:
        attrs["dtype"] = dtype
    b.output(b.op(op, *names, name="y", **attrs))
    g = b.build()
    return reference.run(g, {f"i{k}": np.asarray(v, dtype=np.float64) for k, (_, v) in enumerate(inputs)})["y"]


# a: fixed<8,4> (LSB 1/16), b: fixed<10,4> (LSB 1/64); sums in 1/64, assigned to LSB 1/16
ADD_A = [7.5, 1.0, -1.0, -8.0, 1.0, 1.0]
ADD_B = [0.5, 0.03125, -0.03125, -0.5, 0.015625, 0.046875]
# exact sums:    8.0      1.03125 (16.5 LSB)  -1.03125 (-16.5 LSB)  -8.5   1.015625 (16.25)  1.046875 (16.75)


@pytest.mark.parametrize("dtype,expected", [
    # RND: ties go up (+inf); SAT clips 8.0 to the max 127/16 and -8.5 to -8
    ("fixed<8,4,RND,SAT>", [7.9375, 1.0625, -1.0, -8.0, 1.0, 1.0625]),
    # TRN: floor; WRAP: 128 -> -128, -136 -> 120
    ("fixed<8,4>", [-8.0, 1.0, -1.0625, 7.5, 1.0, 1.0]),
    # SAT_ZERO: out of range gives 0; TRN_ZERO truncates toward zero
    ("fixed<8,4,TRN_ZERO,SAT_ZERO>", [0.0, 1.0, -1.0, 0.0, 1.0, 1.0]),
])
def test_add_bit_exact(dtype, expected):
    out = run_real("add", [("fixed<8,4>", ADD_A), ("fixed<10,4>", ADD_B)], dtype=dtype)
    np.testing.assert_array_equal(out, expected)


def test_add_sub_integer_wrap_and_unsigned():
    np.testing.assert_array_equal(run_real("add", [("int8", [100, -100, 127]), ("int8", [100, -100, 1])]),
                                  [-56, 56, -128])
    uint = [("uint8", [3, 5]), ("uint8", [5, 3])]
    np.testing.assert_array_equal(run_real("sub", uint), [254, 2])  # default output uint8 wraps
    np.testing.assert_array_equal(run_real("sub", uint, dtype="int8"), [-2, 2])
    np.testing.assert_array_equal(run_real("sub", uint, dtype="ufixed<8,8,TRN,SAT>"), [0, 2])


def test_mul_bit_exact():
    a = [1.5, 0.0625, -0.0625, 4.0, 3.0]
    b = [2.25, 0.5, 0.5, 4.0, 3.0]
    # products: 3.375 (exact), 0.03125 and -0.03125 (half an LSB), 16 (raw 256 wraps to 0), 9 (raw 144 -> -112)
    out = run_real("mul", [("fixed<8,4>", a), ("fixed<8,4>", b)])
    np.testing.assert_array_equal(out, [3.375, 0.0, -0.0625, 0.0, -7.0])
    # RND_CONV: ties to even raw value: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 LSB
    a = [0.0625, 0.1875, 0.3125, 4.0, -4.0]
    b = [0.5, 0.5, 0.5, 4.0, 4.0]
    out = run_real("mul", [("fixed<8,4>", a), ("fixed<8,4>", b)], dtype="fixed<8,4,RND_CONV,SAT>")
    np.testing.assert_array_equal(out, [0.0, 0.125, 0.125, 7.9375, -8.0])


def test_maximum_minimum_bit_exact():
    ints, fixed = ("int8", [3, -2, 0]), ("fixed<8,4>", [3.5, -2.5, -0.0625])
    # default output: the first input's type (int8, TRN): 3.5 -> 3, -2.5 -> -3, -0.0625 -> -1
    np.testing.assert_array_equal(run_real("maximum", [ints, fixed]), [3, -2, 0])
    np.testing.assert_array_equal(run_real("minimum", [ints, fixed]), [3, -3, -1])
    np.testing.assert_array_equal(run_real("maximum", [ints, fixed], dtype="fixed<8,4>"), [3.5, -2, 0])
    np.testing.assert_array_equal(run_real("minimum", [ints, fixed], dtype="fixed<8,4>"), [3, -2.5, -0.0625])


def test_relu_bit_exact():
    np.testing.assert_array_equal(run_real("relu", [("fixed<8,4>", [-1.5, 0.0, 2.25, 7.9375])]),
                                  [0.0, 0.0, 2.25, 7.9375])
    # assigned once to ufixed<4,2> (LSB 1/4, TRN, WRAP): 2.3125 -> 2.25; 7.9375 -> 7.75 = raw 31, wraps to 15
    np.testing.assert_array_equal(run_real("relu", [("fixed<8,4>", [-1.5, 2.3125, 7.9375])], dtype="ufixed<4,2>"),
                                  [0.0, 2.25, 3.75])


def test_leaky_relu_alpha_is_quantized():
    x = ("fixed<8,4>", [-8.0, -1.0, 0.0, 2.5])
    # alpha 0.1 -> round(0.1 * 2**15) = round(3276.8) = 3277
    # -8 * 3277 / 2**15 = -0.80005 -> floor to 1/16 = -13/16; -1 * 3277 / 2**15 = -0.10001 -> -2/16
    np.testing.assert_array_equal(run_real("leaky_relu", [x], alpha=0.1), [-0.8125, -0.125, 0.0, 2.5])
    # a wide output shows the constant itself
    wide = run_real("leaky_relu", [x], dtype="fixed<32,8>", alpha=0.1)
    np.testing.assert_array_equal(wide, [-8 * 3277 / 2**15, -3277 / 2**15, 0.0, 2.5])
    # alpha 0.01 -> round(327.68) = 328, not 0.01
    np.testing.assert_array_equal(run_real("leaky_relu", [("fixed<24,8>", [-1.0])], dtype="fixed<32,8>"),
                                  [-328 / 2**15])
    # a slope below half an LSB of the constant rounds to 0; negative slopes flip the sign
    np.testing.assert_array_equal(run_real("leaky_relu", [x], alpha=1e-5), [0.0, 0.0, 0.0, 2.5])
    np.testing.assert_array_equal(run_real("leaky_relu", [x], alpha=-0.5), [4.0, 0.5, 0.0, 2.5])


@pytest.mark.parametrize("dtype,lo,hi,x,expected", [
    # bounds round to the input type (RND): -1.03 -> -1, 2.97 -> 3
    ("fixed<8,4>", -1.03, 2.97, [-8, -1.0625, -1, 0, 2.9375, 3.0625, 7.9375], [-1, -1, -1, 0, 2.9375, 3, 3]),
    # ties round up: -0.5 LSB -> 0, 1.5 LSB -> 2 LSB
    ("fixed<8,4>", -0.03125, 0.09375, [-0.0625, 0.0625, 0.1875], [0, 0.0625, 0.125]),
    # bounds beyond the range saturate to it
    ("fixed<8,4>", -100, 100, [-8, 7.9375], [-8, 7.9375]),
    ("ufixed<8,3>", -2, 1, [0, 0.5, 7.96875], [0, 0.5, 1]),
    # integers: -2.5 -> -2 and 2.5 -> 3 (round half up)
    ("int8", -2.5, 2.5, [-5, -3, -2, 2, 3, 4], [-2, -2, -2, 2, 3, 3]),
])
def test_clip_bounds_rounding(dtype, lo, hi, x, expected):
    np.testing.assert_array_equal(run_real("clip", [(dtype, x)], min=lo, max=hi), expected)


def test_neg_abs_bit_exact():
    x = ("int8", [-128, -1, 0, 127])
    np.testing.assert_array_equal(run_real("neg", [x]), [-128, 1, 0, -127])  # 128 wraps in int8
    np.testing.assert_array_equal(run_real("neg", [x], dtype="int16"), [128, 1, 0, -127])
    np.testing.assert_array_equal(run_real("abs", [x]), [-128, 1, 0, 127])
    np.testing.assert_array_equal(run_real("abs", [x], dtype="ufixed<8,8,TRN,SAT>"), [128, 1, 0, 127])
    u = ("ufixed<8,3>", [0.5, 0.0])
    np.testing.assert_array_equal(run_real("neg", [u]), [7.5, 0.0])  # raw 256 - 16 = 240 -> 7.5
    np.testing.assert_array_equal(run_real("neg", [u], dtype="fixed<9,4>"), [-0.5, 0.0])


# 1.53125 and -1.53125 are +-24.5 LSBs of fixed<8,4>; 10 and -10 are out of its range [-8, 7.9375]
@pytest.mark.parametrize("mode,expected", [
    ("TRN", [1.5, -1.5625]),
    ("TRN_ZERO", [1.5, -1.5]),
    ("RND", [1.5625, -1.5]),
    ("RND_ZERO", [1.5, -1.5]),
    ("RND_MIN_INF", [1.5, -1.5625]),
    ("RND_INF", [1.5625, -1.5625]),
    ("RND_CONV", [1.5, -1.5]),
])
def test_cast_fixed_quantization_modes(mode, expected):
    out = run_real("cast", [("fixed<16,6>", [1.53125, -1.53125])], dtype=f"fixed<8,4,{mode}>")
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode,expected", [
    ("WRAP", [-6.0, 6.0, -8.0]),  # raw 160 -> -96, -160 -> 96
    ("SAT", [7.9375, -8.0, -8.0]),
    ("SAT_ZERO", [0.0, 0.0, -8.0]),
    ("SAT_SYM", [7.9375, -7.9375, -7.9375]),
])
def test_cast_fixed_overflow_modes(mode, expected):
    out = run_real("cast", [("fixed<16,6>", [10.0, -10.0, -8.0])], dtype=f"fixed<8,4,TRN,{mode}>")
    np.testing.assert_array_equal(out, expected)


def test_cast_float_fixed_both_ways():
    x = np.array([0.1, -0.1], dtype=np.float32)  # float32(0.1) * 16 = 1.6000000238...
    got, _ = run_node("cast", [("float32", x)], dtype="fixed<8,4>")
    np.testing.assert_array_equal(got, [1, -2])
    got, _ = run_node("cast", [("float32", x)], dtype="fixed<8,4,RND>")
    np.testing.assert_array_equal(got, [2, -2])
    back, t = run_node("cast", [("fixed<16,6>", np.array([-1, 32767]))], dtype="float32")
    assert t.is_float
    np.testing.assert_array_equal(back, np.array([-(2.0**-10), 32767 / 1024], dtype=np.float32))
    same, _ = run_node("cast", [("float32", x)], dtype="float32")
    np.testing.assert_array_equal(same, x)
    with pytest.raises(HlsfuseError, match=r"^cannot convert NaN or infinity to fixed<8,4>$"):
        run_node("cast", [("float32", np.array([np.nan], dtype=np.float32))], dtype="fixed<8,4>")


def test_bias_add_and_scale_bit_exact():
    x = ("fixed<8,4>", [[7.5, -1.0], [0.0, 1.0]])
    bias = ("fixed<10,4>", [0.5, -0.03125])
    # per channel (last axis): 8.0 saturates, -1.03125 (-16.5 LSB) rounds up to -1
    np.testing.assert_array_equal(run_real("bias_add", [x, bias], dtype="fixed<8,4,RND,SAT>"),
                                  [[7.9375, -1.0], [0.5, 1.0]])
    xi, s = ("int8", [[3, -4], [5, 7]]), ("fixed<8,4>", [0.5, 0.25])
    np.testing.assert_array_equal(run_real("scale", [xi, s], dtype="fixed<8,4>"), [[1.5, -1.0], [2.5, 1.75]])
    np.testing.assert_array_equal(run_real("scale", [xi, s]), [[1, -1], [2, 1]])  # int8 output, floor


def test_widest_exact_products_are_exact():
    big = 1 << 31
    got, _ = run_node("mul", [("int32", np.array([-big, -big])), ("int32", np.array([-big, big - 1]))],
                      dtype="fixed<64,64>")
    np.testing.assert_array_equal(got, [big * big, -big * (big - 1)])
    got, _ = run_node("mul", [("uint32", np.array([2 * big - 1])), ("int32", np.array([-big]))], dtype="fixed<64,64>")
    np.testing.assert_array_equal(got, [-(2 * big - 1) * big])


# --------------------------------------------------------------------------
# broadcasting and pattern kinds
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasting_matches_numpy(op):
    rng = np.random.default_rng(9)
    a, b = random_raw(rng, "fixed<16,6>", (2, 1, 3)), random_raw(rng, "fixed<12,4,RND,SAT>", (4, 1))
    got, t = run_node(op, [("fixed<16,6>", a), ("fixed<12,4,RND,SAT>", b)], dtype="fixed<32,12>")
    assert got.shape == (2, 4, 3)
    # fixed<32,12> holds every exact result (at most 18 fractional bits), so the result equals the float model
    np.testing.assert_array_equal(real(got, t), BINARY[op](real(a, "fixed<16,6>"), real(b, "fixed<12,4,RND,SAT>")))


def build(shapes, op, in_dtype="fixed<16,6>", **kw):
    """A graph of one node ``y`` of ``op`` on inputs of ``shapes``; ``kw`` go to the node."""
    b = GraphBuilder("t", in_dtype)
    names = [b.input(f"i{k}", s) for k, s in enumerate(shapes)]
    b.output(b.op(op, *names, name="y", **kw))
    return b.build()


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("sa,sb,out,pattern", [
    ((2, 3), (2, 3), (2, 3), Pattern.ELEMWISE),
    ((2, 3), (3,), (2, 3), Pattern.BROADCAST),
    ((3,), (1, 3), (1, 3), Pattern.BROADCAST),
    ((2, 1), (1, 3), (2, 3), Pattern.BROADCAST),
    ((), (4,), (4,), Pattern.BROADCAST),
])
def test_binary_shape_and_pattern(op, sa, sb, out, pattern):
    g = build([sa, sb], op)
    assert g.types["y"].shape == out
    assert g.patterns["y"] == pattern


@pytest.mark.parametrize("op", ["relu", "neg", "abs", "leaky_relu"])
def test_unary_ops_are_elementwise(op):
    g = build([(2, 3)], op)
    assert g.patterns["y"] == Pattern.ELEMWISE and g.types["y"].shape == (2, 3)
    assert build([(2, 3)], "clip", min=0, max=1).patterns["y"] == Pattern.ELEMWISE
    assert build([(2, 3)], "cast", dtype="int8").patterns["y"] == Pattern.ELEMWISE


@pytest.mark.parametrize("op", ["bias_add", "scale"])
def test_per_channel_ops_are_broadcast(op):
    g = build([(1, 5, 5, 4), (4,)], op)
    assert g.patterns["y"] == Pattern.BROADCAST and g.types["y"].shape == (1, 5, 5, 4)
    assert build([(4,), (4,)], op).patterns["y"] == Pattern.BROADCAST


def test_default_output_dtype_is_first_input():
    b = GraphBuilder("t")
    x, y = b.input("x", [2], "int8"), b.input("y", [2], "fixed<16,6>")
    assert str(b.type_of(b.add(x, y)).dtype) == "int8"
    assert str(b.type_of(b.mul(y, x)).dtype) == "fixed<16,6>"
    assert str(b.type_of(b.add(x, y, dtype="fixed<12,8,RND,SAT>")).dtype) == "fixed<12,8,RND,SAT>"


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------


def error_of(fn):
    with pytest.raises(HlsfuseError) as info:
        fn()
    return str(info.value)


def test_shape_errors():
    assert error_of(lambda: build([(2, 3), (4,)], "add")) == (
        "node 'y' (add): input shapes [2, 3] and [4] do not broadcast")
    assert error_of(lambda: build([(2, 4), (3,)], "bias_add")) == (
        "node 'y' (bias_add): input 'b' must have shape [4] (the last axis of 'x'), not [3]")
    assert error_of(lambda: build([(2, 4), (1, 4)], "bias_add")) == (
        "node 'y' (bias_add): input 'b' must have shape [4] (the last axis of 'x'), not [1, 4]")
    assert error_of(lambda: build([(2, 4), (2,)], "scale")) == (
        "node 'y' (scale): input 's' must have shape [4] (the last axis of 'x'), not [2]")
    assert error_of(lambda: build([(), (1,)], "scale")) == "node 'y' (scale): input 'x' must have at least 1 dim"


def test_family_errors():
    def mixed(op, tx, ty, **kw):
        b = GraphBuilder("t")
        names = [b.input("x", [4], tx)] + ([b.input("z", [4], ty)] if ty else [])
        return error_of(lambda: b.op(op, *names, name="y", **kw))

    for op in ("add", "sub", "mul", "maximum", "minimum", "bias_add", "scale"):
        assert mixed(op, "float32", "fixed<16,6>") == (
            f"node 'y' ({op}): inputs mix float32 and fixed-point types; insert a cast")
    assert mixed("add", "int8", "int8", dtype="float32") == (
        "node 'y' (add): output dtype float32 does not match the inputs' family; use cast to convert")
    assert mixed("relu", "float32", None, dtype="int8") == (
        "node 'y' (relu): output dtype int8 does not match the inputs' family; use cast to convert")
    assert mixed("leaky_relu", "fixed<8,4>", None, dtype="float32") == (
        "node 'y' (leaky_relu): output dtype float32 does not match the inputs' family; use cast to convert")
    assert mixed("clip", "float32", None, dtype="ufixed<8,3>", min=0, max=1) == (
        "node 'y' (clip): output dtype ufixed<8,3> does not match the inputs' family; use cast to convert")


WIDE = "; use narrower input types"


@pytest.mark.parametrize("op,types,needs", [
    ("mul", ("fixed<40,10>", "fixed<40,12>"), "80-bit signed"),
    ("mul", ("uint32", "uint32"), "64-bit unsigned"),
    ("scale", ("fixed<40,10>", "fixed<30,10>"), "70-bit signed"),
    ("add", ("ufixed<63,3>", "ufixed<63,3>"), "64-bit unsigned"),
    ("add", ("fixed<64,32>", "int8"), "65-bit signed"),
    ("bias_add", ("fixed<64,32>", "int8"), "65-bit signed"),
    ("sub", ("fixed<40,40>", "fixed<40,-20>"), "101-bit signed"),
    ("maximum", ("fixed<40,40>", "fixed<40,-20>"), "100-bit signed"),
    ("abs", ("fixed<64,32>",), "65-bit signed"),
    ("neg", ("fixed<64,32>",), "65-bit signed"),
    ("leaky_relu", ("fixed<50,10>",), "66-bit signed"),
])
def test_exact_intermediate_overflow_rejected(op, types, needs):
    shapes = [(2,), (2,)][: len(types)]
    b = GraphBuilder("t")
    names = [b.input(f"i{k}", s, t) for k, (s, t) in enumerate(zip(shapes, types))]
    assert error_of(lambda: b.op(op, *names, name="y")) == (
        f"node 'y' ({op}): the exact result needs a {needs} exact intermediate, more than the 64 bits "
        "hlsfuse computes with" + WIDE)


def test_widest_accepted_intermediates():
    for op, types in [("mul", ("int32", "uint32")), ("mul", ("fixed<32,4>", "fixed<32,30>")),
                      ("neg", ("ufixed<63,3>",)), ("add", ("fixed<63,3>", "fixed<63,3>"))]:
        b = GraphBuilder("t")
        names = [b.input(f"i{k}", (2,), t) for k, t in enumerate(types)]
        b.op(op, *names)


def test_attribute_errors():
    assert error_of(lambda: build([(2,)], "clip", min=2, max=1)) == (
        "node 'y' (clip): attribute 'min' (2.0) must not exceed 'max' (1.0)")
    assert error_of(lambda: build([(2,)], "clip", min=0)) == "node 'y' (clip): missing required attribute 'max'"
    assert error_of(lambda: build([(2,)], "leaky_relu", alpha=1.0)) == (
        "node 'y' (leaky_relu): attribute 'alpha' must be in [-1, 1) (it is a fixed<16,1,RND,SAT> constant), not 1.0")
    assert error_of(lambda: build([(2,)], "leaky_relu", alpha="x")) == (
        "node 'y' (leaky_relu): attribute 'alpha' must be a number, not 'x'")
    assert error_of(lambda: build([(2,), (2,)], "add", alpha=1)) == (
        "node 'y' (add): unknown attribute 'alpha' (expected: none)")
    b = GraphBuilder("t")
    x = b.input("x", [2])
    assert error_of(lambda: b.op("cast", x)) == (
        "node 'cast0' (cast): cast needs the node's 'dtype' field (the target type)")


# --------------------------------------------------------------------------
# hypothesis: binary ops versus exact Fraction arithmetic
# --------------------------------------------------------------------------


def round_to_int(v: Fraction, mode: str) -> int:
    """Round a rational to an integer as the ap_fixed quantization modes are described:
    TRN floor, TRN_ZERO toward zero; RND* round to nearest, ties up (RND), toward zero
    (RND_ZERO), down (RND_MIN_INF), away from zero (RND_INF) or to even (RND_CONV)."""
    low = math.floor(v)
    rest = v - low
    if mode == "TRN":
        return low
    if mode == "TRN_ZERO":
        return low if v >= 0 or rest == 0 else low + 1
    if rest != Fraction(1, 2):
        return low + (1 if rest > Fraction(1, 2) else 0)
    ties = {
        "RND": low + 1,
        "RND_ZERO": low + 1 if v < 0 else low,
        "RND_MIN_INF": low,
        "RND_INF": low + 1 if v > 0 else low,
        "RND_CONV": low + (low % 2),
    }
    return ties[mode]


def fit_range(q: int, t) -> int:
    """Overflow handling: WRAP keeps the low W bits, SAT clips, SAT_ZERO zeroes, SAT_SYM clips symmetrically."""
    lo, hi = t.raw_min, t.raw_max
    if t.overflow == "SAT_SYM" and t.signed:
        lo = -hi
    if lo <= q <= hi:
        return q
    if t.overflow == "WRAP":
        low_bits = q % (1 << t.width)
        return low_bits - (1 << t.width) if t.signed and low_bits > hi else low_bits
    if t.overflow == "SAT_ZERO":
        return 0
    return min(max(q, lo), hi)  # SAT, SAT_SYM


def exact_assign(v: Fraction, t) -> int:
    return fit_range(round_to_int(v * Fraction(2) ** t.frac, t.quant), t)


FRACTION_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": max,
    "minimum": min,
}

QUANT = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_MIN_INF", "RND_INF", "RND_CONV")
OVERFLOW = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")


@st.composite
def fixed_types(draw, max_width=24):
    """A graph type: any but a 1-bit signed SAT_SYM one, which graphs refuse (AMD's ap_fixed computes it as SAT)."""
    signed = draw(st.booleans())
    width = draw(st.integers(1, max_width))
    int_bits = draw(st.integers(-4, width + 6))
    overflow = draw(st.sampled_from(OVERFLOW))
    if signed and width == 1 and overflow == "SAT_SYM":
        overflow = "SAT"
    prefix = "" if signed else "u"
    return parse_dtype(f"{prefix}fixed<{width},{int_bits},{draw(st.sampled_from(QUANT))},{overflow}>")


def raw_values(t, shape):
    return arrays(np.int64, shape, elements=st.integers(t.raw_min, t.raw_max))


def value(raw: int, t) -> Fraction:
    return Fraction(int(raw)) * Fraction(2) ** -t.frac


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_binary_ops_equal_exact_fraction_model(data):
    op = data.draw(st.sampled_from(sorted(FRACTION_OPS)), label="op")
    shapes = data.draw(mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), label="shapes")
    ta, tb, tout = data.draw(fixed_types()), data.draw(fixed_types()), data.draw(fixed_types(max_width=32))
    a = data.draw(raw_values(ta, shapes.input_shapes[0]), label="a")
    b = data.draw(raw_values(tb, shapes.input_shapes[1]), label="b")
    got, t = run_node(op, [(ta, a), (tb, b)], dtype=tout)
    assert t == tout and got.shape == shapes.result_shape
    fn = FRACTION_OPS[op]
    ea, eb = np.broadcast_arrays(a, b)
    expected = [exact_assign(fn(value(x, ta), value(y, tb)), tout) for x, y in zip(ea.flat, eb.flat)]
    assert got.ravel().tolist() == expected


UNARY_FRACTION_OPS = {"relu": lambda v: max(v, 0), "neg": lambda v: -v, "abs": abs, "cast": lambda v: v}


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_unary_ops_equal_exact_fraction_model(data):
    op = data.draw(st.sampled_from(sorted(UNARY_FRACTION_OPS)), label="op")
    tin, tout = data.draw(fixed_types(max_width=32)), data.draw(fixed_types(max_width=32))
    x = data.draw(raw_values(tin, (data.draw(st.integers(1, 6)),)), label="x")
    got, _ = run_node(op, [(tin, x)], dtype=tout)
    assert got.tolist() == [exact_assign(UNARY_FRACTION_OPS[op](value(v, tin)), tout) for v in x]
