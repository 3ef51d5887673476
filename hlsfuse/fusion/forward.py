"""The indexed forward graph: op nodes in TVM's post-DFS order, with pattern-labelled edges.

This is the input of the post-dominator tree and the partitioner, the same
structure as TVM's ``IndexedForwardGraph``:

    index   post-DFS number: depth first from the graph outputs in order,
            each node's inputs left to right, a node numbered after its inputs.
            Nodes no output depends on follow, in graph order. Ties in the
            partition depend on this order, exactly as in TVM.
    pattern the node's kind as the partitioner sees it (the mode applies here)
    consumers, edge_kinds   per node, its consumers and the kind of each edge
    extern  graph outputs: they can end a group but have no post-dominator

Graph inputs and constants are extern references outside this graph: they
never join a group, so they are not nodes here at all.

Edge patterns follow TVM Relay: an edge carries its consumer's kind, except
that a BROADCAST edge whose input already has the consumer's output shape is
ELEMWISE, a TUPLE consumer's edges are INJECTIVE (its fields are tensors), and
a ``custom`` node's ``edge_patterns`` win. A consumer the mode calls a
*barrier* (in FPGA mode: a buffered or opaque op) is OPAQUE, edges included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..ir import Graph, Node
from ..ops import Pattern

__all__ = ["ForwardGraph", "Barrier", "build"]

Barrier = Callable[[Graph, Node], "str | None"]
"""``barrier(graph, node)``: why ``node`` must stay alone (a one-line reason), or ``None``."""

_OPAQUE = int(Pattern.OPAQUE)
_BROADCAST = int(Pattern.BROADCAST)
_ELEMWISE = int(Pattern.ELEMWISE)
_INJECTIVE = int(Pattern.INJECTIVE)
_TUPLE = int(Pattern.TUPLE)


@dataclass(frozen=True)
class ForwardGraph:
    """Op nodes in post-DFS order. Per node: its position in ``graph.nodes``, the post-DFS
    index of each input (-1 for a graph input or constant), its consumers and, in the same
    order, the kinds of the edges to them. Patterns are plain ints (``Pattern`` values)."""

    names: tuple[str, ...]
    position: tuple[int, ...]
    inputs: tuple[tuple[int, ...], ...]
    patterns: tuple[int, ...]
    consumers: tuple[tuple[int, ...], ...]
    edge_kinds: tuple[tuple[int, ...], ...]
    extern: tuple[bool, ...]
    barriers: Mapping[str, str]  # node name -> why it stays alone (the mode's barriers)

    def __len__(self) -> int:
        return len(self.names)


def _positions(graph: Graph) -> tuple[dict[str, int], list[list[int]]]:
    """Each node's position in ``graph.nodes``, and per node the positions of its inputs
    (-1 for graph inputs and constants)."""
    position = {node.name: k for k, node in enumerate(graph.nodes)}
    get = position.get
    return position, [[get(src, -1) for src in node.inputs] for node in graph.nodes]


def post_dfs_order(graph: Graph, positions: tuple[dict[str, int], list[list[int]]] | None = None) -> list[int]:
    """Positions in ``graph.nodes`` of the op nodes depth first from the outputs (inputs left to
    right), then of the rest in graph order.

    Iterative, on integers: a 50,000-op chain needs no deep recursion. A node is expanded when
    it is first popped, which is when the recursive walk would first reach it; ``~k`` on the
    stack marks node ``k`` as expanded (all its inputs done).
    """
    position, in_pos = positions if positions is not None else _positions(graph)
    nodes = graph.nodes
    seen = bytearray(len(nodes))
    order: list[int] = []
    for root in [*(position[name] for name in graph.outputs), *range(len(nodes))]:
        if seen[root]:
            continue
        stack = [root]
        while stack:
            k = stack.pop()
            if k < 0:
                order.append(~k)
            elif not seen[k]:
                seen[k] = 1
                stack.append(~k)
                for p in reversed(in_pos[k]):
                    if p >= 0:
                        stack.append(p)
    return order


def build(graph: Graph, barrier: Barrier) -> ForwardGraph:
    """The forward graph of ``graph``; ``barrier`` picks the nodes that must stay alone."""
    nodes = graph.nodes
    position, in_pos = _positions(graph)
    order = post_dfs_order(graph, (position, in_pos))
    rank = [0] * len(nodes)
    for i, k in enumerate(order):
        rank[k] = i
    types, sigs, kinds = graph.types, graph.sigs, graph.patterns
    consumers: list[list[int]] = [[] for _ in order]
    edge_kinds: list[list[int]] = [[] for _ in order]
    inputs: list[tuple[int, ...]] = []
    patterns: list[int] = []
    barriers: dict[str, str] = {}
    for i, k in enumerate(order):
        node = nodes[k]
        reason = barrier(graph, node)
        if reason is None:
            pattern = int(kinds[node.name])
        else:
            barriers[node.name] = reason
            pattern = _OPAQUE
        patterns.append(pattern)
        srcs = []
        # the edge kind is the node's own unless one of TVM's special cases applies
        special = reason is not None or node.edge_patterns is not None or pattern in (_BROADCAST, _TUPLE)
        for slot, p in enumerate(in_pos[k]):
            if p < 0:
                srcs.append(-1)  # graph input or constant: an extern reference
                continue
            j = rank[p]
            srcs.append(j)
            kind = _edge_kind(node, slot, pattern, reason, types, sigs) if special else pattern
            users = consumers[j]
            if users and users[-1] == i:
                # the node reads this tensor again: one edge, the strongest kind (kinds combine by max)
                if kind > edge_kinds[j][-1]:
                    edge_kinds[j][-1] = kind
                continue
            users.append(i)
            edge_kinds[j].append(kind)
        inputs.append(tuple(srcs))
    out_set = set(graph.outputs)
    return ForwardGraph(
        names=tuple([nodes[k].name for k in order]),
        position=tuple(order),
        inputs=tuple(inputs),
        patterns=tuple(patterns),
        consumers=tuple(map(tuple, consumers)),
        edge_kinds=tuple(map(tuple, edge_kinds)),
        extern=tuple([nodes[k].name in out_set for k in order]),
        barriers=MappingProxyType(barriers),
    )


def _edge_kind(node: Node, slot: int, pattern: int, reason, types, sigs) -> int:
    """The kind of the edge from input ``slot`` into ``node``."""
    if reason is not None:
        return _OPAQUE
    if node.edge_patterns is not None:
        return int(node.edge_patterns[slot])
    if pattern == _TUPLE:
        return _INJECTIVE
    if pattern == _BROADCAST and types[node.inputs[slot]].shape == sigs[node.name].out_shape:
        return _ELEMWISE
    return pattern
