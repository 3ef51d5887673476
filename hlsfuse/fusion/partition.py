"""TVM's graph partitioner: union-find groups grown into post-dominators in three phases.

Every op node starts as its own group. Each phase walks the nodes in post-DFS
order and tries to fuse node ``n`` (with everything between them) into its
immediate post-dominator ``p``, when every path ``n -> p`` passes the check of
``n``'s kind (the group pattern of each node on the path is tested):

    kind of n             phase   path to p (tree pattern)   nodes strictly between   p
    OUT_ELEMWISE_FUSABLE  0       ELEMWISE                   <= BROADCAST             <= BROADCAST
    ELEMWISE, BROADCAST   0, 1    <= INJECTIVE or COMM_REDUCE <= INJECTIVE            <= OUT_ELEMWISE_FUSABLE
    INJECTIVE, TUPLE      1       any                        <= INJECTIVE             <= INJECTIVE
    <= INJECTIVE          2       p is a TUPLE node whose group is <= INJECTIVE: all <= INJECTIVE
    COMM_REDUCE, OPAQUE   never

So a conv2d takes the elementwise ops after it in phase 0, before injective
ops get their turn in phase 1, and phase 2 lets injective fields join a tuple
that already fused into its consumer. A group holds at most one anchor
(OUT_ELEMWISE_FUSABLE node); a group that takes an anchor takes its pattern.

The node count limit follows TVM exactly, stale counts included: fusing ``n``
into ``p`` is refused when (size of p's group) + (the count kept by each
node's *own* union-find record on the paths n -> p) exceeds ``max_fuse_depth``.
A record's count stops growing once it is merged into another group.

Each node also keeps why its last fusion attempt failed (``Why``); for the node
that ends a group this is why the group ends there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from ..ops import Pattern
from .forward import ForwardGraph
from .postdom import PostDomTree

__all__ = ["Partition", "Why", "partition", "static_why"]

ELEMWISE = int(Pattern.ELEMWISE)
BROADCAST = int(Pattern.BROADCAST)
INJECTIVE = int(Pattern.INJECTIVE)
COMM_REDUCE = int(Pattern.COMM_REDUCE)
OUT_EWISE = int(Pattern.OUT_ELEMWISE_FUSABLE)
TUPLE = int(Pattern.TUPLE)
OPAQUE = int(Pattern.OPAQUE)
KIND = {int(p): p for p in Pattern}  # int -> Pattern without the (slow) enum call


class Why(NamedTuple):
    """Why a node did not fuse into its post-dominator.

    ``code`` is one of: ``opaque`` (the node itself), ``output``, ``unused``, ``no_postdom``,
    ``reduce``, ``opt0``, ``tuple`` (the post-dominator is a tuple), ``dom_kind`` (the paths
    to the post-dominator have kind ``value``), ``path`` (``at`` is in a group of kind
    ``value`` on the way, where at most kind ``limit`` may be), ``depth`` (the group would
    have ``value`` ops). ``at`` is a node index (the post-dominator unless said otherwise) or -1.
    """

    code: str
    at: int = -1
    value: int = 0
    limit: int = 0


@dataclass(frozen=True)
class Partition:
    """Per node (post-DFS index): the root of its group, and per union-find record
    (meaningful at roots) the group pattern and anchor (-1 for none). ``why`` holds the last
    failed fusion attempt of the nodes that made one; for the others see ``static_why``."""

    root: tuple[int, ...]
    pattern: tuple[int, ...]
    anchor: tuple[int, ...]
    why: Mapping[int, Why]


def partition(fg: ForwardGraph, tree: PostDomTree, max_fuse_depth: int, opt_level: int) -> Partition:
    state = _State(fg, tree, max_fuse_depth)
    candidates = [i for i in range(len(fg)) if fg.patterns[i] != OPAQUE and tree.parent[i] >= 0]
    if opt_level > 0:
        for phase in (0, 1, 2):
            state.run(candidates, phase)
    else:
        state.why.update((i, Why("opt0")) for i in candidates if fg.patterns[i] != COMM_REDUCE)
    find, parent = state.find, state.parent
    return Partition(
        root=tuple([r if parent[r] == r else find(i) for i, r in enumerate(parent)]),  # most nodes: a root's child
        pattern=tuple(state.pattern),
        anchor=tuple(state.anchor),
        why=MappingProxyType(state.why),
    )


def static_why(fg: ForwardGraph, tree: PostDomTree, i: int) -> Why:
    """Why node ``i`` does not fuse, when no fusion attempt was made for it."""
    if fg.patterns[i] == OPAQUE:
        return Why("opaque")
    if fg.extern[i]:
        return Why("output")
    if not fg.consumers[i]:
        return Why("unused")
    if tree.parent[i] < 0:
        return Why("no_postdom")
    if fg.patterns[i] == COMM_REDUCE:
        return Why("reduce")
    raise AssertionError(f"node '{fg.names[i]}' made no fusion attempt")


class _State:
    """The union-find records (one per node, indexed like the nodes) and the walks over paths."""

    def __init__(self, fg: ForwardGraph, tree: PostDomTree, max_fuse_depth: int):
        n = len(fg)
        self.succ = fg.consumers
        self.tree = tree
        self.max_fuse_depth = max_fuse_depth
        self.parent = list(range(n))
        self.pattern = list(fg.patterns)
        self.anchor = [i if p == OUT_EWISE else -1 for i, p in enumerate(fg.patterns)]
        self.count = [1] * n
        self.mark = [0] * n
        self.stamp = 0
        self.why: dict[int, Why] = {}

    def find(self, x: int) -> int:
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    def run(self, candidates: list[int], phase: int) -> None:
        """One pass of TVM's RunFuse over the nodes that have a post-dominator and are not opaque."""
        find, parent, pattern, why = self.find, self.parent, self.pattern, self.why
        dom_of, dom_kind_of = self.tree.parent, self.tree.pattern
        for i in candidates:
            dom = dom_of[i]
            kind = pattern[i]  # this node's own record: its kind, or the anchor's if it took one
            if phase == 2:
                # let injective fields join a tuple that already fused into its consumer
                if kind > INJECTIVE:
                    continue
                dom_root = find(dom)
                if pattern[dom_root] == TUPLE:
                    why[i] = Why("tuple", dom)
                elif pattern[dom] == TUPLE and pattern[dom_root] <= INJECTIVE:
                    self.attempt(i, dom, INJECTIVE, INJECTIVE)
                continue
            # find(i) == find(dom), without the calls when both are roots or a root's children (most)
            root, dom_root = parent[i], parent[dom]
            if (root if parent[root] == root else find(i)) == (dom_root if parent[dom_root] == dom_root else find(dom)):
                continue
            if pattern[dom] == TUPLE:
                why[i] = Why("tuple", dom)
                continue
            dom_kind = dom_kind_of[i]
            if kind == OUT_EWISE:
                if phase != 0:
                    continue
                if dom_kind == ELEMWISE:
                    self.attempt(i, dom, BROADCAST, BROADCAST)
                else:
                    why[i] = Why("dom_kind", dom, dom_kind)
            elif kind <= BROADCAST:
                if dom_kind <= INJECTIVE or dom_kind == COMM_REDUCE:
                    # the sink may already hold an anchor: elementwise ops fuse into a conv group
                    self.attempt(i, dom, INJECTIVE, OUT_EWISE)
                else:
                    why[i] = Why("dom_kind", dom, dom_kind)
            elif kind in (INJECTIVE, TUPLE) and phase == 1:  # after phase 0, so that conv2d groups are complete
                self.attempt(i, dom, INJECTIVE, INJECTIVE)
            # COMM_REDUCE never fuses into its consumers

    def attempt(self, src: int, sink: int, inner_max: int, sink_max: int) -> None:
        """Fuse ``src`` and everything between it and ``sink`` into ``sink``'s group, if allowed."""
        members, bad = self.walk(src, sink, inner_max, sink_max)
        if bad >= 0:
            self.why[src] = Why("path", bad, self.pattern[self.find(bad)], sink_max if bad == sink else inner_max)
            return
        root, count = self.find(sink), self.count
        # TVM's CountNodesUptoSink_: the counts of the nodes' own records, src included, sink not
        size = count[root] + sum(map(count.__getitem__, members))
        if size > self.max_fuse_depth:
            self.why[src] = Why("depth", sink, size)
            return
        self.commit(members, root)

    def walk(self, src: int, sink: int, inner_max: int, sink_max: int) -> tuple[list[int], int]:
        """The nodes on the paths src -> sink (src included, sink not), depth first, and the first
        node on them (src excluded, sink included) whose group kind fails, or -1.

        One walk does what TVM's CheckPath, CountNodesUptoSink and Commit each walk for: the three
        visit the same nodes in the same order."""
        find, parent, pattern, succ, mark = self.find, self.parent, self.pattern, self.succ, self.mark
        self.stamp += 1
        stamp = self.stamp
        members = [src]
        stack = list(succ[src])
        while stack:
            v = stack.pop()
            if mark[v] == stamp:
                continue
            mark[v] = stamp
            root = parent[v]
            kind = pattern[root if parent[root] == root else find(v)]  # find(v), without the call for most nodes
            if v == sink:
                if kind > sink_max:
                    return members, v
                continue
            if kind > inner_max:
                return members, v
            members.append(v)
            stack.extend(succ[v])
        return members, -1

    def commit(self, members: list[int], root: int) -> None:
        """TVM's Commit: the group of each member joins the group of root ``root`` (MergeFromTo); an
        anchor brings its pattern."""
        find, parent, count, anchor, pattern = self.find, self.parent, self.count, self.anchor, self.pattern
        for v in members:
            child = parent[v]
            if parent[child] != child:  # find(v), without the call for most nodes
                child = find(v)
            if child == root:
                continue
            count[root] += count[child]
            parent[child] = root
            if anchor[child] >= 0:
                if anchor[root] >= 0 or (pattern[child] > BROADCAST and pattern[root] > BROADCAST):
                    raise AssertionError("fusion would put two anchors in one group")
                anchor[root] = anchor[child]
                if pattern[child] > pattern[root]:
                    pattern[root] = pattern[child]
