"""Random graphs through the whole HLS flow: fuse, lower, emit, g++, run; bit-exact with the reference.

Each hypothesis example is a batch of graphs built and simulated two at a time (g++ dominates the
cost), so that one test run checks 200 random graphs mixing elementwise, broadcast, injective,
reduction, conv2d, dense, pool and opaque ops with fan-out and residual joins.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import op_graphs

from hlsfuse.compile import compile
from hlsfuse.outdir import write_tree
from hlsfuse.sim import csim

BATCH = 20
EXAMPLES = 10  # 200 graphs per run


def _uses_every_input(graph) -> bool:
    return all(graph.consumers[i.name] for i in graph.inputs)


def _simulate(job):
    index, graph, folder = job
    design = compile(graph)
    out = write_tree(folder / f"g{index}", design.files)
    result = csim(out, graph=graph)
    return graph, design, result


@pytest.mark.gxx
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(op_graphs(max_ops=12).filter(_uses_every_input), min_size=BATCH, max_size=BATCH))
def test_random_graphs_are_bit_exact_in_csim(tmp_path_factory, graphs):
    folder = tmp_path_factory.mktemp("random")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_simulate, [(k, g, folder) for k, g in enumerate(graphs)]))
    for graph, design, result in results:
        expected = sum(graph.types[name].size for name in graph.outputs)
        kinds = sorted({s.kind for s in design.plan.stages})
        assert result.passed, f"{[n.op for n in graph.nodes]} ({kinds}):\n{result.report()}"
        assert result.compared == expected
