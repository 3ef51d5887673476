"""Own stages of the Verilog backend (slice, pad, concat, transpose, softmax, argmax, topk), bit for bit.

Each design is lowered with fpga fusion, emitted with ``emit_verilog``, linted with ``verilator -Wall``
and simulated by ``rtlsim`` on several frames back to back (a stage that kept state from the previous
frame fails), comparing every output element with the reference interpreter. Graphs hold many own
stages with fixed-point and integer types, rounding and overflow modes, constant operands (ROMs) and
map stages before and after them; single-stage designs check the steady-state cycles per frame
against the schedule (``lower/own.py``); every run is the timing model's, cycle for cycle.
"""

from __future__ import annotations

import numpy as np
import pytest
from rtl_design import lint, plan_of, simulate

from hlsfuse import GraphBuilder

pytestmark = pytest.mark.verilator


def own_ops(graph, plan) -> list[str]:
    return sorted(graph.node(s.head).op for s in plan.stages if s.kind == "own")


def check(graph, tmp_path, frames=3):
    """Simulate ``graph`` (all outputs bit-exact), lint it clean; returns (result, plan)."""
    plan = plan_of(graph)
    r = simulate(graph, tmp_path, frames=frames)
    assert r.passed, r.report()
    assert r.compared == frames * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""
    return r, plan


# --------------------------------------------------------------------------
# Bit-exact designs
# --------------------------------------------------------------------------


def test_slices_pads_and_transposes(tmp_path):
    b = GraphBuilder("movers", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4, 5])
    u = b.input("u", [2, 3, 4], dtype="ufixed<9,2>")
    n = b.input("n", [3, 4, 5], dtype="int8")
    m = b.input("m", [6, 7], dtype="fixed<10,6,RND_CONV,SAT_SYM>")
    r = b.relu(b.add(x, x, dtype="fixed<12,4,RND,SAT>"))  # a map stage in front, forked to own stages
    c = b.constant("c", np.random.default_rng(3).uniform(-2, 2, [2, 3]), dtype="fixed<10,3>")
    outs = [
        # streaming slices: positive steps, clamped bounds, unsliced trailing axes, a type change
        b.slice(x, begin=[0, 1, 0], end=[2, 3, 4], step=[1, 1, 2]),
        b.slice(n, begin=[1, 0, 1], end=[2, 9, 4], step=[1, 2, 2], dtype="fixed<6,3,RND,SAT_SYM>"),
        b.slice(u, begin=[-1], end=[100], dtype="ufixed<6,1,TRN_ZERO,WRAP>"),
        b.slice(b.input("s", [], dtype="int8"), begin=[], end=[]),  # a scalar
        # gathered slices: negative steps on several axes, a reversed inner block, one element "backwards"
        b.slice(x, begin=[1, -1, 3, 4], end=[-3, -4, 0, 0], step=[-1, -1, -2, -2]),
        b.slice(r, begin=[0, 2, -1], end=[2, 0, -5], step=[1, -1, -1], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.slice(m, begin=[5, 6], end=[-100, -100], step=[-2, -3]),
        b.slice(m, begin=[-2], end=[-3], step=[-1]),
        # pads: the value rounded and saturated into the output type, several types and modes
        b.pad(x, pads=[0, 1, 2, 0, 1, 0, 1, 2], value=0.7, dtype="fixed<10,3,RND,SAT>"),
        b.pad(u, pads=[1, 0, 0, 0, 0, 1], value=-1.0),  # ufixed: the fill saturates to 0
        b.pad(m, pads=[2, 1, 0, 3], value=100.0, dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(n, pads=[0, 0, 0, 0, 0, 0], value=3.0, dtype="fixed<7,5,TRN_ZERO,WRAP>"),
        # reflect and edge pads: a block from the first padded axis on, a long reflection, a constant
        b.pad(x, pads=[0, 1, 2, 0, 0, 2, 1, 3], mode="reflect"),
        b.pad(m, pads=[2, 1, 3, 9], mode="edge", dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(r, pads=[0, 0, 0, 4, 0, 0, 0, 6], mode="reflect", dtype="fixed<8,2,RND_CONV,SAT>"),
        b.pad(c, pads=[1, 0, 0, 2], mode="edge"),
        # reordering transposes of rank 2 to 4, one of a constant (read from its ROM)
        b.transpose(m),
        b.transpose(r, axes=[0, 3, 1, 2], dtype="fixed<8,3,RND,WRAP>"),
        b.transpose(n, axes=[2, 1, 0], dtype="ufixed<6,3,RND_CONV,SAT>"),
        b.transpose(c),
    ]
    # own stages in a chain, and a slice between two map stages
    p = b.pad(b.transpose(u, axes=[1, 0, 2]), pads=[0, 1, 1, 0, 0, 1], value=-0.5)
    outs.append(b.slice(p, begin=[2, 1, 3], end=[-5, 0, -100], step=[-1, -1, -1]))
    s = b.slice(r, begin=[0, 0, 0, 4], end=[2, 3, 4, -6], step=[1, 1, 1, -1], dtype="fixed<12,5>")
    outs.append(b.mul(s, b.abs(s), dtype="fixed<12,4,RND,SAT>"))
    b.output(*outs)
    graph = b.build()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"slice", "pad", "transpose"}
    assert any(s.kind == "map" for s in plan.stages) and any(s.kind == "fork" for s in plan.stages)


def test_concats(tmp_path):
    b = GraphBuilder("joins", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 2], dtype="fixed<8,3,RND,SAT>")
    u = b.input("u", [2, 3, 4], dtype="ufixed<9,2>")
    n = b.input("n", [2, 3, 4], dtype="int8")
    c = b.constant("c", np.random.default_rng(5).uniform(-2, 2, [2, 1, 4]), dtype="fixed<10,3>")
    r = b.relu(x)
    outs = [
        b.concat(x, y, axis=-1),
        b.concat(y, x, u, n, axis=2, dtype="fixed<9,4,RND,SAT>"),
        b.concat(x, u, axis=0, dtype="fixed<14,5>"),
        b.concat(n, x, r, axis=1, dtype="fixed<10,4,RND_ZERO,SAT>"),
        b.concat(x, c, u, axis=1, dtype="fixed<11,3,RND_MIN_INF,SAT_SYM>"),  # a constant operand (ROM)
        b.concat(x, x, axis=1, dtype="int8"),  # one tensor read twice; an integer type that wraps
        b.concat(c, c, axis=0),  # constants only
    ]
    outs.append(b.abs(b.concat(r, n, axis=0)))  # between map stages
    b.output(*outs)
    graph = b.build()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"concat"}


def test_softmax(tmp_path):
    b = GraphBuilder("softmaxes", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")
    outs = [
        b.softmax(x, table_bits=3),
        b.softmax(z, table_bits=6, dtype="ufixed<8,0,RND_CONV,SAT>"),
        b.softmax(v, table_bits=10),  # unsigned input: x - max is signed
        b.softmax(
            w,
            table_bits=12,
            exp_dtype="fixed<12,3,RND,SAT>",  # a signed exp type: a signed sum
            recip_dtype="ufixed<12,2,RND_INF,SAT>",
            dtype="fixed<12,2,RND,SAT>",
        ),
        b.softmax(k, table_bits=16, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>"),
        b.relu(b.softmax(z, table_bits=8, dtype="fixed<9,1,TRN_ZERO,SAT_SYM>")),  # feeding a map stage
    ]
    b.output(*outs)
    graph = b.build()
    _, plan = check(graph, tmp_path)
    assert own_ops(graph, plan) == ["softmax"] * 6


def test_argmax_and_topk(tmp_path):
    b = GraphBuilder("picks", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")  # few values: ties
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")
    c = b.constant("c", np.array([[0.5, -1.0, 0.5, 2.0], [1.0, 1.0, -3.0, 1.0]]), dtype="fixed<8,4>")
    outs = []
    for axis in range(3):
        outs.append(b.argmax(z, axis=axis))
        outs.append(b.argmax(x, axis=axis - 3, keepdims=True, dtype="uint8"))
    outs += [
        b.argmax(w, axis=0, dtype="int16"),
        b.argmax(w, axis=1, dtype="fixed<12,8>"),
        b.argmax(v, axis=-1, dtype="ufixed<4,4,RND,SAT>"),
        b.argmax(k),
        b.argmax(c, axis=0),
        b.topk(x, k=2),
        b.topk(w, k=5),  # a full sort, ties by lower index
        b.topk(w, k=3, ret="indices"),
        b.topk(w, k=1, ret="indices", dtype="uint8"),
        b.topk(v, k=4, dtype="fixed<6,2,RND,SAT>"),
        b.topk(k, k=3, ret="indices", dtype="fixed<10,6,RND,SAT>"),
        b.topk(k, k=7, dtype="fixed<5,3,RND_CONV,WRAP>"),
        b.topk(c, k=3, ret="indices"),
        b.neg(b.topk(z, k=3)),  # between map stages
    ]
    b.output(*outs)
    graph = b.build()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"argmax", "topk"}


def test_random_slices(tmp_path):
    """Slices with random begins, ends and steps (both signs) on a 3-d input."""
    rng = np.random.default_rng(11)
    b = GraphBuilder("random_slices", dtype="fixed<9,3,RND,SAT>")
    x = b.input("x", [3, 4, 5])
    outs = []
    while len(outs) < 8:
        begin, end, step = [], [], []
        for n in (3, 4, 5)[: rng.integers(1, 4)]:
            s = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            lo, hi = int(rng.integers(-n - 1, n + 1)), int(rng.integers(-n - 1, n + 1))
            if not range(*slice(lo, hi, s).indices(n)):
                break
            begin.append(lo), end.append(hi), step.append(s)
        else:
            outs.append(b.slice(x, begin=begin, end=end, step=step))
    b.output(*outs)
    check(b.build(), tmp_path)


# --------------------------------------------------------------------------
# Schedules: steady-state cycles per frame against the analytic model
# --------------------------------------------------------------------------


def _one(name, make, shape=(4, 6), dtype="fixed<10,4>"):
    b = GraphBuilder(name, dtype=dtype)
    b.output(make(b, b.input("x", list(shape))))
    return b.build()


SCHEDULES = {
    "pad": lambda b, x: b.pad(x, pads=[1, 0, 0, 2], value=0.25),
    "concat": lambda b, x: b.concat(x, b.input("y", [4, 3]), b.input("z", [4, 1], dtype="int8"), axis=1),
    "slice": lambda b, x: b.slice(x, begin=[1, 0], end=[4, 6], step=[2, 2]),
    "slice_back": lambda b, x: b.slice(x, begin=[3, 5], end=[0, -100], step=[-1, -2]),
    "transpose": lambda b, x: b.transpose(x),
    "softmax": lambda b, x: b.softmax(x, table_bits=8),
    "argmax": lambda b, x: b.argmax(x),
    "argmax_outer": lambda b, x: b.argmax(x, axis=0),
    "topk": lambda b, x: b.topk(x, k=3, ret="indices"),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_cycles_per_frame_match_the_schedule(name, tmp_path):
    graph = _one(f"sched_{name}", SCHEDULES[name])
    plan = plan_of(graph)
    assert [s.kind for s in plan.stages] == ["own"]
    r = simulate(graph, tmp_path, frames=10)
    assert r.passed, r.report()
    # a single stage is never starved nor blocked in steady state: exactly its schedule's iterations per frame
    assert r.frame_cycles == r.predicted_cycles == plan.stages[0].cycles, r.report()
    (stage,) = r.stages
    # a pad whose frame starts with padding writes those fill elements of the next frame without its input
    assert 10 * stage.iterations <= stage.busy < 11 * stage.iterations
