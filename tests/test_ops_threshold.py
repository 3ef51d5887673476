"""``threshold`` (hlsfuse/ops/threshold.py): #{i : x >= t[c, i]}, FINN's Thresholding unit.

- reference: against a count written with Python integers and Fractions (real values, no grids), on random
  thresholds with duplicates, inputs at the thresholds and at the type limits, n from 1 to 255, thresholds
  on a finer grid than x and of the other signedness;
- the op's facts: default type, errors, bounds, the pattern (an epilogue of the dense before it), the ROM of
  a row per word and the resource model;
- both backends: C simulation under hlsfuse's work-alike headers and AMD's, RTL simulation (Verilator, lint
  clean, cycle for cycle with the timing model), dense -> threshold with PE lanes and SIMD folding, and a map
  stage of lanes.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, fuse, parse_dtype, reference
from hlsfuse.boards import DSP48E1
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.area import stage_area, threshold_luts
from hlsfuse.ops.threshold import count_type
from hlsfuse.ranges import bounds, ranges

# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def graph_of(x_type, x_shape, t_type, t_raw, dtype=None):
    """x -> threshold(x, t) with ``t`` given as raw integers of ``t_type``."""
    t_type = parse_dtype(t_type)
    b = GraphBuilder("thr")
    x = b.input("x", x_shape, x_type)
    lsb = 1.0 if t_type.is_float else 2.0 ** -t_type.frac
    t = b.constant("t", np.asarray(t_raw, dtype=np.float64) * lsb, t_type)
    b.output(b.threshold(x, t, name="y", **({} if dtype is None else {"dtype": dtype})))
    return b.build()


def slow_count(x_raw, x_type, t_raw, t_type):
    """#{i : x >= t[c, i]} on exact real values (Fractions), channel c = the last axis."""
    x_type, t_type = parse_dtype(x_type), parse_dtype(t_type)
    flat = np.asarray(x_raw).reshape(-1, np.shape(x_raw)[-1])
    rows = np.asarray(t_raw)
    out = np.zeros(flat.shape, dtype=np.int64)
    for k, row in enumerate(flat):
        for c, v in enumerate(row):
            thresholds = rows[c if rows.shape[0] > 1 else 0]
            xv = Fraction(int(v), 1 << x_type.frac) if x_type.frac >= 0 else Fraction(int(v) << -x_type.frac)
            out[k, c] = sum(xv >= Fraction(int(t), 1 << t_type.frac) for t in thresholds)
    return out.reshape(np.shape(x_raw))


def sorted_thresholds(rng, t_type, channels, n):
    """Non-decreasing rows with duplicates, some at the type's limits."""
    t = parse_dtype(t_type)
    raw = rng.integers(t.raw_min, t.raw_max, size=(channels, n), endpoint=True)
    raw[:, :: 3] = raw[:, 1:2] if n > 1 else raw[:, :1]  # duplicates
    if n > 2:
        raw[0, 0], raw[-1, -1] = t.raw_min, t.raw_max
    return np.sort(raw, axis=1)


def inputs_at(rng, x_type, t_raw, shape, shift):
    """x values: random, at every threshold (and one raw step below), and at x's type limits."""
    x = parse_dtype(x_type)
    raw = rng.integers(x.raw_min, x.raw_max, size=shape, endpoint=True)
    flat = raw.reshape(-1, shape[-1])
    picks = (np.asarray(t_raw) >> shift if shift >= 0 else np.asarray(t_raw) << -shift).reshape(-1)
    picks = np.clip(np.concatenate([picks, picks - 1, [x.raw_min, x.raw_max]]), x.raw_min, x.raw_max)
    flat[: len(picks) // shape[-1] or 1] = rng.choice(picks, size=flat[: len(picks) // shape[-1] or 1].shape)
    flat[0, 0], flat[-1, -1] = x.raw_min, x.raw_max
    return flat.reshape(shape)


# --------------------------------------------------------------------------
# the reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 15, 16, 255])
def test_reference_counts_exactly_on_the_same_grid(n):
    rng = np.random.default_rng(n)
    t_raw = sorted_thresholds(rng, "fixed<8,4>", 5, n)
    x_raw = inputs_at(rng, "fixed<8,4>", t_raw, (40, 5), 0)
    graph = graph_of("fixed<8,4>", [40, 5], "fixed<8,4>", t_raw)
    got = reference.run_raw(graph, {"x": x_raw})["y"]
    assert graph.types["y"].dtype == count_type(n)
    assert np.array_equal(got, slow_count(x_raw, "fixed<8,4>", t_raw, "fixed<8,4>"))
    assert got.max() == n  # the type's highest value passes every threshold


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 255), channels=st.sampled_from([1, 3]), shared=st.booleans(),
       x_type=st.sampled_from(["fixed<10,6>", "ufixed<6,3>", "int8", "fixed<12,12>"]),
       t_type=st.sampled_from(["fixed<12,6>", "ufixed<9,4>", "fixed<6,6>", "fixed<16,2>"]),
       seed=st.integers(0, 2 ** 16))
def test_reference_compares_real_values_across_grids_and_signedness(n, channels, shared, x_type, t_type, seed):
    rng = np.random.default_rng(seed)
    t_raw = sorted_thresholds(rng, t_type, 1 if shared else channels, n)
    shift = parse_dtype(t_type).frac - parse_dtype(x_type).frac
    x_raw = inputs_at(rng, x_type, t_raw, (6, channels), shift)
    got = reference.run_raw(graph_of(x_type, [6, channels], t_type, t_raw), {"x": x_raw})["y"]
    assert np.array_equal(got, slow_count(x_raw, x_type, t_raw, t_type))


def test_a_declared_type_is_assigned_once():
    t_raw = [[-3, -2, -1, 0, 1, 2, 3]]
    x_raw = np.array([[-8], [0], [7]])
    int4 = "fixed<4,4>"
    sat = reference.run_raw(graph_of(int4, [3, 1], int4, t_raw, dtype="ufixed<2,2,TRN,SAT>"), {"x": x_raw})
    wrap = reference.run_raw(graph_of(int4, [3, 1], int4, t_raw, dtype="ufixed<2,2>"), {"x": x_raw})
    assert sat["y"].ravel().tolist() == [0, 3, 3]  # counts 0, 4, 7 saturate at 3
    assert wrap["y"].ravel().tolist() == [0, 0, 3]  # 4 and 7 wrap to 0 and 3


# --------------------------------------------------------------------------
# facts and errors
# --------------------------------------------------------------------------


def test_default_type_is_the_narrowest_unsigned_integer_holding_n():
    assert [str(count_type(n)) for n in (1, 2, 3, 4, 15, 16, 255)] == [
        "ufixed<1,1>", "ufixed<2,2>", "ufixed<2,2>", "ufixed<3,3>", "ufixed<4,4>", "ufixed<5,5>", "uint8"]


def build_error(**kw) -> str:
    with pytest.raises(HlsfuseError) as info:
        graph_of(**kw)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_decreasing_thresholds_are_refused_in_one_line():
    text = build_error(x_type="int8", x_shape=[2, 2], t_type="int8", t_raw=[[0, 1, 2], [4, 3, 5]])
    assert text == ("node 'y' (threshold): input 't' must be non-decreasing along n in every channel, "
                    "but t[1, 1] < t[1, 0]")


def test_a_row_per_channel_or_one_for_all():
    text = build_error(x_type="int8", x_shape=[2, 3], t_type="int8", t_raw=[[0, 1], [0, 1]])
    assert text == ("node 'y' (threshold): input 't' must have shape [3, n] or [1, n] (a row of thresholds per "
                    "channel of 'x''s last axis), not [2, 2]")


def test_float32_is_refused_in_one_line():
    text = build_error(x_type="float32", x_shape=[2, 2], t_type="float32", t_raw=[[0.0, 1.0]])
    assert text == ("node 'y' (threshold): threshold is fixed point only: x, t and the output must not be "
                    "float32 (cast x first)")


def test_bounds_are_the_counts_at_x_bounds_per_channel():
    t_raw = [[-4, 0, 4], [-100, 110, 120], [-128, -128, -100]]
    graph = graph_of("fixed<6,4>", [2, 3], "fixed<8,6>", t_raw)  # x in [-32, 31] x 2^-2, t on 2^-2 too
    assert bounds(graph)["y"] == (0, 3)
    exact = ranges(graph)["y"].exact
    # x in [-8, 7.75]: channel 0 (t -1, 0, 1) any count, channel 1 (-25, 27.5, 30) always 1, channel 2 always 3
    assert exact.lo.tolist() == [0, 1, 3] and exact.hi.tolist() == [3, 1, 3]


def dense_threshold(n=7, shared=False, out_dtype=None):
    """x [2, 12] -> dense (6 outputs) -> threshold (6 rows of n, or one shared row), channels last."""
    rng = np.random.default_rng(n)
    b = GraphBuilder("dense_thr", "fixed<8,3>")
    x = b.input("x", [2, 12])
    w = b.constant("w", rng.uniform(-1, 1, size=(6, 12)), "fixed<4,1>")
    h = b.op("dense", x, w, name="h", dtype="fixed<12,6>")
    t_raw = sorted_thresholds(rng, "fixed<12,6>", 1 if shared else 6, n) // 8  # within the dense's usual values
    t = b.constant("t", np.sort(t_raw, axis=1) * 2.0 ** -6, "fixed<12,6>")
    kw = {} if out_dtype is None else {"dtype": out_dtype}
    y = b.threshold(h, t, name="y", **kw)
    b.output(b.op("relu", y, name="z") if out_dtype else y)
    return b.build()


def test_it_is_a_broadcast_epilogue_of_the_dense_with_a_row_rom():
    graph = dense_threshold()
    assert graph.patterns["y"] == Pattern.BROADCAST
    plan = lower(graph, fuse(graph), LowerOptions(fold=Folding(pe=(("h", 2),), simd=(("h", 3),))))
    (stage,) = [s for s in plan.stages if "y" in s.nodes]
    assert stage.nodes == ("h", "y") and stage.kind == "rows"
    (rom,) = [b for b in stage.schedule.buffers if b.tensor == "t"]
    assert (rom.row, rom.elements, rom.width, rom.banks) == (7, 6, 7 * 12, 2)
    area = stage_area(graph, stage, DSP48E1)
    assert threshold_luts(parse_dtype("fixed<12,6>"), 7) == 7 * 12 + 7
    assert area.lut >= 2 * threshold_luts(parse_dtype("fixed<12,6>"), 7)


# --------------------------------------------------------------------------
# both backends
# --------------------------------------------------------------------------


def map_threshold():
    """x [1, 4, 4, 8] (signed) -> threshold on one shared unsigned row of 5 on a finer grid, declared ufixed<2,2,
    TRN,SAT> (counts above 3 saturate)."""
    b = GraphBuilder("map_thr")
    x = b.input("x", [1, 4, 4, 8], "fixed<6,3>")
    t = b.constant("t", [[0.0, 0.0625, 1.0, 1.5, 3.875]], "ufixed<7,3>")
    b.output(b.threshold(x, t, name="y", dtype="ufixed<2,2,TRN,SAT>"))
    return b.build()


FOLDS = {
    "dense_pe2_simd3": (lambda: dense_threshold(7), Folding(pe=(("h", 2),), simd=(("h", 3),))),
    "dense_shared_n1": (lambda: dense_threshold(1, shared=True), Folding(pe=(("h", 3),), simd=(("h", 12),))),
    "dense_n15_typed": (lambda: dense_threshold(15, out_dtype="ufixed<3,3,TRN,SAT>"), Folding()),
    "map_lanes4": (map_threshold, Folding(lanes=(("y", 4),), port_lanes=4)),
}


def inputs_for(graph, seed):
    return reference.random_inputs(graph, seed)


def test_map_stage_runs_one_token_per_cycle():
    graph = map_threshold()
    plan = lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("y", 4),), port_lanes=4)))
    (stage,) = plan.stages
    assert stage.kind == "map" and stage.cycles == graph.types["y"].size // 4
