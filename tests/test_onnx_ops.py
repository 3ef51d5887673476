"""Every supported ONNX op, one micro model each: hlsfuse's float32 import matches onnxruntime.

Each case is a tiny model (usually on an NCHW image, so that the channel-last layout and
the final transpose back to the declared layout are exercised too). ``test_every_op_has_a_case``
keeps the list complete as ops are added.
"""

from __future__ import annotations

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from onnx_build import errors, model, node, weights  # noqa: E402
from onnx_more_cases import MORE_CASES  # noqa: E402
from onnx_norm_cases import NORM_CASES  # noqa: E402
from onnx_tf_cases import TF_CASES  # noqa: E402

from hlsfuse.frontend.onnx import supported_ops  # noqa: E402

RNG = np.random.default_rng(1234)
IMG = {"x": (1, 3, 5, 6)}
I64 = np.int64


def unary(op, **attrs):
    return lambda: model([node(op, ["x"], ["y"], **attrs)], IMG)


def const(name, value):
    return node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value), name))


CASES = {
    # ------------------------------------------------------------ elementwise
    "Relu": unary("Relu"),
    "LeakyRelu": unary("LeakyRelu", alpha=0.2),
    "Sigmoid": unary("Sigmoid"),
    "Tanh": unary("Tanh"),
    "Exp": unary("Exp"),
    "Abs": unary("Abs"),
    "Neg": unary("Neg"),
    "Clip": lambda: model([node("Clip", ["x", "lo", "hi"], ["y"])], IMG,
                          {"lo": np.float32(-0.5), "hi": np.float32(0.7)}),
    "Clip-max-only": lambda: model([node("Clip", ["x", "", "hi"], ["y"])], IMG, {"hi": np.float32(0.7)}),
    "Clip-opset6": lambda: model([node("Clip", ["x"], ["y"], min=0.0, max=6.0)], IMG, opset=6),
    "PRelu-scalar": lambda: model([node("PRelu", ["x", "s"], ["y"])], IMG, {"s": np.array([0.25], np.float32)}),
    "PRelu-channel": lambda: model([node("PRelu", ["x", "s"], ["y"])], IMG, {"s": weights(RNG, 3, 1, 1)}),
    "Identity": lambda: model([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"])], IMG),
    "Dropout": lambda: model([node("Relu", ["x"], ["r"]), node("Dropout", ["r"], ["y"], ratio=0.3)], IMG, opset=10),
    "Dropout-opset13": lambda: model([node("Relu", ["x"], ["r"]), node("Dropout", ["r", "p"], ["y"])], IMG,
                                     {"p": np.float32(0.5)}),
    "Cast": lambda: model([node("Cast", ["x"], ["c"], to=1), node("Relu", ["c"], ["y"])], IMG),
    "Add-bias": lambda: model([node("Add", ["x", "b"], ["y"])], IMG, {"b": weights(RNG, 3, 1, 1)}),
    "Add-full": lambda: model([node("Add", ["b", "x"], ["y"])], IMG, {"b": weights(RNG, 5, 6)}),
    "Add-tensors": lambda: model([node("Relu", ["x"], ["r"]), node("Add", ["x", "r"], ["y"])], IMG),
    "Add-lower-rank": lambda: model([node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=0),
                                     node("Add", ["x", "m"], ["y"])], IMG),
    "Sub-const": lambda: model([node("Sub", ["x", "b"], ["y"])], IMG, {"b": weights(RNG, 3, 1, 1)}),
    "Sub-from-const": lambda: model([node("Sub", ["b", "x"], ["y"])], IMG, {"b": weights(RNG, 1, 6)}),
    "Sub-tensors": lambda: model([node("Sigmoid", ["x"], ["s"]), node("Sub", ["s", "x"], ["y"])], IMG),
    "Mul-channel": lambda: model([node("Mul", ["x", "s"], ["y"])], IMG, {"s": weights(RNG, 3, 1, 1)}),
    "Mul-scalar": lambda: model([node("Mul", ["x", "s"], ["y"])], IMG, {"s": np.float32(1.5)}),
    "Mul-tensors": lambda: model([node("GlobalAveragePool", ["x"], ["g"]), node("Sigmoid", ["g"], ["s"]),
                                  node("Mul", ["x", "s"], ["y"])], IMG),
    "Div": lambda: model([node("Div", ["x", "d"], ["y"])], IMG,
                         {"d": np.array([2.0, -4.0, 0.5], np.float32).reshape(3, 1, 1)}),
    "Sum": lambda: model([node("Relu", ["x"], ["r"]), node("Sum", ["x", "r", "b"], ["y"])], IMG,
                         {"b": weights(RNG, 3, 1, 1)}),
    "Max": lambda: model([node("Neg", ["x"], ["n"]), node("Max", ["x", "n"], ["y"])], IMG),
    "Min": lambda: model([node("Neg", ["x"], ["n"]), node("Min", ["x", "n", "c"], ["y"])], IMG,
                         {"c": np.float32(0.3)}),
    # ---------------------------------------------------------- data movement
    "Transpose": lambda: model([node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]), node("Relu", ["t"], ["y"])], IMG),
    "Transpose-2d": lambda: model([node("Transpose", ["x"], ["y"])], {"x": (3, 4)}),
    "Flatten-to-Gemm": lambda: model([node("Relu", ["x"], ["r"]), node("Flatten", ["r"], ["f"]),
                                      node("Gemm", ["f", "w", "b"], ["y"], transB=1)], IMG,
                                     {"w": weights(RNG, 4, 90), "b": weights(RNG, 4)}),
    "Flatten-out": lambda: model([node("Flatten", ["x"], ["y"], axis=2)], IMG),
    "Reshape": lambda: model([node("Reshape", ["x", "s"], ["y"])], IMG, {"s": np.array([0, -1, 3], I64)}),
    "Reshape-shape-subgraph": lambda: model([
        node("Shape", ["x"], ["sh"]), const("i0", np.array(0, I64)),
        node("Gather", ["sh", "i0"], ["n"], axis=0), const("m1", np.array([-1], I64)),
        node("Unsqueeze", ["n", "ax"], ["n1"]), node("Concat", ["n1", "m1"], ["s"], axis=0),
        node("Reshape", ["x", "s"], ["f"]), node("MatMul", ["f", "w"], ["y"])], IMG,
        {"ax": np.array([0], I64), "w": weights(RNG, 90, 5)}),
    "Squeeze": lambda: model([node("GlobalAveragePool", ["x"], ["g"]), node("Squeeze", ["g", "ax"], ["y"])], IMG,
                             {"ax": np.array([2, 3], I64)}),
    "Squeeze-opset11": lambda: model([node("GlobalMaxPool", ["x"], ["g"]), node("Squeeze", ["g"], ["y"], axes=[3])],
                                     IMG, opset=11),
    "Unsqueeze": lambda: model([node("Unsqueeze", ["x", "ax"], ["y"])], IMG, {"ax": np.array([0, -1], I64)}),
    "Unsqueeze-opset11": lambda: model([node("Unsqueeze", ["x"], ["y"], axes=[2])], {"x": (2, 3)}, opset=11),
    "Concat-channels": lambda: model([node("Relu", ["x"], ["r"]), node("Concat", ["x", "r", "c"], ["y"], axis=1)], IMG,
                                     {"c": weights(RNG, 1, 2, 5, 6)}),
    "Concat-width": lambda: model([node("Neg", ["x"], ["n"]), node("Concat", ["x", "n"], ["y"], axis=-1)], IMG),
    "Slice": lambda: model([node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], IMG,
                           {"st": np.array([1, -1], I64), "en": np.array([3, -100], I64),
                            "ax": np.array([1, 3], I64), "sp": np.array([1, -2], I64)}),
    "Slice-opset9": lambda: model([node("Slice", ["x"], ["y"], starts=[1, 0], ends=[1000, 3], axes=[2, 1])], IMG,
                                  opset=9),
    "Pad": lambda: model([node("Pad", ["x", "p", "v"], ["y"])], IMG,
                         {"p": np.array([0, 1, 2, 0, 0, 0, 1, 3], I64), "v": np.float32(0.5)}),
    "Pad-opset2": lambda: model([node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=-1.0)], IMG, opset=7),
    "Pad-reflect": lambda: model([node("Pad", ["x", "p"], ["y"], mode="reflect")], IMG,
                                 {"p": np.array([0, 1, 2, 3, 0, 2, 4, 1], I64)}),
    "Pad-edge": lambda: model([node("Relu", ["x"], ["r"]), node("Pad", ["r", "p"], ["y"], mode="edge")], IMG,
                              {"p": np.array([0, 0, 3, 0, 0, 1, 1, 5], I64)}),
    "Pad-edge-axes": lambda: model([node("Pad", ["x", "p", "", "ax"], ["y"], mode="edge")], IMG,
                                   {"p": np.array([2, 0, 1, 3], I64), "ax": np.array([-1, 1], I64)}, opset=18),
    "Pad-reflect-opset2": lambda: model([node("Pad", ["x"], ["y"], mode="reflect", pads=[0, 0, 2, 1, 0, 0, 1, 2])],
                                        IMG, opset=7),
    "Pad-reflect-2d": lambda: model([node("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": (3, 4)},
                                    {"p": np.array([2, 1, 1, 3], I64)}),
    # ------------------------------------------------------------------ conv
    "Conv": lambda: model([node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 2], strides=[2, 1])], IMG,
                          {"w": weights(RNG, 4, 3, 3, 3), "b": weights(RNG, 4)}),
    "Conv-groups-dilation": lambda: model([node("Conv", ["x", "w"], ["y"], group=3, dilations=[2, 1],
                                                pads=[2, 1, 2, 1])],
                                          {"x": (1, 6, 7, 5)}, {"w": weights(RNG, 9, 2, 3, 3)}),
    "Conv-depthwise": lambda: model([node("Conv", ["x", "w", "b"], ["y"], group=3, kernel_shape=[3, 3], pads=[1] * 4)],
                                    IMG, {"w": weights(RNG, 3, 1, 3, 3), "b": weights(RNG, 3)}),
    "Conv-same-upper": lambda: model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], IMG,
                                     {"w": weights(RNG, 2, 3, 4, 4)}),
    "Conv-same-lower": lambda: model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER")], IMG,
                                     {"w": weights(RNG, 2, 3, 2, 4)}),
    "Conv-valid": lambda: model([node("Conv", ["x", "w"], ["y"], auto_pad="VALID")], IMG,
                                {"w": weights(RNG, 2, 3, 2, 2)}),
    "Conv-1d": lambda: model([node("Conv", ["x", "w", "b"], ["y"], pads=[2, 1], strides=[2])], {"x": (1, 3, 11)},
                             {"w": weights(RNG, 4, 3, 4), "b": weights(RNG, 4)}),
    "MaxPool": lambda: model([node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
                             IMG),
    "MaxPool-ceil": lambda: model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)],
                                  {"x": (1, 2, 5, 7)}),
    "MaxPool-1d": lambda: model([node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2])], {"x": (1, 3, 9)}),
    "AveragePool": lambda: model([node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], pads=[1, 0, 1, 1])], IMG),
    "AveragePool-include-pad": lambda: model([node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                                   count_include_pad=1)], IMG),
    "AveragePool-ceil": lambda: model([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                                            ceil_mode=1)], {"x": (1, 2, 5, 7)}),
    "GlobalAveragePool": lambda: model([node("GlobalAveragePool", ["x"], ["y"])], IMG),
    "GlobalAveragePool-1d": lambda: model([node("GlobalAveragePool", ["x"], ["y"])], {"x": (1, 4, 9)}),
    "GlobalMaxPool": lambda: model([node("GlobalMaxPool", ["x"], ["y"])], IMG),
    # ---------------------------------------------------------------- dense
    "Gemm": lambda: model([node("Gemm", ["x", "w", "c"], ["y"], transB=1)], {"x": (2, 6)},
                          {"w": weights(RNG, 4, 6), "c": weights(RNG, 4)}),
    "Gemm-alpha-beta-transA": lambda: model([node("Gemm", ["x", "w", "c"], ["y"], alpha=0.5, beta=2.0, transA=1)],
                                            {"x": (6, 2)}, {"w": weights(RNG, 6, 4), "c": weights(RNG, 2, 4)}),
    "Gemm-scalar-bias": lambda: model([node("Gemm", ["x", "w", "c"], ["y"])], {"x": (2, 6)},
                                      {"w": weights(RNG, 6, 4), "c": np.float32(0.25)}),
    "Gemm-computed-B": lambda: model([node("Relu", ["x"], ["r"]),
                                      node("Gemm", ["x", "r", "c"], ["y"], transB=1, alpha=1.5)],
                                     {"x": (3, 3)}, {"c": weights(RNG, 3)}),
    # a computed C (here a graph input or a node's output), any shape that broadcasts to [M, N], beta applied
    "Gemm-computed-C": lambda: model([node("Gemm", ["x", "w", "c"], ["y"], transB=1)], {"x": (2, 6), "c": (2, 4)},
                                     {"w": weights(RNG, 4, 6)}),
    "Gemm-computed-C-beta": lambda: model([node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
                                           node("Gemm", ["x", "w", "m"], ["y"], alpha=0.5, beta=-1.5)],
                                          {"x": (3, 6)}, {"w": weights(RNG, 6, 4)}),
    "Gemm-computed-C-row": lambda: model([node("ReduceSum", ["x", "ax"], ["r"], keepdims=0),
                                          node("Slice", ["r", "st", "en"], ["c"]),
                                          node("Gemm", ["x", "w", "c"], ["y"], beta=0.25)], {"x": (3, 6)},
                                         {"w": weights(RNG, 6, 4), "ax": np.array([0], I64),
                                          "st": np.array([0], I64), "en": np.array([4], I64)}),
    "Gemm-computed-B-and-C": lambda: model([node("Relu", ["x"], ["r"]), node("Neg", ["x"], ["c"]),
                                            node("Gemm", ["x", "r", "c"], ["y"], transA=1, beta=2.0)],
                                           {"x": (3, 3)}),
    "Gemm-computed-C-scalar": lambda: model([node("Gemm", ["x", "w", "c"], ["y"])], {"x": (2, 6), "c": ()},
                                            {"w": weights(RNG, 6, 4)}),
    "Gemm-computed-C-zero-beta": lambda: model([node("Gemm", ["x", "w", "c"], ["y"], beta=0.0)],
                                               {"x": (2, 6), "c": (2, 4)}, {"w": weights(RNG, 6, 4)}),
    "MatMul": lambda: model([node("MatMul", ["x", "w"], ["y"])], {"x": (2, 3, 6)}, {"w": weights(RNG, 6, 4)}),
    "MatMul-vector": lambda: model([node("MatMul", ["x", "w"], ["y"])], {"x": (2, 6)}, {"w": weights(RNG, 6)}),
    "MatMul-tensors": lambda: model([node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                                     node("MatMul", ["x", "t"], ["y"])], {"x": (2, 3, 4)}),
    "MatMul-computed-vector": lambda: model([node("ReduceSum", ["x", "ax"], ["v"], keepdims=0),
                                             node("MatMul", ["x", "v"], ["y"])], {"x": (3, 3)},
                                            {"ax": np.array([0], I64)}),
    # ----------------------------------------------------------- normalise
    "BatchNormalization": lambda: model([node("Relu", ["x"], ["r"]),
                                         node("BatchNormalization", ["r", "g", "b", "m", "v"], ["y"], epsilon=1e-3)],
                                        IMG, {"g": weights(RNG, 3), "b": weights(RNG, 3), "m": weights(RNG, 3),
                                              "v": np.abs(weights(RNG, 3)) + 0.5}),
    "BatchNormalization-2d": lambda: model([node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"])],
                                           {"x": (2, 3)}, {"g": weights(RNG, 3), "b": weights(RNG, 3),
                                                           "m": weights(RNG, 3), "v": np.abs(weights(RNG, 3)) + 0.5}),
    "Softmax": lambda: model([node("Softmax", ["x"], ["y"])], {"x": (2, 7)}),
    "Softmax-channels": lambda: model([node("Softmax", ["x"], ["y"], axis=1)], IMG),
    "Softmax-opset11": lambda: model([node("Softmax", ["x"], ["y"], axis=2)], IMG, opset=11),
    "ReduceSum": lambda: model([node("ReduceSum", ["x", "ax"], ["y"])], IMG, {"ax": np.array([1, 3], I64)}),
    "ReduceMean": lambda: model([node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0)], IMG),
    "ReduceMean-opset18": lambda: model([node("ReduceMean", ["x", "ax"], ["y"])], IMG, {"ax": np.array([-1], I64)},
                                        opset=18),
    "ReduceMax": lambda: model([node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)], IMG),
    # ------------------------------------------------------- constants only
    "Constant": lambda: model([const("c", weights(RNG, 3, 1, 1)), node("Add", ["x", "c"], ["y"])], IMG),
    "QuantizeLinear": lambda: model([node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                                     node("DequantizeLinear", ["q", "s", "z"], ["y"])], IMG,
                                    {"s": np.float32(2.0 ** -4), "z": np.int8(0)}),
    "ConstantOfShape": lambda: model([node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["z"],
                                      value=onnx.numpy_helper.from_array(np.array([0.5], np.float32))),
                                      node("Add", ["x", "z"], ["y"])], IMG),
    **MORE_CASES,
    **TF_CASES,
    **NORM_CASES,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_float_import_matches_onnxruntime(case):
    proto = CASES[case]()
    _, diffs, _ = errors(proto)
    assert max(diffs.values()) <= 1e-5, diffs


def test_every_op_has_a_case():
    computed, constant_only = supported_ops()
    covered = set()
    for case in CASES.values():
        covered |= {n.op_type for n in case().graph.node}
    missing = sorted(set(computed) - covered)
    assert not missing, f"supported ops without a test case: {missing}"
    assert {"Constant", "ConstantOfShape", "Shape", "Gather", "Concat", "Unsqueeze"} <= covered


# tolerance relative to the largest output magnitude: 12 fractional bits give a few LSBs
# per rounding step; softmax's exp and reciprocal tables (1024 entries over the whole
# input range) dominate its error
FIXED_CASES = {"Conv": 0.01, "Flatten-to-Gemm": 0.01, "AveragePool": 0.01, "Sum": 0.01, "PRelu-channel": 0.01,
               "Sigmoid": 0.01, "Softmax-channels": 0.05, "Pad-reflect": 0.01, "Pad-edge": 0.01,
               "Gemm-computed-C-beta": 0.01, "Gemm-computed-B-and-C": 0.01}


@pytest.mark.parametrize("case", sorted(FIXED_CASES))
def test_fixed_import_is_close_to_onnxruntime(case):
    proto = CASES[case]()
    graph, diffs, expected = errors(proto, precision="fixed<18,6,RND,SAT>")
    scale = max(1.0, max(float(np.max(np.abs(v))) for v in expected.values()))
    assert max(diffs.values()) <= FIXED_CASES[case] * scale, diffs
    assert all(not graph.types[n.name].dtype.is_float for n in graph.nodes)
