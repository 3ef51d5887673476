"""Graphs of window, rows and reduce stages for the HLS backend's tests.

``nn_zoo(fixed)`` puts every head op (conv2d with stride, padding, dilation, groups and depthwise,
a streamed weight, max_pool2d, avg_pool2d with both count_include_pad settings, dense, matmul with
constant, streamed and broadcast operands, sum, mean, max, global_avg_pool) into one graph, with
epilogues (bias_add, relu, residual joins through forks, held broadcast operands, lookup tables)
and reduction prologues. ``fixed=True`` gives every node its own fixed type with a spread of
rounding and overflow modes; ``fixed=False`` is the same graph in float32. ``random_nn_graph``
draws random geometries and types from a numpy seed, so one g++ run checks many shapes.
"""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder
from hlsfuse.ir import Graph

__all__ = ["nn_zoo", "wide_graph", "random_nn_graph"]


def nn_zoo(fixed: bool) -> Graph:
    rng = np.random.default_rng(7)
    b = GraphBuilder("nn_fixed" if fixed else "nn_float", dtype="fixed<16,6>" if fixed else "float32")

    def t(spec: str) -> str | None:
        """A node's or input's fixed type; float32 (the builder's default) in the float graph."""
        return spec if fixed else None

    def const(name, shape, spec, scale=1.0):
        return b.constant(name, rng.uniform(-scale, scale, shape), dtype=t(spec))

    x = b.input("x", [1, 6, 7, 4], dtype=t("fixed<12,4>"))
    xb = b.input("xb", [2, 5, 5, 3], dtype=t("fixed<10,3,RND,SAT>"))
    bias_in = b.input("bias_in", [8], dtype=t("fixed<10,4>"))
    wt = b.input("wt", [3, 3, 3, 4], dtype=t("fixed<8,2>"))
    v = b.input("v", [2, 3, 8], dtype=t("fixed<12,5>"))
    wn = b.input("wn", [4, 8], dtype=t("fixed<8,2>"))
    bm = b.input("bm", [8, 5], dtype=t("fixed<8,3>"))
    q = b.input("q", [2, 2, 2, 8], dtype=t("fixed<9,3,RND,SAT>"))
    r = b.input("r", [2, 4, 6], dtype=t("int8"))
    u = b.input("u", [6], dtype=t("ufixed<8,3>"))
    outs = []

    # a residual block: conv, bias, relu, and the skip connection (x forks to the conv and the join)
    c1 = b.conv2d(x, const("w1", [3, 3, 4, 4], "fixed<8,1>"), padding=[1, 1, 1, 1], dtype=t("fixed<16,6,RND,SAT>"))
    c1 = b.bias_add(c1, const("b1", [4], "fixed<8,3>"))
    c1 = b.relu(c1, dtype=t("ufixed<12,5,RND_CONV,SAT>"))
    y1 = b.add(c1, x, dtype=t("fixed<12,4,RND,SAT>"))
    outs.append(y1)
    # strides, asymmetric padding, dilation and groups; a streamed bias held whole, and a node computed from
    # it before the image; a lookup table
    c2 = b.conv2d(x, const("w2", [2, 3, 2, 8], "fixed<6,1,RND>"), strides=[2, 1], padding=[1, 0, 2, 1],
                  dilation=[1, 2], groups=2, dtype=t("fixed<10,3,RND_INF,SAT_SYM>"))
    bias = b.relu(bias_in, dtype=t("ufixed<8,3,RND,SAT>"))
    outs.append(b.sigmoid(b.add(c2, bias, dtype=t("fixed<10,3,RND,SAT>")), table_bits=6))
    # depthwise (channel multiplier 2), a narrow wrapping output, a constant broadcast over columns
    c3 = b.conv2d(x, const("w3", [3, 3, 1, 8], "fixed<8,1>"), padding=[0, 2, 1, 0], groups=4,
                  dtype=t("fixed<8,2,RND,WRAP>"))
    outs.append(b.clip(b.mul(c3, const("k3", [1, 7, 1], "fixed<6,2>", 2.0), dtype=t("fixed<10,3,TRN_ZERO,SAT>")),
                       min=-2.5, max=3.0))
    # a weight computed elsewhere (a streamed input): held whole before the image; batch of 2
    c4 = b.conv2d(xb, wt, strides=[2, 2], padding=[1, 1, 1, 1], dtype=t("fixed<14,6,RND_ZERO,SAT_ZERO>"))
    outs.append(b.leaky_relu(c4, alpha=0.1))

    # max pools: padding never wins; a window that drops the last column
    p1 = b.max_pool2d(xb, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dtype=t("fixed<8,3,RND,SAT>"))
    outs.append(b.leaky_relu(p1, alpha=0.25, dtype=t("fixed<10,3,RND,SAT>")))
    outs.append(b.neg(b.max_pool2d(x, pool_size=[2, 2])))
    # average pools: per-position counts, count_include_pad, a constant divisor
    outs.append(b.avg_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1],
                             dtype=t("fixed<12,4,RND_CONV,SAT>")))
    outs.append(b.avg_pool2d(xb, pool_size=[2, 3], strides=[1, 2], padding=[1, 1, 0, 1], count_include_pad=True,
                             dtype=t("fixed<9,2,RND,SAT>")))
    outs.append(b.relu(b.avg_pool2d(x, pool_size=[2, 2], dtype=t("fixed<10,4,RND_MIN_INF,SAT_SYM>"))))

    # dense: constant and streamed weights, bias and a lookup table
    d1 = b.dense(v, const("wd", [6, 8], "fixed<8,1>"), dtype=t("fixed<14,5,RND,SAT>"))
    outs.append(b.tanh(b.bias_add(d1, const("bd", [6], "fixed<8,3>")), dtype=t("fixed<8,1,RND,SAT>")))
    outs.append(b.dense(v, wn, dtype=t("fixed<16,7,RND_INF,WRAP>")))
    # matmul: constant b, batched b, b broadcast over batch dims both ways, streamed b with a streamed join
    m1 = b.matmul(v, const("bm1", [8, 5], "fixed<8,2>"), dtype=t("fixed<14,6,RND,SAT>"))
    outs.append(b.matmul(v, const("bm2", [2, 8, 5], "fixed<8,2>"), dtype=t("fixed<12,5,RND_CONV,SAT>")))
    outs.append(b.matmul(q, const("bm3", [2, 1, 8, 5], "fixed<8,2>"), dtype=t("fixed<12,5,RND,SAT>")))
    outs.append(b.matmul(q, const("bm4", [2, 8, 5], "fixed<8,2>"), dtype=t("fixed<12,5,TRN,SAT>")))
    m4 = b.matmul(v, bm, dtype=t("fixed<14,6,RND,SAT>"))
    outs.append(b.add(m4, m1, dtype=t("fixed<14,6,RND,SAT>")))
    # b transposed: attention's scores Q K^T, K held as it streams, per head (batch)
    kt = b.input("kt", [2, 5, 8], dtype=t("fixed<8,3>"))
    outs.append(b.matmul(v, kt, transpose_b=True, dtype=t("fixed<12,5,RND,SAT>")))

    # reductions with prologues: products, a held broadcast operand, a node computed before the loop
    outs.append(b.sum(b.mul(r, r, dtype=t("int16")), axes=[1], keepdims=True, dtype=t("int16")))
    u2 = b.relu(b.sub(u, const("cu", [6], "fixed<8,3>", 2.0), dtype=t("fixed<10,4>")))
    outs.append(b.mean(b.add(r, u2, dtype=t("fixed<12,5>")), axes=[0, 2], dtype=t("fixed<12,4,RND_INF,SAT>")))
    outs.append(b.max(b.abs(r, dtype=t("int8")), dtype=t("fixed<10,8,RND,SAT>")))
    outs.append(b.sum(r, axes=[-1], dtype=t("fixed<8,8,TRN,SAT>")))
    outs.append(b.mean(r, axes=[1, 2], keepdims=True, dtype=t("fixed<10,4,RND_ZERO,WRAP>")))
    outs.append(b.max(b.neg(q), axes=[0, 3], keepdims=True))
    # global average pools with epilogues
    g1 = b.global_avg_pool(xb, dtype=t("fixed<12,3,RND,SAT>"))
    outs.append(b.sigmoid(b.relu(b.bias_add(g1, const("bg", [3], "fixed<8,3>"))), table_bits=8))
    g2 = b.global_avg_pool(y1, dtype=t("fixed<12,6,RND_CONV,SAT>"))
    outs.append(b.mul(g2, b.relu(b.input("gs", [4], dtype=t("fixed<8,2>"))), dtype=t("fixed<12,6,RND,SAT>")))

    # corner cases: a 1-D dense, reductions over size-1 axes only, a 1x1 conv over 3 images
    outs.append(b.relu(b.dense(b.input("v1", [6], dtype=t("fixed<8,3>")), const("w6", [3, 6], "fixed<8,1>"))))
    s = b.input("s", [1, 3, 1], dtype=t("fixed<8,3,RND,SAT>"))
    outs += [b.max(s, axes=[0, 2]), b.mean(s, axes=[2], keepdims=True, dtype=t("fixed<8,2,RND,SAT>"))]
    outs.append(b.conv2d(b.input("xs", [3, 4, 3, 2], dtype=t("fixed<8,3>")), const("w7", [1, 1, 2, 3], "fixed<8,1>")))
    b.output(*outs)
    return b.build()


def wide_graph() -> Graph:
    """Accumulators and dividends of 60 to 64 bits: every partial sum must stay exact."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("wide", dtype="fixed<30,12>")
    x = b.input("x", [1, 4, 4, 1])
    w = b.constant("w", rng.uniform(-7, 7, [3, 3, 1, 2]), dtype="fixed<30,4>")  # 60-bit products, 9 terms
    outs = [b.conv2d(x, w, padding=[1, 1, 1, 1], dtype="fixed<40,20,RND,SAT>")]
    outs.append(b.conv2d(x, w, dtype="fixed<12,6,RND_CONV,SAT_SYM>"))  # narrow: saturates
    y = b.input("y", [3, 16], dtype="fixed<48,20>")
    outs.append(b.mean(y, axes=[1], dtype="fixed<40,30,RND,SAT>"))  # a 52-bit sum and its 64-bit dividend
    outs.append(b.avg_pool2d(b.input("z", [1, 3, 5, 2], dtype="fixed<56,24>"), pool_size=[2, 2],
                             padding=[1, 0, 0, 1], dtype="fixed<40,24,RND_INF,SAT>"))
    v = b.input("v", [2, 6], dtype="fixed<31,10>")
    outs.append(b.dense(v, b.constant("wd", rng.uniform(-3, 3, [3, 6]), dtype="fixed<30,3>"),
                        dtype="fixed<24,12,RND,SAT>"))
    b.output(*outs)
    return b.build()


_TYPES = ("fixed<16,6>", "fixed<12,4,RND,SAT>", "ufixed<10,3,RND_CONV,SAT_SYM>", "fixed<8,2,TRN_ZERO,SAT_ZERO>",
          "int8", "uint8", "fixed<20,10,RND_INF,SAT>", "fixed<6,-1,RND_MIN_INF,WRAP>", "ufixed<7,9,RND_ZERO,SAT>")
_EPILOGUE = ("relu", "bias_add", "sigmoid", "add", "none")


def random_nn_graph(seed: int, count: int = 8) -> Graph:
    """``count`` random heads (conv2d, pools, dense, matmul, reductions), each with a random epilogue."""
    rng = np.random.default_rng(seed)

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    def ints(lo, hi, n=1):
        return [int(v) for v in rng.integers(lo, hi + 1, size=n)]

    b = GraphBuilder(f"random_nn{seed}", dtype="fixed<16,6>")
    outs = []
    for k in range(count):
        x = b.input(f"x{k}", [ints(1, 2)[0], *ints(3, 6, 2), ints(1, 4)[0]], dtype=pick(_TYPES))
        n, h, w, c = b.type_of(x).shape
        kind = pick(("conv2d", "conv2d", "max_pool2d", "avg_pool2d", "dense", "matmul", "sum", "mean", "max"))
        out_type = pick(_TYPES)
        if kind == "conv2d":
            kh, kw = ints(1, 3, 2)
            dh, dw = (ints(1, 2, 2) if rng.random() < 0.3 else (1, 1))
            pads = ints(0, 2, 4)
            groups = pick([g for g in (1, 2, c) if c % g == 0])
            cout = groups * ints(1, 3)[0]
            span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
            if span_h > h + pads[0] + pads[2] or span_w > w + pads[1] + pads[3]:
                pads = [span_h, span_w, 0, 0]
            wgt = b.constant(None, rng.uniform(-2, 2, [kh, kw, c // groups, cout]), dtype=pick(_TYPES[:4]))
            y = b.conv2d(x, wgt, strides=ints(1, 2, 2), padding=pads, dilation=[dh, dw], groups=groups,
                         dtype=out_type)
        elif kind in ("max_pool2d", "avg_pool2d"):
            kh, kw = ints(1, 3, 2)
            pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)),
                    int(rng.integers(0, kw))]
            extra = {"count_include_pad": bool(rng.random() < 0.5)} if kind == "avg_pool2d" else {}
            y = b.op(kind, x, pool_size=[kh, kw], strides=ints(1, 3, 2), padding=pads, dtype=out_type, **extra)
        elif kind == "dense":
            y = b.dense(x, b.constant(None, rng.uniform(-2, 2, [ints(1, 5)[0], c]), dtype=pick(_TYPES[:4])),
                        dtype=out_type)
        elif kind == "matmul":
            y = b.matmul(x, b.constant(None, rng.uniform(-2, 2, [h, c, ints(1, 4)[0]]), dtype=pick(_TYPES[:4])),
                         dtype=out_type)
        else:
            axes = sorted({int(a) % 4 for a in rng.integers(-4, 4, size=ints(1, 3)[0])})
            src = x if rng.random() < 0.5 else b.abs(x, dtype=pick(_TYPES))
            y = b.op(kind, src, axes=axes, keepdims=bool(rng.random() < 0.5), dtype=out_type)
        epilogue = pick(_EPILOGUE if b.type_of(y).shape else ("relu", "none"))
        if epilogue == "relu":
            y = b.relu(y, dtype=pick(_TYPES))
        elif epilogue == "bias_add":
            y = b.bias_add(y, b.constant(None, rng.uniform(-2, 2, b.type_of(y).shape[-1:]), dtype=pick(_TYPES)))
        elif epilogue == "sigmoid":
            y = b.sigmoid(y, table_bits=int(rng.integers(3, 9)))
        elif epilogue == "add":
            y = b.add(y, b.input(f"e{k}", b.type_of(y).shape, dtype=pick(_TYPES)), dtype=pick(_TYPES))
        outs.append(y)
    b.output(*outs)
    return b.build()
