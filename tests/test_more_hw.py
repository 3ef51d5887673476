"""The table activations (also erf, gelu, silu) and upsample2d in both backends, bit for bit with the reference.

C simulation (g++, under hlsfuse's work-alike headers and AMD's) of the fixed-point graph and of the float32
graph (the functions in double, rounded once, as the reference does); RTL simulation (Verilator) of the
fixed-point graph on several frames back to back, lint clean; and a single upsample stage, nearest and zero
insertion, one or two lanes, running exactly one output token per cycle (its bound: tokens out) in the RTL and
in the timing model.
"""

from __future__ import annotations

import pytest
from hls_support import csim_both, write_project
from more_graphs import fixed_more, fixed_tf, float_more, float_tf, single_upsample
from rtl_design import lint, plan_of, simulate
from union import union

from hlsfuse import fuse, reference
from hlsfuse.backends.hls import HlsOptions
from hlsfuse.lower import Folding, lower


def _csim(graph, tmp_path, frames=2, **options):
    plan = lower(graph, fuse(graph))
    out = write_project(graph, tmp_path / graph.name, plan, HlsOptions(**options))
    result = csim_both(out, [reference.random_inputs(graph, seed) for seed in range(frames)])
    assert result.passed, result.report()
    assert result.compared == frames * sum(graph.types[t].size for t in graph.outputs)
    return plan


@pytest.mark.gxx
def test_fixed_point_and_float32_csim_are_exact(tmp_path):
    """One build: the fixed-point graph bit for bit, the float32 one to float32's rounding (the functions in
    double, rounded once, as the reference does)."""
    graph = union([fixed_more(), float_more(), fixed_tf(), float_tf()], "more")
    plan = _csim(graph, tmp_path, float_rtol=1e-7, float_atol=0.0)
    assert sum(graph.node(s.head).op == "upsample2d" for s in plan.stages if s.kind == "own") == 6 + 2  # + float


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_fixed_point_rtlsim_is_bit_exact_and_lint_clean(tmp_path):
    graph = union([fixed_more(), fixed_tf()], "more")
    result = simulate(graph, tmp_path, frames=3)
    assert result.passed, result.report()
    assert result.compared == 3 * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""


@pytest.mark.verilator
@pytest.mark.parametrize("mode,factors,lanes", [("zeros", (2, 3), 4)])  # nearest: fixed_more's rtlsim
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
