"""Random graphs through the whole HLS flow: fuse, lower, emit, g++, run; bit-exact with the reference.

Each hypothesis example is a batch of graphs built and simulated two at a time (g++ dominates the
cost), so that one test run checks 120 random graphs mixing elementwise, broadcast, injective,
reduction, conv2d, dense, pool and opaque ops with fan-out and residual joins, and the strided,
dilated, grouped and attention-like graphs of ``strategies.nn_graphs``, each on two frames, every MAC
stage folded at random, map and reduce stages and ports given random lanes, window and rows stages
random input lanes and PE, with the width converters they need (``rtl_design.random_fold``).

A failing graph does not shrink (minutes of g++ builds): the run's hypothesis seed is printed at the
end of the test session, and the graph is saved under tests/failed/ (``hlsfuse compile`` and
``hlsfuse csim`` reproduce it).
"""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rtl_design import random_fold, saved_fold
from strategies import nn_graphs, op_graphs

from hlsfuse.compile import CompileOptions, compile
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.sim import csim

BATCH = 20
EXAMPLES = 6  # 120 graphs per run


def _uses_every_input(graph) -> bool:
    return all(graph.consumers[i.name] for i in graph.inputs)


def _simulate(job):
    index, graph, folder, fold = job
    design = compile(graph, CompileOptions(fold=fold))
    out = design.write(folder / f"g{index}")
    result = csim(out, graph=graph)
    return graph, design, result


FAILED = Path(__file__).parent / "failed"
_GRAPHS = op_graphs(max_ops=12).filter(_uses_every_input) | nn_graphs().filter(_uses_every_input)


def _saved(graph, index: int, fold) -> Path:
    FAILED.mkdir(exist_ok=True)
    path = FAILED / f"csim-{index}.json"
    path.write_text(json.dumps(graph_to_dict(graph), indent=1))
    (FAILED / f"csim-{index}.fold.json").write_text(saved_fold(graph, fold))
    return path


@pytest.mark.gxx
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate], print_blob=True)
@given(st.lists(_GRAPHS, min_size=BATCH, max_size=BATCH), st.integers(0, 2**31 - 1))
def test_random_graphs_are_bit_exact_in_csim(tmp_path_factory, graphs, tag):
    folder = tmp_path_factory.mktemp("random")
    rng = random.Random(tag)
    folds = [random_fold(g, rng) for g in graphs]  # each MAC stage folded at random
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_simulate, [(k, g, folder, f) for k, (g, f) in enumerate(zip(graphs, folds))]))
    for index, (graph, design, result) in enumerate(results):
        expected = 2 * sum(graph.types[name].size for name in graph.outputs)  # the two frames of data/
        kinds = sorted({s.kind for s in design.plan.stages})
        ok = result.passed and result.compared == expected
        saved = _saved(graph, index, folds[index]) if not ok else None
        assert ok, f"{[n.op for n in graph.nodes]} ({kinds}), saved as {saved} (and its folding):\n{result.report()}"
