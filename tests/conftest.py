"""Test tiers and settings shared by the whole suite.

Tests that need a system tool carry its marker (``@pytest.mark.gxx``, ``@pytest.mark.verilator``,
``@pytest.mark.iverilog``, ``@pytest.mark.chromium``, ``@pytest.mark.dot``); tests that need an optional
Python package as they run carry its marker too (``@pytest.mark.pyverilator``, ``@pytest.mark.matplotlib``,
``@pytest.mark.dask``, ...), and test modules that import one take it from ``tiers.need``.
Where the need is missing they are skipped, except in CI (``CI=true``): CI installs everything,
so a missing one there is a broken set-up and those tests fail instead of passing silently (tests/tiers.py).

Random tests are reproducible: every run draws one hypothesis seed (unless ``--hypothesis-seed``
gives it) and prints it in the header, so ``pytest --hypothesis-seed=N`` repeats a run exactly. Under
pytest-xdist (``make test`` runs one worker per core) the workers take the controller's seed. The expensive random
suites (csim, rtlsim) run on seeds listed in the tests instead (``random_graphs.seeds``).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import settings
from tiers import EXTRAS, TOOLS, check

# No per-example deadline: the machines running the suite are shared and their timing varies.
settings.register_profile("hlsfuse", deadline=None)
settings.load_profile("hlsfuse")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", None)  # a pytest-xdist worker: the controller's seed
    if worker is not None:
        config.option.hypothesis_seed = worker["hypothesis_seed"]
    elif config.getoption("hypothesis_seed", None) is None:  # before hypothesis's plugin reads it
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))
    for marker, (needed, _) in (TOOLS | EXTRAS).items():
        config.addinivalue_line("markers", f"{marker}: needs `{needed}` (skipped where missing, except in CI)")
    config.addinivalue_line("markers", "xdist_group(name): run on one pytest-xdist worker with the group's other tests")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: every worker runs on the seed this run printed."""
    node.workerinput["hypothesis_seed"] = node.config.option.hypothesis_seed


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-xdist (``make test`` runs ``--dist loadgroup``): the tests of a module that has a module-scoped
    fixture of its own (a build its tests share) run on one worker, so the build is made once; every other test
    runs wherever a worker is free."""
    for item in items:
        module = item.nodeid.split("::")[0]
        shared = getattr(item, "_fixtureinfo", None)
        if shared is not None and any(d.scope == "module" and d.baseid == module
                                      for defs in shared.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(module))


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in (*TOOLS, *EXTRAS):
        if item.get_closest_marker(marker) is not None:
            check(marker)


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed")
    return f"hypothesis seed: {seed} (repeat this run's random tests with --hypothesis-seed={seed})"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if exitstatus != 0:  # the header does not show under -q
        terminalreporter.write_line(pytest_report_header(config))
