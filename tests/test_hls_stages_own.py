"""Own stages of the HLS backend (slice, pad, concat, transpose, softmax, argmax, topk), bit for bit.

Each graph puts many own stages, with several fixed-point types, rounding and overflow modes, next to
map stages and forks; it is lowered with ``hlsfuse.lower.lower``, emitted with ``emit_hls``, built with
g++ and run by ``hlsfuse.sim.csim`` on several frames back to back (so a stage that kept state from the
previous frame fails), and compared with the reference interpreter: exactly for fixed-point outputs,
and with zero tolerance for float32 outputs, except the float softmax (exp and division in C++).
g++ runs four times in all: the machine is shared.
"""

from __future__ import annotations

import pytest
from hls_support import csim_both, write_project
from own_graphs import hls_floats, hls_movers, hls_rows, own_ops

from hlsfuse import GraphBuilder, HlsfuseError, fuse, reference
from hlsfuse.backends.hls import HlsOptions, emit_hls
from hlsfuse.backends.hls.context import make_context
from hlsfuse.ir import Graph
from hlsfuse.lower import lower
from hlsfuse.ops.opaque import softmax_tables

OWN_OPS = {"slice", "pad", "concat", "transpose", "softmax", "argmax", "topk"}


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def run(graph: Graph, tmp_path, frames: int = 2, **options):
    """Lower, emit, build and run ``graph`` on ``frames`` seeded random frames, under the work-alike headers and
    AMD's (``csim_both``); returns the plan."""
    plan = lower(graph, fuse(graph))
    out = write_project(graph, tmp_path / graph.name, plan, HlsOptions(**options))
    inputs = [reference.random_inputs(graph, seed) for seed in range(frames)]
    result = csim_both(out, inputs)
    assert result.passed, result.report()
    assert result.frames == frames
    assert result.compared == frames * sum(graph.types[t].size for t in graph.outputs)
    return plan


@pytest.mark.gxx
def test_movers_are_bit_exact(tmp_path):
    graph = hls_movers()
    plan = run(graph, tmp_path)
    assert set(own_ops(graph, plan)) == {"slice", "pad", "concat", "transpose", "upsample2d"}
    assert any(s.kind == "fork" for s in plan.stages) and any(s.kind == "map" for s in plan.stages)


@pytest.mark.gxx
def test_softmax_masked_softmax_argmax_topk_are_bit_exact(tmp_path):
    graph = hls_rows()
    plan = run(graph, tmp_path, frames=3)
    assert set(own_ops(graph, plan)) == {"softmax", "masked_softmax", "argmax", "topk"}


@pytest.mark.gxx
def test_float32_own_stages_are_exact(tmp_path):
    graph = hls_floats()
    plan = run(graph, tmp_path, float_rtol=0.0, float_atol=0.0)
    assert set(own_ops(graph, plan)) == OWN_OPS - {"softmax"}


@pytest.mark.gxx
def test_awkward_types_and_modes(tmp_path):
    """Rounding and saturating modes, unsigned and narrow types through every own kernel."""
    b = GraphBuilder("amd", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 4])
    u = b.input("u", [2, 3, 2], dtype="ufixed<8,3,RND,SAT>")
    b.output(
        b.slice(x, begin=[1, -1], end=[-3, -4], step=[-1, -2], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.pad(u, pads=[0, 1, 0, 1, 0, 2], value=0.3),
        b.concat(x, u, axis=2, dtype="fixed<9,3,RND,SAT_SYM>"),
        b.transpose(x, axes=[2, 0, 1]),
        b.softmax(x, table_bits=6),
        b.softmax(u, table_bits=4, exp_dtype="fixed<12,3,RND,SAT>", dtype="fixed<8,1,RND_INF,SAT>"),
        b.argmax(x, axis=1, dtype="int16"),
        b.topk(x, k=3),
        b.topk(u, k=2, ret="indices"),
    )
    graph = b.build()
    plan = run(graph, tmp_path)
    assert set(own_ops(graph, plan)) == OWN_OPS


# --------------------------------------------------------------------------
# Without a compiler: generated calls, tables, errors
# --------------------------------------------------------------------------


def test_calls_carry_the_nodes_shapes_and_attributes():
    b = GraphBuilder("calls", dtype="fixed<8,3>")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 1], dtype="fixed<4,4>")
    c = b.constant("c", [[[0.5], [1.0], [-1.5]]] * 2)
    b.output(
        b.slice(x, begin=[1, 0, -1], end=[-3, 3, 0], step=[-1, 2, -3]),
        b.concat(y, x, c, axis=2),
        b.pad(x, pads=[0, 1, 0, 0, 0, 2], value=-0.3),
        b.pad(x, pads=[0, 1, 0, 0, 2, 0], mode="reflect"),
        b.argmax(x, axis=1, dtype="int16"),
        b.topk(x, k=2, ret="indices"),
    )
    graph = b.build()
    plan = lower(graph, fuse(graph))
    cpp = " ".join(emit_hls(graph, plan)["calls.cpp"].split())  # line breaks do not matter
    assert "hlsf::dims<2, 3, 4>, hlsf::dims<2, 2, 1>," in cpp  # x[1:-3:-1, 0:3:2, -1:0:-3]
    # normalised starts and steps, the reversed axis whose block is buffered, and the schedule's iterations
    sliced = next(s for s in plan.stages if s.head == "slice0")
    assert sliced.schedule.main.block_axis == 0
    assert f"hlsf::dims<1, 0, 3>, hlsf::dims<-1, 2, -3>, 0, {sliced.cycles}>(" in cpp
    # the inputs in the node's order; the constant is read from its ROM where a stream would be
    concat = next(s for s in plan.stages if s.head == "concat0")
    channel = {plan.channel(c).tensor: c for c in concat.inputs}
    streams = f"{concat.outputs[0]}, {channel['y']}, {channel['x']}, feed0"
    assert f"hlsf::concat_stage<t_concat0, 6, 1, 1, 4, 1>( {streams});" in cpp
    assert "hlsf::rom_reader<t_c, 6, 1, hlsf::raw<8, true>::type> feed0(rom_c);" in cpp  # its raw integers
    # -0.3 rounded to nearest on 5 fractional bits: -9.6 / 32 -> -10 / 32
    assert "hlsf::dims<0, 1, 0>, hlsf::dims<2, 4, 6>>(" in cpp and "t_pad0(-0.3125));" in cpp
    # reflect from axis 1: per index of axis 0, the block of 3 x 4, then 6 x 4 written from the tables
    assert "static const int indices[10] = {1, 0, 1, 2, 1, 0, 0, 1, 2, 3};" in cpp
    assert "hlsf::pad_block_stage<t_x, t_pad1, hlsf::dims<2, 3, 4>, hlsf::dims<2, 6, 4>, 1>(" in cpp
    assert next(s for s in plan.stages if s.head == "pad1").cycles == 2 * (3 * 4 + 6 * 4)
    assert "hlsf::argmax_stage<t_x, t_argmax0, 2, 3, 4>(" in cpp
    assert "hlsf::topk_stage<t_x, t_topk0, 6, 4, 2, true>(" in cpp


def test_softmax_tables_are_the_ops_own_and_shared():
    b = GraphBuilder("tables", dtype="fixed<8,3>")
    x = b.input("x", [2, 5])
    b.output(b.softmax(x, table_bits=5), b.softmax(b.relu(x), table_bits=5), b.softmax(x, table_bits=7))
    graph = b.build()
    plan = lower(graph, fuse(graph))
    ctx = make_context(graph, plan, HlsOptions())
    exp, recip = ctx.tables["softmax0"]
    assert ctx.tables["softmax1"] == (exp, recip)  # equal tables are emitted once
    assert ctx.tables["softmax2"][0].name not in (exp.name, recip.name)
    want_exp, want_recip, _ = softmax_tables(graph.sigs["softmax0"])
    assert exp.raw == tuple(want_exp.entries.tolist()) and recip.raw == tuple(want_recip.entries.tolist())
    assert len(recip.raw) == 32
    files = emit_hls(graph, plan)
    luts = files["luts.h"]
    assert luts.count(f"{exp.name}[32]") == 1 and luts.count(f"{recip.name}[32]") == 1
    assert f"{exp.name}, {recip.name}, " in files["tables.cpp"]  # then the row buffers the stage declares


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda b, x: b.concat(*[b.relu(x) for _ in range(9)]),
            "node 'concat0' (concat): joins 9 inputs; the concat kernel takes at most 8",
        ),
        (
            lambda b, x: b.slice(b.reshape(x, [1, 1, 1, 1, 1, 2, 3]), begin=[0], end=[1]),
            "node 'slice0' (slice): input 'x' has 7 dims; own stages handle at most 6",
        ),
        (
            lambda b, x: b.transpose(b.reshape(x, [1, 1, 1, 1, 1, 2, 3])),
            "node 'transpose0' (transpose): input 'x' has 7 dims; own stages handle at most 6",
        ),
    ],
)
def test_what_the_kernels_cannot_do_is_an_error_naming_the_node(build, message):
    b = GraphBuilder("bad", dtype="fixed<8,3>")
    x = b.input("x", [2, 3])
    b.output(build(b, x))
    graph = b.build()
    with pytest.raises(HlsfuseError) as err:  # while lowering (the schedule) or emitting (the kernel's limit)
        emit_hls(graph, lower(graph, fuse(graph)))
    assert message in str(err.value)
