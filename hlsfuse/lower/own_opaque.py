"""Own stages of opaque ops: softmax, argmax and topk (``stage_own.py`` says how each runs)."""

from __future__ import annotations

from dataclasses import dataclass

from .own_movers import OneSource, Source, _blocks, _io

__all__ = ["SoftmaxMain", "ArgmaxMain", "TopkMain"]


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
# Builder
# --------------------------------------------------------------------------
