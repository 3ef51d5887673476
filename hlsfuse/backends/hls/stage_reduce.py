"""Reduce stages: a prologue of map nodes feeding sum, mean, max or global_avg_pool, then an epilogue.

The schedule is analytic.py's: one cycle per input element, then one per output element:

    held inputs ──read whole──► arrays
    IN cycles:   read the streamed inputs ─► prologue (phase.py) ─► v
                 acc[j] = v on the first element reduced into output j, else acc[j] += v (sum, mean;
                 exact: the accumulator has Fmt(v).accumulate(n)) or acc[j] = max(acc[j], v) (max)
    OUT cycles:  acc[j] assigned once to the head's type (a mean: hlsf::assign_quotient by
                 n = ops.reduce.count) ─► epilogue ─► out

The accumulator of input element i is j = i with the reduced coordinates dropped: the index a
broadcast operand of the reduced shape (with keepdims) would have, so it is computed with index
counters like any broadcast operand (``expr.broadcast_digits``); the element is the first of its
output when all its reduced coordinates are 0, counted the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import HlsfuseError
from ...lower import phases
from ...lower.plan import Stage
from ...ops.injective import normalize_axes
from ...ops.reduce import count
from ...types import Fmt
from .context import Context
from .expr import Term, Wheel, broadcast_digits
from .phase import Held, Phase, Write, accumulator, held, inputs, phase, wheels, writes
from .view import StageView, make_view

__all__ = ["ReduceBody", "view"]

_OPS = ("sum", "mean", "max", "global_avg_pool")


@dataclass(frozen=True)
class ReduceBody:
    op: str  # "sum" | "mean" | "max" (global_avg_pool is a mean over H and W)
    held: tuple[Held, ...]
    prologue: Phase  # over the head's input elements; its result is the value reduced
    epilogue: Phase  # over the head's output elements
    inputs: int  # IN: elements of the head's input
    outputs: int  # OUT: elements of the head's output
    n: int  # input elements per output element (a mean's divisor)
    acc_type: str  # typedef name of the accumulator
    accumulator: str  # its C++ type
    acc: str  # the accumulator array
    index: tuple[Term, ...]  # acc's index for the current input element
    first: tuple[str, ...]  # counters that are all 0 on the first element of an output
    first_var: str
    wheels: tuple[Wheel, ...]  # the counters of ``index`` and ``first``
    head_type: str
    head_var: str
    is_float: bool
    writes: tuple[Write, ...]


def _axes(node, sig) -> tuple[int, ...]:
    ndim = len(sig.shapes[0])
    if node.op == "global_avg_pool":
        return (1, 2)
    return tuple(range(ndim)) if sig["axes"] is None else normalize_axes(sig["axes"], ndim)


def body(ctx: Context, stage: Stage) -> ReduceBody:
    graph = ctx.graph
    node = graph.node(stage.head)
    if node.op not in _OPS:
        raise HlsfuseError(f"{node.where()}: a reduce stage computes {', '.join(_OPS)}, not '{node.op}'")
    sig = graph.sigs[stage.head]
    prologue, epilogue = phases(graph, stage.nodes, stage.head)
    ins = inputs(ctx, stage)
    streamed = ins.head + ins.pre
    if len({t for _, t in streamed}) != len(streamed):
        raise HlsfuseError(f"stage '{stage.name}': reads one tensor on two channels in the same loop")
    source = node.inputs[0]
    in_type, out_type = ctx.type_of(source), ctx.type_of(stage.head)
    held_arrays = {t: ctx.array(t) for _, t in ins.held}
    local = ctx.names.local
    i, o = local("i"), local("o")

    pre = phase(ctx, prologue, in_type.size, {}, streamed, held_arrays, i, ctx.value(source))
    axes = _axes(node, sig)
    shape = in_type.shape
    kept = tuple(1 if a in axes else d for a, d in enumerate(shape))
    reduced = tuple(d if a in axes else 1 for a, d in enumerate(shape))
    index_digits = broadcast_digits(shape, kept)
    first_digits = broadcast_digits(shape, reduced)
    terms, counters = wheels(ctx, [(d[0], d[1]) for d in index_digits + first_digits], in_type.size, i, "a")
    n = count(sig)

    op = "mean" if node.op == "global_avg_pool" else node.op
    is_float = in_type.dtype.is_float
    if op == "max":
        acc_spelling = ctx.ctype(source)
    else:
        fmt = None if is_float else Fmt.of(in_type.dtype).accumulate(n).check(f"{node.where()}: the exact sum")
        acc_spelling = accumulator(fmt)

    head_var = ctx.value(stage.head)
    post = phase(ctx, epilogue, out_type.size, {stage.head: head_var}, ins.post, held_arrays, o, head_var)
    return ReduceBody(
        op=op,
        held=held(ctx, ins.held),
        prologue=pre,
        epilogue=post,
        inputs=in_type.size,
        outputs=out_type.size,
        n=n,
        acc_type=local("acc_t"),
        accumulator=acc_spelling,
        acc=local("acc"),
        index=tuple(Term(terms[(inner, size)].var, stride) for inner, size, stride in index_digits),
        first=tuple(dict.fromkeys(terms[(inner, size)].var for inner, size, _ in first_digits)),
        first_var=local("first"),
        wheels=counters,
        head_type=ctx.ctype(stage.head),
        head_var=head_var,
        is_float=is_float,
        writes=writes(ctx, stage, post.result),
    )


def view(ctx: Context, stage: Stage) -> StageView:
    b = body(ctx, stage)
    ops = {ctx.graph.node(n).op for n in stage.nodes}
    uses_math = ctx.uses_float and bool(ops & {"sigmoid", "tanh", "exp"})
    return make_view(ctx, stage, "hls/stage_reduce.j2", b, uses_math=uses_math, headers=("hlsfuse/numeric.h",))
