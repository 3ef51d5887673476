"""Graphs side by side in one graph, so that one g++ or Verilator build checks them all.

    union(graphs, name, keep_names)   the graphs' inputs, constants, nodes and outputs in one graph, every name
                                      prefixed ``g<k>_`` (k: the graph's index), except in the graphs
                                      ``keep_names`` lists (their names must then clash with no other)
"""

from __future__ import annotations

from dataclasses import replace

from hlsfuse.ir import Graph
from hlsfuse.lower import Folding

__all__ = ["union", "union_fold"]


def union(graphs, name: str = "batch", keep_names: tuple[int, ...] = ()) -> Graph:
    inputs, constants, nodes, outputs = [], [], [], []
    for k, graph in enumerate(graphs):
        p = "" if k in keep_names else f"g{k}_"
        inputs += [replace(i, name=p + i.name) for i in graph.inputs]
        constants += [replace(c, name=p + c.name) for c in graph.constants]
        nodes += [replace(n, name=p + n.name, inputs=tuple(p + s for s in n.inputs)) for n in graph.nodes]
        outputs += [p + o for o in graph.outputs]
    return Graph(name, tuple(inputs), tuple(constants), tuple(nodes), tuple(outputs))


def union_fold(graphs, folds) -> Folding:
    """The foldings ``folds`` of ``graphs`` (one per graph) as one folding of ``union(graphs)``: every name
    prefixed as union prefixes it, a graph's ``port_lanes`` given port by port."""
    merged = {field: [] for field in ("simd", "lanes", "pe", "snapshots", "ports")}
    for k, (graph, fold) in enumerate(zip(graphs, folds)):
        p = f"g{k}_"
        for field in merged:
            merged[field] += [(p + name, value) for name, value in getattr(fold, field)]
        named = {name for name, _ in fold.ports}
        if fold.port_lanes != 1:
            ports = [i.name for i in graph.inputs] + list(graph.outputs)
            merged["ports"] += [(p + name, fold.port_lanes) for name in ports if name not in named]
    return Folding(**{field: tuple(values) for field, values in merged.items()})
