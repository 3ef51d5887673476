"""Own stages of the Verilog backend (slice, pad, concat, transpose, softmax, argmax, topk), bit for bit.

The graphs are lowered with fpga fusion and emitted with ``emit_verilog`` side by side in a design (one Verilator
build for several graphs: ``rtl_design.simulate_union``), which ``rtlsim`` simulates on several frames back to back
(a stage that kept state from the previous frame fails), comparing every output element with the reference
interpreter; every run is the timing model's, cycle for cycle. Graphs hold many own stages with fixed-point and
integer types, rounding and overflow modes, constant operands (ROMs) and map stages before and after them, in a
design linted with ``verilator -Wall``. Single-stage graphs, side by side in a second design, each fed by ports of its
own, check the steady-state cycles per frame at their ports against the schedule (``lower/stage_own.py``).
"""

from __future__ import annotations

import pytest
from own_graphs import own_ops, rtl_joins, rtl_movers, rtl_picks, rtl_random_slices, rtl_softmaxes
from rtl_design import DRIVER, DRIVER_MARK, lint, plan_of, simulate_union

from hlsfuse import GraphBuilder

pytestmark = [pytest.mark.verilator, DRIVER_MARK]

FRAMES = 3


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
SCHEDULE_FRAMES = 10

GRAPHS = {"movers": rtl_movers, "joins": rtl_joins, "softmaxes": rtl_softmaxes, "picks": rtl_picks,
          "random_slices": rtl_random_slices}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The graphs of GRAPHS in one design, simulated for FRAMES frames: (the run, its lint)."""
    folder = tmp_path_factory.mktemp("own")
    run = simulate_union([make() for make in GRAPHS.values()], folder, frames=FRAMES, driver=DRIVER, name="own",
                         timed=False)
    return run, lint(folder)


@pytest.fixture(scope="module")
def schedules(tmp_path_factory):
    """The single-stage graphs of SCHEDULES in one design, simulated for SCHEDULE_FRAMES frames: (the run, its parts
    by name)."""
    graphs = [_one(f"sched_{name}", SCHEDULES[name]) for name in sorted(SCHEDULES)]
    run = simulate_union(graphs, tmp_path_factory.mktemp("schedules"), frames=SCHEDULE_FRAMES, driver=DRIVER,
                         name="schedules")
    return run, dict(zip(sorted(SCHEDULES), run.parts))


def check(name, shared):
    """The shared run is bit-exact (every output of every graph) and lint clean; returns the graph's own plan."""
    run, linted = shared
    assert run.result.passed, run.result.report()
    assert run.result.compared == FRAMES * sum(run.graph.types[t].size for t in run.graph.outputs)
    assert linted == ""
    return plan_of(GRAPHS[name]())


# --------------------------------------------------------------------------
# Bit-exact designs
# --------------------------------------------------------------------------


def test_slices_pads_and_transposes(shared):
    graph, plan = rtl_movers(), check("movers", shared)
    assert set(own_ops(graph, plan)) == {"slice", "pad", "transpose"}
    assert any(s.kind == "map" for s in plan.stages) and any(s.kind == "fork" for s in plan.stages)


def test_concats(shared):
    assert set(own_ops(rtl_joins(), check("joins", shared))) == {"concat"}


def test_softmax(shared):
    assert own_ops(rtl_softmaxes(), check("softmaxes", shared)) == ["softmax"] * 6


def test_argmax_and_topk(shared):
    assert set(own_ops(rtl_picks(), check("picks", shared))) == {"argmax", "topk"}


def test_random_slices(shared):
    """Slices with random begins, ends and steps (both signs) on a 3-d input."""
    check("random_slices", shared)


# --------------------------------------------------------------------------
# Schedules: steady-state cycles per frame against the analytic model
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_cycles_per_frame_match_the_schedule(name, schedules):
    run, parts = schedules
    plan = plan_of(_one(f"sched_{name}", SCHEDULES[name]))
    assert [s.kind for s in plan.stages] == ["own"]
    assert run.result.passed, run.result.report()
    part = parts[name]
    (stage,) = part.stages  # the graph's one stage, in the shared design
    assert stage.kind == "own" and stage.cycles == plan.stages[0].cycles
    # a single stage fed by ports of its own is never starved nor blocked in steady state: exactly its schedule's
    # iterations per frame
    assert part.frame_cycles == plan.cycles == plan.stages[0].cycles, (part.frame_cycles, run.result.report())
    count = part.counts[stage.name]
    # a pad whose frame starts with padding writes those fill elements of the next frame without its input
    assert SCHEDULE_FRAMES * count.iterations <= count.busy < (SCHEDULE_FRAMES + 1) * count.iterations
