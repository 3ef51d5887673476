"""lower.verify: a DataflowPlan broken on purpose, one rule at a time, is refused with a line naming what broke."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import hlsfuse
from hlsfuse import GraphBuilder, HlsfuseError
from hlsfuse.ir import TensorType
from hlsfuse.lower import Folding, LowerOptions, lower, verify

F = "fixed<16,6,RND,SAT>"


@pytest.fixture(scope="module")
def design():
    """conv2d (pe 2, 2 input lanes, simd 9 of 36) -> relu -> dense (pe 2), with a map stage of 2 lanes after."""
    b = GraphBuilder("checked", dtype=F)
    x = b.input("x", [1, 6, 6, 4])
    w = b.constant("w", np.full((3, 3, 4, 4), 0.125), dtype="fixed<8,1>")
    h = b.relu(b.conv2d(x, w, padding=[1, 1, 1, 1], name="conv"), name="relu")
    wd = b.constant("wd", np.full((4, 144), 0.25), dtype="fixed<8,1>")
    d = b.dense(b.reshape(h, shape=[1, 144], name="flat"), wd, name="fc")
    b.output(b.neg(d, name="y"))
    graph = b.build()
    fold = Folding(simd=(("conv", 9),), pe=(("conv", 2), ("fc", 2)), lanes=(("conv", 2), ("y", 2)))
    return graph, lower(graph, hlsfuse.fuse(graph), LowerOptions(fold=fold))


def refused(graph, plan, *expected: str) -> None:
    with pytest.raises(HlsfuseError) as info:
        verify(plan, graph, 2)
    message = str(info.value)
    assert "\n" not in message and message.startswith("dataflow plan 'checked': ")
    for part in expected:
        assert part in message, message


def _channel(plan, **changes):
    """``plan`` with the first channel between two stages changed."""
    names = {s.name for s in plan.stages}
    c = next(c for c in plan.channels if c.producer in names and c.consumer in names)
    return c, dataclasses.replace(plan, channels=tuple(dataclasses.replace(k, **changes) if k is c else k
                                                       for k in plan.channels))


def _stage(plan, kind, **schedule_main):
    """``plan`` with the main of its first ``kind`` stage changed."""
    s = next(s for s in plan.stages if s.kind == kind)
    main = dataclasses.replace(s.schedule.main, **schedule_main)
    broken = dataclasses.replace(s, schedule=dataclasses.replace(s.schedule, main=main))
    return s, dataclasses.replace(plan, stages=tuple(broken if k is s else k for k in plan.stages))


def test_the_lowered_plan_keeps_every_rule(design):
    graph, plan = design
    assert verify(plan, graph, 2) is plan
    assert {s.kind for s in plan.stages} >= {"window", "rows", "map"}
    assert any(c.lanes > 1 for c in plan.channels)


def test_a_channel_whose_type_is_not_its_tensors(design):
    graph, plan = design
    c, broken = _channel(plan, type=TensorType(plan.channels[0].type.shape, hlsfuse.parse_dtype("fixed<8,4>")))
    refused(graph, broken, f"channel '{c.name}'", f"but tensor '{c.tensor}' is")


def test_lanes_that_do_not_divide_the_innermost_dimension(design):
    graph, plan = design
    c, broken = _channel(plan, lanes=5)
    refused(graph, broken, f"channel '{c.name}'", "5 lanes do not divide the innermost dimension")


def test_lanes_other_than_the_producer_writes(design):
    graph, plan = design
    c = next(c for c in plan.channels if c.lanes == 2 and c.producer in {s.name for s in plan.stages})
    broken = dataclasses.replace(plan, channels=tuple(dataclasses.replace(k, lanes=1) if k is c else k
                                                      for k in plan.channels))
    refused(graph, broken, f"channel '{c.name}'", "has 1 lanes, but its producer writes 2")


def test_lanes_other_than_the_consumer_reads(design):
    graph, plan = design
    port = plan.outputs[0]
    broken = dataclasses.replace(plan, outputs=(dataclasses.replace(port, lanes=2),))
    c = plan.channel(port.channel)
    assert c.lanes == 1
    refused(graph, broken, f"channel '{c.name}'", "has 1 lanes, but its consumer reads 2")


def test_tokens_other_than_the_schedules_move(design):
    graph, plan = design
    s, broken = _stage(plan, "window", writes=("elsewhere",))  # its schedule writes no token of its channel
    refused(graph, broken, f"({s.name} ->", f"but the schedule of stage '{s.name}' moves 0")


def test_a_fifo_shallower_than_the_minimum(design):
    graph, plan = design
    c, broken = _channel(plan, depth=1)
    refused(graph, broken, f"channel '{c.name}'", "depth 1 is below the minimum 2")


def test_a_simd_that_does_not_divide_the_products(design):
    graph, plan = design
    s, broken = _stage(plan, "window", simd=7)
    refused(graph, broken, f"stage '{s.name}'", "simd 7 does not divide its 36 products per output")


def test_a_pe_that_does_not_divide_the_outputs(design):
    graph, plan = design
    s, broken = _stage(plan, "rows", pe=3)
    refused(graph, broken, f"stage '{s.name}'", "pe 3 does not divide its 4 outputs per position")


def test_lanes_that_do_not_divide_a_stages_input(design):
    graph, plan = design
    s = next(s for s in plan.stages if s.kind == "window")
    broken_geometry = dataclasses.replace(s.schedule.main.geometry, lanes=3)
    s, broken = _stage(plan, "window", geometry=broken_geometry)
    refused(graph, broken, f"stage '{s.name}'", "input lanes 3 do not divide the innermost dimension of 'x'")
