"""Hypothesis strategies for random valid graphs, shared by the test files.

    op_graphs()       runnable graphs of real ops (only those in ``hlsfuse.OPS`` at run time):
                      elementwise, broadcast, injective, reductions, conv2d, dense, pools,
                      opaque ops, with fan-out, residual joins and broadcast joins of reduced
                      tensors. Tensors are NHWC ``[1, H, W, C]``, type fixed<16,6>.
    nn_graphs()       chains of the ops whose schedules have the most geometry: strided, dilated,
                      grouped and depthwise convolutions, pools with padding, dense rows shorter or
                      longer than their outputs, matmuls of two computed tensors (attention-like),
                      reductions over any axes, argmax over any axis, reversed slices, with residual
                      joins; small tensors, type fixed<16,6>.
    pattern_graphs()  graphs of ``custom`` nodes with random pattern kinds (and sometimes
                      random per-edge kinds): every shape of DAG the partitioner can meet,
                      cheap to build, not runnable.

Both make the tensors that nothing reads graph outputs, plus a few more chosen at random.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from hlsfuse import OPS, GraphBuilder, Pattern

__all__ = ["op_graphs", "nn_graphs", "pattern_graphs", "FIXED"]

FIXED = "fixed<16,6>"


def _pick(draw, tensors: list[str]) -> str:
    """A tensor: mostly the latest (chains), else a recent one (fan-out) or any (long-range joins)."""
    how = draw(st.integers(0, 9))
    if how < 6:
        return tensors[-1]
    if how < 9:
        return tensors[-1 - draw(st.integers(0, min(3, len(tensors) - 1)))]
    return draw(st.sampled_from(tensors))


def _matches_except(shape, other, axis: int) -> bool:
    return all(a == b or k == axis for k, (a, b) in enumerate(zip(shape, other)))


class _Maker:
    """Adds one random op of a kind to a builder; returns the new tensor or None if the kind
    does not apply to the chosen tensor."""

    def __init__(self, draw, b: GraphBuilder, rng: np.random.Generator):
        self.draw, self.b, self.rng = draw, b, rng
        self.used: set[str] = set()

    def op(self, op: str, *inputs: str, **kw) -> str:
        self.used.update(inputs)
        return self.b.op(op, *inputs, **kw)

    def shape(self, t: str) -> tuple[int, ...]:
        return self.b.type_of(t).shape

    def const(self, shape) -> str:
        return self.b.constant(None, self.rng.normal(size=shape) * 0.5)

    def choose(self, names):
        names = [n for n in names if n in OPS]
        return self.draw(st.sampled_from(names)) if names else None

    def unary(self, x, tensors):
        op = self.choose(["relu", "neg", "abs", "clip", "leaky_relu", "sigmoid", "tanh", "exp", "cast"])
        if op == "clip":
            return self.op("clip", x, min=-1.0, max=1.5)
        if op == "cast":
            return self.op("cast", x, dtype="fixed<12,5>")
        return op and self.op(op, x)

    def binary(self, x, tensors):
        op = self.choose(["add", "sub", "mul", "maximum", "minimum"])
        same = [t for t in tensors if self.shape(t) == self.shape(x)]
        return op and self.op(op, x, self.draw(st.sampled_from(same)))

    def broadcast(self, x, tensors):
        shape = self.shape(x)
        reduced = [t for t in tensors if self.shape(t) in ((1, 1, 1, shape[3]), (1, shape[1], shape[2], 1))]
        how = self.draw(st.sampled_from(["reduced", "vector", "scalar", "bias_add", "scale"]))
        if how == "reduced" and reduced and "add" in OPS:
            return self.op(self.choose(["add", "mul", "sub"]), x, self.draw(st.sampled_from(reduced)))
        if how in ("bias_add", "scale") and how in OPS:
            return self.op(how, x, self.const([shape[3]]))
        op = self.choose(["add", "mul"])
        return op and self.op(op, x, self.const([shape[3]] if how == "vector" else []))

    def injective(self, x, tensors):
        n, h, w, c = self.shape(x)
        op = self.choose(["reshape", "transpose", "concat", "slice", "pad"])
        if op == "reshape":
            return self.op("reshape", x, newshape=[1, w, h, c])
        if op == "transpose":
            return self.op("transpose", x, axes=self.draw(st.sampled_from([[0, 2, 1, 3], [0, 1, 2, 3], [0, 1, 3, 2]])))
        if op == "concat":
            axis = self.draw(st.sampled_from([1, 3]))
            # tensors that match x on every axis but the concat axis
            fits = [t for t in tensors if _matches_except(self.shape(t), (n, h, w, c), axis)]
            return self.op("concat", x, self.draw(st.sampled_from(fits)), axis=axis)
        if op == "slice":
            if c > 1:
                return self.op("slice", x, begin=[0, 0, 0, 0], end=[1, h, w, c - 1])
            return self.op("slice", x, begin=[0, 0, -1, 0], end=[1, h, -w - 1, 1], step=[1, 1, -1, 1])
        return op and self.op("pad", x, pads=[0, 1, 0, 0, 0, 0, 1, 0])

    def reduce(self, x, tensors):
        op = self.choose(["sum", "mean", "max"])
        axes = self.draw(st.sampled_from([[1, 2], [3]]))
        return op and self.op(op, x, axes=axes, keepdims=True)

    def anchor(self, x, tensors):
        c = self.shape(x)[3]
        op = self.choose(["conv2d", "dense", "max_pool2d", "avg_pool2d", "global_avg_pool"])
        cout = self.draw(st.integers(1, 3))
        if op == "conv2d":
            k = self.draw(st.sampled_from([1, 3]))
            return self.op("conv2d", x, self.const([k, k, c, cout]), padding=[k // 2] * 4)
        if op == "dense":
            return self.op("dense", x, self.const([cout, c]))
        if op in ("max_pool2d", "avg_pool2d"):
            return self.op(op, x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1])
        return op and self.op(op, x)

    def opaque(self, x, tensors):
        op = self.choose(["softmax", "topk"])
        if op == "topk":
            return self.op("topk", x, k=self.shape(x)[3])
        return op and self.op(op, x)


_KINDS = (
    *["unary"] * 4,
    *["binary"] * 2,
    *["broadcast"] * 2,
    *["injective"] * 2,
    "reduce",
    *["anchor"] * 2,
    "opaque",
)


def _outputs(draw, b: GraphBuilder, nodes: list[str], used: set[str]) -> None:
    """The tensors nothing reads, and now and then one that is also read (an intermediate output)."""
    b.output(*(n for n in nodes if n not in used or draw(st.integers(0, 7)) == 0))


@st.composite
def op_graphs(draw, max_ops: int = 10):
    """A runnable random graph of 1..max_ops real ops."""
    b = GraphBuilder("random", dtype=FIXED)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    h, w = draw(st.sampled_from([(2, 2), (2, 3), (3, 3)]))
    tensors = [b.input("x", [1, h, w, draw(st.integers(1, 3))])]
    if draw(st.booleans()):
        tensors.append(b.input("y", b.type_of("x").shape))
    maker = _Maker(draw, b, rng)
    nodes: list[str] = []
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(_KINDS))
        out = getattr(maker, kind)(_pick(draw, tensors), tensors)
        if out is not None:
            nodes.append(out)
            tensors.append(out)
    if not nodes:
        nodes.append(maker.op("relu", tensors[0]))
    _outputs(draw, b, nodes, maker.used)
    return b.build()


def _window(draw, b: GraphBuilder, rng, x: str) -> str | None:
    n, h, w, c = b.type_of(x).shape
    op = draw(st.sampled_from(["conv2d", "conv2d", "depthwise", "max_pool2d", "avg_pool2d"]))
    k = draw(st.sampled_from([1, 2, 3]))
    stride = draw(st.sampled_from([1, 1, 2]))
    dil = draw(st.sampled_from([1, 1, 2])) if op != "max_pool2d" and op != "avg_pool2d" else 1
    span = dil * (k - 1) + 1
    pad = draw(st.integers(0, min(k - 1, 2))) if op in ("max_pool2d", "avg_pool2d") else draw(st.integers(0, 2))
    padding = [pad, pad, draw(st.integers(0, pad)), pad]
    if span > h + padding[0] + padding[2] or span > w + 2 * pad:
        return None
    if op == "conv2d":
        cout = draw(st.integers(1, 6))
        wt = b.constant(None, rng.normal(size=(k, k, c, cout)) * 0.3)
        return b.op("conv2d", x, wt, strides=[stride, stride], dilation=[dil, dil], padding=padding)
    if op == "depthwise":
        mult = draw(st.integers(1, 2))
        wt = b.constant(None, rng.normal(size=(k, k, 1, c * mult)) * 0.3)
        return b.op("conv2d", x, wt, strides=[stride, stride], dilation=[dil, dil], padding=padding, groups=c)
    return b.op(op, x, pool_size=[k, k], strides=[stride, stride], padding=padding)


def _nn_step(draw, b: GraphBuilder, rng, tensors: list[str]) -> str | None:
    x = _pick(draw, tensors)
    shape = b.type_of(x).shape
    kind = draw(st.sampled_from(["window", "window", "dense", "classifier", "attention", "reduce", "argmax", "slice",
                                 "join"]))
    if kind == "window":
        return _window(draw, b, rng, x)
    if kind == "dense":
        return b.op("dense", x, b.constant(None, rng.normal(size=(draw(st.integers(1, 9)), shape[-1])) * 0.3))
    if kind == "classifier":  # the whole tensor as one row of a dense (a stage of one row per frame)
        row = b.op("reshape", x, newshape=[1, -1])
        units = draw(st.integers(1, 9))
        out = b.op("dense", row, b.constant(None, rng.normal(size=(units, b.type_of(row).shape[-1])) * 0.3))
        return b.op("reshape", out, newshape=[1, 1, 1, units])
    if kind == "attention":  # two projections of x, the matmul of the two, a softmax, a third projection
        rows = b.op("reshape", x, newshape=[-1, shape[-1]])
        d = draw(st.integers(1, 4))
        q, k_, v = (b.op("dense", rows, b.constant(None, rng.normal(size=(d, shape[-1])) * 0.3)) for _ in range(3))
        scores = b.op("matmul", q, b.op("transpose", k_))
        out = b.op("matmul", b.op("softmax", scores), v)
        return b.op("reshape", out, newshape=[1, 1, *b.type_of(out).shape])
    if kind == "reduce":
        axes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True))
        return b.op(draw(st.sampled_from(["sum", "mean", "max"])), x, axes=axes, keepdims=True)
    if kind == "argmax":
        return b.op("argmax", x, axis=draw(st.integers(0, 3)), keepdims=True, dtype="fixed<16,16>")
    if kind == "slice":
        h, w = shape[1], shape[2]
        return b.op("slice", x, begin=[0, h - 1, 0], end=[1, -h - 1, w], step=[1, -1, draw(st.integers(1, 2))])
    same = [t for t in tensors if b.type_of(t).shape == shape and t != x]
    return b.op("add", x, draw(st.sampled_from(same))) if same else None


@st.composite
def nn_graphs(draw, max_ops: int = 5):
    """A runnable chain of the ops with the most schedule geometry, with residual joins."""
    b = GraphBuilder("nn", dtype=FIXED)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    h, w = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    tensors = [b.input("x", [1, h, w, draw(st.integers(1, 4))])]
    nodes: list[str] = []
    for _ in range(draw(st.integers(1, max_ops))):
        out = _nn_step(draw, b, rng, tensors)
        if out is not None:
            nodes.append(out)
            tensors.append(out)
    if not nodes:
        nodes.append(b.op("relu", tensors[0]))
    _outputs(draw, b, nodes, {src for node in b._nodes for src in node.inputs})
    return b.build()


_PATTERN_WEIGHTS = [Pattern.ELEMWISE] * 3 + [Pattern.BROADCAST] * 2 + [Pattern.INJECTIVE] * 3 + [
    Pattern.COMM_REDUCE,
    Pattern.OUT_ELEMWISE_FUSABLE,
    Pattern.OUT_ELEMWISE_FUSABLE,
    Pattern.TUPLE,
    Pattern.OPAQUE,
]


@st.composite
def pattern_graphs(draw, max_nodes: int = 10, min_nodes: int = 1):
    """A random DAG of ``custom`` nodes with random pattern kinds; not runnable."""
    b = GraphBuilder("patterns", dtype=FIXED)
    tensors = [b.input(f"in{k}", [4]) for k in range(draw(st.integers(1, 2)))]
    nodes: list[str] = []
    used: set[str] = set()
    for k in range(draw(st.integers(min_nodes, max_nodes))):
        srcs = [_pick(draw, tensors) for _ in range(draw(st.integers(1, 3)))]
        edges = None
        if draw(st.integers(0, 4)) == 0:
            edges = [draw(st.sampled_from(_PATTERN_WEIGHTS)) for _ in srcs]
        name = b.custom(*srcs, pattern=draw(st.sampled_from(_PATTERN_WEIGHTS)), shape=[4], dtype=FIXED,
                        edge_patterns=edges, name=f"n{k}")
        used.update(srcs)
        nodes.append(name)
        tensors.append(name)
    _outputs(draw, b, nodes, used)
    return b.build()
