"""Reduce stages (sum, mean, max, global_avg_pool) of the Verilog backend, bit-exact with the reference.

(tests/test_rtl_reduce.py tests the hw/rtl module hlsf_reduce; this file the generated stages.)
One design holds many small graphs side by side (``union``: one Verilator build): every
reduction over single, several, negative, default (all) and size-1 axes, with and without keepdims;
prologues (products, held broadcast operands, nodes computed before the loop) and epilogues (bias,
lookup tables, constant and streamed broadcast operands, residual joins); means whose quotient is
rounded by every quantization mode into every overflow mode, with positive and negative scaling
of the dividend; integer, unsigned and wide (52-bit sum) types. Separate designs of 8 frames check
the schedule: input size + output size cycles plus the held inputs, ratio <= 1.10.
"""

from __future__ import annotations

import numpy as np
import pytest
from rtl_design import design, lint, plan_of, simulate
from union import union

from hlsfuse import GraphBuilder

pytestmark = [pytest.mark.verilator, pytest.mark.pyverilator]

QUANTS = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_MIN_INF", "RND_INF", "RND_CONV")
OVERFLOWS = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")


def _const(b, rng, name, shape, dtype, scale=1.0):
    return b.constant(name, rng.uniform(-scale, scale, shape), dtype=dtype)


def _reduction_graphs():
    rng = np.random.default_rng(11)
    graphs = []

    # the nn zoo's reductions: prologues with products, a held operand and a pre loop; axes and keepdims
    b = GraphBuilder("zoo", dtype="int8")
    r = b.input("r", [2, 4, 6])
    u = b.input("u", [6], dtype="ufixed<8,3>")
    q = b.input("q", [2, 2, 2, 8], dtype="fixed<9,3,RND,SAT>")
    b.output(b.sum(b.mul(r, r, dtype="int16"), axes=[1], keepdims=True, dtype="int16"))
    u2 = b.relu(b.sub(u, _const(b, rng, "cu", [6], "fixed<8,3>", 2.0), dtype="fixed<10,4>"))
    b.output(b.mean(b.add(r, u2, dtype="fixed<12,5>"), axes=[0, 2], dtype="fixed<12,4,RND_INF,SAT>"))
    b.output(b.max(b.abs(r, dtype="int8"), dtype="fixed<10,8,RND,SAT>"))
    b.output(b.sum(r, axes=[-1], dtype="fixed<8,8,TRN,SAT>"))
    b.output(b.mean(r, axes=[1, 2], keepdims=True, dtype="fixed<10,4,RND_ZERO,WRAP>"))
    b.output(b.max(b.neg(q), axes=[0, 3], keepdims=True))
    graphs.append(b.build())

    # relu -> sum -> mul by a broadcast constant; a residual join with a streamed tensor; default axes
    b = GraphBuilder("epilogues", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4])
    s = b.sum(b.relu(x), axes=[1], keepdims=True, dtype="fixed<14,5,RND,SAT>")
    b.output(b.mul(s, _const(b, rng, "k", [4], "fixed<8,3>", 2.0), dtype="fixed<12,4,RND,SAT>"))
    b.output(b.add(b.sum(x, axes=[2], dtype="fixed<12,4,RND,SAT>"), b.input("z", [2, 3]), dtype="fixed<10,3,RND,SAT>"))
    b.output(b.sum(x, dtype="fixed<16,8>"))
    b.output(b.max(x, axes=[0, 1], dtype="fixed<8,2,RND_CONV,SAT_SYM>"))
    # operands as large as the loop: read at the input's (prologue) or output's (epilogue) flat index
    full = b.mul(x, _const(b, rng, "cx", [2, 3, 4], "fixed<6,2>", 2.0), dtype="fixed<12,4,RND,SAT>")
    b.output(b.sum(full, axes=[0], dtype="fixed<12,4,RND,SAT>"))
    g = b.global_avg_pool(b.input("xp", [2, 2, 2, 3]), dtype="fixed<12,4,RND,SAT>")
    b.output(b.add(g, _const(b, rng, "cg", [2, 1, 1, 3], "fixed<8,3>"), dtype="fixed<10,4,TRN_ZERO,SAT>"))
    graphs.append(b.build())

    # global average pools: bias, relu, a lookup table; a streamed join; a streamed scale held, through relu first
    b = GraphBuilder("pools", dtype="fixed<10,3,RND,SAT>")
    xb = b.input("xb", [2, 3, 3, 3])
    g1 = b.global_avg_pool(xb, dtype="fixed<12,3,RND,SAT>")
    b.output(b.sigmoid(b.relu(b.bias_add(g1, _const(b, rng, "bg", [3], "fixed<8,3>"))), table_bits=8))
    b.output(b.sub(b.global_avg_pool(xb), b.input("res", [2, 1, 1, 3]), dtype="fixed<10,3,RND_ZERO,SAT_ZERO>"))
    g2 = b.global_avg_pool(b.input("y", [2, 2, 5, 4], dtype="fixed<12,4>"), dtype="fixed<12,6,RND_CONV,SAT>")
    b.output(b.mul(g2, b.relu(b.input("gs", [4], dtype="fixed<8,2>")), dtype="fixed<12,6,RND,SAT>"))
    graphs.append(b.build())

    # size-1 axes only, unsigned values, a wide exact sum
    b = GraphBuilder("corners", dtype="fixed<8,3,RND,SAT>")
    s = b.input("s", [1, 3, 1])
    b.output(b.max(s, axes=[0, 2]), b.mean(s, axes=[2], keepdims=True, dtype="fixed<8,2,RND,SAT>"))
    uu = b.input("uu", [3, 5], dtype="ufixed<8,3>")
    b.output(b.sum(uu, axes=[0], dtype="ufixed<6,4,RND,SAT>"), b.max(uu, axes=[1], keepdims=True))
    b.output(b.mean(uu, axes=[1], dtype="ufixed<7,3,RND_INF,WRAP>"))
    b.output(b.mean(b.input("wide", [3, 16], dtype="fixed<48,20>"), axes=[1], dtype="fixed<40,30,RND,SAT>"))
    graphs.append(b.build())
    return graphs


def _mean_modes_graph():
    """Means by 3, 5 and 6 in every quantization mode, each overflow mode, dividends scaled up and down."""
    b = GraphBuilder("means", dtype="fixed<8,4>")
    x = b.input("x", [6, 5])
    fine = b.input("fine", [2, 3], dtype="fixed<16,2>")  # 14 fractional bits: the dividend is scaled down
    k = 0
    for quant in QUANTS:
        for axes, out in (([1], "fixed<6,3,{},{}>"), ([0], "fixed<9,2,{},{}>")):
            overflow = OVERFLOWS[k % len(OVERFLOWS)]
            b.output(b.mean(x, axes=axes, dtype=out.format(quant, overflow)))
            k += 1
        b.output(b.mean(fine, axes=[1], dtype=f"fixed<8,6,{quant},{OVERFLOWS[k % len(OVERFLOWS)]}>"))
    return b.build()


def _check(graph, folder, frames):
    plan = plan_of(graph)
    assert "reduce" in {s.kind for s in plan.stages}
    r = simulate(graph, folder, frames=frames, plan=plan)
    assert r.passed, r.report()
    assert r.compared == frames * sum(graph.types[name].size for name in graph.outputs)
    assert lint(design(graph, folder, plan)) == ""
    return r, plan


def test_reductions_are_bit_exact(tmp_path):
    _check(union(_reduction_graphs()), tmp_path, frames=3)


def test_means_round_every_way(tmp_path):
    _check(_mean_modes_graph(), tmp_path, frames=4)


def test_fused_reduction_runs_at_the_analytic_rate(tmp_path):
    rng = np.random.default_rng(12)
    b = GraphBuilder("relu_sum_mul", dtype="fixed<12,4,RND,SAT>")
    s = b.sum(b.relu(b.input("x", [4, 3, 5])), axes=[0, 2], keepdims=True, dtype="fixed<14,6,RND,SAT>")
    b.output(b.mul(s, _const(b, rng, "k", [3, 1], "fixed<8,3>", 2.0), dtype="fixed<12,4,RND_CONV,SAT>"))
    frames = 8
    r, plan = _check(b.build(), tmp_path, frames)
    stage = plan.stages[0]
    assert stage.nodes == ("relu0", "sum0")  # the mul is a map stage: reductions take no epilogue in fusion
    assert r.stages[0].busy == frames * stage.cycles  # 60 inputs + 3 outputs per frame, every cycle busy
    print(f"relu -> sum -> mul: {r.frame_cycles:.1f} cycles/frame, predicted {r.predicted_cycles}, ratio {r.ratio:.3f}")
    assert r.ratio <= 1.10


def test_pool_with_held_operand_runs_at_the_analytic_rate(tmp_path):
    b = GraphBuilder("gap_scale", dtype="fixed<10,3>")
    g = b.global_avg_pool(b.input("x", [2, 4, 4, 3]), dtype="fixed<12,4,RND,SAT>")
    b.output(b.add(g, b.input("bias", [3], dtype="fixed<8,3>"), dtype="fixed<10,3,RND,SAT>"))
    frames = 8
    r, plan = _check(b.build(), tmp_path, frames)
    (stage,) = plan.stages
    assert stage.uses == ("head", "held")
    assert r.stages[0].busy == frames * stage.cycles  # 96 + 6 + 3 held per frame
    print(
        f"global_avg_pool + held bias: {r.frame_cycles:.1f} cycles/frame, predicted {r.predicted_cycles}, "
        f"ratio {r.ratio:.3f}"
    )
    assert r.ratio <= 1.10
