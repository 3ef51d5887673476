"""Window, rows and reduce stages of the HLS backend: generated C++ run by csim, bit-exact with the reference.

Each graph is fused, lowered and emitted once per module (tests/nn_graphs.py holds them), then
built with g++ under -Wall -Wextra -Werror and run on several frames back to back, so line buffers,
accumulators and held inputs are also checked to start afresh with every frame. The zoos and the wide graph are
built against AMD's headers too (``csim_both``); the random graphs, whose heads the zoos hold, against them under
make test-random.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hls_support import csim_both, write_project
from nn_graphs import nn_zoo, random_nn_graph, wide_graph
from union import union

from hlsfuse import GraphBuilder, HlsfuseError, fuse, reference
from hlsfuse.backends.hls import emit_hls
from hlsfuse.backends.hls.toolchain import WORKALIKE_FLAGS
from hlsfuse.lower import lower
from hlsfuse.types import Fmt

FRAMES = (11, 12, 13)  # seeds of the random input frames each csim run streams back to back


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """Emitted projects by graph name, each written once per test module."""
    built: dict[str, Path] = {}

    def get(graph) -> Path:
        if graph.name not in built:
            built[graph.name] = write_project(graph, tmp_path_factory.mktemp("nn") / graph.name)
        return built[graph.name]

    return get


def _run(graph, folder: Path, amd: bool = True):
    """csim over FRAMES (``amd``: under AMD's headers too, as csim_both says); checks that every output element of
    every frame was compared."""
    result = csim_both(folder, [reference.random_inputs(graph, seed) for seed in FRAMES], amd=amd)
    assert result.passed, result.report()
    expected = len(FRAMES) * sum(graph.types[name].size for name in graph.outputs)
    assert (result.frames, result.compared) == (len(FRAMES), expected)
    return result


def _function(source: str, name: str) -> str:
    """The text of the stage function ``name`` in a generated .cpp."""
    m = re.search(rf"^static void {re.escape(name)}\(.*?^}}$", source, re.MULTILINE | re.DOTALL)
    assert m, f"no function {name}"
    return m.group(0)


# --------------------------------------------------------------------------
# What the graphs exercise (pure Python)
# --------------------------------------------------------------------------


def test_zoo_covers_every_head_with_epilogues_prologues_and_held_inputs():
    g = nn_zoo(fixed=True)
    plan = lower(g, fuse(g))
    stages = {s.head: s for s in plan.stages if s.kind in ("window", "rows", "reduce")}
    heads = {g.node(h).op for h in stages}
    assert heads == {"conv2d", "max_pool2d", "avg_pool2d", "dense", "matmul", "sum", "mean", "max", "global_avg_pool"}
    # the residual block: conv, bias, relu and the skip join in one window stage, x forked into it
    res = stages["conv2d0"]
    assert (res.kind, res.nodes, res.uses) == ("window", ("conv2d0", "bias_add0", "relu0", "add0"), ("head", "post"))
    assert plan.channel(res.inputs[1]).producer == "fork_x"
    # a streamed conv weight and a streamed epilogue operand are held; a streamed matmul b with a streamed join
    assert stages["conv2d3"].uses == ("head", "held") and stages["conv2d3"].held == ("wt",)
    assert stages["conv2d1"].held == ("bias_in",)
    assert stages["matmul4"].uses == ("head", "held", "post")
    # prologues, one with a held operand and nodes computed from it before the loop
    assert stages["mean0"].nodes == ("sub0", "relu3", "add3", "mean0") and sorted(stages["mean0"].uses) == [
        "held",
        "pre",
    ]
    assert stages["sum0"].uses == ("pre",)
    # global average pools with their epilogues
    assert stages["global_avg_pool0"].nodes == ("global_avg_pool0", "bias_add2", "relu4", "sigmoid1")


def test_accumulators_are_the_exact_formats():
    g = nn_zoo(fixed=True)
    plan = lower(g, fuse(g))
    files = emit_hls(g, plan)
    source = files[f"{plan.top}.cpp"]
    stage = {s.head: s.name for s in plan.stages if s.head}

    def acc(head: str) -> str:
        m = re.search(r"typedef (ap_u?fixed<\d+, -?\d+>) acc_t;", _function(source, stage[head]))
        assert m, head
        return m.group(1)

    x, w1 = Fmt.of(g.types["x"].dtype), Fmt.of(g.types["w1"].dtype)
    exact = x.mul(w1).accumulate(3 * 3 * 4)
    assert acc("conv2d0") == f"ap_fixed<{exact.width}, {exact.int_bits}>" == "ap_fixed<26, 11>"
    assert acc("avg_pool2d0") == "ap_fixed<16, 8>"  # fixed<12,4> summed over 9 taps
    assert acc("mean0") == "ap_fixed<16, 9>"  # fixed<12,5> summed over 12 values
    assert "typedef t_abs0 acc_t;" in _function(source, stage["max0"])  # a maximum is one of its values
    # held inputs are read whole before the image, the counts table follows pool_counts
    conv = _function(source, stage["conv2d3"])
    assert conv.index("a_wt[") < conv.index("hlsf::line_buffer")
    assert "{4, 6, 6, 6, 6, 6, 4}," in _function(source, stage["avg_pool2d0"])
    assert files == emit_hls(g, plan)  # deterministic


def test_matmul_whose_streamed_a_broadcasts_is_refused_by_its_schedule():
    b = GraphBuilder("mm", dtype="fixed<12,4>")
    a = b.input("a", [1, 3, 4])
    b.output(b.matmul(a, b.constant("bb", np.ones([2, 4, 5]))))
    g = b.build()
    with pytest.raises(HlsfuseError) as err:
        lower(g, fuse(g))
    assert str(err.value) == (
        "node 'matmul0' (matmul): input 'a' with batch dims [1] is broadcast to the output's [2]; "
        "a stage streams 'a' once, so its batch dims must match the output's"
    )


# --------------------------------------------------------------------------
# C simulation
# --------------------------------------------------------------------------


@pytest.mark.gxx
def test_fixed_zoo_is_bit_exact(projects):
    g = nn_zoo(fixed=True)
    _run(g, projects(g))


@pytest.mark.gxx
def test_float_zoo_matches(projects):
    g = nn_zoo(fixed=False)
    _run(g, projects(g))


@pytest.mark.gxx
def test_wide_accumulators_stay_exact(projects):
    g = wide_graph()
    folder = projects(g)
    source = (folder / "hls" / "wide.cpp").read_text()
    assert "typedef ap_fixed<64, 20> acc_t;" in source  # conv2d0: 60-bit products summed over 9 taps
    # the narrow conv saturates on these frames: the comparison covers the overflow path too
    t = g.types["conv2d1"].dtype
    frames = [reference.run_raw(g, reference.quantize_inputs(g, reference.random_inputs(g, s))) for s in FRAMES]
    assert any(np.isin(f["conv2d1"], [t.raw_max, -t.raw_max]).any() for f in frames)
    _run(g, folder)


@pytest.mark.gxx
@pytest.mark.parametrize("seed", [0, 1])
def test_random_nn_graphs_are_bit_exact(projects, seed):
    g = union([random_nn_graph(10 * seed + k) for k in range(3)], f"random_nn_union{seed}")
    _run(g, projects(g), amd=False)


@pytest.mark.gxx
def test_generated_code_is_warning_free(projects):
    """csim builds with -Wall -Wextra -Werror; the stage functions also shadow no name (-Wshadow)."""
    assert {"-Wall", "-Wextra", "-Werror"} <= set(WORKALIKE_FLAGS)
    for g in (nn_zoo(fixed=True), nn_zoo(fixed=False)):
        hls = projects(g) / "hls"
        cmd = ["g++", "-fsyntax-only", *WORKALIKE_FLAGS, "-Wshadow", f"{g.name}.cpp"]
        done = subprocess.run(cmd, cwd=hls, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[:2000]
