"""``hlsfuse explore``: the sweep's points, its folder (resume, interrupt, refusals), its fronts, and the
figures of each point against compiling it alone. The plots and the page: test_explore_page.py; Dask and
--verify: test_explore_cluster.py."""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from cli_process import cli_env, run_cli, start_cli
from tiers import need

from hlsfuse import GraphBuilder, HlsfuseError, save_graph
from hlsfuse.cli import main
from hlsfuse.explore.points import parse_budgets
from hlsfuse.explore.sweep import COLUMNS
from hlsfuse.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
RESIDUAL = str(ROOT / "examples" / "residual.json")
SMALL = ["--boards", "pynq-z2,zcu104", "--dsp", "8,16,40", "--board", "pynq-z2"]


def _explore(tmp_path, *args, name="x", jobs="1"):
    out = tmp_path / name
    code = main(["explore", *args, "-o", str(out), "--jobs", jobs])
    return code, out


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's refusals
        return exc.code


def _points(out: Path) -> list[dict]:
    return json.loads((out / "points.json").read_text())["points"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explore")
    code, out = _explore(tmp, RESIDUAL, *SMALL)
    assert code == 0
    return out


def test_budgets_are_lists_and_ranges():
    assert parse_budgets("16,32") == [16, 32]
    assert parse_budgets("10:50:20") == [10, 30, 50]
    assert parse_budgets("16:128:x2,100") == [16, 32, 64, 100, 128]
    for bad, text in (("50:10:5", "LO <= HI"), ("ten", "is not a DSP count"), ("10:20:x1", "F > 1"),
                      ("10:20:0", "STEP >= 1")):
        with pytest.raises(HlsfuseError, match=text):
            parse_budgets(bad)


@pytest.mark.matplotlib
def test_every_point_is_a_row_with_every_column_and_its_files(swept):
    with open(swept / "points.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    points = _points(swept)
    assert tuple(rows[0]) == COLUMNS and len(rows) == len(points) == 2 * (2 + 3)  # fusions x (boards + budgets)
    assert len({p["id"] for p in points}) == len(points)
    for p in points:
        assert set(p) == set(COLUMNS)
        assert p["status"] == "ok", p["message"]
        if p["dsp_budget"] is not None:
            assert p["dsp"] <= p["dsp_budget"]
        where = swept / "points" / p["id"]
        assert json.loads((where / "point.json").read_text())["id"] == p["id"]
        report = json.loads((where / "report.json").read_text())
        assert report["cycles_per_frame"] == p["cycles_per_frame"] and report["total"]["dsp"] == p["dsp"]
        assert p["cycles_per_frame"] >= p["bound_cycles"] > 0
        assert p["fifo_bits"] == report["fifo_bits"] and p["fifos"] == report["channels"]


@pytest.mark.matplotlib
def test_the_fronts_are_the_points_no_other_beats(swept):
    points = _points(swept)
    for resource, key in (("dsp", "pareto_dsp"), ("bram18", "pareto_bram"), ("lut", "pareto_lut")):
        for p in points:
            beaten = any(o["cycles_per_frame"] <= p["cycles_per_frame"] and o[resource] <= p[resource]
                         and (o["cycles_per_frame"], o[resource]) != (p["cycles_per_frame"], p[resource])
                         for o in points)
            assert p[key] == (not beaten), (p["id"], resource)
    ranked = sorted((p for p in points if p["rank"] is not None), key=lambda p: p["rank"])
    products = [p["cycles_per_frame"] * max(p["dsp"], 1) for p in ranked]
    assert products == sorted(products) and all(p["pareto_dsp"] for p in ranked)
    assert {p["id"] for p in ranked} == {p["id"] for p in points if p["pareto_dsp"]}


@pytest.mark.matplotlib
def test_the_unfused_baseline_has_more_stages_fifos_and_fifo_bits(swept):
    points = {p["id"]: p for p in _points(swept)}
    pairs = [(p, points["unfused" + p["id"].removeprefix("fpga")]) for p in points.values() if p["fusion"] == "fpga"]
    assert len(pairs) == 5
    for fused, unfused in pairs:
        assert unfused["stages"] > fused["stages"] and unfused["fifos"] > fused["fifos"]
        assert unfused["fifo_bits"] > fused["fifo_bits"], (fused["id"], fused["fifo_bits"], unfused["fifo_bits"])


@pytest.mark.matplotlib
def test_a_points_fold_json_compiles_to_the_same_design(swept, tmp_path):
    point = next(p for p in _points(swept) if p["id"] == "fpga_pynq-z2-dsp16")
    out = tmp_path / "c"
    fold = swept / "points" / point["id"] / "fold.json"
    assert main(["compile", RESIDUAL, "-o", str(out), "--board", "pynq-z2", "--fold", str(fold)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert (report["cycles_per_frame"], report["total"]["dsp"], report["total"]["bram18"]) == (
        point["cycles_per_frame"], point["dsp"], point["bram18"])


@pytest.mark.matplotlib
def test_a_pool_finds_what_one_process_finds(swept, tmp_path):
    code, out = _explore(tmp_path, RESIDUAL, *SMALL, jobs="2")
    assert code == 0 and _points(out) == _points(swept)


@pytest.mark.matplotlib
def test_a_folder_is_refused_replaced_or_resumed(swept, tmp_path, capsys):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    for flags, message in (([], "is not empty; --resume continues its sweep, --force replaces it"),
                           (["--force"], "holds no sweep \\(no sweep.json\\); --force replaces only"),
                           (["--resume"], "holds no sweep to resume")):
        assert main(["explore", RESIDUAL, *SMALL, "-o", str(tmp_path / "busy"), *flags]) == 2
        assert message.replace("\\", "") in capsys.readouterr().err
    assert (tmp_path / "busy" / "mine.txt").read_text() == "keep"
    other = str(ROOT / "examples" / "mlp.json")
    assert main(["explore", other, "--boards", "pynq-z2", "-o", str(swept), "--resume"]) == 2
    assert "holds a sweep of another graph" in capsys.readouterr().err
    # resume: only the points without a point.json are evaluated again
    code, out = _explore(tmp_path, RESIDUAL, *SMALL, name="again")
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("points/*/point.json")}
    lost = out / "points" / "unfused_zcu104" / "point.json"
    lost.unlink()
    assert main(["explore", RESIDUAL, *SMALL, "-o", str(out), "--resume", "--jobs", "1"]) == 0
    assert lost.is_file() and _points(out) == _points(swept)
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items() if p != lost)
    assert main(["explore", RESIDUAL, "--boards", "pynq-z2", "-o", str(out), "--force", "--jobs", "1"]) == 0
    assert len(_points(out)) == 2 and not (out / "points" / "fpga_zcu104").exists()


@pytest.mark.matplotlib
def test_an_interrupted_sweep_keeps_its_points_and_resume_does_not_redo_them(tmp_path):
    out = tmp_path / "x"
    args = ["explore", ROOT / "examples" / "resnet8.json", "-o", out, "--dsp", "20:2000:20", "--board", "zcu104",
            "--fusion", "fpga", "--jobs", "2"]
    proc = start_cli(*args)
    deadline = time.monotonic() + 120
    while len(list(out.glob("points/*/point.json"))) < 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "hlsfuse: interrupted: stopped after" in err and "--resume completes the sweep" in err
    assert "Traceback" not in err
    done = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("points/*/point.json")}
    assert 4 <= len(done) < 100
    assert {p["id"] for p in _points(out)} == set(done)  # the tables hold what finished
    finished = run_cli(*args, "--resume", timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert len(_points(out)) == 100
    assert all((out / "points" / k / "point.json").stat().st_mtime_ns == t for k, t in done.items())


def _mlp_onnx(path: Path) -> Path:
    onnx = need("onnx")
    need("onnxruntime")  # onnx_build's reference
    from onnx_build import model, node, weights

    rng = np.random.default_rng(3)
    proto = model([node("Gemm", ["x", "w1", "b1"], ["h"], transB=1), node("Relu", ["h"], ["r"]),
                   node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)],
                  {"x": [1, 16]}, {"w1": weights(rng, 32, 16), "b1": weights(rng, 32), "w2": weights(rng, 8, 32),
                                   "b2": weights(rng, 8)})
    onnx.save(proto, path)
    return path


@pytest.mark.matplotlib
def test_precisions_of_an_onnx_model_are_points_with_their_error(tmp_path):
    path = _mlp_onnx(tmp_path / "mlp.onnx")
    code, out = _explore(tmp_path, str(path), "--boards", "pynq-z2", "--fusion", "fpga",
                         "--precision", "fixed<16,6>", "--precision", "fixed<8,4>")
    assert code == 0
    points = {p["precision"]: p for p in _points(out)}
    assert set(points) == {"fixed<16,6>", "fixed<8,4>"} and points["fixed<8,4>"]["id"] == "fpga_pynq-z2_fixed-8-4"
    wide, narrow = points["fixed<16,6>"], points["fixed<8,4>"]
    assert 0 < wide["max_error"] < narrow["max_error"] and 0 < wide["mean_error"] <= wide["max_error"]
    assert narrow["lut"] != wide["lut"]  # the types reach the resource model


def test_bad_requests_are_one_line(tmp_path, capsys):
    cases = [
        (["--boards", "nope"], "unknown board 'nope'"),
        (["--dsp", "9:3:1"], "argument --dsp: '9:3:1' must be LO:HI:STEP"),
        (["--boards", "pynq-z2", "--fusion", "tvm"], "--fusion: 'tvm' must be one of fpga, unfused"),
        (["--boards", "pynq-z2", "--port-lanes", "0"], "--port-lanes: '0' must be auto or a positive number"),
        (["--boards", "pynq-z2", "--precision", "fixed<8,4>"], "apply to ONNX models (.onnx), not to"),
        (["--boards", "pynq-z2", "--verify", "-1"], "--verify must be 0 or more"),
        (["--boards", ""], "nothing to explore: give --boards or --dsp"),
        (["--boards", "pynq-z2", "--choose", "nowhere"], "--choose: 'nowhere' is not a point of this sweep"),
    ]
    for k, (flags, message) in enumerate(cases):
        assert _code(["explore", RESIDUAL, "-o", str(tmp_path / f"o{k}"), "--jobs", "1", *flags]) == 2, flags
        err = capsys.readouterr().err
        last = err.strip().splitlines()[-1]  # after argparse's usage, if argparse refused it
        assert last.startswith("hlsfuse: error: ") and message in last and "Traceback" not in err, err


def test_progress_is_drawn_on_a_terminal_only(capsys):
    import io

    line = io.StringIO()
    progress = Progress("points", 4, stream=line, enabled=True)
    progress.update()
    progress.update()
    assert "\rpoints 2/4, 0:00, ETA 0:00" in line.getvalue()
    progress.close()
    assert line.getvalue().endswith("\r")
    quiet = Progress("points", 4)  # standard error is captured here: no terminal
    quiet.update()
    quiet.close()
    assert capsys.readouterr().err == ""


def test_a_long_step_shows_its_elapsed_time_on_a_terminal_only(monkeypatch):
    import io

    from hlsfuse.progress import activity, on_terminal

    line = io.StringIO()
    with activity("rtlsim: Verilator is building top", stream=line, enabled=True, every=0.05):
        time.sleep(0.2)
    drawn = line.getvalue()
    assert drawn.startswith("\rrtlsim: Verilator is building top, 0:00") and drawn.count("\r") >= 3
    assert drawn.endswith("\r") and drawn.rstrip("\r").split("\r")[-1].strip() == ""  # cleared at the end

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert on_terminal(Tty()) and not on_terminal(io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not on_terminal(Tty())


def test_compile_shows_its_steps_on_a_terminal_and_nothing_in_a_pipe(tmp_path):
    import pty

    env = {k: v for k, v in cli_env(TERM="xterm").items() if k != "CI"}
    args = ["compile", RESIDUAL, "--target", "all"]
    master, slave = pty.openpty()
    done = run_cli(*args, "-o", tmp_path / "a", env=env, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert done.returncode == 0
    progress = drawn.partition(b"hlsfuse: warning: ")[0]  # the line is erased before the overflow warning
    assert b"\rcompile: fusing and folding, 0:00" in progress and progress.endswith(b"\r")
    piped = run_cli(*args, "-o", tmp_path / "b", env=env)
    # nothing but the warning about the types that can overflow
    assert piped.returncode == 0 and [line for line in piped.stderr.splitlines()
                                      if not line.startswith("hlsfuse: warning: ")] == []


@pytest.mark.yosys
@pytest.mark.matplotlib
def test_synth_puts_yosys_beside_the_model_in_the_table_the_plot_and_the_page(tmp_path):
    """--synth K synthesizes the K best points (hlsfuse synth): their Yosys counts are columns of points.csv,
    a plot and the page, and the counts are the ones ``hlsfuse synth`` gives the same design."""
    rng = np.random.default_rng(5)
    b = GraphBuilder("tiny", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 16], dtype="fixed<10,2>")
    h = b.relu(b.dense(x, b.constant("w1", rng.uniform(-1, 1, (8, 16)), dtype="fixed<8,1>"), name="fc1"), name="r")
    b.output(b.dense(h, b.constant("w2", rng.uniform(-1, 1, (4, 8)), dtype="fixed<8,1>"), name="fc2"))
    save_graph(b.build(), tmp_path / "tiny.json")
    code, out = _explore(tmp_path, str(tmp_path / "tiny.json"), "--dsp", "4,8", "--board", "pynq-z2",
                         "--fusion", "fpga", "--synth", "1")
    assert code == 0
    rows = [p for p in _points(out) if p["yosys_dsp"] is not None]
    assert [p["rank"] for p in rows] == [1] and len(_points(out)) == 2
    for p in rows:
        found = json.loads((out / "points" / p["id"] / "synth.json").read_text())
        assert found["yosys"].startswith("Yosys 0.") and not found["mismatches"] and not p["flag"]
        assert (p["yosys_dsp"], p["yosys_bram18"]) == (p["dsp"], p["bram18"]) and p["yosys_lut"] > 0
        assert p["logic_depth_ns"] > 0
        assert main(["compile", str(tmp_path / "tiny.json"), "-o", str(tmp_path / p["id"]), "--target", "verilog",
                     "--fold", str(out / "points" / p["id"] / "fold.json"), "--part", p["part"]]) == 0
        assert main(["synth", str(tmp_path / p["id"]), "--json", str(tmp_path / f"{p['id']}.json")]) == 0
        alone = json.loads((tmp_path / f"{p['id']}.json").read_text())["total"]["yosys"]
        assert (alone["dsp"], alone["bram18"], alone["lut"], alone["ff"]) == (
            p["yosys_dsp"], p["yosys_bram18"], p["yosys_lut"], p["yosys_ff"])
    with open(out / "points.csv", newline="") as f:
        assert "yosys_lut" in next(csv.reader(f))
    assert (out / "synth.png").is_file() and (out / "synth.svg").is_file()
    assert "Yosys LUT" in (out / "index.html").read_text()
