"""Small PyTorch-style models written with onnx.helper: the shapes and op sequences that
torch.onnx.export produces for an MLP, a CNN with batch norm, a residual block, a
depthwise-separable block and a 1-D convolution net."""

from __future__ import annotations

import numpy as np
from onnx_build import model, node

I64 = np.int64


def _bn(rng, prefix, c, inits):
    names = [f"{prefix}.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
    inits[names[0]] = rng.uniform(0.5, 1.5, c)
    inits[names[1]] = rng.normal(0, 0.1, c)
    inits[names[2]] = rng.normal(0, 0.1, c)
    inits[names[3]] = rng.uniform(0.5, 1.5, c)
    return names


def _conv(rng, prefix, cout, cin, k, inits, bias=True):
    inits[f"{prefix}.weight"] = rng.normal(0, 1.0 / np.sqrt(cin * np.prod(k)), (cout, cin, *k))
    if bias:
        inits[f"{prefix}.bias"] = rng.normal(0, 0.1, cout)
    return [f"{prefix}.weight"] + ([f"{prefix}.bias"] if bias else [])


def _linear(rng, prefix, cout, cin, inits):
    inits[f"{prefix}.weight"] = rng.normal(0, 1.0 / np.sqrt(cin), (cout, cin))
    inits[f"{prefix}.bias"] = rng.normal(0, 0.1, cout)
    return [f"{prefix}.weight", f"{prefix}.bias"]


def mlp(seed=0):
    rng, inits = np.random.default_rng(seed), {}
    nodes = [
        node("Gemm", ["input", *_linear(rng, "fc1", 32, 20, inits)], ["/fc1/Gemm_output_0"], transB=1),
        node("Relu", ["/fc1/Gemm_output_0"], ["/relu1/Relu_output_0"]),
        node("Gemm", ["/relu1/Relu_output_0", *_linear(rng, "fc2", 16, 32, inits)], ["/fc2/Gemm_output_0"], transB=1),
        node("Relu", ["/fc2/Gemm_output_0"], ["/relu2/Relu_output_0"]),
        node("Gemm", ["/relu2/Relu_output_0", *_linear(rng, "fc3", 5, 16, inits)], ["output"], transB=1),
    ]
    return model(nodes, {"input": (1, 20)}, inits, name="mlp")


def cnn(seed=0):
    """conv-bn-relu-pool twice, x.view(x.size(0), -1) (the Shape subgraph), then two Linear."""
    rng, inits = np.random.default_rng(seed), {}
    nodes = [
        node("Conv", ["input", *_conv(rng, "conv1", 8, 3, (3, 3), inits)], ["c1"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c1", *_bn(rng, "bn1", 8, inits)], ["b1"]),
        node("Relu", ["b1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", *_conv(rng, "conv2", 16, 8, (3, 3), inits, bias=False)], ["c2"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c2", *_bn(rng, "bn2", 16, inits)], ["b2"]),
        node("Relu", ["b2"], ["r2"]),
        node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Shape", ["p2"], ["shape"]),
        node("Gather", ["shape", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        node("Concat", ["batch1", "minus1"], ["newshape"], axis=0),
        node("Reshape", ["p2", "newshape"], ["flat"]),
        node("Gemm", ["flat", *_linear(rng, "fc1", 24, 64, inits)], ["f1"], transB=1),
        node("Relu", ["f1"], ["r3"]),
        node("Gemm", ["r3", *_linear(rng, "fc2", 10, 24, inits)], ["output"], transB=1),
    ]
    inits.update(zero=np.array(0, I64), axes0=np.array([0], I64), minus1=np.array([-1], I64))
    return model(nodes, {"input": (1, 3, 8, 8)}, inits, name="cnn")


def residual(seed=0):
    rng, inits = np.random.default_rng(seed), {}
    nodes = [
        node("Conv", ["input", *_conv(rng, "conv1", 8, 8, (3, 3), inits, bias=False)], ["c1"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c1", *_bn(rng, "bn1", 8, inits)], ["b1"]),
        node("Relu", ["b1"], ["r1"]),
        node("Conv", ["r1", *_conv(rng, "conv2", 8, 8, (3, 3), inits, bias=False)], ["c2"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c2", *_bn(rng, "bn2", 8, inits)], ["b2"]),
        node("Add", ["b2", "input"], ["sum"]),
        node("Relu", ["sum"], ["output"]),
    ]
    return model(nodes, {"input": (1, 8, 6, 6)}, inits, name="residual")


def depthwise_separable(seed=0):
    """MobileNet's block: depthwise 3x3 - BN - ReLU6 - pointwise 1x1 - BN - ReLU6."""
    rng, inits = np.random.default_rng(seed), {}
    inits.update(zero=np.float32(0.0), six=np.float32(6.0))
    nodes = [
        node("Conv", ["input", *_conv(rng, "dw", 8, 1, (3, 3), inits, bias=False)], ["c1"], pads=[1, 1, 1, 1],
             group=8, strides=[2, 2]),
        node("BatchNormalization", ["c1", *_bn(rng, "bn1", 8, inits)], ["b1"]),
        node("Clip", ["b1", "zero", "six"], ["r1"]),
        node("Conv", ["r1", *_conv(rng, "pw", 16, 8, (1, 1), inits, bias=False)], ["c2"]),
        node("BatchNormalization", ["c2", *_bn(rng, "bn2", 16, inits)], ["b2"]),
        node("Clip", ["b2", "zero", "six"], ["output"]),
    ]
    return model(nodes, {"input": (1, 8, 10, 10)}, inits, name="dwsep")


def conv1d(seed=0):
    rng, inits = np.random.default_rng(seed), {}
    nodes = [
        node("Conv", ["input", *_conv(rng, "conv1", 8, 4, (5,), inits)], ["c1"], pads=[2, 2]),
        node("Relu", ["c1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2], strides=[2]),
        node("Conv", ["p1", *_conv(rng, "conv2", 8, 8, (3,), inits)], ["c2"]),
        node("BatchNormalization", ["c2", *_bn(rng, "bn2", 8, inits)], ["b2"]),
        node("Relu", ["b2"], ["r2"]),
        node("GlobalAveragePool", ["r2"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", *_linear(rng, "fc", 3, 8, inits)], ["output"], transB=1),
    ]
    return model(nodes, {"input": (1, 4, 32)}, inits, name="conv1d")


def deep_cnn(seed=0, widths=(8, 8, 16, 16, 32, 32, 64, 64), size=16):
    """ResNet-18's stem and stages with reduced widths and no shortcuts: one 3x3 conv-bn-relu per
    entry of ``widths`` (stride 2 where the width grows), then global average pool and a Linear."""
    rng, inits = np.random.default_rng(seed), {}
    nodes, x, cin = [], "input", 3
    for i, cout in enumerate(widths, start=1):
        stride = 2 if cout != cin and i > 1 else 1
        nodes += [
            node("Conv", [x, *_conv(rng, f"conv{i}", cout, cin, (3, 3), inits, bias=False)], [f"c{i}"],
                 pads=[1, 1, 1, 1], strides=[stride, stride]),
            node("BatchNormalization", [f"c{i}", *_bn(rng, f"bn{i}", cout, inits)], [f"b{i}"]),
            node("Relu", [f"b{i}"], [f"r{i}"]),
        ]
        x, cin = f"r{i}", cout
    nodes += [
        node("GlobalAveragePool", [x], ["gap"]),
        node("Flatten", ["gap"], ["flat"]),
        node("Gemm", ["flat", *_linear(rng, "fc", 10, cin, inits)], ["output"], transB=1),
    ]
    return model(nodes, {"input": (1, 3, size, size)}, inits, name="deep_cnn")


MODELS = {"mlp": mlp, "cnn": cnn, "residual": residual, "depthwise_separable": depthwise_separable, "conv1d": conv1d}
