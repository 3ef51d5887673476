"""``hlsfuse check GRAPH``: verify a graph and print a summary of it."""

from __future__ import annotations

import argparse
from collections import Counter

from ..ir import Graph
from ..ops import Pattern
from .common import add_graph_arg, load_graph_arg

__all__ = ["add_parser", "run", "summary"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check",
        help="verify a graph and summarize it",
        description="Verify a graph (structure, attributes, shapes, types) and print its ops by pattern kind, "
        "tensors, parameters and ports.",
    )
    add_graph_arg(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    print("\n".join(summary(load_graph_arg(args.graph, args))))
    return 0


def summary(graph: Graph) -> list[str]:
    """Lines describing a verified graph."""
    lines = [f"graph '{graph.name}' is valid: {_count(len(graph.nodes), 'node')}"]
    lines.append("ops by pattern kind:")
    by_kind: dict[Pattern, Counter] = {}
    for node in graph.nodes:
        by_kind.setdefault(graph.patterns[node.name], Counter())[node.op] += 1
    labels = {kind: f"{kind.name} ({kind.value})" for kind in by_kind}
    width = max(map(len, labels.values()), default=0)
    for kind in sorted(by_kind):
        ops = by_kind[kind]
        detail = ", ".join(op if n == 1 else f"{op} x{n}" for op, n in sorted(ops.items()))
        lines.append(f"  {labels[kind]:<{width}}  {sum(ops.values()):>3}  {detail}")
    tensors = len(graph.inputs) + len(graph.constants) + len(graph.nodes)
    lines.append(
        f"tensors: {tensors} ({_count(len(graph.inputs), 'input')}, {_count(len(graph.constants), 'constant')}, "
        f"{_count(len(graph.nodes), 'node output')})"
    )
    params = sum(c.type.size for c in graph.constants)
    bits = sum(c.type.bits for c in graph.constants)
    lines.append(f"parameters: {params:,} ({bits:,} weight bits, {bits / 8192:,.1f} KiB)")
    lines.append("inputs:")
    lines += [f"  {i.name}  {i.type}" for i in graph.inputs]
    lines.append("outputs:")
    lines += [f"  {name}  {graph.types[name]}" for name in graph.outputs]
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
