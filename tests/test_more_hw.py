"""A single upsample stage (zero insertion, 4 lanes) runs exactly one output token per cycle, its bound (tokens
out), in the RTL and in the timing model. The table activations' and upsamples' graphs (tests/more_graphs.py) are
simulated in C and RTL by tests/test_hw_shared.py.
"""

from __future__ import annotations

import pytest
from more_graphs import single_upsample
from rtl_design import lint, plan_of, simulate

from hlsfuse.lower import Folding


@pytest.mark.verilator
@pytest.mark.parametrize("mode,factors,lanes", [("zeros", (2, 3), 4)])  # nearest: test_hw_shared.py
def test_one_output_token_per_cycle(mode, factors, lanes, tmp_path):
    graph = single_upsample(mode, factors, lanes)
    plan = plan_of(graph, fold=Folding(lanes=(("y", lanes),), port_lanes=lanes))
    (stage,) = plan.stages
    tokens_out = graph.types["y"].size // lanes
    assert stage.kind == "own" and stage.cycles == tokens_out
    result = simulate(graph, tmp_path, frames=6, driver="native", plan=plan)
    assert result.passed, result.report()
    assert result.frame_cycles == result.predicted_cycles == tokens_out, result.report()
    assert lint(tmp_path) == ""
