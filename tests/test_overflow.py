"""Overflow warnings and events (hlsfuse/overflow.py): which declared types can overflow by the range
analysis (convert and compile warn, or refuse with --overflow error), and which values did saturate
or wrap on a run (hlsfuse run reports them per node)."""

from __future__ import annotations

import numpy as np
import pytest
from doc_blocks import commands
from test_ranges import OP_CASES, _corners
from tiers import need

from hlsfuse import GraphBuilder, load_graph, reference, save_graph
from hlsfuse.cli import main
from hlsfuse.overflow import events, report, risks, warning
from hlsfuse.ranges import ranges
from hlsfuse.types import FixedType, from_float


def _scaled(out_type="fixed<8,4,TRN,SAT>"):
    """y = 3x with x fixed<8,4> (values in [-8, 8)): y's type holds [-8, 8) too, so |x| > 8/3 overflows;
    z = y + 1 in fixed<12,6> cannot overflow."""
    b = GraphBuilder("g", dtype="fixed<8,4>")
    x = b.input("x", [1, 6])
    y = b.op("mul", x, b.constant("three", np.array(3.0), dtype="fixed<8,4>"), name="y", dtype=out_type)
    b.output(b.op("add", y, b.constant("one", np.array(1.0), dtype="fixed<8,4>"), name="z", dtype="fixed<12,6>"))
    return b.build()


def _run(graph, values):
    raw = {"x": from_float(np.asarray(values, dtype=np.float64).reshape(1, -1), graph.types["x"].dtype)}
    return reference.run_raw(graph, raw)


def test_risks_name_the_nodes_whose_type_can_overflow_worst_first():
    graph = _scaled()
    assert [r.name for r in risks(graph)] == ["y"]
    assert risks(graph, {"x": (-2.0, 2.0)}) == []  # 3 * 2 = 6 fits [-8, 8)
    b = GraphBuilder("g", dtype="fixed<8,4>")
    x = b.input("x", [4])
    small = b.op("add", x, x, name="small")  # [-16, 15.875]: one bit short
    b.output(b.op("mul", x, x, name="big"), small)  # up to 64: three bits short
    assert [r.name for r in risks(b.build())] == ["big", "small"]


def test_the_warning_is_one_line_naming_the_worst_nodes():
    b = GraphBuilder("g", dtype="fixed<8,4>")
    x = b.input("x", [4])
    b.output(*[b.op("mul", x, b.constant(None, np.array(float(k)), dtype="fixed<8,4>"), name=f"m{k}")
               for k in range(2, 7)])
    text = warning(risks(b.build()))
    assert "\n" not in text
    assert text.startswith("5 nodes can overflow their types (range analysis, inputs anywhere in their types' "
                           "ranges): 'm6' (mul, fixed<8,4>) can reach [-48, 47.62], 'm5' (mul, fixed<8,4>) can reach "
                           "[-40, 39.69], 'm4' (mul, fixed<8,4>) can reach [-32, 31.75] and 2 more; ")
    assert "(range analysis, the given input ranges)" in warning(risks(_scaled(), {"x": (-4, 4)}), True)
    assert warning(risks(_scaled())).startswith("1 node can overflow its type")


@pytest.mark.parametrize("out_type, stored, what", [
    ("fixed<8,4,TRN,SAT>", [7.9375, -8.0, 7.5, 7.9375], "saturated"),
    ("fixed<8,4>", [-7.0, 7.0, 7.5, -4.0], "wrapped"),  # 9 - 16, -9 + 16, 12 - 16
])
def test_run_events_count_the_values_that_left_the_type(out_type, stored, what):
    graph = _scaled(out_type)
    values = _run(graph, [3.0, -3.0, 2.5, 4.0, 1.0, 0.0])  # 3x = 9, -9, 7.5, 12, 3, 0
    got = values["y"][0, :4] * 2.0**-4
    assert list(got) == stored
    (event,) = events(graph, values)
    assert (event.name, event.count, event.size, event.lo, event.hi, event.what) == ("y", 3, 6, -9.0, 12.0, what)
    assert report([event]) == [f"'y' (mul, {out_type}): 3 of 6 values {what} "
                               "(its exact values reached [-9, 12])"]
    assert events(graph, _run(graph, [2.0, -2.0, 0.5, 1.0, 1.0, 0.0])) == []


def test_rounding_up_past_the_largest_value_is_an_event():
    b = GraphBuilder("g", dtype="fixed<8,4>")
    x = b.input("x", [2])
    # x * 0.5 with x = 7.9375 is 3.96875, rounded (RND) to 4.0 in fixed<4,3>: one past its largest value 3.5
    b.output(b.op("mul", x, b.constant("half", np.array(0.5)), name="h", dtype="fixed<4,3,RND,SAT>"))
    graph = b.build()
    values = reference.run_raw(graph, {"x": from_float(np.array([7.9375, 3.0]), graph.types["x"].dtype)})
    (event,) = events(graph, values)
    assert (event.count, event.hi) == (1, 4.0)


@pytest.mark.parametrize("op", sorted(OP_CASES))
def test_events_of_every_op_happen_only_where_the_analysis_allows_them(op):
    # narrow types so that most ops can overflow; every op's reference computes into the wide type
    b = GraphBuilder("one", dtype="fixed<5,2,RND,SAT>")
    x = b.input("x", [1, 3, 2, 2], dtype="fixed<8,3>")
    u = b.input("u", [1, 3, 2, 2], dtype="ufixed<6,2,RND,SAT>")
    b.output(OP_CASES[op](b, x, u))
    graph = b.build()
    found = ranges(graph)
    at_risk = {r.name for r in risks(graph)}
    seen = set()
    for raw in _corners(graph, np.random.default_rng(3), found):
        values = reference.run_raw(graph, raw)
        everywhere = events(graph, values, [n.name for n in graph.nodes])  # every node, not only those at risk
        assert {e.name for e in everywhere} <= at_risk
        assert events(graph, values) == everywhere
        seen |= {e.name for e in everywhere}
    if op in ("add", "mul", "conv2d", "dense", "sum", "scale"):
        assert seen, "corner inputs of a 5-bit result must overflow"


# --------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------


@pytest.fixture
def mlp_onnx(tmp_path):
    onnx = need("onnx")
    from onnx_zoo import mlp

    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    return path


@pytest.fixture
def scaled_file(tmp_path):
    return save_graph(_scaled(), tmp_path / "g.json")


def test_convert_and_compile_warn_or_refuse(mlp_onnx, tmp_path, capsys):
    out = tmp_path / "mlp.json"
    assert main(["convert", str(mlp_onnx), "-o", str(out)]) == 0
    note, warned = capsys.readouterr().err.splitlines()
    assert note == ("hlsfuse: precision auto:16,6 (the default): 16-bit types with the integer bits range analysis "
                    "finds for inputs anywhere in their types' ranges, at most 6; --precision chooses others")
    assert warned.startswith("hlsfuse: warning: 6 nodes can overflow their types")
    assert main(["convert", str(mlp_onnx), "-o", str(out), "--force", "--input-range", "input=-0.01:0.01"]) == 0
    assert capsys.readouterr().err.splitlines() == [note.replace("inputs anywhere in their types' ranges",
                                                                 "the given input ranges")]  # nothing can overflow
    refused = tmp_path / "refused.json"
    assert main(["convert", str(mlp_onnx), "-o", str(refused), "--precision", "fixed<16,6>", "--overflow",
                 "error"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hlsfuse: error: 6 nodes can overflow") and err.rstrip().endswith("(--overflow error)")
    assert err.count("\n") == 1 and not refused.exists()
    assert main(["compile", str(out), "-o", str(tmp_path / "design"), "--overflow", "error"]) == 2
    assert "can overflow" in capsys.readouterr().err and not (tmp_path / "design").exists()
    assert main(["compile", str(out), "-o", str(tmp_path / "design"), "--overflow", "error",
                 "--input-range", "input=-0.01:0.01"]) == 0
    assert capsys.readouterr().err == ""


def test_run_reports_each_node_that_overflowed(scaled_file, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([[3.0, -3.0, 2.5, 4.0, 1.0, 0.0]]))
    assert main(["run", str(scaled_file), "--inputs", str(inputs)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"hlsfuse: warning: 1 node overflowed on the inputs in {inputs}:",
                   "  'y' (mul, fixed<8,4,TRN,SAT>): 3 of 6 values saturated (its exact values reached [-9, 12])"]
    out = tmp_path / "out.npz"
    assert main(["run", str(scaled_file), "--inputs", str(inputs), "-o", str(out), "--overflow", "error"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hlsfuse: error: 1 node overflowed on the inputs in ") and "3 of 6 values saturated" in err
    assert not out.exists()
    np.savez(inputs, x=np.array([[1.0, -1.0, 2.5, 0.0, 1.0, 0.0]]))
    assert main(["run", str(scaled_file), "--inputs", str(inputs), "-o", str(out), "--overflow", "error"]) == 0
    assert capsys.readouterr().err == "" and out.exists()


def test_input_ranges_apply_to_the_overflow_check_only_where_it_runs(scaled_file, tmp_path, capsys):
    assert main(["compile", str(scaled_file), "-o", str(tmp_path / "d"), "--input-range", "x=-2:2"]) == 0
    assert capsys.readouterr().err == ""
    assert load_graph(tmp_path / "d" / "graph.json").types["y"].dtype == FixedType(8, 4, True, "TRN", "SAT")
    assert main(["fuse", str(scaled_file), "--input-range", "x=0:1"]) == 2
    assert "--input-range applies to ONNX models imported with --precision auto and to the range analysis" in \
        capsys.readouterr().err


def test_the_docs_example_is_real_output(tmp_path, monkeypatch, capsys):
    """docs/onnx.md's 'Overflow' shows what these commands print: tests/onnx_zoo.py's deep_cnn, and
    the graph of ``_scaled`` with the inputs of test_run_reports_each_node_that_overflowed."""
    onnx = need("onnx")
    from onnx_zoo import deep_cnn

    monkeypatch.chdir(tmp_path)
    onnx.save(deep_cnn(), "deep_cnn.onnx")
    save_graph(_scaled(), "graph.json")
    np.savez("in.npz", x=np.array([[3.0, -3.0, 2.5, 4.0, 1.0, 0.0]]))
    examples = commands("onnx.md", "Overflow")
    assert len(examples) == 2
    for argv, shown in examples:
        assert main(argv) == 0
        captured = capsys.readouterr()
        printed = captured.out.splitlines() + captured.err.splitlines()
        assert sorted(printed) == sorted(shown), argv  # stdout and stderr interleave on a terminal


def test_a_saturating_cast_clips_on_purpose_and_is_not_reported():
    b = GraphBuilder("g", dtype="fixed<8,4>")
    x = b.input("x", [4])
    clipped = b.op("cast", x, name="clipped", dtype="fixed<4,2,RND,SAT>")  # a quantizer: saturates by design
    b.output(clipped, b.op("cast", x, name="wrapped", dtype="fixed<4,2>"))  # wraps: reported
    graph = b.build()
    assert not ranges(graph)["clipped"].fits  # check --ranges still marks it
    assert [r.name for r in risks(graph)] == ["wrapped"]
    values = reference.run_raw(graph, {"x": from_float(np.array([7.0, 1.0, -7.0, 0.0]), graph.types["x"].dtype)})
    assert [e.name for e in events(graph, values)] == ["wrapped"]
