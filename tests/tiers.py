"""The test tiers: what a test may need beyond pytest (a system tool, an optional Python package), and what
happens where it is missing: the test is skipped, except in CI (``CI=true``), where everything is installed,
so a missing need is a broken set-up and the test fails instead of passing silently.

    TOOLS          marker -> (command, how to install it): ``@pytest.mark.gxx`` and the others
    EXTRAS         marker -> (module, how to install it): ``@pytest.mark.pyverilator`` and the others, for the
                   tests that need the package only as they run (through hlsfuse)
    in_ci()        this run is CI's
    fresh()        this run is the random tier's (``make test-random`` sets HLSFUSE_RANDOM_SEED)
    check(marker)  skip the test if the marker's need is not met (fail it in CI); tests/conftest.py calls it for
                   every marker a test carries
    need(module)   the optional package, imported: at a test module's top (``onnx = need("onnx")``, before any
                   import of it or of a helper that imports it: tests/test_tiers.py checks) or in a test's body.
                   Where it cannot be imported the module's tests, or the test, are skipped (fail in CI)
"""

from __future__ import annotations

import importlib
import os
import shutil

import pytest

__all__ = ["TOOLS", "EXTRAS", "FRESH", "in_ci", "fresh", "check", "need"]

FRESH = "HLSFUSE_RANDOM_SEED"
"""Set by ``make test-random``, which runs the whole suite in the random tier: its suites draw fresh seeds from it
(tests/random_graphs.py), and it builds what ``make test`` defers to it: under both header sets what ``make test``
builds under the work-alikes only (``hls_support.csim_both``), and the cases a test parametrizes from ``fresh()``
(never skipped under ``make test``: left out of its parameters)."""


def fresh() -> bool:
    """This run is the random tier's (``make test-random``)."""
    return bool(os.environ.get(FRESH))

TOOLS = {
    "gxx": ("g++", "apt-get install g++"),
    "verilator": ("verilator", "apt-get install verilator"),
    "iverilog": ("iverilog", "apt-get install iverilog"),
    "chromium": ("chromium", "apt-get install chromium"),
    "dot": ("dot", "apt-get install graphviz"),
}

EXTRAS = {
    "onnx": ("onnx", "pip install 'hlsfuse[onnx]'"),
    "onnxruntime": ("onnxruntime", "pip install onnxruntime"),
    "qonnx": ("qonnx", "pip install qonnx"),
    "matplotlib": ("matplotlib", "pip install 'hlsfuse[explore]'"),
    "dask": ("distributed", "pip install 'hlsfuse[explore]'"),
    "pyverilator": ("pyverilator", "pip install pyverilator-mm"),
    "yosys": ("pyosys", "pip install pyosys"),
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def _unmet(marker: str) -> str | None:
    if marker in TOOLS:
        command = TOOLS[marker][0]
        return None if shutil.which(command) else f"`{command}` is not installed"
    module = EXTRAS[marker][0]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return f"`{module}` cannot be imported ({exc})"
    return None


def check(marker: str) -> None:
    problem = _unmet(marker)
    if problem is None:
        return
    install = (TOOLS | EXTRAS)[marker][1]
    if in_ci():
        pytest.fail(f"{problem}, and CI must run every test ({install})", pytrace=False)
    setup = "`make setup` as root" if marker in TOOLS else "`make setup`"  # apt-get needs root, pip the venv
    pytest.skip(f"{problem} ({install}, or {setup})", allow_module_level=True)


def need(module: str):
    markers = [marker for marker, (name, _) in EXTRAS.items() if name == module]
    if not markers:
        raise ValueError(f"need('{module}'): not an optional package of tiers.EXTRAS")
    check(markers[0])
    return importlib.import_module(module)
