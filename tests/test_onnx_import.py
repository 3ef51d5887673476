"""Reading ONNX files: errors, old opsets, layout decisions, batch-norm folding and naming."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from onnx_build import errors, feeds, hls_run, model, node, ort_run, weights  # noqa: E402
from onnx_zoo import cnn, conv1d, residual  # noqa: E402

from hlsfuse import HlsfuseError, from_onnx  # noqa: E402
from hlsfuse.frontend.onnx import read_onnx, supported_ops, to_graph_layout  # noqa: E402

I64 = np.int64
RNG = np.random.default_rng(7)


def ops(graph):
    return [n.op for n in graph.nodes]


# --------------------------------------------------------------------------
# Files that are not models
# --------------------------------------------------------------------------


def test_truncated_file_gives_a_one_line_error(tmp_path):
    data = residual().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(HlsfuseError) as info:
        from_onnx(path)
    assert str(info.value) == f"{path}: not a valid ONNX file (truncated, or not an ONNX protobuf)"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a valid ONNX model (it has no graph; is the file empty or truncated?)"),
        (b"this is not a model at all", "not a valid ONNX file (truncated, or not an ONNX protobuf)"),
    ],
)
def test_files_that_are_not_models(tmp_path, content, message):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(HlsfuseError, match="^" + str(path).replace(".", r"\.") + ": ") as info:
        from_onnx(path)
    assert str(info.value) == f"{path}: {message}"
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(HlsfuseError) as info:
        from_onnx(tmp_path / "nope.onnx")
    assert str(info.value) == f"{tmp_path / 'nope.onnx'}: cannot read the file: No such file or directory"


def test_model_the_checker_rejects():
    proto = model([node("Relu", ["x"], ["y"])], {"x": (1, 4)})
    proto.graph.node[0].input[0] = "missing"
    with pytest.raises(HlsfuseError, match=r"^ONNX model: not a valid ONNX model: .*missing"):
        from_onnx(proto)


def test_opset_newer_than_supported():
    proto = model([node("Relu", ["x"], ["y"])], {"x": (1, 4)}, opset=21)
    proto.opset_import[0].version = 22
    proto.ir_version = 10
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    assert str(info.value) == (
        "ONNX model: opset 22 is not supported (hlsfuse reads opsets 1 to 21; export with opset_version=21 or lower)"
    )


# --------------------------------------------------------------------------
# Unsupported ops, attributes and dynamic shapes: one error listing them all
# --------------------------------------------------------------------------


def test_one_error_lists_every_offending_node():
    proto = model(
        [
            node("Relu", ["x"], ["r"]),
            node("Resize", ["r", "", "scales"], ["up"], mode="linear"),
            node("Conv", ["up", "w"], ["c"], auto_pad="SAME_MIDDLE"),
            node("Reshape", ["c", "dyn"], ["rs"]),
            node("Pad", ["x", "pads"], ["pd"], mode="wrap"),
            node("LpNormalization", ["pd"], ["n"]),
            node("Relu", ["rs"], ["y"]),
        ],
        {"x": (1, 3, 4, 4), "dyn": (4,)},
        {"scales": np.array([1, 1, 2, 2], np.float32), "w": weights(RNG, 3, 3, 1, 1),
         "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], I64)},
        outputs=["y", "n"],
        output_shapes={"y": [1, 3, 8, 8], "n": [1, 3, 6, 6]},
    )
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    text = str(info.value)
    assert text.startswith("ONNX model: cannot import the model (5 problems): ")
    assert ("node 'up' (Resize): attribute 'mode' is 'linear'; only 'nearest' is supported (interpolation is not); "
            in text)
    assert ("node 'c' (Conv): attribute 'auto_pad' is 'SAME_MIDDLE', expected one of NOTSET, SAME_UPPER, "
            "SAME_LOWER, VALID; ") in text
    assert "node 'rs' (Reshape): input 'shape' must be a constant (dynamic shapes are not supported); " in text
    assert "node 'pd' (Pad): attribute 'mode' is 'wrap', expected one of constant, reflect, edge; " in text
    assert "node 'n' (LpNormalization): unsupported op. Supported ops: Abs, Add, AveragePool, " in text
    assert "; on constants only: And, Ceil, Constant, ConstantOfShape, " in text
    assert "\n" not in text


def test_dynamic_input_dims_are_listed_with_later_problems():
    # a symbolic leading dim is a batch (frames: tests/test_onnx_frames.py); another one is a dynamic shape
    proto = model([node("Relu", ["x"], ["r"]), node("Resize", ["r", "", "s"], ["y"], mode="cubic")],
                  {"x": (1, "C", 4, 4)},
                  {"s": np.array([1, 1, 2, 2], np.float32)}, output_shapes={"y": [1, "C", 8, 8]})
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    text = str(info.value)
    assert "(2 problems)" in text
    assert "input 'x' has a dynamic shape (dim 1 is 'C'); give every dim a fixed size" in text
    assert "node 'y' (Resize): attribute 'mode' is 'cubic'; only 'nearest' is supported" in text


def test_attribute_problems_name_the_alternatives():
    cases = [
        (node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2]),
         "node 'y' (MaxPool): attribute 'dilations' [2, 2] must be all 1 for pools"),
        (node("Div", ["x", "x"], ["y"]),
         "node 'y' (Div): the divisor must be a constant (division by a computed tensor is not supported)"),
        (node("Conv", ["x", "x"], ["y"]),
         "node 'y' (Conv): input 'W' must be a constant (computed values are not supported here)"),
        (node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3, 3]),
         "node 'y' (AveragePool): pooling on a 4-dim input is not supported (1-D [N,C,L] and 2-D [N,C,H,W] are)"),
    ]
    for op_node, message in cases:
        proto = model([op_node], {"x": (1, 3, 4, 4)}, output_shapes={"y": [1, 3, 4, 4]})
        with pytest.raises(HlsfuseError) as info:
            from_onnx(proto)
        assert str(info.value) == f"ONNX model: cannot import the model (1 problem): {message}"


@pytest.mark.parametrize("c_shape, c_value", [((2, 3, 4), None), ((1, 3, 4), None), ((5,), None), ((4, 4), 0.5)])
def test_gemm_c_must_broadcast_to_the_output(c_shape, c_value):
    """ONNX broadcasts C one way, to the output [M, N]: a computed or constant C that would grow the result,
    or does not broadcast at all, is refused (other broadcastable shapes import, see test_onnx_ops)."""
    inits = {} if c_value is None else {"c": np.full(c_shape, c_value, np.float32)}
    inputs = {"a": (3, 6), "b": (6, 4), **({"c": c_shape} if c_value is None else {})}
    shape = list(np.broadcast_shapes(c_shape, (3, 4))) if len(c_shape) > 2 else [3, 4]
    proto = model([node("Gemm", ["a", "b", "c"], ["y"])], inputs, inits, output_shapes={"y": shape})
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    assert str(info.value) == ("ONNX model: cannot import the model (1 problem): node 'y' (Gemm): input 'C' has "
                               f"shape {list(c_shape)}, expected one that broadcasts to the output [3, 4]")


# --------------------------------------------------------------------------
# Old opsets
# --------------------------------------------------------------------------


def _legacy_net(opset):
    """Conv - BN - Add (per channel) - PRelu - Reshape - Gemm; opsets below 7 use the legacy
    broadcast attributes and 1-D per-channel operands, opset 5 BN's consumed_inputs."""
    rng = np.random.default_rng(3)
    inits = {"w": weights(rng, 4, 3, 3, 3), "s": rng.random(4) + 0.5, "b": weights(rng, 4), "m": weights(rng, 4),
             "v": rng.random(4) + 0.5, "shp": np.array([1, -1], I64), "gw": weights(rng, 5, 256, scale=0.1),
             "gb": weights(rng, 5)}
    channel, slope = weights(rng, 4), rng.random(4) * 0.5
    old = opset < 7
    bn_attrs = {"is_test": 1, "consumed_inputs": [0, 0, 0, 1, 1]} if opset < 6 else {"is_test": 1} if old else {}
    inits["ab"], inits["sl"] = (channel, slope) if old else (channel.reshape(4, 1, 1), slope.reshape(4, 1, 1))
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], **bn_attrs),
        node("Add", ["bn", "ab"], ["ad"], **({"broadcast": 1, "axis": 1} if old else {})),
        node("PRelu", ["ad", "sl"], ["rl"]),
        node("Reshape", ["rl", "shp"], ["rs"]),
        node("Gemm", ["rs", "gw", "gb"], ["y"], transB=1, **({"broadcast": 1} if old else {})),
    ]
    return model(nodes, {"x": (1, 3, 8, 8)}, inits, opset=opset, output_shapes={"y": [1, 5]})


@pytest.mark.parametrize("opset", [5, 6])
def test_old_opsets_are_read_like_their_opset_13_equivalent(opset):
    reference = _legacy_net(13)
    inputs = feeds(reference)
    graph = from_onnx(_legacy_net(opset), precision="float32")
    assert np.max(np.abs(hls_run(graph, inputs)["y"] - ort_run(reference, inputs)["y"])) <= 1e-5


def test_opset_5_is_upgraded_with_the_version_converter():
    decoded = read_onnx(_legacy_net(5))
    assert decoded.opset == 6
    bn = next(n for n in decoded.nodes if n.op == "BatchNormalization")
    assert "consumed_inputs" not in bn.attrs


# --------------------------------------------------------------------------
# Layout: NCHW in, NHWC inside, the declared layout out
# --------------------------------------------------------------------------


def test_image_inputs_become_nhwc_and_outputs_keep_their_layout():
    graph = from_onnx(residual(), precision="float32")
    assert graph.inputs[0].name == "input" and graph.inputs[0].type.shape == (1, 6, 6, 8)
    assert ops(graph)[-1] == "transpose" and graph.outputs == ("output",)
    assert graph.types["output"].shape == (1, 8, 6, 6)
    assert ops(graph).count("transpose") == 1  # only the one back to NCHW at the output


def test_1d_convolutions_run_as_2d_with_unit_height():
    graph = from_onnx(conv1d(), precision="float32")
    assert graph.inputs[0].type.shape == (1, 1, 32, 4)
    assert "transpose" not in ops(graph)
    conv = graph.node(next(n.name for n in graph.nodes if n.op == "conv2d"))
    assert graph.sigs[conv.name]["padding"] == (0, 2, 0, 2)


def test_flatten_into_gemm_permutes_the_weights_instead_of_the_activations():
    graph = from_onnx(cnn(), precision="float32")
    assert "transpose" not in ops(graph)
    _, diffs, _ = errors(cnn(), graph=graph)
    assert max(diffs.values()) <= 1e-5


def test_flatten_to_an_output_restores_the_onnx_element_order():
    # the pool's result is held NHWC; the flattened output is in NCHW element order
    nodes = [node("MaxPool", ["x"], ["r"], kernel_shape=[1, 1]), node("Flatten", ["r"], ["y"])]
    proto = model(nodes, {"x": (1, 3, 2, 2)})
    graph, diffs, _ = errors(proto)
    assert ops(graph) == ["max_pool2d", "transpose", "reshape"]
    assert max(diffs.values()) == 0.0


def test_flatten_of_a_1x1_image_is_a_plain_reshape():
    proto = model([node("GlobalAveragePool", ["x"], ["g"]), node("Flatten", ["g"], ["y"])], {"x": (1, 3, 4, 4)})
    graph = from_onnx(proto, precision="float32")
    assert ops(graph) == ["global_avg_pool", "reshape"]


def test_transposes_cost_nothing_until_the_output():
    # NCHW -> NHWC in ONNX is exactly hlsfuse's own layout: no node at all, the output is a reshape
    nodes = [node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]), node("Softmax", ["t"], ["y"])]
    proto = model(nodes, {"x": (1, 3, 4, 4)})
    graph, diffs, _ = errors(proto)
    assert ops(graph) == ["softmax"]
    assert max(diffs.values()) <= 1e-6


def test_to_graph_layout():
    graph = from_onnx(conv1d(), precision="float32")
    x = np.arange(4 * 32, dtype=np.float32).reshape(1, 4, 32)
    assert to_graph_layout(graph, {"input": x})["input"].shape == (1, 1, 32, 4)
    assert to_graph_layout(graph, {"input": x})["input"][0, 0, 5, 2] == x[0, 2, 5]
    with pytest.raises(HlsfuseError) as info:
        to_graph_layout(graph, {"input": x[:, :, :16]})
    assert str(info.value) == ("input 'input': ONNX-layout value has shape [1, 4, 16], which does not match the "
                               "graph's [1, 1, 32, 4] (expected the model's ONNX input shape)")


# --------------------------------------------------------------------------
# Batch norm folding, naming
# --------------------------------------------------------------------------


def test_batchnorm_folds_into_the_conv_before_it():
    graph = from_onnx(residual(), precision="float32")
    assert "scale" not in ops(graph)
    assert {c.name for c in graph.constants} == {"conv1.weight_bn", "conv2.weight_bn", "conv1.bias_bn", "conv2.bias_bn"}


def test_batchnorm_stays_when_the_conv_output_is_read_elsewhere():
    inits = {"w": weights(RNG, 3, 3, 1, 1), "g": weights(RNG, 3), "b": weights(RNG, 3), "m": weights(RNG, 3),
             "v": np.abs(weights(RNG, 3)) + 0.5}
    proto = model([node("Conv", ["x", "w"], ["c"]), node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"]),
                   node("Add", ["bn", "c"], ["y"])], {"x": (1, 3, 4, 4)}, inits)
    graph, diffs, _ = errors(proto)
    assert ops(graph)[:3] == ["conv2d", "scale", "bias_add"]
    assert max(diffs.values()) <= 1e-5


def test_nodes_are_named_after_onnx_tensors():
    graph = from_onnx(cnn(), precision="float32")
    names = {n.name for n in graph.nodes}
    assert {"r1", "p1", "r2", "p2", "r3", "output"} <= names
    assert "f1.dense" in names and "f1" in names  # Gemm = dense + bias_add


def test_docs_list_exactly_the_supported_ops():
    text = (Path(__file__).resolve().parents[1] / "docs" / "onnx.md").read_text()
    text = text.split("\n## Supported ops\n")[1].split("\n## ")[0]  # other sections have tables of their own
    table = re.findall(r"^\| `(\w+)` \|", text, re.M)
    computed, constant_only = supported_ops()
    assert table == computed
    listed = re.search(r"Ops evaluated only on constants[^:]*: (.*?)\.\n", text, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == constant_only
