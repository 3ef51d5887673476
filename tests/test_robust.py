"""Hostile inputs and faults (issue 13): each ends in one clean line and the right exit code, and no output
folder is ever lost, whatever instant the process dies at.

Faults are injected, not waited for: an interrupt is raised from inside the step it interrupts, and a kill
is ``os._exit`` in a child process at the exact instant between two filesystem operations.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cli_process import cli_env, run_cli, start_cli
from tiers import need

import hlsfuse.cli.run
import hlsfuse.compile
import hlsfuse.fileio
import hlsfuse.outdir
from hlsfuse.cli import main
from hlsfuse.errors import HlsfuseError
from hlsfuse.outdir import CHECKSUMS, Files, check_out_dir, verify, write_tree
from hlsfuse.sim import csim
from hlsfuse.sim.rtlsim import rtlsim

ROOT = Path(__file__).resolve().parents[1]
RESIDUAL = str(ROOT / "examples" / "residual.json")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------ one line, the right exit code


def test_deeply_nested_json_is_one_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"hlsfuse: error: {path}: JSON nested too deeply (a graph is an object of flat lists)\n"


@pytest.mark.parametrize("command", [["run", RESIDUAL], ["compile", RESIDUAL, "-o", "OUT"], ["rtlsim", "OUT"]])
def test_a_negative_seed_is_refused_by_argparse(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--seed", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: hlsfuse ")
    assert err[-1] == f"hlsfuse: error: {command[0]}: argument --seed: a seed must be at least 0, not -1"


@pytest.mark.parametrize("argv, line", [
    (["nope"], "hlsfuse: error: argument COMMAND: invalid choice: 'nope'"),
    (["run"], "hlsfuse: error: run: the following arguments are required: GRAPH"),
    (["rtlsim", "OUT", "--frames", "x"], "hlsfuse: error: rtlsim: argument --frames: expected a whole number"),
])
def test_command_line_misuse_keeps_the_usage_line_and_says_hlsfuse_error(argv, line, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: hlsfuse ") and err[-1].startswith(line)


def test_an_interrupt_while_the_library_is_imported_is_one_line_exit_130(capsys, monkeypatch):
    import hlsfuse.cli as cli

    # the console script imports hlsfuse.cli before main() runs: that import loads no library module (numpy
    # alone takes a tenth of a second), so an early Ctrl-C lands in main(), which imports the commands
    fresh = subprocess.run([sys.executable, "-c", "import sys, hlsfuse.cli; print(sorted(m for m in sys.modules "
                            "if m.split('.')[0] in ('numpy', 'jinja2', 'onnx') or m.startswith('hlsfuse.')))"],
                           capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "['hlsfuse.cli', 'hlsfuse.errors']"

    def importing(names=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "commands", importing)
    assert main(["check", RESIDUAL]) == 130
    assert capsys.readouterr().err == "hlsfuse: interrupted\n"


def test_an_out_that_is_a_link_is_replaced_by_the_design_and_no_link_is_left_beside_it(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    out = tmp_path / "work" / "OUT"
    out.parent.mkdir()
    out.symlink_to(mine, target_is_directory=True)
    dead = out.with_name(".OUT.999999.gone")  # a link a killed run left: removed, never followed
    dead.symlink_to(mine, target_is_directory=True)
    assert main(["compile", RESIDUAL, "-o", str(out), "--force"]) == 0
    assert not out.is_symlink() and (out / "checksums.json").is_file()
    assert _tree(mine) == {"notes.txt": b"keep"} and _leftovers(out.parent) == []


def test_an_interrupt_during_compile_is_one_line_exit_130_and_out_is_untouched(tmp_path, capsys, monkeypatch):
    out = tmp_path / "OUT"
    assert main(["compile", RESIDUAL, "-o", str(out)]) == 0
    before = _tree(out)
    capsys.readouterr()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hlsfuse.compile, "emit_hls", interrupted)
    assert main(["compile", RESIDUAL, "-o", str(out), "--force"]) == 130
    assert capsys.readouterr().err == "hlsfuse: interrupted\n"
    assert _tree(out) == before
    monkeypatch.undo()
    # while the files are written: the staging folder goes, OUT stays
    real_open = Path.open
    calls = []

    def write_then_interrupt(self, mode="r", *args, **kwargs):
        if mode == "wb":  # a file of OUT
            calls.append(self)
            if len(calls) == 5:
                raise KeyboardInterrupt
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", write_then_interrupt)
    assert main(["compile", RESIDUAL, "-o", str(out), "--force"]) == 130
    monkeypatch.undo()
    assert _tree(out) == before and _leftovers(tmp_path) == []


def test_a_closed_standard_output_ends_quietly(tmp_path, monkeypatch, capsys):
    # standard output is a pipe whose reader is gone (``hlsfuse ... | head`` after head exits): every write fails
    read, write = os.pipe()
    os.close(read)
    stdout = os.fdopen(write, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["compile", RESIDUAL, "-o", str(tmp_path / "OUT")]) == 141
    monkeypatch.undo()
    stdout.close()  # now /dev/null: nothing more to say, and nothing fails at exit
    assert capsys.readouterr().err == ""
    assert (tmp_path / "OUT" / "report.json").is_file()  # written before anything was printed


# ------------------------------------------------------------------ a kill at the worst instant

_CHILD = textwrap.dedent('''
    import os, sys
    import hlsfuse.outdir as outdir
    out, where = sys.argv[1], sys.argv[2]
    real_exchange, real_replace = outdir._exchange, os.replace
    if where == "before swap":
        outdir._exchange = lambda a, b: os._exit(9)
    elif where == "after swap":
        outdir._exchange = lambda a, b: real_exchange(a, b) and os._exit(9)
    else:  # the fallback without an exchange: killed between its two renames
        outdir._exchange = lambda a, b: False
        def replace_then_die(a, b):
            real_replace(a, b)
            os._exit(9)
        os.replace = replace_then_die
    outdir.write_tree(out, {"a.txt": "new", "sub/b.txt": "new b"}, force=True)
''')


@pytest.mark.parametrize("where", ["before swap", "after swap", "between the fallback's renames"])
def test_a_kill_at_any_instant_leaves_the_old_out_or_the_new_one(tmp_path, where):
    out = tmp_path / "OUT"
    old = {"a.txt": b"old", "c.txt": b"old c"}
    write_tree(out, old)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(out), where], env=cli_env(), timeout=60)
    assert done.returncode == 9
    check_out_dir(out, force=True)  # what the next run does first: a moved-away OUT comes back
    assert _tree(out) in (old, {"a.txt": b"new", "sub/b.txt": b"new b"})
    assert _leftovers(tmp_path) == []  # the dead run's staging folder is gone too
    if where == "after swap":
        assert _tree(out)["a.txt"] == b"new"


def test_the_staging_folder_of_a_live_run_is_left_alone(tmp_path):
    out = tmp_path / "OUT"
    live = tmp_path / f".OUT.{os.getpid()}.abc"
    live.mkdir()
    write_tree(out, {"a.txt": "x"})
    assert live.is_dir()


def test_force_replaces_in_one_step_on_linux(tmp_path, monkeypatch):
    out = tmp_path / "OUT"
    write_tree(out, {"a.txt": "old"})
    renames = []
    monkeypatch.setattr(hlsfuse.outdir.os, "replace", lambda a, b: renames.append((a, b)))
    write_tree(out, {"a.txt": "new"}, force=True)
    assert renames == [] and (out / "a.txt").read_text() == "new"


# ------------------------------------------------------------------ determinism


def test_compiling_twice_with_different_hash_seeds_gives_identical_files(tmp_path):
    trees = []
    for seed in ("0", "12345"):
        out = tmp_path / f"out{seed}"
        done = run_cli("compile", RESIDUAL, "-o", out, "--target", "all", "--board", "pynq-z2",
                       env=cli_env(PYTHONHASHSEED=seed), timeout=300)
        assert done.returncode == 0, done.stderr
        trees.append(_tree(out))
    assert trees[0] == trees[1]


# ------------------------------------------------------------------ --inputs and --vcd: refused before anything runs


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("design") / "OUT"
    assert main(["compile", RESIDUAL, "-o", str(out), "--target", "all"]) == 0
    return out


@pytest.mark.parametrize("arrays, message", [
    ({"x": np.zeros([1, 16, 16, 8], dtype=np.complex128)}, "input 'x': values must be real numbers, not complex128"),
    ({"x": np.zeros([1, 16, 16, 4])}, "input 'x': value has shape [1, 16, 16, 4], expected [1, 16, 16, 8]"),
    ({"z": np.zeros([1, 16, 16, 8])}, "missing value for graph input 'x'"),
    ({"x": np.full([1, 16, 16, 8], np.nan)}, "input 'x': "),
])
@pytest.mark.parametrize("command", ["run", "csim", "rtlsim"])
def test_inputs_arrays_are_checked_first_and_the_error_names_the_file(command, arrays, message, compiled, tmp_path,
                                                                       capsys):
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    target = RESIDUAL if command == "run" else str(compiled)
    assert main([command, target, "--inputs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {path}: {message}") and err.count("\n") == 1


def test_a_vcd_into_a_missing_folder_is_refused(compiled, tmp_path, capsys):
    vcd = tmp_path / "nope" / "wave.vcd"
    assert main(["rtlsim", str(compiled), "--vcd", str(vcd)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {vcd}: folder '{vcd.parent}' does not exist (--vcd)\n"


@pytest.mark.parametrize("command", ["csim", "rtlsim"])
def test_a_frame_count_no_run_could_stream_is_refused_before_building(command, compiled, capsys, monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("built")

    module = importlib.import_module(f"hlsfuse.sim.{command}")  # hlsfuse.sim.csim is also the function's name
    monkeypatch.setattr(module, "build" if command == "csim" else "_frames", no_build)
    assert main([command, str(compiled), "--frames", "1000000000000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {command}: 1000000000000 frames of 4096 input and output elements each "
                          "exceed the 134217728 elements one run streams; run at most 32768")


@pytest.mark.parametrize("driver", ["native", "pyverilator"])
def test_a_frame_count_no_simulation_finishes_in_time_is_refused_before_building(driver, compiled, capsys,
                                                                                 monkeypatch):
    from hlsfuse.sim import rtlsim as module

    def no_build(*args, **kwargs):
        raise AssertionError("built")

    manifest = json.loads((compiled / "verilog" / "manifest.json").read_text())
    cycles, latency = manifest["cycles"], manifest["latency"]
    monkeypatch.setattr(module, "_frames", no_build)
    if driver == "native":  # its bound is met by designs folded to 8+ cycles per streamed element; not this one
        monkeypatch.setitem(module.MAX_CYCLES, "native", 1 << 20)
    frames = module.MAX_CYCLES[driver] // cycles + 1  # streamable (2^27 elements), but over the cycle bound
    assert main(["rtlsim", str(compiled), "--frames", str(frames), "--driver", driver]) == 2
    fit = (module.MAX_CYCLES[driver] - latency) // cycles
    assert capsys.readouterr().err.startswith(
        f"hlsfuse: error: rtlsim: {frames} frames of {cycles} cycles each exceed the {module.MAX_CYCLES[driver]} "
        f"cycles one run of the {driver} driver simulates; run at most {fit}")


# ------------------------------------------------------------------ OUT edited after compile


@pytest.mark.parametrize("command, folder", [("csim", "hls"), ("rtlsim", "verilog")])
@pytest.mark.parametrize("how", ["edited", "truncated", "deleted"])
def test_simulating_an_out_whose_files_changed_is_one_line_naming_the_file(command, folder, how, compiled, tmp_path,
                                                                            capsys):
    out = tmp_path / "OUT"
    shutil.copytree(compiled, out)
    victim = sorted((out / folder).rglob("*.mem" if folder == "verilog" else "*.cpp"))[0]
    if how == "edited":
        victim.write_text(victim.read_text().replace("0", "1", 1))
    elif how == "truncated":
        victim.write_text(victim.read_text()[:10])
    else:
        victim.unlink()
    assert main([command, str(out)]) == 2
    said = "deleted" if how == "deleted" else "changed"
    assert capsys.readouterr().err == (f"hlsfuse: error: {victim}: {said} since hlsfuse compile wrote it; compile "
                                       "again, or pass --allow-edits to simulate the files as they are\n")


def test_an_out_without_checksums_is_refused_unless_edits_are_allowed(compiled, tmp_path, capsys):
    out = tmp_path / "OUT"
    shutil.copytree(compiled, out)
    (out / "checksums.json").unlink()
    assert main(["csim", str(out)]) == 2
    assert "checksums.json: missing" in capsys.readouterr().err


# ------------------------------------------------------------------ ONNX


def test_an_onnx_model_whose_external_data_is_missing_is_one_line(tmp_path, capsys):
    onnx = need("onnx")
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = numpy_helper.from_array(np.ones([4], np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w])
    path = tmp_path / "m.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path,
                    save_as_external_data=True, location="m.data", size_threshold=0)
    (tmp_path / "m.data").unlink()
    assert main(["convert", str(path), "-o", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {path}: cannot load external weight data: ") and err.count("\n") == 1
    assert not (tmp_path / "g.json").exists()


def test_a_file_made_as_it_is_written_is_streamed_hashed_and_made_again_when_read(tmp_path):
    made = []

    def produce():
        made.append(len(made))
        yield from ["a" * 700_000, "b" * 700_000, "c"]  # more than one piece of a megabyte

    files = Files({"big.txt": produce, "small.bin": b"\x00\x01"})
    assert [len(piece) for piece in files.chunks("big.txt")] == [1_400_000, 1]
    out = write_tree(tmp_path / "OUT", files, checksums=True)
    text = "a" * 700_000 + "b" * 700_000 + "c"
    assert (out / "big.txt").read_text() == text and made == [0, 1]
    assert json.loads((out / CHECKSUMS).read_text())["sha256"] == {
        "big.txt": hashlib.sha256(text.encode()).hexdigest(), "small.bin": hashlib.sha256(b"\x00\x01").hexdigest()}
    assert files["big.txt"] == text and made == [0, 1, 2]  # nothing kept: reading makes it again
    with pytest.raises(HlsfuseError, match="checksums.json is written from the other files, not given"):
        write_tree(tmp_path / "OUT2", Files({CHECKSUMS: "{}"}), checksums=True)


def test_a_written_design_is_what_the_simulators_check_it_against(tmp_path):
    design = hlsfuse.compile.compile(hlsfuse.load_graph(RESIDUAL))
    out = design.write(tmp_path / "OUT")
    assert set(json.loads((out / CHECKSUMS).read_text())["sha256"]) == set(design.files)
    verify(out, ("hls", "verilog"))
    (out / "hls" / "residual.cpp").write_text("// edited\n")
    with pytest.raises(HlsfuseError, match="residual.cpp"):
        verify(out, ("hls",))


def test_a_file_failing_while_it_is_made_leaves_out_as_it_was(tmp_path):
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "old.txt").write_text("old")

    def broken():
        yield "half a file"
        raise HlsfuseError("template broke")

    with pytest.raises(HlsfuseError, match="template broke"):
        write_tree(out, Files({"a.txt": "fine", "b.txt": broken}), force=True, checksums=True)
    assert _tree(out) == {"old.txt": b"old"} and _leftovers(tmp_path) == []


def test_a_full_disk_names_the_folder_and_file_being_written(tmp_path, capsys, monkeypatch):
    out = tmp_path / "OUT"
    real_open = Path.open

    def full(self, mode="r", *args, **kwargs):
        if mode == "wb" and self.name == "report.md":
            raise OSError(28, "No space left on device")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full)
    assert main(["compile", RESIDUAL, "-o", str(out)]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {out}: cannot write report.md: No space left on device; "
                                       f"{out} is left as it was\n")
    assert not out.exists() and _leftovers(tmp_path) == []


# ------------------------------------------------------------------ sizes and memory


def test_a_tensor_too_large_to_count_is_refused_by_check(tmp_path, capsys):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"name": "big", "inputs": [{"name": "x", "shape": [1, 100000, 100000, 64],
                                                          "dtype": "fixed<8,3>"}],
                                "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}], "outputs": ["r"]}))
    for command in (["check"], ["run"], ["compile", "-o", str(tmp_path / "OUT")]):
        assert main([command[0], str(path), *command[1:]]) == 2
        assert capsys.readouterr().err == (f"hlsfuse: error: {path}: input 'x': shape [1, 100000, 100000, 64] has "
                                           "640000000000 elements, more than the 2147483647 (2^31 - 1) a tensor "
                                           "may have\n")
    assert not (tmp_path / "OUT").exists()


def test_running_out_of_memory_is_one_line(capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(hlsfuse.cli.run, "run_raw", exhausted)
    assert main(["run", RESIDUAL]) == 2
    assert capsys.readouterr().err == ("hlsfuse: error: run: out of memory (the graph's tensors, or the frames asked "
                                       "for, do not fit in this machine's memory)\n")


# ------------------------------------------------------------------ the build caches


@pytest.mark.gxx
def test_a_damaged_csim_binary_is_rebuilt_never_run(compiled, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = csim(compiled)
    assert first.passed and first.built
    (binary,) = [p for p in (tmp_path / "cache" / "hlsfuse" / "csim").glob("*/csim_*") if p.suffix != ".sha256"]
    binary.write_bytes(binary.read_bytes()[:1000])  # truncated, as by a full disk or a killed copy
    again = csim(compiled)
    assert again.passed and again.built
    assert csim(compiled).built is False  # sealed and intact: reused
    leftover = [p.name for p in binary.parent.iterdir() if p.name.startswith(".")]
    assert leftover == []


@pytest.mark.verilator
def test_a_damaged_native_harness_is_rebuilt_never_run(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "OUT"
    assert main(["compile", str(ROOT / "examples" / "mlp.json"), "-o", str(out), "--target", "verilog"]) == 0
    assert rtlsim(out, driver="native").built
    (binary,) = (tmp_path / "cache" / "hlsfuse" / "rtlsim").glob("native-*/V*_native")
    binary.write_bytes(b"\x7fELF garbage")
    result = rtlsim(out, driver="native")
    assert result.passed and result.built
    assert not rtlsim(out, driver="native").built
    assert [p for p in (tmp_path / "cache" / "hlsfuse" / "rtlsim").iterdir() if p.name.startswith(".")] == []


def _working_in(folder: Path) -> list[int]:
    """The processes whose working directory is ``folder`` or below it."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if entry.name.isdigit() and cwd.startswith(str(folder)):
            found.append(int(entry.name))
    return found


@pytest.mark.verilator
def test_an_interrupt_during_a_verilator_build_stops_the_whole_build_and_leaves_no_entry(tmp_path):
    out = tmp_path / "OUT"
    assert main(["compile", str(ROOT / "examples" / "mlp.json"), "-o", str(out), "--target", "verilog"]) == 0
    cache = tmp_path / "cache"
    proc = start_cli("rtlsim", out, "--driver", "native", env=cli_env(XDG_CACHE_HOME=str(cache)))
    rtl = cache / "hlsfuse" / "rtlsim"
    # wait until make is compiling: Verilator has written its makefiles into the scratch folder
    while proc.poll() is None and not list(rtl.glob("*/obj/*.mk")):
        time.sleep(0.05)
    (scratch,) = [p for p in rtl.iterdir() if p.is_dir()]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err == "hlsfuse: interrupted\n"
    assert _working_in(scratch) == []  # Verilator, make and the compilers make started are gone too
    assert [p.name for p in rtl.iterdir() if p.is_dir()] == []  # no entry, no scratch


# ------------------------------------------------------------------ trials: each of these once ended in a traceback


def _residual_with(tmp_path: Path, name: str, edit) -> Path:
    data = json.loads(Path(RESIDUAL).read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("digits", [401, 5000])  # 5000: more than the 4300 Python reads as an int
@pytest.mark.parametrize("command", ["check", "run", "compile"])
def test_a_constant_holding_a_huge_integer_is_one_line_naming_it(command, digits, tmp_path, capsys):
    path = _residual_with(tmp_path, "huge.json", lambda d: d["constants"][1]["data"].__setitem__(3, 7))
    path.write_text(path.read_text().replace(", 7,", f", -{'9' * digits},", 1))
    extra = ["-o", str(tmp_path / "OUT")] if command == "compile" else []
    assert main([command, str(path), *extra]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {path}: constants[1].data[3] of constant 'b1' is an integer "
                                       "too large for a number (expected finite numbers, at most about 1.8e308 in "
                                       "magnitude)\n")
    assert not (tmp_path / "OUT").exists()


@pytest.mark.parametrize("pid", ["99999999999999999999", str(2**31), str(2**64)])
def test_a_folder_named_like_staging_with_an_impossible_pid_is_left_alone(pid, tmp_path, capsys):
    stray = tmp_path / f".OUT.{pid}.x"
    stray.mkdir()
    (stray / "keep.txt").write_text("mine")
    assert main(["compile", RESIDUAL, "-o", str(tmp_path / "OUT")]) == 0, capsys.readouterr().err
    assert (stray / "keep.txt").read_text() == "mine" and (tmp_path / "OUT" / "checksums.json").is_file()


@pytest.mark.parametrize("document", ['{"sha256": ["x"]}', '["x"]', '"x"', '{"sha": {}}',
                                      '{"sha256": {"graph.json": 5}}'])
def test_checksums_of_the_wrong_shape_are_one_line_naming_the_file(document, compiled, tmp_path, capsys):
    out = tmp_path / "OUT"
    shutil.copytree(compiled, out)
    (out / "checksums.json").write_text(document)
    assert main(["csim", str(out)]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {out / 'checksums.json'}: not what hlsfuse compile writes "
                                       '(expected an object {"sha256": {file: SHA-256 hex digest}}); compile again, '
                                       "or pass --allow-edits to simulate the files as they are\n")


@pytest.mark.parametrize("command, folder", [  # --allow-edits builds and runs the design
    pytest.param("csim", "hls", marks=pytest.mark.gxx),
    pytest.param("rtlsim", "verilog", marks=[pytest.mark.verilator, pytest.mark.pyverilator]),
])
@pytest.mark.parametrize("how", ["emptied", "entry removed", "source added"])
def test_a_source_with_no_checksum_is_one_line_naming_it(command, folder, how, compiled, tmp_path, capsys):
    out = tmp_path / "OUT"
    shutil.copytree(compiled, out)
    checksums = json.loads((out / "checksums.json").read_text())
    source = next(rel for rel in sorted(checksums["sha256"]) if rel.startswith(f"{folder}/"))
    if how == "emptied":  # then an edit would go unseen, but for this check
        checksums["sha256"] = {}
    elif how == "entry removed":
        del checksums["sha256"][source]
    else:
        source = f"{folder}/extra.h"
        (out / source).write_text("#define X 1\n")
    (out / source).write_text((out / source).read_text() + "\n")
    (out / "checksums.json").write_text(json.dumps(checksums))
    assert main([command, str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hlsfuse: error: ") and err.count("\n") == 1
    assert "not written by hlsfuse compile" in err or "has no entry" in err
    (out / folder / "wave.vcd").write_text("a waveform is no source")
    assert main([command, str(out), "--allow-edits"]) in (0, 1)  # edits accepted on request


@pytest.mark.parametrize("made", ["a file in OUT", "OUT as a file"])
def test_files_put_in_out_while_compiling_are_never_replaced_without_force(made, tmp_path, capsys, monkeypatch):
    out = tmp_path / "OUT"
    out.mkdir()  # an empty OUT is allowed at the start
    real_open = Path.open

    def user_meanwhile(self, mode="r", *args, **kwargs):  # after every check, while the files are written
        if mode == "wb" and self.name == "report.md":
            if made == "OUT as a file":
                out.rmdir()
                out.write_text("mine")
            else:
                (out / "mine.txt").write_text("mine")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", user_meanwhile)
    assert main(["compile", RESIDUAL, "-o", str(out)]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {out}: was filled or made a file while the output was made; "
                                       "it is left as it is and nothing was written (use --force to replace it)\n")
    assert (out.read_text() if out.is_file() else _tree(out)) in ("mine", {"mine.txt": b"mine"})
    assert _leftovers(tmp_path) == []


def _single_file_command(kind: str, tmp_path: Path) -> list[str]:
    """A command that writes the one file tmp_path/target (refused up front if it exists, without --force)."""
    target = str(tmp_path / "target")
    if kind == "convert":
        onnx = need("onnx")
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
        model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17)])
        onnx.save_model(model, tmp_path / "m.onnx")
        return ["convert", str(tmp_path / "m.onnx"), "-o", target]
    return {"run": ["run", RESIDUAL, "-o", target], "fuse --dot": ["fuse", RESIDUAL, "--dot", target]}[kind]


@pytest.mark.parametrize("kind", ["run", "convert", "fuse --dot"])
def test_a_file_that_appears_while_a_command_runs_is_never_overwritten_without_force(kind, tmp_path, capsys,
                                                                                      monkeypatch):
    argv = _single_file_command(kind, tmp_path)
    target = tmp_path / "target"
    real_open = open

    def user_meanwhile(file, *args, **kwargs):  # after the check at the start, before the file is moved in
        if not target.exists():
            target.write_text("mine")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(hlsfuse.fileio, "open", user_meanwhile, raising=False)
    assert main(argv) == 2
    assert capsys.readouterr().err.endswith(f"hlsfuse: error: {target}: appeared while the output was made; it is "
                                            "left as it is and nothing was written (pass --force to overwrite it)\n")
    assert target.read_text() == "mine" and _leftovers(tmp_path) == []
    monkeypatch.undo()
    assert main([*argv, "--force"]) == 0 and target.read_bytes() != b"mine"


@pytest.mark.parametrize("kind", ["run", "convert", "fuse --dot"])
def test_a_full_disk_names_the_single_file_being_written(kind, tmp_path, capsys, monkeypatch):
    argv = _single_file_command(kind, tmp_path)
    target = tmp_path / "target"
    target.write_bytes(b"old")
    real_open = open

    class Full:
        def __init__(self, file):
            self.file = real_open(file, "xb")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, data):
            self.file.write(data[:10])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(hlsfuse.fileio, "open", lambda file, mode: Full(file), raising=False)
    assert main([*argv, "--force"]) == 2
    assert capsys.readouterr().err.endswith(f"hlsfuse: error: {target}: cannot write: No space left on device; "
                                            f"{target} is left as it was\n")
    assert target.read_bytes() == b"old" and _leftovers(tmp_path) == []


@pytest.mark.parametrize("command", ["check", "run", "compile"])
def test_a_constant_too_large_is_refused_before_its_values_are_made(command, tmp_path, capsys):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"name": "big", "inputs": [{"name": "x", "shape": [1, 4], "dtype": "fixed<8,3>"}],
                                "constants": [{"name": "w", "shape": [100000, 100000], "dtype": "fixed<8,3>",
                                               "init": {"kind": "uniform"}}],
                                "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}], "outputs": ["r"]}))
    extra = ["-o", str(tmp_path / "OUT")] if command == "compile" else []
    assert main([command, str(path), *extra]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {path}: constant 'w': shape [100000, 100000] has "
                                       "10000000000 elements, more than the 2147483647 (2^31 - 1) a tensor may have\n")


def _forged_npz(path: Path, shape: tuple[int, ...]) -> Path:
    """An .npz whose array 'x' has a header claiming ``shape`` (float64) and only 64 bytes of data."""
    import io
    import zipfile

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    buffer.write(bytes(64))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", buffer.getvalue())
    return path


@pytest.mark.parametrize("shape, message", [
    ((1, 100000, 100000, 8), "array 'x': shape [1, 100000, 100000, 8] has 80000000000 elements, more than the "
                             "2147483647 (2^31 - 1) a tensor may have"),
    ((1, 16, 16, 800000), "array 'x': its header says shape [1, 16, 16, 800000] of float64 (1638400000 bytes), but "
                          "the archive holds 192 bytes for it"),
])
@pytest.mark.parametrize("command", ["run", "csim", "rtlsim"])
def test_an_inputs_array_too_large_for_its_file_is_refused_from_its_header(command, shape, message, compiled,
                                                                           tmp_path, capsys):
    path = _forged_npz(tmp_path / "in.npz", shape)
    argv = ["run", RESIDUAL] if command == "run" else [command, str(compiled)]
    assert main([*argv, "--inputs", str(path)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {path}: {message}\n"


@pytest.mark.parametrize("what", ["graph", "inputs", "fold", "precision-map", "calibrate"])
def test_a_device_given_as_a_file_is_refused_before_reading(what, tmp_path, capsys):
    device = tmp_path / {"graph": "z.json", "inputs": "z.npz", "fold": "f.json", "precision-map": "p.json",
                         "calibrate": "c.npz"}[what]
    device.symlink_to("/dev/zero")  # a .json name, so the suffix check lets it through
    model = str(tmp_path / "m.onnx")
    if what in ("precision-map", "calibrate"):
        onnx = need("onnx")
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
        onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    argv = {"graph": ["run", str(device)], "inputs": ["run", RESIDUAL, "--inputs", str(device)],
            "fold": ["compile", RESIDUAL, "-o", str(tmp_path / "out"), "--fold", str(device)],
            "precision-map": ["check", model, "--precision-map", str(device)],
            "calibrate": ["check", model, "--calibrate", str(device)]}[what]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {device}: not a regular file (a character device)\n"
