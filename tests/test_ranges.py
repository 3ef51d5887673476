"""Range analysis (hlsfuse/ranges.py and the ``bounds`` rule of every op).

The property test runs the reference on random graphs with random and extreme inputs (every
element at its input's lower or upper bound) and checks that every node's *exact* value, computed
by the op's own reference with an output type wide enough to hold it unrounded, lies in the bound
the analysis gives. A failing graph does not shrink: the run's hypothesis seed is printed in the
session header, and the graph and its inputs are saved under tests/failed/.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from random_graphs import save
from strategies import nn_graphs, op_graphs

from hlsfuse import GraphBuilder, load_graph, reference
from hlsfuse.errors import HlsfuseError
from hlsfuse.ops import OPS, get_op
from hlsfuse.ops.interval import Interval
from hlsfuse.ops.lut import TABLE_OPS
from hlsfuse.ranges import auto_types, bounds, fitting_type, int_bits_needed, ranges, retyped
from hlsfuse.types import FixedType, parse_dtype

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.json"))


# --------------------------------------------------------------------------
# Exact values of a graph's nodes, by the ops' own references
# --------------------------------------------------------------------------


def exact_values(graph, found, raw_inputs) -> dict[str, tuple[np.ndarray, int]]:
    """Every node's exact result (raw, frac): its reference with an output type of 64 bits and the
    fractional bits of its bound, so nothing is rounded or wraps. A table op's result is its entry;
    a pad's fill value is of its output type by definition (and its other values are moved unchanged
    when, as in these graphs, its type is the input's)."""
    values = reference.run_raw(graph, raw_inputs)
    exact = {}
    for node in graph.nodes:
        sig, frac = graph.sigs[node.name], found[node.name].exact.frac
        if node.op in TABLE_OPS or node.op == "pad":
            exact[node.name] = (values[node.name] << (frac - sig.out_dtype.frac), frac)
            continue
        wide = replace(sig, out_dtype=FixedType(64, 64 - frac))
        args = [values[src] for src in node.inputs]
        exact[node.name] = (np.asarray(get_op(node.op).compute(args, wide)), frac)
    return exact


def outside(found, exact) -> list[str]:
    """The nodes whose exact value leaves their bound."""
    bad = []
    for name, (raw, frac) in exact.items():
        interval = found[name].exact
        assert interval.frac == frac
        if raw.size and (np.any(raw < interval.lo) or np.any(raw > interval.hi)):
            lo, hi = interval.reals()
            got = (float(raw.min()) * 2.0**-frac, float(raw.max()) * 2.0**-frac)
            bad.append(f"{name} ({found[name].op}): values {got} outside [{lo}, {hi}]")
    return bad


def _corners(graph, rng, found):
    """Input sets: random, all at the lower bound, all at the upper bound, each element at either."""
    def pick(how):
        raw = {}
        for inp in graph.inputs:
            interval = found[inp.name].quantized
            lo = np.broadcast_to(interval.lo, inp.type.shape)
            hi = np.broadcast_to(interval.hi, inp.type.shape)
            if how == "lo":
                raw[inp.name] = lo.copy()
            elif how == "hi":
                raw[inp.name] = hi.copy()
            elif how == "either":
                raw[inp.name] = np.where(rng.random(inp.type.shape) < 0.5, lo, hi)
            else:
                raw[inp.name] = rng.integers(lo, hi, endpoint=True)
        return raw

    return [pick(how) for how in ("lo", "hi", "either", "either", "random")]


_GRAPHS = op_graphs(max_ops=10) | nn_graphs()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate], print_blob=True)
@given(_GRAPHS, st.integers(0, 2**31 - 1), st.booleans())
def test_exact_values_lie_in_their_bounds(graph, seed, narrow):
    rng = np.random.default_rng(seed)
    given_ranges = {i.name: (-1.0, 0.75) for i in graph.inputs} if narrow else None
    found = ranges(graph, given_ranges)
    for index, raw in enumerate(_corners(graph, rng, found)):
        bad = outside(found, exact_values(graph, found, raw))
        if bad:
            path = save("ranges", graph, inputs=raw)
            pytest.fail(f"input set {index} (ranges {given_ranges}), saved as {path}: " + "; ".join(bad))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate], print_blob=True)
@given(_GRAPHS, st.integers(0, 2**31 - 1), st.sampled_from([8, 12, 16]))
def test_auto_typed_random_graphs_cannot_overflow(graph, seed, width):
    auto = retyped(graph, auto_types(graph, width))
    found = ranges(auto)
    rng = np.random.default_rng(seed)
    overflows = [n for n, r in found.items() if not r.fits]
    if overflows:
        path = save("ranges-auto", auto, inputs={})
        pytest.fail(f"auto:{width} types can overflow at {overflows}, saved as {path}")
    for index, raw in enumerate(_corners(auto, rng, found)):
        bad = outside(found, exact_values(auto, found, raw))
        if bad:
            path = save("ranges-auto", auto, inputs=raw)
            pytest.fail(f"input set {index}, saved as {path}: " + "; ".join(bad))


def test_auto_types_say_which_node_needs_more_than_64_bits():
    b = GraphBuilder("g", dtype="fixed<16,6>")
    x = b.input("x", [2])
    m = x
    for _ in range(3):
        m = b.op("mul", m, m)  # the bound squares (without knowing it is a square): +-2**10, 2**20, 2**40
    b.output(b.op("add", m, b.constant("c", np.array([0.001, 0.002])), name="a"))
    with pytest.raises(HlsfuseError, match=r"^auto:16: node 'a' \(add\): the exact result needs a \d+-bit signed exact "
                       r"intermediate.* \(inputs 'mul2' fixed<16,42,RND> in \[-1\.09944e\+12, 1\.09951e\+12\], 'c' "
                       r"fixed<16,-7,RND,SAT> in \[0\.000976562, 0\.00195312\]\); give the inputs narrower ranges, or "
                       r"calibrate$"):
        auto_types(b.build(), 16)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_bounds_hold_and_auto_types_cannot_overflow(path):
    graph = load_graph(path)
    found = ranges(graph)
    rng = np.random.default_rng(0)
    for raw in _corners(graph, rng, found)[:3]:
        assert outside(found, exact_values(graph, found, raw)) == []
    auto = retyped(graph, auto_types(graph, 16))
    assert [n for n, r in ranges(auto).items() if not r.fits] == []


# --------------------------------------------------------------------------
# The registry and the rules
# --------------------------------------------------------------------------


def test_every_op_of_the_registry_has_a_range_rule():
    missing = sorted(name for name, op in OPS.items() if op.bounds is None)
    assert missing == [], f"ops without a bounds rule: {missing}"


# One small graph per runnable op of the registry, on inputs of several types (unsigned, saturating,
# narrow), with each op's less common attributes: the random graphs above do not reach every op.
_W = np.array([[[[0.5, -1.0]], [[0.25, 0.75]]], [[[-0.5, 1.5]], [[1.0, -0.25]]]])  # [2, 2, 1, 2]
OP_CASES = {
    "add": lambda b, x, u: b.op("add", x, u), "sub": lambda b, x, u: b.op("sub", u, x),
    "mul": lambda b, x, u: b.op("mul", x, u), "maximum": lambda b, x, u: b.op("maximum", x, u),
    "minimum": lambda b, x, u: b.op("minimum", x, u), "relu": lambda b, x, u: b.op("relu", x),
    "leaky_relu": lambda b, x, u: b.op("leaky_relu", x, alpha=-0.3), "clip": lambda b, x, u: b.op("clip", x, min=-0.3,
                                                                                                   max=0.7),
    "neg": lambda b, x, u: b.op("neg", u), "abs": lambda b, x, u: b.op("abs", x),
    "cast": lambda b, x, u: b.op("cast", x, dtype="ufixed<6,2,RND,SAT_ZERO>"),
    "bias_add": lambda b, x, u: b.op("bias_add", x, b.constant(None, np.array([0.5, -2.0]))),
    "scale": lambda b, x, u: b.op("scale", u, b.constant(None, np.array([-0.75, 3.0]))),
    "sigmoid": lambda b, x, u: b.op("sigmoid", x, table_bits=4), "tanh": lambda b, x, u: b.op("tanh", u),
    "exp": lambda b, x, u: b.op("exp", x, dtype="ufixed<10,4>"),
    "elu": lambda b, x, u: b.op("elu", x, alpha=-0.5), "selu": lambda b, x, u: b.op("selu", x, table_bits=5),
    "softplus": lambda b, x, u: b.op("softplus", u), "softsign": lambda b, x, u: b.op("softsign", x),
    "hard_sigmoid": lambda b, x, u: b.op("hard_sigmoid", x, alpha=-0.75, beta=0.25),
    "hard_swish": lambda b, x, u: b.op("hard_swish", x, table_bits=6),  # non-monotone: -3/8 at -1.5
    "erf": lambda b, x, u: b.op("erf", x, table_bits=5),
    "gelu": lambda b, x, u: b.op("gelu", x, approximate="tanh"),  # non-monotone: -0.17 near -0.75
    "silu": lambda b, x, u: b.op("silu", x, table_bits=7),  # non-monotone: -0.28 at -1.28
    "reshape": lambda b, x, u: b.op("reshape", x, newshape=[1, 2, 3, 2]),
    "flatten": lambda b, x, u: b.op("flatten", x), "transpose": lambda b, x, u: b.op("transpose", x, axes=[0, 3, 1, 2]),
    "concat": lambda b, x, u: b.op("concat", x, u, axis=3),
    "slice": lambda b, x, u: b.op("slice", x, begin=[0, 0, 0, 1], end=[1, 3, 2, 2]),
    "pad": lambda b, x, u: b.op("pad", x, pads=[0, 1, 0, 0, 0, 0, 1, 1], value=2.5),
    "upsample2d": lambda b, x, u: b.op("upsample2d", u, factors=[2, 3], mode="zeros"),
    "threshold": lambda b, x, u: b.op("threshold", x, b.constant(None, np.array([[-1.5, 0.0, 0.0, 2.25],
                                                                               [-4.0, -0.5, 1.0, 3.0]]))),
    "squeeze": lambda b, x, u: b.op("squeeze", x, axes=[0]),
    "expand_dims": lambda b, x, u: b.op("expand_dims", x, axis=-1),
    "sum": lambda b, x, u: b.op("sum", x, axes=[1, 3]), "mean": lambda b, x, u: b.op("mean", u, axes=[2]),
    "max": lambda b, x, u: b.op("max", x, axes=[3], keepdims=True),
    "global_avg_pool": lambda b, x, u: b.op("global_avg_pool", x),
    "conv2d": lambda b, x, u: b.op("conv2d", x, b.constant(None, np.concatenate([_W, -_W], axis=2)),
                                   padding=[1, 0, 0, 1], strides=[1, 2]),
    "dense": lambda b, x, u: b.op("dense", u, b.constant(None, np.array([[1.0, -1.5], [0.25, 0.5], [-2.0, 0.0]]))),
    "matmul": lambda b, x, u: b.op("matmul", x, b.op("transpose", u, axes=[0, 1, 3, 2])),
    "max_pool2d": lambda b, x, u: b.op("max_pool2d", x, pool_size=[2, 2], strides=[1, 1], padding=[1, 1, 0, 0]),
    "avg_pool2d": lambda b, x, u: b.op("avg_pool2d", x, pool_size=[2, 2], padding=[1, 1, 1, 1],
                                       count_include_pad=True),
    "softmax": lambda b, x, u: b.op("softmax", x, table_bits=6), "argmax": lambda b, x, u: b.op("argmax", u, axis=1),
    "masked_softmax": lambda b, x, u: b.softmax(u, mask=b.constant(None, [[0, 1], [0, 0]], dtype="ufixed<1,1>"),
                                                table_bits=5),  # a row keeping one position, a row keeping both
    "topk": lambda b, x, u: b.op("topk", x, k=1, ret="indices"),
    "layer_norm": lambda b, x, u: b.op("layer_norm", x, b.constant(None, np.array([1.5, -0.75])),
                                       b.constant(None, np.array([0.25, -2.0])), norm_dtype="fixed<12,3,RND,SAT>"),
    "rms_norm": lambda b, x, u: b.op("rms_norm", u, b.constant(None, np.array([-1.25, 2.0])), epsilon=0.0),
}


def test_every_runnable_op_has_a_case():
    runnable = sorted(name for name, op in OPS.items() if op.compute is not None)
    assert sorted(OP_CASES) == runnable


@pytest.mark.parametrize("op", sorted(OP_CASES))
@pytest.mark.parametrize("types", [("fixed<8,3>", "ufixed<6,2,RND,SAT>"), ("fixed<10,2,TRN,SAT>", "fixed<6,6>")])
def test_exact_values_of_every_op_lie_in_their_bounds(op, types):
    b = GraphBuilder("one", dtype=types[0])
    x = b.input("x", [1, 3, 2, 2])
    u = b.input("u", [1, 3, 2, 2], dtype=types[1])
    b.output(OP_CASES[op](b, x, u))
    graph = b.build()
    found = ranges(graph)
    rng = np.random.default_rng(7)
    for raw in _corners(graph, rng, found) + _corners(graph, rng, found):
        assert outside(found, exact_values(graph, found, raw)) == []


def _graph(build):
    b = GraphBuilder("g", dtype="fixed<16,6>")
    x = b.input("x", [1, 2, 2, 2])
    b.output(build(b, x))
    return b.build()


def test_dense_bound_uses_the_weights_positive_and_negative_parts():
    def build(b, x):
        w = b.constant("w", np.array([[1.0, -2.0], [0.5, 0.25]]))
        return b.op("dense", x, w, name="d", dtype="fixed<24,12>")

    found = bounds(_graph(build), {"x": (-1.0, 3.0)})
    # row 0: 1*[-1,3] - 2*[-1,3] = [-1-6, 3+2]; row 1: 0.75*[-1,3]
    assert found["d"] == (Fraction(-7), Fraction(5))
    per_channel = ranges(_graph(build), {"x": (-1.0, 3.0)})["d"].exact
    assert per_channel.reals() == (-7.0, 5.0)
    assert [per_channel.real(v) for v in per_channel.hi] == [5.0, 2.25]


def test_conv_bound_counts_padding_zeros_and_groups():
    def build(b, x):
        w = b.constant("w", np.ones((3, 3, 1, 2)))
        return b.op("conv2d", x, w, name="c", padding=[1, 1, 1, 1], groups=2, dtype="fixed<24,12>")

    found = bounds(_graph(build), {"x": (0.5, 1.0)})
    assert found["c"] == (Fraction(0), Fraction(9))  # a border window reads zeros


def test_per_channel_bounds_follow_slices_and_concats():
    def build(b, x):
        scaled = b.op("scale", x, b.constant("s", np.array([1.0, -2.0])), name="m")
        one = b.op("add", scaled, b.constant("k", np.array([0.5])), name="a")  # a 1-channel operand
        part = b.op("slice", one, name="sl", begin=[0, 0, 0, 1], end=[1, 2, 2, 2])
        shifted = b.op("add", x, b.constant("k2", np.array([0.25])), name="a2")  # one bound for both channels
        b.op("slice", shifted, name="sl2", begin=[0, 0, 0, 1], end=[1, 2, 2, 2])
        b.output("sl2")
        return b.op("concat", part, one, name="cat", axis=3)

    found = ranges(_graph(build), {"x": (0.0, 1.0)})
    assert [found["a"].exact.real(v) for v in found["a"].exact.lo] == [0.5, -1.5]
    assert [found["sl"].exact.real(v) for v in found["sl"].exact.lo] == [-1.5]
    assert [found["cat"].exact.real(v) for v in found["cat"].exact.hi] == [0.5, 1.5, 0.5]
    assert found["a2"].exact.lo.shape == (1,) and found["sl2"].exact.reals() == (0.25, 1.25)


def test_sum_and_mean_bounds():
    def build(b, x):
        return b.op("mean", b.op("sum", x, name="s", axes=[1, 2], keepdims=True), name="m", axes=[3])

    found = bounds(_graph(build), {"x": (-0.5, 2.0)})
    assert found["s"] == (Fraction(-2), Fraction(8))
    assert found["m"] == (Fraction(-2), Fraction(8))


def test_lut_bounds_are_the_table_entries():
    def build(b, x):
        return b.op("sigmoid", x, name="y", dtype="ufixed<8,0>")

    graph = _graph(build)
    found = ranges(graph, {"x": (0.0, 0.0)})["y"]
    table_value = reference.run(graph, {"x": np.zeros((1, 2, 2, 2))})["y"].max()
    assert float(found.lo) == float(found.hi) == table_value
    assert found.fits


@pytest.mark.parametrize("overflow, expected", [("SAT", (-2.0, 1.9375)), ("WRAP", (-2.0, 1.9375)),
                                                ("SAT_ZERO", (0.0, 1.9375))])
def test_a_narrow_cast_can_overflow_and_its_consumers_see_the_overflow_mode(overflow, expected):
    def build(b, x):
        return b.op("cast", x, name="c", dtype=f"fixed<6,2,TRN,{overflow}>")

    found = ranges(_graph(build), {"x": (1.0, 3.0)})["c"]
    assert not found.fits
    assert (float(found.lo), float(found.hi)) == (1.0, 3.0)  # the exact value is the input's
    lo, hi = found.quantized.reals()
    if overflow == "WRAP":
        assert (lo, hi) == expected  # anything the type holds
    elif overflow == "SAT":
        assert (lo, hi) == (1.0, 1.9375)
    else:
        assert (lo, hi) == expected


def test_input_ranges_are_checked():
    graph = _graph(lambda b, x: b.op("relu", x, name="r"))
    with pytest.raises(HlsfuseError, match=r"input range for 'y': not an input of graph 'g' \(inputs: x\)"):
        ranges(graph, {"y": (0.0, 1.0)})
    with pytest.raises(HlsfuseError, match=r"input range for 'x': expected finite LO <= HI, not 2.0:1.0"):
        ranges(graph, {"x": (2.0, 1.0)})


def test_default_input_bound_is_the_type_range():
    graph = _graph(lambda b, x: b.op("neg", x, name="n", dtype="fixed<16,6>"))
    found = ranges(graph)
    assert found["x"].lo == -32 and found["x"].hi == Fraction(2**15 - 1, 2**10)
    assert found["n"].hi == 32 and not found["n"].fits  # -(-32) does not fit fixed<16,6>


@pytest.mark.parametrize("lo, hi, bits", [(0, 0, 0), (-1, 0, 1), (0, 1, 1), (0, Fraction(3, 4), 0),
                                          (-4, Fraction(7, 2), 3), (-Fraction(9, 2), 0, 4), (0, 255, 8)])
def test_int_bits_needed(lo, hi, bits):
    assert int_bits_needed(Fraction(lo), Fraction(hi)) == bits


def test_fitting_type_accounts_for_rounding_up():
    # 0.99999 rounds (RND) to 1.0 on a 4-fractional-bit grid, which ufixed<4,0> does not hold
    exact = Interval.of_reals(0.0, 0.99999)
    assert fitting_type(exact, 4) == FixedType(4, 1, False, "RND", "WRAP")
    assert fitting_type(Interval.of_reals(-3.0, 1.0), 8) == parse_dtype("fixed<8,3,RND>")
