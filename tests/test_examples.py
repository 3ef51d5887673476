"""The example graphs: the committed JSON is what the scripts build, and the fixed-point types
chosen for them follow a float computation of the same network to within rounding."""

import runpy
from pathlib import Path

import numpy as np
import pytest

from hlsfuse import FLOAT32, Constant, Graph, Input, Node, TensorType, load_graph, reference

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = ("mlp", "cnn", "residual", "resnet8")
LARGE = ("resnet18",)  # no committed JSON (11.7 M weights): tests/test_large_model.py builds it
# (input shape, output shape, ops the example is about)
SHAPES = {
    "mlp": ([1, 64], [1, 10], {"dense", "bias_add", "relu"}),
    "cnn": ([1, 16, 16, 3], [1, 10], {"conv2d", "bias_add", "relu", "max_pool2d", "flatten", "dense"}),
    "residual": ([1, 16, 16, 8], [1, 16, 16, 8], {"conv2d", "bias_add", "relu", "add"}),
    "resnet8": ([1, 32, 32, 3], [1, 10], {"conv2d", "bias_add", "relu", "add", "global_avg_pool", "flatten", "dense"}),
}


def build(name: str) -> Graph:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"))["build"]()


def as_float(graph: Graph) -> Graph:
    """The same network in float32: constants hold their quantized real values, nodes their ops."""
    return Graph(
        graph.name,
        tuple(Input(i.name, TensorType(i.type.shape, FLOAT32)) for i in graph.inputs),
        tuple(Constant(c.name, TensorType(c.type.shape, FLOAT32), c.values) for c in graph.constants),
        tuple(Node(n.name, n.op, n.inputs, n.attrs) for n in graph.nodes),
        graph.outputs,
    )


def test_every_example_script_is_listed():
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(NAMES + LARGE)


@pytest.mark.parametrize("name", NAMES)
def test_committed_json_is_what_the_script_builds(name):
    assert load_graph(EXAMPLES / f"{name}.json") == build(name), f"run: python examples/{name}.py"


@pytest.mark.parametrize("name", NAMES)
def test_script_writes_its_json(name, tmp_path, monkeypatch):
    out = tmp_path / f"{name}.json"
    monkeypatch.setattr("sys.argv", [f"{name}.py", str(out)])
    runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    assert out.read_bytes() == (EXAMPLES / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_reference_run_follows_float(name):
    graph = build(name)
    in_shape, out_shape, ops = SHAPES[name]
    assert [list(i.type.shape) for i in graph.inputs] == [in_shape]
    assert {n.op for n in graph.nodes} == ops
    fixed, floating = graph, as_float(graph)
    for seed in range(3):
        inputs = reference.random_inputs(graph, seed)
        got = reference.run(fixed, inputs)
        want = reference.run(floating, inputs)
        (out,) = graph.outputs
        assert list(got[out].shape) == out_shape
        # rounding at each layer costs a few LSBs (2**-10) of fixed<16,6>; saturation would cost far more
        assert np.max(np.abs(got[out] - want[out])) < 0.02
        assert np.ptp(want[out]) > 1.0  # the comparison is not between two all-zero outputs
