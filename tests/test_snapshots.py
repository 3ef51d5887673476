"""Snapshots of generated code: one small graph per stage kind, HLS C++ and Verilog, compared byte for byte.

A schedule or template change then shows up in review as a diff of these files, not only in slow
Verilator runs. The snapshots live in tests/snapshots/<graph>/. After an intended change of the
generated code, refresh them with

    make snapshots        (HLSFUSE_UPDATE_SNAPSHOTS=1 python3 -m pytest tests/test_snapshots.py)

and review the diff like any other change. The ``small`` graph keeps the whole HLS project (scripts,
testbench, data, weights); the others keep the design sources: <top>.cpp, the Verilog top and stage
modules. The hand-written libraries (hw/hls, hw/rtl) are copied verbatim and not kept.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from map_graphs import small_graph

from hlsfuse import GraphBuilder
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower import Folding

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("HLSFUSE_UPDATE_SNAPSHOTS") == "1"
F = "fixed<12,4,RND,SAT>"


def _rng():
    return np.random.default_rng(7)


def map_graph():
    """A held broadcast operand, a node computed from it before the main loop (a pre loop), a ROM, a table."""
    b = GraphBuilder("map", dtype=F)
    x = b.input("x", [1, 2, 2, 3])
    s = b.input("s", [1, 1, 1, 3])
    bias = b.constant("bias", [0.5, -0.25, 1.0])
    b.output(b.relu(b.add(b.mul(x, b.sigmoid(s, table_bits=4)), bias)))
    return b.build()


def fork_graph():
    b = GraphBuilder("fork", dtype=F)
    x = b.input("x", [1, 2, 3])
    b.output(b.relu(x), b.neg(x))
    return b.build()


def window_graph():
    """A strided, padded convolution with its epilogue, a padded max pool, an average pool whose counts vary."""
    b = GraphBuilder("window", dtype=F)
    x = b.input("x", [1, 5, 5, 2])
    w = b.constant("w", _rng().normal(size=(3, 3, 2, 3)) * 0.3, dtype="fixed<8,1>")
    c = b.relu(b.bias_add(b.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1]), b.constant("b", [0.1, 0.2, 0.3])))
    m = b.max_pool2d(c, pool_size=[2, 2], strides=[1, 1], padding=[1, 1, 0, 0])
    b.output(b.avg_pool2d(m, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1], count_include_pad=False))
    return b.build()


def ring_graph():
    """A strided convolution emitting from a ring of three snapshots, over two lanes of input channels."""
    b = GraphBuilder("ring", dtype=F)
    x = b.input("x", [1, 6, 6, 2])
    w = b.constant("w", _rng().normal(size=(3, 3, 2, 4)) * 0.3, dtype="fixed<8,1>")
    b.output(b.conv2d(x, w, strides=[2, 2], padding=[1, 1, 0, 0], name="conv"))
    return b.build()


def rows_graph():
    """dense with its epilogue, matmul by a constant, and matmul of two computed tensors (b held)."""
    b = GraphBuilder("rows", dtype=F)
    x = b.input("x", [4, 6])
    d = b.bias_add(b.dense(x, b.constant("w", _rng().normal(size=(3, 6)) * 0.3)), b.constant("bias", [1, 2, 3]))
    q = b.dense(x, b.constant("wq", _rng().normal(size=(2, 6)) * 0.3))
    k = b.dense(x, b.constant("wk", _rng().normal(size=(2, 6)) * 0.3))
    scores = b.matmul(q, b.transpose(k))
    b.output(d, b.matmul(scores, b.constant("v", _rng().normal(size=(4, 5)) * 0.3)))
    return b.build()


def reduce_graph():
    """A mean with a prologue and an epilogue, and a global average pool joined with its own input."""
    b = GraphBuilder("reduce", dtype=F)
    x = b.input("x", [1, 2, 3, 4])
    b.output(b.relu(b.mean(b.neg(x), axes=[1, 2], keepdims=True)), b.maximum(b.global_avg_pool(x), x))
    return b.build()


def own_graph():
    """Every own op: slices (streaming and reversed), pad, concat with a constant, transpose, softmax, argmax, topk."""
    b = GraphBuilder("own", dtype=F)
    x = b.input("x", [2, 3, 4])
    c = b.constant("c", _rng().normal(size=(2, 3, 1)))
    b.output(
        b.slice(x, begin=[0, 1], end=[2, 3]),
        b.slice(x, begin=[1, -1], end=[-3, -4], step=[-1, -2]),
        b.pad(x, pads=[0, 1, 0, 0, 0, 2], value=0.5),
        b.concat(x, c, axis=2),
        b.transpose(x, axes=[0, 2, 1]),
        b.softmax(x, table_bits=5),
        b.argmax(x, axis=1, dtype="int16"),
        b.topk(x, k=2),
    )
    return b.build()


GRAPHS = {
    "small": small_graph,
    "map": map_graph,
    "fork": fork_graph,
    "window": window_graph,
    "ring": ring_graph,
    "rows": rows_graph,
    "reduce": reduce_graph,
    "own": own_graph,
}


def _kept(name: str, files: dict[str, str]) -> dict[str, str]:
    def keep(path: str) -> bool:
        folder, _, file = path.partition("/")
        if folder == "hls":
            if file.startswith(("include/", "hlsfuse/")):
                return False  # the kernel library and the work-alike headers, copied verbatim
            return name == "small" or file.endswith(".cpp") and not file.startswith("tb_")
        if folder == "verilog":
            return file.endswith(".v") and not file.startswith("hlsf_")
        return False

    return {path: text for path, text in files.items() if keep(path)}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_generated_code_matches_its_snapshot(name):
    fold = Folding(snapshots=(("conv", 3),), lanes=(("conv", 2),)) if name == "ring" else Folding()
    design = compile(GRAPHS[name](), CompileOptions(target="all", fold=fold))
    kinds = {s.kind for s in design.plan.stages}
    assert name in ("small", "ring") or name in kinds, f"graph '{name}' has no {name} stage: {kinds}"
    files = _kept(name, design.files)
    folder = SNAPSHOTS / name
    if UPDATE:
        for path, text in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        for path in folder.rglob("*"):
            if path.is_file() and str(path.relative_to(folder)) not in files:
                path.unlink()
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert kept == sorted(files), "the set of generated files changed; refresh the snapshots (`make snapshots`)"
    for path, text in files.items():
        assert text == (folder / path).read_text(), f"{name}/{path} differs from its snapshot (`make snapshots`)"
