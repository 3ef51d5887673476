"""verify() rejects every kind of malformed graph with one exact line naming the node and field."""

import math

import numpy as np
import pytest

from hlsfuse import FLOAT32, Constant, Graph, HlsfuseError, Input, Node, TensorType, parse_dtype

Q = parse_dtype("fixed<8,4>")


def inp(name, shape=(1, 4), dtype=Q):
    return Input(name, TensorType(tuple(shape), dtype))


def const(name, shape, dtype=Q):
    return Constant(name, TensorType(tuple(shape), dtype), np.zeros(shape))


def graph(nodes, outputs, inputs=None, constants=()):
    return Graph("g", tuple(inputs or [inp("x")]), tuple(constants), tuple(nodes), tuple(outputs))


def rejected(*args, **kwargs) -> str:
    with pytest.raises(HlsfuseError) as info:
        graph(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


N = Node


def test_accepts_nodes_in_any_order_and_sorts_them():
    nodes = [N("c", "neg", ["b"]), N("b", "relu", ["a"]), N("a", "abs", ["x"])]
    g = graph(nodes, ["c"])
    assert [n.name for n in g.nodes] == ["a", "b", "c"]
    assert g == graph(list(reversed(nodes)), ["c"])


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (
            [N("a", "relu", ["b"]), N("b", "relu", ["a"])],
            "node 'a' (relu): its inputs form a cycle: 'a' reads 'b' reads 'a'",
        ),
        ([N("a", "relu", ["a"])], "node 'a' (relu): its inputs form a cycle: 'a' reads 'a'"),
        (
            [N("r", "relu", ["x"]), N("a", "add", ["r", "c"]), N("b", "relu", ["a"]), N("c", "relu", ["b"])],
            "node 'a' (add): its inputs form a cycle: 'a' reads 'c' reads 'b' reads 'a'",
        ),
    ],
)
def test_cycle(nodes, message):
    assert rejected(nodes, [nodes[-1].name]) == message


def test_unknown_op():
    assert rejected([N("n", "reluu", ["x"])], ["n"]) == "node 'n': unknown op 'reluu' (did you mean 'relu' or 'elu'?)"
    assert rejected([N("n", "zzz", ["x"])], ["n"]) == "node 'n': unknown op 'zzz' (see docs/ops.md for the list)"


def test_dangling_input():
    assert rejected([N("n", "relu", ["q"])], ["n"]) == (
        "node 'n' (relu): input 0 'q' names nothing (no input, constant or node of that name)"
    )


def test_duplicate_names():
    assert rejected([N("x", "relu", ["x"])], ["x"]) == "node 'x': name already used by an input"
    assert rejected([N("a", "relu", ["x"]), N("a", "neg", ["x"])], ["a"]) == "node 'a': name already used by a node"
    assert rejected([N("a", "relu", ["x"])], ["a"], constants=[const("x", (4,))]) == (
        "constant 'x': name already used by an input"
    )


def test_wrong_arity():
    assert rejected([N("n", "relu", ["x", "x"])], ["n"]) == "node 'n' (relu): expects 1 input(s) (x), got 2"
    assert rejected([N("n", "add", ["x"])], ["n"]) == "node 'n' (add): expects 2 input(s) (a, b), got 1"


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (N("n", "leaky_relu", ["x"], {"beta": 1}), "node 'n' (leaky_relu): unknown attribute 'beta' (expected: alpha)"),
        (
            N("n", "leaky_relu", ["x"], {"alpha": "big"}),
            "node 'n' (leaky_relu): attribute 'alpha' must be a number, not 'big'",
        ),
        (N("n", "clip", ["x"], {"max": 1.0}), "node 'n' (clip): missing required attribute 'min'"),
    ],
)
def test_bad_attributes(node, message):
    assert rejected([node], ["n"]) == message


def test_bad_attribute_length_on_conv2d():
    nodes = [N("c", "conv2d", ["x", "w"], {"strides": [1, 1, 1]})]
    assert rejected(nodes, ["c"], inputs=[inp("x", (1, 8, 8, 3))], constants=[const("w", (3, 3, 3, 4))]) == (
        "node 'c' (conv2d): attribute 'strides' must have 2 values, not 3"
    )


@pytest.mark.parametrize(
    ("op", "shapes", "message"),
    [
        ("add", [(1, 4), (1, 3)], "node 'n' (add): input shapes [1, 4] and [1, 3] do not broadcast"),
        (
            "bias_add",
            [(1, 4), (3,)],
            "node 'n' (bias_add): input 'b' must have shape [4] (the last axis of 'x'), not [3]",
        ),
        ("dense", [(1, 4), (5, 3)], "node 'n' (dense): input 'w' must have 4 columns (the last axis of 'x'), not 3"),
        (
            "conv2d",
            [(1, 8, 8, 3), (3, 3, 2, 4)],
            "node 'n' (conv2d): input 'w' must have 3 input channels (Cin/groups) on axis 2, not 2",
        ),
        (
            "conv2d",
            [(1, 8, 8, 3), (3, 3, 3)],
            "node 'n' (conv2d): input 'w' must have 4 dims ([KH, KW, Cin/groups, Cout]), not 3",
        ),
    ],
)
def test_shape_mismatch(op, shapes, message):
    inputs = [inp("x", shapes[0])]
    constants = [const("w", shapes[1])]
    assert rejected([N("n", op, ["x", "w"])], ["n"], inputs=inputs, constants=constants) == message


def test_unsupported_dtypes():
    mixed = [inp("x"), inp("y", dtype=FLOAT32)]
    assert rejected([N("n", "add", ["x", "y"])], ["n"], inputs=mixed) == (
        "node 'n' (add): inputs mix float32 and fixed-point types; insert a cast"
    )
    assert rejected([N("n", "relu", ["x"], dtype=FLOAT32)], ["n"]) == (
        "node 'n' (relu): output dtype float32 does not match the inputs' family; use cast to convert"
    )
    wide = [inp("x", dtype=parse_dtype("fixed<33,10>")), inp("y", dtype=parse_dtype("fixed<32,10>"))]
    assert rejected([N("n", "mul", ["x", "y"])], ["n"], inputs=wide) == (
        "node 'n' (mul): the exact result needs a 65-bit signed exact intermediate, more than the 64 bits "
        "hlsfuse computes with; use narrower input types"
    )


def test_a_type_amds_ap_fixed_computes_differently_is_refused():
    """fixed<1,I,Q,SAT_SYM> holds only 0, which AMD's ap_fixed gets wrong (docs/hls.md); wherever it is declared."""
    sym = parse_dtype("fixed<1,1,RND,SAT_SYM>")
    tail = ("type fixed<1,1,RND,SAT_SYM> holds only 0 (SAT_SYM clips a 1-bit signed value to [0, 0]), but AMD's "
            "ap_fixed, which Vitis HLS uses, gives -1 for a negative value; use SAT, or a width of 2 or more")
    assert rejected([N("n", "relu", ["x"], dtype=sym)], ["n"]) == f"node 'n' (relu): {tail}"
    assert rejected([N("n", "relu", ["x"], dtype=Q)], ["n"], inputs=[inp("x", dtype=sym)]) == f"input 'x': {tail}"
    assert rejected([N("n", "add", ["x", "c"])], ["n"], constants=[const("c", (1, 4), sym)]) == f"constant 'c': {tail}"
    for fine in ("fixed<1,1,RND,SAT>", "ufixed<1,1,RND,SAT_SYM>", "fixed<2,1,RND,SAT_SYM>"):
        graph([N("n", "relu", ["x"], dtype=parse_dtype(fine))], ["n"])


def test_outputs_that_name_nothing():
    nodes = [N("n", "relu", ["x"])]
    assert rejected(nodes, ["zz"]) == "output 'zz' names nothing (no node of that name)"
    assert rejected(nodes, ["x"]) == "output 'x' is a graph input; outputs must be nodes"
    assert rejected(nodes, []) == "graph 'g' has no outputs"
    assert rejected(nodes, ["n", "n"]) == "output 'n' is listed twice"


def test_bad_shape_and_custom_fields():
    assert rejected([N("n", "relu", ["x"])], ["n"], inputs=[inp("x", (1, 0))]) == (
        "input 'x': shape must be a list of positive integers, not [1, 0]"
    )
    assert rejected([N("n", "custom", ["x"], dtype=Q, shape=(2,))], ["n"]) == (
        "node 'n' (custom): custom nodes need a 'pattern' field (their pattern kind)"
    )


def test_attributes_are_frozen_to_one_canonical_form():
    as_list = N("n", "reshape", ["x"], {"newshape": [1, -1]})
    as_tuple = N("n", "reshape", ["x"], {"newshape": (np.int64(1), -1)})
    assert as_list == as_tuple
    assert as_list.attrs["newshape"] == (1, -1)
    with pytest.raises(TypeError):
        as_list.attrs["newshape"] = (4,)


# Large graphs: a sorted file is taken in one pass and each node signature is inferred once; a defect
# far down such a graph is reported exactly as in a small one.

def _blocks(count):
    """``count`` residual blocks (conv2d, bias add, relu, add of the block's input) in file order."""
    nodes, x = [], "x"
    for k in range(count):
        nodes += [N(f"c{k}", "conv2d", [x, "w"], {"padding": [1, 1, 1, 1]}), N(f"b{k}", "bias_add", [f"c{k}", "b"]),
                  N(f"r{k}", "relu", [f"b{k}"]), N(f"s{k}", "add", [f"r{k}", x])]
        x = f"s{k}"
    return nodes


def big(nodes, outputs):
    constants = [const("w", (3, 3, 2, 2)), const("b", (2,))]
    return graph(nodes, outputs, inputs=[inp("x", (1, 4, 4, 2))], constants=constants)


def rejected_big(nodes, outputs) -> str:
    with pytest.raises(HlsfuseError) as info:
        big(nodes, outputs)
    return str(info.value)


@pytest.mark.parametrize(
    ("defect", "message"),
    [
        (N("c10000", "conv2d", ["s9999", "w"], {"padding": [1, 1, 1]}),
         "node 'c10000' (conv2d): attribute 'padding' must have 4 values, not 3"),
        (N("c10000", "conv2d", ["s9999", "w"], {"padding": [1, 1, 1, True]}),
         "node 'c10000' (conv2d): attribute 'padding' must be a list of integers, not [1, 1, 1, True]"),
        (N("c10000", "conv2d", ["s9999", "w"], {"padding": [1, 1, 1, 1.0]}),
         "node 'c10000' (conv2d): attribute 'padding' must be a list of integers, not [1, 1, 1, 1.0]"),
        (N("c10000", "conv2d", ["s9999", "w"], {"padding": [1, 1, 1, 1], "groups": True}),
         "node 'c10000' (conv2d): attribute 'groups' must be an integer, not True"),
        (N("c10000", "conv2d", ["s9999", "b"], {"padding": [1, 1, 1, 1]}),
         "node 'c10000' (conv2d): input 'w' must have 4 dims ([KH, KW, Cin/groups, Cout]), not 1"),
        (N("c10000", "relu", ["s9999", "w"]), "node 'c10000' (relu): expects 1 input(s) (x), got 2"),
        (N("c10000", "conv2d", ["c10000", "w"], {"padding": [1, 1, 1, 1]}),
         "node 'c10000' (conv2d): its inputs form a cycle: 'c10000' reads 'c10000'"),
        (N("c10000", "conv2d", ["s10000", "w"], {"padding": [1, 1, 1, 1]}),
         "node 'c10000' (conv2d): its inputs form a cycle: 'c10000' reads 's10000' reads 'r10000' reads 'b10000' "
         "reads 'c10000'"),
    ],
)
def test_a_defect_at_node_40000_of_repeated_blocks_is_reported_as_in_a_small_graph(defect, message):
    # 10,000 good blocks (each signature inferred once), then node 40,000 with the defect, then good blocks
    nodes = _blocks(10_001)
    assert nodes[40_000].name == "c10000"
    nodes[40_000] = defect
    assert rejected_big(nodes, ["s10000"]) == message


def test_repeated_signatures_share_their_facts_and_file_order_is_kept_when_sorted():
    nodes = _blocks(2_000)
    g = big(nodes, ["s1999"])
    assert g.nodes == tuple(nodes)
    assert g.types["s1999"] == g.types["c0"] == TensorType((1, 4, 4, 2), Q)
    assert g.sigs["c1999"] == g.sigs["c1"] and g.sigs["c1"].attrs["padding"] == (1, 1, 1, 1)
    shuffled = nodes[::2] + nodes[1::2]  # out of order: sorted by the depth-first walk, as before
    assert big(shuffled, ["s1999"]).nodes == tuple(nodes)


def test_attributes_equal_as_numbers_but_of_other_kinds_are_not_taken_for_each_other():
    # 1 == 1.0 == True as dict keys; an integer attribute takes only the first
    ok = N("a", "transpose", ["x"], {"axes": [0, 1]})
    for bad, shown in (([0, True], "[0, True]"), ([0.0, 1], "[0.0, 1]")):
        nodes = [ok, N("b", "transpose", ["a"], {"axes": bad})]
        message = f"node 'b' (transpose): attribute 'axes' must be a list of integers, not {shown}"
        assert rejected(nodes, ["b"]) == message


def test_each_node_keeps_its_own_attribute_values_when_signatures_are_shared():
    # -0.0 == 0.0 as dict keys, but the sig of each node must hold the node's own value
    nodes = [N("a", "leaky_relu", ["x"], {"alpha": 0.0}), N("b", "leaky_relu", ["a"], {"alpha": -0.0}),
             N("c", "leaky_relu", ["b"], {"alpha": 0.0})]
    g = graph(nodes, ["c"])
    assert [math.copysign(1.0, g.sigs[n].attrs["alpha"]) for n in "abc"] == [1.0, -1.0, 1.0]
    # attributes that are not plain data are checked node by node: a nested list is refused every time
    nested = [N("a", "transpose", ["x"], {"axes": [0, 1]}), N("b", "transpose", ["a"], {"axes": [[0], 1]})]
    assert rejected(nested, ["b"]) == "node 'b' (transpose): attribute 'axes' must be a list of integers, not [[0], 1]"
