"""``--precision auto[:W]``: types from range analysis on the ONNX import (frontend/onnx/auto.py).

With auto, no node of the ONNX test models (the PyTorch-style models and every op case of
test_onnx_ops.py) can overflow: the range analysis of the imported
graph finds every exact value inside its type. Worst-case bounds grow with depth (each conv
layer multiplies them by the sum of its weights' magnitudes), so a deep CNN with random weights
needs ``--calibrate`` for a W-bit budget to keep its precision: then integer bits narrow to what
the samples need (plus one bit), and the error stays within 1% of the output range.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiers import need

need("onnx")
need("onnxruntime")

from onnx_build import feeds, hls_run, ort_run  # noqa: E402
from onnx_zoo import MODELS, deep_cnn, mlp  # noqa: E402
from test_onnx_ops import CASES as OP_CASES  # noqa: E402

from hlsfuse import HlsfuseError, from_onnx, load_graph, reference  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import calibrate, to_graph_layout  # noqa: E402
from hlsfuse.frontend.onnx.precision import parse_auto  # noqa: E402
from hlsfuse.overflow import risks  # noqa: E402
from hlsfuse.ranges import fitting_type, ranges  # noqa: E402
from hlsfuse.types import FixedType  # noqa: E402

_MODELS = {**MODELS, "deep_cnn": deep_cnn}


@pytest.fixture(scope="module")
def deep():
    return deep_cnn()


@pytest.mark.parametrize("name", sorted(_MODELS))
@pytest.mark.parametrize("spec, given", [("auto", None), ("auto:12", 2.0)])
def test_no_node_of_an_auto_typed_model_can_overflow(name, spec, given):
    proto = _MODELS[name]()
    input_ranges = None if given is None else {i.name: (-given, given) for i in proto.graph.input}
    graph = from_onnx(proto, precision=spec, input_ranges=input_ranges)
    found = ranges(graph, input_ranges)
    assert [n for n, r in found.items() if not r.fits] == []
    width, _ = parse_auto(spec)
    assert {graph.types[n.name].dtype.width for n in graph.nodes} == {width}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_no_node_of_an_auto_typed_op_case_can_overflow(case):
    graph = from_onnx(OP_CASES[case](), precision="auto:16")
    assert [n for n, r in ranges(graph).items() if not r.fits] == []


def test_auto_gives_each_node_the_fewest_integer_bits():
    graph = from_onnx(mlp(), precision="auto:16", input_ranges={"input": (-1.0, 1.0)})
    found = ranges(graph, {"input": (-1.0, 1.0)})
    assert graph.types["input"].dtype == FixedType(16, 2, True, "RND", "SAT")  # 1 needs 2 integer bits
    for node in graph.nodes:
        if node.op == "reshape":
            continue
        dtype = graph.types[node.name].dtype
        assert dtype == fitting_type(found[node.name].exact, 16), node.name
        narrower = FixedType(16, dtype.int_bits - 1, dtype.signed, "RND")
        assert not found[node.name].exact.quantize(narrower)[1], node.name  # one bit less can overflow
    assert str(graph.types["/relu1/Relu_output_0"].dtype).startswith("ufixed<16,")  # never negative


def test_default_precision_can_overflow_where_auto_cannot(deep):
    found = ranges(from_onnx(deep), {"input": (-1.0, 1.0)})
    assert any(not r.fits for r in found.values())  # fixed<16,6> everywhere: deep layers can overflow


@pytest.mark.parametrize("name", sorted(MODELS))
def test_float_graph_bounds_hold(name):
    proto = MODELS[name]()
    graph = from_onnx(proto, precision="float32")
    inputs = {name: np.clip(x, -4.0, 4.0) for name, x in feeds(proto, 0, 3.0).items()}
    found = ranges(graph, dict.fromkeys(inputs, (-4.0, 4.0)))
    values = reference.run_raw(graph, reference.quantize_inputs(graph, to_graph_layout(graph, inputs)))
    for node in graph.nodes:
        lo, hi = found[node.name].exact.reals()
        assert max(abs(lo), abs(hi)) < 1e6, node.name  # bounds that say something
        slack = 1e-5 * max(abs(lo), abs(hi), 1.0)  # float32 rounds; the bounds are real
        got = values[node.name].astype(np.float64)
        assert lo - slack <= got.min() and got.max() <= hi + slack, node.name


def _error(proto, graph, samples):
    worst = span = 0.0
    for x in samples:
        want = ort_run(proto, {"input": x})["output"]
        got = hls_run(graph, {"input": x})["output"]
        worst = max(worst, float(np.max(np.abs(got - want))))
        span = max(span, float(want.max() - want.min()))
    return worst, span


def test_deep_cnn_auto_16_with_calibration_is_within_one_percent(deep):
    rng = np.random.default_rng(1)
    calibration = rng.uniform(-1, 1, (16, 1, 3, 16, 16)).astype(np.float32)
    tests = list(rng.uniform(-1, 1, (8, 1, 3, 16, 16)).astype(np.float32))
    given = {"input": (-1.0, 1.0)}
    assert len([n for n in deep.graph.node if n.op_type == "Conv"]) >= 8
    auto = from_onnx(deep, "auto:16", input_ranges=given)
    narrowed = calibrate(deep, {"input": calibration}, "auto:16", input_ranges=given).graph
    for node in narrowed.nodes:  # never wider than auto's
        assert narrowed.types[node.name].dtype.int_bits <= auto.types[node.name].dtype.int_bits, node.name
    error, span = _error(deep, narrowed, tests)
    assert error <= 0.01 * span, (error, span)


def test_deep_cnn_with_the_default_precision_is_within_one_percent_and_names_the_nodes_at_the_limit(
        deep, tmp_path, capsys):
    tests = list(np.random.default_rng(1).uniform(-1, 1, (8, 1, 3, 16, 16)).astype(np.float32))
    graph = from_onnx(deep)  # auto:16,6
    error, span = _error(deep, graph, tests)
    assert error <= 0.01 * span, (error, span)  # 0.3%; fixed<16,6> everywhere is off by 3.9%
    assert error < 0.25 * _error(deep, from_onnx(deep, "fixed<16,6>"), tests)[0]
    at_limit = [n.name for n in graph.nodes if graph.types[n.name].dtype.overflow == "SAT"]
    assert [r.name for r in risks(graph)][:3] == ["b8.conv", "b7.conv", "b5.conv"]
    assert sorted(r.name for r in risks(graph)) == sorted(at_limit) and len(at_limit) == 18
    path = tmp_path / "deep.onnx"
    path.write_bytes(deep.SerializeToString())
    assert main(["convert", str(path), "-o", str(tmp_path / "deep.json")]) == 0
    warned = capsys.readouterr().err.splitlines()[-1]
    assert warned.startswith("hlsfuse: warning: 18 nodes can overflow their types (range analysis, inputs anywhere "
                             "in their types' ranges): 'b8.conv' (conv2d, fixed<16,6,RND,SAT>) can reach")


def test_auto_spellings_and_precision_maps(tmp_path):
    assert parse_auto("auto") == (16, None) and parse_auto("auto:24") == (24, None)
    assert parse_auto("auto:16,6") == (16, 6) and parse_auto("fixed<16,6>") is None
    with pytest.raises(HlsfuseError, match=r"^precision: default: 'auto:1': expected auto, auto:W with a total "
                       r"width W of 2\.\.64 bits, or auto:W,I with at most I <= W integer bits$"):
        from_onnx(mlp(), precision="auto:1")
    for bad in ("auto:16,17", "auto:16,", "auto:16,-1"):
        with pytest.raises(HlsfuseError, match=f"^precision: default: '{bad}': expected auto"):
            from_onnx(mlp(), precision=bad)
    with pytest.raises(HlsfuseError, match=r"^precision map: tensor 'x': 'auto:8,2': a tensor's auto gives its "
                       r"width only \(auto:W\); the integer-bit limit is the default's$"):
        from_onnx(mlp(), precision={"default": "auto:16,6", "tensors": {"x": "auto:8,2"}})
    with pytest.raises(HlsfuseError, match=r"^precision: tensor 'x': 'auto:65': expected auto, auto:W"):
        from_onnx(mlp(), precision={"default": "auto", "tensors": {"x": "auto:65"}})
    spec = {"default": "auto:16", "tensors": {"/fc1/*": "auto:10", "output": "fixed<20,8>"}}
    graph = from_onnx(mlp(), precision=spec)
    assert graph.types["/fc1/Gemm_output_0"].dtype.width == 10
    assert str(graph.types["output"].dtype) == "fixed<20,8>"
    assert graph.types["/relu1/Relu_output_0"].dtype.width == 16
    # explicit types win over auto (also for the helper node of their tensor), even where they can overflow
    assert str(graph.types["output.dense"].dtype) == "fixed<20,8>"
    assert [n for n, r in ranges(graph).items() if not r.fits] == ["output.dense", "output"]
    weights = from_onnx(mlp(), precision={"default": "auto:12", "weights": "fixed<8,2>"})
    assert {str(c.type.dtype) for c in weights.constants} == {"fixed<8,2>"}  # a given weight type is kept
    assert {c.type.dtype.width for c in from_onnx(mlp(), precision="auto:12").constants} == {12}
    with pytest.raises(HlsfuseError, match=r"tensor 'x' is auto, but the default is fixed<16,6>, not auto"):
        from_onnx(mlp(), precision={"default": "fixed<16,6>", "tensors": {"x": "auto:8"}})
    with pytest.raises(HlsfuseError, match=r"input range for 'nope': not an input of the model \(inputs: input\)"):
        from_onnx(mlp(), precision="auto", input_ranges={"nope": (0.0, 1.0)})
    with pytest.raises(HlsfuseError, match=r"input ranges apply to precision auto only"):
        from_onnx(mlp(), "fixed<16,6>", input_ranges={"input": (0.0, 1.0)})


@pytest.fixture
def mlp_file(tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp().SerializeToString())
    return path


def test_convert_with_precision_auto(mlp_file, tmp_path, capsys):
    out = tmp_path / "g.json"
    argv = ["convert", str(mlp_file), "-o", str(out), "--precision", "auto:12", "--input-range", "input=-1:1"]
    assert main(argv) == 0
    graph = load_graph(out)
    assert graph.types["input"].dtype == FixedType(12, 2, True, "RND", "SAT")
    assert [n for n, r in ranges(graph, {"input": (-1.0, 1.0)}).items() if not r.fits] == []


@pytest.mark.parametrize("extra, message", [
    (["--input-range", "input=1"], "argument --input-range: expected NAME=LO:HI with finite numbers, e.g. x=-1:1, "
                                   "not 'input=1'"),
    (["--input-range", "input=2:1"], "argument --input-range: input 'input': LO (2) must not exceed HI (1)"),
    (["--precision", "auto", "--input-range", "in=0:1"], "input range for 'in': not an input of the model"),
    (["--input-range", "in=0:1"], "input range for 'in': not an input of the model"),
    (["--precision", "auto", "--input-range", "input=0:1", "--input-range", "input=0:2"],
     "--input-range: input 'input' is given more than once"),
])
def test_input_range_errors_are_one_line(mlp_file, tmp_path, capsys, extra, message):
    try:
        code = main(["convert", str(mlp_file), "-o", str(tmp_path / "g.json"), *extra])
    except SystemExit as exc:  # argparse refuses the option's spelling
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.strip().splitlines()[-1].startswith("hlsfuse: error:")


def test_check_ranges_marks_the_nodes_that_can_overflow(mlp_file, tmp_path, capsys):
    assert main(["check", str(mlp_file), "--ranges", "--input-range", "input=-1:1"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("ranges ("):].splitlines()
    assert "can overflow" in table[0]
    assert table[1].split() == ["tensor", "op", "dtype", "lo", "hi", "int", "bits"]
    row = next(line.split() for line in table if line.split()[0] == "input")
    assert row[1:] == ["input", "fixed<16,2,RND,SAT>", "-1", "1", "2"]  # the default, auto:16,6, types it
    assert main(["check", str(mlp_file), "--ranges", "--precision", "auto"]) == 0
    assert "(exact values before each node's assignment to its dtype; 0 nodes can overflow)" in capsys.readouterr().out
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"name": "g", "inputs": [{"name": "x", "shape": [2], "dtype": "fixed<8,4>"}],
                                "nodes": [{"name": "n", "op": "neg", "inputs": ["x"]}], "outputs": ["n"]}))
    assert main(["check", str(path), "--ranges"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].split() == ["n", "neg", "fixed<8,4>", "-7.9375", "8", "5", "OVERFLOW"]
    assert main(["fuse", str(path), "--input-range", "x=0:1"]) == 2
    assert "--input-range applies to ONNX models imported with --precision auto" in capsys.readouterr().err


@pytest.mark.gxx
def test_auto_types_are_bit_exact_in_csim(deep, tmp_path):
    # auto gives unsigned types and types with more integer bits than bits (no fractional bits left)
    from hls_support import csim_both

    from hlsfuse.compile import CompileOptions, compile

    graph = from_onnx(deep, "auto:16", input_ranges={"input": (-1.0, 1.0)})
    types = [graph.types[n.name].dtype for n in graph.nodes]
    assert any(not t.signed for t in types) and any(t.int_bits > t.width for t in types)
    out = compile(graph, CompileOptions()).write(tmp_path / "out")
    result = csim_both(out, graph=graph)
    assert result.passed and result.compared == 2 * graph.types["output"].size, result.report()


def auto_deep_cnn():
    """Eight convs typed by auto:10: unsigned types and types with more integer bits than bits (the RTL design of
    tests/test_hw_shared.py simulates it)."""
    return from_onnx(deep_cnn(widths=(4, 4, 8, 8, 8, 8, 8, 8), size=8), "auto:10", input_ranges={"input": (-1.0, 1.0)})


def test_auto_types_mix_signedness_and_more_integer_bits_than_bits():
    graph = auto_deep_cnn()
    types = [graph.types[n.name].dtype for n in graph.nodes]
    assert any(not t.signed for t in types) and any(t.int_bits > t.width for t in types)
