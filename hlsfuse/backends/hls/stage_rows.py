"""Rows stages: dense (x[..., K] times w[N, K] transposed) or matmul (a[..., M, K] @ b[..., K, N]).

The schedule is analytic.py's: per row of the streamed input, K cycles to read the row into a
register array, then N cycles, one output each:

    held inputs ──read whole──► arrays                  (epilogue operands, a streamed w or b)
    for each row (of every batch):
        K cycles:  row[k] = in.read()
        N cycles:  exact MAC of the row with column n of the weights (accumulator Fmt(x)*Fmt(w)
                   summed over K terms), assigned once to the head's type, then the epilogue

dense reads w[n * K + k] (hlsf::dense_mac). matmul reads b[base + k * N + n], where base is the
offset of the batch of b that numpy broadcasting pairs with the current batch of the output
(a table when b's batch dims broadcast). The streamed ``a`` is read once, in order, so its batch
dims must not broadcast: that case raises an HlsfuseError naming the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import HlsfuseError
from ...lower import phases
from ...lower.plan import Stage
from ...types import Fmt
from .context import Context
from .phase import Held, Phase, Write, accumulator, held, inputs, phase, writes
from .view import StageView, make_view

__all__ = ["RowsBody", "view"]


@dataclass(frozen=True)
class Loops:
    acc_type: str
    row_array: str
    batch: str
    row: str
    k: str
    n: str
    acc: str
    offsets: str


@dataclass(frozen=True)
class RowsBody:
    op: str  # "dense" | "matmul"
    loops: Loops
    held: tuple[Held, ...]
    batches: int  # batches of the output (matmul) or 1 (dense)
    rows: int  # rows per batch
    k: int
    n: int
    in_channel: str
    in_type: str
    head_type: str
    head_var: str
    is_float: bool
    accumulator: str
    weights: str  # the ROM or held array of w / b
    offsets: tuple[int, ...]  # matmul: offset of b's batch per output batch; () when always 0
    epilogue: Phase
    writes: tuple[Write, ...]


def _loops(ctx: Context) -> Loops:
    local = ctx.names.local
    return Loops(local("acc_t"), local("xrow"), local("bt"), local("m"), local("k"), local("n"), local("acc"),
                 local("b_base"))


def _batch_offsets(node, a_shape, b_shape, out_shape) -> tuple[int, ...]:
    """Per output batch, the element offset of the batch of b it multiplies (numpy broadcasting)."""
    out_batch, a_batch, b_batch = out_shape[:-2], a_shape[:-2], b_shape[:-2]
    if math.prod(a_batch) != math.prod(out_batch):
        raise HlsfuseError(
            f"{node.where()}: input 'a' with batch dims {list(a_batch)} is broadcast to the output's "
            f"{list(out_batch)}; the HLS backend streams 'a' once, so its batch dims must match the output's"
        )
    matrix = b_shape[-2] * b_shape[-1]
    index = np.arange(math.prod(b_batch), dtype=np.int64).reshape(b_batch)
    offsets = np.broadcast_to(index.reshape((1,) * (len(out_batch) - len(b_batch)) + tuple(b_batch)), out_batch)
    flat = tuple(int(v) * matrix for v in offsets.reshape(-1))
    return flat if any(flat) else ()


def body(ctx: Context, stage: Stage) -> RowsBody:
    graph = ctx.graph
    node = graph.node(stage.head)
    if node.op not in ("dense", "matmul"):
        raise HlsfuseError(f"{node.where()}: a rows stage computes dense or matmul, not '{node.op}'")
    prologue, epilogue = phases(graph, stage.nodes, stage.head)
    if prologue:
        raise HlsfuseError(f"stage '{stage.name}': nodes {', '.join(prologue)} before '{stage.head}' cannot run in it")
    ins = inputs(ctx, stage)
    x, w = node.inputs
    if ins.pre or len(ins.head) != 1 or ins.head[0][1] != x:
        raise HlsfuseError(f"stage '{stage.name}': must stream '{x}' into '{stage.head}' on one channel")
    held_arrays = {t: ctx.array(t) for _, t in ins.held}
    if w in graph.constant_map:
        weights = ctx.rom(w)
    elif w in held_arrays:
        weights = held_arrays[w]
    else:
        raise HlsfuseError(f"{node.where()}: input '{w}' is neither a constant nor held by its stage")
    x_type, w_type, out_type = ctx.type_of(x), ctx.type_of(w), ctx.type_of(stage.head)
    k = x_type.shape[-1]
    n = out_type.shape[-1]
    if node.op == "matmul":
        batches = math.prod(out_type.shape[:-2])
        rows = out_type.shape[-2]
        offsets = _batch_offsets(node, x_type.shape, w_type.shape, out_type.shape)
    else:
        batches, rows, offsets = 1, x_type.size // k, ()
    is_float = x_type.dtype.is_float
    acc_fmt = None
    if not is_float:
        acc_fmt = Fmt.of(x_type.dtype).mul(Fmt.of(w_type.dtype)).accumulate(k)
        acc_fmt.check(f"{node.where()}: the exact accumulation")

    head_var = ctx.value(stage.head)
    post = phase(ctx, epilogue, out_type.size, {stage.head: head_var}, ins.post, held_arrays, ctx.names.local("o"),
                 head_var)
    return RowsBody(
        op=node.op,
        loops=_loops(ctx),
        held=held(ctx, ins.held),
        batches=batches,
        rows=rows,
        k=k,
        n=n,
        in_channel=ins.head[0][0],
        in_type=ctx.ctype(x),
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=is_float,
        accumulator=accumulator(acc_fmt),
        weights=weights,
        offsets=offsets,
        epilogue=post,
        writes=writes(ctx, stage, post.result),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_rows.j2", b, uses_math=uses_math, headers=("hlsfuse/mac.h",))
