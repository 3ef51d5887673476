"""Seeing the error: the fixed-point import against the float model (onnxruntime) on the same inputs,
from the API (compare_float, calibrate) and the command line (run --compare float, convert --calibrate).
Every number of the table is recomputed here with plain numpy from onnxruntime's outputs."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from doc_blocks import commands  # noqa: E402
from onnx_build import feeds, ort_run  # noqa: E402
from onnx_zoo import cnn, conv1d, mlp  # noqa: E402

from hlsfuse import reference  # noqa: E402
from hlsfuse.accuracy import measure  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import (  # noqa: E402
    calibrate,
    compare_float,
    float_model,
    from_onnx,
    to_graph_layout,
    to_onnx_layout,
)

MODELS = {"mlp": mlp, "cnn": cnn}


def _expected(proto, graph, frames):
    """{output: (max abs, mean abs, relative, argmax agreeing)} by numpy, on graph-layout ``frames``;
    the float side is onnxruntime on the same values in ONNX layout."""
    fixed = [reference.run(graph, f) for f in frames]
    floats = [ort_run(proto, {k: v.astype(np.float32) for k, v in to_onnx_layout(graph, f).items()})
              for f in frames]
    out = {}
    for name in graph.outputs:
        got = np.array([f[name] for f in fixed], dtype=np.float64)
        want = np.array([f[name] for f in floats], dtype=np.float64)
        diff = np.abs(got - want)
        agree = sum(bool(np.all(np.argmax(g, -1) == np.argmax(w, -1))) for g, w in zip(got, want))
        out[name] = (diff.max(), diff.mean(), diff.max() / (want.max() - want.min()), agree)
    return out


def _random_frames(graph, seed, count):
    return [reference.random_inputs(graph, seed + k) for k in range(count)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_numbers_are_numpys(name):
    proto = MODELS[name]()
    graph = from_onnx(proto, precision="fixed<12,4>")
    frames = _random_frames(graph, 0, 6)
    result = compare_float(proto, graph, frames, "6 frames")
    assert result.frames == 6 and result.float_model.startswith("onnxruntime ")
    for output, (max_abs, mean_abs, relative, agree) in _expected(proto, graph, frames).items():
        row = result.output(output)
        assert max_abs > 0  # a fixed-point model that makes no error would not test anything
        assert (row.max_abs, row.mean_abs, row.relative, row.argmax) == pytest.approx(
            (max_abs, mean_abs, relative, agree), rel=1e-12)


def test_narrow_types_disagree_on_argmax_and_the_count_is_numpys():
    proto = mlp()
    graph = from_onnx(proto, precision="fixed<6,2>")
    frames = _random_frames(graph, 0, 20)
    row = compare_float(proto, graph, frames).output("output")
    agree = _expected(proto, graph, frames)["output"][3]
    assert row.argmax == agree and 0 < agree < 20


def test_argmax_agreement_counts_frames():
    want = [{"y": np.array([[0.0, 1.0, 0.5]]), "s": np.array([2.0])},
            {"y": np.array([[0.9, 1.0, 0.0]]), "s": np.array([2.0])}]
    got = [{"y": np.array([[0.0, 0.8, 0.5]]), "s": np.array([2.5])},
           {"y": np.array([[1.2, 1.0, 0.0]]), "s": np.array([2.0])}]
    result = measure(got, want, "test", "2 frames")
    y, s = result.output("y"), result.output("s")
    assert y.argmax == 1  # frame 0 agrees (index 1), frame 1 does not (0 against 1)
    assert (y.max_abs, y.mean_abs, y.relative) == pytest.approx((0.3, 0.5 / 6, 0.3 / 1.0))
    assert s.argmax is None and s.relative is None  # one element per frame; a constant float output
    assert result.table() == (
        "error vs float (test) on 2 frames:\n"
        "  output  max abs  mean abs  relative  argmax\n"
        "  y       0.3      0.0833    0.3       1/2\n"
        "  s       0.5      0.25      -         -"
    )


def test_errors_grow_when_the_types_narrow():
    proto = cnn()
    wide, narrow = (from_onnx(proto, precision=p) for p in ("fixed<16,6>", "fixed<8,3>"))
    frames = _random_frames(wide, 0, 4)
    errors = [compare_float(proto, g, frames).output("output") for g in (wide, narrow)]
    assert errors[1].max_abs > 8 * errors[0].max_abs and errors[1].mean_abs > 8 * errors[0].mean_abs


def test_onnx_layout_is_the_inverse_of_the_graph_layout():
    for proto in (cnn(), conv1d()):
        graph = from_onnx(proto)
        shapes = {i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim) for i in proto.graph.input}
        onnx_inputs = feeds(proto, seed=1)
        graph_inputs = to_graph_layout(graph, onnx_inputs)
        assert {k: v.shape for k, v in graph_inputs.items()} != shapes  # the layouts differ
        back = to_onnx_layout(graph, graph_inputs)
        assert all(np.array_equal(back[k], onnx_inputs[k]) for k in onnx_inputs)


def test_without_onnxruntime_the_float32_import_is_the_float_model(monkeypatch):
    proto = cnn()
    graph = from_onnx(proto, precision="fixed<12,4>")
    frames = _random_frames(graph, 0, 3)
    with_ort = compare_float(proto, graph, frames).output("output")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    assert float_model(proto).name == "hlsfuse float32 import; onnxruntime is not installed"
    without = compare_float(proto, graph, frames).output("output")
    assert without.max_abs == pytest.approx(with_ort.max_abs, abs=1e-5)
    assert without.argmax == with_ort.argmax


def test_a_model_onnxruntime_cannot_load_falls_back_and_says_why():
    x, y = (onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 4]) for n in "xy")
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 5)])  # hlsfuse upgrades it
    proto.ir_version = 8
    side = float_model(proto)
    assert side.name == ("hlsfuse float32 import; onnxruntime cannot load the model: Could not find an "
                         "implementation for Relu(1) node with name ''")
    values = np.array([[1.0, -2.0, 3.3, 0.01]])
    row = compare_float(proto, from_onnx(proto, precision="fixed<8,4>"), [{"x": values}]).output("y")
    # fixed<8,4> truncates the inputs to sixteenths; the float model sees them as float32
    expected = np.abs(np.maximum(np.floor(values * 16) / 16, 0) - np.maximum(values.astype(np.float32), 0))
    assert row.max_abs == pytest.approx(expected.max(), rel=1e-12) and row.argmax == 1


def test_calibration_reports_the_same_table():
    proto = cnn()
    samples = {"input": np.concatenate([feeds(proto, seed=s)["input"] for s in range(4)])}
    result = calibrate(proto, samples, precision="fixed<16,6>")
    frames = [to_graph_layout(result.graph, {"input": x[None]}) for x in samples["input"]]
    max_abs, mean_abs, relative, agree = _expected(proto, result.graph, frames)["output"]
    row = result.accuracy.output("output")
    assert (row.max_abs, row.mean_abs, row.relative, row.argmax) == pytest.approx(
        (max_abs, mean_abs, relative, agree), rel=1e-12)
    assert result.errors == {"output": row.max_abs} and result.samples == 4
    assert result.report() == "calibrated 15 tensors; " + result.accuracy.table()


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------


@pytest.fixture
def model_file(tmp_path):
    def save(name):
        path = tmp_path / f"{name}.onnx"
        onnx.save(MODELS[name](), path)
        return path
    return save


def _rows(text):
    """{output: [max abs, mean abs, relative, argmax]} of the table in ``text``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "error vs float (" in line)
    assert lines[start + 1].split() == ["output", "max", "abs", "mean", "abs", "relative", "argmax"]
    return {line.split()[0]: line.split()[1:] for line in lines[start + 2:] if line.startswith("  ")}


def _cells(max_abs, mean_abs, relative, agree, frames):
    return [f"{max_abs:.3g}", f"{mean_abs:.3g}", f"{relative:.3g}", f"{agree}/{frames}"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_run_prints_the_table(name, model_file, capsys):
    path = model_file(name)
    assert main(["run", str(path), "--compare", "float", "--frames", "5", "--seed", "3",
                 "--precision", "fixed<10,4>"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"ran graph '{name}' on random inputs (seed 3)"
    assert re.fullmatch(r"error vs float \(onnxruntime [\d.]+\) on 5 frames of random inputs \(seeds 3\.\.7\):",
                        lines[2])
    graph = from_onnx(path, precision="fixed<10,4>")
    expected = _expected(MODELS[name](), graph, _random_frames(graph, 3, 5))
    assert _rows(out) == {k: _cells(*v, 5) for k, v in expected.items()}


def test_run_compares_on_the_given_inputs(model_file, tmp_path, capsys):
    path = model_file("cnn")
    inputs = feeds(cnn(), seed=7)
    npz = tmp_path / "in.npz"
    np.savez(npz, **inputs)
    assert main(["run", str(path), "--inputs", str(npz), "--compare", "float"]) == 0
    out = capsys.readouterr().out
    assert f"on the inputs in {npz}:\n" in out
    graph = from_onnx(path)
    # the float model sees the values as given; the fixed-point graph quantizes them to its input type
    max_abs, mean_abs, relative, agree = _expected(cnn(), graph, [to_graph_layout(graph, inputs)])["output"]
    float_side = ort_run(cnn(), inputs)["output"]
    assert max_abs == np.max(np.abs(reference.run(graph, to_graph_layout(graph, inputs))["output"] - float_side))
    assert _rows(out) == {"output": _cells(max_abs, mean_abs, relative, agree, 1)}


def test_run_table_shows_narrow_types_err_more(model_file, capsys):
    path = model_file("mlp")
    maxima = []
    for precision in ("fixed<16,6>", "fixed<8,3>"):
        assert main(["run", str(path), "--compare", "float", "--precision", precision]) == 0
        maxima.append(float(_rows(capsys.readouterr().out)["output"][0]))
    assert maxima[1] > 8 * maxima[0] > 0


def test_convert_with_calibration_prints_the_table(model_file, tmp_path, capsys):
    path = model_file("cnn")
    samples = tmp_path / "samples.npz"
    stacked = np.concatenate([feeds(cnn(), seed=s)["input"] for s in range(3)])
    np.savez(samples, input=stacked)
    out = tmp_path / "cnn.json"
    assert main(["convert", str(path), "-o", str(out), "--calibrate", str(samples)]) == 0
    err = capsys.readouterr().err
    where = re.escape(str(samples))
    header = rf"calibrated 15 tensors; error vs float \(onnxruntime [\d.]+\) on 3 samples in {where}:\n"
    assert re.match(header, err)
    graph = calibrate(path, samples).graph
    frames = [to_graph_layout(graph, {"input": x[None]}) for x in stacked]
    assert _rows(err) == {k: _cells(*v, 3) for k, v in _expected(cnn(), graph, frames).items()}


@pytest.mark.parametrize("argv, message", [
    (["--compare", "float"], "--compare float needs an ONNX model (GRAPH.onnx) to take the float model from, "
                             "not {json}"),
    (["--frames", "3"], "--frames applies to --compare float (run alone runs one frame)"),
])
def test_compare_errors_are_one_line(argv, message, model_file, tmp_path, capsys):
    path = model_file("mlp")
    json_graph = tmp_path / "mlp.json"
    assert main(["convert", str(path), "-o", str(json_graph)]) == 0
    capsys.readouterr()
    assert main(["run", str(json_graph), *argv]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {message.format(json=json_graph)}\n"


def test_frames_with_given_inputs_is_a_one_line_error(model_file, tmp_path, capsys):
    path = model_file("mlp")
    npz = tmp_path / "in.npz"
    np.savez(npz, **feeds(mlp()))
    assert main(["run", str(path), "--inputs", str(npz), "--compare", "float", "--frames", "4"]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: --frames counts seeded random frames; --inputs {npz} gives "
                                       "the one frame to compare on\n")


def test_the_docs_example_is_real_output(tmp_path, monkeypatch, capsys):
    """docs/onnx.md's 'Seeing the error' shows what these commands print for tests/onnx_zoo.py's cnn."""
    import onnxruntime

    monkeypatch.chdir(tmp_path)
    onnx.save(cnn(), "cnn.onnx")
    np.savez("samples.npz", input=np.concatenate([feeds(cnn(), seed=s)["input"] for s in range(16)]))
    examples = commands("onnx.md", "Seeing the error")
    assert len(examples) == 3
    for argv, shown in examples:
        assert main(argv) == 0
        captured = capsys.readouterr()
        printed = (captured.err + captured.out).replace(onnxruntime.__version__, "1.32.0").splitlines()
        if "..." in shown:  # the lines after it end what the command prints
            shown = shown[shown.index("...") + 1:]
            printed = printed[len(printed) - len(shown):]
        assert printed == shown, argv


def test_too_many_frames_are_refused_before_any_is_made(model_file, capsys):
    assert main(["run", str(model_file("mlp")), "--compare", "float", "--frames", "100000000"]) == 2
    assert capsys.readouterr().err == (
        "hlsfuse: error: run --compare float: 100000000 frames of 25 input and output elements each exceed the "
        f"{reference.MAX_STREAMED} elements one run streams; run at most {reference.MAX_STREAMED // 25}\n")


def test_the_overall_error_weighs_every_element_of_every_output():
    fixed = [{"a": np.array([1.0, 2.0, 3.0]), "b": np.array([0.0])}, {"a": np.array([1.0, 2.0, 3.0]),
                                                                        "b": np.array([4.0])}]
    floats = [{"a": np.array([1.0, 2.0, 2.0]), "b": np.array([0.0])}, {"a": np.array([1.0, 2.0, 3.0]),
                                                                         "b": np.array([1.0])}]
    found = measure(fixed, floats, "f", "frames")
    assert (found.max_abs, found.mean_abs) == (3.0, 0.5)  # errors 1 and 3 over 8 elements
    assert [row.elements for row in found.outputs] == [6, 2]
