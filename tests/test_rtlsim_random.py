"""Random graphs through the whole Verilog flow: fuse, lower, emit, Verilator, simulate; bit-exact with the reference.

A Verilator build costs tens of seconds, so each hypothesis example puts a batch of random graphs
side by side in one design (``rtl_design.union``): one build checks them all. Four examples of 20
graphs give 80 random graphs per run, mixing elementwise, broadcast, injective, reduction,
conv2d, dense, pool and opaque ops with fan-out and residual joins, and the strided, dilated,
grouped and attention-like graphs of ``strategies.nn_graphs``, every MAC stage folded at random,
half the map and reduce stages and a third of the ports given random lanes, half the window and rows
stages random input lanes and PE, with the width converters the lowering inserts
(``rtl_design.random_fold``). Every run must be bit-exact and the plan's timing model cycle for cycle
(``rtl_design.simulate``), so no random graph may deadlock with the planned FIFO depths. They run on
the pyverilator driver, whose -O1 builds are the quickest;
tests/test_rtlsim_native.py and the examples check that the native driver observes exactly the
same runs. Linting is cheap, so another 200 random graphs are only linted.

A failing batch does not shrink (minutes of Verilator builds): the test prints hypothesis's seed and
saves the batch's graph and folding under tests/failed/ (``hlsfuse compile --fold`` and ``hlsfuse rtlsim``
reproduce it).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rtl_design import design, lint, plan_of, random_fold, saved_fold, simulate, union
from strategies import nn_graphs, op_graphs

from hlsfuse.graph_json import graph_to_dict

BATCH = 20
EXAMPLES = 4  # 80 simulated graphs per run


def _uses_every_input(graph) -> bool:
    return all(graph.consumers[i.name] for i in graph.inputs)


_GRAPHS = op_graphs(max_ops=12).filter(_uses_every_input) | nn_graphs().filter(_uses_every_input)
_BATCHES = st.lists(_GRAPHS, min_size=BATCH, max_size=BATCH)
FAILED = Path(__file__).parent / "failed"


def _saved(graph, fold) -> Path:
    FAILED.mkdir(exist_ok=True)
    path = FAILED / f"{graph.name}.json"
    path.write_text(json.dumps(graph_to_dict(graph), indent=1))
    (FAILED / f"{graph.name}.fold.json").write_text(saved_fold(graph, fold))
    return path


@pytest.mark.verilator
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate], print_blob=True)
@given(_BATCHES, st.integers(0, 2**31 - 1))
def test_random_graphs_are_bit_exact_in_rtlsim(tmp_path_factory, graphs, tag):
    folder = tmp_path_factory.mktemp("random")
    graph = union(graphs, name=f"batch_{tag}")
    fold = random_fold(graph, random.Random(tag))  # each MAC stage folded at random (SIMD 1 to all products)
    plan = plan_of(graph, fold=fold)
    try:
        result = simulate(graph, folder, frames=2, plan=plan)
        kinds = sorted({s.kind for s in plan.stages})
        assert result.passed, f"{kinds}:\n{result.report()}"
        assert result.compared == 2 * sum(graph.types[name].size for name in graph.outputs)
        assert lint(folder) == ""
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nthe batch is saved as {_saved(graph, fold)} (its folding beside it)") from None


@pytest.mark.verilator
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BATCHES)
def test_random_designs_are_lint_clean(tmp_path_factory, graphs):
    folder = design(union(graphs), tmp_path_factory.mktemp("lint"))
    assert lint(folder) == ""
