"""The test tiers of tests/conftest.py and tests/tiers.py: a test marked with a tool or an optional package it
needs, or a test module that takes the package from ``tiers.need``, is skipped where it is missing, but fails in
CI (CI=true), where everything must be installed. No test module imports an optional package any other way."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import cli_env
from tiers import EXTRAS

HERE = Path(__file__).parent

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

MARKED_EXTRA = """
import pytest

@pytest.mark.pyverilator
def test_needs_pyverilator():
    import pyverilator  # noqa: F401

def test_plain():
    pass
"""

NEEDS_ONNX = """
from tiers import need

onnx = need("onnx")

def test_uses_onnx():
    assert onnx.__name__ == "onnx"
"""


def hide_extras(folder: Path) -> Path:
    """A folder that, first on PYTHONPATH, makes every optional package of tiers.EXTRAS fail to import."""
    folder.mkdir()
    for module, _ in EXTRAS.values():
        (folder / f"{module}.py").write_text('raise ImportError("hidden by tests/test_tiers.py")\n')
    return folder


def run_suite(tmp_path, modules: dict[str, str], ci: bool, tools_on_path: bool = True,
              extras: bool = True, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    for helper in ("conftest.py", "tiers.py"):
        shutil.copy(HERE / helper, tmp_path / helper)
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    if not tools_on_path:
        env["PATH"] = str(tmp_path / "no-tools")  # an empty PATH: neither g++ nor verilator
    if not extras:
        env["PYTHONPATH"] = os.pathsep.join([str(hide_extras(tmp_path / "hidden")), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


SHARED_BUILD = """
import os
import pytest

@pytest.fixture(scope="module")
def build():
    with open("builds.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    return os.getpid()

@pytest.mark.parametrize("n", range(8))
def test_uses_the_build(build, n):
    assert build == os.getpid()
"""


def test_a_modules_shared_build_is_made_once_on_both_cores(tmp_path):
    """make test's ``-n 2 --dist loadgroup``: the tests of a module with a module-scoped fixture run on one worker
    (tests/conftest.py groups them), so its build is made once. pytest-xdist 3.8 cannot group them under pytest 9
    (it tags node ids that pytest 9 no longer reads; pyproject.toml keeps pytest below 9)."""
    done = run_suite(tmp_path, {"test_shared": SHARED_BUILD}, ci=False, args=("-n", "2", "--dist", "loadgroup"))
    assert done.returncode == 0, done.stdout
    assert "8 passed" in done.stdout
    assert len((tmp_path / "builds.txt").read_text().split()) == 1


def test_missing_tools_skip_outside_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED}, ci=False, tools_on_path=False)
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" in done.stdout
    assert "`g++` is not installed" in done.stdout
    assert "`verilator` is not installed" in done.stdout


def test_missing_tools_fail_in_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED}, ci=True, tools_on_path=False)
    assert done.returncode == 1, done.stdout
    assert "1 passed, 2 errors" in done.stdout  # failing in setup is an error: the run fails
    assert "`g++` is not installed, and CI must run every test (apt-get install g++)" in done.stdout


@pytest.mark.skipif(not (shutil.which("g++") and shutil.which("verilator")), reason="needs g++ and verilator")
def test_present_tools_run_in_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED}, ci=True, tools_on_path=True)
    assert done.returncode == 0, done.stdout
    assert "3 passed" in done.stdout


def test_missing_extras_skip_outside_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED_EXTRA, "test_onnx": NEEDS_ONNX}, ci=False, extras=False)
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" in done.stdout  # the marked test, and the whole module that needs onnx
    assert ("`pyverilator` cannot be imported (hidden by tests/test_tiers.py) (pip install pyverilator-mm, or "
            "`make setup`)") in done.stdout
    assert "`onnx` cannot be imported (hidden by tests/test_tiers.py) (pip install 'hlsfuse[onnx]'" in done.stdout


def test_a_missing_extra_fails_a_marked_test_in_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED_EXTRA}, ci=True, extras=False)
    assert done.returncode == 1, done.stdout
    assert "1 passed, 1 error" in done.stdout
    assert ("`pyverilator` cannot be imported (hidden by tests/test_tiers.py), and CI must run every test (pip "
            "install pyverilator-mm)") in done.stdout


def test_a_missing_extra_fails_the_collection_in_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED_EXTRA, "test_onnx": NEEDS_ONNX}, ci=True, extras=False)
    assert done.returncode == 2, done.stdout  # a collection error stops the run before any test
    assert ("`onnx` cannot be imported (hidden by tests/test_tiers.py), and CI must run every test (pip install "
            "'hlsfuse[onnx]')") in done.stdout


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("onnx", "pyverilator")),
                    reason="needs onnx and pyverilator")
def test_present_extras_run_in_ci(tmp_path):
    done = run_suite(tmp_path, {"test_marked": MARKED_EXTRA, "test_onnx": NEEDS_ONNX}, ci=True)
    assert done.returncode == 0, done.stdout
    assert "3 passed" in done.stdout


def test_need_names_only_the_optional_packages():
    from tiers import need

    with pytest.raises(ValueError, match=r"^need\('numpy'\): not an optional package of tiers.EXTRAS$"):
        need("numpy")


def test_no_test_module_imports_an_optional_package_before_need(tmp_path):
    """Collecting the whole suite without any optional package: a module that imports one (or a helper that
    does) at its top without tiers.need first is a collection error, where it must be a skip."""
    env = {k: v for k, v in cli_env().items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(hide_extras(tmp_path / "hidden")), env["PYTHONPATH"]])
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(HERE)],
                          cwd=HERE.parent, env=env, capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stdout.splitlines() if line.startswith("ERROR ")]
    assert done.returncode == 0 and not errors, "\n".join(errors) or done.stdout[-3000:]
    assert "cannot be imported (hidden by tests/test_tiers.py)" in done.stdout  # the onnx modules: skipped
