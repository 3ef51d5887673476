"""``DataflowPlan``: a fusion plan as a streaming hardware design, as plain immutable data.

Both hardware backends (Vitis HLS C++ and Verilog) are generated from this one
plan, so they have the same stages, channels, FIFO depths and ROMs:

    AXI4-Stream in ──► ch ──► stage ──► ch ──► fork ──► ch ──► stage ──► ch ──► AXI4-Stream out
                                                  └───► ch ──► stage ──┘
    constants: on-chip ROMs read by the stages that use them

A *stage* computes one fused group (or copies a tensor to several readers: a
*fork*, since a stream has a single reader). Its ``kind`` is the schedule its
group follows (the stream kind of its head op, see ``OpDef.stream``):

    map     output element i from element i of each streamed input, in row-major
            order; inputs of a smaller (broadcast) shape are held on chip whole
    window  conv2d / pools: a line buffer of (KH-1) rows plus a window, then the
            group's elementwise epilogue per output element
    rows    dense / matmul: one input row of K elements, then N outputs
    reduce  an elementwise prologue feeding a reduction (sum, mean, max), or a
            global_avg_pool followed by its epilogue; emits when done
    convert one channel's tokens re-packed to another number of lanes (width converter)
    own     one op that changes the stream's length or order (slice, pad, concat,
            transpose, softmax, argmax, topk): a kernel of its own
    fork    one input channel copied to every output channel

A fused group with a head op runs in phases: the *prologue* (map nodes feeding the
head, over the head's input elements; reduce stages only), the head, and the
*epilogue* (every other node, over the head's output elements).
``lower.phases(graph, stage)`` returns them. A tensor a stage reads in two
different orders (e.g. a conv's input that is also added after the conv) comes
in on two channels, one per use.

Each *channel* is a FIFO carrying one tensor in row-major order, ``lanes`` consecutive
elements (along the innermost axis) per transfer, with the depth (in transfers) the
lowering computed. A stage reads and writes tokens of its own lanes; where a channel's
producer and consumer differ, the lowering puts a *convert* stage between them. Every
number here is printed by ``hlsfuse compile`` in its stage table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import TensorType
from .schedule import Schedule

__all__ = ["STAGE_KINDS", "Channel", "Port", "Rom", "Stage", "DataflowPlan"]

STAGE_KINDS = ("map", "window", "rows", "reduce", "own", "fork", "convert")


@dataclass(frozen=True)
class Channel:
    """A FIFO between two stages, or between a port and a stage."""

    name: str  # identifier in generated code, e.g. "ch3_relu1"
    tensor: str  # the graph tensor it carries
    type: TensorType
    producer: str  # stage name, or the port name for a graph input
    consumer: str  # stage name, or the port name for a graph output
    depth: int  # FIFO depth in tokens (>= 2)
    lanes: int = 1  # elements per token

    @property
    def tokens(self) -> int:
        """Transfers per frame."""
        return self.type.size // self.lanes

    @property
    def width(self) -> int:
        """Bits per transfer."""
        return self.lanes * self.type.dtype.bits


@dataclass(frozen=True)
class Port:
    """An AXI4-Stream port of the top level: a graph input or output."""

    name: str  # identifier, e.g. "x" (sanitized graph tensor name)
    tensor: str
    type: TensorType
    direction: str  # "in" | "out"
    channel: str  # the channel it feeds (in) or drains (out)
    lanes: int = 1  # elements per AXI4-Stream transfer (element 0 in the low bits of TDATA)

    @property
    def tokens(self) -> int:
        return self.type.size // self.lanes


@dataclass(frozen=True)
class Rom:
    """A graph constant held on chip."""

    name: str  # identifier, e.g. "w_conv1"
    constant: str
    type: TensorType


@dataclass(frozen=True)
class Stage:
    """One pipelined stage: a fused group's computation, or a fork."""

    name: str  # identifier, e.g. "s3_conv2d_relu"
    kind: str  # one of STAGE_KINDS
    group: int  # fusion group id; -1 for a fork
    nodes: tuple[str, ...]  # graph nodes computed, in topological order; () for a fork
    head: str | None  # the node whose op sets the schedule (anchor, reduction, own op); None for map and fork
    sink: str  # the tensor the stage produces (a fork: the tensor it copies)
    inputs: tuple[str, ...]  # channel names read
    uses: tuple[str, ...]  # per input channel: "head" (read by the head op, in its own order), "pre" (once per
    # element of the head's input space, by the prologue), "post" (once per element of the output space, by
    # map nodes / the epilogue), "held" (read whole into a buffer before the main loop), "copy" (forks)
    outputs: tuple[str, ...]  # channel names written (one, except for forks)
    roms: tuple[str, ...]  # ROM names read
    held: tuple[str, ...]  # streamed input tensors held whole on chip (broadcast operands, a streamed matmul b)
    schedule: Schedule  # its loop: iterations, what each reads and writes, geometry, buffers

    @property
    def cycles(self) -> int:
        """Cycles per frame: one iteration of its loop per cycle."""
        return self.schedule.iterations

    @property
    def latency(self) -> int:
        """Cycles from the stage's first input token to its first output token, when nothing stalls it."""
        io = self.schedule.io
        first_in = min((int(io[c][0]) for c in self.inputs if len(io[c])), default=0)
        first_out = min(int(io[c][0]) for c in self.outputs)
        return max(0, first_out - first_in)

    @property
    def storage(self) -> int:
        """On-chip elements: line buffers, windows, rows, held inputs, accumulators, frame buffers."""
        return self.schedule.storage


@dataclass(frozen=True)
class DataflowPlan:
    top: str  # name of the top-level function / module
    graph: str
    stages: tuple[Stage, ...]  # in topological order
    channels: tuple[Channel, ...]
    inputs: tuple[Port, ...]  # in graph input order
    outputs: tuple[Port, ...]  # in graph output order
    roms: tuple[Rom, ...]
    cycles: int  # cycles per frame of the whole pipeline in steady state (its slowest stage)
    latency: int  # cycles from the first input element to the first output element
    frame_end: tuple[int, ...] = ()  # the timing replay's frames: the cycle each one's last output left by

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def channel(self, name: str) -> Channel:
        for c in self.channels:
            if c.name == name:
                return c
        raise KeyError(name)
