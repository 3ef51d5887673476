"""Schedules of own stages: one op that changes the stream's length or order, in one loop per frame.

    pad         one iteration per output element; a position inside the input reads one element
    concat      one iteration per output element, reading the inputs' blocks in turn per outer index
    slice       stream order kept: one iteration per input element, writing the picked ones; a slice
                that reads an axis backwards (the registry's ``reversed_axis``) buffers the block of
                axes from that one inwards: per outer index, read the block, then write its picked
                elements (when the outer index is picked)
    transpose   per index of the axes before the first moved one: read the block, then write it in
                the permuted order
    softmax     per row of N: read it (tracking the max), exp and sum, write e * recip(sum)
    argmax      per outer index: read N * INNER elements keeping INNER running maxima, write INNER
    topk        per row: N reads into a sorted K-slot list, then K writes

Every main here has ``iterations`` (per frame) and ``io()`` (per channel, the iteration of each
token), like those of schedule.py. An operand that is a graph constant is no channel: its ROM is
read in row-major order by a counter, in the iterations that would read a channel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import HlsfuseError
from ..ir import Graph
from ..ops.injective import reversed_axis, slice_ranges
from .schedule import State, memory, registers

__all__ = [
    "Source",
    "SliceMain",
    "PadMain",
    "ConcatMain",
    "TransposeMain",
    "SoftmaxMain",
    "ArgmaxMain",
    "TopkMain",
    "own_main",
    "MAX_RANK",
]

MAX_RANK = 6

Dims = tuple[int, ...]


@dataclass(frozen=True)
class Source:
    """An operand of the op: a channel, or a graph constant read from its ROM (``channel`` None)."""

    tensor: str
    channel: str | None


def _strides(shape: Dims) -> Dims:
    return tuple(math.prod(shape[d + 1 :]) for d in range(len(shape)))


def _io(reads: dict[Source, np.ndarray], write: str, writes: np.ndarray) -> dict[str, np.ndarray]:
    out = {s.channel: it for s, it in reads.items() if s.channel is not None}
    out[write] = writes
    return out


def _blocks(outer: int, sizes: tuple[int, ...]) -> list[np.ndarray]:
    """Iterations of each phase of a loop that runs phases of ``sizes`` iterations once per outer index."""
    period = sum(sizes)
    base = np.arange(outer, dtype=np.int64)[:, None] * period
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return [(base + s + np.arange(n, dtype=np.int64)).reshape(-1) for s, n in zip(starts, sizes)]


class _Blocks:
    """A main that buffers, per index of the axes before ``block_axis``, the block of the axes from it on."""

    in_shape: Dims
    block_axis: int | None

    @property
    def outer(self) -> int:
        return math.prod(self.in_shape[: self.block_axis])

    @property
    def block(self) -> int:
        return math.prod(self.in_shape[self.block_axis :])


def _distance(written: np.ndarray, read: np.ndarray) -> int:
    """Soonest read of an element after its write: ``written[e]`` and ``read[e]`` are iterations of element e."""
    return int((read - written).min())


# --------------------------------------------------------------------------
# pad, concat, slice
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PadMain:
    source: Source
    in_shape: Dims
    before: Dims
    out_shape: Dims
    write: str
    op: str = "pad"

    @property
    def iterations(self) -> int:
        return math.prod(self.out_shape)

    def inside(self) -> np.ndarray:
        """Per output element: it comes from the input."""
        axes = [(np.arange(n) >= lo) & (np.arange(n) < lo + size)
                for n, lo, size in zip(self.out_shape, self.before, self.in_shape)]
        mask = axes[0]
        for a in axes[1:]:
            mask = np.logical_and.outer(mask, a)
        return np.asarray(mask).reshape(-1)

    def io(self):
        every = np.arange(self.iterations, dtype=np.int64)
        return _io({self.source: np.flatnonzero(self.inside())}, self.write, every)


@dataclass(frozen=True)
class ConcatMain:
    sources: tuple[Source, ...]
    outer: int  # product of the axes before the concat axis
    inner: int  # product of the axes after it
    extents: Dims  # each input's extent on the axis
    write: str
    op: str = "concat"

    @property
    def iterations(self) -> int:
        return self.outer * sum(self.extents) * self.inner

    def io(self):
        phases = _blocks(self.outer, tuple(e * self.inner for e in self.extents))
        every = np.arange(self.iterations, dtype=np.int64)
        return _io(dict(zip(self.sources, phases)), self.write, every)


@dataclass(frozen=True)
class SliceMain(_Blocks):
    source: Source
    in_shape: Dims
    out_shape: Dims
    start: Dims  # Python's normalised slice per axis: range(*slice(b, e, s).indices(n))
    step: Dims
    block_axis: int | None  # None: streams; else the first reversed axis, from which a block is buffered
    write: str
    op: str = "slice"

    def picked(self, axes: range) -> np.ndarray:
        """Per element of the input axes ``axes`` (row-major): picked on each of them."""
        mask = np.ones((), dtype=bool)
        for d in axes:
            n, kept = self.in_shape[d], range(self.start[d], self.start[d] + self.step[d] * self.out_shape[d],
                                              self.step[d])
            mask = np.logical_and.outer(mask, np.isin(np.arange(n), list(kept)))
        return np.asarray(mask).reshape(-1)

    @property
    def out_block(self) -> int:
        return math.prod(self.out_shape[self.block_axis :])

    def addresses(self) -> np.ndarray:
        """The element of the block each picked output element of a block reads, in output order."""
        b = self.block_axis
        addr = np.zeros((), dtype=np.int64)
        for d, stride in zip(range(b, len(self.in_shape)), _strides(self.in_shape[b:])):
            index = self.start[d] + np.arange(self.out_shape[d]) * self.step[d]
            addr = np.add.outer(addr, index * stride)
        return np.asarray(addr).reshape(-1)

    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first iteration of each outer index's block, which outer indices are written, iterations)."""
        kept = self.picked(range(self.block_axis))
        length = self.block + kept * self.out_block
        starts = np.concatenate([[0], np.cumsum(length)[:-1]])
        return starts, kept, int(length.sum())

    @property
    def iterations(self) -> int:
        if self.block_axis is None:
            return math.prod(self.in_shape)
        return self._layout()[2]

    def io(self):
        if self.block_axis is None:
            every = np.arange(self.iterations, dtype=np.int64)
            return _io({self.source: every}, self.write, np.flatnonzero(self.picked(range(len(self.in_shape)))))
        starts, kept, _ = self._layout()
        reads = (starts[:, None] + np.arange(self.block)).reshape(-1)
        writes = (starts[kept][:, None] + self.block + np.arange(self.out_block)).reshape(-1)
        return _io({self.source: reads}, self.write, writes)

    @property
    def distance(self) -> int:
        return _distance(self.addresses(), self.block + np.arange(self.out_block))


# --------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TransposeMain(_Blocks):
    source: Source
    in_shape: Dims
    perm: Dims
    block_axis: int  # axes before it keep their place: one block per index of them
    write: str
    op: str = "transpose"

    @property
    def iterations(self) -> int:
        return 2 * math.prod(self.in_shape)

    def addresses(self) -> np.ndarray:
        """The block element each output element of a block reads, in output order."""
        b = self.block_axis
        shape = self.in_shape[b:]
        perm = tuple(p - b for p in self.perm[b:])
        return np.transpose(np.arange(self.block).reshape(shape), perm).reshape(-1)

    def io(self):
        reads, writes = _blocks(self.outer, (self.block, self.block))
        return _io({self.source: reads}, self.write, writes)

    @property
    def distance(self) -> int:
        return _distance(self.addresses(), self.block + np.arange(self.block))


# --------------------------------------------------------------------------
# softmax, argmax, topk
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftmaxMain:
    source: Source
    rows: int
    n: int  # elements per row (the last axis)
    write: str
    op: str = "softmax"

    @property
    def iterations(self) -> int:
        return 3 * self.rows * self.n

    def io(self):
        reads, _, writes = _blocks(self.rows, (self.n, self.n, self.n))
        return _io({self.source: reads}, self.write, writes)


@dataclass(frozen=True)
class ArgmaxMain:
    source: Source
    outer: int
    n: int  # extent of the axis
    inner: int  # product of the axes after it
    write: str
    op: str = "argmax"

    @property
    def iterations(self) -> int:
        return self.outer * (self.n + 1) * self.inner

    def io(self):
        reads, writes = _blocks(self.outer, (self.n * self.inner, self.inner))
        return _io({self.source: reads}, self.write, writes)


@dataclass(frozen=True)
class TopkMain:
    source: Source
    rows: int
    n: int
    k: int
    indices: bool  # the output holds indices, not values
    write: str
    op: str = "topk"

    @property
    def iterations(self) -> int:
        return self.rows * (self.n + self.k)

    def io(self):
        reads, writes = _blocks(self.rows, (self.n, self.k))
        return _io({self.source: reads}, self.write, writes)


# --------------------------------------------------------------------------
# Builder
# --------------------------------------------------------------------------


def _dims(shape, node, what: str) -> Dims:
    if len(shape) > MAX_RANK:
        raise HlsfuseError(f"{node.where()}: {what} has {len(shape)} dims; own stages handle at most {MAX_RANK}")
    return tuple(shape) or (1,)


def _sources(graph: Graph, node, channels: tuple[str, ...], stage: str) -> tuple[Source, ...]:
    """The operands in input order; the lowering gives one channel per streamed operand, in order."""
    left = list(channels)
    sources = []
    for src in node.inputs:
        if src in graph.constant_map:
            sources.append(Source(src, None))
            continue
        if not left or left[0][1] != src:
            raise HlsfuseError(f"stage '{stage}': no channel brings input '{src}' of {node.where()} in order")
        sources.append(Source(src, left.pop(0)[0]))
    if left:
        raise HlsfuseError(f"stage '{stage}': channel '{left[0][0]}' is not read by {node.where()}")
    return tuple(sources)


def own_main(graph: Graph, head: str, channels, write: str, stage: str):
    """(main, buffers, state) of the own stage computing ``head``; ``channels``: (channel, tensor) in order."""
    node, sig = graph.node(head), graph.sigs[head]
    sources = _sources(graph, node, channels, stage)
    x = graph.types[node.inputs[0]]
    in_shape = _dims(x.shape, node, "input 'x'")
    out_shape = _dims(graph.types[head].shape, node, "the output")
    op = node.op
    bits = x.dtype.bits
    if op == "pad":
        before = tuple(sig["pads"][: len(x.shape)]) or (0,)
        return PadMain(sources[0], in_shape, before, out_shape, write), (), ()
    if op == "concat":
        axis = sig["axis"] % len(out_shape)
        extents = tuple(graph.types[s].shape[axis] for s in node.inputs)
        main = ConcatMain(sources, math.prod(out_shape[:axis]), math.prod(out_shape[axis + 1 :]), extents, write)
        return main, (), (State("input being copied and its position", "frame"),)
    if op == "slice":
        picked = slice_ranges(sig) if x.shape else (range(1),)
        axis = reversed_axis(sig) if x.shape else None
        main = SliceMain(sources[0], in_shape, out_shape, tuple(r.start for r in picked),
                         tuple(r.step for r in picked), axis, write)
        if axis is None:
            return main, (), (State("position in the input", "frame"),)
        return main, (memory("block", main.block, bits, main.distance),), (State("block", "overwritten"),)
    if op == "transpose":
        perm = tuple(sig["axes"]) if sig["axes"] is not None else tuple(reversed(range(len(x.shape))))
        perm = perm or (0,)
        axis = next(d for d, p in enumerate(perm) if p != d)
        main = TransposeMain(sources[0], in_shape, perm, axis, write)
        return main, (memory("block", main.block, bits, main.distance),), (State("block", "overwritten"),)
    if op == "softmax":
        n = in_shape[-1]
        main = SoftmaxMain(sources[0], math.prod(in_shape) // n, n, write)
        exp_bits = 32 if x.dtype.is_float else sig["exp_dtype"].bits
        buffers = (memory("row", n, bits, n),) + ((memory("exponentials", n, exp_bits, n),) if not x.dtype.is_float
                                                  else ())
        return main, buffers, (State("row maximum", "first"), State("sum of exponentials", "first"))
    if op == "argmax":
        axis = sig["axis"] % len(in_shape)
        main = ArgmaxMain(sources[0], math.prod(in_shape[:axis]), in_shape[axis], math.prod(in_shape[axis + 1 :]),
                          write)
        index_bits = max(1, (in_shape[axis] - 1).bit_length())
        buffers = (memory("running maxima", main.inner, bits, main.inner),
                   memory("their indices", main.inner, index_bits, main.inner))
        return main, buffers, (State("running maxima", "first"),)
    if op == "topk":
        n = in_shape[-1]
        main = TopkMain(sources[0], math.prod(in_shape) // n, n, sig["k"], sig["ret"] == "indices", write)
        buffers = (registers("sorted values", main.k, bits),
                   registers("their indices", main.k, max(1, (n - 1).bit_length())))
        return main, buffers, (State("sorted list (slot p is empty until element p)", "first"),)
    raise HlsfuseError(f"{node.where()}: no own-stage schedule for op '{op}'")

