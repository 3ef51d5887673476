"""Fusion modes: which nodes the partitioner must leave alone.

A mode is only a ``barrier(graph, node)`` predicate; the algorithm is the same.

    tvm    no barriers: TVM's pattern table and rules unchanged (OPAQUE ops stay
           alone by the rules themselves).
    fpga   an op that cannot run in stream order (its ``buffer_reason``: a
           transpose that changes the element order, a concat on an outer axis,
           an op that needs the whole tensor before emitting), an op whose
           stream kind is ``own`` (slice, pad, concat: they change the stream's
           length) or an OPAQUE op is a stage of its own: it is treated as
           OPAQUE, so nothing fuses into it, out of it, or through it.
"""

from __future__ import annotations

from ..errors import HlsfuseError
from ..ir import Graph, Node
from ..ops import Pattern, get_op
from .forward import Barrier

__all__ = ["MODES", "barrier_rule", "no_barrier", "stream_barrier"]


def no_barrier(graph: Graph, node: Node) -> str | None:
    return None


def stream_barrier(graph: Graph, node: Node) -> str | None:
    """Why ``node`` cannot stream through a fused pipeline stage, or ``None``."""
    op, sig = get_op(node.op), graph.sigs[node.name]
    reason = op.buffer_reason(sig)
    if reason is not None:
        return reason
    if graph.patterns[node.name] == Pattern.OPAQUE:
        return "opaque op"
    if op.stream_kind(sig) == "own":
        return f"{node.op} changes the stream's length; it is a streaming stage of its own"
    return None


MODES: dict[str, Barrier] = {"fpga": stream_barrier, "tvm": no_barrier}


def barrier_rule(mode: str) -> Barrier:
    try:
        return MODES[mode]
    except (KeyError, TypeError):
        raise HlsfuseError(f"fusion mode must be one of {', '.join(MODES)}, not {mode!r}") from None
