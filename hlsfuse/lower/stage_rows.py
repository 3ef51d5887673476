"""Rows stages: dense (x[..., K] times w[N, K] transposed) and matmul (a[..., M, K] @ b[..., K, N]).

    rows    push/emit loop over rows of K inputs, each pushed in K / L tokens (L input lanes) and emitting
            N / P output tokens of P lanes (PE), each over its folds (products / SIMD iterations)

A folded row of one per frame whose weights hold each output's products along their innermost axis is
emitted while it is read (``engine.Streamed``), not from a snapshot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..boards import Dsp
from ..errors import HlsfuseError
from ..ir import Graph
from ..types import Fmt
from .elements import ElementPhase
from .emitting import Emitting, emitting_schedule
from .engine import Engine, Streamed, check_simd
from .packing import Packing, packed_for
from .schedule import DEFAULT_DSP, Factors, Schedule, StageInputs, exact_accumulator, head_of
from .storage import Buffer, memory

__all__ = ["RowsMain", "rows_main", "batch_offsets", "rows_schedule"]


@dataclass(frozen=True)
class RowsMain(Emitting):
    """Rows of K elements, each pushed in K / ``lanes_in`` tokens, each giving N outputs emitted ``pe`` at a time
    (one output token of ``pe`` lanes per emit, over ``folds`` iterations): per row K / lanes_in pushes and
    N / pe x folds emits."""

    op: str  # the head's op, for the reader of the generated code
    products_innermost: bool  # the weights hold an output's products along their innermost axis (dense's w[N, K])
    batches: int  # batches of the output: its dims before the last two
    rows: int  # rows per batch
    k: int
    n: int
    read: str
    weights: str  # a constant or a held input: dense w[N, K], matmul b[..., K, N]
    offsets: tuple[int, ...]  # matmul: element offset of b's batch per output batch; () when always 0
    accumulator: Fmt | None
    epilogue: ElementPhase  # over the head's output tokens of ``pe`` elements (``ElementPhase.widen``)
    writes: tuple[str, ...]
    simd: int  # products per iteration, a divisor of k
    pe: int = 1  # output columns computed per emit (a divisor of n): the output token's lanes
    lanes_in: int = 1  # row elements per push (a divisor of k): the input token's lanes
    multiplier: str = "dsp"  # how the products are built (schedule.MULTIPLIERS)
    packing: Packing | None = None  # multiplier "packed": how PE lanes 2i and 2i + 1 share a DSP (packing.py)

    @property
    def factors(self) -> Factors:
        return Factors(self.simd, self.pe, self.lanes_in, self.pe, multiplier=self.multiplier)

    @property
    def products(self) -> int:
        return self.k

    @property
    def strided(self) -> bool:
        return not self.products_innermost

    @property
    def pushes_per_row(self) -> int:
        return self.k // self.lanes_in

    @property
    def emits_per_row(self) -> int:
        """Output tokens per row (each emitted over ``folds`` iterations)."""
        return self.n // self.pe

    @property
    def base_rows(self) -> tuple[int, ...]:
        """matmul: ``offsets`` counted in rows of b (b seen as rows of N; of K when ``products_innermost``: b^T)."""
        return tuple(o // (self.k if self.products_innermost else self.n) for o in self.offsets)

    @property
    def streamed(self) -> bool:
        """One folded row per frame whose folds take consecutive products (``products_innermost``): emitted while
        it is read (``Streamed``), not from a snapshot."""
        return self.products_innermost and self.batches * self.rows == 1 and self.folds > 1

    @cached_property
    def engine(self) -> Engine | Streamed:
        per_row = self.pushes_per_row
        if self.streamed:
            return Streamed(per_row, self.emits_per_row, self.folds, self.simd, self.lanes_in)
        units = self.batches * self.rows
        return Engine(units * per_row, tuple(range(per_row - 1, units * per_row, per_row)),
                      self.emits_per_row * self.folds, self.folds)

    @property
    def iterations(self) -> int:
        return self.engine.iterations

    def io(self) -> dict[str, np.ndarray]:
        push = self.engine.timing[0]
        out = {self.read: push}
        out.update(dict.fromkeys((*(r.channel for r in self.epilogue.reads), *self.writes), self.engine.writes))
        return out



def batch_offsets(node, a_shape, b_shape, out_shape) -> tuple[int, ...]:
    """Per output batch of a matmul, the element offset of the batch of b it multiplies (broadcasting)."""
    out_batch, a_batch, b_batch = out_shape[:-2], a_shape[:-2], b_shape[:-2]
    if math.prod(a_batch) != math.prod(out_batch):
        raise HlsfuseError(
            f"{node.where()}: input 'a' with batch dims {list(a_batch)} is broadcast to the output's "
            f"{list(out_batch)}; a stage streams 'a' once, so its batch dims must match the output's"
        )
    matrix = b_shape[-2] * b_shape[-1]
    index = np.arange(math.prod(b_batch), dtype=np.int64).reshape(b_batch)
    offsets = np.broadcast_to(index.reshape((1,) * (len(out_batch) - len(b_batch)) + tuple(b_batch)), out_batch)
    flat = tuple(int(v) * matrix for v in offsets.reshape(-1))
    return flat if any(flat) else ()



def rows_main(graph: Graph, head: str, read: str, epilogue: ElementPhase, writes, simd: int | None = None,
              pe: int = 1, lanes: int = 1, multiplier: str = "dsp", dsp: Dsp = DEFAULT_DSP) -> RowsMain:
    """``simd``: products per iteration (None: all k, one output per iteration); ``pe``: output columns per
    emit (``epilogue`` is over tokens of that many); ``lanes``: row elements per push; ``multiplier``: how the
    products are built (``dsp``: the DSP slice packed ones are shaped for)."""
    node = graph.node(head)
    spec = head_of(graph, head)
    x, w = node.inputs[0], node.inputs[spec.weights]
    x_type, w_type, out_type = graph.types[x], graph.types[w], graph.types[head]
    k, n = spec.terms, out_type.shape[-1]
    batches, rows = math.prod(out_type.shape[:-2]), (out_type.shape[-2] if len(out_type.shape) > 1 else 1)
    # a weight matrix with batch dims (a matmul's b) is broadcast to the output's batches
    offsets = batch_offsets(node, x_type.shape, w_type.shape, out_type.shape)
    simd = k if simd is None else simd
    check_simd(node.where(), simd, k)
    if k % lanes or n % pe:
        raise HlsfuseError(f"{node.where()}: lanes {lanes} and pe {pe} must divide its {k} row elements and "
                           f"{n} columns")
    const = graph.constant_map.get(w)
    packing = (packed_for(node.where(), x_type.dtype, w_type.dtype, dsp, pe, raw=None if const is None else const.data)
               if multiplier == "packed" else None)
    return RowsMain(node.op, spec.products_innermost, batches, rows, k, n, read, w, offsets,
                    exact_accumulator(spec, node.where()), epilogue, tuple(writes), simd, pe, lanes, multiplier,
                    packing)




def rows_schedule(s: StageInputs) -> Schedule:
    f = s.factors
    x_bits = s.graph.types[s.graph.node(s.head).inputs[0]].dtype.bits

    def build(read: str, epilogue: ElementPhase):
        main = rows_main(s.graph, s.head, read, epilogue, s.outs, f.simd, f.pe, f.lanes_in, f.multiplier, s.dsp)
        own = [Buffer("row", main.k, x_bits, registers=True), Buffer("snapshot", main.k, x_bits, registers=True)]
        if main.streamed:  # the row is emitted from while it is read; each output keeps its partial sum
            # an emit reads and writes PE consecutive ones, each again a fold (N / PE emits) later
            own[1] = memory("accumulators", main.n, main.accumulator.width if main.accumulator else 64,
                            main.emits_per_row, banks=main.pe, banking="cyclic")
        return main, own, main.batches * main.rows * main.n * main.k, main.n, main.streamed

    return emitting_schedule(s, "rows", build)
