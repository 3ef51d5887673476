"""``FusionPlan``: the partition of a graph into fused groups, as plain immutable data.

Groups are listed in plan order (a topological order of the group graph), each
with its member nodes in the graph's topological order, its TVM group pattern,
its anchor, the tensors it reads from outside (graph inputs and other groups'
outputs; weights are listed apart as ``constants``), the tensors it produces
for others or as graph outputs, and why it ends where it does.

``verify(plan, graph)`` checks the invariants every later stage relies on;
``stats(plan, graph)`` counts what fusion keeps on chip.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from operator import attrgetter
from types import MappingProxyType

from ..errors import HlsfuseError
from ..ir import Graph
from ..ops import Pattern
from .forward import ForwardGraph
from .modes import barrier_rule
from .partition import KIND, Partition, static_why
from .postdom import PostDomTree
from .reasons import explain

__all__ = ["Group", "FusionPlan", "make_plan", "verify", "stats"]


@dataclass(frozen=True, init=False)
class Group:
    """One fused group: a pipeline stage. See docs/fusion.md for each field."""

    id: int
    nodes: tuple[str, ...]
    pattern: Pattern
    anchor: str | None
    inputs: tuple[str, ...]
    constants: tuple[str, ...]
    outputs: tuple[str, ...]
    reason: str

    def __init__(self, id: int, nodes: tuple[str, ...], pattern: Pattern, anchor: str | None,
                 inputs: tuple[str, ...], constants: tuple[str, ...], outputs: tuple[str, ...], reason: str):
        # in one step, as Node does (a large plan has tens of thousands of groups); assigning a
        # field afterwards still raises FrozenInstanceError
        vars(self).update(id=id, nodes=nodes, pattern=pattern, anchor=anchor, inputs=inputs, constants=constants,
                          outputs=outputs, reason=reason)


@dataclass(frozen=True)
class FusionPlan:
    """The groups of graph ``graph`` in plan order, with the options that made them;
    ``group_of`` maps each op node to its group id."""

    graph: str
    mode: str
    max_fuse_depth: int
    opt_level: int
    groups: tuple[Group, ...]

    def __post_init__(self):
        object.__setattr__(self, "groups", tuple(self.groups))

    @cached_property
    def group_of(self) -> Mapping[str, int]:
        return MappingProxyType({name: g.id for g in self.groups for name in g.nodes})

    def group(self, node: str) -> Group:
        """The group holding ``node``."""
        try:
            return self.groups[self.group_of[node]]
        except KeyError:
            raise HlsfuseError(f"fusion plan of graph '{self.graph}' has no node '{node}'") from None


def make_plan(
    graph: Graph, fg: ForwardGraph, tree: PostDomTree, part: Partition, mode: str, max_fuse_depth: int, opt_level: int
) -> FusionPlan:
    """Turn a partition (per post-DFS index) into groups of node names in plan order."""
    rank = [0] * len(fg)
    for i, k in enumerate(fg.position):
        rank[k] = i
    members: defaultdict[int, list[int]] = defaultdict(list)
    for i in rank:  # graph order, so members come out topologically sorted
        members[part.root[i]].append(i)
    # a group's last member ends it and every edge between groups leaves from one, so ordering
    # groups by their last member is topological (verify checks it)
    ordered = sorted(members.values(), key=lambda m: fg.position[m[-1]])
    gid_of = [0] * len(fg)
    for gid, m in enumerate(ordered):
        for i in m:
            gid_of[i] = gid
    groups = []
    for gid, m in enumerate(ordered):
        root, last = part.root[m[0]], m[-1]
        anchor = part.anchor[root]
        why = part.why.get(last) or static_why(fg, tree, last)
        groups.append(
            Group(
                gid,
                tuple([fg.names[i] for i in m]),
                KIND[part.pattern[root]],
                fg.names[anchor] if anchor >= 0 else None,
                *_fast_interface(graph, fg, m, gid_of, gid),
                explain(why, last, fg, tree, graph, part.pattern[last], max_fuse_depth),
            )
        )
    return FusionPlan(graph.name, mode, max_fuse_depth, opt_level, tuple(groups))


def _fast_interface(graph: Graph, fg: ForwardGraph, members: list[int], gid_of: list[int], gid: int):
    """``_interface`` on post-DFS indices, for speed on large graphs."""
    consts, nodes, names = graph.constant_map, graph.nodes, fg.names
    fg_inputs, position, consumers, extern = fg.inputs, fg.position, fg.consumers, fg.extern
    inputs: dict[str, None] = {}
    constants: dict[str, None] = {}
    outputs = []
    for i in members:
        for slot, j in enumerate(fg_inputs[i]):
            if j < 0:
                src = nodes[position[i]].inputs[slot]
                if src in consts:
                    constants[src] = None
                else:
                    inputs[src] = None
            elif gid_of[j] != gid:
                inputs[names[j]] = None
        if extern[i]:
            outputs.append(names[i])
            continue
        for c in consumers[i]:
            if gid_of[c] != gid:  # read by another group
                outputs.append(names[i])
                break
    return tuple(inputs), tuple(constants), tuple(outputs)


def _interface(graph: Graph, names, group_of: Mapping[str, int], gid: int):
    """(inputs, constants, outputs) of the group ``gid`` holding ``names``."""
    consts = graph.constant_map
    inputs: dict[str, None] = {}
    constants: dict[str, None] = {}
    node_map, consumers, out_set = graph.node_map, graph.consumers, set(graph.outputs)
    outputs = []
    for name in names:
        for src in node_map[name].inputs:
            if src in consts:
                constants[src] = None
            elif group_of.get(src) != gid:
                inputs[src] = None
        if name in out_set or any(group_of[user] != gid for user in consumers[name]):
            outputs.append(name)
    return tuple(inputs), tuple(constants), tuple(outputs)


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------


def verify(plan: FusionPlan, graph: Graph) -> None:
    """Check the plan against ``graph``; raise ``HlsfuseError`` naming the first broken invariant.

    Every op node is in exactly one group, members are in topological order, the
    interfaces are right, each group is convex (no path leaves it and comes back),
    groups are in topological order (so the group graph is acyclic), a group holds at
    most one anchor, and an OPAQUE node (in FPGA mode also a buffered one) is alone.
    """
    where = f"fusion plan of graph '{graph.name}'"
    if plan.graph != graph.name:
        raise HlsfuseError(f"{where}: the plan is for graph '{plan.graph}'")
    position = {node.name: k for k, node in enumerate(graph.nodes)}
    owner: dict[str, int] = {}
    for gid, group in enumerate(plan.groups):
        if group.id != gid:
            raise HlsfuseError(f"{where}: group at position {gid} has id {group.id}")
        if not group.nodes:
            raise HlsfuseError(f"{where}: group {gid} is empty")
        for name in group.nodes:
            if name not in position:
                raise HlsfuseError(f"{where}: group {gid} lists '{name}', which is not an op node")
            if name in owner:
                raise HlsfuseError(f"{where}: node '{name}' is in groups {owner[name]} and {gid}")
            owner[name] = gid
        places = [position[name] for name in group.nodes]
        if places != sorted(places):
            raise HlsfuseError(f"{where}: group {gid} does not list its nodes in topological order")
    missing = [node.name for node in graph.nodes if node.name not in owner]
    if missing:
        raise HlsfuseError(f"{where}: node '{missing[0]}' is in no group")
    barrier = barrier_rule(plan.mode)
    for group in plan.groups:
        _verify_group(group, graph, owner, position, barrier, where)
    for group in plan.groups:
        _verify_links(group, graph, owner, where)


def _verify_group(group: Group, graph: Graph, owner, position, barrier, where: str) -> None:
    gid = group.id
    anchors = []
    for name in group.nodes:
        node = graph.node(name)
        alone = graph.patterns[name] == Pattern.OPAQUE or barrier(graph, node) is not None
        if alone and len(group.nodes) > 1:
            raise HlsfuseError(f"{where}: group {gid} fuses '{name}' ({node.op}), which must stay alone")
        if graph.patterns[name] == Pattern.OUT_ELEMWISE_FUSABLE and not alone:
            anchors.append(name)
    if len(anchors) > 1:
        names = ", ".join(anchors)
        raise HlsfuseError(f"{where}: group {gid} holds {len(anchors)} anchors ({names}), at most 1 allowed")
    expected = anchors[0] if anchors else None
    if group.anchor != expected:
        raise HlsfuseError(f"{where}: group {gid} names anchor {group.anchor!r}, expected {expected!r}")
    if len(group.nodes) > 1:
        _verify_convex(group, graph, owner, position, where)


def _verify_links(group: Group, graph: Graph, owner, where: str) -> None:
    """Groups come after the groups they read from, and list their interface right."""
    gid = group.id
    for name in group.nodes:
        for src in graph.node(name).inputs:
            if owner.get(src, gid) > gid:
                raise HlsfuseError(f"{where}: group {gid} reads '{src}' from group {owner[src]}, which comes later")
    inputs, constants, outputs = _interface(graph, group.nodes, owner, gid)
    for field_name, listed, actual in (
        ("inputs", group.inputs, inputs),
        ("constants", group.constants, constants),
        ("outputs", group.outputs, outputs),
    ):
        if listed != actual:
            raise HlsfuseError(f"{where}: group {gid} lists {field_name} {list(listed)}, expected {list(actual)}")


def _verify_convex(group: Group, graph: Graph, owner, position, where: str) -> None:
    """No path from a member through outside nodes reaches a member again.

    Only nodes before the group's last member (in topological order) can lead back.
    """
    last = position[group.nodes[-1]]
    consumers = graph.consumers
    seen: set[str] = set()
    stack = [user for name in group.nodes for user in consumers[name] if owner[user] != group.id]
    while stack:
        name = stack.pop()
        if name in seen or position[name] > last:
            continue
        seen.add(name)
        for user in consumers[name]:
            if owner[user] == group.id:
                detail = f"a path leaves it through '{name}' and returns to '{user}'"
                raise HlsfuseError(f"{where}: group {group.id} is not convex: {detail}")
            stack.append(user)


# --------------------------------------------------------------------------
# stats
# --------------------------------------------------------------------------


def stats(plan: FusionPlan, graph: Graph) -> dict[str, int]:
    """What fusion keeps off memory, against a design with one kernel per op.

    One kernel per op writes every op result to memory once and reads it once per
    consumer node (graph inputs are read once per consumer node). Fused, a tensor used
    only inside its group never touches memory, and a crossing tensor is read once per
    consumer group. Weights are on-chip ROMs in both and are not counted. Elements are
    stored in whole bytes.

    Fused, that is what the groups' interfaces say: a group writes each of its outputs once
    and reads each of its inputs once (its inputs are the tensors it reads from other groups
    and from the graph inputs, each listed once; weights are apart).
    """
    # each tensor's bytes (weights count none); nodes of one signature share one type object, so
    # each object is sized once
    types = graph.types
    type_ids = list(map(id, types.values()))
    distinct = dict(zip(type_ids, types.values()))
    sizes = {k: t.size * math.ceil(t.dtype.bits / 8) for k, t in distinct.items()}
    nbytes = dict(zip(types, map(sizes.__getitem__, type_ids)))
    nbytes.update(dict.fromkeys(graph.constant_map, 0))
    size_of = nbytes.__getitem__
    # unfused: every op writes its result once and reads each of its inputs once
    results = map(attrgetter("name"), graph.nodes)
    reads = chain.from_iterable(map(set, map(attrgetter("inputs"), graph.nodes)))
    unfused = sum(map(size_of, results)) + sum(map(size_of, reads))
    # fused: every group writes each of its outputs once and reads each of its inputs once
    written = list(chain.from_iterable(map(attrgetter("outputs"), plan.groups)))
    read = list(chain.from_iterable(map(attrgetter("inputs"), plan.groups)))
    fused = sum(map(size_of, written)) + sum(map(size_of, read))
    crossing = set(read)
    lengths = [len(g.nodes) for g in plan.groups]
    return {
        "ops": len(graph.nodes),
        "groups": len(plan.groups),
        "fused_groups": sum(1 for n in lengths if n > 1),
        "largest_group": max(lengths, default=0),
        "tensors_on_chip": len(graph.nodes) - len(written),
        "tensors_crossing": len(crossing) - sum(1 for i in graph.inputs if i.name in crossing),
        "memory_bytes_unfused": unfused,
        "memory_bytes_fused": fused,
        "memory_bytes_saved": unfused - fused,
    }
