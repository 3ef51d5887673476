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
    """Op nodes in post-DFS order. Per node: its consumers and, in the same order, the kinds of
    the edges to them. Patterns are plain ints (``Pattern`` values) for speed."""

    names: tuple[str, ...]
    patterns: tuple[int, ...]
    consumers: tuple[tuple[int, ...], ...]
    edge_kinds: tuple[tuple[int, ...], ...]
    extern: tuple[bool, ...]
    barriers: Mapping[str, str]  # node name -> why it stays alone (the mode's barriers)

    def __len__(self) -> int:
        return len(self.names)


def post_dfs_order(graph: Graph) -> list[Node]:
    """Op nodes depth first from the outputs (inputs left to right), then the rest in graph order.

    Iterative: a 50,000-op chain needs no deep recursion. A node is expanded when it is first
    popped, which is when the recursive walk would first reach it.
    """
    node_map = graph.node_map
    op_inputs = {node.name: [src for src in reversed(node.inputs) if src in node_map] for node in graph.nodes}
    seen: set[str] = set()
    order: list[Node] = []
    for root in [*graph.outputs, *(n.name for n in graph.nodes)]:
        if root in seen:
            continue
        stack = [(root, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(node_map[name])
            elif name not in seen:
                seen.add(name)
                stack.append((name, True))
                stack.extend((src, False) for src in op_inputs[name] if src not in seen)
    return order


def build(graph: Graph, barrier: Barrier) -> ForwardGraph:
    """The forward graph of ``graph``; ``barrier`` picks the nodes that must stay alone."""
    order = post_dfs_order(graph)
    index = {node.name: i for i, node in enumerate(order)}
    types, sigs, kinds = graph.types, graph.sigs, graph.patterns
    consumers: list[list[int]] = [[] for _ in order]
    edge_kinds: list[list[int]] = [[] for _ in order]
    patterns: list[int] = []
    barriers: dict[str, str] = {}
    for i, node in enumerate(order):
        name = node.name
        reason = barrier(graph, node)
        if reason is None:
            pattern = int(kinds[name])
        else:
            barriers[name] = reason
            pattern = _OPAQUE
        patterns.append(pattern)
        srcs = node.inputs
        if len(srcs) > 1 and len(set(srcs)) < len(srcs):
            _add_repeated_edges(node, i, pattern, reason, index, types, sigs, consumers, edge_kinds)
            continue
        for k, src in enumerate(srcs):
            j = index.get(src)
            if j is None:
                continue  # graph input or constant: an extern reference
            consumers[j].append(i)
            edge_kinds[j].append(_edge_kind(node, k, src, pattern, reason, types, sigs))
    out_set = set(graph.outputs)
    return ForwardGraph(
        names=tuple(node.name for node in order),
        patterns=tuple(patterns),
        consumers=tuple(map(tuple, consumers)),
        edge_kinds=tuple(map(tuple, edge_kinds)),
        extern=tuple(node.name in out_set for node in order),
        barriers=MappingProxyType(barriers),
    )


def _edge_kind(node: Node, k: int, src: str, pattern: int, reason, types, sigs) -> int:
    """The kind of the edge from input ``k`` (tensor ``src``) into ``node``."""
    if reason is not None:
        return _OPAQUE
    if node.edge_patterns is not None:
        return int(node.edge_patterns[k])
    if pattern == _TUPLE:
        return _INJECTIVE
    if pattern == _BROADCAST and types[src].shape == sigs[node.name].out_shape:
        return _ELEMWISE
    return pattern


def _add_repeated_edges(node, i, pattern, reason, index, types, sigs, consumers, edge_kinds) -> None:
    """A node reading one tensor several times gets one edge from it, of the strongest kind
    (in the post-dominator tree, kinds combine by max)."""
    strongest: dict[int, int] = {}
    for k, src in enumerate(node.inputs):
        j = index.get(src)
        if j is not None:
            strongest[j] = max(strongest.get(j, -1), _edge_kind(node, k, src, pattern, reason, types, sigs))
    for j, kind in strongest.items():
        consumers[j].append(i)
        edge_kinds[j].append(kind)
