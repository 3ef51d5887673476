"""How fusion time grows with graph size.

ResNet-like graphs of 2,000, 10,000 and 50,000 ops (blocks of conv2d, add, relu, conv2d,
add, residual add, relu on 1x8x8x4 NHWC tensors) and a chain of 50,000 elementwise ops.
For each: the time of building the ``Graph`` (its constructor verifies every node; not part
of fusion), the time of ``fuse`` alone (TVM mode and FPGA mode; best of several runs), and
the growth ratio of the fusion time against the previous size. Linear growth gives a ratio
equal to the size ratio (5x).

    python bench/fusion_scaling.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np

from hlsfuse import Constant, Graph, Input, Node, TensorType, fuse, parse_dtype

DTYPE = parse_dtype("fixed<16,6>")
SHAPE = (1, 8, 8, 4)


def resnet_like(ops: int) -> tuple[list, list, list, list]:
    """Inputs, constants, nodes and outputs of about ``ops`` ops in 7-op residual blocks."""
    rng = np.random.default_rng(0)

    def const(name, shape):
        raw = np.round(rng.normal(0.0, 0.2, shape) * 2**10).astype(np.int64)
        return Constant(name, TensorType(shape, DTYPE), raw)

    constants = [const("w1", (3, 3, 4, 4)), const("w2", (3, 3, 4, 4)), const("b1", (4,)), const("b2", (4,))]
    nodes, x = [], "x"
    pad = {"padding": [1, 1, 1, 1]}
    for k in range(max(1, round(ops / 7))):
        nodes += [
            Node(f"c{k}a", "conv2d", (x, "w1"), pad),
            Node(f"b{k}a", "add", (f"c{k}a", "b1")),
            Node(f"r{k}a", "relu", (f"b{k}a",)),
            Node(f"c{k}b", "conv2d", (f"r{k}a", "w2"), pad),
            Node(f"b{k}b", "add", (f"c{k}b", "b2")),
            Node(f"s{k}", "add", (f"b{k}b", x)),
            Node(f"r{k}b", "relu", (f"s{k}",)),
        ]
        x = f"r{k}b"
    return [Input("x", TensorType(SHAPE, DTYPE))], constants, nodes, [x]


def elementwise_chain(ops: int) -> tuple[list, list, list, list]:
    nodes, x = [], "x"
    for k in range(ops):
        nodes.append(Node(f"e{k}", "relu" if k % 2 else "neg", (x,)))
        x = f"e{k}"
    return [Input("x", TensorType((1, 64), DTYPE))], [], nodes, [x]


def best_time(fn, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` single runs."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts (default 3)")
    args = parser.parse_args()

    cases = [
        ("resnet-like", resnet_like, 2_000),
        ("resnet-like", resnet_like, 10_000),
        ("resnet-like", resnet_like, 50_000),
        ("elementwise chain", elementwise_chain, 50_000),
    ]
    header = (
        f"{'graph':<18} {'ops':>7} {'groups':>7} {'Graph()':>9} {'fuse tvm':>9} {'fuse fpga':>10} "
        f"{'us/op':>6} {'growth':>7}"
    )
    print(header)
    print("-" * len(header))
    previous = None
    for label, make, size in cases:
        parts = make(size)
        start = time.perf_counter()
        graph = Graph(label, *parts)
        build = time.perf_counter() - start
        plan = fuse(graph, mode="tvm")
        t_tvm = best_time(lambda g=graph: fuse(g, mode="tvm"), args.repeat)
        t_fpga = best_time(lambda g=graph: fuse(g, mode="fpga"), args.repeat)
        growth = ""
        if previous is not None and previous[0] == label:
            growth = f"{t_tvm / previous[1]:.2f}x"
        per_op = 1e6 * t_tvm / len(graph.nodes)
        print(
            f"{label:<18} {len(graph.nodes):>7,} {len(plan.groups):>7,} {build:>8.3f}s {t_tvm:>8.3f}s "
            f"{t_fpga:>9.3f}s {per_op:>6.1f} {growth:>7}"
        )
        previous = (label, t_tvm)
    print(
        "\nGraph(): building the graph, which verifies every node (not part of fusion)"
        "\nfuse: fusion alone, best of the runs; growth: fuse tvm over the previous size, for 5x the ops"
    )


if __name__ == "__main__":
    main()
