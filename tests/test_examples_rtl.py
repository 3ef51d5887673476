"""Every example through the Verilog flow: bit-exact under rtlsim over 8 frames, cycle for cycle the plan's timing
model (so at its predicted rate), lint-clean; the residual block deadlocks, and says where, when its FIFOs are made
too shallow."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_design import lint, plan_of, simulate
from tiers import fresh

from hlsfuse.graph_json import load_graph

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.json"))
SMALL = ("mlp", "residual")  # simulated with both drivers
FRAMES = 8
# the tests that simulate a small example with the pyverilator driver run on one pytest-xdist worker, one after the
# other, so that the model one builds is the other's from the cache (two workers would both build it)
SHARED_MODEL = pytest.mark.xdist_group("examples-rtl-small")


def _graph(name: str):
    return load_graph(EXAMPLES / f"{name}.json")


@pytest.mark.verilator
@pytest.mark.parametrize("name", [pytest.param(n, marks=SHARED_MODEL) if n in SMALL else n for n in NAMES])
@pytest.mark.pyverilator
def test_example_is_bit_exact_at_the_analytic_rate(name, tmp_path):
    graph = _graph(name)
    driver = "pyverilator" if name in SMALL else "native"
    result = simulate(graph, tmp_path, frames=FRAMES, driver=driver)
    assert result.passed, result.report()
    assert result.compared == FRAMES * sum(graph.types[o].size for o in graph.outputs)
    assert result.ratio <= 1.05, result.report()  # rtl_design.simulate also checked it against the model
    assert lint(tmp_path) == ""


@pytest.mark.verilator
@pytest.mark.parametrize("name", SMALL)
@pytest.mark.pyverilator
@SHARED_MODEL
def test_both_drivers_report_the_same_run(name, tmp_path):
    graph = _graph(name)
    plan = plan_of(graph)
    py = simulate(graph, tmp_path / "py", frames=2, plan=plan)
    native = simulate(graph, tmp_path / "native", frames=2, driver="native", plan=plan)
    assert py.passed and native.passed
    for field in ("cycles", "frame_cycles", "latency", "throughput", "stages", "compared"):
        assert getattr(py, field) == getattr(native, field), field


# make test detects the deadlock with the native driver; tests/test_rtlsim_native.py checks on every run that the
# pyverilator driver observes the same deadlock as the native one, and make test-random runs this with it too
DEADLOCK_DRIVERS = ["native", *([pytest.param("pyverilator", marks=pytest.mark.pyverilator)] if fresh() else [])]


@pytest.mark.verilator
@pytest.mark.parametrize("driver", DEADLOCK_DRIVERS)
def test_residual_deadlock_is_detected_and_located(driver, tmp_path):
    graph = _graph("residual")
    fine = plan_of(graph)
    skip = max(fine.channels, key=lambda c: c.depth)  # the skip connection needs the deepest FIFO
    assert skip.depth > 16
    shallow = plan_of(graph, depth=2)
    result = simulate(graph, tmp_path, frames=1, driver=driver, plan=shallow)
    assert not result.passed
    assert result.deadlock.startswith("no stage made progress for 64 cycles after ")
    assert f"{skip.name} (2 deep)" in result.deadlock
    fork = next(s.name for s in shallow.stages if s.kind == "fork")
    assert fork in result.deadlock.split("stalled stages: ")[1].split(";")[0]
    assert result.report().startswith("DEADLOCK: ")
