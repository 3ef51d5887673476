"""Random graphs through the whole Verilog flow: fuse, lower, emit, Verilator, simulate; bit-exact with the reference.

A Verilator build costs tens of seconds, so each hypothesis example puts a batch of random graphs
side by side in one design (``rtl_design.union``): one build checks them all. Five examples of 20
graphs give 100 random graphs per run, mixing elementwise, broadcast, injective, reduction,
conv2d, dense, pool and opaque ops with fan-out and residual joins. They run on the pyverilator
driver, whose -O1 builds are the quickest; tests/test_rtlsim_native.py and the examples check that
the native driver observes exactly the same runs. Linting is cheap, so another 200 random graphs
are only linted.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rtl_design import design, lint, plan_of, simulate, union
from strategies import op_graphs

BATCH = 20
EXAMPLES = 5  # 100 simulated graphs per run


def _uses_every_input(graph) -> bool:
    return all(graph.consumers[i.name] for i in graph.inputs)


_BATCHES = st.lists(op_graphs(max_ops=12).filter(_uses_every_input), min_size=BATCH, max_size=BATCH)


@pytest.mark.verilator
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BATCHES)
def test_random_graphs_are_bit_exact_in_rtlsim(tmp_path_factory, graphs):
    folder = tmp_path_factory.mktemp("random")
    graph = union(graphs)
    plan = plan_of(graph)
    result = simulate(graph, folder, frames=2, plan=plan)
    kinds = sorted({s.kind for s in plan.stages})
    ops = [[n.op for n in g.nodes] for g in graphs]
    assert result.passed, f"{ops} ({kinds}):\n{result.report()}"
    assert result.compared == 2 * sum(graph.types[name].size for name in graph.outputs)
    assert lint(folder) == ""


@pytest.mark.verilator
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BATCHES)
def test_random_designs_are_lint_clean(tmp_path_factory, graphs):
    folder = design(union(graphs), tmp_path_factory.mktemp("lint"))
    assert lint(folder) == ""
