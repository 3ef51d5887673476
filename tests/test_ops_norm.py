"""layer_norm and rms_norm (hlsfuse/ops/norm.py, docs/numerics.md section 9): the reciprocal square root over every
mantissa it can see, against an independent integer model and the exact value; the end-to-end error against float
on random and adversarial rows within the bound docs/numerics.md states; edge rows; the float32 path; range analysis
and automatic precision; the checks' messages; the C++ kernel's constants."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from norm_graphs import adversarial_rows

from hlsfuse import GraphBuilder, HlsfuseError, parse_dtype, reference
from hlsfuse.ops import OPS, Pattern
from hlsfuse.ops.norm import (
    MANTISSA_FRAC,
    NEWTON_FRAC,
    NORM_DTYPE,
    RSQRT_ENTRY,
    RSQRT_FRAC,
    RSQRT_INDEX_BITS,
    norm_of,
    rsqrt,
    rsqrt_error,
)
from hlsfuse.ranges import auto_types, ranges
from hlsfuse.resources import hw_dir
from hlsfuse.types import to_float

ROOT = Path(__file__).resolve().parents[1]
NUMERICS = (ROOT / "docs" / "numerics.md").read_text()

STATED_LOW, STATED_HIGH = -1.48e-6, 4.76e-7
"""The rsqrt's relative error, R 2^-(24+e) sqrt(V) - 1, lies in [STATED_LOW, STATED_HIGH] (docs/numerics.md)."""


# --------------------------------------------------------------------------
# 1/sqrt(V)
# --------------------------------------------------------------------------


def _independent_rsqrt(v: int) -> tuple[int, int]:
    """The rsqrt of docs/numerics.md section 9 in Python integers: no numpy, its own table entry (the exact value of
    1/sqrt at the bucket's middle, rounded to nearest, ties up, on 16 fractional bits)."""
    e = (v.bit_length() - 1) // 2
    shift = 2 * e - 20
    m = v >> shift if shift >= 0 else v << -shift
    index = m >> 12
    middle = Fraction(2 * index + 1, 2 * 1024) * 4  # the bucket's middle, in [1, 4)
    # y0 = round(2^16 / sqrt(middle)): the largest y with y^2 middle <= 2^32, then up when past the half
    y0 = math.isqrt(int(Fraction(2**32) / middle))
    while (y0 + 1) ** 2 * middle <= 2**32:
        y0 += 1
    if (2 * y0 + 1) ** 2 * middle <= 4 * 2**32:  # 1/sqrt(middle) 2^16 >= y0 + 1/2
        y0 += 1
    t = (3 * 2**52 - m * y0 * y0) >> 20
    return (y0 * t) >> 25, e


def test_the_constants_are_the_documented_ones():
    assert (MANTISSA_FRAC, RSQRT_INDEX_BITS, str(RSQRT_ENTRY), NEWTON_FRAC, RSQRT_FRAC) == (
        20, 10, "ufixed<16,0,RND,SAT>", 32, 24)
    assert str(NORM_DTYPE) == "fixed<24,8,RND,SAT>"


def test_rsqrt_error_over_every_mantissa_is_as_stated():
    error = rsqrt_error()  # exhaustive over the 3 * 2^20 mantissas
    assert STATED_LOW <= error.low <= 0.99 * STATED_LOW, error
    assert 0.99 * STATED_HIGH <= error.high <= STATED_HIGH, error
    assert f"{STATED_LOW:g}" in NUMERICS.replace("\u2212", "-") and f"{STATED_HIGH:g}" in NUMERICS


def test_rsqrt_is_the_independent_integer_model_and_within_its_error():
    rng = np.random.default_rng(5)
    values = [1, 2, 3, 4, 5, 2**20 - 1, 2**20, 2**21 + 1, 2**62, 2**63 - 1, 12345678901234]
    values += [1 << k for k in range(63)] + [(1 << k) - 1 for k in range(2, 64)]
    values += [int(v) for v in rng.integers(1, 2**63 - 1, 300, dtype=np.int64)]
    values += [int(v) for v in rng.integers(1, 2**24, 300)]
    r, e = rsqrt(np.array(values, dtype=np.int64))
    assert [(int(a), int(b)) for a, b in zip(r, e)] == [_independent_rsqrt(v) for v in values]
    relative = [int(a) * 2.0 ** -(RSQRT_FRAC + int(b)) * math.sqrt(v) - 1 for a, b, v in zip(r, e, values)]
    assert min(relative) >= STATED_LOW and max(relative) <= STATED_HIGH


def test_the_cpp_kernel_uses_the_same_constants():
    header = (hw_dir() / "hls" / "hlsfuse" / "norm.h").read_text()
    found = dict(re.findall(r"const int (NORM_\w+) = (\d+);", header))
    assert found == {"NORM_MANTISSA_FRAC": "20", "NORM_ENTRY_FRAC": "16", "NORM_NEWTON_FRAC": "32",
                     "NORM_RSQRT_FRAC": "24"}
    assert (MANTISSA_FRAC, RSQRT_ENTRY.frac, NEWTON_FRAC, RSQRT_FRAC) == (20, 16, 32, 24)
    rtl = (hw_dir() / "rtl" / "hlsf_rsqrt.v").read_text()
    assert "d[53:20]" in rtl and "p[49:25]" in rtl and "m[21:12]" in rtl


# --------------------------------------------------------------------------
# The end-to-end error
# --------------------------------------------------------------------------


def _graph(n: int, rows: int, op: str, x_type: str, out_type: str, norm_dtype=None, epsilon=1e-5, seed=0,
           gamma_type="fixed<16,2,RND,SAT>", beta_type="fixed<16,2,RND,SAT>"):
    rng = np.random.default_rng(seed)
    b = GraphBuilder("g", dtype=x_type)
    x = b.input("x", [rows, n])
    gamma = b.constant("gamma", rng.uniform(-1.9, 1.9, n), dtype=gamma_type)
    attrs = {"epsilon": epsilon, "dtype": out_type}
    if norm_dtype is not None:
        attrs["norm_dtype"] = norm_dtype
    if op == "layer_norm":
        beta = b.constant("beta", rng.uniform(-1.9, 1.9, n), dtype=beta_type)
        b.output(b.layer_norm(x, gamma, beta, name="y", **attrs))
    else:
        b.output(b.rms_norm(x, gamma, name="y", **attrs))
    return b.build()


def _quantum(t) -> float:
    """The largest error of t's rounding: half an LSB to nearest, one LSB toward -inf or zero."""
    return t.lsb / 2 if t.quant.startswith("RND") else t.lsb


def error_and_bound(graph, raw_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|y - y_float|, the stated bound) per element: y_float is the exact formula with the real epsilon on the
    quantized x, gamma and beta; the bound is |gamma| (|n_f| (error of the rsqrt + (E - E_real) / (2 V_real)) +
    q_norm) + q_out (q: half an LSB for the RND modes, one LSB for TRN and TRN_ZERO), n_f the exact normalised value."""
    sig = graph.sigs["y"]
    x_type, out_type, norm_type = sig.dtypes[0], sig.out_dtype, sig["norm_dtype"]
    norm = norm_of(sig)
    rms = norm.rms
    got = to_float(reference.run_raw(graph, {"x": raw_x})["y"], out_type)
    gamma = graph.constant_map["gamma"].values
    beta = 0.0 if rms else graph.constant_map["beta"].values
    n = norm.n
    x = raw_x.astype(np.float64)  # raw: the scale 2^F cancels in (N X - S1) / sqrt(V)
    s1 = 0.0 if rms else x.sum(axis=-1, keepdims=True)
    e_real = float(Fraction(sig["epsilon"]) * n * n * Fraction(2) ** (2 * x_type.frac))
    v_real = n * (x * x).sum(axis=-1, keepdims=True) - s1 * s1 + e_real
    dev = n * x - s1
    safe = np.where(v_real > 0, v_real, 1.0)  # V_real = 0: a constant row with epsilon 0, its deviations all 0
    n_f = np.where(dev == 0, 0.0, dev / np.sqrt(safe))
    y_f = n_f * gamma + beta
    rel = rsqrt_error().worst + (norm.epsilon_term - e_real) / (2 * safe)
    bound = np.abs(gamma) * (np.abs(n_f) * rel + _quantum(norm_type)) + _quantum(out_type)
    return np.abs(got - y_f), bound * (1 + 1e-9) + 1e-12


CONFIGS = [  # (n, op, x type, output type, norm_dtype, epsilon); the output types hold sqrt(N - 1) 1.9 + 1.9
    (8, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>", None, 1e-5),
    (64, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>", None, 1e-5),
    (768, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<20,8,RND,SAT>", None, 1e-5),
    (64, "layer_norm", "int8", "fixed<16,6,RND,SAT>", None, 0.0),
    (64, "layer_norm", "ufixed<12,4>", "fixed<14,6,TRN,SAT>", "fixed<16,6,TRN,SAT>", 1e-3),
    (100, "layer_norm", "fixed<16,2,RND,SAT>", "fixed<24,8,RND,SAT>", "fixed<32,8,RND,SAT>", 1e-5),
    (64, "rms_norm", "fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>", None, 1e-5),
    (7, "rms_norm", "int8", "fixed<16,4,RND_CONV,SAT>", None, 0.0),
]


@pytest.mark.parametrize("n,op,x_type,out_type,norm_dtype,epsilon", CONFIGS)
def test_error_against_float_is_within_the_stated_bound(n, op, x_type, out_type, norm_dtype, epsilon):
    graph = _graph(n, 4, op, x_type, out_type, norm_dtype, epsilon)
    t = graph.types["x"].dtype
    rng = np.random.default_rng(n)
    rows = [adversarial_rows(t, n, rng) for _ in range(6)]
    rows.append(rng.integers(t.raw_min, t.raw_max, (64, n), endpoint=True))
    rows.append(np.clip(np.round(rng.standard_normal((64, n)) * 2.0 ** t.frac), t.raw_min, t.raw_max))
    raw = np.concatenate(rows).astype(np.int64)
    graph = _graph(n, raw.shape[0], op, x_type, out_type, norm_dtype, epsilon)
    error, bound = error_and_bound(graph, raw)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (worst, float(error[worst]), float(bound[worst]), raw[worst[0]].tolist())


def test_stated_example_error():
    """docs/numerics.md's figure: N = 64, fixed<16,6,RND,SAT> in and out, gamma and beta fixed<16,2,RND,SAT>, the
    default norm_dtype, on 30 sets of adversarial rows and 500 random rows: the output's half LSB (2^-11) dominates,
    the rest is at most 2^-16 per unit of gamma."""
    n, types = 64, ("fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>")
    t = parse_dtype(types[0])
    rng = np.random.default_rng(n)
    raw = np.concatenate([adversarial_rows(t, n, rng) for _ in range(30)]
                         + [rng.integers(t.raw_min, t.raw_max, (500, n), endpoint=True)]).astype(np.int64)
    graph = _graph(n, raw.shape[0], "layer_norm", *types)
    error, bound = error_and_bound(graph, raw)
    gamma = np.abs(graph.constant_map["gamma"].values)
    assert np.all(error <= bound)
    assert 0.000500 <= float(np.max(error)) <= 0.000502 and "0.000502" in NUMERICS
    assert float(np.max((error - 2.0**-11) / gamma)) <= 2.0**-16


# --------------------------------------------------------------------------
# Edge rows, float32, the node's facts
# --------------------------------------------------------------------------


def _run(graph, x):
    return reference.run(graph, {"x": np.asarray(x, dtype=np.float64)})["y"]


def test_constant_rows_give_beta_and_one_element_rows_too():
    graph = _graph(16, 3, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<20,6,RND,SAT>")  # beta's 14 fractional bits
    beta = graph.constant_map["beta"].values
    y = _run(graph, np.array([[0.0] * 16, [31.999] * 16, [-32.0] * 16]))
    assert np.array_equal(y, np.broadcast_to(beta, (3, 16)))
    b = GraphBuilder("one", dtype="fixed<8,3>")
    x = b.input("x", [4, 1])
    g, be = b.constant("g", [1.5]), b.constant("be", [-0.25])
    b.output(b.layer_norm(x, g, be, name="y"), b.rms_norm(x, g, name="r", epsilon=0.0, dtype="fixed<16,3>"))
    out = reference.run(b.build(), {"x": np.array([[0.0], [1.0], [-2.5], [3.875]])})
    assert out["y"].tolist() == [[-0.25]] * 4
    # x / sqrt(x^2 + 2^-10) (E is at least 1: 2^-2F) times 1.5: sign(x) 1.5 but for 1 LSB of the output, 0 at 0
    assert np.abs(out["r"][:, 0] - [0.0, 1.5, -1.5, 1.5]).max() <= 2.0**-10


def test_one_outlier_reaches_sqrt_n_minus_1():
    n = 64
    graph = _graph(n, 1, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<24,8,RND,SAT>", epsilon=0.0,
                   gamma_type="fixed<16,2,RND,SAT>")
    gamma, beta = graph.constant_map["gamma"].values, graph.constant_map["beta"].values
    x = np.zeros((1, n))
    x[0, 5] = 31.0
    y = _run(graph, x)[0]
    normalised = (y - beta) / gamma
    assert normalised[5] == pytest.approx(math.sqrt(n - 1), rel=2e-5)
    bound = ranges(graph)["y"]
    assert float(bound.lo) <= y.min() and y.max() <= float(bound.hi)


def test_float32_is_the_formula_in_float64_rounded_once():
    rng = np.random.default_rng(3)
    b = GraphBuilder("f", dtype="float32")
    x = b.input("x", [5, 12])
    g, be = b.constant("g", rng.uniform(0.5, 1.5, 12)), b.constant("be", rng.uniform(-1, 1, 12))
    b.output(b.layer_norm(x, g, be, name="y", epsilon=1e-3), b.rms_norm(x, g, name="r"))
    graph = b.build()
    xv = rng.standard_normal((5, 12)).astype(np.float32)
    out = reference.run(graph, {"x": xv})
    v = xv.astype(np.float64)
    gv, bv = graph.constant_map["g"].values, graph.constant_map["be"].values
    d = v - v.mean(axis=-1, keepdims=True)
    want = (d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-3) * gv + bv).astype(np.float32)
    assert out["y"].dtype == np.float32 and np.array_equal(out["y"], want)
    want = (v / np.sqrt((v * v).mean(axis=-1, keepdims=True) + 1e-5) * gv).astype(np.float32)
    assert np.array_equal(out["r"], want)


def test_the_registry_entries():
    graph = _graph(16, 2, "layer_norm", "fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>")
    op, sig = OPS["layer_norm"], graph.sigs["y"]
    assert graph.patterns["y"] == Pattern.OPAQUE and op.stream == "own"
    assert op.buffer_reason(sig) == "a normalisation needs the row's sums before emitting"
    (table,) = op.tables_of(sig)
    assert (table.function, table.shift, len(table.entries)) == ("rsqrt", 12, 1024)
    norm = norm_of(sig)  # E = ceil(1e-5 * 16^2 * 2^20) = ceil(2684.35...)
    assert (norm.n, norm.rms, norm.epsilon_term, norm.v_max) == (16, False, 2685, 16 * 16 * 2**30 + 2685)
    assert norm_of(_graph(16, 2, "rms_norm", "int8", "int8", epsilon=0.0).sigs["y"]).epsilon_term == 1
    products = op.products_of(sig)
    assert [(str(a), str(b), lane) for a, b, lane in products[:3]] == [
        ("fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>", True), ("fixed<21,21>", "ufixed<25,25>", True),
        ("fixed<24,8,RND,SAT>", "fixed<16,2,RND,SAT>", True)]


# --------------------------------------------------------------------------
# Range analysis and automatic precision
# --------------------------------------------------------------------------


@pytest.mark.parametrize("op,root,auto", [("layer_norm", math.sqrt(15), "fixed<16,4,RND>"),
                                          ("rms_norm", 4.0, "fixed<16,5,RND>")])
def test_bound_is_sqrt_n_minus_1_times_gamma_plus_beta(op, root, auto):
    b = GraphBuilder("r", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [3, 16])
    gamma = b.constant("g", np.linspace(-2, 1, 16), dtype="fixed<16,2,RND,SAT>")
    beta = b.constant("be", np.linspace(0, 1.5, 16), dtype="fixed<16,2,RND,SAT>")
    y = b.layer_norm(x, gamma, beta, name="y") if op == "layer_norm" else b.rms_norm(x, gamma, name="y")
    b.output(y)
    graph = b.build()
    found = ranges(graph)["y"]
    g, be = np.linspace(-2, 1, 16), np.linspace(0, 1.5, 16) if op == "layer_norm" else np.zeros(16)
    hi = float(np.max(root * np.abs(g) + be))
    assert hi <= float(found.hi) <= hi * (1 + 2e-5) + 2.0**-14
    assert found.exact.per_channel  # per element of the last axis: gamma's and beta's own
    # the input's range does not matter: a normalised row is scale-free
    assert ranges(graph, {"x": (-0.001, 0.001)})["y"].hi == found.hi
    # |y| <= 7.75 (layer_norm: gamma -2, beta 0): I = 4; rms_norm reaches 8 (1 + the rsqrt's error): I = 5
    assert str(auto_types(graph, 16)["y"]) == auto


def test_auto_precision_never_overflows_on_adversarial_rows():
    b = GraphBuilder("a", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [40, 32])
    rng = np.random.default_rng(9)
    y = b.layer_norm(x, b.constant("g", rng.uniform(-3, 3, 32)), b.constant("be", rng.uniform(-2, 2, 32)), name="y")
    b.output(b.rms_norm(y, b.constant("g2", rng.uniform(0, 2, 32)), name="z"))
    graph = b.build()
    from hlsfuse.ranges import retyped

    typed = retyped(graph, auto_types(graph, 16))
    t = typed.types["x"].dtype
    raw = np.concatenate([adversarial_rows(t, 32, rng) for _ in range(4)])[:40]
    found = ranges(typed)
    from hlsfuse.overflow import events

    values = reference.run_raw(typed, {"x": raw})
    assert events(typed, values) == []
    for name in ("y", "z"):
        real = to_float(values[name], typed.types[name].dtype)
        assert float(found[name].lo) <= real.min() and real.max() <= float(found[name].hi)


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def _build(op, shape=(2, 8), x_type="fixed<16,6>", gamma_shape=None, beta_shape=None, **attrs):
    b = GraphBuilder("bad", dtype=x_type)
    x = b.input("x", list(shape))
    n = shape[-1] if shape else 1
    g = b.constant("g", np.ones(gamma_shape or (n,)), dtype="fixed<8,2>")
    if op == "layer_norm":
        return b.layer_norm(x, g, b.constant("be", np.zeros(beta_shape or (n,)), dtype="fixed<8,2>"), name="y",
                            **attrs), b
    return b.rms_norm(x, g, name="y", **attrs), b


@pytest.mark.parametrize("op,kwargs,message", [
    ("layer_norm", {"gamma_shape": (4,)}, "node 'y' (layer_norm): input 'gamma' must have shape [8] (the last axis "
     "of 'x'), not [4]"),
    ("layer_norm", {"beta_shape": (1, 8)}, "input 'beta' must have shape [8] (the last axis of 'x'), not [1, 8]"),
    ("rms_norm", {"epsilon": -1.0}, "attribute 'epsilon' must be at least 0, not -1.0"),
    ("layer_norm", {"norm_dtype": "float32"}, "attribute 'norm_dtype' must be a fixed-point type, not float32"),
    ("layer_norm", {"shape": (2, 1024), "x_type": "fixed<24,8>"},
     "the variance term N sum(x^2) - sum(x)^2 + E needs a 68-bit signed exact intermediate, more than the 64 bits"),
    ("rms_norm", {"shape": (2, 8), "x_type": "fixed<16,6>", "norm_dtype": "fixed<64,2>"},
     "the normalised value on 64 fractional bits needs a 67-bit signed exact intermediate"),
    ("layer_norm", {"shape": (2, 8), "x_type": "fixed<16,6>", "norm_dtype": "fixed<60,8>"},
     "the exact n * gamma + beta needs a 69-bit signed exact intermediate"),
])
def test_checks_name_the_node_and_the_intermediate(op, kwargs, message):
    with pytest.raises(HlsfuseError) as info:
        _, b = _build(op, **kwargs)
        b.build()
    assert message in str(info.value)


def test_float_and_fixed_inputs_do_not_mix():
    b = GraphBuilder("mix", dtype="float32")
    x = b.input("x", [2, 4])
    with pytest.raises(HlsfuseError, match="inputs mix float32 and fixed-point types; insert a cast"):
        b.rms_norm(x, b.constant("g", np.ones(4), dtype="fixed<8,2>"), name="y")


def test_default_norm_dtype_parses():
    assert parse_dtype("fixed<24,8,RND,SAT>") == NORM_DTYPE
