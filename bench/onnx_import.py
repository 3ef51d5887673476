"""Time of importing a 200-op ONNX model (the target is under a second).

The model is a ResNet-like stack on a 1x16x16x16 NCHW input, as PyTorch exports it:
29 blocks of Conv - BatchNormalization - Relu - Conv - BatchNormalization - Add - Relu,
then GlobalAveragePool - Flatten - Gemm (206 ONNX ops, 3x3 convs, 16 channels). It is
saved to a temporary file and imported with ``hlsfuse.from_onnx`` (parse, check, shape
inference, batch-norm folding, layout conversion, building and verifying the Graph),
in float32 and in fixed point. The baseline is ``onnx.load`` plus ONNX shape inference
of the same file, measured in the same run, so the printed ratio does not depend on the
machine. Each time is the best of several runs.

    python bench/onnx_import.py [--repeat N] [--blocks N]
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from hlsfuse import from_onnx

CHANNELS, SIZE = 16, 16


def resnet_like(blocks: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "input"

    def init(name, *shape, scale=0.1, offset=0.0):
        inits.append(numpy_helper.from_array((rng.normal(offset, scale, shape)).astype(np.float32), name))
        return name

    def conv_bn(prefix, src, dst):
        w = init(f"{prefix}.conv.weight", CHANNELS, CHANNELS, 3, 3)
        bn = [init(f"{prefix}.bn.{k}", CHANNELS, offset=o) for k, o in (("weight", 1), ("bias", 0), ("mean", 0))]
        bn.append(init(f"{prefix}.bn.var", CHANNELS, offset=1.0, scale=0.01))
        nodes.append(helper.make_node("Conv", [src, w], [f"{prefix}/conv"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [f"{prefix}/conv", *bn], [dst]))

    for k in range(blocks):
        p = f"layer{k}"
        conv_bn(f"{p}.0", x, f"{p}/bn0")
        nodes.append(helper.make_node("Relu", [f"{p}/bn0"], [f"{p}/relu0"]))
        conv_bn(f"{p}.1", f"{p}/relu0", f"{p}/bn1")
        nodes.append(helper.make_node("Add", [f"{p}/bn1", x], [f"{p}/add"]))
        nodes.append(helper.make_node("Relu", [f"{p}/add"], [f"{p}/out"]))
        x = f"{p}/out"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"]))
    nodes.append(helper.make_node("Gemm", ["flat", init("fc.weight", 10, CHANNELS), init("fc.bias", 10)], ["output"],
                                  transB=1))
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, CHANNELS, SIZE, SIZE])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    return proto


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=29)
    args = parser.parse_args()
    proto = resnet_like(args.blocks)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet_like.onnx"
        onnx.save(proto, path)
        baseline = best(lambda: shape_inference.infer_shapes(onnx.load(path)), args.repeat)
        graph = from_onnx(path, precision="float32")
        ops = len(proto.graph.node)
        print(f"model: {ops} ONNX ops -> {len(graph.nodes)} hlsfuse nodes (batch norms folded into the convs)")
        print(f"onnx.load + shape inference     {baseline * 1e3:8.1f} ms")
        for precision in ("float32", "fixed<16,6>", "auto:16,6"):
            t = best(functools.partial(from_onnx, path, precision=precision), args.repeat)
            verdict = "under" if t < 1.0 else "OVER"
            print(f"from_onnx ({precision:<12})      {t * 1e3:8.1f} ms  "
                  f"({t / baseline:5.1f}x the baseline; {verdict} the 1 s target)")


if __name__ == "__main__":
    main()
