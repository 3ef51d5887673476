"""An ONNX model end to end through the command line: ``hlsfuse compile model.onnx`` in fixed point, then
``hlsfuse csim`` on the project's own data and on inputs given in the ONNX model's layout (NCHW)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from onnx_build import feeds  # noqa: E402
from onnx_zoo import cnn  # noqa: E402

from hlsfuse.cli import main  # noqa: E402

pytestmark = pytest.mark.gxx

PRECISION = "fixed<14,5,RND,SAT>"  # not the importer's default, so the option must reach the design
PASS = "PASS: 20 output elements in 2 frame(s) match the reference\n"  # csim runs two frames by default


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(folder, model file, compile's exit code and stdout) of the CNN compiled once for all tests."""
    folder = tmp_path_factory.mktemp("cnn_e2e")
    model = folder / "cnn.onnx"
    onnx.save(cnn(), model)
    out = folder / "out"
    stdout = io.StringIO()  # capsys is function-scoped; the module fixture captures by hand
    with contextlib.redirect_stdout(stdout):
        code = main(["compile", str(model), "--precision", PRECISION, "-o", str(out)])
    return folder, model, out, code, stdout.getvalue()


def test_compile_prints_the_design_of_the_onnx_model(compiled):
    _, _, out, code, text = compiled
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("design 'cnn': 7 stages, 8 channels, 8 ROMs; ")
    # the input streams channel-last (NHWC) although the model declares NCHW
    assert lines[1] == (f"ports: in input_ (tensor 'input'): {PRECISION}[1,8,8,3], "
                        f"out output_ (tensor 'output'): {PRECISION}[1,10]")
    table = lines.index("", 2) + 2  # the summary, the resources, a blank line, the header
    kinds = [line.split()[1] for line in lines[table:table + 7]]
    assert kinds == ["window", "window", "window", "window", "map", "rows", "rows"]
    assert lines[-1] == f"wrote {sum(p.is_file() for p in out.rglob('*'))} files to {out}"
    graph = json.loads((out / "graph.json").read_text())
    assert graph["name"] == "cnn" and graph["inputs"][0]["dtype"] == PRECISION
    assert (out / "hls" / "cnn.cpp").is_file() and (out / "hls" / "tb_cnn.cpp").is_file()


def test_csim_passes_on_the_projects_data(compiled, capsys):
    _, _, out, code, _ = compiled
    assert code == 0
    assert main(["csim", str(out)]) == 0
    assert capsys.readouterr().out == PASS


def test_csim_takes_inputs_in_the_models_layout(compiled, capsys):
    folder, _, out, code, _ = compiled
    assert code == 0
    inputs = feeds(cnn(), seed=5)
    assert inputs["input"].shape == (1, 3, 8, 8)
    npz = folder / "x.npz"
    np.savez(npz, **inputs)
    assert main(["csim", str(out), "--inputs", str(npz), "--onnx-layout"]) == 0
    assert capsys.readouterr().out == PASS
    # without --onnx-layout the arrays must already be NHWC
    assert main(["csim", str(out), "--inputs", str(npz)]) == 2
    assert capsys.readouterr().err == (
        f"hlsfuse: error: {npz}: input 'input': value has shape [1, 3, 8, 8], expected [1, 8, 8, 3]\n"
    )
    nhwc = folder / "x_nhwc.npz"
    np.savez(nhwc, input=inputs["input"].transpose(0, 2, 3, 1))
    assert main(["csim", str(out), "--inputs", str(nhwc)]) == 0
    assert capsys.readouterr().out == PASS


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_rtlsim_of_the_onnx_model_matches_in_the_models_layout(compiled, capsys):
    folder, model, _, code, _ = compiled
    assert code == 0
    out = folder / "out_verilog"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compile", str(model), "--precision", PRECISION, "-o", str(out), "--target", "verilog"]) == 0
    npz = folder / "x_rtl.npz"
    np.savez(npz, **feeds(cnn(), seed=7))
    capsys.readouterr()
    assert main(["rtlsim", str(out), "--inputs", str(npz), "--onnx-layout", "--frames", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PASS: 20 output elements in 2 frame(s) match the reference\ncycles: ")
