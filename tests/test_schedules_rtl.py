"""Every stage kind's schedule, measured in Verilator: busy cycles, cycles per frame, the attention block's rate;
the reproducers of tests/repro as regression tests.

The graphs of tests/test_snapshots.py (one per stage kind: map, fork, window, rows, reduce, every own
op, and a map stage given lanes, with its width converters) run side by side in one design; an
attention block (two dense projections of one input, the matmul of the two, a transpose, a
softmax, the matmul with a third projection: a chain of stages that hold whole tensors) runs on
its own. Each run must be bit-exact and the plan's timing model
cycle for cycle (``rtl_design.simulate``): the same cycles, every stage fired as many iterations.
The reproducers run side by side in one design (one Verilator build) and in one C simulation (one g++
build per header set), each graph with ports of its own, as it would run alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from hls_support import csim_both, write_union
from rtl_design import DRIVER, DRIVER_MARK, lint, plan_of, simulate, simulate_union
from test_schedule import REPRO, REPRODUCERS
from test_snapshots import GRAPHS
from union import union

from hlsfuse import GraphBuilder
from hlsfuse.graph_json import load_graph
from hlsfuse.lower import Folding
from hlsfuse.lower.plan import STAGE_KINDS

pytestmark = pytest.mark.verilator


def attention(tokens: int = 16, features: int = 16, width: int = 8):
    rng = np.random.default_rng(4)
    b = GraphBuilder("attention", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [tokens, features])

    def project(name: str) -> str:
        w = b.constant(f"w{name}", rng.normal(size=(width, features)) * 0.2, dtype="fixed<8,1,RND,SAT>")
        return b.dense(x, w, name=name)

    q, k, v = project("q"), project("k"), project("v")
    scores = b.matmul(q, b.transpose(k, name="kt"), name="scores")
    b.output(b.matmul(b.softmax(scores, name="p"), v, name="out"))
    return b.build()


@DRIVER_MARK
def test_every_stage_kind_runs_its_schedule(tmp_path):
    graph = union([make() for make in GRAPHS.values()], name="kinds")
    # the first map stage moves its sink's whole innermost dimension per transfer: converters on both sides
    wide = next(s for s in plan_of(graph).stages if s.kind == "map" and graph.types[s.sink].shape[-1] > 1)
    plan = plan_of(graph, fold=Folding(lanes=((wide.sink, graph.types[wide.sink].shape[-1]),)))
    assert {s.kind for s in plan.stages} == set(STAGE_KINDS)
    own = {graph.node(s.head).op for s in plan.stages if s.kind == "own"}
    assert own == {"slice", "pad", "concat", "transpose", "softmax", "argmax", "topk"}
    frames = 3
    result = simulate(graph, tmp_path, frames=frames, driver=DRIVER, plan=plan)  # busy cycles as the model's
    assert result.passed, result.report()
    for stage, count in zip(plan.stages, result.stages):
        # every frame runs the schedule's iterations; a stage may get ahead into the next frame's iterations
        # that read nothing (padding, setup of constants), never further
        assert frames * stage.cycles <= count.busy < (frames + 1) * stage.cycles, (stage.name, count.busy)
    assert lint(tmp_path) == ""


def test_an_attention_block_runs_at_its_predicted_rate(tmp_path):
    graph = attention()
    plan = plan_of(graph)
    kinds = [s.kind for s in plan.stages]
    assert kinds.count("rows") == 5 and kinds.count("own") == 2  # 3 projections, 2 matmuls; transpose, softmax
    scores = next(s for s in plan.stages if s.head == "scores")
    assert scores.uses == ("head", "held")  # k transposed is held whole while q streams
    result = simulate(graph, tmp_path, frames=8, plan=plan, driver="native")
    assert result.passed, result.report()
    assert result.ratio <= 1.05, result.report()
    assert result.predicted_cycles == max(s.cycles for s in plan.stages)


@pytest.fixture(scope="module")
def reproducers_rtlsim(tmp_path_factory):
    """Every reproducer in one design, simulated for 3 frames."""
    graphs = [load_graph(REPRO / f"{name}.json") for name in REPRODUCERS]
    run = simulate_union(graphs, tmp_path_factory.mktemp("repro"), frames=3, driver=DRIVER, name="repro", timed=False)
    return run.result


@pytest.fixture(scope="module")
def reproducers_csim(tmp_path_factory):
    """Every reproducer in one project, C-simulated for 3 frames under both header sets."""
    graphs = [load_graph(REPRO / f"{name}.json") for name in REPRODUCERS]
    graph, out = write_union(graphs, tmp_path_factory.mktemp("repro"), name="repro")
    return csim_both(out, frames=3, graph=graph)


@pytest.mark.parametrize("name", REPRODUCERS)
@DRIVER_MARK
def test_reproducers_pass_in_rtlsim(name, reproducers_rtlsim):
    # deadlock-fifo-1 deadlocked with the planned depths; wrong-reduce-post-1 was wrong from its second frame
    assert reproducers_rtlsim.passed, reproducers_rtlsim.report()


@pytest.mark.gxx
@pytest.mark.parametrize("name", REPRODUCERS)
def test_reproducers_pass_in_csim_frame_after_frame(name, reproducers_csim):
    assert reproducers_csim.passed and reproducers_csim.frames == 3, reproducers_csim.report()
