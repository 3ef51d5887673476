"""Precision of imported graphs: defaults, precision maps, overrides by name and glob, calibration."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiers import need

need("onnx")
need("onnxruntime")

from onnx_build import feeds  # noqa: E402
from onnx_zoo import cnn, mlp  # noqa: E402

from hlsfuse import HlsfuseError, from_onnx, parse_dtype  # noqa: E402
from hlsfuse.frontend.onnx import Precision, calibrate, load_precision_map, read_onnx  # noqa: E402
from hlsfuse.frontend.onnx.calibration import split_samples  # noqa: E402
from hlsfuse.frontend.onnx.precision import int_bits_for  # noqa: E402
from hlsfuse.overflow import risks  # noqa: E402
from hlsfuse.ranges import fitting_type, ranges  # noqa: E402
from hlsfuse.types import FixedType  # noqa: E402


def dtypes(graph):
    return {name: str(t.dtype) for name, t in graph.types.items()}


def test_float32_graph():
    graph = from_onnx(mlp(), precision="float32")
    assert set(dtypes(graph).values()) == {"float32"}


def test_default_is_16_bits_with_the_integer_bits_range_analysis_finds_up_to_6():
    graph = from_onnx(mlp())
    assert graph == from_onnx(mlp(), precision="auto:16,6")
    found = ranges(graph)
    assert graph.types["input"].dtype == FixedType(16, 6, True, "RND", "SAT")  # hls4ml's fixed<16,6>, rounding
    for node in graph.nodes:
        dtype = graph.types[node.name].dtype
        assert dtype.width == 16 and dtype.int_bits <= 6, node.name
        if dtype.overflow == "SAT":  # at the limit: the bound needs more, and the warning names the node
            assert dtype.int_bits == 6 and not found[node.name].fits, node.name
        else:  # the fewest integer bits that cannot overflow
            assert found[node.name].fits and dtype == fitting_type(found[node.name].exact, 16), node.name
    saturating = {n.name for n in graph.nodes if graph.types[n.name].dtype.overflow == "SAT"}
    assert {r.name for r in risks(graph)} == saturating


def test_precision_map_overrides_by_name_and_glob():
    spec = {
        "default": "fixed<18,8>",
        "weights": "fixed<10,2>",
        "tensors": {"/fc1/Gemm_output_0": "fixed<20,9>", "fc3.*": "fixed<12,3>", "/relu*": "ufixed<16,6>"},
    }
    types = dtypes(from_onnx(mlp(), precision=spec))
    assert types["input"] == "fixed<18,8>"
    # a Gemm is a dense and a bias_add; both follow the ONNX tensor's rule
    assert types["/fc1/Gemm_output_0.dense"] == types["/fc1/Gemm_output_0"] == "fixed<20,9>"
    assert types["/fc2/Gemm_output_0"] == "fixed<18,8>"
    assert types["/relu1/Relu_output_0"] == types["/relu2/Relu_output_0"] == "ufixed<16,6>"
    assert types["fc1.weight"] == types["fc2.bias"] == "fixed<10,2>"
    assert types["fc3.weight"] == types["fc3.bias"] == "fixed<12,3>"


def test_exact_names_win_over_globs_and_globs_apply_in_order():
    p = Precision(default=parse_dtype("fixed<16,6>"),
                  tensors=(("a*", parse_dtype("fixed<8,1>")), ("ab*", parse_dtype("fixed<8,2>")),
                           ("abc", parse_dtype("fixed<8,3>"))))
    assert str(p.node("abc", "abc", "add")) == "fixed<8,3>"
    assert str(p.node("abd", "abd", "add")) == "fixed<8,1>"
    assert str(p.node("abd.part", "zzz", "add")) == "fixed<8,1>"
    assert str(p.node("x.part", "abc", "add")) == "fixed<8,3>"  # helper follows its tensor's exact rule


def test_moving_ops_keep_their_input_type():
    graph = from_onnx(cnn(), precision={"default": "fixed<16,6>", "tensors": {"p2": "fixed<14,5>"}})
    reshape = next(n for n in graph.nodes if n.op == "reshape")
    assert str(graph.types[reshape.name].dtype) == "fixed<14,5>"


def test_mixing_float_and_fixed_is_refused():
    with pytest.raises(HlsfuseError) as info:
        from_onnx(mlp(), precision={"default": "fixed<16,6>", "tensors": {"input": "float32"}})
    assert str(info.value) == ("precision: tensor 'input' is float32 but the default is fixed<16,6>; "
                               "an imported graph is float32 throughout or fixed-point throughout")


def test_precision_map_file(tmp_path):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"weights": "fixed<8,1>", "tensors": {"input": "fixed<10,3>"}}))
    p = load_precision_map(path, default="fixed<12,4>")
    assert str(p.default) == "fixed<12,4>"
    assert str(p.weight("w")) == "fixed<8,1>" and str(p.input("input")) == "fixed<10,3>"
    path.write_text(json.dumps({"default": "fixed<20,4>"}))
    assert str(load_precision_map(path, default="fixed<12,4>").default) == "fixed<20,4>"


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"defaults": "fixed<8,2>"}', "precision map: unknown key 'defaults' (expected: default, weights, tensors)"),
        ('{"tensors": ["x"]}', "precision map: 'tensors' must be an object of name-or-glob: type"),
        ('{"weights": "fixed<8>"}', "precision: weights: dtype 'fixed<8>': expected float32, int8/16/32, uint8/16/32, "
                                    "fixed<W,I[,Q[,O]]> or ufixed<W,I[,Q[,O]]>"),
        ('{"default": ', "invalid JSON at line 1: Expecting value"),
        ("[1]", "precision map must be a JSON object with keys default, weights, tensors, not list"),
    ],
)
def test_precision_map_errors(tmp_path, text, message):
    path = tmp_path / "map.json"
    path.write_text(text)
    with pytest.raises(HlsfuseError) as info:
        load_precision_map(path)
    assert str(info.value) == f"{path}: {message}"


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "magnitude, width, headroom, bits",
    [(0.3, 16, 0, 0), (0.3, 16, 1, 1), (0.5, 16, 0, 1), (1.0, 16, 0, 2), (3.9, 16, 1, 4), (0.0, 16, 1, 2),
     (1e30, 16, 1, 16), (1e-30, 16, 0, -16), (float("inf"), 12, 1, 12)],
)
def test_int_bits_hold_the_magnitude(magnitude, width, headroom, bits):
    assert int_bits_for(magnitude, width, headroom) == bits
    if -width < bits < width and magnitude > 0:
        assert magnitude < 2.0 ** (bits - 1 - headroom)  # representable below the signed maximum


def _stack(proto, seeds):
    batches = [feeds(proto, s) for s in seeds]
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def test_calibrated_types_follow_the_observed_ranges():
    proto = cnn()
    result = calibrate(proto, _stack(proto, range(4)), precision="fixed<16,6>")
    graph = result.graph
    for node in graph.nodes:
        if node.op in ("reshape",):
            continue
        t = graph.types[node.name].dtype
        peak = result.peaks[node.name]
        assert (t.width, t.quant, t.overflow) == (16, "RND", "SAT")
        assert t.int_bits == int_bits_for(peak, 16, 1), node.name
    for const in graph.constants:
        peak = float(np.max(np.abs(result.float_graph.constant_map[const.name].values)))
        assert const.type.dtype.int_bits == int_bits_for(peak, 16, 0), const.name  # weights: no headroom
    assert result.report().startswith("calibrated 15 tensors; error vs float (onnxruntime ")
    assert result.report().splitlines()[0].endswith(") on 4 samples:")
    assert result.samples == 4 and set(result.errors) == {"output"}


def test_calibration_keeps_explicit_overrides():
    proto = mlp()
    spec = {"default": "fixed<16,6>", "tensors": {"/relu1/Relu_output_0": "fixed<24,10>"}}
    graph = calibrate(proto, _stack(proto, range(2)), precision=spec).graph
    assert str(graph.types["/relu1/Relu_output_0"].dtype) == "fixed<24,10>"
    assert graph.types["/relu2/Relu_output_0"].dtype.quant == "RND"


def test_calibration_from_an_npz_file(tmp_path):
    proto = mlp()
    path = tmp_path / "samples.npz"
    np.savez(path, **_stack(proto, range(3)))
    graph = from_onnx(proto, calibration=path)
    assert graph.types["output"].dtype.overflow == "SAT"


def test_calibration_needs_fixed_point():
    with pytest.raises(HlsfuseError) as info:
        calibrate(mlp(), feeds(mlp()), precision="float32")
    assert str(info.value) == "calibration chooses fixed-point types, but the precision is float32"


def test_samples_layouts():
    decoded = read_onnx(cnn())
    one = np.zeros((1, 3, 8, 8))
    assert len(split_samples(decoded, {"input": one})) == 1
    assert len(split_samples(decoded, {"input": np.zeros((5, 3, 8, 8))})) == 5  # batch of 1 stacked
    assert len(split_samples(decoded, {"input": np.zeros((2, 1, 3, 8, 8))})) == 2
    with pytest.raises(HlsfuseError) as info:
        split_samples(decoded, {"input": np.zeros((3, 8, 8))})
    assert str(info.value) == "samples: 'input' has shape [3, 8, 8]; expected [1, 3, 8, 8] or a leading sample axis"
    with pytest.raises(HlsfuseError) as info:
        split_samples(decoded, {"input": one, "other": one})
    assert str(info.value) == "samples: 'other' is not a model input (inputs: input)"
