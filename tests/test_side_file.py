"""Side files: a graph's constants in an .npz archive beside its JSON file (docs/graph-format.md).

Exact round trips of every type, the size threshold, a moved pair of files, and one-line errors
naming the JSON file, the constant and the side file."""

import copy
import io
import json
import shutil
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_json import BASE, mixed_graph

import hlsfuse.fileio
from hlsfuse import FLOAT32, Constant, FixedType, Graph, GraphBuilder, HlsfuseError, TensorType, load_graph, save_graph
from hlsfuse.graph_json import graph_from_dict, graph_to_dict
from hlsfuse.side_file import THRESHOLD, side_file_bytes, storage_dtype, wants_side_file


def with_constants(*constants: Constant) -> Graph:
    """BASE with ``constants`` added (unused by its nodes)."""
    graph = graph_from_dict(BASE)
    return Graph(graph.name, graph.inputs, (*graph.constants, *constants), graph.nodes, graph.outputs)


def npz(path, **arrays):
    """An .npz archive of ``arrays`` at ``path``, as a user would make it."""
    np.savez(path, **arrays)
    return path


def referencing(tmp_path, file="g.npz", array="b", shape=(4,), dtype="fixed<8,4>"):
    """g.json of BASE whose constant 'b' is array ``array`` of side file ``file``."""
    data = copy.deepcopy(BASE)
    data["constants"] = [{"name": "b", "shape": list(shape), "dtype": dtype,
                          "init": {"kind": "file", "file": file, "array": array}}]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return path


# ------------------------------------------------------------------ round trips


def test_side_file_round_trip_is_exact_and_stable(tmp_path):
    graph = mixed_graph()
    path = save_graph(graph, tmp_path / "g.json", weights_file=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "g.npz"]
    entries = {c["name"]: c for c in json.loads(path.read_text())["constants"]}
    assert entries["w"]["init"] == {"kind": "file", "file": "g.npz", "array": "w"}
    assert "data" not in entries["w"]
    assert load_graph(path) == graph
    # saving the loaded graph again gives the same bytes, both files
    again = save_graph(load_graph(path), tmp_path / "again.json", weights_file=True)
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "g.npz").read_bytes()
    assert again.read_text() == path.read_text().replace('"g.npz"', '"again.npz"')


def test_arrays_hold_raw_values_in_the_smallest_type(tmp_path):
    graph = mixed_graph()
    save_graph(graph, tmp_path / "g.json", weights_file=True)
    with np.load(tmp_path / "g.npz") as arrays:
        assert {name: str(arrays[name].dtype) for name in arrays.files} == {
            "w": "int8", "bias": "int8", "s": "uint8", "big": "int8", "fc": "float32"}
        for const in graph.constants:
            assert np.array_equal(arrays[const.name], const.data)
    assert [str(storage_dtype(FixedType(w, 2, signed))) for w, signed in
            [(1, True), (9, True), (16, False), (17, True), (33, False), (64, True), (63, False)]] == [
        "int8", "int16", "uint16", "int32", "uint64", "int64", "uint64"]


def test_generated_constants_stay_generators_in_a_side_file_graph(tmp_path):
    data = copy.deepcopy(BASE)
    data["constants"].append({"name": "n", "shape": [2, 4], "dtype": "float32",
                              "init": {"kind": "normal", "std": 0.5, "seed": 1}})
    graph = graph_from_dict(data)
    path = save_graph(graph, tmp_path / "g.json", weights_file=True)
    entries = json.loads(path.read_text())["constants"]
    assert entries[1]["init"] == {"kind": "normal", "mean": 0.0, "std": 0.5, "seed": 1}
    with np.load(tmp_path / "g.npz") as arrays:
        assert arrays.files == ["b"]
    assert load_graph(path) == graph


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_fixed_type_round_trips_exactly(tmp_path_factory, data):
    signed = data.draw(st.booleans())
    width = data.draw(st.integers(1, 64 if signed else 63))
    dtype = FixedType(width, data.draw(st.integers(-20, 80)), signed)
    raw = data.draw(st.lists(st.integers(dtype.raw_min, dtype.raw_max), min_size=1, max_size=6))
    raw += [dtype.raw_min, dtype.raw_max]
    const = Constant("c", TensorType((len(raw),), dtype), np.array(raw, dtype=np.int64))
    graph = with_constants(const)
    folder = tmp_path_factory.mktemp("fixed")
    loaded = load_graph(save_graph(graph, folder / "g.json", weights_file=True))
    assert loaded == graph


def test_a_moved_pair_of_files_still_loads(tmp_path, monkeypatch):
    graph = mixed_graph()
    (tmp_path / "a").mkdir()
    save_graph(graph, tmp_path / "a" / "g.json", weights_file=True)
    moved = tmp_path / "elsewhere" / "deeper"
    moved.mkdir(parents=True)
    for name in ("g.json", "g.npz"):
        shutil.move(tmp_path / "a" / name, moved / name)
    (tmp_path / "a").rmdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the old folder nor the files' own
    assert load_graph("deeper/g.json") == graph
    assert load_graph(moved / "g.json") == graph


def test_a_side_file_in_a_subfolder_and_values_a_user_wrote(tmp_path):
    (tmp_path / "weights").mkdir()
    raw = np.array([8, -16, 36, 0], dtype=np.int8)  # fixed<8,4>: 4 fractional bits
    npz(tmp_path / "weights" / "mine.npz", bias=raw)
    graph = load_graph(referencing(tmp_path, file="weights/mine.npz", array="bias"))
    assert graph.constants[0].values.tolist() == [0.5, -1.0, 2.25, 0.0]
    assert graph.constants[0].init is None
    assert graph == graph_from_dict(BASE)


def test_graph_from_dict_reads_side_files_from_the_folder_given(tmp_path, monkeypatch):
    npz(tmp_path / "g.npz", b=np.array([8, -16, 36, 0], dtype=np.int8))
    data = json.loads(referencing(tmp_path).read_text())
    assert graph_from_dict(data, folder=tmp_path) == graph_from_dict(BASE)
    monkeypatch.chdir(tmp_path)
    assert graph_from_dict(data) == graph_from_dict(BASE)  # by default, the current folder


# ------------------------------------------------------------------ inline or side file


def test_small_graphs_stay_inline_and_unchanged(tmp_path):
    graph = mixed_graph()
    path = save_graph(graph, tmp_path / "g.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    text = path.read_text()
    assert '"kind": "file"' not in text and '"data": [' in text
    assert save_graph(graph, tmp_path / "h.json", weights_file=False).read_text() == text
    assert not (tmp_path / "h.npz").exists()


def _wide(values: int, name: str = "w") -> Constant:
    return Constant(name, TensorType((values,), FixedType(8, 1)), np.zeros(values, dtype=np.int64))


def test_the_threshold_counts_the_values_written_as_values():
    assert THRESHOLD == 262_144  # docs/graph-format.md says so
    assert not wants_side_file(with_constants(_wide(THRESHOLD - 4)))  # BASE's 'b' has 4 values
    assert wants_side_file(with_constants(_wide(THRESHOLD - 3)))
    assert wants_side_file(with_constants(_wide(THRESHOLD // 2), _wide(THRESHOLD // 2, "v")))
    generated = Constant("w", TensorType((4 * THRESHOLD,), FixedType(8, 1)), np.zeros(4 * THRESHOLD),
                         init={"kind": "zeros"})
    assert not wants_side_file(with_constants(generated))  # a generator is written as itself
    assert wants_side_file(graph_from_dict(BASE), weights_file=True)
    assert not wants_side_file(with_constants(_wide(THRESHOLD)), weights_file=False)


def test_save_graph_chooses_the_side_file_above_the_threshold(tmp_path):
    under = with_constants(_wide(THRESHOLD - 4))
    save_graph(under, tmp_path / "under.json")
    assert not (tmp_path / "under.npz").exists()
    over = with_constants(_wide(THRESHOLD - 3))
    path = save_graph(over, tmp_path / "over.json")
    assert (tmp_path / "over.npz").is_file()
    assert path.stat().st_size < 2000  # the values are not in the JSON file
    assert load_graph(path) == over


@pytest.mark.parametrize("dtype", ["fixed<8,1>", "fixed<16,6>", "fixed<24,8>", "float32"])
def test_a_3m_value_graph_saves_within_1_2x_its_float32_bytes_plus_1mb(tmp_path, dtype):
    rng = np.random.default_rng(0)
    b = GraphBuilder("big", dtype=dtype)
    x = b.input("x", [1, 2000])
    w = b.constant("w", rng.normal(0, 0.3, (1500, 2000)), dtype=dtype)
    bias = b.constant("bias", rng.normal(0, 0.3, 1500), dtype=dtype)
    b.output(b.bias_add(b.dense(x, w, name="fc"), bias, name="y"))
    graph = b.build()
    values = 2000 * 1500 + 1500
    path = save_graph(graph, tmp_path / "big.json")
    saved = path.stat().st_size + (tmp_path / "big.npz").stat().st_size
    assert saved <= 1.2 * 4 * values + 1_000_000
    assert load_graph(path) == graph


# ------------------------------------------------------------------ errors on load


def _write(tmp_path, **arrays):
    return npz(tmp_path / "g.npz", **arrays)


GOOD = np.array([8, -16, 36, 0], dtype=np.int8)

LOAD_ERRORS = [
    ("missing file", lambda p: None, {}, "constant 'b': side file {dir}/g.npz not found"),
    ("missing array", lambda p: _write(p, w1=GOOD, c=GOOD), {},
     "constant 'b': {dir}/g.npz has no array 'b' (it has: c, w1)"),
    ("wrong shape", lambda p: _write(p, b=GOOD.reshape(2, 2)), {},
     "constant 'b': array 'b' of {dir}/g.npz has shape [2, 2], expected [4]"),
    ("wrong dtype", lambda p: _write(p, b=GOOD.astype(np.float32)), {},
     "constant 'b': array 'b' of {dir}/g.npz has dtype float32, expected int8 (the raw integers of fixed<8,4>)"),
    ("unsigned for signed", lambda p: _write(p, b=GOOD.astype(np.uint8)), {},
     "constant 'b': array 'b' of {dir}/g.npz has dtype uint8, expected int8 (the raw integers of fixed<8,4>)"),
    ("float64 for float32", lambda p: _write(p, b=np.zeros(4)), {"dtype": "float32"},
     "constant 'b': array 'b' of {dir}/g.npz has dtype float64, expected float32"),
    ("non-finite", lambda p: _write(p, b=np.array([0, 1, np.nan, 2], dtype=np.float32)), {"dtype": "float32"},
     "constant 'b': array 'b' of {dir}/g.npz holds nan at index 2; expected finite numbers"),
    ("infinite", lambda p: _write(p, b=np.array([0, -np.inf, 1, 2], dtype=np.float32)), {"dtype": "float32"},
     "constant 'b': array 'b' of {dir}/g.npz holds -inf at index 1; expected finite numbers"),
    ("raw out of range", lambda p: _write(p, b=np.array([0, 31, 32, 0], dtype=np.int8)), {"dtype": "fixed<6,2>"},
     "constant 'b': array 'b' of {dir}/g.npz holds 32 at index 2, outside [-32, 31], the raw range of fixed<6,2>"),
    ("not an archive", lambda p: (p / "g.npz").write_text("weights"), {},
     "constant 'b': side file {dir}/g.npz is not an .npz archive (File is not a zip file)"),
    ("a folder", lambda p: (p / "g.npz").mkdir(), {},
     "constant 'b': cannot read the side file {dir}/g.npz: Is a directory"),
    ("object array", lambda p: _write(p, b=np.array([1, "a", None, 2], dtype=object)), {},
     "constant 'b': array 'b' of {dir}/g.npz has dtype object, expected int8 (the raw integers of fixed<8,4>)"),
]


@pytest.mark.parametrize(("make", "fields", "message"), [e[1:] for e in LOAD_ERRORS], ids=[e[0] for e in LOAD_ERRORS])
def test_side_file_errors_name_the_json_file_the_constant_and_the_side_file(tmp_path, make, fields, message):
    make(tmp_path)
    path = referencing(tmp_path, **fields)
    with pytest.raises(HlsfuseError) as info:
        load_graph(path)
    assert str(info.value) == f"{path}: " + message.format(dir=tmp_path)


def test_a_truncated_array_is_one_line(tmp_path):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.arange(1000, dtype=np.int8).reshape(10, 100) % 100, allow_pickle=False)
    with zipfile.ZipFile(tmp_path / "g.npz", "w") as archive:
        archive.writestr("b.npy", buffer.getvalue()[:-10])
    path = referencing(tmp_path, shape=(10, 100))
    with pytest.raises(HlsfuseError) as info:
        load_graph(path)
    assert str(info.value) == (f"{path}: constant 'b': array 'b' of {tmp_path}/g.npz: truncated or corrupt (EOF: "
                               "reading array data, expected 1000 bytes got 990)")


@pytest.mark.parametrize("file", ["../g.npz", "/tmp/g.npz", "w/../../g.npz", "", "w\\..\\g.npz", "w/"])
def test_a_reference_outside_the_graphs_folder_is_refused(tmp_path, file):
    path = referencing(tmp_path, file=file)
    with pytest.raises(HlsfuseError) as info:
        load_graph(path)
    assert str(info.value) == (f"{path}: constants[0].init.file of constant 'b' must be a relative path inside the "
                               f"graph's folder (no '..', not absolute), not {json.dumps(file)}")


@pytest.mark.parametrize(("init", "message"), [
    ({"kind": "file", "file": "g.npz"}, "constants[0].init is missing the field 'array'"),
    ({"kind": "file", "file": "g.npz", "array": ""}, 'constants[0].init.array must be a non-empty string, not ""'),
    ({"kind": "file", "file": 3, "array": "b"}, "constants[0].init.file of constant 'b' must be a relative path "
     "inside the graph's folder (no '..', not absolute), not 3"),
    ({"kind": "file", "file": "g.npz", "array": "b", "seed": 1},
     "constants[0].init has an unknown field 'seed' (expected: kind, file, array)"),
])
def test_file_reference_fields(init, message):
    data = copy.deepcopy(BASE)
    del data["constants"][0]["data"]
    data["constants"][0]["init"] = init
    with pytest.raises(HlsfuseError) as info:
        graph_from_dict(data, source="g.json")
    assert str(info.value) == f"g.json: {message}"


def test_the_docs_error_lines_are_the_real_ones(tmp_path, monkeypatch):
    """docs/graph-format.md shows these lines for a JSON file g.json and its side file g.npz."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "graph-format.md").read_text()
    monkeypatch.chdir(tmp_path)
    w = {"name": "w", "shape": [3, 3, 2, 4], "dtype": "fixed<8,1,RND,SAT>",
         "init": {"kind": "file", "file": "g.npz", "array": "w"}}
    data = {**copy.deepcopy(BASE), "constants": [w]}
    cases = [
        ({}, None),
        ({}, {"b": GOOD, "w1": GOOD}),
        ({}, {"w": np.zeros((3, 3, 4, 2), dtype=np.int8)}),
        ({}, {"w": np.zeros((3, 3, 2, 4), dtype=np.float32)}),
        ({"file": "../g.npz"}, None),
    ]
    for change, arrays in cases:
        if arrays is not None:
            npz("g.npz", **arrays)
        w["init"] = {"kind": "file", "file": "g.npz", "array": "w", **change}
        Path("g.json").write_text(json.dumps(data))
        with pytest.raises(HlsfuseError) as info:
            load_graph("g.json")
        assert f"hlsfuse: error: {info.value}\n" in docs


# ------------------------------------------------------------------ errors and safety on save


def test_values_a_side_file_would_refuse_are_refused_on_save(tmp_path):
    nan = Constant("f", TensorType((2,), FLOAT32), np.array([1.0, np.nan]))
    with pytest.raises(HlsfuseError) as info:
        side_file_bytes(with_constants(nan))
    assert str(info.value) == "constant 'f': a side file holds only finite numbers, and the data has NaN or inf"
    wide = Constant("c", TensorType((2,), FixedType(6, 2)), np.array([0, 40]))
    with pytest.raises(HlsfuseError) as info:
        save_graph(with_constants(wide), tmp_path / "g.json", weights_file=True)
    assert str(info.value) == "constant 'c': raw values outside [-32, 31], the range of fixed<6,2>"
    assert list(tmp_path.iterdir()) == []


def test_values_json_cannot_hold_go_to_a_side_file(tmp_path):
    wide = Constant("c", TensorType((3,), FixedType(64, 10)), np.array([(1 << 63) - 1, -(1 << 63), (1 << 53) + 1]))
    graph = with_constants(wide)
    with pytest.raises(HlsfuseError):
        graph_to_dict(graph)
    assert load_graph(save_graph(graph, tmp_path / "g.json", weights_file=True)) == graph


def test_a_failed_save_leaves_the_pair_as_it_was(tmp_path):
    graph = mixed_graph()
    save_graph(graph, tmp_path / "g.json", weights_file=True)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    nan = Constant("f", TensorType((2,), FLOAT32), np.array([1.0, np.nan]))
    with pytest.raises(HlsfuseError):
        save_graph(with_constants(nan), tmp_path / "g.json", weights_file=True)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_full_disk_leaves_both_files_as_they_were(tmp_path, monkeypatch):
    graph = mixed_graph()
    save_graph(graph, tmp_path / "g.json", weights_file=True)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real_open = open

    def full_at_the_json(file, mode):  # the side file is written, the JSON file is not
        f = real_open(file, mode)
        if str(file).endswith(".tmp") and ".g.json." in str(file):
            f.close()
            raise OSError(28, "No space left on device")
        return f

    monkeypatch.setattr(hlsfuse.fileio, "open", full_at_the_json, raising=False)
    changed = with_constants(Constant("k", TensorType((2,), FixedType(8, 2)), np.array([1, 2])))
    with pytest.raises(HlsfuseError) as info:
        save_graph(changed, tmp_path / "g.json", weights_file=True)
    assert str(info.value) == (f"{tmp_path / 'g.json'}: cannot write: No space left on device; "
                               f"{tmp_path / 'g.json'} is left as it was")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temporary file either


def test_without_overwrite_an_existing_side_file_is_refused(tmp_path):
    (tmp_path / "g.npz").write_bytes(b"mine")
    with pytest.raises(HlsfuseError) as info:
        save_graph(mixed_graph(), tmp_path / "g.json", overwrite=False, weights_file=True)
    assert str(info.value) == f"{tmp_path / 'g.npz'} already exists; pass --force to overwrite it"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]
    assert (tmp_path / "g.npz").read_bytes() == b"mine"


def test_without_overwrite_a_json_file_that_appears_takes_back_the_side_file(tmp_path, monkeypatch):
    real_link = hlsfuse.fileio.os.link

    def user_meanwhile(src, dst):
        if str(dst).endswith("g.json"):
            (tmp_path / "g.json").write_text("mine")
        return real_link(src, dst)

    monkeypatch.setattr(hlsfuse.fileio.os, "link", user_meanwhile)
    with pytest.raises(HlsfuseError) as info:
        save_graph(mixed_graph(), tmp_path / "g.json", overwrite=False, weights_file=True)
    assert str(info.value) == (f"{tmp_path / 'g.json'}: appeared while the output was made; it is left as it is and "
                               "nothing was written (pass --force to overwrite it)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]  # the side file linked first is gone
    assert (tmp_path / "g.json").read_text() == "mine"


def test_a_graph_named_like_its_side_file_is_refused(tmp_path):
    with pytest.raises(HlsfuseError) as info:
        save_graph(mixed_graph(), tmp_path / "g.npz", weights_file=True)
    assert str(info.value) == (f"{tmp_path / 'g.npz'}: a graph saved with a side file must not end in .npz (the "
                               "side file's name)")


def test_graph_to_dict_refuses_a_side_file_loading_would_refuse():
    with pytest.raises(HlsfuseError) as info:
        graph_to_dict(mixed_graph(), side_file="../g.npz")
    assert str(info.value) == ("side file '../g.npz': must be a relative path inside the graph's folder (no '..', not "
                               "absolute), as loading requires")
