"""Own stages of opaque ops: softmax, argmax, topk, layer_norm and rms_norm (``stage_own.py`` says how each runs).

``table_reads``: per lookup table of the op (``OpDef.tables``, in order), the reads one iteration makes
(``lower.tables``)."""

from __future__ import annotations

from dataclasses import dataclass

from .own_movers import OneSource, OwnMain, Source, _blocks, _io

__all__ = ["SoftmaxMain", "ArgmaxMain", "TopkMain", "NormMain"]


# --------------------------------------------------------------------------
# softmax, argmax, topk
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftmaxMain(OneSource):
    source: Source
    rows: int
    n: int  # elements per row (the last axis)
    write: str
    op: str = "softmax"
    lanes_in: int = 1  # elements per token of the input and the output
    mask: str | None = None  # masked_softmax: the constant [R, N] whose 1s leave positions out (a ROM), else None
    mask_rows: int = 1  # R: row r of the tensor reads mask row r mod R

    @property
    def iterations(self) -> int:
        return 3 * self.rows * self.n // self.lanes_in

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return tuple((what, self.n // self.lanes_in) for what in ("read a row, tracking its max", "exp and sum",
                                                                 "write"))

    @property
    def table_reads(self) -> tuple[int, ...]:
        return (self.lanes_in, 1)  # an exponential per lane, the reciprocal of the sum once

    def io(self):
        t = self.n // self.lanes_in
        reads, _, writes = _blocks(self.rows, (t, t, t))
        return _io({self.source: reads}, self.write, writes)


@dataclass(frozen=True)
class ArgmaxMain(OneSource):
    source: Source
    outer: int
    n: int  # extent of the axis
    inner: int  # product of the axes after it
    write: str
    op: str = "argmax"
    lanes_in: int = 1  # input elements per token: along the innermost axis, which is the axis when inner is 1

    @property
    def lanes_out(self) -> int:
        return self.lanes_in if self.inner > 1 else 1

    @property
    def by_row(self) -> bool:
        """Along the innermost axis over tokens of several elements: per token its first maximum, one index per
        row (else the INNER running maxima over an outer axis)."""
        return self.inner == 1 and self.lanes_in > 1

    @property
    def reads(self) -> int:
        """Input tokens per outer index."""
        return self.n * self.inner // self.lanes_in

    @property
    def writes(self) -> int:
        """Output tokens per outer index."""
        return self.inner // self.lanes_out

    @property
    def iterations(self) -> int:
        return self.outer * (self.reads + self.writes)

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return ((("read a row, keeping its first maximum", self.reads), ("write its index", 1)) if self.by_row
                else (("read a block, keeping the running maxima", self.reads), ("write their indices", self.writes)))

    def io(self):
        reads, writes = _blocks(self.outer, (self.reads, self.writes))
        return _io({self.source: reads}, self.write, writes)


@dataclass(frozen=True)
class TopkMain(OneSource):
    source: Source
    rows: int
    n: int
    k: int
    indices: bool  # the output holds indices, not values
    write: str
    op: str = "topk"
    lanes_in: int = 1  # input elements per token (the output moves one element per token)

    lanes_out = 1

    @property
    def iterations(self) -> int:
        return self.rows * (self.n // self.lanes_in + self.k)

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("read a row into the sorted list", self.n // self.lanes_in), ("write the list", self.k))

    def io(self):
        reads, writes = _blocks(self.rows, (self.n // self.lanes_in, self.k))
        return _io({self.source: reads}, self.write, writes)


# --------------------------------------------------------------------------
# layer_norm, rms_norm
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class NormMain(OwnMain):
    """Per row of N: read it (storing it, summing x and x^2), then write each normalised element, gamma and beta
    read from their ROMs in that pass. A float32 layer_norm sums the squared deviations from the mean in a pass
    of its own between the two."""

    source: Source  # x
    gamma: Source
    beta: Source | None  # None: rms_norm
    rows: int
    n: int  # elements per row (the last axis)
    write: str
    float_passes: bool = False  # a float32 layer_norm: read, deviations, write
    op: str = "layer_norm"
    lanes_in: int = 1  # elements per token of the input, gamma, beta and the output

    @property
    def sources(self) -> tuple[Source, ...]:
        return (self.source, self.gamma) + (() if self.beta is None else (self.beta,))

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        t = self.n // self.lanes_in
        middle = (("sum the squared deviations", t),) if self.float_passes else ()
        return (("read a row, summing x and x^2", t), *middle, ("write the normalised row", t))

    @property
    def iterations(self) -> int:
        return self.rows * sum(count for _, count in self.loops)

    @property
    def table_reads(self) -> tuple[int, ...]:
        return (1,)  # the rsqrt of the row's V, once per iteration, shared by the lanes

    def io(self):
        sizes = tuple(count for _, count in self.loops)
        phases = _blocks(self.rows, sizes)
        return _io({self.source: phases[0]}, self.write, phases[-1])


# --------------------------------------------------------------------------
# Builder
# --------------------------------------------------------------------------
