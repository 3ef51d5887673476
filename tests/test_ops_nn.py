"""conv2d, dense, matmul, max_pool2d and avg_pool2d against independent models.

The independent models are naive Python loops over real values (small shapes),
so they share no code with the vectorised reference. Fixed-point averages are
compared bit for bit with the ``fractions.Fraction`` model of tests/test_types.py
applied to each window's exact mean.
"""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_types import model_from_values

from hlsfuse import OPS, GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference
from hlsfuse.ops.nn import exact_matmul, pool_counts
from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES, to_float

WIDE = "fixed<40,20>"  # holds every exact result below without rounding


def random_real(rng, shape, dtype):
    """Real values exactly representable in ``dtype``, spread over its whole range."""
    t = parse_dtype(dtype)
    return to_float(rng.integers(t.raw_min, t.raw_max, size=shape, endpoint=True), t)


def run_one(op, x, *consts, x_dtype="fixed<8,3>", c_dtype="fixed<8,1>", out=None, **attrs):
    """Build x -> op(x, consts...) and run it; returns (output values, graph, node name)."""
    b = GraphBuilder("t", dtype=x_dtype)
    xin = b.input("x", x.shape)
    names = [b.constant(f"c{i}", c, dtype=c_dtype) for i, c in enumerate(consts)]
    y = b.op(op, xin, *names, name="y", dtype=out, **attrs)
    b.output(y)
    g = b.build()
    return reference.run(g, {"x": x})["y"], g, y


def build_error(op, shapes, dtypes=("fixed<16,6>", "fixed<16,6>"), out=None, **attrs):
    """The message raised when adding ``op`` on inputs of ``shapes``."""
    b = GraphBuilder("t")
    names = [b.input(f"i{k}", s, dtype=d) for k, (s, d) in enumerate(zip(shapes, dtypes))]
    with pytest.raises(HlsfuseError) as err:
        b.op(op, *names, name="n", dtype=out, **attrs)
    return str(err.value)


# --------------------------------------------------------------------------
# naive models
# --------------------------------------------------------------------------


def naive_conv(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    n, h, wd, cin = x.shape
    kh, kw, cg, cout = w.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    per_group = cout // groups
    y = np.zeros((n, oh, ow, cout))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for co in range(cout):
                    g = co // per_group
                    acc = 0
                    for u in range(kh):
                        for v in range(kw):
                            r = i * strides[0] - top + u * dilation[0]
                            c = j * strides[1] - left + v * dilation[1]
                            if 0 <= r < h and 0 <= c < wd:
                                for ci in range(cg):
                                    acc += x[b, r, c, g * cg + ci] * w[u, v, ci, co]
                    y[b, i, j, co] = acc
    return y


def naive_pool(x, pool, strides, padding, reduce):
    """Apply ``reduce(list of real values in the window, window size)`` per output position."""
    n, h, w, c = x.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - pool[0]) // strides[0] + 1
    ow = (w + left + right - pool[1]) // strides[1] + 1
    y = np.zeros((n, oh, ow, c))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    vals = [
                        x[b, r, q, ch]
                        for r in range(i * strides[0] - top, i * strides[0] - top + pool[0])
                        for q in range(j * strides[1] - left, j * strides[1] - left + pool[1])
                        if 0 <= r < h and 0 <= q < w
                    ]
                    y[b, i, j, ch] = reduce(vals, pool[0] * pool[1])
    return y


# --------------------------------------------------------------------------
# conv2d
# --------------------------------------------------------------------------

CONV_CASES = {
    "plain 3x3": {"x": (1, 5, 6, 3), "w": (3, 3, 3, 4)},
    "batch, 1x1": {"x": (2, 3, 4, 5), "w": (1, 1, 5, 2)},
    "strided, asymmetric pads": {"x": (1, 7, 6, 2), "w": (3, 2, 2, 3), "strides": [2, 3], "padding": [1, 0, 2, 1]},
    "dilated": {"x": (1, 7, 8, 2), "w": (3, 3, 2, 2), "dilation": [2, 3], "padding": [2, 3, 2, 3]},
    "grouped": {"x": (1, 5, 5, 4), "w": (3, 3, 2, 6), "groups": 2, "padding": [1, 1, 1, 1]},
    "depthwise": {"x": (1, 6, 5, 3), "w": (3, 3, 1, 3), "groups": 3, "padding": [1, 1, 1, 1]},
    "depthwise x2, strided": {
        "x": (2, 6, 6, 3),
        "w": (3, 3, 1, 6),
        "groups": 3,
        "strides": [2, 2],
        "padding": [0, 1, 1, 0],
    },
}


@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv2d_matches_naive_loops_exactly(case):
    rng = np.random.default_rng(1)
    attrs = {k: v for k, v in case.items() if k not in ("x", "w")}
    x, w = random_real(rng, case["x"], "fixed<8,3>"), random_real(rng, case["w"], "fixed<8,1>")
    y, g, name = run_one("conv2d", x, w, out=WIDE, **attrs)
    expected = naive_conv(x, w, **attrs)
    assert y.shape == expected.shape == g.types[name].shape
    np.testing.assert_array_equal(y, expected)


def test_conv2d_default_output_type_truncates_within_one_step():
    rng = np.random.default_rng(2)
    x = random_real(rng, (1, 6, 6, 4), "fixed<8,2>")
    w = random_real(rng, (3, 3, 4, 5), "fixed<8,0>") / 8
    y, g, name = run_one("conv2d", x, w, x_dtype="fixed<8,2>", c_dtype="fixed<8,-3>", padding=[1, 1, 1, 1])
    assert str(g.types[name].dtype) == "fixed<8,2>"  # the input's type
    expected = naive_conv(x, w, padding=(1, 1, 1, 1))
    lsb = 2.0**-6
    assert np.all(np.abs(expected) < 2)  # no wrap-around in fixed<8,2>
    # TRN floors: the result is at most one step below the exact value, never above
    assert np.all(y <= expected) and np.all(expected - y < lsb)
    np.testing.assert_array_equal(y, np.floor(expected / lsb) * lsb)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 2),
    h=st.integers(1, 6),
    w=st.integers(1, 6),
    groups=st.integers(1, 3),
    cg=st.integers(1, 2),
    og=st.integers(1, 2),
    kh=st.integers(1, 3),
    kw=st.integers(1, 3),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(*[st.integers(0, 2)] * 4),
    seed=st.integers(0, 1000),
)
def test_conv2d_random_geometry(n, h, w, groups, cg, og, kh, kw, strides, dilation, padding, seed):
    top, left, bottom, right = padding
    if dilation[0] * (kh - 1) + 1 > h + top + bottom or dilation[1] * (kw - 1) + 1 > w + left + right:
        return  # no output position; rejected with an error (tested below)
    rng = np.random.default_rng(seed)
    x = random_real(rng, (n, h, w, groups * cg), "fixed<8,3>")
    k = random_real(rng, (kh, kw, cg, groups * og), "fixed<8,1>")
    attrs = {"strides": list(strides), "padding": list(padding), "dilation": list(dilation), "groups": groups}
    y, _, _ = run_one("conv2d", x, k, out=WIDE, **attrs)
    np.testing.assert_array_equal(y, naive_conv(x, k, strides, padding, dilation, groups))


def test_conv2d_float32_matches_naive():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    y, g, name = run_one("conv2d", x, w, x_dtype="float32", c_dtype="float32", groups=2, strides=[2, 1])
    assert y.dtype == np.float32 and g.types[name].dtype.is_float
    expected = naive_conv(x.astype(np.float64), w.astype(np.float64), strides=(2, 1), groups=2)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_hand_checked():
    # 1x3x3x1 image 1..9, 2x2 kernel [[1, 0], [0, -1]], stride 1, no padding: x[i,j] - x[i+1,j+1] = -4
    x = np.arange(1, 10, dtype=np.float64).reshape(1, 3, 3, 1)
    w = np.array([[1.0, 0.0], [0.0, -1.0]]).reshape(2, 2, 1, 1)
    y, _, _ = run_one("conv2d", x, w, x_dtype="int8", c_dtype="int8")
    np.testing.assert_array_equal(y.reshape(2, 2), [[-4, -4], [-4, -4]])
    # padding [1, 1, 0, 0]: the top-left output sees only x[0,0] under the -1 tap
    y, _, _ = run_one("conv2d", x, w, x_dtype="int8", c_dtype="int8", padding=[1, 1, 0, 0])
    np.testing.assert_array_equal(y.reshape(3, 3), [[-1, -2, -3], [-4, -4, -4], [-7, -4, -4]])


def test_conv2d_large_values_are_exact_beyond_float64():
    # products near 2**55 exceed float64's exact integers: the int64 path must be taken
    t = "fixed<29,29>"
    x = np.array([(1 << 28) - 1, -(1 << 28) + 3, (1 << 28) - 5, 12345677], dtype=np.int64).reshape(1, 2, 2, 1)
    w = np.array([(1 << 28) - 7, (1 << 28) - 1, -(1 << 28) + 1, (1 << 27) + 1], dtype=np.int64).reshape(2, 2, 1, 1)
    exact = sum(int(a) * int(b) for a, b in zip(x.ravel(), w.ravel()))
    assert float(np.dot(x.ravel().astype(np.float64), w.ravel().astype(np.float64))) != exact
    b = GraphBuilder("t", dtype=t)
    xin = b.input("x", x.shape)
    b.output(b.conv2d(xin, b.constant("w", w), name="y", dtype="fixed<64,64>"))
    raw = reference.run_raw(b.build(), {"x": x})["y"]
    assert int(raw.ravel()[0]) == exact


def test_exact_matmul_both_paths_agree_with_python_ints():
    rng = np.random.default_rng(4)
    for magnitude in (1 << 10, 1 << 30):  # float64 path, then int64 path
        a = rng.integers(-magnitude, magnitude, size=(3, 5, 7))
        b = rng.integers(-magnitude, magnitude, size=(7, 4))
        got = exact_matmul(a, b)
        want = np.matmul(a.astype(object), b.astype(object))
        assert got.dtype == np.int64
        assert got.tolist() == want.tolist()


def test_conv2d_pattern_and_streaming():
    _, g, name = run_one("conv2d", np.zeros((1, 3, 3, 1)), np.zeros((1, 1, 1, 1)))
    assert g.patterns[name] == Pattern.OUT_ELEMWISE_FUSABLE
    assert OPS["conv2d"].buffer_reason(g.sigs[name]) is None


CONV_ERRORS = [
    ({}, [(1, 4, 4), (3, 3, 3, 2)], "input 'x' must have 4 dims (NHWC), not 3"),
    ({}, [(1, 4, 4, 3), (3, 3, 3)], "input 'w' must have 4 dims ([KH, KW, Cin/groups, Cout]), not 3"),
    ({"groups": 3}, [(1, 4, 4, 4), (3, 3, 1, 3)], "attribute 'groups' (3) must divide the input channels (4)"),
    ({"groups": 2}, [(1, 4, 4, 4), (3, 3, 2, 3)], "attribute 'groups' (2) must divide the output channels of 'w' (3)"),
    (
        {"groups": 2},
        [(1, 4, 4, 4), (3, 3, 4, 2)],
        "input 'w' must have 2 input channels (Cin/groups) on axis 2, not 4",
    ),
    ({}, [(1, 4, 4, 3), (3, 3, 2, 2)], "input 'w' must have 3 input channels (Cin/groups) on axis 2, not 2"),
    (
        {"dilation": [2, 1]},
        [(1, 4, 4, 1), (3, 3, 1, 1)],
        "the kernel spans 5 along the height (size 3, dilation 2), more than the padded input (4)",
    ),
    (
        {"padding": [0, 1, 0, 0]},
        [(1, 4, 2, 1), (3, 4, 1, 1)],
        "the kernel spans 4 along the width (size 4, dilation 1), more than the padded input (3)",
    ),
    ({"strides": [1, 1, 1]}, [(1, 4, 4, 1), (1, 1, 1, 1)], "attribute 'strides' must have 2 values, not 3"),
    ({"strides": [0, 1]}, [(1, 4, 4, 1), (1, 1, 1, 1)], "attribute 'strides' must be positive, not [0, 1]"),
    ({"dilation": [1, -1]}, [(1, 4, 4, 1), (1, 1, 1, 1)], "attribute 'dilation' must be positive, not [1, -1]"),
    ({"padding": [0, 0, 0]}, [(1, 4, 4, 1), (1, 1, 1, 1)], "attribute 'padding' must have 4 values, not 3"),
    (
        {"padding": [0, -1, 0, 0]},
        [(1, 4, 4, 1), (1, 1, 1, 1)],
        "attribute 'padding' must not be negative, not [0, -1, 0, 0]",
    ),
    ({"groups": 0}, [(1, 4, 4, 1), (1, 1, 1, 1)], "attribute 'groups' must be at least 1, not 0"),
    (
        {"group": 2},
        [(1, 4, 4, 1), (1, 1, 1, 1)],
        "unknown attribute 'group' (expected: strides, padding, dilation, groups)",
    ),
]


@pytest.mark.parametrize("attrs, shapes, message", CONV_ERRORS)
def test_conv2d_errors(attrs, shapes, message):
    assert build_error("conv2d", shapes, **attrs) == f"node 'n' (conv2d): {message}"


def test_conv2d_exactness_and_family_errors():
    too_wide = build_error("conv2d", [(1, 4, 4, 2), (3, 3, 2, 1)], dtypes=("int32", "int32"))
    # int32 * int32 is 64 bits; 18 terms add ceil(log2 18) = 5 bits
    assert too_wide == (
        "node 'n' (conv2d): the exact accumulation needs a 69-bit signed exact intermediate, "
        "more than the 64 bits hlsfuse computes with; use narrower input types"
    )
    mixed = build_error("conv2d", [(1, 4, 4, 2), (3, 3, 2, 1)], dtypes=("float32", "int8"))
    assert mixed == "node 'n' (conv2d): inputs mix float32 and fixed-point types; insert a cast"
    to_float_out = build_error("conv2d", [(1, 4, 4, 2), (3, 3, 2, 1)], out="float32")
    assert to_float_out == (
        "node 'n' (conv2d): output dtype float32 does not match the inputs' family; use cast to convert"
    )


# --------------------------------------------------------------------------
# dense and matmul
# --------------------------------------------------------------------------


@pytest.mark.parametrize("xshape", [(7,), (2, 7), (2, 3, 7)])
def test_dense_matches_numpy(xshape):
    rng = np.random.default_rng(5)
    x, w = random_real(rng, xshape, "fixed<8,3>"), random_real(rng, (4, 7), "fixed<8,1>")
    y, g, name = run_one("dense", x, w, out=WIDE)
    assert g.types[name].shape == (*xshape[:-1], 4)
    np.testing.assert_array_equal(y, x @ w.T)
    assert g.patterns[name] == Pattern.OUT_ELEMWISE_FUSABLE
    assert OPS["dense"].buffer_reason(g.sigs[name]) is None


def test_dense_hand_checked_and_default_type():
    x = np.array([[1.5, -2.0, 0.25]])
    w = np.array([[1.0, 1.0, 1.0], [0.5, -0.5, 2.0]])
    y, g, name = run_one("dense", x, w, x_dtype="fixed<8,4>", c_dtype="fixed<8,3>")
    assert str(g.types[name].dtype) == "fixed<8,4>"
    np.testing.assert_array_equal(y, [[-0.25, 2.25]])  # 1.5-2+0.25, 0.75+1+0.5


def test_dense_float32():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    y, _, _ = run_one("dense", x, w, x_dtype="float32", c_dtype="float32")
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-6)


DENSE_ERRORS = [
    ([(2, 7), (4, 7, 1)], "input 'w' must have 2 dims ([N, K]), not 3"),
    ([(2, 7), (4, 6)], "input 'w' must have 7 columns (the last axis of 'x'), not 6"),
    ([(), (4, 6)], "input 'x' must have at least 1 dim"),
]


@pytest.mark.parametrize("shapes, message", DENSE_ERRORS)
def test_dense_errors(shapes, message):
    assert build_error("dense", shapes) == f"node 'n' (dense): {message}"


def test_dense_exactness_error():
    message = build_error("dense", [(2, 3), (4, 3)], dtypes=("fixed<40,10>", "fixed<24,2>"))
    assert message == (
        "node 'n' (dense): the exact accumulation needs a 66-bit signed exact intermediate, "
        "more than the 64 bits hlsfuse computes with; use narrower input types"
    )


def test_matmul_broadcasts_batch_dims():
    rng = np.random.default_rng(7)
    a = random_real(rng, (2, 1, 3, 4), "fixed<8,3>")
    b = GraphBuilder("t", dtype="fixed<8,3>")
    ain, bin_ = b.input("a", a.shape), b.input("b", (5, 4, 2))
    b.output(b.matmul(ain, bin_, name="y", dtype=WIDE))
    g = b.build()
    bv = random_real(rng, (5, 4, 2), "fixed<8,3>")
    y = reference.run(g, {"a": a, "b": bv})["y"]
    assert g.types["y"].shape == (2, 5, 3, 2)
    np.testing.assert_array_equal(y, np.matmul(a, bv))
    assert g.patterns["y"] == Pattern.OUT_ELEMWISE_FUSABLE
    assert OPS["matmul"].buffer_reason(g.sigs["y"]) is None


def test_matmul_with_b_transposed_is_a_at_b_transposed_and_reads_its_products_innermost():
    rng = np.random.default_rng(8)
    a = random_real(rng, (2, 3, 4), "fixed<8,3>")
    bt = random_real(rng, (2, 5, 4), "fixed<8,3>")
    b = GraphBuilder("t", dtype="fixed<8,3>")
    b.output(b.matmul(b.input("a", a.shape), b.input("k", bt.shape), transpose_b=True, name="y", dtype=WIDE))
    g = b.build()
    np.testing.assert_array_equal(reference.run(g, {"a": a, "k": bt})["y"], np.matmul(a, np.swapaxes(bt, -1, -2)))
    assert g.types["y"].shape == (2, 3, 5)
    sig = g.sigs["y"]
    assert OPS["matmul"].head(sig).products_innermost
    plain = dataclasses.replace(sig, shapes=(sig.shapes[0], (2, 4, 5)), attrs={**sig.attrs, "transpose_b": False})
    assert not OPS["matmul"].head(plain).products_innermost


MATMUL_ERRORS = [
    ([(4,), (4, 2)], "input 'a' must have at least 2 dims, not 1 (use dense, or reshape vectors to matrices)"),
    ([(3, 4), (4,)], "input 'b' must have at least 2 dims, not 1 (use dense, or reshape vectors to matrices)"),
    ([(3, 4), (5, 2)], "input 'b' must have 4 rows (axis -2, the last axis of 'a'), not 5"),
    ([(2, 3, 4), (3, 4, 2)], "batch dims [2] of 'a' and [3] of 'b' do not broadcast"),
]


def test_matmul_with_b_transposed_names_the_columns_it_needs():
    b = GraphBuilder("t", dtype="fixed<8,3>")
    a, k = b.input("a", (3, 4)), b.input("k", (4, 5))
    with pytest.raises(HlsfuseError) as info:
        b.matmul(a, k, transpose_b=True, name="n")
    assert str(info.value) == ("node 'n' (matmul): input 'b' must have 4 columns (axis -1, the last axis of 'a', as "
                               "transpose_b is set), not 5")


@pytest.mark.parametrize("shapes, message", MATMUL_ERRORS)
def test_matmul_errors(shapes, message):
    assert build_error("matmul", shapes) == f"node 'n' (matmul): {message}"


# --------------------------------------------------------------------------
# pools
# --------------------------------------------------------------------------

POOL_CASES = {
    "2x2": {"pool_size": [2, 2]},
    "3x3 stride 2 padded": {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]},
    "asymmetric": {"pool_size": [2, 3], "strides": [1, 2], "padding": [1, 0, 0, 2]},
    "overlapping 3x2": {"pool_size": [3, 2], "strides": [1, 1], "padding": [2, 1, 0, 1]},
}


def _pool_geometry(case):
    return case["pool_size"], case.get("strides", case["pool_size"]), case.get("padding", [0, 0, 0, 0])


@pytest.mark.parametrize("case", POOL_CASES.values(), ids=POOL_CASES.keys())
def test_max_pool2d_matches_naive(case):
    rng = np.random.default_rng(8)
    x = random_real(rng, (2, 5, 6, 3), "fixed<8,3>")
    y, g, name = run_one("max_pool2d", x, **case)
    expected = naive_pool(x, *_pool_geometry(case), lambda vals, size: max(vals))
    np.testing.assert_array_equal(y, expected)
    assert g.patterns[name] == Pattern.OUT_ELEMWISE_FUSABLE
    assert OPS["max_pool2d"].buffer_reason(g.sigs[name]) is None


def test_max_pool2d_padding_never_wins():
    x = np.full((1, 3, 3, 1), -3.5)
    y, _, _ = run_one("max_pool2d", x, pool_size=[2, 2], strides=[1, 1], padding=[1, 1, 1, 1])
    np.testing.assert_array_equal(y, np.full((1, 4, 4, 1), -3.5))  # zero padding would give 0
    yf, _, _ = run_one("max_pool2d", x, x_dtype="float32", pool_size=[2, 2], strides=[1, 1], padding=[1, 1, 1, 1])
    np.testing.assert_array_equal(yf, np.full((1, 4, 4, 1), -3.5, dtype=np.float32))


def test_pool_strides_default_to_pool_size():
    _, g, name = run_one("max_pool2d", np.zeros((1, 4, 7, 2)), pool_size=[2, 3])
    assert g.types[name].shape == (1, 2, 2, 2)
    assert g.sigs[name]["strides"] is None


def test_avg_pool2d_border_counts_hand_checked():
    x = np.ones((1, 3, 3, 1))
    geometry = {"pool_size": [2, 2], "strides": [1, 1], "padding": [1, 1, 1, 1]}
    y, g, name = run_one("avg_pool2d", x, **geometry)
    np.testing.assert_array_equal(y.reshape(4, 4), np.ones((4, 4)))  # padding is not counted
    np.testing.assert_array_equal(pool_counts(g.sigs[name]), [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]])
    y, g, name = run_one("avg_pool2d", x, count_include_pad=True, **geometry)
    corner, edge = 0.25, 0.5
    expected = [[corner, edge, edge, corner], [edge, 1, 1, edge], [edge, 1, 1, edge], [corner, edge, edge, corner]]
    np.testing.assert_array_equal(y.reshape(4, 4), expected)
    np.testing.assert_array_equal(pool_counts(g.sigs[name]), np.full((4, 4), 4))


def test_pool_counts_strided_geometry():
    # H=5, pool 3, stride 2, pads 1/1: windows start at -1, 1, 3 -> 2, 3, 2 real rows
    # W=4, pool 2, stride 3, pads 0/1: windows start at 0, 3 -> 2, 1 real columns
    geometry = {"pool_size": [3, 2], "strides": [2, 3], "padding": [1, 0, 1, 1]}
    _, g, name = run_one("avg_pool2d", np.zeros((1, 5, 4, 1)), **geometry)
    np.testing.assert_array_equal(pool_counts(g.sigs[name]), [[4, 2], [6, 3], [4, 2]])
    assert pool_counts(g.sigs[name]).dtype == np.int64
    # x = 1 everywhere: every window's exact mean is 1, whatever its count
    y, _, _ = run_one("avg_pool2d", np.ones((1, 5, 4, 1)), x_dtype="int8", **geometry)
    np.testing.assert_array_equal(y, np.ones((1, 3, 2, 1)))


def test_avg_pool2d_non_power_of_two_hand_checked():
    # window [1, 1, 0] of int8 -> 2/3; fixed<16,6> keeps 10 fractional bits: floor(682.67) = 682
    x = np.array([1.0, 1.0, 0.0]).reshape(1, 1, 3, 1)
    y, _, _ = run_one("avg_pool2d", x, x_dtype="int8", out="fixed<16,6>", pool_size=[1, 3])
    assert y.ravel()[0] == 682 / 1024
    y, _, _ = run_one("avg_pool2d", x, x_dtype="int8", out="fixed<16,6,RND>", pool_size=[1, 3])
    assert y.ravel()[0] == 683 / 1024


def test_avg_pool2d_exact_means_stay_exact():
    # int8 windows of [5, 5, 5] and [-3, -3, -3] under the default TRN: exactly 5 and -3
    x = np.array([5.0, 5.0, 5.0, -3.0, -3.0, -3.0]).reshape(1, 1, 6, 1)
    y, _, _ = run_one("avg_pool2d", x, x_dtype="int8", pool_size=[1, 3])
    assert y.ravel().tolist() == [5, -3]
    # padding not counted: every window of a constant -3 image averages to -3, border windows included
    geometry = {"pool_size": [3, 3], "strides": [1, 1], "padding": [1, 1, 1, 1]}
    y, _, _ = run_one("avg_pool2d", np.full((1, 3, 4, 1), -3.0), x_dtype="int8", **geometry)
    np.testing.assert_array_equal(y, np.full((1, 3, 4, 1), -3.0))


@pytest.mark.parametrize("quant, corner, edge", [
    # counted padding: a 2x2 corner window of -3 is -3/4 = -0.75, an edge window -6/4 = -1.5 (a tie)
    ("TRN", -1, -2), ("TRN_ZERO", 0, -1), ("RND", -1, -1), ("RND_ZERO", -1, -1),
    ("RND_MIN_INF", -1, -2), ("RND_INF", -1, -2), ("RND_CONV", -1, -2),
])
def test_avg_pool2d_counted_padding_negative_every_mode(quant, corner, edge):
    geometry = {"pool_size": [2, 2], "strides": [1, 1], "padding": [1, 1, 1, 1]}
    x = np.full((1, 3, 3, 1), -3.0)
    y, _, _ = run_one("avg_pool2d", x, x_dtype="int8", out=f"fixed<8,8,{quant}>", count_include_pad=True, **geometry)
    inner = -3
    expected = [[corner, edge, edge, corner], [edge, inner, inner, edge], [edge, inner, inner, edge],
                [corner, edge, edge, corner]]
    assert y.reshape(4, 4).tolist() == expected


def model_avg_pool(x, case, include, out_dtype):
    """Per window: the exact mean of its real values (Fractions), assigned by the model; real results."""
    out_type = parse_dtype(out_dtype)

    def mean(vals, size):
        exact = sum(Fraction(float(v)) for v in vals) / (size if include else len(vals))
        return float(model_from_values([exact], out_type)[0])  # raw; |raw| < 2**53

    return to_float(naive_pool(x, *_pool_geometry(case), mean).astype(np.int64), out_type)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("quant", QUANT_MODES)
@pytest.mark.parametrize("case", POOL_CASES.values(), ids=POOL_CASES.keys())
def test_avg_pool2d_bit_exact_every_mode(case, quant, include):
    """fixed<8,3> windows into a wide type (F = 6) and a narrow one that overflows (F = 4, range [-2, 2)),
    the overflow mode rotating with the case."""
    rng = np.random.default_rng(9)
    x = random_real(rng, (2, 5, 6, 3), "fixed<8,3>")
    overflow = OVERFLOW_MODES[(list(POOL_CASES.values()).index(case) + include) % len(OVERFLOW_MODES)]
    for out in (f"fixed<10,4,{quant}>", f"fixed<6,2,{quant},{overflow}>"):
        y, _, _ = run_one("avg_pool2d", x, out=out, count_include_pad=include, **case)
        np.testing.assert_array_equal(y, model_avg_pool(x, case, include, out), err_msg=out)


def test_avg_pool2d_float32():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 4, 5, 2)).astype(np.float32)
    case = POOL_CASES["3x3 stride 2 padded"]
    y, _, _ = run_one("avg_pool2d", x, x_dtype="float32", **case)
    expected = naive_pool(x.astype(np.float64), *_pool_geometry(case), lambda vals, size: sum(vals) / len(vals))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


POOL_ERRORS = [
    ({"pool_size": [3, 3]}, (1, 2, 2, 1), "attribute 'pool_size' [3, 3] is larger than the padded input [2, 2]"),
    (
        {"pool_size": [2, 5], "padding": [0, 1, 0, 1]},
        (1, 4, 2, 1),
        "attribute 'pool_size' [2, 5] is larger than the padded input [4, 4]",
    ),
    (
        {"pool_size": [2, 2], "padding": [2, 0, 0, 0]},
        (1, 4, 4, 1),
        "attribute 'padding' [2, 0, 0, 0] must be smaller than the pool size [2, 2]",
    ),
    (
        {"pool_size": [3, 1], "padding": [0, 0, 0, 1]},
        (1, 4, 4, 1),
        "attribute 'padding' [0, 0, 0, 1] must be smaller than the pool size [3, 1]",
    ),
    ({}, (1, 4, 4, 1), "missing required attribute 'pool_size'"),
    ({"pool_size": [2, 2]}, (4, 4, 1), "input 'x' must have 4 dims (NHWC), not 3"),
    ({"pool_size": [2, 0]}, (1, 4, 4, 1), "attribute 'pool_size' must be positive, not [2, 0]"),
    ({"pool_size": [2, 2], "strides": [2]}, (1, 4, 4, 1), "attribute 'strides' must have 2 values, not 1"),
    (
        {"pool_size": [2, 2], "padding": [-1, 0, 0, 0]},
        (1, 4, 4, 1),
        "attribute 'padding' must not be negative, not [-1, 0, 0, 0]",
    ),
]


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("attrs, shape, message", POOL_ERRORS)
def test_pool_errors(op, attrs, shape, message):
    assert build_error(op, [shape], **attrs) == f"node 'n' ({op}): {message}"


def test_avg_pool2d_exactness_error():
    # 9 terms of fixed<60,30>: fixed<64,34>, which fits; the output's 30 fractional bits put it on 31: 65 bits
    message = build_error("avg_pool2d", [(1, 3, 3, 1)], dtypes=("fixed<60,30>",), pool_size=[3, 3])
    assert message == (
        "node 'n' (avg_pool2d): the division of the window sum by its count needs a 65-bit signed exact "
        "intermediate, more than the 64 bits hlsfuse computes with; use narrower input types"
    )
    # into a type with fewer fractional bits the same sum fits: the division shifts it right instead
    b = GraphBuilder("t")
    y = b.avg_pool2d(b.input("x", (1, 3, 3, 1), dtype="fixed<60,30>"), pool_size=[3, 3], dtype="fixed<60,40>")
    assert str(b.type_of(y).dtype) == "fixed<60,40>"
    # 16 terms of fixed<61,30>: 65 bits before any division
    message = build_error("avg_pool2d", [(1, 4, 4, 1)], dtypes=("fixed<61,30>",), pool_size=[4, 4])
    assert message == (
        "node 'n' (avg_pool2d): the exact window sum needs a 65-bit signed exact intermediate, "
        "more than the 64 bits hlsfuse computes with; use narrower input types"
    )
