"""A ResNet-18-sized model end to end (examples/resnet18.py: 11.7 M weights drawn from a seed): saved with its side
file, compiled to both backends, and C-simulated bit-exactly (bench/large_models.py prints the times)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_process import PYTHON_M, run_cli

from hlsfuse import load_graph, save_graph
from hlsfuse.cli import main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import resnet18  # noqa: E402 - examples/ is not a package


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r18")
    graph = resnet18.build()
    save_graph(graph, folder / "r18.json")
    return graph, folder


def test_the_saved_graph_is_a_json_and_its_raw_weights(saved):
    graph, folder = saved
    values = sum(c.data.size for c in graph.constants)
    assert values > 11_000_000
    pair = (folder / "r18.json").stat().st_size + (folder / "r18.npz").stat().st_size
    assert pair <= 1.2 * 4 * values + 1e6  # the bound; 8-bit weights take 0.25 x their float32 bytes
    assert (folder / "r18.json").stat().st_size < 100_000
    assert load_graph(folder / "r18.json") == graph


@pytest.mark.gxx
def test_its_design_compiles_compactly_and_simulates_exactly(saved, capsys):
    graph, folder = saved
    out = folder / "out"
    assert main(["compile", str(folder / "r18.json"), "-o", str(out), "--target", "all"]) == 0
    declared = sum(c.data.size * c.type.dtype.bits for c in graph.constants) / 8
    # weights.h holds raw integers (it held 127 MB of decimals), the ROM files 256 bits a line, graph.npz the raw
    # weights deflated
    assert (out / "hls" / "weights.h").stat().st_size < 3 * declared
    assert (out / "graph.npz").stat().st_size < declared
    # the Verilog declares each weight bank the model makes a block RAM (a ROM each, loaded from the stage's one
    # .mem file: about 130 bytes of text a bank; this unfolded design has 29 k)
    manifest = json.loads((out / "verilog" / "manifest.json").read_text())
    banks = sum(w.get("banks", 0) for w in manifest["word_files"])
    assert banks > 20_000
    assert _size(out) <= 6 * declared + 5e6 + 160 * banks
    assert json.loads((out / "graph.json").read_text())["constants"][0]["init"]["kind"] == "file"
    capsys.readouterr()
    assert main(["csim", str(out)]) == 0
    assert "PASS: 2000 output elements in 2 frame(s) match the reference" in capsys.readouterr().out


_PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def _peak_megabytes(*args: str) -> float:
    """Peak resident memory of ``hlsfuse ARGS`` in a fresh process."""
    done = run_cli(*args, command=(sys.executable, "-c", _PEAK, *PYTHON_M), timeout=None)
    assert done.returncode == 0, done.stderr
    return int(done.stdout) / 1024


def test_compiling_it_holds_at_most_two_copies_of_the_weights(saved):
    """The loaded graph holds the weights once (raw int64); the large files (weights.h, the ROMs' .mem files) are
    made as they are written, a piece at a time, so no step adds more than one more copy (it held four)."""
    graph, folder = saved
    held = sum(c.data.nbytes for c in graph.constants) / 2**20
    idle = _peak_megabytes("compile", "--help")
    peak = _peak_megabytes("compile", str(folder / "r18.json"), "-o", str(folder / "peak"), "--target", "all")
    assert peak - idle <= 2 * held, f"peak {peak:.0f} MB, idle {idle:.0f} MB, weights {held:.0f} MB"
