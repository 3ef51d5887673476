"""Views of a fusion plan: a text table, a JSON-ready dict and a Graphviz drawing.

    table(plan, graph)    groups (id, ops, pattern, anchor, inputs, outputs, why it ends)
                          and a summary of what fusion keeps on chip
    to_json(plan, graph)  {"graph", "mode", ..., "groups": [...], "stats": {...}}
    json_text(plan, graph)  that as the text ``hlsfuse fuse --json`` prints, one group a line
    to_dot(plan, graph)   one cluster per group; edges labelled with tensor type and shape
"""

from __future__ import annotations

import json

from .. import collector
from ..ir import Graph
from ..ops import Pattern
from .plan import FusionPlan, Group, stats

__all__ = ["table", "to_json", "json_text", "to_dot"]

_HEADER = ("id", "ops", "pattern", "anchor", "inputs", "outputs", "why it ends")
_NAME = {kind: kind.name for kind in Pattern}  # without the enum's lookup of .name, once per group


def _shorten(items: list[str], keep: int) -> str:
    """Items joined by spaces; long lists keep their ends around a count of the rest."""
    if len(items) <= keep:
        return " ".join(items)
    head, tail = items[: keep - 2], items[-2:]
    return " ".join([*head, f"...{len(items) - len(head) - len(tail)} more...", *tail])


def _row(group: Group, graph: Graph) -> tuple[str, ...]:
    ops = [f"{name}:{graph.node(name).op}" for name in group.nodes]
    return (
        str(group.id),
        _shorten(ops, 6),
        group.pattern.name,
        group.anchor or "-",
        _shorten(list(group.inputs), 4) or "-",
        _shorten(list(group.outputs), 4) or "-",
        group.reason,
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def table(plan: FusionPlan, graph: Graph) -> str:
    rows = [_HEADER, *(_row(g, graph) for g in plan.groups)]
    widths = [max(len(row[k]) for row in rows) for k in range(len(_HEADER) - 1)]
    settings = f"mode {plan.mode}, max depth {plan.max_fuse_depth}, opt_level {plan.opt_level}"
    lines = [f"fusion plan of graph '{plan.graph}' ({settings})", ""]
    for row in rows:
        cells = [cell.rjust(widths[0]) if k == 0 else cell.ljust(widths[k]) for k, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]))
    s = stats(plan, graph)
    saved = s["memory_bytes_saved"]
    share = f", {100 * saved / s['memory_bytes_unfused']:.0f}%" if s["memory_bytes_unfused"] else ""
    lines += [
        "",
        f"{_count(s['ops'], 'op')} in {_count(s['groups'], 'group')} ({s['fused_groups']} fused, "
        f"largest {_count(s['largest_group'], 'op')})",
        f"tensors: {s['tensors_on_chip']} kept on chip, {s['tensors_crossing']} crossing between groups",
        f"memory traffic vs one kernel per op: {s['memory_bytes_unfused']:,} -> {s['memory_bytes_fused']:,} bytes "
        f"({saved:,} bytes saved{share})",
    ]
    return "\n".join(lines) + "\n"


def to_json(plan: FusionPlan, graph: Graph) -> dict:
    with collector.paused():  # a plain document: no reference cycles
        return _document(plan, graph)


def _document(plan: FusionPlan, graph: Graph) -> dict:
    return {
        "graph": plan.graph,
        "mode": plan.mode,
        "max_fuse_depth": plan.max_fuse_depth,
        "opt_level": plan.opt_level,
        "groups": [
            {
                "id": g.id,
                "nodes": list(g.nodes),
                "pattern": _NAME[g.pattern],
                "anchor": g.anchor,
                "inputs": list(g.inputs),
                "constants": list(g.constants),
                "outputs": list(g.outputs),
                "reason": g.reason,
            }
            for g in plan.groups
        ],
        "stats": stats(plan, graph),
    }


def json_text(plan: FusionPlan, graph: Graph) -> str:
    """``to_json`` as text: laid out as ``json.dumps(indent=2)`` would, except that each group is
    one line. That reads one group a line, and json's compact encoder (in C) writes the groups
    of a 50,000-op plan in a tenth of the time its indenting one (in Python) takes.

    The groups are encoded in one call and then put one a line at each ``}, {"id": ``: that text
    only occurs between two groups, since a group holds no object and a quote inside a string is
    escaped (so a string can neither end in a ``}`` followed by ``, {"`` nor start a key)."""
    fields = []
    for key, value in to_json(plan, graph).items():
        if key == "groups" and value:
            text = json.dumps(value, check_circular=False)  # a tree of fresh lists and dicts
            text = "[\n    " + text[1:-1].replace('}, {"id": ', '},\n    {"id": ') + "\n  ]"
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")  # strings hold no raw newline
        fields.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}"


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(plan: FusionPlan, graph: Graph) -> str:
    """Graphviz DOT text. Node ids are generated (``n3``, ``in0``, ``out1``); names appear only in
    quoted labels. Edges inside a group are thin, edges between groups bold. Weights are not drawn."""
    ids = {inp.name: f"in{k}" for k, inp in enumerate(graph.inputs)}
    ids.update((node.name, f"n{k}") for k, node in enumerate(graph.nodes))
    lines = [f"digraph {_quote(plan.graph)} {{", '  node [shape=box, style="rounded,filled", fillcolor=white];']
    for k, inp in enumerate(graph.inputs):
        lines.append(f"  in{k} [shape=ellipse, label={_quote(inp.name)}];")
    for group in plan.groups:
        label = f"g{group.id}  {group.pattern.name}" + (f"  anchor {group.anchor}" if group.anchor else "")
        fill = "mistyrose" if group.pattern == Pattern.OPAQUE else "aliceblue"
        lines += [
            f"  subgraph cluster_g{group.id} {{",
            f"    label={_quote(label)}; tooltip={_quote(group.reason)}; style=filled; fillcolor={fill};",
        ]
        for name in group.nodes:
            lines.append(f"    {ids[name]} [label={_quote(name + chr(10) + graph.node(name).op)}];")
        lines.append("  }")
    owner = plan.group_of
    for node in graph.nodes:
        for src in dict.fromkeys(node.inputs):
            if src not in ids:
                continue  # a weight
            inside = owner.get(src) == owner[node.name]
            style = "" if inside else ", style=bold"
            lines.append(f"  {ids[src]} -> {ids[node.name]} [label={_quote(str(graph.types[src]))}{style}];")
    for k, name in enumerate(graph.outputs):
        lines.append(f"  out{k} [shape=ellipse, label={_quote(name)}];")
        lines.append(f"  {ids[name]} -> out{k} [label={_quote(str(graph.types[name]))}, style=bold];")
    lines.append("}")
    return "\n".join(lines) + "\n"
