"""Own stages of the Verilog backend with lanes > 1 (``lower/own.py``: tokens of L elements), bit for bit.

Every own op with lanes L in (2, 4): the data movers (pad in every mode, concat along the innermost and an
outer axis with a constant operand, streaming and block slices, transposes keeping the innermost axis) over the
schedule's token view, softmax over rows of tokens, argmax over an outer and the innermost axis (ties), topk
values and indices (ties, a full sort, rows of one token). Each design runs several frames back to back in
rtlsim, compared with the reference interpreter and with the timing model cycle for cycle
(``rtl_design.simulate``), and lints clean.
"""

from __future__ import annotations

import numpy as np
import pytest
from rtl_design import lint, plan_of, simulate

from hlsfuse import GraphBuilder
from hlsfuse.lower import Folding

pytestmark = pytest.mark.verilator


def movers(lanes: int):
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


def picks(lanes: int):
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


def check(make, lanes: int, tmp_path):
    graph, own = make(lanes)
    fold = Folding(lanes=tuple((name, lanes) for name in own))
    plan = plan_of(graph, fold=fold)
    stages = {s.head: s for s in plan.stages if s.kind == "own"}
    assert sorted(stages) == sorted(own)
    assert all(s.schedule.main.lanes_in == lanes for s in stages.values())
    result = simulate(graph, tmp_path, frames=3, driver="native", plan=plan)
    assert result.passed, result.report()
    assert result.compared == 3 * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""


@pytest.mark.parametrize("lanes", [2, 4])
def test_movers(lanes, tmp_path):
    check(movers, lanes, tmp_path)


@pytest.mark.parametrize("lanes", [2, 4])
def test_softmax_argmax_topk(lanes, tmp_path):
    check(picks, lanes, tmp_path)
