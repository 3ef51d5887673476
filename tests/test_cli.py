"""The command line: `check` and `run` through main(argv) and through the installed command."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_process import PYTHON_M, run_cli
from tiers import in_ci

from hlsfuse import GraphBuilder, load_graph, reference, save_graph
from hlsfuse.cli import COMMANDS, main


def small_graph():
    b = GraphBuilder("small", dtype="fixed<12,4,RND,SAT>")
    x = b.input("x", [1, 4, 4, 2])
    w = b.constant("w", np.full((3, 3, 2, 3), 0.25), dtype="fixed<8,1>")
    bias = b.constant("b", [0.5, -0.5, 1.0])
    h = b.relu(b.bias_add(b.conv2d(x, w, padding=[1, 1, 1, 1], name="conv"), bias, name="bias"), name="relu")
    y = b.max(h, axes=[1, 2], name="y")
    b.output(y, h)
    return b.build()


@pytest.fixture
def graph_file(tmp_path):
    return save_graph(small_graph(), tmp_path / "small.json")


def broken_file(tmp_path, how):
    """A saved small graph with one defect: a cycle, an unknown op or a shape mismatch."""
    path = save_graph(small_graph(), tmp_path / f"{how}.json")
    data = json.loads(path.read_text())
    nodes = {n["name"]: n for n in data["nodes"]}
    if how == "cycle":
        nodes["conv"]["inputs"] = ["relu", "w"]
    elif how == "unknown_op":
        nodes["relu"]["op"] = "rectify"
    else:
        data["constants"][1]["shape"], data["constants"][1]["data"] = [2], [0.5, -0.5]
    path.write_text(json.dumps(data))
    return path


BROKEN = {
    "cycle": "node 'conv' (conv2d): its inputs form a cycle: 'conv' reads 'relu' reads 'bias' reads 'conv'",
    "unknown_op": "node 'relu': unknown op 'rectify' (see docs/ops.md for the list)",
    "shape": "node 'bias' (bias_add): input 'b' must have shape [3] (the last axis of 'x'), not [2]",
}


def test_check_prints_the_summary(graph_file, capsys):
    assert main(["check", str(graph_file)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "graph 'small' is valid: 4 nodes",
        "ops by pattern kind:",
        "  ELEMWISE (0)                1  relu",
        "  BROADCAST (1)               1  bias_add",
        "  COMM_REDUCE (3)             1  max",
        "  OUT_ELEMWISE_FUSABLE (4)    1  conv2d",
        "tensors: 7 (1 input, 2 constants, 4 node outputs)",
        "parameters: 57 (468 weight bits, 0.1 KiB)",
        "inputs:",
        "  x  fixed<12,4,RND,SAT>[1,4,4,2]",
        "outputs:",
        "  y  fixed<12,4,RND,SAT>[1,3]",
        "  relu  fixed<12,4,RND,SAT>[1,4,4,3]",
    ]


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_check_rejects_a_broken_graph_in_one_line(tmp_path, capsys, how):
    path = broken_file(tmp_path, how)
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"hlsfuse: error: {path}: {BROKEN[how]}\n"


def test_debug_adds_the_traceback(tmp_path, capsys):
    path = broken_file(tmp_path, "cycle")
    assert main(["--debug", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith(f"hlsfuse: error: {path}: {BROKEN['cycle']}\n")
    assert main(["check", str(path), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_check_rejects_unknown_formats_and_missing_files(tmp_path, capsys):
    assert main(["check", str(tmp_path / "g.txt")]) == 2
    assert capsys.readouterr().err == (
        f"hlsfuse: error: {tmp_path / 'g.txt'}: unknown graph format '.txt' (expected a file ending in .json, .onnx)\n"
    )
    assert main(["check", str(tmp_path / "g.json")]) == 2
    assert capsys.readouterr().err == (
        f"hlsfuse: error: {tmp_path / 'g.json'}: cannot read the file: No such file or directory\n"
    )


def test_run_writes_the_reference_outputs(graph_file, tmp_path, capsys):
    out = tmp_path / "out.npz"
    assert main(["run", str(graph_file), "--seed", "3", "-o", str(out)]) == 0
    graph = load_graph(graph_file)
    expected = reference.run(graph, reference.random_inputs(graph, seed=3))
    with np.load(out) as archive:
        assert sorted(archive.files) == ["relu", "y"]
        for name in graph.outputs:
            assert archive[name].dtype == np.float64
            assert np.array_equal(archive[name], expected[name])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ran graph 'small' on random inputs (seed 3)"
    assert lines[1].startswith("  y  fixed<12,4,RND,SAT>[1,3]  min ")
    assert lines[-1] == f"wrote {out}"


def test_run_reads_inputs_from_npz(graph_file, tmp_path, capsys):
    values = np.linspace(-3, 3, 32).reshape(1, 4, 4, 2)
    np.savez(tmp_path / "in.npz", x=values)
    out = tmp_path / "out.npz"
    assert main(["run", str(graph_file), "--inputs", str(tmp_path / "in.npz"), "-o", str(out)]) == 0
    expected = reference.run(load_graph(graph_file), {"x": values})
    with np.load(out) as archive:
        assert np.array_equal(archive["relu"], expected["relu"])
    assert capsys.readouterr().out.startswith(f"ran graph 'small' on the inputs in {tmp_path / 'in.npz'}\n")


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"z": np.zeros((1, 4, 4, 2))}, "missing value for graph input 'x'"),
        ({"x": np.zeros((1, 4, 4, 2)), "q": np.zeros(1)}, "'q' is not an input of graph 'small' (inputs: x)"),
        ({"x": np.zeros((1, 4, 4))}, "input 'x': value has shape [1, 4, 4], expected [1, 4, 4, 2]"),
    ],
)
def test_run_names_the_inputs_file_in_errors(graph_file, tmp_path, capsys, arrays, message):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **arrays)
    assert main(["run", str(graph_file), "--inputs", str(inputs)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {inputs}: {message}\n"


def test_run_rejects_files_that_are_not_npz(graph_file, tmp_path, capsys):
    single = tmp_path / "x.npy"
    np.save(single, np.zeros((1, 4, 4, 2)))
    assert main(["run", str(graph_file), "--inputs", str(single)]) == 2
    assert capsys.readouterr().err == (
        f"hlsfuse: error: {single}: must be an .npz archive of named arrays (numpy.savez), not a single array\n"
    )
    text = tmp_path / "in.npz"
    text.write_text("x = 1\n")
    assert main(["run", str(graph_file), "--inputs", str(text)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {text}: not a numpy .npz archive (")
    assert err.count("\n") == 1


def test_run_refuses_to_overwrite_without_force(graph_file, tmp_path, capsys):
    out = tmp_path / "out.npz"
    out.write_bytes(b"precious")
    assert main(["run", str(graph_file), "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {out} already exists; pass --force to overwrite it\n"
    assert out.read_bytes() == b"precious"
    assert main(["run", str(graph_file), "-o", str(out), "--force"]) == 0
    with np.load(out) as archive:
        assert sorted(archive.files) == ["relu", "y"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz", "small.json"]


def test_run_output_folder_must_exist(graph_file, tmp_path, capsys):
    out = tmp_path / "nowhere" / "out.npz"
    assert main(["run", str(graph_file), "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {out}: folder '{out.parent}' does not exist\n"


def test_run_refuses_custom_ops(tmp_path, capsys):
    b = GraphBuilder("c", dtype="int8")
    x = b.input("x", [4])
    b.output(b.custom(x, pattern="OPAQUE", shape=[4], dtype="int8", name="c"))
    path = save_graph(b.build(), tmp_path / "c.json")
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err.startswith("hlsfuse: error: node 'c' (custom): cannot be run")


def test_inputs_and_seed_are_exclusive(graph_file, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", str(graph_file), "--inputs", "in.npz", "--seed", "1"])
    assert info.value.code == 2
    assert "argument --seed: not allowed with argument --inputs" in capsys.readouterr().err


# ------------------------------------------------------- as a separate process


def installed_command() -> list[str]:
    script = Path(sys.executable).parent / "hlsfuse"
    if not script.exists():
        if in_ci():
            pytest.fail(f"the hlsfuse command is not installed beside {sys.executable}")
        pytest.skip("hlsfuse is not installed in this interpreter (make setup installs it)")
    return [str(script)]


@pytest.fixture(params=["console_script", "python_m"])
def command(request):
    if request.param == "console_script":
        return installed_command()
    return PYTHON_M  # works from the source tree too


def test_command_checks_and_runs(command, graph_file, tmp_path):
    done = run_cli("check", str(graph_file), command=command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("graph 'small' is valid: 4 nodes\n")
    done = run_cli("run", str(graph_file), "-o", "out.npz", command=command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.npz").is_file()


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_command_exits_2_with_one_line(command, tmp_path, how):
    path = broken_file(tmp_path, how)
    done = run_cli("check", str(path), command=command, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"hlsfuse: error: {path}: {BROKEN[how]}\n"


def test_help_lists_every_command_and_a_misspelled_one_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert [name for name in COMMANDS if f"\n    {name} " in out] == list(COMMANDS)
    with pytest.raises(SystemExit) as done:
        main(["-h", "fuse"])  # an option before the command: the whole parser answers
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert [name for name in COMMANDS if f"\n    {name} " in out] == list(COMMANDS)
    with pytest.raises(SystemExit) as done:
        main(["fuze", "g.json"])
    assert done.value.code == 2
    choices = ", ".join(repr(name) for name in COMMANDS)
    assert capsys.readouterr().err.endswith(f"invalid choice: 'fuze' (choose from {choices})\n")


def test_a_command_given_by_name_imports_only_what_it_needs(graph_file):
    # `hlsfuse fuse` reads, fuses and prints: none of the code generators, simulators or the explorer
    script = ("import sys; from hlsfuse.cli import main; code = main(['--debug', 'fuse', sys.argv[1], '--json']); "
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jinja2' or m.startswith('hlsfuse.')))")
    done = run_cli(graph_file, command=(sys.executable, "-c", script))
    assert done.returncode == 0, done.stderr
    modules = eval(done.stdout.splitlines()[-1])
    assert "hlsfuse.cli.fuse" in modules and "hlsfuse.fusion" in modules
    unneeded = ("jinja2", "hlsfuse.cli.compile", "hlsfuse.compile", "hlsfuse.backends", "hlsfuse.lower", "hlsfuse.sim",
                "hlsfuse.explore")
    assert [m for m in modules if m.startswith(unneeded)] == []
