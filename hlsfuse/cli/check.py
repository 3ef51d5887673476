"""``hlsfuse check GRAPH``: verify a graph and print a summary of it; ``--ranges`` adds the range
analysis (hlsfuse/ranges.py): every tensor's bound and whether its declared type can overflow."""

from __future__ import annotations

import argparse
from collections import Counter

from ..ir import Graph
from ..ops import Pattern
from ..ranges import Range, ranges
from .common import add_graph_arg, input_ranges_arg, load_graph_arg

__all__ = ["add_parser", "run", "summary", "range_table"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check",
        help="verify a graph and summarize it",
        description="Verify a graph (structure, attributes, shapes, types) and print its ops by pattern kind, "
        "tensors, parameters and ports.",
    )
    add_graph_arg(parser)
    parser.add_argument("--ranges", action="store_true",
                        help="print each tensor's value bound, the integer bits it needs, and mark the declared "
                        "types that can overflow (inputs: --input-range, else their types' ranges)")
    return parser


def run(args: argparse.Namespace) -> int:
    graph = load_graph_arg(args.graph, args)
    lines = summary(graph)
    if args.ranges:
        lines += range_table(ranges(graph, input_ranges_arg(args)))
    print("\n".join(lines))
    return 0


def range_table(found: dict[str, Range]) -> list[str]:
    """The ``--ranges`` table: per input and node its type, exact bound, integer bits needed and
    ``OVERFLOW`` where the declared type cannot hold the bound."""
    header = ("tensor", "op", "dtype", "lo", "hi", "int bits", "")
    rows = [header]
    for r in found.values():
        mark = "" if r.fits else "OVERFLOW"
        rows.append((r.name, r.op, str(r.dtype), f"{float(r.lo):.6g}", f"{float(r.hi):.6g}", str(r.int_bits), mark))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    overflows = sum(not r.fits for r in found.values())
    lines = [f"ranges (exact values before each node's assignment to its dtype; {_count(overflows, 'node')} "
             "can overflow):"]
    for row in rows:
        cells = [cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append(("  " + "  ".join(cells[:-1]) + ("  " + row[-1] if row[-1] else "")).rstrip())
    return lines


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
