"""FPGA mode (ops that cannot stream stay alone) and the reason each group ends."""

from __future__ import annotations

import numpy as np
import pytest

from hlsfuse import GraphBuilder, HlsfuseError, fuse
from hlsfuse.fusion import verify

F = "fixed<16,6>"


def plan_of(graph, **kw):
    plan = fuse(graph, **kw)
    verify(plan, graph)
    return plan


def groups(plan):
    return [list(g.nodes) for g in plan.groups]


def reasons(plan):
    return {g.nodes[-1]: g.reason for g in plan.groups}


def residual_block():
    """conv2d, bias add, relu, conv2d, bias add, residual add, relu (NHWC)."""
    b = GraphBuilder("residual", dtype=F)
    x = b.input("x", [1, 8, 8, 4])
    rng = np.random.default_rng(0)

    def conv(t, k):
        y = b.conv2d(t, b.constant(f"w{k}", rng.normal(size=(3, 3, 4, 4)) * 0.2), padding=[1, 1, 1, 1], name=f"conv{k}")
        return b.add(y, b.constant(f"b{k}", rng.normal(size=4) * 0.1), name=f"bias{k}")

    h = b.relu(conv(x, 1), name="relu1")
    b.output(b.relu(b.add(conv(h, 2), x, name="residual"), name="relu2"))
    return b.build()


@pytest.mark.parametrize("mode", ["tvm", "fpga"])
def test_residual_block_fuses_conv_with_its_elementwise_tail_and_the_residual_add(mode):
    plan = plan_of(residual_block(), mode=mode)
    assert groups(plan) == [["conv1", "bias1", "relu1"], ["conv2", "bias2", "residual", "relu2"]]
    assert [g.anchor for g in plan.groups] == ["conv1", "conv2"]
    assert plan.groups[1].inputs == ("relu1", "x")
    assert plan.groups[1].constants == ("w2", "b2")
    assert reasons(plan) == {
        "relu1": "path to post-dominator 'conv2' (conv2d) is OUT_ELEMWISE_FUSABLE, not ELEMWISE",
        "relu2": "graph output",
    }


def parallel_transposes():
    # TVM relax test_fuse_parallel_injective: one group in TVM mode
    b = GraphBuilder("parallel", dtype=F)
    x = b.input("x", [10, 20])
    y = b.add(x, b.constant("one", 1.0), name="add")
    z = b.squeeze(y, name="squeeze")
    u = b.transpose(b.transpose(y, axes=[1, 0], name="t1"), axes=[1, 0], name="t2")
    b.output(b.add(z, u, name="shift"))
    return b.build()


def test_fpga_mode_keeps_order_changing_transposes_alone():
    graph = parallel_transposes()
    assert groups(plan_of(graph, mode="tvm")) == [["add", "squeeze", "t1", "t2", "shift"]]
    plan = plan_of(graph)  # fpga is the default
    assert plan.mode == "fpga"
    assert groups(plan) == [["add"], ["t1"], ["t2"], ["squeeze", "shift"]]
    assert reasons(plan) == {
        "add": "'t1' (transpose) stands alone: transpose [1, 0] changes the element order",
        "t1": "stage of its own: transpose [1, 0] changes the element order",
        "t2": "stage of its own: transpose [1, 0] changes the element order",
        "shift": "graph output",
    }
    assert [g.pattern.name for g in plan.groups] == ["BROADCAST", "OPAQUE", "OPAQUE", "ELEMWISE"]


def test_fpga_mode_gives_a_concat_a_stage_of_its_own():
    def graph(axis):
        b = GraphBuilder("concat", dtype=F)
        x = b.input("x", [1, 4, 4, 2])
        c = b.concat(b.relu(x, name="r1"), b.neg(x, name="r2"), axis=axis, name="cat")
        b.output(b.abs(c, name="out"))
        return b.build()

    # an innermost concat streams, but changes the stream's length: its own streaming stage
    plan = plan_of(graph(-1))
    assert groups(plan) == [["r1"], ["r2"], ["cat"], ["out"]]
    assert (
        reasons(plan)["cat"]
        == "stage of its own: concat changes the stream's length; it is a streaming stage of its own"
    )
    plan = plan_of(graph(2))
    assert groups(plan) == [["r1"], ["r2"], ["cat"], ["out"]]
    assert reasons(plan)["r1"] == (
        "'cat' (concat) stands alone: concat on axis 2 (not the innermost) interleaves blocks of its inputs"
    )
    assert groups(plan_of(graph(2), mode="tvm")) == [["r1", "r2", "cat", "out"]]


def test_opaque_softmax_ends_the_conv_group_in_both_modes():
    b = GraphBuilder("softmax", dtype=F)
    x = b.input("x", [1, 4, 4, 3])
    c = b.conv2d(x, b.constant("w", np.full((1, 1, 3, 3), 0.1)), name="conv")
    s = b.softmax(b.relu(c, name="relu"), name="sm")
    b.output(b.relu(s, name="out"))
    graph = b.build()
    tvm, fpga = plan_of(graph, mode="tvm"), plan_of(graph)
    assert groups(tvm) == groups(fpga) == [["conv", "relu"], ["sm"], ["out"]]
    assert reasons(tvm)["relu"] == "path to post-dominator 'sm' (softmax) is OPAQUE, not ELEMWISE"
    assert reasons(tvm)["sm"] == "opaque op: never fuses"
    assert reasons(fpga)["relu"].startswith("'sm' (softmax) stands alone: ")
    assert reasons(fpga)["sm"].startswith("stage of its own: ")


def test_reasons_for_reductions_fan_out_tuples_and_unused_results():
    b = GraphBuilder("reasons", dtype=F)
    x = b.input("x", [2, 4])
    s = b.sum(b.relu(x, name="r"), axes=[1], keepdims=True, name="sum")
    fan = b.exp(s, name="fan")
    b.output(b.neg(fan, name="o1"), b.abs(fan, name="o2"))
    b.exp(x, name="dead")
    tup = b.custom(b.neg(x, name="field"), name="tuple", pattern="TUPLE", shape=[2, 4], dtype=F)
    b.output(tup)
    plan = plan_of(b.build())
    assert groups(plan) == [["r", "sum"], ["fan"], ["o1"], ["o2"], ["dead"], ["field"], ["tuple"]]
    assert reasons(plan) == {
        "sum": "reduction (COMM_REDUCE): does not fuse into its consumers",
        "fan": "no single post-dominator: its uses do not meet again before the outputs",
        "o1": "graph output",
        "o2": "graph output",
        "dead": "its result is not used",
        "field": "post-dominator 'tuple' (custom) is a tuple",
        "tuple": "graph output",
    }


def test_reasons_for_anchor_conflicts_max_depth_and_opt_level():
    b = GraphBuilder("limits", dtype=F)
    x = b.input("x", [1, 4, 4, 2])
    w = b.constant("w", np.full((1, 1, 2, 2), 0.5))
    c1, c2 = b.conv2d(x, w, name="c1"), b.conv2d(x, w, name="c2")
    y = b.add(c1, c2, name="join")
    for k in range(3):
        y = b.exp(y, name=f"e{k}")
    b.output(y)
    graph = b.build()
    plan = plan_of(graph, max_fuse_depth=3)
    assert groups(plan) == [["c2"], ["c1", "join", "e0"], ["e1", "e2"]]
    assert reasons(plan) == {
        "c2": "post-dominator 'join' (add) is in a group of kind OUT_ELEMWISE_FUSABLE, above BROADCAST",
        "e0": "fusing into 'e1' (exp) would make 4 ops, over max depth 3",
        "e2": "graph output",
    }
    zero = plan_of(graph, opt_level=0)
    assert len(zero.groups) == 6 and reasons(zero)["c1"] == "opt_level 0: no fusion"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mode": "gpu"}, "fusion mode must be one of fpga, tvm, not 'gpu'"),
        ({"max_fuse_depth": 0}, "max_fuse_depth must be a positive integer, not 0"),
        ({"max_fuse_depth": 2.5}, "max_fuse_depth must be a positive integer, not 2.5"),
        ({"opt_level": 3}, "opt_level must be 0, 1 or 2, not 3"),
    ],
)
def test_bad_options_are_refused(kw, message):
    with pytest.raises(HlsfuseError) as exc:
        fuse(residual_block(), **kw)
    assert str(exc.value) == message
