"""A multi-layer perceptron: 64 -> 32 -> 32 -> 10.

    x -- fc1 -- bias1 -- relu1 -- fc2 -- bias2 -- relu2 -- fc3 -- bias3 -- logits

``dense(x, w)`` takes weights as [out, in] (x times w transposed, like ONNX Gemm with transB=1).
Activations are fixed<16,6,RND,SAT>, weights fixed<8,2,RND,SAT>, biases fixed<16,6,RND,SAT>;
the weights are seeded He-normal values.

    python examples/mlp.py [OUT.json]    (default: examples/mlp.json)
"""

import sys
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, save_graph

ACT = "fixed<16,6,RND,SAT>"
WEIGHT = "fixed<8,2,RND,SAT>"
BIAS = "fixed<16,6,RND,SAT>"
LAYERS = (64, 32, 32, 10)


def build():
    rng = np.random.default_rng(2024)
    b = GraphBuilder("mlp", dtype=ACT)
    h = b.input("x", [1, LAYERS[0]])
    last = len(LAYERS) - 1
    for i, (n_in, n_out) in enumerate(zip(LAYERS, LAYERS[1:]), start=1):
        w = b.constant(f"w{i}", rng.normal(0.0, np.sqrt(2.0 / n_in), (n_out, n_in)), dtype=WEIGHT)
        bias = b.constant(f"b{i}", rng.normal(0.0, 0.1, n_out), dtype=BIAS)
        h = b.dense(h, w, name=f"fc{i}")
        h = b.bias_add(h, bias, name="logits" if i == last else f"bias{i}")
        if i < last:
            h = b.relu(h, name=f"relu{i}")
    b.output(h)
    return b.build()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".json")
    save_graph(build(), out)
    print(f"wrote {out}")
