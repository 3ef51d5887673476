"""The post-dominator tree of a forward graph, built in one reverse pass by least common ancestors.

Node ``p`` post-dominates ``n`` when every path from ``n`` to a graph output
passes through ``p``. Because the graph is a DAG, visiting nodes in reverse
post-DFS order means all consumers of a node already sit in the tree, and the
node's immediate post-dominator is the least common ancestor of its
consumers (TVM's ``DominatorTree::PostDom``):

        conv                 parent(conv) = LCA(relu, add) = add
        /  \\                 pattern(conv) = max of the edge kinds conv->relu,
     relu   |                                conv->add and of every tree node
        \\  /                                 walked while climbing to add
        add

The LCA climbs from the deeper side (by depth), combining the patterns of the
tree nodes it leaves. A node's ``pattern`` is therefore the strongest kind on
any path to its post-dominator, which is what the partitioner tests. Graph
outputs (extern) and nodes whose uses reach different outputs have no
post-dominator.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ops import Pattern
from .forward import ForwardGraph

__all__ = ["PostDomTree", "build"]

_OPAQUE = int(Pattern.OPAQUE)
_ELEMWISE = int(Pattern.ELEMWISE)


@dataclass(frozen=True)
class PostDomTree:
    """Per node (post-DFS index): tree parent (-1 for none), depth (roots have 1) and the
    combined pattern of the paths to the parent."""

    parent: tuple[int, ...]
    depth: tuple[int, ...]
    pattern: tuple[int, ...]


def build(fg: ForwardGraph) -> PostDomTree:
    n = len(fg)
    parent = [-1] * n
    depth = [1] * n
    pattern = [_ELEMWISE] * n
    extern, consumers, edge_kinds = fg.extern, fg.consumers, fg.edge_kinds
    for i in range(n - 1, -1, -1):
        if extern[i]:
            pattern[i] = _OPAQUE
            continue
        users = consumers[i]
        if not users:
            continue  # unused: no post-dominator, pattern stays ELEMWISE as in TVM
        kinds = edge_kinds[i]
        lca, kind = users[0], kinds[0]
        if len(users) > 1:  # most nodes have one consumer, their post-dominator
            for k in range(1, len(users)):
                if lca >= 0:
                    lca, kind = _lca(lca, users[k], kind, parent, depth, pattern)
                if kinds[k] > kind:
                    kind = kinds[k]
        parent[i] = lca
        depth[i] = depth[lca] + 1 if lca >= 0 else 1
        pattern[i] = kind
    return PostDomTree(tuple(parent), tuple(depth), tuple(pattern))


def _lca(a: int, b: int, kind: int, parent: list[int], depth: list[int], pattern: list[int]) -> tuple[int, int]:
    """Least common ancestor of tree nodes ``a`` and ``b`` (-1 if none), and ``kind``
    combined with the pattern of every node left on the way up."""
    while a != b:
        if a < 0 or b < 0:
            return -1, kind
        da, db = depth[a], depth[b]
        if da < db:
            if pattern[b] > kind:
                kind = pattern[b]
            b = parent[b]
        elif db < da:
            if pattern[a] > kind:
                kind = pattern[a]
            a = parent[a]
        else:
            if pattern[a] > kind:
                kind = pattern[a]
            if pattern[b] > kind:
                kind = pattern[b]
            a = parent[a]
            b = parent[b]
    return a, kind
