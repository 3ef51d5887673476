"""Random graphs through the whole HLS flow: fuse, lower, emit, g++, run; bit-exact with the reference, under
hlsfuse's work-alike headers and under AMD's own (``csim_both``).

Each seed draws a batch of 20 graphs (``random_graphs.batch``): 40 random graphs per commit (120 under ``make
test-random``) mixing elementwise, broadcast, injective, reduction, conv2d, dense, pool and opaque ops with
fan-out and residual joins, and the strided, dilated, grouped and attention-like graphs of
``strategies.nn_graphs``, each on two frames, every MAC stage folded at random, map and reduce stages and ports
given random lanes, window and rows stages random input lanes and PE, with the width converters they need
(``rtl_design.random_fold``). The first 40 are also built against AMD's headers (every one under ``make
test-random``, which draws six fresh seeds). g++ dominates the cost, and most of a small design's build is the
headers and the testbench, so the graphs of a batch are built as two designs of ten graphs side by side
(``union``), the two at once. The seeds are listed, so a rerun takes its builds from the cache.

A failing design is saved under tests/failed/ with its folding (``hlsfuse compile --fold`` and ``hlsfuse csim``
reproduce it); the test's id names the seed.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from hls_support import csim_both
from random_graphs import batch, save, seeds
from rtl_design import random_fold
from union import union

from hlsfuse.compile import CompileOptions, compile

BATCH = 20
DESIGNS = 2  # per batch, built in parallel
SEEDS = seeds((1, 2), fresh_count=6)  # 40 graphs per commit, 120 fresh ones under make test-random
AMD_SEEDS = SEEDS[:3]  # the 60 of a commit also built against AMD's headers (make test-random: every one, csim_both)


def _simulate(job):
    graph, fold, out, both = job
    design = compile(graph, CompileOptions(fold=fold))
    try:
        return design, csim_both(design.write(out), graph=graph, amd=both), None
    except AssertionError as exc:  # the two header sets disagree
        return design, None, str(exc)


@pytest.mark.gxx
@pytest.mark.parametrize("seed", SEEDS)
def test_random_graphs_are_bit_exact_in_csim(tmp_path, seed):
    graphs = batch(seed, BATCH)
    size = BATCH // DESIGNS
    unions = [union(graphs[k:k + size], name=f"batch_{seed}_{k // size}") for k in range(0, BATCH, size)]
    rng = random.Random(seed)
    # each MAC stage folded at random
    jobs = [(g, random_fold(g, rng), tmp_path / g.name, seed in AMD_SEEDS) for g in unions]
    with ThreadPoolExecutor(max_workers=DESIGNS) as pool:
        results = list(pool.map(_simulate, jobs))
    for (graph, fold, _, _), (design, result, disagreement) in zip(jobs, results):
        expected = 2 * sum(graph.types[name].size for name in graph.outputs)  # the two frames of data/
        if disagreement is None and result.passed and result.compared == expected:
            continue
        kinds = sorted({s.kind for s in design.plan.stages})
        saved = save(f"csim-{graph.name}", graph, fold)
        report = disagreement or result.report()
        raise AssertionError(f"seed {seed}: {graph.name} ({kinds}) saved as {saved} (and its folding):\n{report}")
