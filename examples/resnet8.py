"""A ResNet-8-like CIFAR-10 network (NHWC, 1x32x32x3 image, 10 classes), shaped like the
MLPerf Tiny image-classification model with its batch norms folded into conv biases:

    x -- stem -- stage1 (16 ch, 32x32) -- stage2 (32 ch, 16x16) -- stage3 (64 ch, 8x8) -- gap -- flatten -- fc
         3x3, 3->16 + bias + relu                                                       1x1     [1,64]    64->10

Each stage, with s = 1 for stage 1 and s = 2 (downsampling) for stages 2 and 3:

    h --+-- conv a (3x3, stride s) -- bias -- relu -- conv b (3x3) -- bias -- add -- relu
        |                                                                      |
        +-- skip: h itself (stage 1) or conv 1x1 stride s + bias (projection) --+

Convolutions are padded by 1 (3x3) or 0 (1x1). The image is normalized to [-1, 1) in
fixed<8,1,RND,SAT>; activations from the stem on are fixed<16,6,RND,SAT>, weights fixed<8,1,RND,SAT>,
biases fixed<16,6,RND,SAT>; the weights are seeded He-normal values, which keep every activation
well inside fixed<16,6> (the largest residual sum is about 9 of 32 on random images).

    python examples/resnet8.py [OUT.json]    (default: examples/resnet8.json)
"""

import sys
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, save_graph

IMAGE = "fixed<8,1,RND,SAT>"
ACT = "fixed<16,6,RND,SAT>"
WEIGHT = "fixed<8,1,RND,SAT>"
BIAS = "fixed<16,6,RND,SAT>"
SAME3 = [1, 1, 1, 1]  # 3x3 padding: stride 1 keeps H and W, stride 2 halves them


class _Layers:
    """Seeded constants and conv-bias pairs, named after the layer they belong to."""

    def __init__(self, builder: GraphBuilder, seed: int):
        self.b = builder
        self.rng = np.random.default_rng(seed)

    def conv_bias(self, h, name, c_in, c_out, k=3, stride=1, **kw):
        std = np.sqrt(2.0 / (k * k * c_in))
        w = self.b.constant(f"{name}_w", self.rng.normal(0.0, std, (k, k, c_in, c_out)), dtype=WEIGHT)
        bias = self.b.constant(f"{name}_b", self.rng.normal(0.0, 0.1, c_out), dtype=BIAS)
        pad = SAME3 if k == 3 else [0, 0, 0, 0]
        h = self.b.conv2d(h, w, strides=[stride, stride], padding=pad, name=name, **kw)
        return self.b.bias_add(h, bias, name=f"{name}_bias")

    def stage(self, h, i, c_in, c_out, stride):
        b = self.b
        main = b.relu(self.conv_bias(h, f"s{i}a", c_in, c_out, stride=stride), name=f"s{i}a_relu")
        main = self.conv_bias(main, f"s{i}b", c_out, c_out)
        skip = h if stride == 1 and c_in == c_out else self.conv_bias(h, f"s{i}p", c_in, c_out, k=1, stride=stride)
        return b.relu(b.add(main, skip, name=f"s{i}_add"), name=f"s{i}_relu")


def build():
    b = GraphBuilder("resnet8", dtype=ACT)
    layers = _Layers(b, seed=2024)
    h = b.input("x", [1, 32, 32, 3], dtype=IMAGE)
    # the default output type is the first input's; the stem widens the image to the activation type
    h = b.relu(layers.conv_bias(h, "stem", 3, 16, dtype=ACT), name="stem_relu")
    for i, (c_in, c_out, stride) in enumerate(((16, 16, 1), (16, 32, 2), (32, 64, 2)), start=1):
        h = layers.stage(h, i, c_in, c_out, stride)
    h = b.flatten(b.global_avg_pool(h, name="gap"), name="flatten")
    w = b.constant("fc_w", layers.rng.normal(0.0, np.sqrt(2.0 / 64), (10, 64)), dtype=WEIGHT)
    bias = b.constant("fc_b", layers.rng.normal(0.0, 0.1, 10), dtype=BIAS)
    y = b.bias_add(b.dense(h, w, name="fc"), bias, name="logits")
    b.output(y)
    return b.build()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".json")
    save_graph(build(), out)
    print(f"wrote {out}")
