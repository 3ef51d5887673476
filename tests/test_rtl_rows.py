"""Rows stages (dense, matmul) of the Verilog backend: Verilator simulation bit-exact with the reference.

One design holds many small graphs side by side (``union``: one Verilator build): dense
and matmul with constant, streamed (held) and batch-broadcast second operands, 1-D to 4-D inputs,
epilogues with constant (broadcast and full-size) and streamed broadcast operands, nodes computed
before the rows, residual joins and lookup tables, integer and fixed types with every rounding and
overflow family. Separate designs of 8 frames check the schedule: rows x (K + N) cycles plus the
held inputs, ratio <= 1.10.
"""

from __future__ import annotations

import numpy as np
import pytest
from rtl_design import design, lint, plan_of, simulate
from union import union

from hlsfuse import GraphBuilder, HlsfuseError

pytestmark = pytest.mark.verilator


def _const(b, rng, name, shape, dtype, scale=1.0):
    return b.constant(name, rng.uniform(-scale, scale, shape), dtype=dtype)


def _dense_graphs():
    rng = np.random.default_rng(5)
    graphs = []

    b = GraphBuilder("dense_bias", dtype="fixed<12,4>")
    d = b.dense(b.input("x", [3, 5]), _const(b, rng, "w", [4, 5], "fixed<8,1>"), dtype="fixed<14,5,RND,SAT>")
    b.output(b.relu(b.bias_add(d, _const(b, rng, "bias", [4], "fixed<8,3>")), dtype="ufixed<8,3,RND_CONV,SAT>"))
    graphs.append(b.build())

    # a 1-D input (one row), and a 3-D one through a lookup table
    b = GraphBuilder("dense_shapes", dtype="fixed<8,3>")
    b.output(b.relu(b.dense(b.input("v1", [6]), _const(b, rng, "w6", [3, 6], "fixed<8,1>"))))
    d = b.dense(
        b.input("v", [2, 3, 8], dtype="fixed<12,5>"),
        _const(b, rng, "wd", [6, 8], "fixed<8,1>"),
        dtype="fixed<14,5,RND,SAT>",
    )
    b.output(b.tanh(b.bias_add(d, _const(b, rng, "bd", [6], "fixed<8,3>")), dtype="fixed<8,1,RND,SAT>"))
    graphs.append(b.build())

    # streamed weights (held whole before the rows) into a narrow wrapping type
    b = GraphBuilder("dense_held", dtype="fixed<12,5>")
    b.output(
        b.dense(b.input("v", [2, 3, 8]), b.input("wn", [4, 8], dtype="fixed<8,2>"), dtype="fixed<10,3,RND_INF,WRAP>")
    )
    graphs.append(b.build())

    # integers: int8 x int8 saturated to int16 and, unsigned, wrapped to uint8
    b = GraphBuilder("dense_int", dtype="int8")
    xi = b.input("xi", [4, 7])
    b.output(b.dense(xi, _const(b, rng, "wi", [3, 7], "int8", 100.0), dtype="int16"))
    b.output(b.dense(b.input("xu", [2, 5], dtype="uint8"), _const(b, rng, "wu", [3, 5], "uint8", 200.0), dtype="uint8"))
    b.output(b.dense(xi, _const(b, rng, "ws", [2, 7], "int8", 100.0), dtype="fixed<8,8,TRN,SAT_SYM>"))
    graphs.append(b.build())

    # a streamed bias held whole, with a node computed from it before the rows (a pre loop), and
    # rounding modes that only a dot product of odd values exercises
    b = GraphBuilder("dense_pre", dtype="fixed<10,3>")
    x = b.input("x", [3, 6])
    bias = b.relu(b.input("bias_in", [5], dtype="fixed<10,4>"), dtype="ufixed<8,3,RND,SAT>")
    d = b.dense(x, _const(b, rng, "w", [5, 6], "fixed<6,1,RND>"), dtype="fixed<8,2,TRN_ZERO,SAT_ZERO>")
    b.output(b.add(d, bias, dtype="fixed<6,-1,RND_MIN_INF,WRAP>"))
    b.output(b.dense(x, _const(b, rng, "w2", [2, 6], "fixed<7,2>"), dtype="fixed<9,4,RND_ZERO,SAT>"))
    graphs.append(b.build())

    # an epilogue constant as large as the output: read at the output's flat index
    b = GraphBuilder("dense_full", dtype="fixed<10,4>")
    d = b.dense(b.input("x", [3, 5]), _const(b, rng, "w", [4, 5], "fixed<8,2>"), dtype="fixed<12,5,RND,SAT>")
    b.output(b.sub(d, _const(b, rng, "c", [3, 4], "fixed<8,4>", 4.0), dtype="fixed<10,4,RND_INF,SAT>"))
    graphs.append(b.build())

    # a wide exact accumulation: 61-bit products summed over 6 terms
    b = GraphBuilder("dense_wide", dtype="fixed<31,10>")
    b.output(
        b.dense(b.input("v", [2, 6]), _const(b, rng, "wd", [3, 6], "fixed<30,3>", 3.0), dtype="fixed<24,12,RND,SAT>")
    )
    graphs.append(b.build())
    return graphs


def _matmul_graphs():
    rng = np.random.default_rng(6)
    graphs = []

    # constant b, batched b, b broadcast over the batch dims both ways
    b = GraphBuilder("matmul_const", dtype="fixed<12,5>")
    v = b.input("v", [2, 3, 8])
    q = b.input("q", [2, 2, 2, 8], dtype="fixed<9,3,RND,SAT>")
    b.output(b.matmul(v, _const(b, rng, "bm1", [8, 5], "fixed<8,2>"), dtype="fixed<14,6,RND,SAT>"))
    b.output(b.matmul(v, _const(b, rng, "bm2", [2, 8, 5], "fixed<8,2>"), dtype="fixed<12,5,RND_CONV,SAT>"))
    b.output(b.matmul(q, _const(b, rng, "bm3", [2, 1, 8, 5], "fixed<8,2>"), dtype="fixed<12,5,RND,SAT>"))
    b.output(b.matmul(q, _const(b, rng, "bm4", [2, 8, 5], "fixed<8,2>"), dtype="fixed<12,5,TRN,SAT>"))
    graphs.append(b.build())

    # a streamed b (held) and a residual join with another matmul of the same input
    b = GraphBuilder("matmul_held", dtype="fixed<12,5>")
    v = b.input("v", [2, 3, 8])
    m1 = b.matmul(v, _const(b, rng, "bm1", [8, 5], "fixed<8,2>"), dtype="fixed<14,6,RND,SAT>")
    m4 = b.matmul(v, b.input("bm", [8, 5], dtype="fixed<8,3>"), dtype="fixed<14,6,RND,SAT>")
    b.output(b.add(m4, m1, dtype="fixed<14,6,RND,SAT>"))
    graphs.append(b.build())

    # a streamed batched b, and an epilogue operand broadcast over rows (a constant [1, N] row)
    b = GraphBuilder("matmul_batched_held", dtype="fixed<10,4>")
    a = b.input("a", [2, 3, 4])
    m = b.matmul(a, b.input("bb", [2, 4, 3], dtype="fixed<8,3>"), dtype="fixed<12,5,RND_INF,SAT_SYM>")
    b.output(b.mul(m, _const(b, rng, "k", [1, 3], "fixed<6,2>", 2.0), dtype="fixed<10,4,RND,SAT>"))
    graphs.append(b.build())

    # b transposed (attention's Q K^T from K as it streams): held and batched, and a constant broadcast over batches
    b = GraphBuilder("matmul_transposed", dtype="fixed<10,4>")
    q, k = b.input("q", [2, 3, 4]), b.input("k", [2, 5, 4], dtype="fixed<8,3>")
    b.output(b.matmul(q, k, transpose_b=True, dtype="fixed<12,5,RND,SAT>"))
    b.output(b.matmul(q, _const(b, rng, "bt", [6, 4], "fixed<8,2>"), transpose_b=True, dtype="fixed<12,5,RND,SAT>"))
    graphs.append(b.build())

    # integers: uint8 @ int8 into int16
    b = GraphBuilder("matmul_int", dtype="uint8")
    b.output(b.matmul(b.input("a", [3, 4]), _const(b, rng, "bi", [4, 2], "int8", 100.0), dtype="int16"))
    graphs.append(b.build())
    return graphs


def _check(graph, folder, frames):
    plan = plan_of(graph)
    assert {"rows"} <= {s.kind for s in plan.stages}
    r = simulate(graph, folder, frames=frames, plan=plan)
    assert r.passed, r.report()
    assert r.compared == frames * sum(graph.types[name].size for name in graph.outputs)
    assert lint(design(graph, folder, plan)) == ""
    return r, plan


@pytest.mark.pyverilator
def test_dense_stages_are_bit_exact(tmp_path):
    _check(union(_dense_graphs()), tmp_path, frames=3)


@pytest.mark.pyverilator
def test_matmul_stages_are_bit_exact(tmp_path):
    _check(union(_matmul_graphs()), tmp_path, frames=3)


def _rows_busy_equals_the_schedule(r, plan, frames):
    """Every rows stage fires exactly rows x (K + N) + held times per frame (it has no pre loops here)."""
    for s, count in zip(plan.stages, r.stages):
        if s.kind == "rows":
            assert count.busy == frames * s.cycles, (s.name, count.busy, s.cycles)


@pytest.mark.pyverilator
def test_dense_chain_runs_at_the_analytic_rate(tmp_path):
    rng = np.random.default_rng(8)
    b = GraphBuilder("mlp_small", dtype="fixed<12,4,RND,SAT>")
    h = b.input("x", [4, 12])
    for k, (n, width) in enumerate(((10, 12), (6, 10))):
        h = b.dense(h, _const(b, rng, f"w{k}", [n, width], "fixed<8,1>", 0.5))
        h = b.relu(b.bias_add(h, _const(b, rng, f"b{k}", [n], "fixed<8,3>")))
    b.output(h)
    frames = 8
    r, plan = _check(b.build(), tmp_path, frames)
    print(f"dense chain: {r.frame_cycles:.1f} cycles/frame, predicted {r.predicted_cycles}, ratio {r.ratio:.3f}")
    assert r.ratio <= 1.10
    _rows_busy_equals_the_schedule(r, plan, frames)


@pytest.mark.pyverilator
def test_matmul_with_held_operands_runs_at_the_analytic_rate(tmp_path):
    rng = np.random.default_rng(9)
    b = GraphBuilder("matmul_rate", dtype="fixed<10,4>")
    a = b.input("a", [2, 3, 6])
    m = b.matmul(a, b.input("bb", [2, 6, 4], dtype="fixed<8,3>"), dtype="fixed<12,5,RND,SAT>")
    m = b.add(m, b.input("bias", [4], dtype="fixed<8,3>"), dtype="fixed<12,5,RND,SAT>")
    b.output(b.mul(m, _const(b, rng, "k", [3, 1], "fixed<6,2>", 2.0), dtype="fixed<10,4,RND_CONV,SAT>"))
    frames = 8
    r, plan = _check(b.build(), tmp_path, frames)
    rows = next(s for s in plan.stages if s.kind == "rows")
    assert rows.uses.count("held") == 2  # b and the bias: the row loop repeats after the held loops
    print(
        f"matmul with held operands: {r.frame_cycles:.1f} cycles/frame, predicted {r.predicted_cycles}, "
        f"ratio {r.ratio:.3f}"
    )
    assert r.ratio <= 1.10
    _rows_busy_equals_the_schedule(r, plan, frames)


def test_matmul_whose_streamed_a_broadcasts_is_refused(tmp_path):
    b = GraphBuilder("bcast", dtype="fixed<8,3>")
    b.output(b.matmul(b.input("a", [1, 4, 4]), b.constant("bb", np.ones([2, 4, 5]))))
    with pytest.raises(HlsfuseError) as err:
        design(b.build(), tmp_path)
    assert str(err.value) == (
        "node 'matmul0' (matmul): input 'a' with batch dims [1] is broadcast to the output's [2]; "
        "a stage streams 'a' once, so its batch dims must match the output's"
    )
