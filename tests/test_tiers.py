"""The test tiers of tests/conftest.py: a test marked with a tool it needs is skipped where the tool
is missing, but fails in CI (CI=true), where every tool must be installed."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MARKED = """
import pytest

@pytest.mark.gxx
def test_needs_gxx():
    pass

@pytest.mark.verilator
def test_needs_verilator():
    pass

def test_plain():
    pass
"""


def run_suite(tmp_path, ci: bool, tools_on_path: bool) -> subprocess.CompletedProcess:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_marked.py").write_text(MARKED)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    if not tools_on_path:
        env["PATH"] = str(tmp_path / "no-tools")  # an empty PATH: neither g++ nor verilator
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_missing_tools_skip_outside_ci(tmp_path):
    done = run_suite(tmp_path, ci=False, tools_on_path=False)
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" in done.stdout
    assert "`g++` is not installed" in done.stdout
    assert "`verilator` is not installed" in done.stdout


def test_missing_tools_fail_in_ci(tmp_path):
    done = run_suite(tmp_path, ci=True, tools_on_path=False)
    assert done.returncode == 1, done.stdout
    assert "1 passed, 2 errors" in done.stdout  # failing in setup is an error: the run fails
    assert "`g++` is not installed, and CI must run every test (apt-get install g++)" in done.stdout


@pytest.mark.skipif(not (shutil.which("g++") and shutil.which("verilator")), reason="needs g++ and verilator")
def test_present_tools_run_in_ci(tmp_path):
    done = run_suite(tmp_path, ci=True, tools_on_path=True)
    assert done.returncode == 0, done.stdout
    assert "3 passed" in done.stdout
