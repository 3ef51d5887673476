"""A ResNet-18-sized network (11.7 M parameters) on a small image, for the tests and benches of large models:
torchvision's resnet18 widths (a 3x3 stem of 64 channels here, then four stages of two basic blocks, 64, 128,
256 and 512 channels, and a 512 -> 1000 classifier) on a 1x8x8x3 NHWC image, so that its simulations stay
short while its weights are those of the real model's size.

    x -- stem 3x3, 3->64 -- stage1 (64, 8x8) -- stage2 (128, 4x4) -- stage3 (256, 2x2) -- stage4 (512, 1x1)
      -- gap -- flatten -- fc 512->1000

Each basic block is conv 3x3 (stride s) + bias + relu, conv 3x3 + bias, plus the skip (the block's input, or a
1x1 stride-s projection + bias where the shape changes), then relu. The weights are seeded He-normal values in
fixed<8,1,RND,SAT>, activations fixed<16,6,RND,SAT> (saturating: random weights do not promise the range).

    python examples/resnet18.py OUT.json    (writes OUT.json and its weights, OUT.npz)
"""

import sys
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, save_graph

IMAGE = "fixed<8,1,RND,SAT>"
ACT = "fixed<16,6,RND,SAT>"
WEIGHT = "fixed<8,1,RND,SAT>"
BIAS = "fixed<16,6,RND,SAT>"
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # channels and the first block's stride


def build(image: int = 8, classes: int = 1000, seed: int = 18):
    b = GraphBuilder("resnet18", dtype=ACT)
    rng = np.random.default_rng(seed)

    def conv_bias(h, name, c_in, c_out, k=3, stride=1, **kw):
        w = b.constant(f"{name}_w", rng.normal(0.0, np.sqrt(2.0 / (k * k * c_in)), (k, k, c_in, c_out)),
                       dtype=WEIGHT)
        bias = b.constant(f"{name}_b", rng.normal(0.0, 0.1, c_out), dtype=BIAS)
        pad = [1, 1, 1, 1] if k == 3 else [0, 0, 0, 0]
        h = b.conv2d(h, w, strides=[stride, stride], padding=pad, name=name, **kw)
        return b.bias_add(h, bias, name=f"{name}_bias")

    def block(h, name, c_in, c_out, stride):
        main = b.relu(conv_bias(h, f"{name}a", c_in, c_out, stride=stride), name=f"{name}a_relu")
        main = conv_bias(main, f"{name}b", c_out, c_out)
        skip = h if stride == 1 and c_in == c_out else conv_bias(h, f"{name}p", c_in, c_out, k=1, stride=stride)
        return b.relu(b.add(main, skip, name=f"{name}_add"), name=f"{name}_relu")

    h = b.input("x", [1, image, image, 3], dtype=IMAGE)
    h = b.relu(conv_bias(h, "stem", 3, 64, dtype=ACT), name="stem_relu")
    c_in = 64
    for i, (c_out, stride) in enumerate(STAGES, start=1):
        h = block(h, f"l{i}x", c_in, c_out, stride)
        h = block(h, f"l{i}y", c_out, c_out, 1)
        c_in = c_out
    h = b.flatten(b.global_avg_pool(h, name="gap"), name="flatten")
    w = b.constant("fc_w", rng.normal(0.0, np.sqrt(2.0 / c_in), (classes, c_in)), dtype=WEIGHT)
    bias = b.constant("fc_b", rng.normal(0.0, 0.1, classes), dtype=BIAS)
    b.output(b.bias_add(b.dense(h, w, name="fc"), bias, name="logits"))
    return b.build()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/resnet18.py OUT.json")
    out = Path(sys.argv[1])
    save_graph(build(), out)
    print(f"wrote {out}")
