"""FusionPlan invariants, fused evaluation, statistics and the report views."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FIXED, op_graphs, pattern_graphs

from hlsfuse import GraphBuilder, HlsfuseError, Pattern, fuse, reference
from hlsfuse.fusion import FusionPlan, Group, run, run_raw, stats, verify
from hlsfuse.fusion.report import table, to_dot, to_json


@settings(max_examples=200)
@given(
    pattern_graphs(max_nodes=20),
    st.sampled_from(["tvm", "fpga"]),
    st.sampled_from([2, 3, 5, 256]),
    st.sampled_from([0, 2]),
)
def test_plans_of_random_pattern_graphs_keep_the_invariants(graph, mode, depth, opt_level):
    plan = fuse(graph, mode=mode, max_fuse_depth=depth, opt_level=opt_level)
    verify(plan, graph)
    for group in plan.groups:
        assert len(group.nodes) <= depth
        assert group.reason
        if len(group.nodes) > 1:
            assert opt_level > 0
            kinds = [graph.patterns[n] for n in group.nodes]
            assert Pattern.OPAQUE not in kinds
            assert Pattern.COMM_REDUCE not in kinds[:-1]  # a reduction only ends a group
        if group.anchor is not None:
            assert group.pattern == Pattern.OUT_ELEMWISE_FUSABLE


@settings(max_examples=150)
@given(op_graphs(max_ops=12), st.sampled_from(["tvm", "fpga"]), st.integers(0, 3))
def test_fused_evaluation_equals_the_reference_bit_for_bit(graph, mode, seed):
    plan = fuse(graph, mode=mode)
    verify(plan, graph)
    raw = reference.quantize_inputs(graph, reference.random_inputs(graph, seed))
    expected = reference.run_raw(graph, raw)
    got = run_raw(plan, graph, raw)
    for name in graph.outputs:
        assert got[name].dtype == expected[name].dtype
        np.testing.assert_array_equal(got[name], expected[name])
    # what a group keeps on chip never reaches the other groups
    inner = {n for g in plan.groups for n in g.nodes} - {n for g in plan.groups for n in g.outputs}
    assert not inner & set(got)


def chain():
    """x -> conv -> relu -> t (transpose) -> abs, plus relu -> neg -> out2."""
    b = GraphBuilder("chain", dtype=FIXED)
    x = b.input("x", [1, 2, 2, 2])
    c = b.conv2d(x, b.constant("w", np.full((1, 1, 2, 2), 0.5)), name="conv")
    r = b.relu(c, name="relu")
    t = b.transpose(r, axes=[0, 2, 1, 3], name="t")
    b.output(b.abs(t, name="abs"), b.neg(r, name="neg"))
    return b.build()


def test_plan_fields_and_lookup():
    graph = chain()
    plan = fuse(graph, mode="tvm")
    assert [list(g.nodes) for g in plan.groups] == [["conv", "relu"], ["t", "abs"], ["neg"]]
    g0 = plan.group("relu")
    assert (g0.id, g0.pattern, g0.anchor, g0.inputs, g0.constants, g0.outputs) == (
        0, Pattern.OUT_ELEMWISE_FUSABLE, "conv", ("x",), ("w",), ("relu",))
    assert dict(plan.group_of) == {"conv": 0, "relu": 0, "t": 1, "abs": 1, "neg": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.mode = "fpga"
    with pytest.raises(HlsfuseError, match="^fusion plan of graph 'chain' has no node 'x'$"):
        plan.group("x")


def test_stats_count_tensors_and_memory_traffic():
    graph = chain()  # every tensor is 8 elements of 2 bytes = 16 bytes
    s = stats(fuse(graph, mode="tvm"), graph)
    # one kernel per op: x read once; conv, t written and read once; relu written, read twice;
    # abs and neg written: 16 * (1 + 2 + 2 + 3 + 1 + 1) = 160
    # fused: x read once; relu written, read by two groups; abs, neg written: 16 * (1 + 3 + 1 + 1) = 96
    assert s == {
        "ops": 5,
        "groups": 3,
        "fused_groups": 2,
        "largest_group": 2,
        "tensors_on_chip": 2,
        "tensors_crossing": 1,
        "memory_bytes_unfused": 160,
        "memory_bytes_fused": 96,
        "memory_bytes_saved": 64,
    }


def _stats_by_tensor(plan, graph):
    """``stats`` by its definition, tensor by tensor: the brute force the real one (which reads
    the groups' interfaces) must agree with."""
    owner, consumers, out_set = plan.group_of, graph.consumers, set(graph.outputs)
    on_chip = crossing = unfused = fused = 0
    for name in [i.name for i in graph.inputs] + [n.name for n in graph.nodes]:
        t = graph.types[name]
        size = t.size * -(-t.dtype.bits // 8)
        users, produced = consumers[name], name in owner
        reader_groups = {owner[u] for u in users} - {owner.get(name)}
        unfused += size * (int(produced) + len(users))
        if produced and not reader_groups and name not in out_set:
            on_chip += 1
            continue
        crossing += int(produced and bool(reader_groups))
        fused += size * (int(produced) + len(reader_groups))
    return on_chip, crossing, unfused, fused


@settings(max_examples=200)
@given(pattern_graphs(max_nodes=20), st.sampled_from(["tvm", "fpga"]), st.sampled_from([2, 256]))
def test_stats_agree_with_counting_tensor_by_tensor(graph, mode, depth):
    plan = fuse(graph, mode=mode, max_fuse_depth=depth)
    s = stats(plan, graph)
    got = (s["tensors_on_chip"], s["tensors_crossing"], s["memory_bytes_unfused"], s["memory_bytes_fused"])
    assert got == _stats_by_tensor(plan, graph)
    assert s["memory_bytes_saved"] == s["memory_bytes_unfused"] - s["memory_bytes_fused"]


def test_fused_run_takes_real_values_like_the_reference():
    graph = chain()
    inputs = reference.random_inputs(graph, 7)
    plan = fuse(graph)
    got, expected = run(plan, graph, inputs), reference.run(graph, inputs)
    assert list(got) == ["abs", "neg"]
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])


def _plan(graph, groups, mode="tvm", anchors=None):
    """A hand-made plan with the given member lists (interfaces left empty)."""
    anchors = anchors or {}
    made = [Group(k, tuple(g), Pattern.ELEMWISE, anchors.get(k), (), (), (), "") for k, g in enumerate(groups)]
    return FusionPlan(graph.name, mode, 256, 2, tuple(made))


def _diamond():
    b = GraphBuilder("diamond", dtype=FIXED)
    x = b.input("x", [1, 2, 2, 2])
    w = b.constant("w", np.full((1, 1, 2, 2), 0.5))
    a = b.conv2d(x, w, name="a")
    m = b.conv2d(a, w, name="m")
    b.output(b.add(a, m, name="c"), b.softmax(a, name="s"))
    return b.build()


@pytest.mark.parametrize(
    ("groups", "anchors", "message"),
    [
        ([["a"], ["m", "c"]], {0: "a", 1: "m"}, "node 's' is in no group"),
        ([["a"], ["m", "c"], ["s", "a"]], {0: "a", 1: "m"}, "node 'a' is in groups 0 and 2"),
        ([["a"], ["x"], ["m", "c"], ["s"]], {}, "group 1 lists 'x', which is not an op node"),
        ([["c", "a", "m"], ["s"]], {}, "group 0 does not list its nodes in topological order"),
        ([["a", "m", "c"], ["s"]], {0: "a"}, "group 0 holds 2 anchors (a, m), at most 1 allowed"),
        ([["a", "s"], ["m", "c"]], {0: "a", 1: "m"}, "group 0 fuses 's' (softmax), which must stay alone"),
        ([["a"], ["m", "c"], ["s"]], {0: "a", 1: None}, "group 1 names anchor None, expected 'm'"),
        ([["a", "c"], ["m"], ["s"]], {0: "a", 1: "m"},
         "group 0 is not convex: a path leaves it through 'm' and returns to 'c'"),
        ([["m", "c"], ["a"], ["s"]], {0: "m", 1: "a"}, "group 0 reads 'a' from group 1, which comes later"),
        ([["a"], ["m", "c"], ["s"]], {0: "a", 1: "m"}, "group 0 lists inputs [], expected ['x']"),
    ],
)
def test_verify_names_the_broken_invariant(groups, anchors, message):
    graph = _diamond()
    with pytest.raises(HlsfuseError) as exc:
        verify(_plan(graph, groups, anchors=anchors), graph)
    assert str(exc.value).startswith("fusion plan of graph 'diamond': ")
    assert message in str(exc.value)


def test_verify_rejects_a_plan_for_another_graph_and_a_buffered_op_in_fpga_mode():
    graph = chain()
    good = fuse(graph, mode="tvm")
    verify(good, graph)
    with pytest.raises(HlsfuseError, match="the plan is for graph 'other'"):
        verify(dataclasses.replace(good, graph="other"), graph)
    with pytest.raises(HlsfuseError, match=r"group 1 fuses 't' \(transpose\), which must stay alone"):
        verify(dataclasses.replace(good, mode="fpga"), graph)


def test_table_json_and_dot():
    graph = chain()
    plan = fuse(graph)
    text = table(plan, graph)
    lines = text.splitlines()
    assert lines[0] == "fusion plan of graph 'chain' (mode fpga, max depth 256, opt_level 2)"
    assert lines[2].split() == ["id", "ops", "pattern", "anchor", "inputs", "outputs", "why", "it", "ends"]
    assert lines[3].split()[:7] == ["0", "conv:conv2d", "relu:relu", "OUT_ELEMWISE_FUSABLE", "conv", "x", "relu"]
    assert lines[4].endswith("stage of its own: transpose [0, 2, 1, 3] changes the element order")
    assert "5 ops in 4 groups (1 fused, largest 2 ops)" in text
    doc = to_json(plan, graph)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["groups"][0] == {
        "id": 0,
        "nodes": ["conv", "relu"],
        "pattern": "OUT_ELEMWISE_FUSABLE",
        "anchor": "conv",
        "inputs": ["x"],
        "constants": ["w"],
        "outputs": ["relu"],
        "reason": "no single post-dominator: its uses do not meet again before the outputs",
    }
    assert doc["stats"] == stats(plan, graph)
    dot = to_dot(plan, graph)
    assert dot.startswith('digraph "chain" {') and dot.endswith("}\n")
    assert dot.count("subgraph cluster_g") == 4
    assert 'n0 -> n1 [label="fixed<16,6>[1,2,2,2]"];' in dot  # inside a group
    assert 'n1 -> n2 [label="fixed<16,6>[1,2,2,2]", style=bold];' in dot  # between groups


def test_long_groups_are_shortened_in_the_table_and_names_are_quoted_in_dot():
    b = GraphBuilder('we"ird', dtype=FIXED)
    y = b.input("x", [4])
    for k in range(9):
        y = b.exp(y, name=f"e{k}")
    b.output(y)
    graph = b.build()
    plan = fuse(graph)
    assert "e0:exp e1:exp e2:exp e3:exp ...3 more... e7:exp e8:exp" in table(plan, graph)
    assert to_dot(plan, graph).startswith('digraph "we\\"ird" {')
