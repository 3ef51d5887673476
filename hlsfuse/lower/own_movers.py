"""Own stages that move elements: pad, concat, slice, transpose and upsample2d (``stage_own.py`` says how each runs).

Every main here has ``iterations`` (per frame), ``io()`` (per channel, the iteration of each token) and
``loops`` like those of the other kinds. An operand that is a graph constant is no channel: its ROM is
read in row-major order by a counter, in the iterations that would read a channel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .schedule import Factors

__all__ = ["MAX_RANK", "Dims", "Source", "OwnMain", "OneSource", "PadMain", "ConcatMain", "SliceMain", "TransposeMain",
           "UpsampleMain", "tokens"]


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


class OwnMain:
    """What the main of every own op shares (the ``Main`` protocol): ``lanes_in`` elements per input token, as
    many per output token unless the op says otherwise, and no element phases."""

    lanes_in: int
    phases = ()
    table_reads: tuple[int, ...] = ()  # per lookup table of the op, the reads of one iteration (lower.tables)

    @property
    def lanes_out(self) -> int:
        return self.lanes_in

    @property
    def factors(self) -> Factors:
        return Factors(lanes_in=self.lanes_in, lanes_out=self.lanes_out)

    def node_lanes(self, name: str) -> int:
        return self.lanes_in


class OneSource(OwnMain):
    """An own op's main of one operand, ``source``; ``sources`` as a concat's."""

    source: Source

    @property
    def sources(self) -> tuple[Source, ...]:
        return (self.source,)


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
class PadMain(_Blocks, OneSource):
    source: Source
    in_shape: Dims
    before: Dims
    out_shape: Dims
    write: str
    op: str = "pad"
    lanes_in: int = 1  # the shapes count tokens of this many innermost elements
    block_axis: int | None = None  # None: it streams (mode 'constant'); else the first padded axis
    indices: tuple[Dims, ...] = ()  # per axis from block_axis on: the input index each output index copies

    @property
    def out_block(self) -> int:
        return math.prod(self.out_shape[self.block_axis :])

    @property
    def iterations(self) -> int:
        if self.block_axis is None:
            return math.prod(self.out_shape)
        return self.outer * (self.block + self.out_block)

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return ((("write the output, reading inside the input", self.iterations),) if self.block_axis is None
                else (("store a block", self.block), ("write it padded", self.out_block)))

    def inside(self) -> np.ndarray:
        """Per output element: it comes from the input."""
        axes = [(np.arange(n) >= lo) & (np.arange(n) < lo + size)
                for n, lo, size in zip(self.out_shape, self.before, self.in_shape)]
        mask = axes[0]
        for a in axes[1:]:
            mask = np.logical_and.outer(mask, a)
        return np.asarray(mask).reshape(-1)

    def addresses(self) -> np.ndarray:
        """The element of the block each output element of a padded block copies, in output order."""
        addr = np.zeros((), dtype=np.int64)
        for index, stride in zip(self.indices, _strides(self.in_shape[self.block_axis :])):
            addr = np.add.outer(addr, np.asarray(index, dtype=np.int64) * stride)
        return np.asarray(addr).reshape(-1)

    def io(self):
        if self.block_axis is None:
            every = np.arange(self.iterations, dtype=np.int64)
            return _io({self.source: np.flatnonzero(self.inside())}, self.write, every)
        reads, writes = _blocks(self.outer, (self.block, self.out_block))
        return _io({self.source: reads}, self.write, writes)

    @property
    def distance(self) -> int:
        return _distance(self.addresses(), self.block + np.arange(self.out_block))


@dataclass(frozen=True)
class ConcatMain(OwnMain):
    sources: tuple[Source, ...]
    outer: int  # product of the axes before the concat axis
    inner: int  # product of the axes after it
    extents: Dims  # each input's extent on the axis
    write: str
    op: str = "concat"
    lanes_in: int = 1  # inner (or, along the innermost axis, the extents) counts tokens of this many elements

    @property
    def iterations(self) -> int:
        return self.outer * sum(self.extents) * self.inner

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("copy each input's block in turn", self.iterations),)

    def io(self):
        phases = _blocks(self.outer, tuple(e * self.inner for e in self.extents))
        every = np.arange(self.iterations, dtype=np.int64)
        return _io(dict(zip(self.sources, phases)), self.write, every)


@dataclass(frozen=True)
class SliceMain(_Blocks, OneSource):
    source: Source
    in_shape: Dims
    out_shape: Dims
    start: Dims  # Python's normalised slice per axis: range(*slice(b, e, s).indices(n))
    step: Dims
    block_axis: int | None  # None: streams; else the first reversed axis, from which a block is buffered
    write: str
    op: str = "slice"
    lanes_in: int = 1  # the shapes and starts count tokens of this many innermost elements

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

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return ((("read the input, writing the picked elements", self.iterations),) if self.block_axis is None
                else (("store a block", self.block), ("write its picked elements", self.out_block)))

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
class TransposeMain(_Blocks, OneSource):
    source: Source
    in_shape: Dims
    perm: Dims
    block_axis: int  # axes before it keep their place: one block per index of them
    write: str
    op: str = "transpose"
    lanes_in: int = 1  # the shapes count tokens of this many innermost elements (the innermost axis stays)

    @property
    def iterations(self) -> int:
        return 2 * math.prod(self.in_shape)

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("store a block", self.block), ("write it permuted", self.block))

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
# upsample2d
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class UpsampleMain(OneSource):
    """NHWC upsampling: per input row (``rows`` = N x H of them) of ``width`` pixels of ``channels`` tokens, ``sh``
    output rows, each pixel written ``sw`` times: one iteration per output token. The first copy of a pixel in
    the first output row reads the input; nearest stores it in a row buffer for the other copies, zeros writes
    zeros for them."""

    source: Source
    rows: int
    width: int
    channels: int  # tokens of lanes_in elements per pixel
    sh: int
    sw: int
    zeros: bool
    write: str
    op: str = "upsample2d"
    lanes_in: int = 1

    @property
    def iterations(self) -> int:
        return self.rows * self.sh * self.width * self.sw * self.channels

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("write each input row sh times, each pixel sw times", self.iterations),)

    @property
    def row(self) -> int | None:
        """Tokens of the row buffer (None: it needs none)."""
        return None if self.zeros or self.sh * self.sw == 1 else self.width * self.channels

    def reads(self) -> np.ndarray:
        """The iterations that read an input token (the first copy of each pixel in the first output row)."""
        per_row = self.sh * self.width * self.sw * self.channels
        first = (np.arange(self.width)[:, None] * self.sw * self.channels + np.arange(self.channels)).reshape(-1)
        return (np.arange(self.rows, dtype=np.int64)[:, None] * per_row + first).reshape(-1)

    def io(self):
        return _io({self.source: self.reads()}, self.write, np.arange(self.iterations, dtype=np.int64))

    @property
    def distance(self) -> int:
        """Soonest read-back of a stored token: the pixel's next copy, or the next output row."""
        return self.channels if self.sw > 1 else self.width * self.channels


def tokens(shape: Dims, lanes: int) -> Dims:
    """``shape`` with its innermost extent counted in tokens of ``lanes`` elements."""
    return (*shape[:-1], shape[-1] // lanes)
