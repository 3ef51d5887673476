"""Speed of the reference interpreter on a 3x3 conv2d, 32 -> 32 channels, on a 1x64x64x32 input.

The fixed-point reference (exact int64 arithmetic plus one rounding) is timed against a float64
numpy baseline of the same convolution (sliding windows and one einsum) measured in the same run,
so the printed ratio does not depend on the machine. Each is timed as the best of several runs.

    python bench/reference_speed.py [--repeat N]
"""

import argparse
import timeit

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from hlsfuse import GraphBuilder, reference


def conv_graph():
    rng = np.random.default_rng(0)
    b = GraphBuilder("conv3x3", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 64, 64, 32])
    w = b.constant("w", rng.normal(0.0, 0.08, (3, 3, 32, 32)), dtype="fixed<8,1,RND,SAT>")
    b.output(b.conv2d(x, w, padding=[1, 1, 1, 1], name="y"))
    return b.build()


def float_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The same convolution in float64: pad, take 3x3 windows, contract with one einsum."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))  # [N, H, W, C, KH, KW]
    return np.einsum("nhwcij,ijco->nhwo", windows, w, optimize=True)


def best_time(fn, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` single runs."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts (default 5)")
    args = parser.parse_args()

    graph = conv_graph()
    inputs = reference.random_inputs(graph, seed=0)
    raw = reference.quantize_inputs(graph, inputs)
    x_real = inputs["x"]
    w_real = graph.constant_map["w"].values

    # the two compute the same convolution: the reference rounds once, at the end
    got = reference.run(graph, inputs)["y"]
    want = float_conv(x_real, w_real)
    lsb = 2.0**-10
    assert np.max(np.abs(got - want)) <= lsb / 2, "reference and float baseline disagree"

    t_ref = best_time(lambda: reference.run_raw(graph, raw), args.repeat)
    t_float = best_time(lambda: float_conv(x_real, w_real), args.repeat)
    macs = 64 * 64 * 32 * 3 * 3 * 32
    print(f"conv2d 3x3, 32->32 channels, 1x64x64x32 fixed<16,6> input ({macs / 1e6:.1f} M MACs), best of {args.repeat}")
    print(f"  reference (fixed point, exact): {t_ref * 1e3:8.1f} ms")
    print(f"  float64 einsum baseline:        {t_float * 1e3:8.1f} ms")
    print(f"  ratio reference / baseline:     {t_ref / t_float:8.2f}")


if __name__ == "__main__":
    main()
