"""softmax, argmax and topk against independent float models and hand-checked cases."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlsfuse import OPS, GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference
from hlsfuse.types import to_float


def random_real(rng, shape, dtype):
    t = parse_dtype(dtype)
    return to_float(rng.integers(t.raw_min, t.raw_max, size=shape, endpoint=True), t)


def run_one(op, x, x_dtype="fixed<16,6>", out=None, **attrs):
    b = GraphBuilder("t", dtype=x_dtype)
    xin = b.input("x", np.shape(x))
    b.output(b.op(op, xin, name="y", dtype=out, **attrs))
    g = b.build()
    return reference.run(g, {"x": np.asarray(x)})["y"], g


def build_error(op, shape, dtype="fixed<16,6>", out=None, **attrs):
    b = GraphBuilder("t", dtype=dtype)
    xin = b.input("x", shape)
    with pytest.raises(HlsfuseError) as err:
        b.op(op, xin, name="n", dtype=out, **attrs)
    return str(err.value)


# --------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------


def float_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_interval(x, width, frac, table_bits, out_lsb):
    """Bounds on the fixed softmax of exact inputs ``x`` (type fixed<width, width-frac>),
    derived from the table resolution alone, with the default ufixed<18,1> tables.

    exp table: d = x - max needs width + 1 bits, so a bucket holds 2**shift raw steps and
    the entry is exp at the bucket's middle, off by at most half a bucket (h) in d, then
    rounded to 17 fractional bits (one step q, to be safe). The sum of n entries has
    18 + ceil(log2 n) bits and 17 fractional bits; the recip table is likewise off by
    half a bucket (hs) in s, then rounded. The product is assigned with TRN: up to one
    output step below.
    """
    n = x.shape[-1]
    q = 2.0**-17
    shift = max(0, width + 1 - table_bits)
    h = (2 ** (shift - 1) if shift else 0) * 2.0**-frac
    s_shift = max(0, 18 + math.ceil(math.log2(n)) - table_bits) if n > 1 else max(0, 18 - table_bits)
    hs = (2 ** (s_shift - 1) if s_shift else 0) * q
    d = x - x.max(axis=-1, keepdims=True)
    e_lo = np.maximum(np.exp(d - h) - q, 0)
    e_hi = np.minimum(np.exp(d + h) + q, 2 - q)
    s_lo, s_hi = e_lo.sum(-1, keepdims=True), e_hi.sum(-1, keepdims=True)
    r_lo = 1 / (s_hi + hs) - q
    r_hi = np.minimum(1 / (s_lo - hs) + q, 2 - q)
    return e_lo * r_lo - out_lsb, e_hi * r_hi


@pytest.mark.parametrize("table_bits", [8, 10, 16])
@pytest.mark.parametrize("dtype", ["fixed<16,6>", "fixed<10,4>"])
def test_softmax_fixed_within_table_resolution(table_bits, dtype):
    rng = np.random.default_rng(table_bits)
    t = parse_dtype(dtype)
    # a quarter of the range: spreads of a few units, so several table entries matter
    x = to_float(rng.integers(t.raw_min // 4, t.raw_max // 4, size=(4, 3, 10)), t)
    y, g = run_one("softmax", x, x_dtype=dtype, table_bits=table_bits)
    assert str(g.types["y"].dtype) == dtype
    p = float_softmax(x)
    lo, hi = softmax_interval(x, t.width, t.frac, table_bits, t.lsb)
    assert np.all(lo <= p) and np.all(p <= hi)  # the interval is a sound bound on the true value
    assert np.all(lo <= y) and np.all(y <= hi)
    bound = np.maximum(hi - p, p - lo)
    assert np.all(np.abs(y - p) <= bound)
    if (dtype, table_bits) == ("fixed<16,6>", 16):
        assert np.max(bound) < 0.004  # fine tables: the bound is tight, so the test has teeth


def test_exp_int_bits_saturates_d_and_spends_the_table_on_where_exp_is_not_zero():
    """16-bit scores with 6 integer bits: d = x - max(x) spans [-64, 0], so 1024 entries are buckets of 1/8 and
    the exp table's error is a few percent; saturating d at -16 (exp(-16) is below half of the exp type's LSB)
    makes them 1/32: the mean error against float drops more than threefold, the largest by a third."""
    from hlsfuse.ops.opaque import exp_int_bits_for, exp_window, softmax_tables

    assert exp_int_bits_for(parse_dtype("ufixed<18,1,RND,SAT>")) == 4
    assert exp_int_bits_for(parse_dtype("ufixed<8,1,RND,SAT>")) == 3  # exp(-8) < 2^-8
    rng = np.random.default_rng(4)
    x = rng.uniform(-4, 4, size=(64, 17))  # attention scores (a row whose max dominates is the recip table's)
    errors = {}
    for bits in (0, 4):
        y, g = run_one("softmax", x, x_dtype="fixed<16,6,RND,SAT>", out="ufixed<16,0,RND>", exp_int_bits=bits)
        errors[bits] = (np.max(np.abs(y - float_softmax(x))), np.mean(np.abs(y - float_softmax(x))))
        sig = g.sigs["y"]
        exp = softmax_tables(sig)[0]
        assert exp.in_fmt.int_bits == (7 if bits == 0 else 5) and len(exp.entries) == 1024
        assert (exp_window(sig) is None) == (bits == 0)
    assert errors[4][0] < errors[0][0] / 1.5 and errors[4][1] < errors[0][1] / 3, errors
    # d below the window reads the window's first entry, exp(-16) rounded: 0
    y, _ = run_one("softmax", np.array([0.0, -31.0, -17.0, -16.5]), x_dtype="fixed<16,6,RND,SAT>",
                   out="ufixed<16,0,RND>", exp_int_bits=4)
    np.testing.assert_array_equal(y[1:], 0.0)
    # a window as wide as d's own format changes nothing
    x = rng.uniform(-2, 2, size=(8, 6))
    a, _ = run_one("softmax", x, x_dtype="fixed<10,3>", exp_int_bits=3)
    b, _ = run_one("softmax", x, x_dtype="fixed<10,3>")
    np.testing.assert_array_equal(a, b)


def test_softmax_hand_checked():
    # fixed<4,2>: d has 5 bits, fewer than table_bits=16, so exp is exact: exp(0) = 1.0 = 2**17 raw.
    # s = 2.0 = 2**18 raw in an unsigned 19-bit format: shift 3, bucket middle 2**18 + 4,
    # 1/(2 + 2**-15) = 0.5 - 2**-17 + 2**-33 -> RND to 17 bits -> 65535 raw.
    # y = 2**17 * 65535 with 34 fractional bits = 65535 / 2**17 = 0.49999237
    x = np.array([0.0, 0.0])
    y, _ = run_one("softmax", x, x_dtype="fixed<4,2>", out="fixed<16,6>", table_bits=16)
    np.testing.assert_array_equal(y, [511 / 1024, 511 / 1024])  # TRN: floor(511.99)
    y, _ = run_one("softmax", x, x_dtype="fixed<4,2>", out="fixed<16,6,RND>", table_bits=16)
    np.testing.assert_array_equal(y, [0.5, 0.5])
    # 30 fractional bits drop only the 4 lowest of the product's 34, so the table entries show
    y, _ = run_one("softmax", x, x_dtype="fixed<4,2>", out="fixed<32,2>", table_bits=16)
    np.testing.assert_array_equal(y, [65535 * 2**13 / 2**30] * 2)


def test_softmax_hand_checked_unequal():
    # x = [1, 0]: d = [0, -1]; e = [2**17, round(exp(-1) * 2**17) = 48219]; s = 179291 raw;
    # bucket of 8: 179288..179295, middle 179292; r = round(2**34 / 179292) = 95821 (95820.61);
    # y = e * r with 34 fractional bits, TRN to 10: floor(748.60) = 748, floor(275.40) = 275
    e1 = round(math.exp(-1) * 2**17)
    assert e1 == 48219
    s = 2**17 + e1
    middle = (s >> 3 << 3) + 4
    r = round(2**34 / middle)
    assert (middle, r) == (179292, 95821)
    assert [math.floor(2**17 * r / 2**24), math.floor(e1 * r / 2**24)] == [748, 275]
    expected = [748 / 1024, 275 / 1024]
    y, _ = run_one("softmax", np.array([1.0, 0.0]), x_dtype="fixed<4,2>", out="fixed<16,6>", table_bits=16)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_allclose(y, float_softmax(np.array([1.0, 0.0])), atol=2**-10)
    y, _ = run_one("softmax", np.array([1.0, 0.0]), x_dtype="fixed<4,2>", out="fixed<32,2>", table_bits=16)
    np.testing.assert_array_equal(y * 2**30, [2**17 * r // 16, e1 * r // 16])


def test_softmax_large_inputs_do_not_overflow():
    # the max is subtracted first: values near the top of fixed<16,6> still give a valid row
    x = np.array([[31.5, 31.0, -32.0]])
    y, _ = run_one("softmax", x, table_bits=16)
    np.testing.assert_allclose(y, float_softmax(x), atol=0.002)


def test_softmax_float32():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 7)) * 5).astype(np.float32)
    y, g = run_one("softmax", x, x_dtype="float32")
    assert y.dtype == np.float32 and g.types["y"].dtype.is_float
    np.testing.assert_allclose(y, float_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)


def test_softmax_is_opaque_and_buffered():
    _, g = run_one("softmax", np.zeros((2, 3)))
    assert g.patterns["y"] == Pattern.OPAQUE
    assert OPS["softmax"].buffer_reason(g.sigs["y"]) == "softmax needs the whole row (max and sum) before emitting"


SOFTMAX_ERRORS = [
    ({"exp_dtype": "float32"}, (2, 3), "fixed<16,6>", "attribute 'exp_dtype' must be a fixed-point type, not float32"),
    (
        {"recip_dtype": "float32"},
        (2, 3),
        "fixed<16,6>",
        "attribute 'recip_dtype' must be a fixed-point type, not float32",
    ),
    ({"table_bits": 17}, (2, 3), "fixed<16,6>", "attribute 'table_bits' must be 1..16, not 17"),
    ({"table_bits": 0}, (2, 3), "fixed<16,6>", "attribute 'table_bits' must be 1..16, not 0"),
    ({}, (), "fixed<16,6>", "input 'x' must have at least 1 dim"),
    (
        {},
        (2, 3),
        "fixed<64,32>",
        "the difference x - max(x) needs a 65-bit signed exact intermediate, more than the 64 bits "
        "hlsfuse computes with; use narrower input types",
    ),
    (
        {"exp_dtype": "ufixed<40,1>", "recip_dtype": "ufixed<40,1>"},
        (2, 3),
        "fixed<16,6>",
        "the exact product e * r needs a 80-bit unsigned exact intermediate, more than the 64 bits "
        "hlsfuse computes with; use narrower input types",
    ),
    (
        {"exp_dtype": "ufixed<62,1>", "recip_dtype": "ufixed<2,1>"},
        (2, 4),
        "fixed<16,6>",
        "the exact sum of exponentials needs a 64-bit unsigned exact intermediate, more than the 64 bits "
        "hlsfuse computes with; use narrower input types",
    ),
]


@pytest.mark.parametrize("attrs, shape, dtype, message", SOFTMAX_ERRORS)
def test_softmax_errors(attrs, shape, dtype, message):
    assert build_error("softmax", shape, dtype, **attrs) == f"node 'n' (softmax): {message}"


def test_softmax_output_family_error():
    message = build_error("softmax", (2, 3), out="float32")
    assert message == "node 'n' (softmax): output dtype float32 does not match the inputs' family; use cast to convert"


# --------------------------------------------------------------------------
# argmax
# --------------------------------------------------------------------------


def naive_argmax(x, axis):
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape[:-1], dtype=np.int64)
    for index in np.ndindex(*moved.shape[:-1]):
        row = list(moved[index])
        out[index] = row.index(max(row))  # first occurrence
    return out


def test_argmax_first_index_of_ties():
    y, g = run_one("argmax", np.array([[3.0, 7.0, 7.0, 1.0], [-2.0, -2.0, -3.0, -2.0]]))
    np.testing.assert_array_equal(y, [1, 0])
    assert str(g.types["y"].dtype) == "int32"
    assert g.types["y"].shape == (2,)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_axes(axis, keepdims):
    rng = np.random.default_rng(2)
    x = random_real(rng, (3, 4, 5), "fixed<4,2>")  # 16 values: many ties
    y, g = run_one("argmax", x, x_dtype="fixed<4,2>", axis=axis, keepdims=keepdims)
    expected = naive_argmax(x, axis)
    if keepdims:
        expected = np.expand_dims(expected, axis)
    assert g.types["y"].shape == expected.shape
    np.testing.assert_array_equal(y, expected)


def test_argmax_float_input_and_output_types():
    x = np.array([[0.5, -1.0, 2.5], [4.0, 4.0, 0.0]], dtype=np.float32)
    y, g = run_one("argmax", x, x_dtype="float32")
    np.testing.assert_array_equal(y, [2, 0])
    assert str(g.types["y"].dtype) == "int32"
    y, g = run_one("argmax", x, x_dtype="float32", out="float32")
    assert y.dtype == np.float32 and y.tolist() == [2.0, 0.0]
    y, g = run_one("argmax", x, x_dtype="float32", out="uint8")
    assert y.tolist() == [2, 0]


def test_argmax_buffering_depends_on_the_axis():
    for axis, reason in [
        (-1, None),
        (2, None),
        (1, "argmax over axis 1, not the innermost, needs the whole tensor before emitting"),
        (-3, "argmax over axis 0, not the innermost, needs the whole tensor before emitting"),
    ]:
        _, g = run_one("argmax", np.zeros((2, 3, 4)), axis=axis)
        assert OPS["argmax"].buffer_reason(g.sigs["y"]) == reason
        assert g.patterns["y"] == Pattern.OPAQUE


ARGMAX_ERRORS = [
    ({"axis": 3}, (2, 3, 4), None, "attribute 'axis' (3) is out of range for 3 dims"),
    ({"axis": -4}, (2, 3, 4), None, "attribute 'axis' (-4) is out of range for 3 dims"),
    ({}, (), None, "input 'x' must have at least 1 dim"),
    ({}, (2, 300), "uint8", "output dtype uint8 cannot hold indices up to 299"),
    ({"axis": 0}, (5, 3), "fixed<8,10>", "output dtype fixed<8,10> cannot hold indices up to 4"),
    ({"keepdims": 1}, (2, 3), None, "attribute 'keepdims' must be true or false, not 1"),
]


@pytest.mark.parametrize("attrs, shape, out, message", ARGMAX_ERRORS)
def test_argmax_errors(attrs, shape, out, message):
    assert build_error("argmax", shape, out=out, **attrs) == f"node 'n' (argmax): {message}"


# --------------------------------------------------------------------------
# topk
# --------------------------------------------------------------------------


def naive_topk(x, k):
    idx = np.zeros((*x.shape[:-1], k), dtype=np.int64)
    for index in np.ndindex(*x.shape[:-1]):
        ranked = sorted((-value, i) for i, value in enumerate(x[index]))  # largest first, then lower index
        idx[index] = [i for _, i in ranked[:k]]
    return idx


def test_topk_hand_checked_ties():
    x = np.array([5.0, 1.0, 5.0, 3.0, 5.0])
    idx, g = run_one("topk", x, k=4, ret="indices")
    assert idx.tolist() == [0, 2, 4, 3]
    assert str(g.types["y"].dtype) == "int32" and g.types["y"].shape == (4,)
    vals, g = run_one("topk", x, k=4)
    assert vals.tolist() == [5.0, 5.0, 5.0, 3.0]
    assert str(g.types["y"].dtype) == "fixed<16,6>"


@settings(max_examples=50, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    seed=st.integers(0, 1000),
    data=st.data(),
)
def test_topk_matches_sorting(shape, seed, data):
    k = data.draw(st.integers(1, shape[-1]))
    x = random_real(np.random.default_rng(seed), shape, "fixed<4,2>")
    idx, _ = run_one("topk", x, x_dtype="fixed<4,2>", k=k, ret="indices")
    vals, _ = run_one("topk", x, x_dtype="fixed<4,2>", k=k, ret="values")
    expected = naive_topk(x, k)
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, expected, axis=-1))


def test_topk_extreme_raw_values():
    # ~x reverses the order without overflow, even at the int64 minimum of a 64-bit type
    b = GraphBuilder("t", dtype="fixed<64,64>")
    x = b.input("x", (4,))
    b.output(b.topk(x, k=4, name="v"), b.topk(x, k=4, ret="indices", name="i"))
    raw = np.array([-(2**63), 2**63 - 1, 0, -(2**63)], dtype=np.int64)
    out = reference.run_raw(b.build(), {"x": raw})
    assert out["v"].tolist() == [2**63 - 1, 0, -(2**63), -(2**63)]
    assert out["i"].tolist() == [1, 2, 0, 3]


def test_topk_float32():
    x = np.array([[0.5, -np.float32(1e30), 2.5, 2.5]], dtype=np.float32)
    vals, g = run_one("topk", x, x_dtype="float32", k=3)
    assert vals.dtype == np.float32 and vals.tolist() == [[2.5, 2.5, 0.5]]
    idx, g = run_one("topk", x, x_dtype="float32", k=3, ret="indices")
    assert idx.tolist() == [[2, 3, 0]] and str(g.types["y"].dtype) == "int32"


def test_topk_is_opaque_and_buffered():
    _, g = run_one("topk", np.zeros((2, 5)), k=2)
    assert g.patterns["y"] == Pattern.OPAQUE
    assert OPS["topk"].buffer_reason(g.sigs["y"]) == "topk sorts the whole last axis before emitting"


TOPK_ERRORS = [
    ({"k": 6}, (2, 5), None, "attribute 'k' (6) exceeds the size of the last axis (5)"),
    ({"k": 0}, (2, 5), None, "attribute 'k' must be at least 1, not 0"),
    ({}, (2, 5), None, "missing required attribute 'k'"),
    ({"k": 2, "ret": "both"}, (2, 5), None, "attribute 'ret' must be 'values' or 'indices', not 'both'"),
    ({"k": 1}, (), None, "input 'x' must have at least 1 dim"),
    ({"k": 2, "ret": "indices"}, (2, 300), "int8", "output dtype int8 cannot hold indices up to 299"),
    (
        {"k": 2},
        (2, 5),
        "float32",
        "output dtype float32 does not match the inputs' family; use cast to convert",
    ),
]


@pytest.mark.parametrize("attrs, shape, out, message", TOPK_ERRORS)
def test_topk_errors(attrs, shape, out, message):
    assert build_error("topk", shape, out=out, **attrs) == f"node 'n' (topk): {message}"
