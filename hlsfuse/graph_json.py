"""The JSON graph format (docs/graph-format.md): load, save and the dict form in between.

    {"name": ..., "inputs": [...], "constants": [...], "nodes": [...], "outputs": [...]}

Loading checks the document field by field, so that a bad file gets one line naming the file
and the field (``g.json: nodes[3].inputs must be a list of names``); building the ``Graph``
then verifies the rest (cycles, ops, attributes, shapes, types), again prefixed by the file.

Saving writes what loading reads back as an equal ``Graph``. A constant is written either as
the ``init`` spec it was generated from or as its real values: float64 numbers that hold every
fixed-point value of up to 53 significant bits exactly, so quantizing them on load gives the
same raw integers. A large graph keeps those values in a side file instead (``hlsfuse.side_file``):
an .npz archive of raw values next to the JSON, which each such constant names in its ``init``

    g.json   {"name": "w", ..., "init": {"kind": "file", "file": "g.npz", "array": "w"}}
    g.npz    w.npy: the raw values of w (int8 for fixed<8,1>)

The reference is read, not kept: a loaded constant holds its values, as if they had been inline.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import collector
from .errors import HlsfuseError
from .fileio import write_together
from .ir import Constant, Graph, Input, Node, Scaling, TensorType, check_size
from .ops import Pattern
from .side_file import SideFiles, array_names, is_inside, side_file_bytes, side_path, valued, wants_side_file
from .types import DType, from_float, parse_dtype, to_float

__all__ = ["load_graph", "save_graph", "graph_from_dict", "graph_to_dict", "graph_text", "init_values"]

_GRAPH_FIELDS = ("name", "inputs", "constants", "nodes", "outputs", "scales")
_INPUT_FIELDS = ("name", "shape", "dtype", "source_axes")
_INPUT_REQUIRED = ("name", "shape", "dtype")
_CONSTANT_FIELDS = ("name", "shape", "dtype", "data", "init")
_NODE_FIELDS = ("name", "op", "inputs", "attrs", "dtype", "pattern", "edge_patterns", "shape")
_NODE_REQUIRED = ("name", "op", "inputs")
_STR = frozenset((str,))
_NO_ATTRS: dict[str, Any] = {}
# Generators of constants and the defaults of their parameters.
_INIT_PARAMS = {"uniform": {"low": -1.0, "high": 1.0}, "normal": {"mean": 0.0, "std": 1.0}, "zeros": {}}
_INIT_KINDS = (*_INIT_PARAMS, "file")  # "file": the values are an array of a side file
_FLOAT_MAX = int(np.finfo(np.float64).max)
_FLOAT_DIGITS = len(str(_FLOAT_MAX))  # 309
_TOO_LARGE = 10**_FLOAT_DIGITS
_EXACT_LIMIT = 1 << 53  # raw values below this in magnitude are exact as float64


# --------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------


def load_graph(path: str | os.PathLike) -> Graph:
    """Read and verify a JSON graph, and the side files it names (relative to its folder); any problem
    is a one-line ``HlsfuseError`` naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HlsfuseError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise HlsfuseError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    try:
        with collector.paused():  # a parsed document holds no reference cycles
            data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise HlsfuseError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except HlsfuseError as exc:
        raise HlsfuseError(f"{path}: not valid JSON: {exc}") from None
    except RecursionError:
        raise HlsfuseError(f"{path}: JSON nested too deeply (a graph is an object of flat lists)") from None
    return graph_from_dict(data, source=str(path), folder=Path(path).parent)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json keeps the last of repeated keys silently; a repeated field is almost always a mistake
    out = dict(pairs)
    if len(out) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise HlsfuseError(f"key '{key}' appears twice in one object")
            seen.add(key)
    return out


def _integer(text: str) -> int:
    # Python refuses to read integers of more than 4300 digits; any beyond 309 is too large for a
    # float64 all the same, and is kept as one that is, so the field's check can name it
    if len(text) > _FLOAT_DIGITS and len(text.lstrip("-")) > _FLOAT_DIGITS:
        return -_TOO_LARGE if text.startswith("-") else _TOO_LARGE
    return int(text)


def _no_constant(name: str) -> Any:
    raise HlsfuseError(f"{name} is not a JSON number")


def graph_from_dict(data: Any, source: str = "graph", folder: str | os.PathLike = ".") -> Graph:
    """Build and verify a Graph from the parsed JSON form; errors start with ``source``. Side files
    are read from ``folder`` (the JSON file's)."""
    try:
        with SideFiles(Path(folder)) as side_files, collector.paused():  # nodes hold no reference cycles
            return _graph(data, side_files)
    except HlsfuseError as exc:
        raise HlsfuseError(f"{source}: {exc}") from None


def _graph(data: Any, side_files: SideFiles) -> Graph:
    _fields(data, "the graph", _GRAPH_FIELDS, required=("name", "inputs", "nodes", "outputs"))
    inputs = [_input(entry, f"inputs[{i}]") for i, entry in enumerate(_list(data["inputs"], "inputs"))]
    constants = [
        _constant(entry, f"constants[{i}]", side_files)
        for i, entry in enumerate(_list(data.get("constants", []), "constants"))
    ]
    nodes = [_plain_node(entry) or _node(entry, f"nodes[{i}]") for i, entry in enumerate(_list(data["nodes"], "nodes"))]
    outputs = _names(data["outputs"], "outputs")
    scales = _scales(data.get("scales", {}))
    return Graph(_name(data["name"], "name"), tuple(inputs), tuple(constants), tuple(nodes), outputs, scales)


_SCALING_FIELDS = ("scale", "offset", "lo", "hi", "axis")


def _scales(value: Any) -> dict[str, Scaling]:
    """``"scales": {name: {"scale": [..], "offset": [..], "lo": [..], "hi": [..], "axis": -1}}`` (lo/hi null
    where unbounded; axis only with per-channel lists)."""
    if not isinstance(value, dict):
        raise HlsfuseError(f"scales: expected an object of graph inputs and outputs, not {_show(value)}")
    found = {}
    for name, entry in value.items():
        where = f"scales.{name}"
        _fields(entry, where, _SCALING_FIELDS, required=("scale",))
        lists = {}
        for key in ("scale", "offset", "lo", "hi"):
            items = entry.get(key, [0.0 if key == "offset" else None] * len(_list(entry["scale"], f"{where}.scale")))
            items = _list(items, f"{where}.{key}")
            if not all(v is None or _is_number(v) for v in items):
                raise HlsfuseError(f"{where}.{key}: expected a list of numbers (null: unbounded), not {_show(items)}")
            lists[key] = tuple(float("nan") if v is None else float(v) for v in items)
        axis = entry.get("axis")
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool)):
            raise HlsfuseError(f"{where}.axis: expected a negative integer, not {_show(axis)}")
        found[name] = Scaling(lists["scale"], lists["offset"], lists["lo"], lists["hi"], axis)
    return found


def _input(entry: Any, where: str) -> Input:
    _fields(entry, where, _INPUT_FIELDS, required=_INPUT_REQUIRED)
    shape = _shape(entry["shape"], f"{where}.shape")
    ttype = TensorType(shape, _dtype(entry["dtype"], f"{where}.dtype"))
    axes = entry.get("source_axes")
    if axes is not None and (not isinstance(axes, list) or not all(
            a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in axes)):
        raise HlsfuseError(f"{where}.source_axes must be a list of axis numbers or nulls, not {_show(axes)}")
    return Input(_name(entry["name"], f"{where}.name"), ttype, None if axes is None else tuple(axes))


def _constant(entry: Any, where: str, side_files: SideFiles) -> Constant:
    _fields(entry, where, _CONSTANT_FIELDS, required=("name", "shape", "dtype"))
    name = _name(entry["name"], f"{where}.name")
    ttype = TensorType(_shape(entry["shape"], f"{where}.shape"), _dtype(entry["dtype"], f"{where}.dtype"))
    check_size(ttype.shape, f"constant '{name}'")  # before its values are made
    if ("data" in entry) == ("init" in entry):
        raise HlsfuseError(f"{where} needs exactly one of the fields 'data' and 'init'")
    if "init" in entry and _is_file_ref(entry["init"]):
        file, array = _file_ref(entry["init"], f"{where}.init", name)
        return Constant(name, ttype, side_files.read(file, array, name, ttype))
    if "init" in entry:
        init = _init(entry["init"], f"{where}.init")
        values = init_values(init, ttype.shape)
    else:
        init = None
        values = _data(entry["data"], f"{where}.data", ttype.shape, name)
    if ttype.dtype.is_float:
        raw = values.astype(np.float32)
    else:
        raw = from_float(values, ttype.dtype)
    return Constant(name, ttype, raw, init)


def _data(value: Any, where: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        raise HlsfuseError(f"{where} must be a flat list of numbers")
    if len(value) != math.prod(shape):
        raise HlsfuseError(f"{where} has {len(value)} values, expected {math.prod(shape)} for shape {list(shape)}")
    try:
        values = np.array(value, dtype=np.float64).reshape(shape)
    except OverflowError:  # JSON integers have no limit; float64 stops near 1.8e308
        index = next(i for i, v in enumerate(value) if isinstance(v, int) and abs(v) > _FLOAT_MAX)
        raise HlsfuseError(f"{where}[{index}] of constant '{name}' is an integer too large for a number (expected "
                           "finite numbers, at most about 1.8e308 in magnitude)") from None
    if not np.all(np.isfinite(values)):  # 1e999 parses as infinity
        raise HlsfuseError(f"{where} must hold finite numbers")
    return values


def _is_file_ref(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") == "file"


def _file_ref(value: dict, where: str, name: str) -> tuple[str, str]:
    """The side file (relative to the JSON file's folder) and the array of a ``file`` init."""
    _fields(value, where, ("kind", "file", "array"), required=("kind", "file", "array"))
    file = value["file"]
    if not isinstance(file, str) or not is_inside(file):
        raise HlsfuseError(f"{where}.file of constant '{name}' must be a relative path inside the graph's folder "
                           f"(no '..', not absolute), not {_show(file)}")
    return file, _name(value["array"], f"{where}.array")


def _init(value: Any, where: str) -> dict[str, Any]:
    """The canonical form of an ``init`` spec: kind, every parameter (defaults filled in), seed."""
    if not isinstance(value, dict) or "kind" not in value:
        raise HlsfuseError(f"{where} must be an object with a 'kind' ({', '.join(_INIT_KINDS)})")
    kind = value["kind"]
    if not isinstance(kind, str) or kind not in _INIT_PARAMS:
        raise HlsfuseError(f"{where}.kind must be one of {', '.join(_INIT_KINDS)}, not {_show(kind)}")
    params = _INIT_PARAMS[kind]
    _fields(value, where, ("kind", *params, "seed"), required=("kind",))
    spec: dict[str, Any] = {"kind": kind}
    for param, default in params.items():
        number = value.get(param, default)
        if not _is_number(number) or not math.isfinite(number):
            raise HlsfuseError(f"{where}.{param} must be a number, not {_show(number)}")
        spec[param] = float(number)
    seed = value.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise HlsfuseError(f"{where}.seed must be a non-negative integer, not {_show(seed)}")
    if kind == "uniform" and not spec["low"] <= spec["high"]:
        raise HlsfuseError(f"{where}.low must not exceed {where}.high")
    if kind == "normal" and spec["std"] < 0:
        raise HlsfuseError(f"{where}.std must not be negative")
    if kind != "zeros":
        spec["seed"] = seed
    return spec


def init_values(init: Mapping[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """The real values (float64) an ``init`` spec stands for, the same on every machine:
    numpy's PCG64 generator seeded with ``seed``."""
    kind = init["kind"]
    if kind == "zeros":
        return np.zeros(shape)
    rng = np.random.default_rng(init["seed"])
    if kind == "uniform":
        return rng.uniform(init["low"], init["high"], size=shape)
    return rng.normal(init["mean"], init["std"], size=shape)


def _plain_node(entry: Any) -> Node | None:
    """The node of a well-formed entry without optional fields (most nodes), checked in a few
    operations, or ``None``: then ``_node`` reads the entry field by field, naming what is wrong."""
    if type(entry) is not dict:
        return None
    try:
        name, op, inputs = entry["name"], entry["op"], entry["inputs"]
    except KeyError:
        return None
    attrs = entry.get("attrs", _NO_ATTRS)
    if len(entry) != (3 if attrs is _NO_ATTRS else 4):  # a field besides name, op, inputs and attrs
        return None
    plain = type(name) is str and name and type(op) is str and type(attrs) is dict and type(inputs) is list
    return Node(name, op, inputs, attrs) if plain and _STR.issuperset(map(type, inputs)) and "" not in inputs else None


def _node(entry: Any, where: str) -> Node:
    _fields(entry, where, _NODE_FIELDS, required=_NODE_REQUIRED)
    name = _name(entry["name"], f"{where}.name")
    if not isinstance(entry["op"], str):
        raise HlsfuseError(f"{where}.op must be an op name, not {_show(entry['op'])}")
    attrs = entry.get("attrs", {})
    if not isinstance(attrs, dict):
        raise HlsfuseError(f"{where}.attrs must be an object, not {_show(attrs)}")
    inputs = _names(entry["inputs"], f"{where}.inputs")
    optional = {key: read(entry[key], f"{where}.{key}") for key, read in _NODE_READERS.items() if key in entry}
    return Node(name, entry["op"], inputs, attrs, **optional)


def _edge_patterns(value: Any, where: str) -> tuple[Pattern, ...]:
    if not isinstance(value, list):
        raise HlsfuseError(f"{where} must be a list of pattern kinds, not {_show(value)}")
    return tuple(_pattern(v, f"{where}[{i}]") for i, v in enumerate(value))


# ------------------------------------------------------------ field checks


def _fields(value: Any, where: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
    if not isinstance(value, dict):
        raise HlsfuseError(f"{where} must be an object, not {_show(value)}")
    for key in value:
        if key not in allowed:
            raise HlsfuseError(f"{where} has an unknown field '{key}' (expected: {', '.join(allowed)})")
    for key in required:
        if key not in value:
            raise HlsfuseError(f"{where} is missing the field '{key}'")


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise HlsfuseError(f"{where} must be a list, not {_show(value)}")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise HlsfuseError(f"{where} must be a non-empty string, not {_show(value)}")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise HlsfuseError(f"{where} must be a list of names, not {_show(value)}")
    return tuple(value)


def _shape(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value):
        raise HlsfuseError(f"{where} must be a list of positive integers, not {_show(value)}")
    return tuple(value)


def _dtype(value: Any, where: str) -> DType:
    try:
        return parse_dtype(value)
    except HlsfuseError as exc:
        raise HlsfuseError(f"{where}: {exc}") from None


def _pattern(value: Any, where: str) -> Pattern:
    names = ", ".join(p.name for p in Pattern)
    if not isinstance(value, str) or value.upper() not in Pattern.__members__:
        raise HlsfuseError(f"{where} must be a pattern kind ({names}), not {_show(value)}")
    return Pattern[value.upper()]


# the optional fields of a node, each parsed by its reader when present
_NODE_READERS = {"dtype": _dtype, "pattern": _pattern, "edge_patterns": _edge_patterns, "shape": _shape}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    """A short JSON rendering of a bad value for an error message."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------
# save
# --------------------------------------------------------------------------


def graph_to_dict(graph: Graph, side_file: str | None = None) -> dict[str, Any]:
    """The JSON form of a graph (plain dicts, lists, strings and numbers). With ``side_file`` (a path
    relative to the JSON file's folder) the constants written as values name their arrays in that file
    instead, which ``side_file_bytes(graph)`` makes."""
    if side_file is not None and not is_inside(side_file):
        raise HlsfuseError(f"side file {side_file!r}: must be a relative path inside the graph's folder (no '..', "
                           "not absolute), as loading requires")
    arrays = array_names(valued(graph)) if side_file is not None else {}
    return {
        "name": graph.name,
        "inputs": [_input_dict(i) for i in graph.inputs],
        "constants": [_constant_dict(c, side_file, arrays.get(c.name)) for c in graph.constants],
        "nodes": [_node_dict(n) for n in graph.nodes],
        "outputs": list(graph.outputs),
        **({"scales": {name: _scaling_dict(s) for name, s in graph.scales.items()}} if graph.scales else {}),
    }


def _scaling_dict(scaling: Scaling) -> dict[str, Any]:
    def listed(values):
        return [None if math.isnan(v) else v for v in values]

    entry = {"scale": listed(scaling.scale), "offset": listed(scaling.offset), "lo": listed(scaling.lo),
             "hi": listed(scaling.hi)}
    return entry if scaling.axis is None else {**entry, "axis": scaling.axis}


def _constant_dict(const: Constant, side_file: str | None, array: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": const.name, "shape": list(const.type.shape), "dtype": str(const.type.dtype)}
    if const.init is not None:
        entry["init"] = dict(const.init)
    elif side_file is not None:
        entry["init"] = {"kind": "file", "file": side_file, "array": array}
    else:
        entry["data"] = _real_values(const)
    return entry


def _real_values(const: Constant) -> list:
    dtype, raw = const.type.dtype, const.data.ravel()
    if dtype.is_float:
        if not np.all(np.isfinite(raw)):
            raise HlsfuseError(f"constant '{const.name}': JSON holds only finite numbers, and the data has NaN or inf")
        return raw.astype(np.float64).tolist()
    if raw.size and max(-int(raw.min()), int(raw.max())) >= _EXACT_LIMIT:
        raise HlsfuseError(
            f"constant '{const.name}': {dtype} values of more than 53 significant bits cannot be written exactly "
            "as JSON numbers; use a narrower type, or keep the values in a side file (weights_file=True, "
            "hlsfuse --weights-file)"
        )
    if dtype.frac <= 0:  # integer values: write them as integers
        return [v << -dtype.frac for v in raw.tolist()]
    return to_float(raw, dtype).tolist()


def _input_dict(port: Input) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": port.name, "shape": list(port.type.shape), "dtype": str(port.type.dtype)}
    if port.source_axes is not None:
        entry["source_axes"] = list(port.source_axes)
    return entry


def _node_dict(node: Node) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": node.name, "op": node.op, "inputs": list(node.inputs)}
    if node.attrs:
        entry["attrs"] = {key: _json_value(value, node, key) for key, value in node.attrs.items()}
    if node.dtype is not None:
        entry["dtype"] = str(node.dtype)
    if node.pattern is not None:
        entry["pattern"] = node.pattern.name
    if node.edge_patterns is not None:
        entry["edge_patterns"] = [p.name for p in node.edge_patterns]
    if node.shape is not None:
        entry["shape"] = list(node.shape)
    return entry


def _json_value(value: Any, node: Node, key: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v, node, key) for v in value]
    raise HlsfuseError(f"{node.where()}: attribute '{key}' holds {value!r}, which JSON cannot represent")


def save_graph(graph: Graph, path: str | os.PathLike, overwrite: bool = True, weights_file: bool | None = None) -> Path:
    """Write ``graph`` as JSON (one line per input, constant and node, for readable diffs); returns ``path``.

    With a side file (``wants_side_file(graph, weights_file)``: large graphs, or ``weights_file=True``)
    the constants' values go to ``side_path(path)`` (g.json -> g.npz), and both files are written
    together (``fileio.write_together``). Without ``overwrite`` an existing file is refused."""
    path = Path(path)
    if not wants_side_file(graph, weights_file):
        write_together({path: graph_text(graph_to_dict(graph))}, overwrite=overwrite)
        return path
    side = side_path(path)
    files = {side: side_file_bytes(graph), path: graph_text(graph_to_dict(graph, side.name))}
    write_together(files, overwrite=overwrite)
    return path


def graph_text(data: dict[str, Any]) -> str:
    """JSON text of a graph dict (``graph_to_dict``) with one line per input, constant and node: what save_graph
    writes, and OUT/graph.json (json's C encoder writes each line: fast for large constants)."""
    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            entries = ",\n".join(f"    {json.dumps(v)}" for v in value)
            lines.append(f"  {json.dumps(key)}: [\n{entries}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
