"""Defects found running the command line on models as users have them (issue 28), each with the
command that showed it: --approximate-scales in run --compare float, a float32 import of a model with
Exp in run, a zero-size initializer, and the overflow warnings of make demo's own example."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from quant_build import Net  # noqa: E402

from hlsfuse.cli import main  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _save(proto, path: Path) -> str:
    onnx.save(proto, path)
    return str(path)


def _plain(nodes, inits=(), x=(1, 4), y=(1, 4)):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y))], list(inits))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    return proto


def _scaled_mlp():
    """A QONNX MatMul whose input, weight and output quantizers have scales that are not powers of two."""
    n = Net()
    x = n.quant("x", "xq", 0.3, 4)
    w = n.quant(n.const("w", np.linspace(-1, 1, 12).reshape(4, 3)), "wq", 0.1, 4)
    y = n.quant(n.op("MatMul", [x, w], "h"), "y", 0.7, 4)
    return n.model({"x": [1, 4]}, y, [1, 3])


def test_run_compare_float_takes_approximate_scales(tmp_path, capsys):
    model = _save(_scaled_mlp(), tmp_path / "scaled.onnx")
    assert main(["run", model, "--compare", "float", "--approximate-scales"]) == 0
    captured = capsys.readouterr()
    # the float side is the model itself (qonnx's execution), so the table shows what the approximation costs
    assert "error vs float (qonnx " in captured.out
    row = captured.out.splitlines()[-1].split()
    assert row[0] == "y" and float(row[1]) > 0
    warned = captured.err.splitlines()
    # each approximation said once, as a warning line (not again as a Python warning of the float side)
    assert warned == [line for line in warned if line.startswith("hlsfuse: warning: node '")]
    assert len(warned) == len(set(warned)) == 3


def test_run_float32_model_with_exp_checks_no_overflow(tmp_path, capsys):
    model = _save(_plain([helper.make_node("Exp", ["x"], ["y"])]), tmp_path / "exp.onnx")
    assert main(["run", model, "--precision", "float32"]) == 0
    captured = capsys.readouterr()
    assert "y  float32[1,4]" in captured.out and captured.err == ""


@pytest.mark.parametrize("shape, op", [((4, 0), "MatMul"), ((0, 4), "Add")])
def test_zero_size_initializer_is_refused_naming_the_file(tmp_path, capsys, shape, op):
    init = numpy_helper.from_array(np.zeros(shape, np.float32), "w")
    out = (1, 0) if op == "MatMul" else (0, 4)
    model = _save(_plain([helper.make_node(op, ["x", "w"], ["y"])], [init], y=out), tmp_path / "empty.onnx")
    assert main(["check", model]) == 2
    assert capsys.readouterr().err == (f"hlsfuse: error: {model}: cannot import the model: initializer 'w' has shape "
                                       f"{list(shape)}, no elements (a weight or constant operand needs at least "
                                       "one)\n")


def test_demo_example_warns_of_no_overflow(tmp_path, capsys):
    """make demo's commands on examples/residual.json: check --ranges, run and compile say nothing can overflow."""
    graph = str(EXAMPLES / "residual.json")
    assert main(["check", graph, "--ranges"]) == 0
    assert "(exact values before each node's assignment to its dtype; 0 nodes can overflow)" in capsys.readouterr().out
    assert main(["run", graph, "--seed", "0"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["compile", graph, "-o", str(tmp_path / "out"), "--target", "hls"]) == 0
    assert capsys.readouterr().err == ""
