"""``upsample2d`` (hlsfuse/ops/upsample.py) and its own-stage schedule (lower/stage_own.py).

The reference against index arithmetic written out per element; its types, checks and bounds; the schedule's
iterations (one per output token: the bound max(tokens in, tokens out)), reads and row buffer.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, fuse, reference
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.own_movers import UpsampleMain
from hlsfuse.ranges import ranges


def build(shape=(2, 3, 4, 5), tin="fixed<10,3>", **attrs):
    b = GraphBuilder("t", dtype=tin)
    x = b.input("x", list(shape))
    b.output(b.upsample2d(x, name="y", **attrs))
    return b.build()


def expected(x, sh, sw, zeros):
    n, h, w, c = x.shape
    y = np.zeros((n, h * sh, w * sw, c), dtype=x.dtype)
    for i in range(h * sh):
        for j in range(w * sw):
            if not zeros or (i % sh == 0 and j % sw == 0):
                y[:, i, j, :] = x[:, i // sh, j // sw, :]
    return y


@pytest.mark.parametrize("mode", ["nearest", "zeros"])
@pytest.mark.parametrize("factors", [(2, 2), (1, 3), (3, 1), (2, 4), (1, 1)])
def test_reference_is_the_index_arithmetic(mode, factors):
    g = build(factors=list(factors), mode=mode)
    x = reference.random_inputs(g, 3)["x"]
    got = reference.run(g, {"x": x})["y"]
    np.testing.assert_array_equal(got, expected(x, *factors, mode == "zeros"))
    assert g.types["y"].shape == (2, 3 * factors[0], 4 * factors[1], 5)
    assert g.patterns["y"] == Pattern.INJECTIVE


def test_narrower_type_rounds_each_element_once_and_float32_is_exact():
    g = build(tin="fixed<10,3>", factors=[2, 2], dtype="fixed<6,2,RND,SAT>")
    raw = np.arange(-512, 512, 8)[:120].reshape(2, 3, 4, 5) + np.arange(5)  # low bits 0..4: ties and not
    got = reference.run_raw(g, {"x": raw})["y"]
    # 7 fractional bits to 4: round half up, then saturate to [-32, 31]
    assert np.array_equal(got, expected(np.clip((raw + 4) >> 3, -32, 31), 2, 2, False))
    g = build(tin="float32", factors=[2, 3], mode="zeros")
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = reference.run(g, {"x": x})["y"]
    assert got.dtype == np.float32 and np.array_equal(got, expected(x, 2, 3, True))


def test_bounds_add_zero_only_for_zero_insertion():
    for mode, low in (("nearest", 0.5), ("zeros", 0.0)):
        found = ranges(build(tin="fixed<10,3>", factors=[2, 2], mode=mode), {"x": (0.5, 2.0)})
        assert found["y"].exact.reals() == (low, 2.0)
    found = ranges(build(tin="fixed<10,3>", factors=[1, 1], mode="zeros"), {"x": (0.5, 2.0)})
    assert found["y"].exact.reals() == (0.5, 2.0)  # nothing inserted


@pytest.mark.parametrize("kwargs,message", [
    ({"shape": (3, 4, 5), "factors": [2, 2]}, "input 'x' must have 4 dims (NHWC), not 3"),
    ({"factors": [0, 2]}, "attribute 'factors' must be at least 1, not [0, 2]"),
    ({"factors": [2]}, "attribute 'factors' must have 2 values, not 1"),
    ({"factors": [2, 2], "mode": "linear"}, "attribute 'mode' must be one of nearest, zeros, not 'linear'"),
    ({"factors": [2, 2], "dtype": "float32"}, "output dtype float32 does not match the inputs' family; use cast to "
                                              "convert"),
])
def test_errors_name_the_node_and_field(kwargs, message):
    with pytest.raises(HlsfuseError) as info:
        build(**kwargs)
    assert str(info.value) == f"node 'y' (upsample2d): {message}"


@pytest.mark.parametrize("mode", ["nearest", "zeros"])
@pytest.mark.parametrize("lanes", [1, 5])
def test_schedule_one_iteration_per_output_token(mode, lanes):
    g = build(factors=[2, 3], mode=mode)
    plan = lower(g, fuse(g), LowerOptions(fold=Folding(lanes=(("y", lanes),))))
    (stage,) = [s for s in plan.stages if s.head == "y"]
    main = stage.schedule.main
    assert isinstance(main, UpsampleMain) and main.lanes_in == lanes
    tokens_out, tokens_in = g.types["y"].size // lanes, g.types["x"].size // lanes
    assert stage.cycles == main.iterations == tokens_out  # the bound: max(tokens in, tokens out)
    io = main.io()
    reads = io[main.source.channel]
    assert len(reads) == tokens_in and np.all(np.diff(reads) > 0)
    assert len(io[main.write]) == tokens_out
    # the first output row of each input row reads its pixels, at the first of their 3 copies
    pixel = 5 // lanes  # tokens per pixel
    assert reads[:2 * pixel].tolist() == [t for t in range(3 * pixel * 2) if t % (3 * pixel) < pixel]
    buffers = {b.name: b for b in stage.schedule.buffers}
    if mode == "zeros":
        assert buffers == {}
    else:
        assert buffers["row"].elements == 4 * 5 and buffers["row"].banks == lanes
        assert buffers["row"].distance == 5 // lanes  # the pixel's next copy reads it back
