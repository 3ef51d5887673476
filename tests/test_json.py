"""The JSON graph format: exact round trips, and one-line errors naming the file and the field."""

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlsfuse import (
    Constant,
    FixedType,
    Graph,
    GraphBuilder,
    HlsfuseError,
    Pattern,
    TensorType,
    graph_from_dict,
    graph_to_dict,
    load_graph,
    parse_dtype,
    save_graph,
)
from hlsfuse.graph_json import init_values
from hlsfuse.types import from_float

BASE = {
    "name": "g",
    "inputs": [{"name": "x", "shape": [1, 4], "dtype": "fixed<8,4>"}],
    "constants": [{"name": "b", "shape": [4], "dtype": "fixed<8,4>", "data": [0.5, -1, 2.25, 0]}],
    "nodes": [{"name": "y", "op": "bias_add", "inputs": ["x", "b"]}],
    "outputs": ["y"],
}


def mixed_graph():
    """Every kind of field the format has: types of each family, init constants, node dtypes,
    pattern overrides, tuple attributes and a custom node with edge patterns."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("mixed", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 6, 6, 4])
    f = b.input("f", [2, 3], dtype="float32")
    w = b.constant("w", rng.normal(0, 0.4, (3, 3, 4, 4)), dtype="fixed<8,1,RND,SAT>")
    bias = b.constant("bias", rng.normal(0, 1, 4), dtype="int8")
    s = b.constant("s", rng.uniform(0, 4, 4), dtype="ufixed<6,-1>")
    big = b.constant("big", rng.integers(-3, 4, 4) * 64.0, dtype="fixed<6,9>")
    fc = b.constant("fc", rng.normal(0, 1, (2, 3)), dtype="float32")
    h = b.conv2d(x, w, strides=(1, 1), padding=[1, 1, 1, 1], name="conv")
    h = b.bias_add(h, bias, dtype="fixed<18,8,RND_CONV,SAT_SYM>", name="bias_add")
    h = b.scale(h, s, pattern="INJECTIVE", name="scale")
    h = b.add(h, big, name="add")
    h = b.leaky_relu(h, alpha=0.125, name="leaky")
    r = b.reshape(h, (1, -1), name="flat")
    g = b.add(f, fc, name="fadd")
    c = b.custom(r, g, pattern="OPAQUE", shape=[3], dtype="int16", edge_patterns=["INJECTIVE", "ELEMWISE"], name="cu")
    sm = b.softmax(r, exp_dtype=parse_dtype("ufixed<18,2,RND,SAT>"), name="sm")  # an attribute of kind dtype
    b.output(r, c, sm)
    return b.build()


def with_init_constants():
    """A graph whose constants come from each ``init`` kind (through the loader)."""
    data = copy.deepcopy(BASE)
    data["constants"] = [
        {"name": "b", "shape": [4], "dtype": "fixed<8,4,RND,SAT>", "init": {"kind": "uniform", "low": -2, "seed": 5}},
        {"name": "n", "shape": [2, 4], "dtype": "float32", "init": {"kind": "normal", "std": 0.5, "seed": 1}},
        {"name": "z", "shape": [4], "dtype": "int8", "init": {"kind": "zeros"}},
    ]
    return data


def test_round_trip_through_file_is_exact_and_stable(tmp_path):
    graph = mixed_graph()
    path = save_graph(graph, tmp_path / "g.json")
    loaded = load_graph(path)
    assert loaded == graph
    assert [n.name for n in loaded.nodes] == [n.name for n in graph.nodes]
    again = save_graph(loaded, tmp_path / "again.json")
    assert again.read_bytes() == path.read_bytes()


def test_saved_values_are_real_numbers_and_integers_for_integer_types(tmp_path):
    graph = mixed_graph()
    data = json.loads(save_graph(graph, tmp_path / "g.json").read_text())
    consts = {c["name"]: c for c in data["constants"]}
    assert all(isinstance(v, int) for v in consts["bias"]["data"])
    assert all(v % 64 == 0 for v in consts["big"]["data"])  # fixed<6,9>: steps of 2**3, written as integers
    expected = graph.constant_map["w"].values.ravel().tolist()
    assert consts["w"]["data"] == expected
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["conv"]["attrs"] == {"strides": [1, 1], "padding": [1, 1, 1, 1]}
    assert nodes["scale"]["pattern"] == "INJECTIVE"
    assert nodes["cu"] == {
        "name": "cu",
        "op": "custom",
        "inputs": ["flat", "fadd"],
        "dtype": "int16",
        "pattern": "OPAQUE",
        "edge_patterns": ["INJECTIVE", "ELEMWISE"],
        "shape": [3],
    }
    assert nodes["flat"]["attrs"] == {"newshape": [1, -1]}
    assert nodes["sm"]["attrs"] == {"exp_dtype": "ufixed<18,2,RND,SAT>"}


def test_init_constants_are_generated_kept_and_written_back(tmp_path):
    graph = graph_from_dict(with_init_constants())
    b, n, z = graph.constants
    assert dict(b.init) == {"kind": "uniform", "low": -2.0, "high": 1.0, "seed": 5}
    assert dict(n.init) == {"kind": "normal", "mean": 0.0, "std": 0.5, "seed": 1}
    assert dict(z.init) == {"kind": "zeros"}
    uniform = np.random.default_rng(5).uniform(-2.0, 1.0, size=(4,))
    assert np.array_equal(b.data, from_float(uniform, b.type.dtype))
    assert np.array_equal(n.data, np.random.default_rng(1).normal(0.0, 0.5, size=(2, 4)).astype(np.float32))
    assert not z.data.any()
    saved = json.loads(save_graph(graph, tmp_path / "g.json").read_text())
    assert [c["init"] for c in saved["constants"]] == [dict(c.init) for c in graph.constants]
    assert all("data" not in c for c in saved["constants"])
    assert load_graph(tmp_path / "g.json") == graph


def test_init_values_differ_by_seed():
    spec = {"kind": "normal", "mean": 0.0, "std": 1.0, "seed": 0}
    assert not np.array_equal(init_values(spec, (8,)), init_values({**spec, "seed": 1}, (8,)))
    assert np.array_equal(init_values(spec, (8,)), init_values(dict(spec), (8,)))


def test_node_order_in_the_file_is_free():
    data = copy.deepcopy(BASE)
    data["nodes"] = [
        {"name": "z", "op": "neg", "inputs": ["r"]},
        {"name": "r", "op": "relu", "inputs": ["y"]},
        {"name": "y", "op": "bias_add", "inputs": ["x", "b"]},
    ]
    data["outputs"] = ["z"]
    graph = graph_from_dict(data)
    assert [n.name for n in graph.nodes] == ["y", "r", "z"]
    assert graph_from_dict(graph_to_dict(graph)) == graph


@st.composite
def fixed_constants(draw):
    width = draw(st.integers(1, 64))
    signed = draw(st.booleans()) if width < 64 else True
    int_bits = draw(st.integers(-8, width + 8))
    dtype = FixedType(width, int_bits, signed)
    limit = (1 << 53) - 1
    lo, hi = max(dtype.raw_min, -limit), min(dtype.raw_max, limit)
    raw = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=6))
    return Constant("c", TensorType((len(raw),), dtype), np.array(raw, dtype=np.int64))


@settings(max_examples=150)
@given(fixed_constants())
def test_fixed_constants_of_any_type_round_trip_exactly(const):
    graph = graph_from_dict(BASE)
    graph = Graph(graph.name, graph.inputs, (*graph.constants, const), graph.nodes, graph.outputs)
    back = graph_from_dict(json.loads(json.dumps(graph_to_dict(graph))))
    assert back == graph


@settings(max_examples=100)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=6))
def test_float32_constants_round_trip_exactly(values):
    data = copy.deepcopy(BASE)
    data["constants"].append({"name": "f", "shape": [len(values)], "dtype": "float32", "data": values})
    graph = graph_from_dict(data)
    assert graph_from_dict(json.loads(json.dumps(graph_to_dict(graph)))) == graph


def test_values_too_wide_for_json_numbers_are_refused_on_save():
    graph = graph_from_dict(BASE)
    wide = Constant("c", TensorType((1,), parse_dtype("fixed<60,10>")), np.array([(1 << 53) + 1]))
    graph = Graph(graph.name, graph.inputs, (*graph.constants, wide), graph.nodes, graph.outputs)
    with pytest.raises(HlsfuseError) as info:
        graph_to_dict(graph)
    assert str(info.value) == (
        "constant 'c': fixed<60,10> values of more than 53 significant bits cannot be written exactly as "
        "JSON numbers; use a narrower type, or keep the values in a side file (weights_file=True, hlsfuse "
        "--weights-file)"
    )


# ------------------------------------------------------------------ errors


def _set(path, value):
    def mutate(d):
        *parents, last = path
        for key in parents:
            d = d[key]
        d[last] = value

    return mutate


def _drop(path):
    def mutate(d):
        *parents, last = path
        for key in parents:
            d = d[key]
        del d[last]

    return mutate


FIELD_ERRORS = [
    (_set(("nodes", 0, "inputs"), "x"), 'nodes[0].inputs must be a list of names, not "x"'),
    (_set(("nodes", 0, "inputs"), ["x", 3]), 'nodes[0].inputs must be a list of names, not ["x", 3]'),
    (_drop(("nodes",)), "the graph is missing the field 'nodes'"),
    (
        _set(("output",), ["y"]),
        "the graph has an unknown field 'output' (expected: name, inputs, constants, nodes, outputs, scales)",
    ),
    (_set(("name",), ""), 'name must be a non-empty string, not ""'),
    (_set(("inputs",), {"x": 1}), 'inputs must be a list, not {"x": 1}'),
    (_set(("inputs", 0), "x"), 'inputs[0] must be an object, not "x"'),
    (_set(("inputs", 0, "shape"), [1, 0]), "inputs[0].shape must be a list of positive integers, not [1, 0]"),
    (_set(("inputs", 0, "shape"), [1, True]), "inputs[0].shape must be a list of positive integers, not [1, true]"),
    (
        _set(("inputs", 0, "dtype"), "fixed<8>"),
        "inputs[0].dtype: dtype 'fixed<8>': expected float32, int8/16/32, uint8/16/32, fixed<W,I[,Q[,O]]> "
        "or ufixed<W,I[,Q[,O]]>",
    ),
    (_drop(("inputs", 0, "dtype")), "inputs[0] is missing the field 'dtype'"),
    (_drop(("constants", 0, "data")), "constants[0] needs exactly one of the fields 'data' and 'init'"),
    (
        _set(("constants", 0, "init"), {"kind": "zeros"}),
        "constants[0] needs exactly one of the fields 'data' and 'init'",
    ),
    (_set(("constants", 0, "data"), [1, 2, 3]), "constants[0].data has 3 values, expected 4 for shape [4]"),
    (_set(("constants", 0, "data"), [1, 2, "3", 4]), "constants[0].data must be a flat list of numbers"),
    (_set(("constants", 0, "data"), [[1, 2], [3, 4]]), "constants[0].data must be a flat list of numbers"),
    (
        _set(("constants", 0, "dtype"), "fixed<70,3>"),
        "constants[0].dtype: dtype fixed<70,3>: width must be 1..64, not 70",
    ),
    (_set(("constants", 0, "data"), None), "constants[0].data must be a flat list of numbers"),
    (_set(("constants", 0, "data"), [1, 2, 3, 1e999]), "constants[0].data must hold finite numbers"),
    (_set(("nodes", 0, "op"), 7), "nodes[0].op must be an op name, not 7"),
    (_set(("nodes", 0, "attrs"), [1]), "nodes[0].attrs must be an object, not [1]"),
    (
        _set(("nodes", 0, "atrs"), {}),
        "nodes[0] has an unknown field 'atrs' "
        "(expected: name, op, inputs, attrs, dtype, pattern, edge_patterns, shape)",
    ),
    (
        _set(("nodes", 0, "pattern"), "FUSABLE"),
        "nodes[0].pattern must be a pattern kind (ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, "
        'OUT_ELEMWISE_FUSABLE, TUPLE, OPAQUE), not "FUSABLE"',
    ),
    (
        _set(("nodes", 0, "edge_patterns"), "INJECTIVE"),
        'nodes[0].edge_patterns must be a list of pattern kinds, not "INJECTIVE"',
    ),
    (_set(("nodes", 0, "shape"), 4), "nodes[0].shape must be a list of positive integers, not 4"),
    (_set(("outputs",), "y"), 'outputs must be a list of names, not "y"'),
    # checks of verify, prefixed by the file as well
    (_set(("nodes", 0, "op"), "bias_addd"), "node 'y': unknown op 'bias_addd' (did you mean 'bias_add'?)"),
    (_set(("nodes", 0, "inputs"), ["x", "y"]), "node 'y' (bias_add): its inputs form a cycle: 'y' reads 'y'"),
    (
        _set(("nodes", 0, "attrs"), {"axis": 1}),
        "node 'y' (bias_add): unknown attribute 'axis' (expected: none)",
    ),
]

INIT_ERRORS = [
    ({"kind": "gaussian"}, 'constants[0].init.kind must be one of uniform, normal, zeros, file, not "gaussian"'),
    ({"kind": ["normal"]}, 'constants[0].init.kind must be one of uniform, normal, zeros, file, not ["normal"]'),
    ({"kind": "normal", "mean": 1e999}, "constants[0].init.mean must be a number, not Infinity"),
    ({"seed": 1}, "constants[0].init must be an object with a 'kind' (uniform, normal, zeros, file)"),
    ({"kind": "normal", "seed": -1}, "constants[0].init.seed must be a non-negative integer, not -1"),
    ({"kind": "normal", "seed": 1.5}, "constants[0].init.seed must be a non-negative integer, not 1.5"),
    ({"kind": "normal", "std": "wide"}, 'constants[0].init.std must be a number, not "wide"'),
    ({"kind": "normal", "std": -1}, "constants[0].init.std must not be negative"),
    ({"kind": "uniform", "low": 2, "high": 1}, "constants[0].init.low must not exceed constants[0].init.high"),
    (
        {"kind": "uniform", "mean": 0},
        "constants[0].init has an unknown field 'mean' (expected: kind, low, high, seed)",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), FIELD_ERRORS)
def test_field_errors_name_the_file_and_field(tmp_path, mutate, message):
    data = copy.deepcopy(BASE)
    mutate(data)
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(data).replace("Infinity", "1e999"))  # a number that parses as infinity
    with pytest.raises(HlsfuseError) as info:
        load_graph(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(("init", "message"), INIT_ERRORS)
def test_init_errors(init, message):
    data = copy.deepcopy(BASE)
    del data["constants"][0]["data"]
    data["constants"][0]["init"] = init
    with pytest.raises(HlsfuseError) as info:
        graph_from_dict(data, source="g.json")
    assert str(info.value) == f"g.json: {message}"


def test_top_level_must_be_an_object():
    with pytest.raises(HlsfuseError) as info:
        graph_from_dict([1, 2])
    assert str(info.value) == "graph: the graph must be an object, not [1, 2]"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b'{\n  "name": "g",\n  "inputs": [\n    {"name": "x", "sh',
            "not valid JSON: Unterminated string starting at (line 4, column 19)",
        ),
        (b"", "not valid JSON: Expecting value (line 1, column 1)"),
        (b'{"name": "g", "name": "h"}', "not valid JSON: key 'name' appears twice in one object"),
        (json.dumps(BASE).replace("0.5", "NaN").encode(), "not valid JSON: NaN is not a JSON number"),
        (b"\xff\xfe{}", "not a UTF-8 text file"),
    ],
)
def test_unreadable_files(tmp_path, content, message):
    path = tmp_path / "graph.json"
    path.write_bytes(content)
    with pytest.raises(HlsfuseError) as info:
        load_graph(path)
    assert str(info.value) == f"{path}: {message}"


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(HlsfuseError) as info:
        load_graph(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: cannot read the file: No such file or directory"
    with pytest.raises(HlsfuseError) as info:
        load_graph(tmp_path)
    assert str(info.value) == f"{tmp_path}: cannot read the file: Is a directory"


def test_save_leaves_no_partial_file_when_it_fails(tmp_path):
    graph = graph_from_dict(BASE)
    wide = Constant("c", TensorType((1,), parse_dtype("fixed<60,10>")), np.array([1 << 55]))
    bad = Graph(graph.name, graph.inputs, (*graph.constants, wide), graph.nodes, graph.outputs)
    target = save_graph(graph, tmp_path / "g.json")
    before = target.read_bytes()
    with pytest.raises(HlsfuseError):
        save_graph(bad, target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    with pytest.raises(HlsfuseError) as info:
        save_graph(graph, tmp_path / "missing" / "g.json")
    assert str(info.value) == f"{tmp_path / 'missing' / 'g.json'}: folder '{tmp_path / 'missing'}' does not exist"


def test_patterns_are_parsed_case_insensitively():
    data = copy.deepcopy(BASE)
    data["nodes"][0]["pattern"] = "injective"
    assert graph_from_dict(data).patterns["y"] == Pattern.INJECTIVE
