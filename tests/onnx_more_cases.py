"""ONNX micro models of the activations, Resize/Upsample and ConvTranspose (hlsfuse/frontend/onnx/ops_more.py),
merged into test_onnx_ops.CASES: each must match onnxruntime in float32 to 1e-5."""

from __future__ import annotations

import numpy as np
from onnx_build import model, node, weights

__all__ = ["MORE_CASES"]

RNG = np.random.default_rng(2828)
IMG = {"x": (1, 3, 5, 6)}
F32 = np.float32


def unary(op, **attrs):
    return lambda: model([node(op, ["x"], ["y"], **attrs)], IMG)


def resize(inputs, opset=13, shape=(1, 3, 4, 5), **attrs):
    names = ["x", "roi", "scales", "sizes"][:len(inputs) + 1]
    names = [n if n in inputs or n == "x" else "" for n in names]
    return lambda: model([node("Resize", names, ["y"], **attrs)], {"x": shape}, inputs, opset=opset)


def conv_transpose(x_shape, w_shape, **attrs):
    return lambda: model([node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": x_shape},
                         {"w": weights(RNG, *w_shape), "b": weights(RNG, w_shape[1])})


MORE_CASES = {
    # ------------------------------------------------------------ activations
    "Elu": unary("Elu"),
    "Elu-alpha": unary("Elu", alpha=0.4),
    "Selu": unary("Selu"),
    "Selu-attrs": unary("Selu", alpha=1.5, gamma=0.75),
    "Softplus": unary("Softplus"),
    "Softsign": unary("Softsign"),
    "HardSigmoid": unary("HardSigmoid"),
    "HardSigmoid-attrs": unary("HardSigmoid", alpha=1 / 6, beta=0.5),
    "HardSwish": lambda: model([node("HardSwish", ["x"], ["y"])], IMG, opset=14),
    # ------------------------------------------------- Resize and Upsample
    # torch: nn.Upsample(scale_factor=2, mode="nearest") (opset 11+)
    "Resize-asymmetric-floor": resize({"roi": np.zeros(0, F32), "scales": np.array([1, 1, 2, 2], F32)},
                                      opset=11, coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                                      mode="nearest"),
    "Resize-half-pixel-round": resize({"roi": np.zeros(0, F32), "scales": np.array([1, 1, 2, 3], F32)}),
    "Resize-sizes": resize({"roi": np.zeros(0, F32), "scales": np.zeros(0, F32),
                            "sizes": np.array([1, 3, 8, 15], np.int64)}, coordinate_transformation_mode="asymmetric",
                           nearest_mode="floor"),
    "Resize-opset10": lambda: model([node("Resize", ["x", "s"], ["y"], mode="nearest")], {"x": (1, 3, 4, 5)},
                                    {"s": np.array([1, 1, 3, 2], F32)}, opset=10),
    "Resize-opset19-axes": resize({"roi": np.zeros(0, F32), "scales": np.array([2, 2], F32)}, opset=19,
                                  axes=[2, 3], coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "Resize-1d": resize({"roi": np.zeros(0, F32), "scales": np.array([1, 1, 4], F32)}, shape=(1, 2, 5),
                        coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "Upsample-opset9": lambda: model([node("Upsample", ["x", "s"], ["y"], mode="nearest")], {"x": (1, 3, 4, 5)},
                                     {"s": np.array([1, 1, 2, 2], F32)}, opset=9),
    "Upsample-opset7": lambda: model([node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 3.0])],
                                     {"x": (1, 3, 4, 5)}, opset=7),
    # -------------------------------------------------------- ConvTranspose
    "ConvTranspose-k2s2": conv_transpose((1, 3, 4, 5), (3, 4, 2, 2), strides=[2, 2]),
    "ConvTranspose-k3s2p1op1": conv_transpose((1, 3, 4, 5), (3, 2, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
                                              output_padding=[1, 1]),
    "ConvTranspose-k4s2p1": conv_transpose((1, 3, 4, 5), (3, 2, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1]),
    "ConvTranspose-1d": conv_transpose((1, 3, 7), (3, 2, 4), strides=[2], pads=[1, 2]),
    "ConvTranspose-stride1": conv_transpose((1, 3, 4, 5), (3, 2, 3, 2), pads=[0, 1, 2, 0]),
    "ConvTranspose-k1s3": conv_transpose((1, 3, 4, 5), (3, 2, 1, 1), strides=[3, 2]),
    "ConvTranspose-big-pads": conv_transpose((1, 3, 5, 5), (3, 2, 3, 3), strides=[2, 2], pads=[3, 2, 2, 3]),
}


def unet(up: str = "Resize", seed: int = 7):
    """A small U-Net: conv -> maxpool -> conv -> x2 up (Resize as torch exports nn.Upsample, or ConvTranspose
    k2 s2) -> concat with the skip -> conv, on a [1, 2, 8, 8] image."""
    rng = np.random.default_rng(seed)
    inits = {"w1": weights(rng, 4, 2, 3, 3), "b1": weights(rng, 4), "w2": weights(rng, 6, 4, 3, 3),
             "b2": weights(rng, 6), "w3": weights(rng, 2, 10, 3, 3), "b3": weights(rng, 2)}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["skip"]),
             node("MaxPool", ["skip"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), node("Relu", ["c2"], ["r2"])]
    if up == "Resize":
        inits.update(roi=np.zeros(0, F32), scales=np.array([1, 1, 2, 2], F32))
        nodes.append(node("Resize", ["r2", "roi", "scales"], ["u"], mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    else:
        inits.update(wt=weights(rng, 6, 6, 2, 2), bt=weights(rng, 6))
        nodes.append(node("ConvTranspose", ["r2", "wt", "bt"], ["u"], strides=[2, 2], kernel_shape=[2, 2]))
    nodes += [node("Concat", ["u", "skip"], ["cat"], axis=1), node("Conv", ["cat", "w3", "b3"], ["y"], pads=[1] * 4)]
    return model(nodes, {"x": (1, 2, 8, 8)}, inits, opset=13, name=f"unet_{up.lower()}")
