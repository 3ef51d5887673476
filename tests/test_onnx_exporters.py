"""Models as exporters write them: custom-op domains without an opset import (Brevitas, FINN, qonnx),
qonnx's channels-last form, Keras/tf2onnx and hls4ml channels-last inputs, BatchNormalization in every
rank and folded into the layer before it."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx_build import errors, feeds, model, node  # noqa: E402
from quant_build import QONNX, Net, frames  # noqa: E402

from hlsfuse import HlsfuseError, Input, TensorType, graph_from_dict, graph_to_dict, reference  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.compile import plan_design  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout, to_onnx_layout  # noqa: E402
from hlsfuse.types import FLOAT32  # noqa: E402

CHANNELS_LAST = "qonnx.custom_op.channels_last"
rng = np.random.default_rng(28)


def ops(graph) -> list[str]:
    return [n.op for n in graph.nodes]


def stage_ops(graph) -> list[str]:
    """The op of each stage's head in the compiled plan."""
    return [graph.node(s.head).op for s in plan_design(graph).plan.stages if s.head]


def w(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def bn_params(prefix: str, shape) -> dict[str, np.ndarray]:
    return {f"{prefix}_g": rng.random(shape) + 0.5, f"{prefix}_b": rng.standard_normal(shape),
            f"{prefix}_m": rng.standard_normal(shape) * 0.1, f"{prefix}_v": rng.random(shape) + 0.5}


def bn(x: str, out: str, prefix: str, **attrs):
    return node("BatchNormalization", [x, *(f"{prefix}_{p}" for p in "gbmv")], [out], **attrs)


# --------------------------------------------------------------------------
# Custom domains without an opset import
# --------------------------------------------------------------------------


def undeclared(domain: str) -> onnx.ModelProto:
    """A quantized MLP whose Quant nodes are in ``domain``, which the model does not import."""
    n = Net()
    x = n.quant("x", "xq", 2.0 ** -3, 6)
    wq = n.quant(n.const("w", w(6, 4)), "wq", 2.0 ** -4, 4, narrow=1)
    n.quant(n.op("MatMul", [x, wq], "h"), "y", 2.0 ** -3, 8)
    for q in n.nodes:
        q.domain = domain if q.domain else ""
    return n.model({"x": [1, 6]}, "y", [1, 4], qonnx=False)


@pytest.mark.parametrize("domain", ["onnx.brevitas", "finn.custom_op.general", QONNX])
def test_a_file_without_the_opset_import_of_its_custom_domain_loads_and_converts(tmp_path, domain):
    proto = undeclared(domain)
    with pytest.raises(onnx.checker.ValidationError, match="No opset import for domain"):
        onnx.checker.check_model(proto)  # what refused these files
    path = tmp_path / "model.onnx"
    onnx.save(proto, path)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["convert", str(path), "-o", str(tmp_path / "g.json")]) == 0
    graph = from_onnx(path)
    declared = n_imports(proto)
    for frame in frames(proto, 3):
        expected = from_onnx(with_import(proto, domain))  # the same model, declaring its domain
        inputs = to_graph_layout(graph, frame)
        assert np.array_equal(reference.run(graph, inputs)["y"], reference.run(expected, inputs)["y"])
    assert n_imports(proto) == declared  # the caller's ModelProto is left as it was


def n_imports(proto) -> int:
    return len(proto.opset_import)


def with_import(proto, domain):
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    copy.opset_import.append(onnx.helper.make_opsetid(domain, 1))
    return copy


def test_a_channels_last_file_without_its_opset_import_loads():
    nodes = [node("Conv", ["x", "w"], ["y"], domain=CHANNELS_LAST, kernel_shape=[3, 3], strides=[1, 1],
                  dilations=[1, 1], pads=[1, 1, 1, 1], group=1)]
    graph_proto = onnx.helper.make_graph(
        nodes, "cl", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 5, 5, 2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 5, 5, 3])],
        [onnx.numpy_helper.from_array(w(3, 3, 3, 2), "w")])
    proto = onnx.helper.make_model(graph_proto, opset_imports=[onnx.helper.make_opsetid("", 13)])
    proto.ir_version = 8
    with pytest.raises(onnx.checker.ValidationError, match="No opset import for domain"):
        onnx.checker.check_model(proto)
    graph = from_onnx(proto, precision="float32")
    # the conv runs on the input as it is; a graph output gets its own name by a free reshape
    assert ops(graph) == ["conv2d", "reshape"] and graph.inputs[0].source_axes is None
    x = feeds(proto)["x"]
    expected = qonnx_exec(with_import(proto, CHANNELS_LAST), {"x": x})["y"]
    assert np.max(np.abs(reference.run(graph, to_graph_layout(graph, {"x": x}))["y"] - expected)) < 1e-5


def test_an_undeclared_unknown_domain_is_still_a_checker_error_naming_the_file(tmp_path):
    proto = undeclared("my.company.ops")
    path = tmp_path / "model.onnx"
    onnx.save(proto, path)
    with pytest.raises(HlsfuseError) as info:
        from_onnx(path)
    assert str(info.value) == f"{path}: not a valid ONNX model: No opset import for domain 'my.company.ops'"


# --------------------------------------------------------------------------
# qonnx's channels-last form
# --------------------------------------------------------------------------


def qonnx_exec(proto, inputs: dict) -> dict:
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return execute_onnx(ModelWrapper(proto), dict(inputs))


def channels_last(proto, input_too: bool) -> onnx.ModelProto:
    """``proto`` as qonnx's ConvertToChannelsLastAndClean writes it (after the InferShapes it asks for)."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.channels_last import ConvertToChannelsLastAndClean
    from qonnx.transformation.infer_shapes import InferShapes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper = ModelWrapper(proto).transform(InferShapes())
        return wrapper.transform(ConvertToChannelsLastAndClean(make_input_channels_last=input_too)).model


CONV = {"strides": [1, 1], "dilations": [1, 1], "group": 1}  # qonnx's channels-last Conv needs them written


def float_cnn() -> onnx.ModelProto:
    """Conv-BN-ReLU-MaxPool-Conv-ReLU-Flatten-MatMul on [1, 3, 8, 8], every attribute written out."""
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], **CONV),
        bn("c1", "n1", "bn1"),
        node("Relu", ["n1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
        node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[0, 0, 0, 0], **CONV),
        node("Relu", ["c2"], ["r2"]),
        node("Flatten", ["r2"], ["f"]),
        node("MatMul", ["f", "w3"], ["y"]),
    ]
    inits = {"w1": w(4, 3, 3, 3), "b1": w(4), **bn_params("bn1", 4), "w2": w(5, 4, 3, 3), "w3": w(20, 6, scale=0.1)}
    return model(nodes, {"x": [1, 3, 8, 8]}, inits)


def quantized_cnn() -> onnx.ModelProto:
    """The QONNX form: power-of-two scales, per-channel weight scales, unsigned activations."""
    n = Net()
    x = n.quant("x", "xq", 2.0 ** -3, 6)
    w1 = n.quant(n.const("w1", w(4, 3, 3, 3)), "w1q", 2.0 ** -rng.integers(2, 5, size=(4, 1, 1, 1)), 4)
    c1 = n.op("Conv", [x, w1], "c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], **CONV)
    r1 = n.quant(n.op("Relu", [c1], "r1"), "r1q", 2.0 ** -2, 4, signed=0)
    p1 = n.op("MaxPool", [r1], "p1", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    w2 = n.quant(n.const("w2", w(5, 4, 3, 3)), "w2q", 2.0 ** -3, 4, narrow=1)
    c2 = n.quant(n.op("Conv", [p1, w2], "c2", kernel_shape=[3, 3], pads=[0, 0, 0, 0], **CONV), "c2q", 2.0 ** -2, 6)
    f = n.op("Flatten", [c2], "f", axis=1)
    w3 = n.quant(n.const("w3", w(20, 6)), "w3q", 2.0 ** -4, 4)
    n.quant(n.op("MatMul", [f, w3], "h"), "y", 2.0 ** -3, 8)
    return n.model({"x": [1, 3, 8, 8]}, "y", [1, 6])


@pytest.mark.parametrize("input_too", [False, True], ids=["nchw-input", "nhwc-input"])
@pytest.mark.parametrize("build", [float_cnn, quantized_cnn], ids=["float", "qonnx"])
def test_qonnx_channels_last_models_compute_as_qonnx_does(build, input_too):
    original = build()
    proto = channels_last(original, input_too)
    domains = {n.domain for n in proto.graph.node}
    assert CHANNELS_LAST in domains  # the transformation did its work
    quantized = build is quantized_cnn
    graph = from_onnx(proto, precision=None if quantized else "float32")
    # no transpose anywhere: the NHWC tensors between the channels-last ops are hlsfuse's own layout
    assert "transpose" not in ops(graph)
    assert graph.inputs[0].source_axes == (None if input_too else (0, 2, 3, 1))
    assert graph.inputs[0].type.shape == (1, 8, 8, 3)
    for frame in frames(original, 3, seed=5):
        if input_too:
            frame = {"x": frame["x"].transpose(0, 2, 3, 1)}
        want = qonnx_exec(proto, frame)["y"]
        got = reference.run(graph, to_graph_layout(graph, frame))["y"]
        if quantized:
            assert np.array_equal(got, want)
        else:
            assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want))))
    if not quantized:  # the channels-last BatchNormalization folded into its channels-last Conv
        assert "scale" not in ops(graph)


def test_no_transpose_stage_for_an_nhwc_input_of_a_channels_last_model():
    graph = from_onnx(channels_last(quantized_cnn(), input_too=True))
    assert "transpose" not in stage_ops(graph)


# --------------------------------------------------------------------------
# Keras / tf2onnx and hls4ml channels-last exports
# --------------------------------------------------------------------------


def keras_cnn(hls4ml_style: bool) -> onnx.ModelProto:
    """A Keras model through tf2onnx: an NHWC input, a Transpose into each NCHW Conv and back, ending in
    Flatten of NHWC and a Dense (MatMul + Add); hls4ml-style, each op between convs is NHWC too."""
    to_nchw, to_nhwc = {"perm": [0, 3, 1, 2]}, {"perm": [0, 2, 3, 1]}
    nodes = [
        node("Transpose", ["x"], ["xt"], **to_nchw),
        node("Conv", ["xt", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Transpose", ["c1"], ["c1t"], **to_nhwc),
        node("Relu", ["c1t"], ["r1"]),
    ]
    if hls4ml_style:
        nodes += [node("Transpose", ["r1"], ["r1t"], **to_nchw),
                  node("MaxPool", ["r1t"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
                  node("Transpose", ["p1"], ["p1t"], **to_nhwc)]
        flat, size = "p1t", 4 * 4 * 4
    else:
        flat, size = "r1", 8 * 8 * 4
    nodes += [node("Flatten", [flat], ["f"]), node("MatMul", ["f", "w2"], ["m"]), node("Add", ["m", "b2"], ["y"])]
    inits = {"w1": w(4, 3, 3, 3), "b1": w(4), "w2": w(size, 5, scale=0.1), "b2": w(5)}
    return model(nodes, {"x": [1, 8, 8, 3]}, inits)


@pytest.mark.parametrize("hls4ml_style", [False, True], ids=["tf2onnx", "hls4ml"])
def test_an_nhwc_input_through_a_transpose_into_a_conv_is_taken_as_it_is(hls4ml_style):
    proto = keras_cnn(hls4ml_style)
    graph, diffs, _ = errors(proto)
    assert max(diffs.values()) < 1e-5
    assert graph.inputs[0].type.shape == (1, 8, 8, 3) and graph.inputs[0].source_axes is None
    assert "transpose" not in ops(graph)
    fixed = from_onnx(proto)
    assert "transpose" not in stage_ops(fixed)
    x = feeds(proto)["x"]
    assert np.array_equal(to_graph_layout(fixed, {"x": x})["x"], x)  # the port streams the NHWC array as it is


def test_an_nchw_input_into_a_conv_is_held_nhwc_as_before():
    proto = model([node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1])], {"x": [1, 3, 4, 5]}, {"w": w(2, 3, 1, 1)})
    graph = from_onnx(proto)
    assert graph.inputs[0].type.shape == (1, 4, 5, 3) and graph.inputs[0].source_axes == (0, 2, 3, 1)


# the layouts whose ONNX shape is the same as the port's: only the recorded source_axes tells them apart
CUBES = {
    "nchw": model([node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1])], {"x": [1, 4, 4, 4]}, {"w": w(2, 4, 1, 1)}),
    "nhwc": model([node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
                   node("Conv", ["t", "w"], ["y"], kernel_shape=[1, 1])], {"x": [1, 4, 4, 4]}, {"w": w(2, 4, 1, 1)}),
    "ncl": model([node("Conv", ["x", "w"], ["y"], kernel_shape=[1])], {"x": [1, 3, 6]}, {"w": w(2, 3, 1)}),
    "plain": model([node("Relu", ["x"], ["y"])], {"x": [1, 2, 3, 4]}),
}


@pytest.mark.parametrize("name", sorted(CUBES))
def test_arrays_convert_both_ways_with_the_recorded_layout_also_after_json(name):
    proto = CUBES[name]
    graph, diffs, _ = errors(proto)  # to_graph_layout feeds the reference the model's arrays correctly
    assert max(diffs.values()) < 1e-5
    x = feeds(proto, seed=3)["x"]
    held = to_graph_layout(graph, {"x": x})["x"]
    assert np.array_equal(to_onnx_layout(graph, {"x": held})["x"], x)
    saved = graph_from_dict(graph_to_dict(graph))  # a compiled design's graph.json
    assert saved.inputs == graph.inputs
    assert np.array_equal(to_graph_layout(saved, {"x": x})["x"], held)
    moves = {"nchw": lambda a: a.transpose(0, 2, 3, 1), "ncl": lambda a: a.transpose(0, 2, 1)[:, None]}
    assert np.array_equal(held, moves.get(name, lambda a: a)(x))


def test_csim_onnx_layout_rebuilds_the_layout_from_graph_json(tmp_path):
    from hlsfuse.graph_json import load_graph

    path = tmp_path / "m.onnx"
    onnx.save(CUBES["nchw"], path)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compile", str(path), "-o", str(tmp_path / "out"), "--target", "hls"]) == 0
    assert load_graph(tmp_path / "out" / "graph.json").inputs[0].source_axes == (0, 2, 3, 1)


def test_source_axes_that_do_not_fit_the_shape_are_one_line_errors():
    with pytest.raises(HlsfuseError) as info:
        Input("x", TensorType((1, 4, 4, 3), FLOAT32), (0, 2, 2, 1))
    assert str(info.value) == ("input 'x': source_axes [0, 2, 2, 1] must give, per axis of the shape [1, 4, 4, 3], "
                               "a distinct axis 0..k-1 of the source model's input, or null for an axis of size 1")
    data = graph_to_dict(from_onnx(CUBES["nchw"], precision="float32"))
    data["inputs"][0]["source_axes"] = "nhwc"
    with pytest.raises(HlsfuseError, match=r"inputs\[0\]\.source_axes must be a list of axis numbers or nulls"):
        graph_from_dict(data)


# --------------------------------------------------------------------------
# BatchNormalization in every rank, folded into the layer before it
# --------------------------------------------------------------------------

BN_MODELS = {
    "rank2-input": ([bn("x", "y", "n")], {"x": [3, 6]}, bn_params("n", 6), 13),
    "rank2-matmul": ([node("MatMul", ["x", "w"], ["h"]), bn("h", "y", "n")], {"x": [2, 5]},
                     {"w": w(5, 6), **bn_params("n", 6)}, 13),
    "rank2-matmul-add": ([node("MatMul", ["x", "w"], ["h"]), node("Add", ["b", "h"], ["hb"]), bn("hb", "y", "n")],
                         {"x": [2, 5]}, {"w": w(5, 6), "b": w(6), **bn_params("n", 6)}, 13),
    "rank2-gemm": ([node("Gemm", ["x", "w", "b"], ["h"], transB=1), bn("h", "y", "n")], {"x": [1, 5]},
                   {"w": w(6, 5), "b": w(6), **bn_params("n", 6)}, 13),
    "rank3-input": ([bn("x", "y", "n")], {"x": [1, 6, 7]}, bn_params("n", 6), 13),
    "rank3-conv1d": ([node("Conv", ["x", "w"], ["h"], pads=[1, 1]), bn("h", "y", "n")], {"x": [1, 3, 7]},
                     {"w": w(6, 3, 3), **bn_params("n", 6)}, 13),
    "rank4-conv": ([node("Conv", ["x", "w", "b"], ["h"]), bn("h", "y", "n")], {"x": [1, 3, 5, 5]},
                   {"w": w(6, 3, 3, 3), "b": w(6), **bn_params("n", 6)}, 13),
    "opset7-spatial1": ([bn("x", "y", "n", spatial=1)], {"x": [1, 6, 3, 4]}, bn_params("n", 6), 7),
    "opset8-spatial0": ([bn("x", "y", "n", spatial=0)], {"x": [2, 6, 3]}, bn_params("n", (6, 3)), 8),
    "opset7-spatial0": ([bn("x", "y", "n", spatial=0)], {"x": [1, 6, 3, 4]}, bn_params("n", (6, 3, 4)), 7),
}
FOLDED = ("rank2-matmul", "rank2-matmul-add", "rank2-gemm", "rank3-conv1d", "rank4-conv")


@pytest.mark.parametrize("name", sorted(BN_MODELS))
def test_batchnorm_matches_onnxruntime_in_every_rank(name):
    nodes, inputs, inits, opset = BN_MODELS[name]
    graph, diffs, _ = errors(model(nodes, inputs, inits, opset=opset))
    assert max(diffs.values()) < 1e-5
    if name in FOLDED:
        assert "scale" not in ops(graph) and "mul" not in ops(graph)


def mlp(with_bn: bool, kind: str) -> onnx.ModelProto:
    """Three Linear(-BatchNorm1d)-ReLU layers as PyTorch exports them (Gemm), or as Keras writes Dense
    (MatMul + Add), or Linear(bias=False) (MatMul)."""
    nodes, inits, x, size = [], {}, "x", 16
    for i in range(3):
        h, out = f"h{i}", f"r{i}"
        if kind == "gemm":
            nodes.append(node("Gemm", [x, f"w{i}", f"b{i}"], [h], transB=1))
            inits.update({f"w{i}": w(8, size), f"b{i}": w(8)})
        else:
            nodes.append(node("MatMul", [x, f"w{i}"], [h if kind == "matmul" else f"m{i}"]))
            inits[f"w{i}"] = w(size, 8)
            if kind == "matmul-add":
                nodes.append(node("Add", [f"m{i}", f"b{i}"], [h]))
                inits[f"b{i}"] = w(8)
        if with_bn:
            nodes.append(bn(h, f"n{i}", f"bn{i}"))
            inits.update(bn_params(f"bn{i}", 8))
            h = f"n{i}"
        nodes.append(node("Relu", [h], [out]))
        x, size = out, 8
    return model(nodes, {"x": [1, 16]}, inits)


@pytest.mark.parametrize("kind", ["gemm", "matmul-add", "matmul"])
def test_batchnorm1d_folds_into_the_dense_layer_before_it(kind):
    with_bn, without = mlp(True, kind), mlp(False, kind)
    graph, diffs, _ = errors(with_bn, precision="fixed<16,6>")
    assert max(diffs.values()) < 0.05
    plain = ops(from_onnx(without, precision="fixed<16,6>"))
    assert ops(graph) == (plain if kind != "matmul" else [op for d in plain for op in ([d, "bias_add"] if d == "dense"
                                                                                     else [d])])
    assert len(stage_ops(graph)) == len(stage_ops(from_onnx(without))) == 3


def test_a_matmul_whose_output_has_rank_3_is_not_folded():
    # BN normalises axis 1, which is not the weights' columns here
    proto = model([node("MatMul", ["x", "w"], ["h"]), bn("h", "y", "n")], {"x": [1, 6, 5]},
                  {"w": w(5, 4), **bn_params("n", 6)})
    graph, diffs, _ = errors(proto)
    assert max(diffs.values()) < 1e-5 and "scale" in ops(graph)
