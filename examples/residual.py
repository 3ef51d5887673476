"""A residual block (NHWC, 1x16x16x8) with a skip connection:

    x --+-- conv1 -- bias1 -- relu1 -- conv2 -- bias2 -- add -- y (relu)
        |                                                  |
        +--------------------------------------------------+

Both convolutions are 3x3, 8 -> 8 channels, padding 1, so the block keeps its shape.
The input is fixed<16,2,RND,SAT> (values in [-2, 2), a normalized image), weights fixed<8,1,RND,SAT>,
biases fixed<16,6,RND,SAT>; the weights are seeded He-normal values. Every activation is 16 bits
with the integer bits its range needs, so that no node can overflow (`hlsfuse check --ranges`):
conv1 .. relu1 reach +-20.2 (fixed<16,6,RND,SAT>), conv2 .. y +-112.1 (fixed<16,8,RND,SAT>).

    python examples/residual.py [OUT.json]    (default: examples/residual.json)
"""

import sys
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, save_graph

INPUT = "fixed<16,2,RND,SAT>"
ACT = "fixed<16,6,RND,SAT>"
WIDE = "fixed<16,8,RND,SAT>"  # conv2 onwards: sums of 72 products of relu1 (up to 20.2), and the skip
WEIGHT = "fixed<8,1,RND,SAT>"
BIAS = "fixed<16,6,RND,SAT>"


def build():
    rng = np.random.default_rng(2024)
    channels = 8
    fan_in = 3 * 3 * channels
    b = GraphBuilder("residual", dtype=ACT)
    x = b.input("x", [1, 16, 16, channels], dtype=INPUT)
    h = x
    for i in (1, 2):
        w = b.constant(f"w{i}", rng.normal(0.0, np.sqrt(2.0 / fan_in), (3, 3, channels, channels)), dtype=WEIGHT)
        bias = b.constant(f"b{i}", rng.normal(0.0, 0.1, channels), dtype=BIAS)
        act = ACT if i == 1 else WIDE
        h = b.conv2d(h, w, padding=[1, 1, 1, 1], name=f"conv{i}", dtype=act)
        h = b.bias_add(h, bias, name=f"bias{i}", dtype=act)
        if i == 1:
            h = b.relu(h, name="relu1")
    y = b.relu(b.add(h, x, name="add", dtype=WIDE), name="y", dtype=WIDE)
    b.output(y)
    return b.build()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".json")
    save_graph(build(), out)
    print(f"wrote {out}")
