"""A small convolutional network on a 1x16x16x3 image (NHWC), 10 classes:

    x -- conv1 -- bias1 -- relu1 -- pool1 -- conv2 -- bias2 -- relu2 -- pool2 -- flatten -- fc -- logits
         3x3, 3->8                  2x2      3x3, 8->16                 2x2      [1,256]    256->10

Convolutions are padded by 1 (shape kept), max pools halve height and width. The image is
normalized to [-1, 1) in fixed<8,1,RND,SAT>; activations from conv1 on are fixed<16,6,RND,SAT>,
weights fixed<8,1,RND,SAT>, biases fixed<16,6,RND,SAT>; the weights are seeded He-normal values.

    python examples/cnn.py [OUT.json]    (default: examples/cnn.json)
"""

import sys
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, save_graph

IMAGE = "fixed<8,1,RND,SAT>"
ACT = "fixed<16,6,RND,SAT>"
WEIGHT = "fixed<8,1,RND,SAT>"
BIAS = "fixed<16,6,RND,SAT>"


def build():
    rng = np.random.default_rng(2024)
    b = GraphBuilder("cnn", dtype=ACT)
    h = b.input("x", [1, 16, 16, 3], dtype=IMAGE)
    for i, (c_in, c_out) in enumerate(((3, 8), (8, 16)), start=1):
        w = b.constant(f"w{i}", rng.normal(0.0, np.sqrt(2.0 / (9 * c_in)), (3, 3, c_in, c_out)), dtype=WEIGHT)
        bias = b.constant(f"b{i}", rng.normal(0.0, 0.1, c_out), dtype=BIAS)
        # the default output type is the first input's; conv1 widens the image to the activation type
        h = b.conv2d(h, w, padding=[1, 1, 1, 1], dtype=ACT, name=f"conv{i}")
        h = b.bias_add(h, bias, name=f"bias{i}")
        h = b.relu(h, name=f"relu{i}")
        h = b.max_pool2d(h, pool_size=[2, 2], name=f"pool{i}")
    h = b.flatten(h, name="flatten")
    w = b.constant("w3", rng.normal(0.0, np.sqrt(2.0 / 256), (10, 256)), dtype=WEIGHT)
    bias = b.constant("b3", rng.normal(0.0, 0.1, 10), dtype=BIAS)
    y = b.bias_add(b.dense(h, w, name="fc"), bias, name="logits")
    b.output(y)
    return b.build()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".json")
    save_graph(build(), out)
    print(f"wrote {out}")
