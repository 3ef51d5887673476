"""Schedules of own stages: one op that changes the stream's length or order, in one loop per frame.

    pad         mode 'constant': one iteration per output element; a position inside the input reads one
                element. Modes 'reflect' and 'edge' copy elements out of stream order: per index of the axes
                before the first padded one, read the block of the axes from it on, then write the padded
                block, each output index of an axis reading the input index of the registry's ``pad_indices``
    concat      one iteration per output element, reading the inputs' blocks in turn per outer index
    slice       stream order kept: one iteration per input element, writing the picked ones; a slice
                that reads an axis backwards (the registry's ``reversed_axis``) buffers the block of
                axes from that one inwards: per outer index, read the block, then write its picked
                elements (when the outer index is picked)
    transpose   per index of the axes before the first moved one: read the block, then write it in
                the permuted order
    upsample2d  one iteration per output token: per input row, sh output rows of each pixel sw times; the
                first copy of a pixel in the first row reads it (nearest: into a row buffer of W x C elements,
                read back by the other copies; zeros: the other copies are zeros)
    softmax     per row of N: read it (tracking the max), exp and sum, write e * recip(sum); masked_softmax
                the same loop, reading its mask from a ROM of R x N bits (positions left out: no max, e = 0)
    layer_norm  per row of N: read it (storing it, summing x and x^2), write (N x - sum x) rsqrt(V) gamma + beta;
    rms_norm    gamma and beta are ROMs read in the write pass (a float32 layer_norm sums the squared
                deviations in a pass between the two)
    argmax      per outer index: read N * INNER elements keeping INNER running maxima, write INNER
    topk        per row: N reads into a sorted K-slot list, then K writes

The mains are in ``own_movers.py`` (pad, concat, slice, transpose) and ``own_opaque.py`` (softmax,
argmax, topk, layer_norm, rms_norm); ``OWN_OPS`` is the one table that says, per op, how it is built and which lanes
it takes.

Lanes (``lanes``: elements per input token, ``lanes_out``: per output token; ``check_lanes`` says which
an op allows):

    pad, concat, slice, transpose, upsample2d   the same loops over tokens of L consecutive innermost elements: the
                shapes (and pads, starts, extents) along the innermost axis count tokens (``tokens``), which
                needs L to divide each of them, a slice step of 1 on that axis, a transpose that keeps it
                innermost and a reflect or edge pad that leaves it alone; a token moves whole, its lanes
                assigned each to the output type
    softmax     rows of N / L tokens per loop: the maximum and the sum over a token's lanes in one iteration
                (fixed point only: a float32 sum would change with its order)
    layer_norm, rms_norm  rows of N / L tokens per pass, a token's lanes summed in one iteration, gamma and beta
                read L at a time (fixed point only, as softmax)
    argmax      over an outer axis: the INNER running maxima as INNER / L tokens; over the innermost axis:
                a row of N / L tokens, the first maximum of each token against the running one, one index
                written per row (lanes_out 1)
    topk        a row of N / L tokens, each inserting its L elements into the sorted list in lane order
                (as L single inserts would), then K writes (lanes_out 1)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import HlsfuseError
from ..ir import Graph
from ..ops.injective import reversed_axis, slice_ranges
from ..ops.pad import pad_indices
from .own_movers import MAX_RANK, ConcatMain, Dims, PadMain, SliceMain, Source, TransposeMain, UpsampleMain, tokens
from .own_opaque import ArgmaxMain, NormMain, SoftmaxMain, TopkMain
from .schedule import Schedule, StageInputs
from .storage import COUNTERS, State, memory, registers

__all__ = ["OwnOp", "OWN_OPS", "own_main", "check_lanes", "lanes_out", "own_schedule"]


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


def _perm(sig, rank: int) -> Dims:
    """A transpose's permutation: its axes, or all of them reversed."""
    return tuple(sig["axes"]) if sig["axes"] is not None else tuple(reversed(range(rank)))


def _output_refuses(graph: Graph, node, lanes: int) -> str | None:
    """An output written in tokens of the input's lanes needs them to divide its innermost dimension."""
    y = graph.types[node.name]
    if _own_op(node).lanes_out(graph, node, lanes) == lanes and y.shape[-1] % lanes:
        return f"its output's innermost dimension {y.shape[-1]} is not a multiple of {lanes}"
    return None


def _first(*rules):
    """The first reason of ``rules`` (each ``refuses(graph, node, lanes)``) to refuse."""
    return lambda graph, node, lanes: next((why for rule in rules if (why := rule(graph, node, lanes))), None)


def _pad_refuses(graph: Graph, node, lanes: int) -> str | None:
    sig, last = graph.sigs[node.name], len(graph.types[node.inputs[0]].shape) - 1
    if sig["pads"][last] % lanes:
        return f"its padding before the innermost axis ({sig['pads'][last]}) is not a multiple of {lanes}"
    if sig["mode"] != "constant" and (sig["pads"][last] or sig["pads"][-1]):
        return f"its {sig['mode']} padding of the innermost axis copies elements, not whole tokens"
    return None


def _concat_refuses(graph: Graph, node, lanes: int) -> str | None:
    y = graph.types[node.name]
    bad = [s for s in node.inputs if graph.types[s].shape[-1] % lanes]
    if graph.sigs[node.name]["axis"] % len(y.shape) == len(y.shape) - 1 and bad:
        return f"input '{bad[0]}' has {graph.types[bad[0]].shape[-1]} elements on the innermost (concat) axis"
    return None


def _slice_refuses(graph: Graph, node, lanes: int) -> str | None:
    r = slice_ranges(graph.sigs[node.name])[len(graph.types[node.inputs[0]].shape) - 1]
    if r.step != 1 or r.start % lanes:
        return f"it slices the innermost axis from {r.start} by {r.step}: a token must start at a multiple of " \
               f"{lanes} and step 1"
    return None


def _transpose_refuses(graph: Graph, node, lanes: int) -> str | None:
    rank = len(graph.types[node.inputs[0]].shape)
    return "it moves the innermost axis" if _perm(graph.sigs[node.name], rank)[-1] != rank - 1 else None


def _softmax_refuses(graph: Graph, node, lanes: int) -> str | None:
    if graph.types[node.inputs[0]].dtype.is_float:
        return "a float32 softmax sums its row one element at a time (the sum's order is the reference's)"
    return None


def _norm_refuses(graph: Graph, node, lanes: int) -> str | None:
    if graph.types[node.inputs[0]].dtype.is_float:
        return "a float32 normalisation sums its row one element at a time (the sum's order is the reference's)"
    return None


def _argmax_lanes_out(graph: Graph, node, lanes: int) -> int:
    rank = len(graph.types[node.inputs[0]].shape)
    return 1 if graph.sigs[node.name]["axis"] % max(rank, 1) == rank - 1 else lanes


@dataclass(frozen=True)
class OwnOp:
    """How an own op runs (the table ``OWN_OPS``): ``build(graph, node, sources, in_shape, out_shape, write,
    lanes)`` -> (main, buffers, state); ``refuses(graph, node, lanes)``: why it cannot take ``lanes`` input
    elements per token once they divide its input's innermost dimension (None: it can);
    ``lanes_out(graph, node, lanes)``: the elements per output token."""

    build: Callable
    refuses: Callable[[Graph, object, int], str | None] = _output_refuses
    lanes_out: Callable[[Graph, object, int], int] = lambda graph, node, lanes: lanes


def _lanes_refused(graph: Graph, head: str, lanes: int) -> str | None:
    """Why the own stage of ``head`` cannot move ``lanes`` input elements per token (None: it can)."""
    if lanes == 1:
        return None
    node = graph.node(head)
    x = graph.types[node.inputs[0]]
    if not x.shape or x.shape[-1] % lanes:
        return f"its input's innermost dimension {x.shape[-1] if x.shape else 1} is not a multiple of {lanes}"
    return _own_op(node).refuses(graph, node, lanes)


def check_lanes(graph: Graph, head: str, lanes: int, where: str) -> None:
    """Refuse ``lanes`` input elements per token for the own stage of ``head``."""
    why = _lanes_refused(graph, head, lanes)
    if why is not None:
        raise HlsfuseError(f"{where}: a {graph.node(head).op} stage cannot take lanes {lanes}: {why}")


def lanes_out(graph: Graph, head: str, lanes: int) -> int:
    """Elements per output token of the own stage of ``head`` taking ``lanes`` per input token."""
    node = graph.node(head)
    return _own_op(node).lanes_out(graph, node, lanes)


def _pad_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    """A pad: streaming in mode 'constant', else over blocks from the first padded axis."""
    sig, bits = graph.sigs[node.name], graph.types[node.inputs[0]].dtype.bits
    rank = len(sig["pads"]) // 2
    before, after = tuple(sig["pads"][:rank]) or (0,), tuple(sig["pads"][rank:]) or (0,)
    shape = tokens(in_shape, lanes)
    padded = [d for d in range(len(shape)) if before[d] or after[d]]
    if sig["mode"] == "constant" or not padded:
        main = PadMain(sources[0], shape, tokens(before, lanes), tokens(out_shape, lanes), write, lanes_in=lanes)
        return main, (), ()
    axis = padded[0]  # lanes leave the innermost axis unpadded (check_lanes): its widths count tokens as they are
    widths = list(zip(before, after))[axis:]
    indices = tuple(tuple(int(i) for i in index) for index in pad_indices(shape[axis:], widths, sig["mode"]))
    main = PadMain(sources[0], shape, tokens(before, lanes), tokens(out_shape, lanes), write, lanes_in=lanes,
                   block_axis=axis, indices=indices)
    block = memory("block", main.block * lanes, bits, main.distance, banks=lanes, banking="cyclic")
    return main, (block,), (State("block", "overwritten"),)


def _concat_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    axis = graph.sigs[node.name]["axis"] % len(out_shape)
    extents = tuple(graph.types[s].shape[axis] for s in node.inputs)
    inner = math.prod(out_shape[axis + 1 :])
    if axis == len(out_shape) - 1:
        extents = tuple(e // lanes for e in extents)
    else:
        inner //= lanes
    main = ConcatMain(sources, math.prod(out_shape[:axis]), inner, extents, write, lanes_in=lanes)
    return main, (), (State("input being copied and its position", "frame"),)


def _slice_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    sig, x = graph.sigs[node.name], graph.types[node.inputs[0]]
    picked = slice_ranges(sig) if x.shape else (range(1),)
    axis = reversed_axis(sig) if x.shape else None
    start = tuple(r.start for r in picked)
    main = SliceMain(sources[0], tokens(in_shape, lanes), tokens(out_shape, lanes), tokens(start, lanes),
                     tuple(r.step for r in picked), axis, write, lanes_in=lanes)
    if axis is None:
        return main, (), (State("position in the input", "frame"),)
    block = memory("block", main.block * lanes, x.dtype.bits, main.distance, banks=lanes, banking="cyclic")
    return main, (block,), (State("block", "overwritten"),)


def _transpose_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    x = graph.types[node.inputs[0]]
    perm = _perm(graph.sigs[node.name], len(x.shape)) or (0,)
    axis = next(d for d, p in enumerate(perm) if p != d)
    main = TransposeMain(sources[0], tokens(in_shape, lanes), perm, axis, write, lanes_in=lanes)
    block = memory("block", main.block * lanes, x.dtype.bits, main.distance, banks=lanes, banking="cyclic")
    return main, (block,), (State("block", "overwritten"),)


def _upsample_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    sig, bits = graph.sigs[node.name], graph.types[node.inputs[0]].dtype.bits
    n, h, w, c = in_shape
    sh, sw = sig["factors"]
    main = UpsampleMain(sources[0], n * h, w, c // lanes, sh, sw, sig["mode"] == "zeros", write, lanes_in=lanes)
    if main.row is None:
        return main, (), ()
    row = memory("row", main.row * lanes, bits, main.distance, banks=lanes, banking="cyclic")
    return main, (row,), (State("row", "overwritten"),)


def _softmax_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    x, sig = graph.types[node.inputs[0]], graph.sigs[node.name]
    n = in_shape[-1]
    main = SoftmaxMain(sources[0], math.prod(in_shape) // n, n, write, lanes_in=lanes)
    exp_bits = 32 if x.dtype.is_float else sig["exp_dtype"].bits
    t = n // lanes  # a token is read back a row of tokens later
    buffers = (memory("row", n, x.dtype.bits, t, banks=lanes, banking="cyclic"),) + (
        (memory("exponentials", n, exp_bits, t, banks=lanes, banking="cyclic"),) if not x.dtype.is_float else ())
    return main, buffers, (State("row maximum", "first"), State("sum of exponentials", "first"))


def _masked_softmax_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    """softmax's main, with its mask (a constant, ``ops.opaque``) as a ROM read a token of L bits at a time."""
    main, buffers, state = _softmax_main(graph, node, sources[:1], in_shape, out_shape, write, lanes)
    mask = graph.types[sources[1].tensor]
    main = dataclasses.replace(main, mask=sources[1].tensor, mask_rows=mask.shape[0])
    rom = memory("mask", mask.size, 1, banks=lanes, banking="cyclic", tensor=sources[1].tensor, rom=True)
    return main, (*buffers, rom), state
def _norm_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    x = graph.types[node.inputs[0]]
    computed = [s.tensor for s in sources[1:] if s.channel is not None]
    if computed:
        raise HlsfuseError(f"{node.where()}: its input '{computed[0]}' is computed by another stage; {node.op}'s "
                           "gamma and beta must be graph constants (ROMs read once per row)")
    n = in_shape[-1]
    beta = sources[2] if len(sources) > 2 else None
    main = NormMain(sources[0], sources[1], beta, math.prod(in_shape) // n, n, write,
                    float_passes=x.dtype.is_float and beta is not None, op=node.op, lanes_in=lanes)
    # a token is read back (to be written) a row of tokens later
    row = memory("row", n, x.dtype.bits, n // lanes, banks=lanes, banking="cyclic")
    sums = "row sum and sum of squares" if not main.float_passes else "row sum and sum of squared deviations"
    return main, (row,), (State(sums, "first"),)


def _argmax_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    axis = graph.sigs[node.name]["axis"] % len(in_shape)
    main = ArgmaxMain(sources[0], math.prod(in_shape[:axis]), in_shape[axis], math.prod(in_shape[axis + 1 :]),
                      write, lanes_in=lanes)
    bits, index_bits = graph.types[node.inputs[0]].dtype.bits, max(1, (in_shape[axis] - 1).bit_length())
    held, banks = main.inner // main.lanes_out, main.lanes_out  # read back a row of tokens later
    buffers = (memory("running maxima", main.inner, bits, held, banks=banks, banking="cyclic"),
               memory("their indices", main.inner, index_bits, held, banks=banks, banking="cyclic"))
    return main, buffers, (State("running maxima", "first"),)


def _topk_main(graph: Graph, node, sources, in_shape: Dims, out_shape: Dims, write: str, lanes: int):
    sig, n = graph.sigs[node.name], in_shape[-1]
    main = TopkMain(sources[0], math.prod(in_shape) // n, n, sig["k"], sig["ret"] == "indices", write, lanes_in=lanes)
    buffers = (registers("sorted values", main.k, graph.types[node.inputs[0]].dtype.bits),
               registers("their indices", main.k, max(1, (n - 1).bit_length())))
    return main, buffers, (State("sorted list (slot p is empty until element p)", "first"),)


OWN_OPS = {
    "pad": OwnOp(_pad_main, _first(_output_refuses, _pad_refuses)),
    "concat": OwnOp(_concat_main, _first(_output_refuses, _concat_refuses)),
    "slice": OwnOp(_slice_main, _first(_output_refuses, _slice_refuses)),
    "transpose": OwnOp(_transpose_main, _first(_transpose_refuses, _output_refuses)),
    "upsample2d": OwnOp(_upsample_main),
    "softmax": OwnOp(_softmax_main, _first(_output_refuses, _softmax_refuses)),
    "masked_softmax": OwnOp(_masked_softmax_main, _first(_output_refuses, _softmax_refuses)),
    "layer_norm": OwnOp(_norm_main, _first(_output_refuses, _norm_refuses)),
    "rms_norm": OwnOp(_norm_main, _first(_output_refuses, _norm_refuses)),
    "argmax": OwnOp(_argmax_main, lanes_out=_argmax_lanes_out),
    "topk": OwnOp(_topk_main, lanes_out=lambda graph, node, lanes: 1),
}
"""Every own op (``OpDef.stream`` "own") and how it runs."""


def _own_op(node) -> OwnOp:
    try:
        return OWN_OPS[node.op]
    except KeyError:
        raise HlsfuseError(f"{node.where()}: no own-stage schedule for op '{node.op}'") from None


def own_main(graph: Graph, head: str, channels, write: str, stage: str, lanes: int = 1):
    """(main, buffers, state) of the own stage computing ``head``; ``channels``: (channel, tensor) in order;
    ``lanes``: input elements per token (``check_lanes`` allows them)."""
    node = graph.node(head)
    check_lanes(graph, head, lanes, f"stage '{stage}'")
    sources = _sources(graph, node, channels, stage)
    in_shape = _dims(graph.types[node.inputs[0]].shape, node, "input 'x'")
    out_shape = _dims(graph.types[head].shape, node, "the output")
    return _own_op(node).build(graph, node, sources, in_shape, out_shape, write, lanes)


def own_schedule(s: StageInputs) -> Schedule:
    channels = [pair for use in ("head", "pre", "post", "held") for pair in s.uses[use]]
    main, buffers, state = own_main(s.graph, s.head, channels, s.outs[0], s.name, s.factors.lanes_in)
    return Schedule("own", (), main, tuple(buffers), (COUNTERS, *state))
