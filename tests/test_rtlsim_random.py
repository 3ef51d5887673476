"""Random graphs through the whole Verilog flow: fuse, lower, emit, Verilator, simulate; bit-exact with the reference.

A Verilator build costs tens of seconds, so each seed draws a batch of random graphs
(``random_graphs.batch``) and puts it side by side in one design (``union``): one build
checks them all. A listed seed of 20 graphs gives 20 random graphs per commit (four fresh seeds,
80 graphs, under ``make test-random``), mixing elementwise,
broadcast, injective, reduction, conv2d, dense, pool and opaque ops with fan-out and residual joins,
and the strided, dilated, grouped and attention-like graphs of ``strategies.nn_graphs``, every MAC
stage folded at random, half the map and reduce stages and a third of the ports given random lanes,
half the window and rows stages random input lanes and PE, with the width converters the lowering
inserts (``rtl_design.random_fold``). Every run must be bit-exact and the plan's timing model cycle for cycle
(``rtl_design.simulate``), so no random graph may deadlock with the planned FIFO depths. They run on
the pyverilator driver, whose -O1 builds are the quickest;
tests/test_rtlsim_native.py and the examples check that the native driver observes exactly the
same runs. Linting is cheaper, so another 60 random graphs (200 under ``make test-random``) are only
linted. The seeds are listed, so a rerun takes its builds from the cache.

A failing batch is saved with its folding under tests/failed/ (``hlsfuse compile --fold`` and ``hlsfuse
rtlsim`` reproduce it); the test's id names the seed.
"""

from __future__ import annotations

import random

import pytest
from random_graphs import batch, save, seeds
from rtl_design import design, lint, plan_of, random_fold, simulate
from union import union

BATCH = 20
SEEDS = seeds((2,), fresh_count=4)  # 20 simulated graphs per commit, 80 fresh ones under make test-random
LINT_SEEDS = seeds((101, 102, 103), fresh_count=10)  # 60 linted graphs per commit, 200 fresh ones


@pytest.mark.verilator
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.pyverilator
def test_random_graphs_are_bit_exact_in_rtlsim(tmp_path, seed):
    graph = union(batch(seed, BATCH), name=f"batch_{seed}")
    fold = random_fold(graph, random.Random(seed))  # each MAC stage folded at random (SIMD 1 to all products)
    plan = plan_of(graph, fold=fold)
    try:
        result = simulate(graph, tmp_path, frames=2, plan=plan)
        kinds = sorted({s.kind for s in plan.stages})
        assert result.passed, f"{kinds}:\n{result.report()}"
        assert result.compared == 2 * sum(graph.types[name].size for name in graph.outputs)
        assert lint(tmp_path) == ""
    except AssertionError as exc:
        saved = save(f"rtlsim-{graph.name}", graph, fold)
        raise AssertionError(f"seed {seed}: {exc}\nthe batch is saved as {saved} (its folding beside it)") from None


@pytest.mark.verilator
@pytest.mark.parametrize("seed", LINT_SEEDS)
def test_random_designs_are_lint_clean(tmp_path, seed):
    folder = design(union(batch(seed, BATCH), name=f"lint_{seed}"), tmp_path)
    assert lint(folder) == ""
