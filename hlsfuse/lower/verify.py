"""``verify``: a DataflowPlan checked after lowering and before any backend reads it.

    channels   its type is its tensor's; its lanes divide the tensor's innermost dimension and are what its
               producer writes (a stage's output lanes, an input port's) and what its consumer reads for
               that use (a stage's input lanes for its head and prologue, its output lanes for its
               epilogue, one element for an input held whole; an output port's lanes)
    io         the tokens a channel carries per frame are those its producer's schedule writes and its
               consumer's schedule reads
    depths     every FIFO holds at least ``min_depth`` tokens
    factors    a stage's SIMD divides its products per output, its PE its outputs per position, its input
               and output lanes the innermost dimensions of its head input and its output (checked first)

``lower`` runs it on every plan it makes; a plan built or changed by hand (a refolded stage, say) is
checked the same way. A broken rule is an error naming the channel or stage and what was expected.
"""

from __future__ import annotations

from ..errors import HlsfuseError
from ..ir import Graph
from .plan import DataflowPlan, Stage

__all__ = ["verify"]


def _innermost(shape) -> int:
    return shape[-1] if shape else 1


def _reads(stage: Stage, use: str) -> int:
    """Elements per token ``stage`` reads on a channel of ``use``."""
    if use == "held":
        return 1
    if use == "post":
        return stage.schedule.lanes_out
    return stage.schedule.lanes_in  # head, pre, copy


def verify(plan: DataflowPlan, graph: Graph, min_depth: int) -> DataflowPlan:
    """``plan``, if it keeps every rule above; else the first broken one, as an HlsfuseError."""
    where = f"dataflow plan '{plan.top}'"
    for s in plan.stages:
        _check_factors(graph, s, f"{where}: stage '{s.name}'")
    stages = {s.name: s for s in plan.stages}
    writes = {p.name: p.lanes for p in plan.inputs} | {s.name: s.schedule.lanes_out for s in plan.stages}
    reads = {p.name: p.lanes for p in plan.outputs}
    for s in plan.stages:
        for channel, use in zip(s.inputs, s.uses):
            reads[(s.name, channel)] = _reads(s, use)
    for c in plan.channels:
        at = f"{where}: channel '{c.name}' ({c.producer} -> {c.consumer})"
        if c.type != graph.types[c.tensor]:
            raise HlsfuseError(f"{at}: carries {c.type}, but tensor '{c.tensor}' is {graph.types[c.tensor]}")
        if _innermost(c.type.shape) % c.lanes:
            raise HlsfuseError(f"{at}: {c.lanes} lanes do not divide the innermost dimension of {c.type}")
        if writes.get(c.producer) != c.lanes:
            raise HlsfuseError(f"{at}: has {c.lanes} lanes, but its producer writes {writes.get(c.producer)}")
        consumer = reads.get((c.consumer, c.name), reads.get(c.consumer))
        if consumer != c.lanes:
            raise HlsfuseError(f"{at}: has {c.lanes} lanes, but its consumer reads {consumer}")
        for end in (c.producer, c.consumer):
            if end in stages and len(stages[end].schedule.io.get(c.name, ())) != c.tokens:
                moved = len(stages[end].schedule.io.get(c.name, ()))
                raise HlsfuseError(f"{at}: carries {c.tokens} tokens per frame, but the schedule of stage "
                                   f"'{end}' moves {moved}")
        if c.depth < min_depth:
            raise HlsfuseError(f"{at}: depth {c.depth} is below the minimum {min_depth}")
    return plan


def _check_factors(graph: Graph, s: Stage, at: str) -> None:
    f, main = s.schedule.factors, s.schedule.main
    if f.simd is not None and main.products % f.simd:
        raise HlsfuseError(f"{at}: simd {f.simd} does not divide its {main.products} products per output")
    if s.kind in ("window", "rows"):
        outputs = main.out_channels if s.kind == "window" else main.n
        if outputs % f.pe:
            raise HlsfuseError(f"{at}: pe {f.pe} does not divide its {outputs} outputs per position")
    if f.snapshots < 1:
        raise HlsfuseError(f"{at}: holds {f.snapshots} snapshots; at least 1")
    source = graph.node(s.head).inputs[0] if s.head else s.sink
    for what, lanes, tensor in (("input", f.lanes_in, source), ("output", f.lanes_out, s.sink)):
        if _innermost(graph.types[tensor].shape) % lanes:
            raise HlsfuseError(f"{at}: {what} lanes {lanes} do not divide the innermost dimension of "
                               f"'{tensor}' ({graph.types[tensor]})")
