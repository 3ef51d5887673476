"""The analytic performance model of a stage: cycles per frame, latency, buffers.

Every stage moves at most one element per cycle through each port, following
the schedule its kind implies (the HLS kernels and the Verilog stages run the
same schedules, so rtlsim can check these numbers):

    map     read held inputs whole (H cycles), then one output per cycle (N)
    window  visit every padded position in row-major order; reading a position
            takes C cycles (a padding position too: zeros are shifted in), and a
            position that completes an output pixel then takes Cout cycles
    rows    per row: K cycles to read, N cycles to emit
    reduce  one cycle per input element, then one per output element
    own     streaming kernels (slice, pad, concat): one cycle per element of the
            longer of input and output; buffering kernels: read all, then write all
    fork    one cycle per element

``first`` is how many elements of its head (or only) input a stage must read
before it emits its first output, and ``gap`` the longest run of cycles inside a
frame in which it reads none of its streamed inputs (emitting, padding, reading
held inputs); the FIFO sizing in ``fifo.py`` uses both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import Graph

__all__ = ["PIPELINE_DEPTH", "Cost", "cost"]

PIPELINE_DEPTH = 2
"""Cycles from a stage reading an element to writing the result, inside its pipeline."""


@dataclass(frozen=True)
class Cost:
    cycles: int
    latency: int
    first: int  # head-input elements read before the first output
    line_buffer: int
    storage: int
    gap: int = 0  # longest run of cycles in a frame without reading a streamed input
    burst: int = 0  # outputs it may emit ahead of its average rate (a window stage: one output row)


def _window_geometry(graph: Graph, head: str):
    node = graph.node(head)
    sig = graph.sigs[head]
    n, h, w, c = graph.types[node.inputs[0]].shape
    if node.op == "conv2d":
        kh, kw = graph.types[node.inputs[1]].shape[:2]
        dh, dw = sig["dilation"]
    else:
        (kh, kw), (dh, dw) = sig["pool_size"], (1, 1)
    top, left, bottom, right = sig["padding"]
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    return n, h, w, c, top, left, bottom, right, span_h, span_w


def _window(graph: Graph, head: str, held: int) -> Cost:
    n, h, w, c, top, left, bottom, right, span_h, span_w = _window_geometry(graph, head)
    _, oh, ow, cout = graph.types[head].shape
    hp, wp = h + top + bottom, w + left + right
    cycles = n * (hp * wp * c + oh * ow * cout) + held
    full_rows = min(max(span_h - 1 - top, 0), h)
    in_last_row = min(max(span_w - left, 0), w) if top <= span_h - 1 < top + h else 0
    first = max(1, (full_rows * w + in_last_row) * c)
    latency = held + ((span_h - 1) * wp + span_w) * c + PIPELINE_DEPTH
    line_buffer = (span_h - 1) * wp * c + span_h * span_w * c
    # between two rows: the last pixel's outputs, then the right and left padding
    gap = max(held, cout + (left + right) * c)
    return Cost(cycles, latency, first, line_buffer, held, gap, ow * cout)


def cost(graph: Graph, kind: str, head: str | None, nodes: tuple[str, ...], held: int) -> Cost:
    """The cost of a stage of ``kind`` computing ``nodes`` (``held``: elements of held inputs)."""
    sink = graph.types[nodes[-1]]
    if kind == "map":
        small = sum(graph.types[n].size for n in nodes if graph.types[n].size < sink.size)
        return Cost(held + sink.size, held + PIPELINE_DEPTH, 1, 0, held + small, held)
    node = graph.node(head)
    x = graph.types[node.inputs[0]]
    out = graph.types[head]
    if kind == "window":
        return _window(graph, head, held)
    if kind == "rows":
        k = x.shape[-1]
        rows, per_row = x.size // k, out.shape[-1]
        return Cost(
            rows * (k + per_row) + held, held + k + PIPELINE_DEPTH, k, 0, held + k, max(held, per_row), per_row
        )
    if kind == "reduce":
        gap = held + out.size
        return Cost(x.size + out.size + held, held + x.size + PIPELINE_DEPTH, x.size, 0, held + out.size, gap, out.size)
    if kind == "own":
        return _own(graph, head)
    raise ValueError(f"unknown stage kind {kind!r}")


def _own(graph: Graph, head: str) -> Cost:
    node = graph.node(head)
    ins = [graph.types[s].size for s in node.inputs]
    out = graph.types[head].size
    if node.op in ("pad", "concat"):
        return Cost(out, PIPELINE_DEPTH, 1, 0, 0, out - min(ins))
    sig = graph.sigs[head]
    if node.op == "slice" and all(step > 0 for step in sig["step"] or (1,)):
        return Cost(ins[0], ins[0] - out + PIPELINE_DEPTH, _slice_first(graph, head), 0, 0)
    shape = graph.types[node.inputs[0]].shape
    row = shape[-1]
    last_axis = node.op != "argmax" or sig["axis"] % len(shape) == len(shape) - 1
    if node.op in ("softmax", "topk", "argmax") and last_axis:
        rows = ins[0] // row
        per_row = 3 * row if node.op == "softmax" else row + out // rows
        return Cost(rows * per_row, row + PIPELINE_DEPTH, row, 0, row, per_row - row, out // rows)
    total = sum(ins)
    return Cost(total + out, total + PIPELINE_DEPTH, total, 0, total, out, out)


def _slice_first(graph: Graph, head: str) -> int:
    """Input elements read up to and including the first one the slice keeps."""
    shape = graph.types[graph.node(head).inputs[0]].shape
    sig = graph.sigs[head]
    index = 0
    for axis, dim in enumerate(shape):
        begin = sig["begin"][axis] if axis < len(sig["begin"]) else 0
        begin = begin + dim if begin < 0 else begin
        index = index * dim + min(max(begin, 0), dim - 1)
    return index + 1 if math.prod(shape) else 1
