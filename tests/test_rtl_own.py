"""Own stages of the Verilog backend (slice, pad, concat, transpose, softmax, argmax, topk), bit for bit.

Each design is lowered with fpga fusion, emitted with ``emit_verilog``, linted with ``verilator -Wall``
and simulated by ``rtlsim`` on several frames back to back (a stage that kept state from the previous
frame fails), comparing every output element with the reference interpreter. Graphs hold many own
stages with fixed-point and integer types, rounding and overflow modes, constant operands (ROMs) and
map stages before and after them; single-stage designs check the steady-state cycles per frame
against the schedule (``lower/stage_own.py``); every run is the timing model's, cycle for cycle.
"""

from __future__ import annotations

import pytest
from own_graphs import own_ops, rtl_joins, rtl_movers, rtl_picks, rtl_random_slices, rtl_softmaxes
from rtl_design import lint, plan_of, simulate

from hlsfuse import GraphBuilder

pytestmark = [pytest.mark.verilator, pytest.mark.pyverilator]


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
    graph = rtl_movers()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"slice", "pad", "transpose"}
    assert any(s.kind == "map" for s in plan.stages) and any(s.kind == "fork" for s in plan.stages)


def test_concats(tmp_path):
    graph = rtl_joins()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"concat"}


def test_softmax(tmp_path):
    graph = rtl_softmaxes()
    _, plan = check(graph, tmp_path)
    assert own_ops(graph, plan) == ["softmax"] * 6


def test_argmax_and_topk(tmp_path):
    graph = rtl_picks()
    _, plan = check(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"argmax", "topk"}


def test_random_slices(tmp_path):
    """Slices with random begins, ends and steps (both signs) on a 3-d input."""
    check(rtl_random_slices(), tmp_path)


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
