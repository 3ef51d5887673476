"""Lowering a fusion plan to a DataflowPlan: stages, uses, forks, ports, ROMs, depths, numbers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import op_graphs

import hlsfuse
from hlsfuse import GraphBuilder, HlsfuseError
from hlsfuse.compile import compile
from hlsfuse.lower import LowerOptions, lower, phases
from hlsfuse.lower.names import Namer, sanitize
from hlsfuse.lower.report import stage_table

F = "fixed<16,6,RND,SAT>"


def _lower(graph, **options):
    return lower(graph, hlsfuse.fuse(graph), LowerOptions(**options))


def _residual(h=8, c=4):
    b = GraphBuilder("res", dtype=F)
    x = b.input("x", [1, h, h, c])
    w1 = b.constant("w1", np.full((3, 3, c, c), 0.125), dtype="fixed<8,1>")
    w2 = b.constant("w2", np.full((3, 3, c, c), -0.125), dtype="fixed<8,1>")
    r = b.relu(b.conv2d(x, w1, padding=[1, 1, 1, 1], name="conv1"), name="relu1")
    y = b.relu(b.add(b.conv2d(r, w2, padding=[1, 1, 1, 1], name="conv2"), x, name="add"), name="y")
    b.output(y)
    return b.build()


def test_residual_block_stages_fork_and_skip_depth():
    graph = _residual()
    plan = _lower(graph)
    kinds = [(s.name, s.kind) for s in plan.stages]
    assert kinds == [("fork_x", "fork"), ("s0_conv2d_relu", "window"), ("s1_conv2d_add_relu", "window")]
    fork, conv1, conv2 = plan.stages
    assert fork.inputs == ("ch_x",) and fork.uses == ("copy",)
    assert conv1.head == "conv1" and conv1.nodes == ("conv1", "relu1") and conv1.roms == ("rom_w1",)
    # conv2's stage reads the skip tensor once per output element and relu1 through its line buffer
    assert dict(zip(conv2.inputs, conv2.uses)) == {"ch_x_3": "post", "ch_relu1": "head"}
    skip = plan.channel("ch_x_3")
    assert (skip.producer, skip.consumer) == ("fork_x", "s1_conv2d_add_relu")
    # the skip FIFO holds what the fork pushes while conv1 and conv2 fill their line buffers: conv2's first
    # output needs relu1 up to row 1, col 2, so conv1 must read x up to row 2, col 3
    assert skip.depth >= (2 * 8 + 3) * 4
    assert skip.depth <= 8 * 8 * 4  # never more than a frame
    # the other channels only decouple neighbours: the producers run just in time
    others = {c.name: c.depth for c in plan.channels if c is not skip}
    assert others == {"ch_x": 2, "ch_x_2": 2, "ch_relu1": 2, "ch_y": 2}
    assert [p.name for p in plan.inputs] == ["x"] and [p.name for p in plan.outputs] == ["y"]
    assert plan.outputs[0].channel == "ch_y"
    assert plan.cycles == max(s.cycles for s in plan.stages)


def test_window_stage_numbers():
    graph = _residual(h=8, c=4)
    conv1 = _lower(graph).stages[1]
    # padded 10x10 positions x 4 channels to push; each output pixel's 4 channels are emitted while the next
    # position is pushed, so only the last window's outputs add iterations
    assert conv1.cycles == 10 * 10 * 4 + 4
    assert conv1.schedule.bound == 8 * 8 * 4  # tokens in and out; 36 multipliers do 64 * 4 * 36 MACs in 256
    s = conv1.schedule
    assert (s.buffer("line buffer").elements, s.buffer("window").elements, s.buffer("snapshot").elements) == (
        2 * 10 * 4, 3 * 3 * 4, 3 * 3 * 4)
    assert conv1.storage == 80 + 36 + 36
    # the first real pixel (1, 1) is pushed in iteration 44; the window ending at (2, 2) completes in iteration
    # (2 * 10 + 2) * 4 + 3 = 91 and emits its first output in the next
    assert conv1.latency == 92 - 44


def test_map_stage_holds_broadcast_operands_and_dense_rows():
    b = GraphBuilder("se", dtype=F)
    x = b.input("x", [1, 4, 4, 8])
    s = b.input("s", [1, 1, 1, 8])
    w = b.constant("w", np.ones((3, 8)) * 0.25)
    y = b.mul(x, b.sigmoid(s, name="gate"), name="scaled")
    z = b.dense(b.reshape(y, [16, 8], name="rows"), w, name="fc")
    b.output(z)
    plan = _lower(b.build())
    by_kind = {s.kind: s for s in plan.stages}
    gate = by_kind["map"]
    assert gate.nodes == ("gate", "scaled", "rows")
    assert dict(zip(gate.inputs, gate.uses)) == {"ch_x": "post", "ch_s": "held"}
    # s read whole (8 iterations), the gate computed from it before the main loop (8 more), then 128 elements
    assert gate.held == ("s",) and gate.cycles == 8 + 8 + 128 and gate.storage == 8 + 8
    fc = by_kind["rows"]
    # 16 rows of 8 read while the previous row's 3 outputs go out: the last row's outputs add 3 iterations
    assert fc.cycles == 16 * 8 + 3 and fc.roms == ("rom_w",)
    assert (fc.schedule.macs, fc.schedule.multipliers) == (16 * 3 * 8, 8)


def test_reduction_with_prologue_and_phases():
    b = GraphBuilder("red", dtype=F)
    x = b.input("x", [2, 6])
    y = b.sum(b.relu(b.neg(x, name="n"), name="r"), axes=[1], name="s")
    b.output(y)
    graph = b.build()
    plan = _lower(graph)
    (stage,) = plan.stages
    assert stage.kind == "reduce" and stage.head == "s"
    assert phases(graph, stage.nodes, stage.head) == (("n", "r"), ())
    assert stage.cycles == 12 + 2


def test_tensor_read_in_two_orders_gets_two_channels():
    b = GraphBuilder("both", dtype=F)
    x = b.input("x", [1, 6, 6, 2])
    w = b.constant("w", np.ones((3, 3, 2, 2)) * 0.1)
    b.output(b.add(b.conv2d(x, w, padding=[1, 1, 1, 1], name="c"), x, name="a"))
    plan = _lower(b.build())
    fork, stage = plan.stages
    assert fork.kind == "fork" and len(fork.outputs) == 2
    assert sorted(stage.uses) == ["head", "post"]
    assert {plan.channel(ch).tensor for ch in stage.inputs} == {"x"}


def test_own_ops_are_stages_of_their_own_and_concat_reads_blocks_in_turn():
    b = GraphBuilder("own", dtype=F)
    x = b.input("x", [1, 4, 4, 2])
    r = b.relu(x, name="r")
    cat = b.concat(x, r, axis=1, name="cat")  # outer size 1: all of x, then all of r
    b.output(b.transpose(cat, axes=[0, 2, 1, 3], name="t"))
    plan = _lower(b.build())
    kinds = {s.name: s.kind for s in plan.stages}
    assert sorted(kinds.values()) == ["fork", "map", "own", "own"]
    cat_stage = next(s for s in plan.stages if s.head == "cat")
    relu = next(s for s in plan.stages if s.nodes == ("r",))
    # r's values wait while concat copies all 32 elements of x first; relu runs just in time, so the 32
    # elements wait in its input FIFO
    assert plan.channel(relu.inputs[0]).depth >= 32
    assert all(plan.channel(ch).depth == 2 for ch in cat_stage.inputs)


def test_an_own_stage_gets_one_channel_per_input_position():
    b = GraphBuilder("cat", dtype=F)
    x, y = b.input("x", [1, 2, 2, 2]), b.input("y", [1, 2, 2, 2])
    b.output(b.concat(x, y, x, axis=-1, name="cat"))
    plan = _lower(b.build())
    stage = next(s for s in plan.stages if s.head == "cat")
    assert [plan.channel(ch).tensor for ch in stage.inputs] == ["x", "y", "x"]
    assert stage.uses == ("head", "head", "head")


def test_identifiers_are_sanitized_unique_and_deterministic():
    namer = Namer()
    assert [namer(n) for n in ("x", "x", "X", "int", "9 lives", "ap_ctrl", "a-b.c")] == [
        "x",
        "x_2",
        "X_3",
        "int_",
        "t9_lives",
        "ap_ctrl_",
        "a_b_c",
    ]
    assert sanitize("") == "t"
    # every SystemVerilog keyword, which Verilator reserves in .v files ('packed' as a module name failed to parse)
    assert [sanitize(k) for k in ("packed", "always_ff", "fork", "small", "logic", "packed_x")] == [
        "packed_", "always_ff_", "fork_", "small_", "logic_", "packed_x"]
    b = GraphBuilder("weird name!", dtype=F)
    x = b.input("in put", [4])
    b.output(b.relu(x, name="out/put"))
    graph = b.build()
    first, second = _lower(graph), _lower(graph)
    assert first == second
    assert first.top == "weird_name" and first.inputs[0].name == "in_put" and first.outputs[0].name == "out_put"
    assert _lower(graph, top="my_top").top == "my_top"


def test_errors_name_the_group():
    b = GraphBuilder("unused", dtype=F)
    b.input("x", [2])
    b.output(b.relu(b.input("y", [2])))
    with pytest.raises(HlsfuseError, match="graph input 'x' is not used by any node; remove it to build hardware"):
        _lower(b.build())
    b = GraphBuilder("c", dtype=F)
    x = b.input("x", [1, 4])
    b.output(b.custom(x, pattern="OPAQUE", shape=[1, 4], dtype=F, name="k"))
    with pytest.raises(HlsfuseError, match=r"node 'k' \(custom\): custom ops model other compilers' graphs"):
        _lower(b.build())
    graph = _residual()
    tvm_plan = hlsfuse.fuse(graph, mode="tvm")
    other = GraphBuilder("other", dtype=F)
    other.output(other.relu(other.input("x", [2])))
    with pytest.raises(HlsfuseError, match="the fusion plan is for graph 'res', not 'other'"):
        lower(other.build(), tvm_plan)


def test_tvm_mode_groups_that_cannot_stream_are_rejected():
    b = GraphBuilder("t", dtype=F)
    x = b.input("x", [1, 4, 4, 2])
    t = b.transpose(b.relu(x, name="r"), axes=[0, 2, 1, 3], name="t")
    b.output(b.neg(t, name="n"))
    graph = b.build()
    with pytest.raises(
        HlsfuseError, match=r"group 0 \[r \(relu\), t \(transpose\), n \(neg\)\]: 't' \(transpose\) must"
    ):
        lower(graph, hlsfuse.fuse(graph, mode="tvm"))


def test_report_lists_every_stage_and_channel():
    graph = _residual()
    fusion = hlsfuse.fuse(graph)
    plan = lower(graph, fusion)
    text = stage_table(plan)
    for stage in plan.stages:
        assert stage.name in text and str(stage.cycles) in text
    md = compile(graph).files["report.md"]
    for ch in plan.channels:
        assert ch.name in md
    assert f"{plan.cycles} cycles per frame" in md
    assert "MAC utilization" in md and "DSPs" in md


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_graphs())
def test_random_graphs_lower_to_consistent_plans(graph):
    try:
        plan = _lower(graph)
    except HlsfuseError as exc:  # only the documented structural limits may refuse a graph
        allowed = ("custom", "a stage can run one", "cannot run in its stage", "is not used by any node")
        assert any(text in str(exc) for text in allowed), str(exc)
        return
    names = {s.name for s in plan.stages}
    ports = {p.name for p in (*plan.inputs, *plan.outputs)}
    for ch in plan.channels:
        assert ch.producer in names | ports and ch.consumer in names | ports
        assert ch.depth >= 2
    for stage in plan.stages:
        assert len(stage.inputs) == len(stage.uses)
        for ch in stage.inputs:
            assert plan.channel(ch).consumer == stage.name
        for ch in stage.outputs:
            assert plan.channel(ch).producer == stage.name
        if stage.kind != "fork":
            assert all(plan.channel(ch).tensor == stage.sink for ch in stage.outputs)
    # every tensor read by a stage is produced before it (stages are in topological order)
    seen = {p.tensor for p in plan.inputs}
    for stage in plan.stages:
        for ch in stage.inputs:
            assert plan.channel(ch).tensor in seen
        seen.add(stage.sink)
