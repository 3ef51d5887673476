"""Graphs side by side in one graph, so that one g++ or Verilator build checks them all.

    union(graphs, name, keep_names)   the graphs' inputs, constants, nodes and outputs in one graph, every name
                                      prefixed ``g<k>_`` (k: the graph's index), except in the graphs
                                      ``keep_names`` lists (their names must then clash with no other)
    union_fold(graphs, folds)         their foldings as one folding of the union
    own_depths(plan, plans)           check that each graph is lowered in the union's ``plan`` as in a design of its
                                      own (``plans``); the FIFO depths of those designs, by the union's channel
"""

from __future__ import annotations

from dataclasses import replace

from hlsfuse.ir import Graph
from hlsfuse.lower import Folding

__all__ = ["union", "union_fold", "own_depths"]


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


def own_depths(plan, plans) -> dict[str, int]:
    """Check that each graph of a union (prefixed ``g<k>_``) is lowered in ``plan``, the union's, as ``plans[k]``
    lowers it in a design of its own: the same stages (by sink: kind and cycles per frame, which its folding sets)
    and the same channels in the same order (by tensor: lanes). Returns the union's channel name -> the depth of
    the same FIFO in the graph's own plan: the lowering sizes FIFOs over the whole union's run, which can make one
    deeper than in the graph's own design."""
    depths = {}
    for k, own in enumerate(plans):
        prefix = f"g{k}_"
        shared = [c for c in plan.channels if c.tensor.startswith(prefix)]
        assert [(c.tensor, c.lanes) for c in shared] == [(prefix + c.tensor, c.lanes) for c in own.channels], \
            f"graph {k} ({own.graph}): its channels differ in the union"
        assert _stages(plan, prefix) == _stages(own, ""), f"graph {k} ({own.graph}): its stages differ in the union"
        depths.update((c.name, o.depth) for c, o in zip(shared, own.channels))
    return depths


def _stages(plan, prefix: str) -> list:
    return sorted((s.sink[len(prefix):], s.kind, s.cycles) for s in plan.stages if s.sink.startswith(prefix))
