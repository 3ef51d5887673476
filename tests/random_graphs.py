"""The random-graph harness: the random suites' seeds and batches, and what a failing graph leaves behind.

    uses_every_input(graph)   every graph input is read by a node (hardware is refused for an unused input)
    seeds(listed, n)    the seeds a suite runs: ``listed`` (fixed in the test, so that ``make test`` checks the same
                        graphs on every run and their g++ and Verilator builds come from the cache), or ``n`` (as
                        many) fresh ones derived from HLSFUSE_RANDOM_SEED when it is set (``make test-random``)
    listed_seed(seed)   the seed of an expensive hypothesis test, listed the same way (a decorator)
    batch(seed, size)   ``size`` random graphs drawn from ``seed``: the same graphs for the same seed (and hypothesis
                        release), mixing the ops of ``strategies.op_graphs`` and the geometry of ``nn_graphs``
    save(name, graph, fold, inputs)   a failing graph under tests/failed/, with its folding (``hlsfuse compile
                        --fold`` and ``hlsfuse csim``/``rtlsim`` reproduce it) or the inputs it failed on

The expensive suites (csim, rtlsim) draw batches from listed seeds; a failure names its seed (in the test's id) and
saves its batch instead of shrinking: shrinking would cost minutes of builds. The cheap property suites
(tests/test_ranges.py, tests/test_schedule.py) draw on the run's hypothesis seed and save a failing graph the same
way. A random failure is a bug to fix, never a flake: rerun the seed, then fix what it shows.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from rtl_design import saved_fold
from strategies import nn_graphs, op_graphs
from tiers import FRESH, fresh

from hlsfuse.graph_json import graph_to_dict

__all__ = ["uses_every_input", "seeds", "listed_seed", "fresh", "batch", "save", "FAILED"]

FAILED = Path(__file__).parent / "failed"


def uses_every_input(graph) -> bool:
    return all(graph.consumers[i.name] for i in graph.inputs)


GRAPHS = op_graphs(max_ops=12).filter(uses_every_input) | nn_graphs().filter(uses_every_input)


def seeds(listed: tuple[int, ...], fresh_count: int | None = None) -> tuple[int, ...]:
    """``listed``, or ``fresh_count`` (default: as many) seeds derived from $HLSFUSE_RANDOM_SEED (every pytest
    worker derives the same)."""
    if not fresh():
        return listed
    rng = random.Random(f"{os.environ[FRESH]}:{listed}")
    return tuple(rng.randrange(2**31) for _ in range(fresh_count or len(listed)))


def listed_seed(seed_: int):
    """The seed of an expensive hypothesis test, as a decorator: ``seed_`` (listed in the test, so that ``make test``
    runs the same examples, at the same cost, on every run), or one derived from HLSFUSE_RANDOM_SEED under
    ``make test-random``."""
    return seed(seeds((seed_,))[0])


def batch(seed_: int, size: int) -> list:
    """``size`` random graphs drawn from ``seed_``. Hypothesis's first example of a strategy is always its simplest,
    whatever the seed, so the batch is the second one."""
    drawn = []

    @settings(database=None, max_examples=2, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @seed(seed_)
    @given(st.lists(GRAPHS, min_size=size, max_size=size))
    def draw(graphs):
        drawn.append(graphs)

    draw()
    return drawn[-1]


def save(name: str, graph, fold=None, inputs: dict | None = None) -> Path:
    """tests/failed/<name>.json, and <name>.fold.json with ``fold``, <name>-inputs.npz with ``inputs`` (raw
    values by input name); returns the graph's path."""
    FAILED.mkdir(exist_ok=True)
    path = FAILED / f"{name}.json"
    path.write_text(json.dumps(graph_to_dict(graph), indent=1))
    if fold is not None:
        (FAILED / f"{name}.fold.json").write_text(saved_fold(graph, fold))
    if inputs is not None:
        np.savez(FAILED / f"{name}-inputs.npz", **inputs)
    return path
