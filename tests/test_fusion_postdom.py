"""The forward graph (post-DFS order, edge kinds) and the post-dominator tree, against
straightforward reference computations on random graphs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from strategies import FIXED, pattern_graphs

from hlsfuse import GraphBuilder, Pattern
from hlsfuse.fusion import forward, postdom
from hlsfuse.fusion.modes import no_barrier, stream_barrier


def _recursive_post_dfs(graph) -> list[str]:
    """TVM's visitor order, written the obvious (recursive) way."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name):
        if name in seen or name not in graph.node_map:
            return
        seen.add(name)
        for src in graph.node(name).inputs:
            visit(src)
        order.append(name)

    for name in [*graph.outputs, *(n.name for n in graph.nodes)]:
        visit(name)
    return order


def _brute_postdom(fg):
    """Immediate post-dominators by deleting candidates, and the strongest edge kind on the
    paths to them. Outputs (extern) and unused nodes lead straight to a virtual exit."""
    n = len(fg)
    exit_ = n
    succ = [[exit_] if fg.extern[v] or not fg.consumers[v] else list(fg.consumers[v]) for v in range(n)]

    def reaches_exit(v, removed):
        stack, seen = [v], {v}
        while stack:
            u = stack.pop()
            for w in succ[u]:
                if w == exit_:
                    return True
                if w != removed and w not in seen:
                    seen.add(w)
                    stack.append(w)
        return False

    pdom = [{p for p in range(n) if p != v and not reaches_exit(v, p)} for v in range(n)]
    parent, pattern = [], []
    for v in range(n):
        closest = [p for p in pdom[v] if pdom[v] - {p} <= pdom[p]]
        assert len(closest) <= 1
        p = closest[0] if closest else -1
        parent.append(p)
        if p < 0:
            pattern.append(None)
            continue
        region, stack = {v}, [v]
        while stack:
            u = stack.pop()
            for w in succ[u]:
                if w != p and w != exit_ and w not in region:
                    region.add(w)
                    stack.append(w)
        pattern.append(max(k for u in region for k in fg.edge_kinds[u]))
    return parent, pattern


@settings(max_examples=200)
@given(pattern_graphs(max_nodes=10))
def test_post_dominator_tree_matches_brute_force(graph):
    fg = forward.build(graph, no_barrier)
    tree = postdom.build(fg)
    parent, pattern = _brute_postdom(fg)
    assert list(tree.parent) == parent
    for v, p in enumerate(parent):
        if p >= 0:
            assert tree.pattern[v] == pattern[v], fg.names[v]
            assert tree.depth[v] == tree.depth[p] + 1
    assert list(fg.names) == _recursive_post_dfs(graph)


def test_post_dfs_order_follows_outputs_then_inputs_left_to_right():
    b = GraphBuilder("order", dtype=FIXED)
    x = b.input("x", [4])
    a = b.relu(x, name="a")
    c = b.neg(x, name="c")
    d = b.add(c, a, name="d")  # c is visited before a
    e = b.abs(a, name="e")
    unused = b.exp(x, name="unused")
    b.output(e, d)  # e first
    graph = b.build()
    assert [n.name for n in graph.nodes] == ["a", "c", "d", "e", "unused"]
    fg = forward.build(graph, no_barrier)
    assert fg.names == ("a", "e", "c", "d", "unused")
    assert fg.extern == (False, True, False, True, False)
    assert unused in fg.names


def _edges(graph, barrier=no_barrier):
    fg = forward.build(graph, barrier)
    return {
        (fg.names[v], fg.names[c]): Pattern(k)
        for v in range(len(fg))
        for c, k in zip(fg.consumers[v], fg.edge_kinds[v])
    }


def test_edge_kinds_follow_tvm_relay():
    b = GraphBuilder("edges", dtype=FIXED)
    x = b.input("x", [2, 3])
    r = b.relu(x, name="r")
    v = b.sum(r, axes=[0], keepdims=True, name="v")  # [1, 3]
    bc = b.add(r, v, name="bc")  # BROADCAST: r has the output shape, v does not
    tup = b.custom(bc, r, name="tup", pattern="TUPLE", shape=[2, 3], dtype=FIXED)
    cus = b.custom(tup, r, name="cus", pattern="INJECTIVE", shape=[2, 3], dtype=FIXED,
                   edge_patterns=["OPAQUE", "BROADCAST"])
    b.output(cus)
    edges = _edges(b.build())
    assert edges[("r", "v")] == Pattern.COMM_REDUCE
    assert edges[("r", "bc")] == Pattern.ELEMWISE
    assert edges[("v", "bc")] == Pattern.BROADCAST
    assert edges[("bc", "tup")] == edges[("r", "tup")] == Pattern.INJECTIVE  # tuple fields
    assert edges[("tup", "cus")] == Pattern.OPAQUE and edges[("r", "cus")] == Pattern.BROADCAST


def test_reading_a_tensor_twice_keeps_the_stronger_edge():
    b = GraphBuilder("twice", dtype=FIXED)
    x = b.input("x", [4])
    r = b.relu(x, name="r")
    edges = ["ELEMWISE", "INJECTIVE"]
    b.output(b.custom(r, r, name="c", pattern="ELEMWISE", shape=[4], dtype=FIXED, edge_patterns=edges))
    fg = forward.build(b.build(), no_barrier)
    assert (fg.consumers[0], fg.edge_kinds[0]) == ((1,), (int(Pattern.INJECTIVE),))


def test_fpga_barriers_are_opaque_with_opaque_edges():
    b = GraphBuilder("barrier", dtype=FIXED)
    x = b.input("x", [1, 2, 3, 4])
    r = b.relu(x, name="r")
    t = b.transpose(r, axes=[0, 2, 1, 3], name="t")
    b.output(b.add(t, b.constant("c", np.ones(4)), name="a"))
    graph = b.build()
    fg = forward.build(graph, stream_barrier)
    assert fg.patterns == (int(Pattern.ELEMWISE), int(Pattern.OPAQUE), int(Pattern.BROADCAST))
    assert dict(fg.barriers) == {"t": "transpose [0, 2, 1, 3] changes the element order"}
    assert _edges(graph, stream_barrier)[("r", "t")] == Pattern.OPAQUE
    assert _edges(graph)[("r", "t")] == Pattern.INJECTIVE
