"""The command line with ONNX models: convert, and check/run/fuse taking a .onnx file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from onnx_build import feeds, model, node, ort_run  # noqa: E402
from onnx_zoo import cnn  # noqa: E402

from hlsfuse import from_onnx, load_graph  # noqa: E402
from hlsfuse.cli import main  # noqa: E402


@pytest.fixture
def cnn_file(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn(), path)
    return path


def test_convert_writes_the_imported_graph(cnn_file, tmp_path, capsys):
    out = tmp_path / "cnn.json"
    assert main(["convert", str(cnn_file), "-o", str(out), "--precision", "fixed<18,8>"]) == 0
    assert capsys.readouterr().out == f"converted {cnn_file} to graph 'cnn' (14 nodes, 8 constants); wrote {out}\n"
    assert load_graph(out) == from_onnx(cnn_file, precision="fixed<18,8>")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_convert_refuses_to_overwrite(cnn_file, tmp_path, capsys):
    out = tmp_path / "cnn.json"
    out.write_text("keep me")
    assert main(["convert", str(cnn_file), "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {out} already exists; pass --force to overwrite it\n"
    assert out.read_text() == "keep me"
    assert main(["convert", str(cnn_file), "-o", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["name"] == "cnn"


def test_convert_writes_nothing_for_an_unsupported_model(tmp_path, capsys):
    path = tmp_path / "bad.onnx"
    onnx.save(model([node("Relu", ["x"], ["r"]), node("Round", ["r"], ["e"]), node("Hardmax", ["e"], ["y"])],
                    {"x": (1, 4)}), path)
    out = tmp_path / "bad.json"
    assert main(["convert", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {path}: cannot import the model (2 problems): node 'e' (Round): "
                          "unsupported op; node 'y' (Hardmax): unsupported op. Supported ops: Abs, Add, ")
    assert err.count("\n") == 1
    assert not out.exists()


def test_convert_reads_onnx_only(tmp_path, capsys):
    graph = tmp_path / "g.json"
    graph.write_text("{}")
    assert main(["convert", str(graph), "-o", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {graph}: convert reads ONNX models (a file ending in .onnx)\n"


def test_check_and_fuse_take_onnx_models(cnn_file, capsys):
    assert main(["check", str(cnn_file), "--precision", "float32"]) == 0
    out = capsys.readouterr().out
    assert "graph 'cnn' is valid: 14 nodes" in out and "input  float32[1,8,8,3]" in out
    assert main(["fuse", str(cnn_file), "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    # conv, its folded batch norm (a bias) and the relu stream as one stage
    assert groups[0]["nodes"] == ["b1.conv", "b1", "r1"]


def test_run_takes_onnx_layout_inputs(cnn_file, tmp_path, capsys):
    inputs = feeds(cnn(), seed=3)
    npz, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(npz, **inputs)
    assert main(["run", str(cnn_file), "--precision", "float32", "--inputs", str(npz), "-o", str(out)]) == 0
    expected = ort_run(cnn(), inputs)["output"]
    with np.load(out) as got:
        assert np.max(np.abs(got["output"] - expected)) <= 1e-5


def test_precision_map_and_calibration_options(cnn_file, tmp_path, capsys):
    spec = tmp_path / "map.json"
    spec.write_text(json.dumps({"default": "fixed<16,6>", "tensors": {"r1": "fixed<20,8>"}}))
    samples = tmp_path / "samples.npz"
    np.savez(samples, input=np.concatenate([feeds(cnn(), seed=s)["input"] for s in range(4)]))
    assert main(["check", str(cnn_file), "--precision-map", str(spec), "--calibrate", str(samples)]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("calibrated 15 tensors; error vs float (onnxruntime ")
    assert captured.err.splitlines()[0].endswith(f") on 4 samples in {samples}:")
    assert "graph 'cnn' is valid" in captured.out


def test_onnx_options_are_refused_for_json_graphs(cnn_file, tmp_path, capsys):
    out = tmp_path / "cnn.json"
    assert main(["convert", str(cnn_file), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--calibrate", "x.npz"]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: --calibrate applies to ONNX models (.onnx), not to {out}\n"


def test_truncated_model_is_a_one_line_error(cnn_file, capsys):
    data = cnn_file.read_bytes()
    cnn_file.write_bytes(data[: len(data) - 40])
    assert main(["check", str(cnn_file)]) == 2
    assert capsys.readouterr().err == (
        f"hlsfuse: error: {cnn_file}: not a valid ONNX file (truncated, or not an ONNX protobuf)\n"
    )


@pytest.mark.parametrize("arrays, message", [
    ({"other": np.zeros([1, 3, 8, 8])}, "'other' is not a model input (inputs: input)"),
    ({"input": np.zeros([3, 8, 8, 2])},
     "'input' has shape [3, 8, 8, 2]; expected [1, 3, 8, 8] or a leading sample axis"),
    ({"input": np.zeros([2, 1, 3, 8, 8], dtype=np.complex64)}, "'input' must hold real numbers, not complex64"),
    ({"input": np.full([1, 3, 8, 8], np.nan)}, "'input' holds NaN or infinity; samples must be finite"),
])
def test_calibration_sample_errors_name_the_file(cnn_file, tmp_path, capsys, arrays, message):
    samples = tmp_path / "samples.npz"
    np.savez(samples, **arrays)
    out = tmp_path / "g.json"
    assert main(["convert", str(cnn_file), "-o", str(out), "--calibrate", str(samples)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {samples}: {message}") and err.count("\n") == 1
    assert not out.exists()


def test_convert_saves_a_large_model_with_a_side_file(tmp_path, capsys):
    path = tmp_path / "wide.onnx"
    weights = np.random.default_rng(0).normal(0, 0.1, (600, 500))  # 300,000 values: above the threshold
    onnx.save(model([node("MatMul", ["x", "w"], ["y"])], {"x": (1, 600)}, {"w": weights}), path)
    out = tmp_path / "wide.json"
    assert main(["convert", str(path), "-o", str(out), "--precision", "fixed<8,1>"]) == 0
    assert capsys.readouterr().out.endswith(f"; wrote {out} and {tmp_path / 'wide.npz'}\n")
    assert out.stat().st_size < 2000 and (tmp_path / "wide.npz").stat().st_size < 1.2 * 4 * 300_000 + 1_000_000
    assert load_graph(out) == from_onnx(path, precision="fixed<8,1>")
    inline = tmp_path / "inline.json"
    assert main(["convert", str(path), "-o", str(inline), "--precision", "fixed<8,1>", "--inline-weights"]) == 0
    assert not (tmp_path / "inline.npz").exists() and load_graph(inline) == load_graph(out)
    (tmp_path / "again.npz").write_text("keep me")  # found only once the model is known to be large
    assert main(["convert", str(path), "-o", str(tmp_path / "again.json"), "--precision", "fixed<8,1>"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"hlsfuse: error: {tmp_path / 'again.npz'} already exists; "
                                                        "pass --force to overwrite it")
    assert (tmp_path / "again.npz").read_text() == "keep me" and not (tmp_path / "again.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_convert_weights_file_flag_and_its_existing_side_file(cnn_file, tmp_path, capsys):
    out, side = tmp_path / "cnn.json", tmp_path / "cnn.npz"
    side.write_text("keep me")
    assert main(["convert", str(cnn_file), "-o", str(out), "--weights-file"]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {side} already exists; pass --force to overwrite it\n"
    assert side.read_text() == "keep me" and not out.exists()
    assert main(["convert", str(cnn_file), "-o", str(out), "--weights-file", "--force"]) == 0
    assert capsys.readouterr().out.endswith(f"; wrote {out} and {side}\n")
    assert '"kind": "file"' in out.read_text() and load_graph(out) == from_onnx(cnn_file)
    assert main(["convert", str(cnn_file), "-o", str(tmp_path / "small.json")]) == 0  # a small model: inline
    assert not (tmp_path / "small.npz").exists()
