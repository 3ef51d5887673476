"""Graphs of map ops (elementwise, broadcast, order-keeping injective) for the HLS backend's tests.

``fixed_zoo()`` and ``float_zoo()`` put every map op of the registry into one graph each, with
several fixed-point types, rounding and overflow modes, broadcasts of streamed and constant
operands, fan-out and several inputs and outputs, so that one g++ run covers them all.
``random_map_graph`` builds a random graph of map ops from a numpy seed.
"""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder
from hlsfuse.ir import Constant, Graph

__all__ = ["fixed_zoo", "float_zoo", "small_graph", "awkward_names", "random_map_graph"]


def fixed_zoo() -> Graph:
    rng = np.random.default_rng(1)
    b = GraphBuilder("fixed_zoo", dtype="fixed<16,6>")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 4], dtype="fixed<12,4,RND,SAT>")
    u = b.input("u", [3, 4], dtype="ufixed<10,3>")  # streamed but smaller than its users: held whole
    n = b.input("n", [2, 1, 4], dtype="int8")
    c = b.constant("c", rng.uniform(-2, 2, 4), dtype="fixed<10,2,RND_CONV,SAT_SYM>")
    k = b.constant("k", rng.uniform(-3, 3, [3, 1]), dtype="fixed<8,3>")
    outs = [
        b.add(x, y),
        b.add(x, y, dtype="fixed<8,3,RND,SAT>"),
        b.sub(x, u, dtype="fixed<10,5,RND_INF,WRAP>"),
        b.mul(x, y, dtype="fixed<14,4,RND_ZERO,SAT_ZERO>"),
        b.maximum(x, u, dtype="fixed<9,4,RND_MIN_INF,SAT>"),
        b.minimum(y, n, dtype="fixed<12,6,TRN_ZERO,SAT_SYM>"),
        b.relu(x, dtype="ufixed<8,4,RND,SAT>"),
        b.leaky_relu(y, alpha=0.1, dtype="fixed<16,6,RND,SAT>"),
        b.clip(x, min=-1.3, max=2.7),
        b.neg(u),
        b.abs(x, dtype="fixed<8,4,TRN_ZERO,SAT_SYM>"),
        b.sigmoid(x, table_bits=8),
        b.tanh(y, dtype="fixed<8,1,RND,SAT>"),
        b.exp(x, dtype="ufixed<16,8,RND,SAT>"),
        b.cast(x, dtype="int8"),
        b.cast(y, dtype="ufixed<6,2,RND_CONV,SAT>"),
        b.bias_add(x, c, dtype="fixed<12,5,RND,SAT>"),
        b.scale(y, c),
        b.add(x, k, dtype="fixed<16,6,RND,SAT>"),  # a [3, 1] constant broadcast over [2, 3, 4]
        b.mul(n, x, dtype="fixed<16,8,RND,WRAP>"),  # a streamed int8 [2, 1, 4], held
    ]
    # order-keeping injective ops between broadcasts over different shapes, in one group
    r = b.add(b.reshape(x, [6, 4]), c, dtype="fixed<16,6,RND,SAT>")
    r = b.transpose(b.expand_dims(r, axis=1), axes=[1, 0, 2])  # moves a size-1 axis: same element order
    r = b.reshape(b.squeeze(b.flatten(r, axis=0)), [3, 8])
    outs.append(b.mul(r, b.constant("c8", rng.uniform(-1, 1, 8), dtype="fixed<8,1>"), dtype="fixed<16,6,RND,SAT>"))
    # nodes computed only from a held input and constants run before the main loop
    pre = b.relu(b.add(u, b.constant("cu", rng.uniform(-2, 2, 4), dtype="fixed<8,3>")))
    outs.append(b.add(x, pre, dtype="fixed<16,6,RND,SAT>"))
    # 64-bit exact intermediates, and constants no double holds exactly
    w = b.input("w", [5], dtype="fixed<60,30>")
    w32 = b.cast(w, dtype="fixed<32,16,RND,SAT>")
    outs.append(b.mul(w32, w32, dtype="fixed<64,24,RND,SAT>"))
    big = b.constant("big", np.zeros([2, 1]), dtype="fixed<60,30>")  # raw values set below
    outs.append(b.add(w, big, dtype="fixed<62,31>"))
    big64 = b.constant("big64", np.zeros([2, 1]), dtype="fixed<64,40>")
    outs.append(b.maximum(b.cast(w, dtype="fixed<64,40>"), big64))
    b.output(*outs)
    g = b.build()
    raw = {"big": [[(1 << 59) - 1], [-(1 << 58) - 12345]], "big64": [[-(1 << 63)], [(1 << 62) + 3]]}
    constants = tuple(Constant(c.name, c.type, np.array(raw[c.name])) if c.name in raw else c for c in g.constants)
    return Graph(g.name, g.inputs, constants, g.nodes, g.outputs)


def float_zoo() -> Graph:
    rng = np.random.default_rng(2)
    b = GraphBuilder("float_zoo", dtype="float32")
    f = b.input("f", [2, 3, 4])
    g = b.input("g", [2, 3, 4])
    h = b.input("h", [4])
    c = b.constant("c", rng.normal(size=4))
    outs = [
        b.add(f, g), b.sub(f, h), b.mul(f, g), b.maximum(f, h), b.minimum(g, c),
        b.relu(f), b.leaky_relu(g, alpha=0.2), b.clip(f, min=-0.5, max=0.7), b.neg(g), b.abs(f),
        b.sigmoid(f), b.tanh(g), b.exp(f), b.bias_add(f, c), b.scale(g, c),
        b.cast(f, dtype="fixed<12,4,RND,SAT>"),
        b.add(b.cast(b.cast(g, dtype="fixed<10,3,RND_CONV,SAT>"), dtype="float32"), f),
        b.reshape(b.mul(b.relu(h), c), [2, 2]),
    ]
    b.output(*outs)
    return b.build()


def small_graph() -> Graph:
    """The graph of the snapshot test: a bias, a relu and a residual join, one table."""
    b = GraphBuilder("small", dtype="fixed<8,3>")
    x = b.input("x", [1, 2, 3])
    bias = b.constant("bias", [0.5, -0.25, 1.0])
    y = b.relu(b.bias_add(x, bias, dtype="fixed<10,4,RND,SAT>"))
    z = b.add(y, x, dtype="fixed<8,3,RND,SAT>")
    b.output(b.sigmoid(z, table_bits=4, dtype="ufixed<6,0,RND,SAT>"), y)
    return b.build()


def awkward_names() -> Graph:
    """Tensor names that clash with the generated code's own names, keywords and each other once sanitized."""
    b = GraphBuilder("awkward", dtype="fixed<12,4,RND,SAT>")
    i = b.input("i", [2, 4])
    data = b.input("data", [2, 4])
    packet = b.add(i, data, name="packet")
    k0 = b.relu(packet, name="k0")
    kw = b.mul(k0, i, name="int")
    typed = b.neg(kw, name="t_int")
    dashed = b.abs(typed, name="x-y")
    underscored = b.relu(dashed, name="x_y")
    first = b.sub(underscored, i, name="1st")
    hlsf = b.add(first, data, name="hlsf")
    spaced = b.clip(hlsf, min=-2.0, max=2.0, name="a b")
    b.output(hlsf, dashed, k0, b.neg(spaced, name="size_t"))
    return b.build()


_TYPES = ("fixed<16,6>", "fixed<12,4,RND,SAT>", "ufixed<10,3,RND_CONV,SAT_SYM>", "fixed<8,2,TRN_ZERO,SAT_ZERO>",
          "int8", "uint16", "fixed<20,10,RND_INF,SAT>", "fixed<6,-1,RND_MIN_INF,WRAP>", "ufixed<7,9,RND_ZERO,SAT>")
_BINARY = ("add", "sub", "mul", "maximum", "minimum")
_UNARY = ("relu", "leaky_relu", "clip", "neg", "abs", "sigmoid", "tanh", "exp", "cast")


def random_map_graph(seed: int, name: str = "random") -> Graph:
    """A random graph of map ops: chains, fan-out, joins and broadcasts of inputs and constants."""
    rng = np.random.default_rng(seed)

    def pick(seq):
        return seq[int(rng.integers(len(seq)))]

    b = GraphBuilder(name, dtype=pick(_TYPES[:3]))
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 4)))]
    inputs = [b.input(f"x{k}", shape, dtype=pick(_TYPES)) for k in range(1 + int(rng.random() < 0.7))]
    tensors = list(inputs)
    used = set()
    for _ in range(int(rng.integers(3, 9))):
        src = tensors[-1] if rng.random() < 0.6 else pick(tensors)
        used.add(src)
        out_type = pick(_TYPES)
        kind = rng.random()
        if kind < 0.45:
            if rng.random() < 0.3:  # a constant broadcast over the last axis
                other = b.constant(None, rng.uniform(-4, 4, shape[-1:]), dtype=pick(_TYPES))
            else:
                other = pick(tensors)
            tensors.append(b.op(pick(_BINARY), src, other, dtype=out_type))
            used.add(other)
        elif kind < 0.9:
            op = pick(_UNARY)
            attrs = {
                "leaky_relu": {"alpha": float(rng.uniform(-1, 1))},
                "clip": {"min": -1.5, "max": float(rng.uniform(-1, 3))},
                "sigmoid": {"table_bits": int(rng.integers(2, 11))},
            }.get(op, {})
            tensors.append(b.op(op, src, dtype=out_type, **attrs))
        else:  # reshapes keep the element order
            flat = b.reshape(src, [-1])
            tensors.append(b.reshape(flat, shape))
    last = tensors[-1]
    for x in inputs:
        if x not in used:
            last = b.add(last, x)
    # every tensor nothing reads is an output, and a few more
    extra = [t for t in tensors[len(inputs):] if t not in used or rng.random() < 0.2]
    b.output(*dict.fromkeys([last] + extra))
    return b.build()

