"""``hlsfuse compile`` and ``hlsfuse csim`` on the command line: outputs, safety, exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hlsfuse import GraphBuilder, load_graph, save_graph
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.errors import HlsfuseError
from hlsfuse.outdir import verify


def _graph(path):
    b = GraphBuilder("tiny", dtype="fixed<12,4,RND,SAT>")
    x = b.input("x", [1, 4, 4, 2])
    w = b.constant("w", np.linspace(-1, 1, 3 * 3 * 2 * 2).reshape(3, 3, 2, 2), dtype="fixed<8,1>")
    y = b.relu(b.conv2d(x, w, padding=[1, 1, 1, 1], name="c"), name="y")
    b.output(b.add(y, x, name="out"))
    graph = b.build()
    save_graph(graph, path)
    return graph


def test_compile_writes_the_output_folder_and_prints_the_stage_table(tmp_path, capsys):
    _graph(tmp_path / "g.json")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--top", "dut", "--part", "xc7z020clg400-1"]) == 0
    printed = capsys.readouterr().out
    assert "design 'dut'" in printed and "cycles/frame" in printed and "s0_conv2d_relu_add" in printed
    assert "ch_x_3" in printed and "depth" in printed
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    for name in ("graph.json", "fusion.json", "fusion.dot", "report.md", "hls/dut.cpp", "hls/dut.h", "hls/types.h",
                 "hls/weights.h", "hls/tb_dut.cpp", "hls/hls_config.cfg", "hls/run_hls.tcl", "hls/Makefile"):
        assert name in names
    assert "xc7z020clg400-1" in (out / "hls" / "run_hls.tcl").read_text()
    assert json.loads((out / "fusion.json").read_text())["groups"][0]["nodes"] == ["c", "y", "out"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_compile_refuses_a_non_empty_folder_and_replaces_it_with_force(tmp_path, capsys):
    _graph(tmp_path / "g.json")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"hlsfuse: error: {out}: folder exists and is not empty (use --force to replace it)\n"
    assert (out / "mine.txt").read_text() == "keep me"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--force"]) == 0
    assert not (out / "mine.txt").exists() and (out / "hls" / "tiny.cpp").is_file()


def test_a_failing_compile_leaves_nothing_behind(tmp_path, capsys):
    b = GraphBuilder("c", dtype="fixed<8,4>")
    b.output(b.custom(b.input("x", [2]), pattern="OPAQUE", shape=[2], dtype="fixed<8,4>", name="k"))
    save_graph(b.build(), tmp_path / "g.json")
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "out")]) == 2
    assert "node 'k' (custom): custom ops model other compilers' graphs" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_identical_inputs_give_byte_identical_files(tmp_path):
    graph = _graph(tmp_path / "g.json")
    first = compile(graph, CompileOptions(top="t")).files
    second = compile(graph, CompileOptions(top="t")).files
    assert first == second
    with pytest.raises(HlsfuseError, match="option 'target' must be one of hls, verilog, all, not 'vhdl'"):
        CompileOptions(target="vhdl")


@pytest.mark.gxx
def test_csim_passes_and_reports_mismatches_with_exit_code_1(tmp_path, capsys):
    graph = _graph(tmp_path / "g.json")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["csim", str(out)]) == 0
    assert capsys.readouterr().out.startswith("PASS")
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "in.npz", x=rng.uniform(-4, 4, size=(1, 4, 4, 2)))
    assert main(["csim", str(out), "--inputs", str(tmp_path / "in.npz")]) == 0
    capsys.readouterr()
    # corrupt one golden value: csim must fail, name the tensor and index, and exit 1
    golden = out / "hls" / "data" / "out.txt"
    lines = golden.read_text().splitlines()
    lines[5] = str(int(lines[5]) + 1)
    golden.write_text("\n".join(lines) + "\n")
    assert main(["csim", str(out)]) == 2  # the file changed since compile wrote it
    assert "out.txt: changed since hlsfuse compile wrote it" in capsys.readouterr().err
    assert main(["csim", str(out), "--allow-edits"]) == 1
    report = capsys.readouterr().out
    assert report.startswith("FAIL") and "out" in report
    assert graph.types["out"].size == 32


def test_csim_errors_are_one_line(tmp_path, capsys):
    assert main(["csim", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hlsfuse: error: ") and err.count("\n") == 1
    assert main(["csim", str(tmp_path), "--hls-include", str(tmp_path)]) == 2
    assert "no ap_fixed.h in this folder" in capsys.readouterr().err


def _large(path):
    """A graph whose 300,000 weight values are above the side file threshold (262,144)."""
    b = GraphBuilder("large", dtype="fixed<8,1>")
    x = b.input("x", [1, 600])
    w = b.constant("w", np.random.default_rng(0).normal(0, 0.3, (500, 600)), dtype="fixed<8,1>")
    b.output(b.dense(x, w, name="fc"))
    graph = b.build()
    save_graph(graph, path)
    return graph


def test_compile_keeps_a_large_graphs_values_in_out_graph_npz(tmp_path, capsys):
    graph = _large(tmp_path / "g.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "g.npz"]
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert json.loads((out / "graph.json").read_text())["constants"][0]["init"] == {
        "kind": "file", "file": "graph.npz", "array": "w"}
    saved = (out / "graph.json").stat().st_size + (out / "graph.npz").stat().st_size
    assert saved <= 1.2 * 4 * 300_000 + 1_000_000
    assert load_graph(out / "graph.json") == graph
    assert "graph.npz" in json.loads((out / "checksums.json").read_text())["sha256"]
    verify(out, ("hls",))
    # the simulators check graph.npz as they check graph.json
    with np.load(out / "graph.npz") as arrays:
        edited = arrays["w"].copy()
    edited[0, 0] += 1
    np.savez(out / "graph.npz", w=edited)
    with pytest.raises(HlsfuseError) as info:
        verify(out, ("hls",))
    assert str(info.value).startswith(f"{out / 'graph.npz'}: changed since hlsfuse compile wrote it")


def test_compile_weights_flags(tmp_path, capsys):
    graph = _graph(tmp_path / "g.json")
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "side"), "--weights-file"]) == 0
    assert (tmp_path / "side" / "graph.npz").is_file() and load_graph(tmp_path / "side" / "graph.json") == graph
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "small")]) == 0
    assert not (tmp_path / "small" / "graph.npz").exists()
    _large(tmp_path / "large.json")
    assert main(["compile", str(tmp_path / "large.json"), "-o", str(tmp_path / "inline"), "--inline-weights"]) == 0
    assert not (tmp_path / "inline" / "graph.npz").exists()
    assert len(json.loads((tmp_path / "inline" / "graph.json").read_text())["constants"][0]["data"]) == 300_000
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "x"), "--weights-file", "--inline-weights"])
    assert "argument --inline-weights: not allowed with argument --weights-file" in capsys.readouterr().err
    files = compile(graph, CompileOptions(weights_file=True)).files
    assert isinstance(files["graph.npz"], bytes) and files == compile(graph, CompileOptions(weights_file=True)).files
