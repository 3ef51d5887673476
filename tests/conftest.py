"""Test tiers and settings shared by the whole suite.

Tests that need a system tool carry its marker (``@pytest.mark.gxx``, ``@pytest.mark.verilator``,
``@pytest.mark.iverilog``, ``@pytest.mark.chromium``, ``@pytest.mark.dot``).
Where the tool is missing they are skipped, except in CI (``CI=true``): CI installs every tool,
so a missing one there is a broken set-up and those tests fail instead of passing silently.

Random tests are reproducible: every run draws one hypothesis seed (unless ``--hypothesis-seed``
gives it) and prints it in the header, so ``pytest --hypothesis-seed=N`` repeats a run exactly. Under
pytest-xdist (``make test`` runs one worker per core) the workers take the controller's seed. The expensive random
suites (csim, rtlsim) run on seeds listed in the tests instead (``random_graphs.seeds``).
"""

from __future__ import annotations

import os
import random
import shutil

import pytest
from hypothesis import settings

# marker -> the command it needs, and how to get it on Debian/Ubuntu
TOOLS = {
    "gxx": ("g++", "apt-get install g++"),
    "verilator": ("verilator", "apt-get install verilator"),
    "iverilog": ("iverilog", "apt-get install iverilog"),
    "chromium": ("chromium", "apt-get install chromium"),
    "dot": ("dot", "apt-get install graphviz"),
}

# No per-example deadline: the machines running the suite are shared and their timing varies.
settings.register_profile("hlsfuse", deadline=None)
settings.load_profile("hlsfuse")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", None)  # a pytest-xdist worker: the controller's seed
    if worker is not None:
        config.option.hypothesis_seed = worker["hypothesis_seed"]
    elif config.getoption("hypothesis_seed", None) is None:  # before hypothesis's plugin reads it
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))
    for marker, (command, _) in TOOLS.items():
        config.addinivalue_line("markers", f"{marker}: needs `{command}` (skipped where missing, except in CI)")
    config.addinivalue_line("markers", "xdist_group(name): run on one pytest-xdist worker with the group's other tests")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: every worker runs on the seed this run printed."""
    node.workerinput["hypothesis_seed"] = node.config.option.hypothesis_seed


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
    for marker, (command, install) in TOOLS.items():
        if item.get_closest_marker(marker) is None or shutil.which(command) is not None:
            continue
        if in_ci():
            pytest.fail(f"`{command}` is not installed, and CI must run every test ({install})", pytrace=False)
        pytest.skip(f"`{command}` is not installed ({install}, or `make setup` as root)")


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed")
    return f"hypothesis seed: {seed} (repeat this run's random tests with --hypothesis-seed={seed})"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if exitstatus != 0:  # the header does not show under -q
        terminalreporter.write_line(pytest_report_header(config))
