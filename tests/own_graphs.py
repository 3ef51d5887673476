"""Graphs of own stages (slice, pad, concat, transpose, softmax, argmax, topk) for the tests of both backends:
many own stages per graph, of several fixed-point types, rounding and overflow modes, with constant operands
(ROMs) and map stages and forks around them, so that one g++ or Verilator build checks them all.

    hls_*      the HLS stages (test_hls_stages_own.py; the inventory builds of test_hls_headers.py)
    rtl_*      the Verilog stages (test_rtl_own.py)
    lanes_*    own stages taking L elements per token (test_own_lanes_hls.py, test_own_lanes_rtl.py, test_lanes.py)
    masked_softmaxes(dtype)   masked softmax: causal, padding and scattered masks (the shared hardware builds,
               test_hw_shared.py, with MASKED_LANES)
    own_stages(plan), own_ops(graph, plan)   a plan's own stages by head node; their ops, sorted (with repeats)
"""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder
from hlsfuse.ir import Graph

__all__ = ["hls_movers", "hls_rows", "hls_floats", "rtl_movers", "rtl_joins", "rtl_softmaxes", "rtl_picks",
           "rtl_random_slices", "lanes_zoo", "LANES_ZOO_HEADS", "lanes_whole_tokens", "lanes_movers", "lanes_picks",
           "lanes_small", "masked_softmaxes", "MASKED_LANES", "causal", "own_stages", "own_ops"]


def own_stages(plan) -> dict:
    return {s.head: s for s in plan.stages if s.kind == "own"}


def own_ops(graph: Graph, plan) -> list[str]:
    return sorted(graph.node(s.head).op for s in plan.stages if s.kind == "own")


def hls_movers() -> Graph:
    """slice, pad, concat, transpose and upsample over several types and modes, between map stages and forks."""
    b = GraphBuilder("movers", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4, 5])
    y = b.input("y", [2, 3, 4, 2], dtype="fixed<8,3,RND,SAT>")
    u = b.input("u", [2, 3, 4, 5], dtype="ufixed<9,2>")
    n = b.input("n", [2, 3, 4, 5], dtype="int8")
    m = b.input("m", [6, 7], dtype="fixed<10,6,RND_CONV,SAT_SYM>")
    r = b.relu(b.add(x, u, dtype="fixed<12,4,RND,SAT>"))  # a map stage feeding own stages, forked
    c = b.constant("c", np.random.default_rng(3).uniform(-2, 2, [2, 3, 1, 5]), dtype="fixed<10,3>")
    outs = [
        # slices: negative steps on several axes, a reversed inner block, clamped bounds, unsliced axes
        b.slice(x, begin=[1, -1, 3, 4], end=[-3, -4, 0, 0], step=[-1, -1, -2, -2]),
        b.slice(r, begin=[0, 2, -1], end=[2, 0, -5], step=[1, -1, -1], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.slice(n, begin=[1, 0, 1], end=[2, 9, 4], step=[1, 2, 2], dtype="fixed<6,3,RND,SAT_SYM>"),
        b.slice(m, begin=[5, 6], end=[-100, -100], step=[-2, -3]),
        b.slice(m, begin=[-2], end=[-3], step=[-1]),  # one element read "backwards": no reversal
        # pads: a value rounded and saturated into the output type, several types
        b.pad(x, pads=[0, 1, 2, 0, 1, 0, 1, 2], value=0.7, dtype="fixed<10,3,RND,SAT>"),
        b.pad(u, pads=[1, 0, 0, 0, 0, 0, 0, 1], value=-1.0),  # ufixed: the fill saturates to 0
        b.pad(m, pads=[2, 1, 0, 3], value=100.0, dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(n, pads=[0, 0, 0, 0, 0, 0, 0, 0], value=3.0, dtype="fixed<7,5,TRN_ZERO,WRAP>"),
        # reflect and edge pads: a block from the first padded axis on (the whole tensor, or rows), a long
        # reflection (pads beyond the axis), a type change, a map stage's output
        b.pad(x, pads=[0, 1, 2, 0, 0, 2, 1, 3], mode="reflect"),
        b.pad(m, pads=[2, 1, 3, 9], mode="edge", dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(r, pads=[0, 0, 0, 4, 0, 0, 0, 6], mode="reflect", dtype="fixed<8,2,RND_CONV,SAT>"),
        b.pad(u, pads=[1, 0, 3, 0, 2, 0, 0, 0], mode="edge"),
        # concats on every axis, 2 to 4 inputs of different fixed types, a constant operand
        b.concat(x, y, axis=-1),
        b.concat(y, x, u, n, axis=3, dtype="fixed<9,4,RND,SAT>"),
        b.concat(x, u, axis=0, dtype="fixed<14,5>"),
        b.concat(n, x, r, axis=1, dtype="fixed<10,4,RND_ZERO,SAT>"),
        b.concat(x, c, u, axis=2, dtype="fixed<11,3,RND_MIN_INF,SAT_SYM>"),
        b.concat(m, axis=0),
        # transposes of rank 2 to 4 that reorder
        b.transpose(m),
        b.transpose(r, axes=[0, 3, 1, 2], dtype="fixed<8,3,RND,WRAP>"),
        b.transpose(u, axes=[3, 2, 1, 0]),
        b.transpose(b.reshape(n, [6, 4, 5]), axes=[1, 0, 2], dtype="ufixed<6,3,RND_CONV,SAT>"),
        b.transpose(b.reshape(y, [6, 8]), axes=[1, 0]),
        # upsamples: nearest (a row buffer) and zero insertion, with a type change
        b.upsample2d(x, factors=[2, 3]),
        b.upsample2d(u, factors=[3, 1], mode="zeros", dtype="ufixed<8,2,RND,SAT>"),
    ]
    # own stages in a chain, and an own stage's output read by a map stage and a port (a fork after it)
    p = b.pad(b.transpose(y, axes=[1, 0, 3, 2]), pads=[0, 0, 1, 0, 0, 1, 0, 1], value=-0.5)
    outs.append(b.slice(p, begin=[2, 1, 3], end=[-4, 0, -100], step=[-1, -1, -1]))
    s = b.slice(x, begin=[0, 0, 0, 4], end=[2, 3, 4, -6], step=[1, 1, 1, -1], dtype="fixed<12,5>")
    outs += [s, b.mul(s, b.abs(s), dtype="fixed<12,4,RND,SAT>")]
    b.output(*outs)
    return b.build()


def hls_rows() -> Graph:
    """softmax with several table sizes and types (masked too), argmax on every axis, topk values and indices."""
    b = GraphBuilder("rows", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")  # few values: ties for argmax and topk
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    f = b.input("f", [3, 5], dtype="float32")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")  # a map stage, forked to several own stages
    outs = [
        b.softmax(x, table_bits=3),
        b.softmax(z, table_bits=6, dtype="ufixed<8,0,RND_CONV,SAT>"),
        b.softmax(v, table_bits=10),  # unsigned input: x - max is signed
        b.softmax(w, table_bits=12, exp_dtype="fixed<12,3,RND,SAT>", recip_dtype="ufixed<12,2,RND_INF,SAT>",
                  dtype="fixed<12,2,RND,SAT>"),
        b.softmax(k, table_bits=16, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>"),
        b.softmax(f),
        b.relu(b.softmax(z, table_bits=8, dtype="fixed<9,1,TRN_ZERO,SAT_SYM>")),  # an own stage feeding a map
        # masked: a mask row per row of the second-to-last axis (fixed point), one per row (float32)
        b.softmax(x, mask=b.constant("xmask", [[0, 0, 0, 1, 1, 1], [0, 1, 0, 1, 0, 1], [0] * 6], dtype="ufixed<1,1>"),
                  table_bits=8),
        b.softmax(f, mask=b.constant("fmask", [[0, 1, 0, 0, 1], [1, 0, 0, 0, 0], [0, 0, 0, 1, 1]],
                                     dtype="ufixed<1,1>")),
    ]
    for axis in range(3):
        outs.append(b.argmax(z, axis=axis))
        outs.append(b.argmax(x, axis=axis - 3, keepdims=True, dtype="uint8"))
    outs += [
        b.argmax(w, axis=0, dtype="int16"),
        b.argmax(w, axis=1, dtype="fixed<12,8>"),
        b.argmax(v, axis=-1, dtype="float32"),  # float indices of a fixed input
        b.argmax(k),
        b.argmax(f, axis=0),
        b.topk(x, k=2),
        b.topk(w, k=5),  # a full sort, ties by lower index
        b.topk(w, k=3, ret="indices"),
        b.topk(w, k=1, ret="indices", dtype="uint8"),
        b.topk(v, k=4, dtype="fixed<6,2,RND,SAT>"),
        b.topk(k, k=3, ret="indices", dtype="fixed<10,6,RND,SAT>"),
        b.topk(f, k=2),
        b.topk(f, k=4, ret="indices"),
    ]
    b.output(*outs)
    return b.build()


def hls_floats() -> Graph:
    """Every own op but softmax in float32 (exact: they only move or compare values), with map stages."""
    b = GraphBuilder("floats", dtype="float32")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 2])
    e = b.exp(x)
    c = b.constant("c", np.random.default_rng(4).normal(size=[2, 1, 4]))
    outs = [
        b.slice(x, begin=[-1, 2, 3], end=[-3, -4, 0], step=[-1, -1, -1]),
        b.pad(e, pads=[1, 0, 2, 0, 1, 1], value=-2.5),
        b.pad(x, pads=[0, 2, 1, 1, 1, 3], mode="reflect"),
        b.pad(c, pads=[1, 0, 2, 0, 0, 1], mode="edge"),  # a constant, read from its ROM
        b.concat(x, y, e, axis=-1),
        b.concat(x, c, axis=1),
        b.transpose(e, axes=[2, 0, 1]),
        b.argmax(x, axis=1),
        b.argmax(e, axis=2, keepdims=True),
        b.topk(x, k=3),
        b.topk(y, k=2, ret="indices"),
    ]
    t = b.transpose(x, axes=[1, 0, 2])
    outs.append(b.add(t, b.relu(b.slice(t, begin=[2, 0, 3], end=[1, 2, -5], step=[-1, 1, -1]))))  # held: [1, 2, 4]
    # a scalar stream, and stages whose only operand is a constant (streamed from its ROM)
    outs += [b.slice(b.input("s", []), begin=[], end=[]), b.transpose(c), b.topk(c, k=2, ret="indices")]
    b.output(*outs)
    return b.build()


def rtl_movers() -> Graph:
    """Streaming and gathered slices, pads in every mode, transposes; own stages in a chain and between map stages."""
    b = GraphBuilder("movers", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4, 5])
    u = b.input("u", [2, 3, 4], dtype="ufixed<9,2>")
    n = b.input("n", [3, 4, 5], dtype="int8")
    m = b.input("m", [6, 7], dtype="fixed<10,6,RND_CONV,SAT_SYM>")
    r = b.relu(b.add(x, x, dtype="fixed<12,4,RND,SAT>"))  # a map stage in front, forked to own stages
    c = b.constant("c", np.random.default_rng(3).uniform(-2, 2, [2, 3]), dtype="fixed<10,3>")
    outs = [
        # streaming slices: positive steps, clamped bounds, unsliced trailing axes, a type change
        b.slice(x, begin=[0, 1, 0], end=[2, 3, 4], step=[1, 1, 2]),
        b.slice(n, begin=[1, 0, 1], end=[2, 9, 4], step=[1, 2, 2], dtype="fixed<6,3,RND,SAT_SYM>"),
        b.slice(u, begin=[-1], end=[100], dtype="ufixed<6,1,TRN_ZERO,WRAP>"),
        b.slice(b.input("s", [], dtype="int8"), begin=[], end=[]),  # a scalar
        # gathered slices: negative steps on several axes, a reversed inner block, one element "backwards"
        b.slice(x, begin=[1, -1, 3, 4], end=[-3, -4, 0, 0], step=[-1, -1, -2, -2]),
        b.slice(r, begin=[0, 2, -1], end=[2, 0, -5], step=[1, -1, -1], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.slice(m, begin=[5, 6], end=[-100, -100], step=[-2, -3]),
        b.slice(m, begin=[-2], end=[-3], step=[-1]),
        # pads: the value rounded and saturated into the output type, several types and modes
        b.pad(x, pads=[0, 1, 2, 0, 1, 0, 1, 2], value=0.7, dtype="fixed<10,3,RND,SAT>"),
        b.pad(u, pads=[1, 0, 0, 0, 0, 1], value=-1.0),  # ufixed: the fill saturates to 0
        b.pad(m, pads=[2, 1, 0, 3], value=100.0, dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(n, pads=[0, 0, 0, 0, 0, 0], value=3.0, dtype="fixed<7,5,TRN_ZERO,WRAP>"),
        # reflect and edge pads: a block from the first padded axis on, a long reflection, a constant
        b.pad(x, pads=[0, 1, 2, 0, 0, 2, 1, 3], mode="reflect"),
        b.pad(m, pads=[2, 1, 3, 9], mode="edge", dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(r, pads=[0, 0, 0, 4, 0, 0, 0, 6], mode="reflect", dtype="fixed<8,2,RND_CONV,SAT>"),
        b.pad(c, pads=[1, 0, 0, 2], mode="edge"),
        # reordering transposes of rank 2 to 4, one of a constant (read from its ROM)
        b.transpose(m),
        b.transpose(r, axes=[0, 3, 1, 2], dtype="fixed<8,3,RND,WRAP>"),
        b.transpose(n, axes=[2, 1, 0], dtype="ufixed<6,3,RND_CONV,SAT>"),
        b.transpose(c),
    ]
    # own stages in a chain, and a slice between two map stages
    p = b.pad(b.transpose(u, axes=[1, 0, 2]), pads=[0, 1, 1, 0, 0, 1], value=-0.5)
    outs.append(b.slice(p, begin=[2, 1, 3], end=[-5, 0, -100], step=[-1, -1, -1]))
    s = b.slice(r, begin=[0, 0, 0, 4], end=[2, 3, 4, -6], step=[1, 1, 1, -1], dtype="fixed<12,5>")
    outs.append(b.mul(s, b.abs(s), dtype="fixed<12,4,RND,SAT>"))
    b.output(*outs)
    return b.build()


def rtl_joins() -> Graph:
    """Concats on every axis, of 2 to 4 inputs of different types, constant operands, a tensor read twice."""
    b = GraphBuilder("joins", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 2], dtype="fixed<8,3,RND,SAT>")
    u = b.input("u", [2, 3, 4], dtype="ufixed<9,2>")
    n = b.input("n", [2, 3, 4], dtype="int8")
    c = b.constant("c", np.random.default_rng(5).uniform(-2, 2, [2, 1, 4]), dtype="fixed<10,3>")
    r = b.relu(x)
    outs = [
        b.concat(x, y, axis=-1),
        b.concat(y, x, u, n, axis=2, dtype="fixed<9,4,RND,SAT>"),
        b.concat(x, u, axis=0, dtype="fixed<14,5>"),
        b.concat(n, x, r, axis=1, dtype="fixed<10,4,RND_ZERO,SAT>"),
        b.concat(x, c, u, axis=1, dtype="fixed<11,3,RND_MIN_INF,SAT_SYM>"),  # a constant operand (ROM)
        b.concat(x, x, axis=1, dtype="int8"),  # one tensor read twice; an integer type that wraps
        b.concat(c, c, axis=0),  # constants only
    ]
    outs.append(b.abs(b.concat(r, n, axis=0)))  # between map stages
    b.output(*outs)
    return b.build()


def rtl_softmaxes() -> Graph:
    """softmax with several table sizes and types, one feeding a map stage."""
    b = GraphBuilder("softmaxes", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")
    outs = [
        b.softmax(x, table_bits=3),
        b.softmax(z, table_bits=6, dtype="ufixed<8,0,RND_CONV,SAT>"),
        b.softmax(v, table_bits=10),  # unsigned input: x - max is signed
        b.softmax(w, table_bits=12, exp_dtype="fixed<12,3,RND,SAT>", recip_dtype="ufixed<12,2,RND_INF,SAT>",
                  dtype="fixed<12,2,RND,SAT>"),  # a signed exp type: a signed sum
        b.softmax(k, table_bits=16, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>"),
        b.relu(b.softmax(z, table_bits=8, dtype="fixed<9,1,TRN_ZERO,SAT_SYM>")),  # feeding a map stage
    ]
    b.output(*outs)
    return b.build()


def rtl_picks() -> Graph:
    """argmax on every axis, topk values and indices (ties), a constant operand, one between map stages."""
    b = GraphBuilder("picks", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")  # few values: ties
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")
    c = b.constant("c", np.array([[0.5, -1.0, 0.5, 2.0], [1.0, 1.0, -3.0, 1.0]]), dtype="fixed<8,4>")
    outs = []
    for axis in range(3):
        outs.append(b.argmax(z, axis=axis))
        outs.append(b.argmax(x, axis=axis - 3, keepdims=True, dtype="uint8"))
    outs += [
        b.argmax(w, axis=0, dtype="int16"),
        b.argmax(w, axis=1, dtype="fixed<12,8>"),
        b.argmax(v, axis=-1, dtype="ufixed<4,4,RND,SAT>"),
        b.argmax(k),
        b.argmax(c, axis=0),
        b.topk(x, k=2),
        b.topk(w, k=5),  # a full sort, ties by lower index
        b.topk(w, k=3, ret="indices"),
        b.topk(w, k=1, ret="indices", dtype="uint8"),
        b.topk(v, k=4, dtype="fixed<6,2,RND,SAT>"),
        b.topk(k, k=3, ret="indices", dtype="fixed<10,6,RND,SAT>"),
        b.topk(k, k=7, dtype="fixed<5,3,RND_CONV,WRAP>"),
        b.topk(c, k=3, ret="indices"),
        b.neg(b.topk(z, k=3)),  # between map stages
    ]
    b.output(*outs)
    return b.build()


def rtl_random_slices() -> Graph:
    """Slices with random begins, ends and steps (both signs) on a 3-d input."""
    rng = np.random.default_rng(11)
    b = GraphBuilder("random_slices", dtype="fixed<9,3,RND,SAT>")
    x = b.input("x", [3, 4, 5])
    outs = []
    while len(outs) < 8:
        begin, end, step = [], [], []
        for n in (3, 4, 5)[: rng.integers(1, 4)]:
            s = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            lo, hi = int(rng.integers(-n - 1, n + 1)), int(rng.integers(-n - 1, n + 1))
            if not range(*slice(lo, hi, s).indices(n)):
                break
            begin.append(lo), end.append(hi), step.append(s)
        else:
            outs.append(b.slice(x, begin=begin, end=end, step=step))
    b.output(*outs)
    return b.build()


def lanes_zoo() -> Graph:
    """Every own op with a lanes-friendly innermost axis (8, or 4 for y), next to map stages:

    pad        innermost padding 4 before and after, a value rounded into the output type
    pad_rf     reflect padding of the outer axes (a block of the whole tensor, tokens moved whole)
    cat_last   concat along the innermost axis, inputs of 8 and 4 elements there
    cat_outer  concat along axis 1 with a constant operand (read from its ROM as tokens)
    sl         streaming slice: outer axes stepped, the innermost from 4
    sl_block   block slice: axis 1 read backwards by 2
    sl_wide    block slice of s: the rows swapped (its block a memory)
    pad_sl     a slice of the pad (own stage to own stage, tokens on both sides)
    tr         transpose of a rank-4 tensor keeping the innermost axis
    sm, sm_u   fixed-point softmax, two table and type settings (sm_u over rows of 128: memories)
    am_outer   argmax over axis 1 (INNER = 8: per-lane running maxima)
    am_first   argmax over axis 0 (INNER = 24)
    am_wide    argmax over axis 0 of s (INNER = 128: the running maxima a memory)
    am_last    argmax over the innermost axis of few values (ties across and within tokens)
    top_v      topk values; top_i, top_all: indices, and a full sort
    """
    b = GraphBuilder("own_lanes", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 8])
    y = b.input("y", [2, 3, 4], dtype="fixed<8,3,RND,SAT>")
    t = b.input("t", [2, 3, 2, 8])
    w = b.input("w", [4, 8], dtype="fixed<4,2>")  # 16 values: ties for argmax and topk
    s = b.input("s", [2, 128])  # rows long enough for buffers in memories, not registers
    c = b.constant("c", np.random.default_rng(5).uniform(-2, 2, [2, 1, 8]), dtype="fixed<10,3>")
    r = b.relu(b.add(x, x, dtype="fixed<12,4,RND,SAT>"))  # a map stage feeding own stages
    pad = b.pad(x, pads=[0, 1, 4, 1, 0, 4], value=0.7, dtype="fixed<10,3,RND,SAT>", name="pad")
    b.output(
        pad,
        b.pad(x, pads=[1, 2, 0, 0, 1, 0], mode="reflect", name="pad_rf"),
        b.concat(x, y, axis=-1, dtype="fixed<11,4,RND,SAT>", name="cat_last"),
        b.concat(r, c, axis=1, name="cat_outer"),
        b.slice(x, begin=[1, 0, 4], end=[2, 3, 8], step=[1, 2, 1], name="sl"),
        b.slice(r, begin=[0, 2, 0], end=[2, -100, 8], step=[1, -2, 1], dtype="fixed<8,2,RND_CONV,SAT>",
                name="sl_block"),
        b.slice(pad, begin=[1, 0, 4], end=[3, 4, 16], step=[1, 3, 1], name="pad_sl"),
        b.transpose(t, axes=[2, 0, 1, 3], dtype="fixed<8,3,RND,WRAP>", name="tr"),
        b.softmax(x, table_bits=8, name="sm"),
        b.softmax(s, table_bits=10, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>",
                  dtype="ufixed<8,0,RND_CONV,SAT>", name="sm_u"),
        b.argmax(x, axis=1, name="am_outer"),
        b.argmax(r, axis=0, keepdims=True, dtype="uint8", name="am_first"),
        b.argmax(w, axis=-1, name="am_last"),
        b.argmax(s, axis=0, name="am_wide"),
        b.slice(s, begin=[1, 0], end=[-100, 128], step=[-1, 1], name="sl_wide"),
        b.topk(w, k=3, name="top_v"),
        b.topk(w, k=5, ret="indices", name="top_i"),
        b.topk(x, k=8, ret="indices", dtype="int8", name="top_all"),
    )
    return b.build()


LANES_ZOO_HEADS = ("pad", "pad_rf", "cat_last", "cat_outer", "sl", "sl_block", "sl_wide", "pad_sl", "tr", "sm", "sm_u",
                   "am_outer", "am_first", "am_wide", "am_last", "top_v", "top_i", "top_all")


def lanes_whole_tokens(n: int) -> Graph:
    """Every own op over an innermost axis of n, for lanes that are not powers of two or take a row at once:
    padding and a concat of n, a constant operand of the outer-axis concat, a reversed outer axis, a transpose,
    and argmax and topk over rows of few values (ties)."""
    b = GraphBuilder("whole", dtype="fixed<10,3>")
    x = b.input("x", [2, 3, n])
    w = b.input("w", [3, n], dtype="fixed<3,1>")
    c = b.constant("c", np.random.default_rng(1).uniform(-2, 2, [2, 2, n]), dtype="fixed<10,3>")
    b.output(
        b.pad(x, pads=[1, 0, n, 0, 1, n], value=-0.3, name="pad"),
        b.concat(x, x, axis=-1, name="cat_last"),
        b.concat(c, x, axis=1, name="cat_outer"),
        b.slice(x, begin=[1, 2, 0], end=[-100, -100, n], step=[-1, -1, 1], name="sl_block"),
        b.slice(x, begin=[0, 1, 0], end=[2, 3, n], name="sl"),
        b.transpose(x, axes=[1, 0, 2], name="tr"),
        b.softmax(x, table_bits=6, name="sm"),
        b.argmax(w, axis=-1, name="am_last"),
        b.argmax(w, axis=0, name="am_outer"),
        b.topk(w, k=n, name="top_v"),
        b.topk(w, k=2, ret="indices", name="top_i"),
    )
    return b.build()


def lanes_movers(lanes: int):
    """pad, concat, slice and transpose, each taking ``lanes`` elements per token; returns (graph, own nodes)."""
    b = GraphBuilder("movers", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 8])
    u = b.input("u", [2, 3, 2, 4], dtype="ufixed<9,2>")
    n = b.input("n", [3, 4], dtype="int8")
    rng = np.random.default_rng(lanes)
    c = b.constant("c", rng.uniform(-2, 2, [2, 3, 4]), dtype="fixed<10,3>")
    d = b.constant("d", rng.uniform(-2, 2, [2, 1, 8]), dtype="fixed<8,2>")
    own = [
        b.pad(x, pads=[0, 1, lanes, 1, 0, 2 * lanes], value=0.7, dtype="fixed<10,3,RND,SAT>"),
        b.pad(n, pads=[1, 0, 0, lanes], value=-200.0),  # the fill saturates
        b.pad(x, pads=[1, 2, 0, 0, 1, 0], mode="reflect"),  # outer axes: a block, tokens moved whole
        b.pad(u, pads=[0, 0, 2, 0, 1, 1, 0, 0], mode="edge", dtype="fixed<8,2,RND,SAT>"),
        b.concat(x, c, axis=-1, dtype="fixed<11,3,RND_MIN_INF,SAT_SYM>"),  # innermost, a constant operand
        b.concat(d, x, x, axis=1),  # an outer axis, a constant operand
        b.concat(n, n, axis=0, dtype="fixed<6,3,RND,SAT>"),
        b.slice(x, begin=[0, 1, lanes], end=[2, 3, 8]),  # streaming
        b.slice(u, begin=[1, 0], end=[2, 3], dtype="ufixed<6,1,TRN_ZERO,WRAP>"),
        b.slice(x, begin=[1, -1, 0], end=[-3, -4, 8], step=[-1, -2, 1]),  # block: a reversed outer axis
        b.slice(u, begin=[0, 2, -1, 0], end=[2, 0, -5, 4], step=[1, -1, -1, 1], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.transpose(x, axes=[1, 0, 2]),
        b.transpose(u, axes=[2, 0, 1, 3], dtype="fixed<8,3,RND,WRAP>"),
        b.transpose(c, axes=[1, 0, 2]),  # a constant, read from its ROM in tokens
    ]
    b.output(*own)
    return b.build(), own


def lanes_picks(lanes: int):
    """softmax (fixed point), argmax and topk, each taking ``lanes`` elements per token."""
    b = GraphBuilder("picks", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 8])
    w = b.input("w", [3, 8], dtype="fixed<4,2>")  # few values: ties
    v = b.input("v", [2, 4], dtype="ufixed<8,3,RND,SAT>")  # rows of one token when L is 4
    k = b.input("k", [8], dtype="int8")
    t = b.input("t", [6, 8], dtype="fixed<2,2>")  # four values: maxima tied inside a token
    c = b.constant("c", np.array([[0.5, -1.0, 0.5, 2.0], [1.0, 1.0, -3.0, 2.0]]), dtype="fixed<8,4>")
    own = [
        b.softmax(x, table_bits=6),
        b.softmax(w, table_bits=8, exp_dtype="fixed<12,3,RND,SAT>", recip_dtype="ufixed<12,2,RND_INF,SAT>",
                  dtype="fixed<12,2,RND,SAT>"),
        b.softmax(v, table_bits=10, dtype="ufixed<8,0,RND_CONV,SAT>"),
        b.softmax(k, table_bits=12, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>"),
        b.argmax(x, axis=0),  # outer axes: INNER / L tokens of running maxima
        b.argmax(x, axis=1, keepdims=True, dtype="uint8"),
        b.argmax(w, axis=0, dtype="int16"),
        b.argmax(x, axis=-1),  # the innermost axis: the first maximum per token
        b.argmax(w, axis=1, dtype="fixed<12,8>"),
        b.argmax(v, axis=-1, dtype="ufixed<4,4,RND,SAT>"),
        b.argmax(k),
        b.argmax(t, axis=-1),
        b.argmax(t, axis=0),
        b.argmax(c, axis=1),
        b.topk(x, k=3),
        b.topk(w, k=8),  # a full sort, ties by lower index
        b.topk(w, k=3, ret="indices"),
        b.topk(v, k=2, ret="indices", dtype="uint8"),
        b.topk(k, k=5, dtype="fixed<5,3,RND_CONV,WRAP>"),
        b.topk(c, k=3, ret="indices"),
        b.topk(t, k=4, ret="indices"),
    ]
    b.output(*own)
    return b.build(), own


def lanes_small() -> Graph:
    """Every own op over x [2, 3, 8], each allowing 4 lanes."""
    b = GraphBuilder("own", dtype="fixed<16,6>")
    x = b.input("x", [2, 3, 8])
    b.output(b.pad(x, pads=[0, 1, 4, 0, 0, 4], value=0.5, name="pad"),
             b.concat(x, b.constant("c", np.ones((2, 3, 4))), axis=2, name="cat"),
             b.transpose(x, axes=[1, 0, 2], name="tr"), b.softmax(x, table_bits=5, name="sm"),
             b.argmax(x, axis=2, dtype="int16", name="last"), b.argmax(x, axis=1, dtype="int16", name="outer"),
             b.topk(x, k=2, name="tk"), b.slice(x, begin=[0, 1, 4], end=[2, 3, 8], name="sl"))
    return b.build()


def causal(s: int) -> np.ndarray:
    """A causal mask over ``s`` tokens: query i leaves out the keys after i (1 above the diagonal)."""
    return np.triu(np.ones((s, s)), 1)


MASKED_LANES = {"pad_sm": 4, "scattered_sm": 2}
"""Lanes of the masked softmaxes of ``masked_softmaxes`` (fixed point) that take more than one."""


def masked_softmaxes(dtype: str = "fixed<10,4>") -> Graph:
    """masked_softmax with a causal mask over heads (R = S), a padding mask (R = 1, whole tokens left out with 4
    lanes), a scattered mask of R = 3 rows (2 lanes: tokens half left out) on an unsigned input, a row keeping one
    position, and one feeding a map stage; in fixed point the padding one saturates x - max(x) at -4 before its exp
    table (exp_int_bits); in ``dtype`` (fixed point or float32)."""
    fixed = dtype != "float32"
    b = GraphBuilder("masked" if fixed else "masked_f", dtype=dtype)
    x = b.input("x", [1, 2, 4, 4])  # [batch, heads, queries, keys]
    p = b.input("p", [3, 8])
    u = b.input("u", [2, 3, 6], dtype="ufixed<8,3,RND,SAT>" if fixed else dtype)
    bit = "ufixed<1,1>"
    pad = b.constant("pad", [[0] * 4 + [1] * 4], dtype=bit)  # keys 4..7 are padding
    rows = np.array([[1, 0, 0, 1, 1, 0], [0, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 0]])  # the last keeps one position
    scattered = b.constant("scattered", rows, dtype=bit)
    typed = ({"table_bits": 8, "exp_dtype": "ufixed<12,1,RND,SAT>", "recip_dtype": "ufixed<12,3,RND,SAT>",
              "dtype": "ufixed<10,1,RND_CONV,SAT>"} if fixed else {})
    outs = [
        b.softmax(x, mask=b.constant("causal", causal(4), dtype=bit), name="causal_sm",
                  **({"table_bits": 6} if fixed else {})),
        b.softmax(p, mask=pad, name="pad_sm", **({"exp_int_bits": 2} if fixed else {})),  # d saturates at -4
        b.softmax(u, mask=scattered, name="scattered_sm", **typed),
        b.relu(b.softmax(p, mask=pad, **({"dtype": "fixed<9,1,TRN_ZERO,SAT_SYM>"} if fixed else {}))),
    ]
    b.output(*outs)
    return b.build()
