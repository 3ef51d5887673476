"""docs/hls.md agrees with the code: its command outputs for the residual example are what the commands print,
its Python example runs, and its lists (stage kinds, control options, output files, stage table columns) are
complete."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from hlsfuse import load_graph
from hlsfuse.backends.hls.options import CONTROLS
from hlsfuse.cli import main
from hlsfuse.compile import compile as compile_design
from hlsfuse.lower import STAGE_KINDS
from hlsfuse.lower.report import stage_table
from hlsfuse.outdir import CHECKSUMS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "hls.md").read_text()


def command_blocks() -> dict[str, str]:
    """The ```text blocks that start with ``$ hlsfuse ...``: {command: the output shown}."""
    return dict(re.findall(r"```text\n\$ (hlsfuse [^\n]*)\n(.*?)```", DOC, re.S))


def section(title: str) -> str:
    """The text of the ``## title`` section, up to the next one."""
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end >= 0 else None]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder to run the documented commands in, with examples/residual.json where they expect it."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "residual.json", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_documented(command: str, capsys) -> str:
    capsys.readouterr()
    assert main(shlex.split(command)[1:]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


COMPILE = "hlsfuse compile examples/residual.json -o residual-out"
CSIM = "hlsfuse csim residual-out"


def test_doc_shows_the_compile_output_of_the_residual_example(workdir, capsys):
    blocks = command_blocks()
    assert COMPILE in blocks, "docs/hls.md lost its compile example"
    assert run_documented(COMPILE, capsys) == blocks[COMPILE]
    assert (workdir / "residual-out" / "hls" / "residual.cpp").is_file()


@pytest.mark.gxx
def test_doc_shows_the_csim_output_of_the_residual_example(workdir, capsys):
    blocks = command_blocks()
    run_documented(COMPILE, capsys)
    assert run_documented(CSIM, capsys) == blocks[CSIM]  # OUT relative to the working folder


@pytest.mark.gxx
def test_doc_python_example_runs(workdir):
    (code,) = re.findall(r"```python\n(.*?)```", DOC, re.S)
    exec(compile(code, "docs/hls.md", "exec"), {})
    assert (workdir / "residual-out" / "hls" / "run_hls.tcl").is_file()


def test_doc_describes_every_stage_kind_and_control_option():
    kinds = re.findall(r"^\| `(\w+)` \|", section("From fused group to stage"), re.M)
    assert kinds == list(STAGE_KINDS)
    control = section("Ports and control")
    assert [c for c in CONTROLS if f"- `{c}`" not in control] == []


def test_doc_lists_every_file_of_the_output_folder():
    design = compile_design(load_graph(ROOT / "examples" / "residual.json"))
    listing = re.search(r"```\n(OUT/graph\.json.*?)```", section("The output folder"), re.S).group(1)
    named = set(re.findall(r"^(OUT/\S+)", listing, re.M))
    entries = set()
    for path in [*design.files, CHECKSUMS]:  # write_tree adds checksums.json
        parts = ["OUT", *path.replace("residual", "<top>").split("/")]
        # files of OUT and OUT/hls by name, the files of deeper folders by their folder
        entries.add("/".join(parts) if len(parts) <= 3 else "/".join(parts[:3]) + "/")
    assert sorted(entries - named) == []
    assert sorted(named - entries) == []


def test_doc_explains_every_stage_table_column():
    design = compile_design(load_graph(ROOT / "examples" / "residual.json"))
    header = re.split(r"\s{2,}", stage_table(design.plan, design.areas).splitlines()[0].strip())
    columns = re.findall(r"^\| `([^`]+)` \|", section("The stage table"), re.M)
    assert columns == header
