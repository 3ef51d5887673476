"""Packaging: every Python package ships, and the templates/ and hw/ folders are found at run time.

A regular (non-editable) install into a fresh venv is checked end to end by `make install-check`,
which CI runs.
"""

from pathlib import Path

import pytest

from hlsfuse.resources import hw_dir, templates_dir

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "hlsfuse").rglob("__init__.py")}
    assert sorted(on_disk - set(config["packages"])) == [], "add these packages to pyproject.toml"
    assert config["package-dir"]["hlsfuse.templates"] == "templates"
    assert config["package-dir"]["hlsfuse.hw"] == "hw"
    assert {"hlsfuse.templates", "hlsfuse.hw"} <= set(config["packages"])


def test_resource_folders_are_found():
    assert (templates_dir() / "README.md").is_file()
    assert (hw_dir() / "README.md").is_file()
    # from a source checkout (plain or editable) they are the repository's own folders
    if (ROOT / "templates").is_dir():
        assert templates_dir() == ROOT / "templates"
        assert hw_dir() == ROOT / "hw"
