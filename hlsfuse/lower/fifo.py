"""FIFO depths that keep reconvergent paths from deadlocking.

A fork writes each element to all of its outputs, so it stalls when one output
FIFO is full. Where two paths from a fork meet again (a residual block: the
skip connection against a conv branch that holds rows in its line buffer), the
join reads nothing from the short path until the long path delivers; every
element the fork pushes into the short path meanwhile must fit in its FIFO, or
the fork stalls, the long path starves and the design deadlocks.

The depths come from a first-arrival time model of the pipeline (cycles, all
graph inputs starting at 0, one element per cycle per port):

    arrival(ch)  cycle the first element reaches channel ch
    rate(ch)     elements per cycle its producer emits, on average over a frame: its
                 own rate, or less when the inputs it streams arrive more slowly
    start(ch)    cycle the consumer starts reading ch: held inputs are read whole,
                 one after the other, then the head input until the stage's first
                 output (``first`` elements), then every streamed input in lockstep
    depth(ch)    elements that pile up before start: (start - arrival) * rate plus
                 what the producer may emit ahead of that average (a strided
                 window stage emits a whole output row in one input row), with
                 10% and 2 elements of slack, at least ``min_depth``, at most one
                 frame plus slack

and, so that a stage does not slow its producer down in steady state, every
channel holds at least what its producer can write while the consumer reads
nothing (the consumer's ``gap``: a window stage emitting a pixel's outputs and
crossing the padding between rows, a rows stage emitting a row's outputs, a
reduction emitting its results).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import Graph
from .plan import Stage

__all__ = ["Reader", "size_fifos"]

SLACK = 2


@dataclass(frozen=True)
class Reader:
    head_first: int  # head-input elements read before the first output
    pipeline: int  # cycles from reading to writing
    gap: int = 0  # longest run of cycles in a frame in which it reads no streamed input
    burst: int = 0  # outputs it may emit ahead of its average rate


def size_fifos(
    graph: Graph, stages: list[Stage], channels: list[dict], readers: dict[str, Reader], min_depth: int
) -> tuple[dict[str, int], int]:
    """(depth per channel name, cycles from the first input to the first output of the design)."""
    arrival: dict[str, float] = {}
    rate: dict[str, float] = {}
    start: dict[str, float] = {}
    for ch in channels:  # channels leaving an input port
        if ch["producer"] not in {s.name for s in stages}:
            arrival[ch["name"]], rate[ch["name"]] = 0.0, 1.0
    by_stage: dict[str, list[str]] = {}
    for ch in channels:
        by_stage.setdefault(ch["producer"], []).append(ch["name"])
    sizes = {ch["name"]: graph.types[ch["tensor"]].size for ch in channels}

    for stage in stages:
        reader = readers[stage.name]
        t = 0.0
        reads = list(zip(stage.inputs, stage.uses))
        for ch, use in reads:  # held inputs: read whole, one after the other
            if use == "held":
                start[ch] = max(t, arrival[ch])
                t = start[ch] + sizes[ch] / min(rate[ch], 1.0)
        heads = [ch for ch, use in reads if use in ("head", "copy")]
        if stage.kind == "own" and len(heads) > 1:  # concat: one block of each input in turn
            outer = graph.types[stage.sink].size // max(1, sum(sizes[ch] for ch in heads)) or 1
            for ch in heads:
                start[ch] = max(t, arrival[ch])
                t = start[ch] + (sizes[ch] / outer) / min(rate[ch], 1.0)
        else:
            lockstep = [ch for ch, use in reads if use == "pre"]
            for ch in heads:
                begin = max([t, arrival[ch], *(arrival[c] for c in lockstep)])
                for c in (ch, *lockstep):
                    start[c] = begin
                t = begin + reader.head_first / min(rate[ch], 1.0)
        post = [ch for ch, use in reads if use in ("post", "pre") and ch not in start]
        begin = max([t, *(arrival[ch] for ch in post)])
        for ch in post:
            start[ch] = begin
        first_out = begin + reader.pipeline
        out_rate = graph.types[stage.sink].size / max(stage.cycles, 1)
        for ch, use in reads:  # a stage cannot outpace the inputs it streams through
            if use != "held":
                out_rate = min(out_rate, rate[ch] * graph.types[stage.sink].size / sizes[ch])
        for ch in by_stage.get(stage.name, ()):
            arrival[ch], rate[ch] = first_out, min(out_rate, 1.0)

    depths = {}
    for ch in channels:
        name = ch["name"]
        waiting = max(0.0, start.get(name, arrival[name]) - arrival[name]) * rate[name]
        reader = readers.get(ch["consumer"])  # None for an output port, which is always ready
        gap = reader.gap * rate[name] if reader is not None else 0.0
        if waiting > 0:  # a join that starts late: the producer's bursts pile up on top of its average
            producer = readers.get(ch["producer"])
            waiting += producer.burst if producer is not None else 0
        need = max(math.ceil(waiting * 1.1), math.ceil(gap)) + SLACK
        depths[name] = max(min_depth, min(need, sizes[name] + SLACK))
    latency = max((arrival[ch["name"]] for ch in channels if ch["consumer"] not in readers), default=0.0)
    return depths, math.ceil(latency)
