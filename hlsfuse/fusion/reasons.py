"""Why a fused group ends where it does: the partitioner's ``Why`` codes as one-line text.

The node that ends a group is the one whose fusion into its post-dominator
failed; its last failed attempt names the obstacle. Buffered (FPGA mode) and
opaque nodes on the way are named with the op's own reason.
"""

from __future__ import annotations

from ..ir import Graph
from .forward import ForwardGraph
from .partition import KIND, OUT_EWISE, Why
from .postdom import PostDomTree

__all__ = ["explain"]

_NAME = {value: kind.name for value, kind in KIND.items()}  # int -> pattern name, without the enum's lookup


def explain(
    why: Why, i: int, fg: ForwardGraph, tree: PostDomTree, graph: Graph, own_kind: int, max_fuse_depth: int
) -> str:
    """The text for node ``i``'s ``why``; ``own_kind`` is the pattern the node fused as."""
    code = why.code
    if code == "dom_kind":  # the most common ending: first
        barrier = _barrier_on_paths(fg, i, why.at) if fg.barriers else -1
        if barrier >= 0:
            return _blocked(barrier, fg, graph)
        kind = _NAME[why.value]
        if own_kind == OUT_EWISE:
            return f"path to post-dominator {_who(why.at, fg, graph)} is {kind}, not ELEMWISE"
        return f"path to post-dominator {_who(why.at, fg, graph)} is {kind}; only injective or reduction paths take it"
    if code == "opaque":
        reason = fg.barriers.get(fg.names[i], "opaque op")
        return "opaque op: never fuses" if reason == "opaque op" else f"stage of its own: {reason}"
    if code == "output":
        return "graph output"
    if code == "unused":
        return "its result is not used"
    if code == "no_postdom":
        return "no single post-dominator: its uses do not meet again before the outputs"
    if code == "reduce":
        return "reduction (COMM_REDUCE): does not fuse into its consumers"
    if code == "opt0":
        return "opt_level 0: no fusion"
    if code == "tuple":
        return f"post-dominator {_who(why.at, fg, graph)} is a tuple"
    if code == "path":
        if fg.names[why.at] in fg.barriers:
            return _blocked(why.at, fg, graph)
        kind, limit = _NAME[why.value], _NAME[why.limit]
        dom = tree.parent[i]
        if why.at == dom:
            return f"post-dominator {_who(dom, fg, graph)} is in a group of kind {kind}, above {limit}"
        return (f"{_who(why.at, fg, graph)} between it and post-dominator {_who(dom, fg, graph)} is in a group of "
                f"kind {kind}, above {limit}")
    if code == "depth":
        return f"fusing into {_who(why.at, fg, graph)} would make {why.value} ops, over max depth {max_fuse_depth}"
    raise AssertionError(f"unknown fusion reason code {code!r}")


def _who(j: int, fg: ForwardGraph, graph: Graph) -> str:
    return f"'{fg.names[j]}' ({graph.nodes[fg.position[j]].op})"


def _blocked(j: int, fg: ForwardGraph, graph: Graph) -> str:
    reason = fg.barriers[fg.names[j]]
    who = _who(j, fg, graph)
    return f"{who} is opaque" if reason == "opaque op" else f"{who} stands alone: {reason}"


def _barrier_on_paths(fg: ForwardGraph, src: int, sink: int) -> int:
    """A barrier node on the paths src -> sink (sink included), or -1."""
    seen = {src}
    stack = [src]
    while stack:
        v = stack.pop()
        for c in fg.consumers[v]:
            if c in seen:
                continue
            seen.add(c)
            if fg.names[c] in fg.barriers:
                return c
            if c != sink:
                stack.append(c)
    return -1
