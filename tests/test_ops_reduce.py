"""Reductions (sum, mean, max) and global_avg_pool.

Fixed-point sums and maxima are exact; a mean is the exact quotient sum / n assigned
once to the output type. Means are compared bit for bit with the independent
``fractions.Fraction`` model of tests/test_types.py (exact quotient, rounding per
quantization mode, overflow mode).
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_types import model_from_values

from hlsfuse import OPS, GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference
from hlsfuse.ops.reduce import count
from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES

FIX = "fixed<16,6>"
WIDE = "fixed<28,18>"  # same 10 fractional bits as FIX: sums need no rounding


def build_one(op, shape, dtype=FIX, out_dtype=None, **attrs):
    b = GraphBuilder("g", dtype=dtype)
    x = b.input("x", shape)
    attrs = {k: v for k, v in attrs.items() if v is not None}  # None stands for "use the default"
    y = b.op(op, x, name="y", dtype=out_dtype, **attrs)
    b.output(y)
    return b.build()


def run_one(op, shape, dtype=FIX, out_dtype=None, seed=0, **attrs):
    """(graph, real input, real output) on seeded random inputs."""
    graph = build_one(op, shape, dtype, out_dtype, **attrs)
    inputs = reference.random_inputs(graph, seed)
    return graph, inputs["x"], reference.run(graph, inputs)["y"]


def run_raw(op, raw, dtype, out_dtype=None, **attrs):
    graph = build_one(op, np.shape(raw), dtype, out_dtype, **attrs)
    return reference.run_raw(graph, {"x": np.asarray(raw, dtype=np.int64)})["y"]


def error_of(op, shape, dtype=FIX, out_dtype=None, **attrs) -> str:
    with pytest.raises(HlsfuseError) as info:
        build_one(op, shape, dtype, out_dtype, **attrs)
    return str(info.value)


def np_axes(axes):
    return None if axes is None else tuple(axes)


AXES = [None, [0], [-1], [0, 2], [2, -3], [1]]
SHAPE = (3, 5, 4)


# --------------------------------------------------------------------------
# Against numpy on real values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", AXES)
def test_sum_fixed_is_exact(axes, keepdims):
    graph, x, out = run_one("sum", SHAPE, out_dtype=WIDE, axes=axes, keepdims=keepdims)
    expected = np.sum(x, axis=np_axes(axes), keepdims=keepdims)
    assert out.shape == expected.shape == graph.types["y"].shape
    np.testing.assert_array_equal(out, expected)


def test_sum_default_type_is_input_type():
    graph, x, out = run_one("sum", (2, 3), axes=[1], seed=3)
    assert graph.types["y"].dtype == parse_dtype(FIX)
    # fixed<16,6> wraps outside [-32, 32); sums of 3 values in [-8, 8] stay inside
    np.testing.assert_array_equal(out, np.sum(x, axis=1))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", AXES)
def test_max_fixed_is_exact(axes, keepdims):
    graph, x, out = run_one("max", SHAPE, axes=axes, keepdims=keepdims)
    np.testing.assert_array_equal(out, np.max(x, axis=np_axes(axes), keepdims=keepdims))


def model_mean(raw, axes, keepdims, in_dtype, out_dtype) -> np.ndarray:
    """The mean's raw values from the exact quotients sum / n (Python ints and Fractions)."""
    in_type, out_type = parse_dtype(in_dtype), parse_dtype(out_dtype)
    total = np.sum(np.asarray(raw, dtype=object), axis=axes, keepdims=keepdims)
    n = np.size(raw) // np.size(total)
    scale = Fraction(2) ** in_type.frac
    quotients = [Fraction(int(s), n) / scale for s in np.ravel(total)]
    return model_from_values(quotients, out_type).reshape(np.shape(total))


def random_raw(dtype, shape, seed):
    """Raw values spread over the whole range of ``dtype``."""
    t = parse_dtype(dtype)
    return np.random.default_rng(seed).integers(t.raw_min, t.raw_max, size=shape, endpoint=True)


# every quantization mode with every overflow mode (7 x 4 pairs)
MODE_PAIRS = [(q, o) for q in QUANT_MODES for o in OVERFLOW_MODES]


@pytest.mark.parametrize("quant, overflow", MODE_PAIRS)
def test_mean_fixed_is_bit_exact_every_mode(quant, overflow):
    """Out types with fewer (F = 6), one more (F = 11) and far more (F = 24) fractional bits than the
    fixed<16,6> input (F = 10), narrow enough that means overflow, and an unsigned one."""
    x = random_raw(FIX, SHAPE, seed=len(quant) + 7 * len(overflow))
    for out_base in ("fixed<9,3", "fixed<14,3", "fixed<30,6", "ufixed<6,4"):
        out_dtype = f"{out_base},{quant},{overflow}>"
        for axes in AXES:
            for keepdims in (False, True):
                out = run_raw("mean", x, FIX, out_dtype, axes=axes, keepdims=keepdims)
                expected = model_mean(x, np_axes(axes), keepdims, FIX, out_dtype)
                np.testing.assert_array_equal(out, expected, err_msg=f"{out_dtype}, axes={axes}")


@pytest.mark.parametrize("in_dtype, out_dtype", [("int8", None), ("int8", "fixed<8,4,RND_CONV>"),
                                                 ("uint8", "uint8"), ("fixed<8,3>", "int16"),
                                                 ("ufixed<10,2>", "fixed<12,4,RND_INF,SAT>")])
def test_mean_default_and_mixed_types_bit_exact(in_dtype, out_dtype):
    x = random_raw(in_dtype, SHAPE, seed=11)
    for axes in AXES:
        out = run_raw("mean", x, in_dtype, out_dtype, axes=axes)
        expected = model_mean(x, np_axes(axes), False, in_dtype, out_dtype or in_dtype)
        np.testing.assert_array_equal(out, expected, err_msg=f"{out_dtype}, axes={axes}")


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", AXES)
def test_float32(axes, keepdims):
    graph, x, out = run_one("sum", SHAPE, "float32", axes=axes, keepdims=keepdims)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.sum(x.astype(np.float64), axis=np_axes(axes), keepdims=keepdims), rtol=1e-6)
    graph, x, out = run_one("mean", SHAPE, "float32", axes=axes, keepdims=keepdims)
    expected = np.mean(x, axis=np_axes(axes), keepdims=keepdims, dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    graph, x, out = run_one("max", SHAPE, "float32", axes=axes, keepdims=keepdims)
    np.testing.assert_array_equal(out, np.max(x, axis=np_axes(axes), keepdims=keepdims))


# --------------------------------------------------------------------------
# Bit-exact cases
# --------------------------------------------------------------------------


def test_sum_max_raw():
    assert run_raw("sum", [1, 2, 3], "int8").tolist() == 6
    assert run_raw("sum", [100, 100], "int8").tolist() == -56  # wraps in the default int8 output
    assert run_raw("sum", [100, 100], "int8", "int16").tolist() == 200
    assert run_raw("sum", [[1, 2], [3, 4]], "int8", axes=[0]).tolist() == [4, 6]
    assert run_raw("sum", [[1, 2], [3, 4]], "int8", axes=[-1], keepdims=True).tolist() == [[3], [7]]
    # fixed<8,4> raw 24 (1.5) + 9 (0.5625) = 33 (2.0625) -> int8 truncates to 2
    assert run_raw("sum", [24, 9], "fixed<8,4>", "int8").tolist() == 2
    assert run_raw("max", [-3, 5, 2], "int8").tolist() == 5
    assert run_raw("max", [[-3, -5], [-4, -1]], "int8", axes=[1]).tolist() == [-3, -1]
    assert run_raw("max", [24, 9], "fixed<8,4>", "int8").tolist() == 1


def test_mean_raw_hand_checked():
    # exact quotients stay exact under the default TRN
    assert run_raw("mean", [5, 5, 5, 5, 5], "int8").tolist() == 5
    assert run_raw("mean", [-3, -3, -3], "int8").tolist() == -3
    assert run_raw("mean", [-7, 9, -7, 9, -7, 9, -7], "int8").tolist() == -1
    # 3 / 2 = 1.5 in fixed<8,4> is 24
    assert run_raw("mean", [1, 2], "int8", "fixed<8,4>").tolist() == 24
    # 2 / 3 = 0.667 = 10.67 / 16
    assert run_raw("mean", [1, 1, 0], "int8", "fixed<8,4>").tolist() == 10  # TRN
    assert run_raw("mean", [1, 1, 0], "int8", "fixed<8,4,RND>").tolist() == 11
    assert run_raw("mean", [-1, 0, 0], "int8", "fixed<8,4>").tolist() == -6  # floor(-5.33)
    assert run_raw("mean", [-1, 0, 0], "int8", "fixed<8,4,RND_ZERO>").tolist() == -5
    assert run_raw("mean", [255, 255, 254], "uint8").tolist() == 254
    assert run_raw("mean", [[1, 2], [4, 4]], "int8", "fixed<8,4>", axes=[1]).tolist() == [24, 64]
    assert run_raw("mean", [100, 100, 100], "int8", "fixed<8,4,TRN,SAT>").tolist() == 127  # saturates


# -3 / 2, -5 / 2, -7 / 3 and -5 / 3 as int8 means: ties and non-ties below zero in every mode
NEGATIVE_MEANS = {
    "TRN": [-2, -3, -3, -2],
    "TRN_ZERO": [-1, -2, -2, -1],
    "RND": [-1, -2, -2, -2],
    "RND_ZERO": [-1, -2, -2, -2],
    "RND_MIN_INF": [-2, -3, -2, -2],
    "RND_INF": [-2, -3, -2, -2],
    "RND_CONV": [-2, -2, -2, -2],
}


@pytest.mark.parametrize("quant", QUANT_MODES)
def test_mean_negative_sums_every_mode(quant):
    out_dtype = f"fixed<8,8,{quant}>"
    pairs = run_raw("mean", [[-1, -2], [-2, -3]], "int8", out_dtype, axes=[1]).tolist()
    triples = run_raw("mean", [[-2, -2, -3], [-1, -2, -2]], "int8", out_dtype, axes=[1]).tolist()
    assert pairs + triples == NEGATIVE_MEANS[quant]


@pytest.mark.parametrize("out_dtype", ["fixed<16,6>", "fixed<24,8,RND>", "fixed<10,6,RND_CONV,SAT>"])
@pytest.mark.parametrize("n", [1, 3, 5, 7, 12, 49, 100])
def test_mean_matches_the_model_for_many_counts(n, out_dtype):
    raw = np.random.default_rng(n).integers(-6000, 6000, size=(4, n))
    out = run_raw("mean", raw, FIX, out_dtype, axes=[1])
    np.testing.assert_array_equal(out, model_mean(raw, 1, False, FIX, out_dtype))
    assert count(build_one("mean", (4, n), FIX, out_dtype, axes=[1]).sigs["y"]) == n


def test_mean_at_the_64_bit_limit():
    # int16 over n = 3: the sum has 18 bits; 45 output fractional bits put it on 46 (one more for the
    # rounding), so the dividend needs exactly 64 bits
    rows = [[-32768] * 3, [32767] * 3, [-32768, 32767, 5], [-32768, -32768, -32767]]
    for quant in ("TRN", "RND_CONV"):
        out_dtype = f"fixed<64,19,{quant}>"
        out = run_raw("mean", rows, "int16", out_dtype, axes=[1])
        np.testing.assert_array_equal(out, model_mean(rows, 1, False, "int16", out_dtype))
        assert out[0] == -32768 * 2**45 and out[1] == 32767 * 2**45  # exact quotients stay exact
    # one more output fractional bit needs 65 bits
    assert error_of("mean", (2, 3), "int16", "fixed<64,18>", axes=[1]) == (
        "node 'y' (mean): the division of the exact sum by n needs a 65-bit signed exact intermediate, more than "
        "the 64 bits hlsfuse computes with; use narrower input types"
    )


# --------------------------------------------------------------------------
# global_avg_pool
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, out_dtype", [(FIX, None), (FIX, "fixed<18,6,RND>"), ("int8", None),
                                              ("int8", "fixed<16,8,RND_ZERO>"), ("int8", "fixed<6,2,RND_INF,SAT_SYM>")])
def test_global_avg_pool_fixed_bit_exact(dtype, out_dtype):
    x = random_raw(dtype, (2, 3, 5, 4), seed=5)
    graph = build_one("global_avg_pool", x.shape, dtype, out_dtype)
    assert graph.types["y"].shape == (2, 1, 1, 4)
    assert graph.patterns["y"] == Pattern.OUT_ELEMWISE_FUSABLE
    assert count(graph.sigs["y"]) == 15
    out = reference.run_raw(graph, {"x": x})["y"]
    np.testing.assert_array_equal(out, model_mean(x, (1, 2), True, dtype, out_dtype or dtype))


def test_global_avg_pool_equals_mean_over_hw():
    b = GraphBuilder("g", dtype=FIX)
    x = b.input("x", (2, 3, 3, 4))
    b.output(b.global_avg_pool(x, name="p"), b.mean(x, axes=[1, 2], keepdims=True, name="m"))
    graph = b.build()
    out = reference.run(graph, reference.random_inputs(graph, 2))
    np.testing.assert_array_equal(out["p"], out["m"])


def test_global_avg_pool_raw_and_float():
    # one image 2x2, one channel: (1 + 2 + 3 + 5) / 4 = 2.75 -> int8 truncates to 2; fixed<8,4> holds 44
    raw = np.array([1, 2, 3, 5]).reshape(1, 2, 2, 1)
    assert run_raw("global_avg_pool", raw, "int8").tolist() == [[[[2]]]]
    assert run_raw("global_avg_pool", raw, "int8", "fixed<8,4>").tolist() == [[[[44]]]]
    # (-3 * 6) / 6 = -3 exactly, in a 2x3 image
    assert run_raw("global_avg_pool", np.full((1, 2, 3, 1), -3), "int8").tolist() == [[[[-3]]]]
    graph, x, out = run_one("global_avg_pool", (1, 4, 4, 3), "float32")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.mean(x, axis=(1, 2), keepdims=True, dtype=np.float64).astype(np.float32))


# --------------------------------------------------------------------------
# Patterns, needs_buffer, errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean", "max", "global_avg_pool"])
def test_pattern_and_needs_buffer(op):
    graph = build_one(op, (1, 2, 3, 4))
    expected = Pattern.OUT_ELEMWISE_FUSABLE if op == "global_avg_pool" else Pattern.COMM_REDUCE
    assert graph.patterns["y"] == expected
    assert OPS[op].buffer_reason(graph.sigs["y"]) is None


ERRORS = [
    (("sum", SHAPE), {"axes": [3]},
     "node 'y' (sum): attribute 'axes' values must be in -3..2 for a 3-dim input, not 3"),
    (("mean", SHAPE), {"axes": [-4]},
     "node 'y' (mean): attribute 'axes' values must be in -3..2 for a 3-dim input, not -4"),
    (("max", SHAPE), {"axes": [1, -2]}, "node 'y' (max): attribute 'axes' names axis 1 more than once"),
    (("sum", SHAPE), {"axes": []},
     "node 'y' (sum): attribute 'axes' must name at least one axis (omit it to reduce all axes)"),
    (("sum", SHAPE), {"axes": [0.5]}, "node 'y' (sum): attribute 'axes' must be a list of integers, not [0.5]"),
    (("mean", SHAPE), {"keepdims": 1}, "node 'y' (mean): attribute 'keepdims' must be true or false, not 1"),
    (("max", SHAPE), {"axis": 1}, "node 'y' (max): unknown attribute 'axis' (expected: axes, keepdims)"),
    (("sum", ()), {"axes": [0]}, "node 'y' (sum): attribute 'axes' must be empty for a 0-dim input, not [0]"),
    (("sum", (4,), "fixed<64,32>"), {},
     "node 'y' (sum): the exact sum needs a 66-bit signed exact intermediate, more than the 64 bits "
     "hlsfuse computes with; use narrower input types"),
    (("sum", (9,), "ufixed<60,30>"), {},
     "node 'y' (sum): the exact sum needs a 64-bit unsigned exact intermediate, more than the 64 bits "
     "hlsfuse computes with; use narrower input types"),
    # n = 16: the sum is fixed<44,24>; 40 output fractional bits put it on 41 (21 more): 65 bits
    (("mean", (16,), "fixed<40,20>", "fixed<48,8>"), {},
     "node 'y' (mean): the division of the exact sum by n needs a 65-bit signed exact intermediate, more than the "
     "64 bits hlsfuse computes with; use narrower input types"),
    (("mean", (4,), "fixed<64,32>"), {},
     "node 'y' (mean): the exact sum needs a 66-bit signed exact intermediate, more than the 64 bits "
     "hlsfuse computes with; use narrower input types"),
    # n = 16: the sum is fixed<36,20>; 56 output fractional bits put it on 57 (41 more): 77 bits
    (("global_avg_pool", (1, 4, 4, 2), "fixed<32,16>", "fixed<64,8>"), {},
     "node 'y' (global_avg_pool): the division of the exact sum by n needs a 77-bit signed exact intermediate, "
     "more than the 64 bits hlsfuse computes with; use narrower input types"),
    (("global_avg_pool", (1, 8, 8, 2), "fixed<60,30>"), {},
     "node 'y' (global_avg_pool): the exact sum needs a 66-bit signed exact intermediate, more than the "
     "64 bits hlsfuse computes with; use narrower input types"),
    (("global_avg_pool", (4, 4, 2)), {}, "node 'y' (global_avg_pool): input 'x' must have 4 dims (NHWC), not 3"),
    (("mean", SHAPE, FIX, "float32"), {},
     "node 'y' (mean): output dtype float32 does not match the inputs' family; use cast to convert"),
    (("global_avg_pool", (1, 2, 2, 1), "float32", "int8"), {},
     "node 'y' (global_avg_pool): output dtype int8 does not match the inputs' family; use cast to convert"),
]


@pytest.mark.parametrize("args, attrs, message", ERRORS, ids=[m.split(": ", 1)[1][:50] for _, _, m in ERRORS])
def test_error_messages(args, attrs, message):
    assert error_of(*args, **attrs) == message


def test_max_needs_no_wider_intermediate():
    # the widest type passes for max although its sum would not fit
    graph = build_one("max", (1000,), "fixed<64,32>")
    assert graph.types["y"].shape == ()
    raw = np.array([-(1 << 63), (1 << 63) - 1, 0] * 333 + [5])
    assert reference.run_raw(graph, {"x": raw})["y"] == (1 << 63) - 1


# --------------------------------------------------------------------------
# Hypothesis: random shapes and axes
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data(),
       keepdims=st.booleans(), seed=st.integers(0, 99))
def test_reductions_random(shape, data, keepdims, seed):
    axes = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    signed = data.draw(st.lists(st.booleans(), min_size=len(axes or []), max_size=len(axes or [])))
    if axes is not None:  # name some axes from the end
        axes = [a - len(shape) if neg else a for a, neg in zip(axes, signed)]
    kw = {"keepdims": keepdims} if axes is None else {"axes": axes, "keepdims": keepdims}
    b = GraphBuilder("g", dtype=FIX)
    x = b.input("x", shape)
    b.output(b.sum(x, name="s", dtype=WIDE, **kw), b.max(x, name="m", **kw), b.mean(x, name="a", **kw))
    graph = b.build()
    raw = random_raw(FIX, shape, seed)
    out = reference.run_raw(graph, {"x": raw})
    np_kw = {"axis": np_axes(axes), "keepdims": keepdims}
    np.testing.assert_array_equal(out["s"], np.sum(raw, **np_kw))
    np.testing.assert_array_equal(out["m"], np.max(raw, **np_kw))
    np.testing.assert_array_equal(out["a"], model_mean(raw, np_axes(axes), keepdims, FIX, FIX))
    assert count(graph.sigs["a"]) == raw.size // np.sum(raw, **np_kw).size
    assert math.prod(out["a"].shape) == np.mean(raw, **np_kw).size
