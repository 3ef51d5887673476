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


def post_dfs_order(graph: Graph) -> list[int]:
    """Positions in ``graph.nodes`` of the op nodes depth first from the outputs (inputs left to
    right), then of the rest in graph order.

    Iterative, on integers (``graph.input_positions``): a 50,000-op chain needs no deep recursion.
    A node is expanded when it is first popped, which is when the recursive walk would first reach
    it; ``~k`` on the stack marks node ``k`` as expanded (all its inputs done).
    """
    nodes, in_pos = graph.nodes, graph.input_positions
    wanted = set(graph.outputs)
    position = {node.name: k for k, node in enumerate(nodes) if node.name in wanted}
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
    """The forward graph of ``graph``; ``barrier`` picks the nodes that must stay alone.

    A barrier and the edge kinds read only a node's op, signature and pattern kind, and a network
    repeats a few signatures many times, so they are worked out once per distinct signature. Nodes of
    one signature share one ``Sig`` object (``ir._infer_all``), which also fixes their op and kind.
    """
    nodes = graph.nodes
    order = post_dfs_order(graph)
    if order == list(range(len(nodes))):
        inputs = graph.input_positions  # the graph's order is the post-DFS order (most graphs are built so)
    else:
        rank = [0] * len(nodes) + [-1]  # rank[-1] is -1: an extern input keeps its -1
        for i, k in enumerate(order):
            rank[k] = i
        inputs = tuple([tuple(map(rank.__getitem__, graph.input_positions[k])) for k in order])
    sigs, kinds = graph.sigs, graph.patterns
    consumers: list[list[int]] = [[] for _ in order]
    edge_kinds: list[list[int]] = [[] for _ in order]
    patterns: list[int] = []
    barriers: dict[str, str] = {}
    # id of the signature -> (barrier reason, pattern, kind of each input edge); the graph holds the
    # signatures, so their ids stay unique while this runs
    known: dict[int, tuple[str | None, int, tuple[int, ...]]] = {}
    for i, (k, srcs) in enumerate(zip(order, inputs)):  # srcs: -1 for a graph input or constant (extern)
        node = nodes[k]
        name = node.name
        sig = sigs[name]
        facts = known.get(id(sig))
        if facts is None:
            facts = known[id(sig)] = _facts(graph, node, barrier, sig, kinds[name])
        reason, pattern, kinds_in = facts
        if reason is not None:
            barriers[name] = reason
        patterns.append(pattern)
        for j, edge in zip(srcs, kinds_in):
            if j < 0:
                continue
            users = consumers[j]
            if users and users[-1] == i:
                # the node reads this tensor again: one edge, the strongest kind (kinds combine by max)
                if edge > edge_kinds[j][-1]:
                    edge_kinds[j][-1] = edge
                continue
            users.append(i)
            edge_kinds[j].append(edge)
    out_set = set(graph.outputs)
    names = [nodes[k].name for k in order]
    return ForwardGraph(
        names=tuple(names),
        position=tuple(order),
        inputs=inputs,
        patterns=tuple(patterns),
        consumers=tuple(map(tuple, consumers)),
        edge_kinds=tuple(map(tuple, edge_kinds)),
        extern=tuple([name in out_set for name in names]),
        barriers=MappingProxyType(barriers),
    )


def _facts(graph: Graph, node: Node, barrier: Barrier, sig, kind: Pattern) -> tuple[str | None, int, tuple[int, ...]]:
    """Why ``node`` stays alone (or ``None``), its pattern as the partitioner sees it, and the kind
    of the edge from each of its inputs: the node's own kind unless one of TVM's special cases applies."""
    reason = barrier(graph, node)
    if reason is not None:
        return reason, _OPAQUE, (_OPAQUE,) * len(node.inputs)
    pattern = int(kind)
    if node.edge_patterns is not None:
        return None, pattern, tuple(map(int, node.edge_patterns))
    if pattern == _TUPLE:
        return None, pattern, (_INJECTIVE,) * len(node.inputs)
    if pattern == _BROADCAST:
        return None, pattern, tuple(_ELEMWISE if shape == sig.out_shape else pattern for shape in sig.shapes)
    return None, pattern, (pattern,) * len(node.inputs)
