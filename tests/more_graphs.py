"""Graphs of the table activations (elu, selu, softplus, softsign, hard_sigmoid, hard_swish; erf, gelu, silu) and
upsample2d for the tests of both backends: many nodes per graph, several fixed-point types and modes, so that one
g++ or Verilator build checks them all.

    fixed_more()     every new table op (two elu alphas: two tables) and upsample2d nearest and zeros with
                     several factors, types and a map stage before them
    float_more()     the same ops in float32 (HLS only)
    fixed_tf()       erf, both gelus and silu on signed and unsigned inputs, several types, table sizes and
                     modes, and a Linear -> GELU -> Linear block (dense, bias_add, gelu, dense)
    float_tf()       the same functions in float32 (HLS only)
    single_upsample(mode, factors, lanes)   one upsample stage, for cycles per frame against the schedule
"""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder
from hlsfuse.ir import Graph

__all__ = ["fixed_more", "float_more", "fixed_tf", "float_tf", "single_upsample", "ACTIVATIONS"]

ACTIVATIONS = ("elu", "selu", "softplus", "softsign", "hard_sigmoid", "hard_swish")


def fixed_more() -> Graph:
    b = GraphBuilder("more", dtype="fixed<12,4,RND,SAT>")
    x = b.input("x", [2, 3, 4, 3])
    u = b.input("u", [1, 2, 3, 2], dtype="ufixed<8,3>")
    r = b.relu(b.add(x, x, dtype="fixed<12,5,RND,SAT>"))
    outs = [
        b.elu(x), b.elu(x, alpha=0.5, dtype="fixed<10,3,RND,SAT>"), b.selu(x, table_bits=12),
        b.softplus(x, dtype="ufixed<10,4,RND,SAT>"), b.softsign(x, table_bits=8, dtype="fixed<8,1,RND_CONV,SAT>"),
        b.hard_sigmoid(x, dtype="ufixed<8,1,RND,SAT>"), b.hard_sigmoid(x, alpha=0.5, beta=0.25),
        b.hard_swish(x, table_bits=12), b.hard_swish(u, dtype="fixed<9,3,TRN_ZERO,SAT>"),
        b.upsample2d(x, factors=[2, 2]), b.upsample2d(r, factors=[1, 3], dtype="fixed<8,3,RND,SAT>"),
        b.upsample2d(x, factors=[3, 1], mode="zeros"), b.upsample2d(u, factors=[2, 3], mode="zeros",
                                                                    dtype="fixed<7,2,RND_INF,SAT_SYM>"),
        b.upsample2d(u, factors=[1, 1]),
    ]
    # an upsample feeding a table op and a port (a fork after it)
    up = b.upsample2d(b.hard_swish(u), factors=[2, 1])
    outs += [up, b.elu(up, alpha=0.25)]
    b.output(*outs)
    return b.build()


def float_more() -> Graph:
    b = GraphBuilder("more_f", dtype="float32")
    x = b.input("x", [2, 3, 4, 3])
    outs = [b.op(name, x) for name in ACTIVATIONS]
    outs += [b.elu(x, alpha=0.3), b.selu(x, alpha=1.5, gamma=0.5), b.hard_sigmoid(x, alpha=1 / 6, beta=0.5),
             b.upsample2d(x, factors=[2, 3]), b.upsample2d(b.softsign(x), factors=[2, 2], mode="zeros")]
    b.output(*outs)
    return b.build()


def fixed_tf() -> Graph:
    b = GraphBuilder("tf", dtype="fixed<12,4,RND,SAT>")
    x = b.input("x", [2, 3, 8])
    u = b.input("u", [1, 4, 6], dtype="ufixed<8,3>")
    outs = [
        b.gelu(x), b.gelu(x, approximate="tanh", table_bits=12),
        b.gelu(x, table_bits=8, dtype="fixed<10,2,RND_CONV,SAT>"), b.gelu(u, approximate="tanh", dtype="ufixed<9,3>"),
        b.silu(x), b.silu(u, dtype="fixed<9,4,TRN_ZERO,SAT>"),
        b.erf(x, dtype="fixed<12,1,RND,SAT>"), b.erf(u, table_bits=6, dtype="ufixed<8,0,RND,SAT>"),
    ]
    rng = np.random.default_rng(29)
    w1, w2 = (b.constant(None, rng.standard_normal(shape) * 0.5) for shape in ((16, 8), (8, 16)))
    hidden = b.bias_add(b.op("dense", x, w1, dtype="fixed<14,5,RND,SAT>"), b.constant(None, rng.standard_normal(16)))
    outs.append(b.op("dense", b.gelu(hidden, table_bits=12), w2))
    b.output(*outs)
    return b.build()


def float_tf() -> Graph:
    b = GraphBuilder("tf_f", dtype="float32")
    x = b.input("x", [2, 3, 8])
    b.output(b.gelu(x), b.gelu(x, approximate="tanh"), b.silu(x), b.erf(x))
    return b.build()


def single_upsample(mode: str, factors, lanes: int = 1) -> Graph:
    b = GraphBuilder(f"up_{mode}_{factors[0]}x{factors[1]}_l{lanes}", dtype="fixed<10,4>")
    b.output(b.upsample2d(b.input("x", [2, 3, 4, 4]), name="y", factors=list(factors), mode=mode))
    return b.build()
