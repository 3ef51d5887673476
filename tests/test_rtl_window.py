"""Window stages (conv2d, max_pool2d, avg_pool2d) of the Verilog backend: Verilator simulation bit-exact
with the reference.

The graphs sit side by side in two designs (``rtl_design.simulate_union``: one Verilator build each), simulated
on 8 frames, linted, and the timing model's, cycle for cycle. One holds conv2d with kernel, stride, asymmetric
padding, dilation, groups and depthwise geometries, constant and streamed (held) weights, batches of images; pools
of both kinds with padding, per-position counts and count_include_pad; epilogues with constant and streamed
broadcast operands, nodes computed before the image, lookup tables; integer and fixed types with every rounding
and overflow family, and 60-64-bit exact intermediates. The other holds the graphs whose push/emit schedule is
checked against hand counts, and a residual join through a fork with the plan's FIFOs and with deeper ones: each
graph is fed by ports of its own, so the cycles per frame at its ports are those of a design of its own.
"""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import seeds
from rtl_design import DRIVER, DRIVER_MARK, lint, simulate_union

from hlsfuse import GraphBuilder

pytestmark = [pytest.mark.verilator, DRIVER_MARK]

FRAMES = 8


def _const(b, rng, name, shape, dtype, scale=1.0):
    return b.constant(name, rng.uniform(-scale, scale, shape), dtype=dtype)


# ---------------------------------------------------------------- conv2d


def _conv_bias_relu():
    rng = np.random.default_rng(1)
    b = GraphBuilder("conv_bias_relu", dtype="fixed<12,4>")
    c = b.conv2d(b.input("x", [1, 5, 6, 3]), _const(b, rng, "w", [3, 3, 3, 4], "fixed<8,1>"), padding=[1, 1, 1, 1],
                 dtype="fixed<16,6,RND,SAT>")
    b.output(b.relu(b.bias_add(c, _const(b, rng, "bias", [4], "fixed<8,3>")), dtype="ufixed<10,4,RND_CONV,SAT>"))
    return b.build()


def test_conv_bias_relu_schedule(schedules):
    part = _timed(schedules, "conv_bias_relu")
    # 7 x 8 padded positions of 3 channels: 168 pushes. A window's 4 outputs take longer than the next
    # position's 3 pushes, so in each output row of 6 windows the 5 later ones wait one iteration each:
    # 5 rows x 5 = 25 waits; the last window completes with the last push and emits 4 more
    assert part.plan.cycles == 168 + 25 + 4
    assert part.ratio >= 0.99  # the stage follows the schedule, it is not faster either


def _conv_graphs():
    rng = np.random.default_rng(7)
    graphs = []

    # strides, asymmetric padding, dilation and groups; a streamed bias held whole, a node computed from it
    # before the image, a lookup table
    b = GraphBuilder("conv_geometry", dtype="fixed<12,4>")
    x = b.input("x", [1, 6, 7, 4])
    c = b.conv2d(x, _const(b, rng, "w2", [2, 3, 2, 8], "fixed<6,1,RND>"), strides=[2, 1], padding=[1, 0, 2, 1],
                 dilation=[1, 2], groups=2, dtype="fixed<10,3,RND_INF,SAT_SYM>")
    bias = b.relu(b.input("bias_in", [8], dtype="fixed<10,4>"), dtype="ufixed<8,3,RND,SAT>")
    b.output(b.sigmoid(b.add(c, bias, dtype="fixed<10,3,RND,SAT>"), table_bits=6))
    graphs.append(b.build())

    # depthwise (channel multiplier 2), a narrow wrapping output, a constant broadcast over columns
    b = GraphBuilder("conv_depthwise", dtype="fixed<12,4>")
    c = b.conv2d(b.input("x", [1, 6, 7, 4]), _const(b, rng, "w3", [3, 3, 1, 8], "fixed<8,1>"), padding=[0, 2, 1, 0],
                 groups=4, dtype="fixed<8,2,RND,WRAP>")
    k = _const(b, rng, "k3", [1, 7, 1], "fixed<6,2>", 2.0)
    b.output(b.clip(b.mul(c, k, dtype="fixed<10,3,TRN_ZERO,SAT>"), min=-2.5, max=3.0))
    graphs.append(b.build())

    # a 1x1 conv over 3 images of one column; a kernel as large as the padded image; strides 3 that skip
    # the last rows and columns
    b = GraphBuilder("conv_edges", dtype="fixed<8,3>")
    # ... plus a constant as large as the output (read at the flat output index)
    c = b.conv2d(b.input("xs", [3, 4, 1, 2]), _const(b, rng, "w7", [1, 1, 2, 3], "fixed<8,1>"))
    b.output(b.sub(c, _const(b, rng, "full", [3, 4, 1, 3], "fixed<8,3>", 4.0), dtype="fixed<9,4,RND,SAT>"))
    b.output(b.conv2d(b.input("xf", [1, 3, 2, 1], dtype="int8"), _const(b, rng, "wf", [4, 3, 1, 2], "fixed<4,4>", 7.0),
                      padding=[1, 0, 0, 1], dtype="int16"))
    b.output(b.leaky_relu(b.conv2d(b.input("xk", [1, 7, 8, 2], dtype="ufixed<8,2>"),
                                   _const(b, rng, "wk", [2, 2, 2, 1], "fixed<6,2,RND,SAT>"),
                                   strides=[3, 3], dtype="fixed<10,4,RND_MIN_INF,SAT>"), alpha=0.1))
    graphs.append(b.build())
    return graphs


def test_conv_geometries_and_epilogues(shared):
    _exact(shared, "conv_geometry", "conv_depthwise", "conv_edges")


def _streamed_weight():
    b = GraphBuilder("conv_streamed_w", dtype="fixed<10,3,RND,SAT>")
    wt = b.input("wt", [3, 3, 3, 4], dtype="fixed<8,2>")
    c = b.conv2d(b.input("xb", [2, 5, 5, 3]), wt, strides=[2, 2], padding=[1, 1, 1, 1],
                 dtype="fixed<14,6,RND_ZERO,SAT_ZERO>")
    b.output(b.leaky_relu(c, alpha=0.1))
    return b.build()


def test_streamed_weight_held_batch_of_images(schedules):
    """A weight computed elsewhere arrives on a channel, is held whole before each frame's images."""
    part = _timed(schedules, "conv_streamed_w")
    # the weight read whole (108 iterations), then 2 images of 7 x 7 positions of 3 channels, each window's 4
    # outputs emitted while the next 2 positions (6 pushes) go in; the last window of the second image
    # completes in push 147 + 146 and emits 4 more
    assert part.plan.cycles == 3 * 3 * 3 * 4 + 147 + 146 + 1 + 4


def _residual():
    rng = np.random.default_rng(3)
    b = GraphBuilder("residual", dtype="fixed<12,5,RND,SAT>")
    x = b.input("x", [1, 6, 6, 4])
    h = b.relu(b.bias_add(b.conv2d(x, _const(b, rng, "w1", [3, 3, 4, 4], "fixed<8,1>", 0.5), padding=[1, 1, 1, 1]),
                          _const(b, rng, "b1", [4], "fixed<8,3>")))
    h = b.bias_add(b.conv2d(h, _const(b, rng, "w2", [3, 3, 4, 4], "fixed<8,1>", 0.5), padding=[1, 1, 1, 1]),
                   _const(b, rng, "b2", [4], "fixed<8,3>"))
    b.output(b.relu(b.add(h, x, dtype="fixed<12,5,RND_CONV,SAT>")))
    return b.build()


def test_residual_join_through_a_fork(schedules):
    """conv, bias, relu, conv, bias, + x (the 'post' input, read once per output element), relu."""
    _exact(schedules, "residual")
    plain, deep = (part for part in schedules[0].parts if part.plan.graph == "residual")
    print(f"residual with the plan's FIFOs: ratio {plain.ratio:.3f}")
    # Two window stages in a row stall each other through a 2-deep channel (the consumer reads nothing
    # while it emits or pushes padding); with room for the producer's bursts each runs its own schedule.
    assert all(c.depth >= 16 for c in deep.plan.channels)
    print(f"residual with 16-deep FIFOs: ratio {deep.ratio:.3f}")
    assert deep.ratio <= 1.10, (deep.ratio, schedules[0].result.report())


# ---------------------------------------------------------------- pools


def _pool_graphs():
    graphs = []
    b = GraphBuilder("max_pools", dtype="fixed<12,4>")
    xb = b.input("xb", [2, 5, 5, 3], dtype="fixed<10,3,RND,SAT>")
    p = b.max_pool2d(xb, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dtype="fixed<8,3,RND,SAT>")
    b.output(b.leaky_relu(p, alpha=0.25, dtype="fixed<10,3,RND,SAT>"))  # padding never wins, even over negatives
    b.output(b.neg(b.max_pool2d(b.input("x", [1, 6, 7, 4]), pool_size=[2, 2])))  # the last column is dropped
    b.output(b.max_pool2d(b.input("u", [1, 4, 5, 2], dtype="uint8"), pool_size=[2, 3], strides=[1, 2],
                          padding=[0, 2, 1, 0], dtype="ufixed<6,8,RND,SAT>"))
    graphs.append(b.build())

    b = GraphBuilder("avg_pools", dtype="fixed<12,4>")
    x = b.input("x", [1, 6, 7, 4])
    # per-position counts (count_include_pad=False), count_include_pad=True, a constant divisor
    b.output(b.avg_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1], dtype="fixed<12,4,RND_CONV,SAT>"))
    b.output(b.avg_pool2d(b.input("xb", [2, 5, 5, 3], dtype="fixed<10,3,RND,SAT>"), pool_size=[2, 3], strides=[1, 2],
                          padding=[1, 1, 0, 1], count_include_pad=True, dtype="fixed<9,2,RND,SAT>"))
    b.output(b.relu(b.avg_pool2d(x, pool_size=[2, 2], dtype="fixed<10,4,RND_MIN_INF,SAT_SYM>")))
    # coarser output than input (a negative shift in the divider), unsigned and integer inputs
    b.output(b.avg_pool2d(b.input("u", [1, 4, 4, 1], dtype="ufixed<8,2>"), pool_size=[3, 2], padding=[2, 1, 0, 0],
                          strides=[1, 1], dtype="fixed<6,5,TRN_ZERO,WRAP>"))
    b.output(b.avg_pool2d(b.input("i", [1, 3, 5, 2], dtype="int8"), pool_size=[2, 2], padding=[1, 1, 1, 1],
                          strides=[2, 2], dtype="fixed<10,8,RND_INF,SAT>"))
    graphs.append(b.build())
    return graphs


def test_max_pools(shared):
    _exact(shared, "max_pools")


def test_avg_pools(shared):
    _exact(shared, "avg_pools")


def _pool_schedule():
    b = GraphBuilder("avg_schedule", dtype="fixed<12,4>")
    b.output(b.avg_pool2d(b.input("x", [1, 6, 5, 2]), pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1],
                          dtype="fixed<12,4,RND,SAT>"))
    return b.build()


def test_pool_schedule(schedules):
    part = _timed(schedules, "avg_schedule")
    assert part.plan.cycles == 8 * 7 * 2  # the last window's 2 outputs go out while the last rows are pushed


# ---------------------------------------------------------------- numerics


def _wide():
    """60-bit products over 9 terms and a 64-bit average-pool dividend stay exact."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("wide", dtype="fixed<30,12>")
    x = b.input("x", [1, 4, 4, 1])
    w = _const(b, rng, "w", [3, 3, 1, 2], "fixed<30,4>", 7.0)
    b.output(b.conv2d(x, w, padding=[1, 1, 1, 1], dtype="fixed<40,20,RND,SAT>"))
    b.output(b.conv2d(x, w, dtype="fixed<12,6,RND_CONV,SAT_SYM>"))  # narrow: saturates
    b.output(b.avg_pool2d(b.input("z", [1, 3, 5, 2], dtype="fixed<56,24>"), pool_size=[2, 2], padding=[1, 0, 0, 1],
                          dtype="fixed<40,24,RND_INF,SAT>"))
    return b.build()


def test_wide_exact_intermediates(shared):
    """60-bit products over 9 terms and a 64-bit average-pool dividend stay exact."""
    _exact(shared, "wide")


_TYPES = ("fixed<16,6>", "fixed<12,4,RND,SAT>", "ufixed<10,3,RND_CONV,SAT_SYM>", "fixed<8,2,TRN_ZERO,SAT_ZERO>",
          "int8", "uint8", "fixed<20,10,RND_INF,SAT>", "fixed<6,-1,RND_MIN_INF,WRAP>", "ufixed<7,9,RND_ZERO,SAT>")


def _random_windows(seed: int, count: int = 6):
    """``count`` random window heads with random geometry, types and epilogues."""
    rng = np.random.default_rng(seed)

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    def ints(lo, hi, n=2):
        return [int(v) for v in rng.integers(lo, hi + 1, size=n)]

    b = GraphBuilder(f"random_windows{seed}", dtype="fixed<16,6>")
    for k in range(count):
        x = b.input(f"x{k}", [ints(1, 2, 1)[0], *ints(3, 6), ints(1, 4, 1)[0]], dtype=pick(_TYPES))
        _, h, w, c = b.type_of(x).shape
        kind = pick(("conv2d", "conv2d", "max_pool2d", "avg_pool2d"))
        kh, kw = ints(1, 3)
        if kind == "conv2d":
            dh, dw = ints(1, 2) if rng.random() < 0.4 else (1, 1)
            pads = ints(0, 2, 4)
            groups = pick([g for g in (1, 2, c) if c % g == 0])
            span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
            if span_h > h + pads[0] + pads[2] or span_w > w + pads[1] + pads[3]:
                pads = [span_h, span_w, 0, 0]
            wgt = _const(b, rng, f"w{k}", [kh, kw, c // groups, groups * ints(1, 3, 1)[0]], pick(_TYPES[:4]), 2.0)
            y = b.conv2d(x, wgt, strides=ints(1, 2), padding=pads, dilation=[dh, dw], groups=groups,
                         dtype=pick(_TYPES))
        else:
            pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)),
                    int(rng.integers(0, kw))]
            extra = {"count_include_pad": bool(rng.random() < 0.5)} if kind == "avg_pool2d" else {}
            y = b.op(kind, x, pool_size=[kh, kw], strides=ints(1, 3), padding=pads, dtype=pick(_TYPES), **extra)
        epilogue = pick(("relu", "bias_add", "sigmoid", "add", "none"))
        if epilogue == "relu":
            y = b.relu(y, dtype=pick(_TYPES))
        elif epilogue == "bias_add":
            y = b.bias_add(y, _const(b, rng, f"b{k}", b.type_of(y).shape[-1:], pick(_TYPES), 2.0))
        elif epilogue == "sigmoid":
            y = b.sigmoid(y, table_bits=int(rng.integers(3, 9)))
        elif epilogue == "add":
            y = b.add(y, b.input(f"e{k}", b.type_of(y).shape, dtype=pick(_TYPES)), dtype=pick(_TYPES))
        b.output(y)
    return b.build()


SEEDS = seeds((0, 1), fresh_count=4)  # make test-random: four fresh ones


@pytest.mark.parametrize("seed", SEEDS)
def test_random_windows(shared, seed):
    _exact(shared, f"random_windows{seed}")


# ---------------------------------------------------------------- the shared designs


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The graphs checked bit for bit in one design, simulated for FRAMES frames: (the run, its lint)."""
    folder = tmp_path_factory.mktemp("windows")
    graphs = [*_conv_graphs(), *_pool_graphs(), _wide(), *(_random_windows(seed) for seed in SEEDS)]
    return simulate_union(graphs, folder, frames=FRAMES, driver=DRIVER, name="windows", timed=False), lint(folder)


@pytest.fixture(scope="module")
def schedules(tmp_path_factory):
    """The graphs whose schedules are counted by hand, and the residual block with the plan's FIFOs and with FIFOs
    of at least 16, in one design simulated for FRAMES frames: (the run, its lint)."""
    folder = tmp_path_factory.mktemp("schedules")
    graphs = [_conv_bias_relu(), _streamed_weight(), _pool_schedule(), _residual(), _residual()]
    run = simulate_union(graphs, folder, frames=FRAMES, driver=DRIVER, name="schedules", min_depth={4: 16})
    return run, lint(folder)


def _part(shared, name: str):
    run, _ = shared
    (part,) = [part for part in run.parts if part.plan.graph == name]
    return part


def _exact(shared, *names):
    """The shared run (which holds the graphs ``names``) is bit-exact and lint clean."""
    run, linted = shared
    assert {*names} <= {part.plan.graph for part in run.parts}
    assert run.result.passed, run.result.report()
    assert linted == ""


def _timed(schedules, name: str):
    """The graph ``name`` of the schedules run, which is bit-exact and lint clean, and no slower than its plan."""
    _exact(schedules, name)
    part = _part(schedules, name)
    print(f"{name}: {part.frame_cycles:.1f} cycles/frame, predicted {part.plan.cycles}, ratio {part.ratio:.3f}")
    assert part.ratio <= 1.0, (part.ratio, schedules[0].result.report())
    return part
