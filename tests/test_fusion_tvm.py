"""TVM's own fusion tests, ported as before/expected partitions (mode "tvm").

Each case rebuilds the "before" graph of a test in TVM's
tests/python/relay/test_pass_fuse_ops.py or tests/python/relax/test_transform_fuse_ops.py
with hlsfuse ops (``custom`` nodes stand in for ops hlsfuse lacks, with TVM's pattern kind),
and states TVM's "expected" partition as lists of node names in plan order. Graph inputs
and weights are not ops and belong to no group. Shapes are small and NHWC; the partition
depends only on the structure, the kinds and which shapes are equal.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlsfuse import GraphBuilder, fuse
from hlsfuse.fusion import verify

F = "fixed<16,6>"


def partition(graph, **kw) -> list[list[str]]:
    plan = fuse(graph, mode="tvm", **kw)
    verify(plan, graph)
    return [list(g.nodes) for g in plan.groups]


def weight(b, shape, name=None):
    return b.constant(name, np.full(shape, 0.25))


def one(b):
    """The scalar constant 1 of TVM's tests (``relay.const(1, "float32")``)."""
    return weight(b, [])


def custom(b, *inputs, name, pattern, shape, edge_patterns=None):
    return b.custom(*inputs, name=name, pattern=pattern, shape=shape, dtype=F, edge_patterns=edge_patterns)


def test_fuse_simple():
    # relay/relax test_fuse_simple: add(x, 1) -> exp -> squeeze is one group
    b = GraphBuilder("simple", dtype=F)
    x = b.input("x", [10, 20])
    y = b.add(x, one(b), name="add")
    z = b.exp(y, name="exp")
    b.output(b.squeeze(z, name="squeeze"))
    assert partition(b.build()) == [["add", "exp", "squeeze"]]


def conv2d_fuse_graph():
    b = GraphBuilder("conv2d_fuse", dtype=F)
    x = b.input("x", [1, 8, 8, 4])
    x1 = b.add(x, one(b), name="add0")
    y = b.conv2d(x1, weight(b, [3, 3, 4, 4]), padding=[1, 1, 1, 1], name="conv1")
    y1 = b.add(one(b), y, name="add1")  # the next post-dominator
    y2 = b.add(y, y1, name="add2")
    z2 = b.conv2d(y2, weight(b, [1, 1, 4, 4]), name="conv2")
    z3 = b.conv2d(y2, weight(b, [3, 3, 4, 4]), padding=[1, 1, 1, 1], name="conv3")
    b.output(b.add(z2, z3, name="add3"))  # can only take one of the two convolutions
    return b.build()


def test_conv2d_fuse():
    # relay/relax test_conv2d_fuse: conv2 (visited first) takes add3; conv3 stays alone
    assert partition(conv2d_fuse_graph()) == [["add0"], ["conv1", "add1", "add2"], ["conv3"], ["conv2", "add3"]]


def upsampling(b, x, name):
    """``nn.upsampling`` (scale 2) is INJECTIVE in TVM."""
    n, h, w, c = b.type_of(x).shape
    return custom(b, x, name=name, pattern="INJECTIVE", shape=[n, 2 * h, 2 * w, c])


def pool2x2(b, x, name):
    return b.max_pool2d(x, pool_size=[2, 2], strides=[2, 2], name=name)


def test_concatenate():
    # relax test_concatenate: max_pool2d alone; upsampling, concat and add in one group
    b = GraphBuilder("concatenate", dtype=F)
    x = b.input("x", [1, 8, 8, 4])
    up = upsampling(b, pool2x2(b, x, "pool"), "up")
    cat = b.concat(up, x, axis=-1, name="concat")
    b.output(b.add(cat, one(b), name="add"))
    assert partition(b.build()) == [["pool"], ["up", "concat", "add"]]


def test_concatenate_with_tuple_node():
    # relay test_concatenate: the concat reads a Tuple node; phase 2 pulls the field
    # 'up' into the tuple's group once the tuple has fused into concat
    b = GraphBuilder("concatenate_tuple", dtype=F)
    x = b.input("x", [1, 8, 8, 4])
    up = upsampling(b, pool2x2(b, x, "pool"), "up")
    tup = custom(b, up, x, name="tuple", pattern="TUPLE", shape=[1, 8, 8, 8])
    cat = custom(b, tup, name="concat", pattern="INJECTIVE", shape=[1, 8, 8, 8])
    b.output(b.add(cat, one(b), name="add"))
    assert partition(b.build()) == [["pool"], ["up", "tuple", "concat", "add"]]


def test_tuple_root():
    # relay test_tuple_root: the output is a Tuple; upsampling does not fuse into it
    b = GraphBuilder("tuple_root", dtype=F)
    x = b.input("x", [1, 8, 8, 4])
    up = upsampling(b, pool2x2(b, x, "pool"), "up")
    b.output(custom(b, up, x, name="tuple", pattern="TUPLE", shape=[1, 8, 8, 4]))
    assert partition(b.build()) == [["pool"], ["up"], ["tuple"]]


def test_stop_fusion():
    # relay test_stop_fusion: annotation.stop_fusion is OPAQUE and splits add from exp
    b = GraphBuilder("stop_fusion", dtype=F)
    x = b.input("x", [10, 20])
    y = b.add(x, one(b), name="add")
    stop = custom(b, y, name="stop_fusion", pattern="OPAQUE", shape=[10, 20])
    b.output(b.exp(stop, name="exp"))
    assert partition(b.build()) == [["add"], ["stop_fusion"], ["exp"]]


def split3(b, x, prefix, items=3):
    """``split`` into 3 (INJECTIVE) and TupleGetItem nodes (INJECTIVE) for the first ``items`` parts."""
    n, c = b.type_of(x).shape
    s = custom(b, x, name=f"{prefix}split", pattern="INJECTIVE", shape=[n, c])
    return [custom(b, s, name=f"{prefix}item{k}", pattern="INJECTIVE", shape=[n, c // 3]) for k in range(items)]


def test_fuse_tuple_get_elemwise():
    # relay/relax test_fuse_tuple_get_elemwise: dense alone; split, the items and the math in one group
    b = GraphBuilder("tuple_get_elemwise", dtype=F)
    x = b.input("x", [1, 10])
    d = b.dense(x, weight(b, [30, 10]), name="dense")
    i0, i1, i2 = split3(b, d, "")
    s = b.sigmoid(i0, name="sigmoid")
    m = b.mul(b.tanh(i1, name="tanh"), b.exp(i2, name="exp"), name="mul")
    b.output(b.add(s, m, name="add"))
    expected = [["dense"], ["split", "item0", "item1", "item2", "sigmoid", "tanh", "exp", "mul", "add"]]
    assert partition(b.build()) == expected


def test_tuple_get_root():
    # relay/relax test_tuple_get_root: split and item0 together, dense alone
    b = GraphBuilder("tuple_get_root", dtype=F)
    x = b.input("x", [1, 30])
    w = b.input("w", [10, 10])
    (i0,) = split3(b, x, "", items=1)
    b.output(b.dense(i0, w, name="dense"))
    assert partition(b.build()) == [["split", "item0"], ["dense"]]


def tuple_intermediate_graph(with_tuple: bool):
    b = GraphBuilder("tuple_intermediate", dtype=F)
    x = b.input("x", [1, 8, 1, 8])
    inj = b.squeeze(x, axes=[2], name="inj")
    y1 = b.add(inj, one(b), name="y1")
    tmp = b.squeeze(b.expand_dims(inj, axis=0, name="tmp0"), axes=[0], name="tmp1")
    y2 = b.add(b.add(tmp, one(b), name="tmp2"), one(b), name="y2")
    y3 = b.add(inj, one(b), name="y3")
    if with_tuple:
        tup = custom(b, y1, y2, y3, name="tuple", pattern="TUPLE", shape=[1, 24, 8])
        cat = custom(b, tup, name="concat", pattern="INJECTIVE", shape=[1, 24, 8])
    else:
        cat = b.concat(y1, y2, y3, axis=1, name="concat")
    out_inj = b.reshape(cat, [24, 8], name="out_inj")
    b.output(b.add(out_inj, one(b), name="out"))
    return b.build()


@pytest.mark.parametrize("with_tuple", [False, True], ids=["relax", "relay"])
def test_tuple_intermediate(with_tuple):
    # relay/relax test_tuple_intermediate: everything is one group
    graph = tuple_intermediate_graph(with_tuple)
    assert partition(graph) == [[n.name for n in graph.nodes]]


def test_tuple_consecutive():
    # relay/relax test_tuple_consecutive: three concat blocks and the outer concat in one group,
    # max_pool2d with the first add, the second output add alone
    b = GraphBuilder("tuple_consecutive", dtype=F)
    x = b.input("x", [1, 4, 4, 2])
    first = []

    def block(k):
        ys = [b.add(x, one(b), name=f"b{k}_y{j}") for j in range(3)]
        first.extend(ys)
        cat = b.concat(*ys, axis=-1, name=f"b{k}_concat")
        return b.add(cat, one(b), name=f"b{k}_out")

    blocks = [block(k) for k in range(3)]
    cat = b.concat(*blocks, axis=-1, name="concat")
    out = b.add(pool2x2(b, cat, "pool"), one(b), name="out")
    b.output(out, b.add(out, one(b), name="out2"))
    graph = b.build()
    big = [n.name for n in graph.nodes][: 3 * 5 + 1]
    assert partition(graph) == [big, ["pool", "out"], ["out2"]]


def test_inception_like():
    # relay/relax test_inception_like: conv+relu pairs, each concat alone
    b = GraphBuilder("inception_like", dtype=F)
    x = b.input("x", [1, 8, 8, 4])

    def conv(data, name):
        c = b.type_of(data).shape[3]
        y = b.conv2d(data, weight(b, [3, 3, c, 4]), padding=[1, 1, 1, 1], name=f"{name}_conv")
        return b.relu(y, name=f"{name}_relu")

    def inception(data, k):
        return b.concat(conv(data, f"i{k}a"), conv(data, f"i{k}b"), axis=-1, name=f"i{k}_concat")

    b.output(inception(inception(x, 1), 2))
    expected = [
        ["i1a_conv", "i1a_relu"],
        ["i1b_conv", "i1b_relu"],
        ["i1_concat"],
        ["i2a_conv", "i2a_relu"],
        ["i2b_conv", "i2b_relu"],
        ["i2_concat"],
    ]
    assert partition(b.build()) == expected


def test_fuse_parallel_injective():
    # relay test_fuse_parallel_injective: add, squeeze, transpose and the join in one group
    b = GraphBuilder("parallel_injective", dtype=F)
    x = b.input("x", [10, 1, 20])
    y = b.add(x, one(b), name="add")
    z = b.squeeze(y, axes=[1], name="squeeze")
    u = b.reshape(b.transpose(y, axes=[0, 1, 2], name="transpose"), [10, 20], name="reshape")
    b.output(b.add(z, u, name="shift"))  # left_shift: BROADCAST like add
    assert partition(b.build()) == [["add", "squeeze", "transpose", "reshape", "shift"]]


def test_fuse_parallel_injective_relax():
    # relax test_fuse_parallel_injective: two transposes on one branch, still one group
    b = GraphBuilder("parallel_injective2", dtype=F)
    x = b.input("x", [10, 20])
    y = b.add(x, one(b), name="add")
    z = b.squeeze(y, name="squeeze")
    u = b.transpose(b.transpose(y, axes=[1, 0], name="t1"), axes=[1, 0], name="t2")
    b.output(b.add(z, u, name="shift"))
    assert partition(b.build()) == [["add", "squeeze", "t1", "t2", "shift"]]


def exp_chain(n):
    b = GraphBuilder("chain", dtype=F)
    y = b.input("x", [10, 20])
    for k in range(n):
        y = b.exp(y, name=f"exp{k}")
    b.output(y)
    return b.build()


@pytest.mark.parametrize(("n", "depth"), [(300, 256), (20, 10)])
def test_fuse_max(n, depth):
    # relay test_fuse_max: a chain of n exps splits after max_fuse_depth ops
    kw = {} if depth == 256 else {"max_fuse_depth": depth}
    names = [f"exp{k}" for k in range(n)]
    assert partition(exp_chain(n), **kw) == [names[:depth], names[depth:]]


def test_fuse_max_diamond():
    # relay test_fuse_max_diamond: with max depth = ops of one diamond, each diamond is a group
    branch_len, diamonds = 5, 3
    b = GraphBuilder("diamonds", dtype=F)
    out = b.input("x", [10, 20])
    expected = []
    for d in range(diamonds):
        x1 = x2 = out
        left, right = [], []
        for k in range(branch_len):
            x1 = b.exp(x1, name=f"d{d}_l{k}")
            x2 = b.exp(x2, name=f"d{d}_r{k}")
            left.append(x1)
            right.append(x2)
        out = b.add(x1, x2, name=f"d{d}_add")
        expected.append([*(n for pair in zip(left, right) for n in pair), out])
    b.output(out)
    assert partition(b.build(), max_fuse_depth=2 * branch_len + 1) == expected


def test_fuse_bcast_reduce_scalar():
    # relay test_fuse_bcast_reduce_scalar: a broadcast op fuses into the reduction after it
    b = GraphBuilder("bcast_reduce", dtype=F)
    x = b.input("x", [4])
    less = b.sub(x, one(b), name="less")
    b.output(b.max(less, name="min"))
    assert partition(b.build()) == [["less", "min"]]


def test_fuse_softmax():
    # relay test_fuse_softmax / relax test_softmax: softmax is OUT_ELEMWISE_FUSABLE in TVM and takes the cast
    b = GraphBuilder("softmax", dtype=F)
    x = b.input("x", [16, 16])
    sm = custom(b, x, name="softmax", pattern="OUT_ELEMWISE_FUSABLE", shape=[16, 16])
    b.output(b.cast(sm, "fixed<8,2>", name="cast"))
    assert partition(b.build()) == [["softmax", "cast"]]


def test_fuse_take():
    # relay test_fuse_take: concat of x with itself and take (INJECTIVE) in one group
    b = GraphBuilder("take", dtype=F)
    x = b.input("x", [10, 1])
    cat = b.concat(x, x, axis=-1, name="concat")
    b.output(custom(b, cat, name="take", pattern="INJECTIVE", shape=[1]))
    assert partition(b.build()) == [["concat", "take"]]


def test_multiple_paths():
    # relax test_multiple_paths: conv with both adds; matmul with its bias; the reshapes and
    # the weight transpose stay alone (their post-dominators hold anchors)
    b = GraphBuilder("multiple_paths", dtype=F)
    inp0 = b.input("inp0", [2, 4, 4, 8])
    inp1 = b.input("inp1", [2, 16])
    b1 = b.input("b1", [8])
    w2 = b.input("w2", [8, 16])
    b2 = b.input("b2", [8])
    lv27 = b.conv2d(inp0, weight(b, [3, 3, 8, 8]), padding=[1, 1, 1, 1], name="lv27")
    lv28 = b.reshape(b1, [1, 1, 1, 8], name="lv28")
    lv29 = b.add(lv27, lv28, name="lv29")
    lv31 = b.transpose(w2, name="lv31")
    lv32 = b.matmul(inp1, lv31, name="lv32")
    lv33 = b.add(lv32, b2, name="lv33")
    lv35 = b.reshape(lv33, [2, 1, 1, 8], name="lv35")
    b.output(b.add(lv29, lv35, name="lv36"))
    assert partition(b.build()) == [["lv28"], ["lv31"], ["lv32", "lv33"], ["lv35"], ["lv27", "lv29", "lv36"]]


def test_layer_norm_relu():
    # relax test_layer_norm_silu: a layer_norm kernel (OUT_ELEMWISE_FUSABLE) takes the relu
    b = GraphBuilder("layer_norm", dtype=F)
    x = b.input("x", [1, 8, 4, 4])
    mean, var = b.input("mean", [4, 4]), b.input("var", [4, 4])
    ln = custom(b, x, mean, var, name="layer_norm", pattern="OUT_ELEMWISE_FUSABLE", shape=[1, 8, 4, 4])
    b.output(b.relu(ln, name="relu"))
    assert partition(b.build()) == [["layer_norm", "relu"]]


def test_edge_with_opaque_call():
    # relax test_edge_with_call_dps_packed: 'a' is read by an output and by an opaque call,
    # so it has no post-dominator and nothing fuses
    b = GraphBuilder("packed", dtype=F)
    x = b.input("x", [2, 3])
    a = b.exp(x, name="a")
    bb = b.exp(a, name="b")
    c = custom(b, a, name="c", pattern="OPAQUE", shape=[2, 3])
    b.output(bb, c)
    assert partition(b.build()) == [["a"], ["b"], ["c"]]


def test_opt_level_zero():
    # relay tests run FuseOps(fuse_opt_level=0) first: every op is its own group
    graph = conv2d_fuse_graph()
    assert partition(graph, opt_level=0) == [[n.name] for n in graph.nodes]


@pytest.mark.parametrize(("depth", "expected"), [(5, [["src"], ["a", "b", "join"]]), (6, [["src", "a", "b", "join"]])])
def test_fuse_max_counts_stale_records(depth, expected):
    # TVM's CountFusedNodesWithNewChild, from graph_partitioner.cc: a and b join 'join' in
    # phase 0 (its group has 3 ops); in phase 1 fusing src counts the sink's group (3) plus
    # the record of every node on the paths src -> join: src 1, a 1, b 1 (a and b are counted
    # again, their records are stale) = 6, although the group would have 4 ops
    b = GraphBuilder("stale", dtype=F)
    x = b.input("x", [4, 4])
    src = b.transpose(x, name="src")
    b.output(b.add(b.relu(src, name="a"), b.neg(src, name="b"), name="join"))
    assert partition(b.build(), max_fuse_depth=depth) == expected
