"""Own stages of the HLS backend (slice, pad, concat, transpose, softmax, argmax, topk), bit for bit.

Each graph puts many own stages, with several fixed-point types, rounding and overflow modes, next to
map stages and forks; it is lowered with ``hlsfuse.lower.lower``, emitted with ``emit_hls``, built with
g++ and run by ``hlsfuse.sim.csim`` on several frames back to back (so a stage that kept state from the
previous frame fails), and compared with the reference interpreter: exactly for fixed-point outputs,
and with zero tolerance for float32 outputs, except the float softmax (exp and division in C++).
g++ runs four times in all: the machine is shared.
"""

from __future__ import annotations

import numpy as np
import pytest
from hls_support import csim_both, write_project

from hlsfuse import GraphBuilder, HlsfuseError, fuse, reference
from hlsfuse.backends.hls import HlsOptions, emit_hls
from hlsfuse.backends.hls.context import make_context
from hlsfuse.ir import Graph
from hlsfuse.lower import lower
from hlsfuse.ops.opaque import softmax_tables

OWN_OPS = {"slice", "pad", "concat", "transpose", "softmax", "argmax", "topk"}


# --------------------------------------------------------------------------
# Graphs
# --------------------------------------------------------------------------


def movers() -> Graph:
    """slice, pad, concat and transpose over several types and modes, between map stages and forks."""
    b = GraphBuilder("movers", dtype="fixed<12,4>")
    x = b.input("x", [2, 3, 4, 5])
    y = b.input("y", [2, 3, 4, 2], dtype="fixed<8,3,RND,SAT>")
    u = b.input("u", [2, 3, 4, 5], dtype="ufixed<9,2>")
    n = b.input("n", [2, 3, 4, 5], dtype="int8")
    m = b.input("m", [6, 7], dtype="fixed<10,6,RND_CONV,SAT_SYM>")
    r = b.relu(b.add(x, u, dtype="fixed<12,4,RND,SAT>"))  # a map stage feeding own stages, forked
    c = b.constant("c", np.random.default_rng(3).uniform(-2, 2, [2, 3, 1, 5]), dtype="fixed<10,3>")
    outs = [
        # slices: negative steps on several axes, a reversed inner block, clamped bounds, unsliced axes
        b.slice(x, begin=[1, -1, 3, 4], end=[-3, -4, 0, 0], step=[-1, -1, -2, -2]),
        b.slice(r, begin=[0, 2, -1], end=[2, 0, -5], step=[1, -1, -1], dtype="fixed<8,2,RND_CONV,SAT>"),
        b.slice(n, begin=[1, 0, 1], end=[2, 9, 4], step=[1, 2, 2], dtype="fixed<6,3,RND,SAT_SYM>"),
        b.slice(m, begin=[5, 6], end=[-100, -100], step=[-2, -3]),
        b.slice(m, begin=[-2], end=[-3], step=[-1]),  # one element read "backwards": no reversal
        # pads: a value rounded and saturated into the output type, several types
        b.pad(x, pads=[0, 1, 2, 0, 1, 0, 1, 2], value=0.7, dtype="fixed<10,3,RND,SAT>"),
        b.pad(u, pads=[1, 0, 0, 0, 0, 0, 0, 1], value=-1.0),  # ufixed: the fill saturates to 0
        b.pad(m, pads=[2, 1, 0, 3], value=100.0, dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(n, pads=[0, 0, 0, 0, 0, 0, 0, 0], value=3.0, dtype="fixed<7,5,TRN_ZERO,WRAP>"),
        # reflect and edge pads: a block from the first padded axis on (the whole tensor, or rows), a long
        # reflection (pads beyond the axis), a type change, a map stage's output
        b.pad(x, pads=[0, 1, 2, 0, 0, 2, 1, 3], mode="reflect"),
        b.pad(m, pads=[2, 1, 3, 9], mode="edge", dtype="fixed<8,4,RND_INF,SAT_ZERO>"),
        b.pad(r, pads=[0, 0, 0, 4, 0, 0, 0, 6], mode="reflect", dtype="fixed<8,2,RND_CONV,SAT>"),
        b.pad(u, pads=[1, 0, 3, 0, 2, 0, 0, 0], mode="edge"),
        # concats on every axis, 2 to 4 inputs of different fixed types, a constant operand
        b.concat(x, y, axis=-1),
        b.concat(y, x, u, n, axis=3, dtype="fixed<9,4,RND,SAT>"),
        b.concat(x, u, axis=0, dtype="fixed<14,5>"),
        b.concat(n, x, r, axis=1, dtype="fixed<10,4,RND_ZERO,SAT>"),
        b.concat(x, c, u, axis=2, dtype="fixed<11,3,RND_MIN_INF,SAT_SYM>"),
        b.concat(m, axis=0),
        # transposes of rank 2 to 4 that reorder
        b.transpose(m),
        b.transpose(r, axes=[0, 3, 1, 2], dtype="fixed<8,3,RND,WRAP>"),
        b.transpose(u, axes=[3, 2, 1, 0]),
        b.transpose(b.reshape(n, [6, 4, 5]), axes=[1, 0, 2], dtype="ufixed<6,3,RND_CONV,SAT>"),
        b.transpose(b.reshape(y, [6, 8]), axes=[1, 0]),
    ]
    # own stages in a chain, and an own stage's output read by a map stage and a port (a fork after it)
    p = b.pad(b.transpose(y, axes=[1, 0, 3, 2]), pads=[0, 0, 1, 0, 0, 1, 0, 1], value=-0.5)
    outs.append(b.slice(p, begin=[2, 1, 3], end=[-4, 0, -100], step=[-1, -1, -1]))
    s = b.slice(x, begin=[0, 0, 0, 4], end=[2, 3, 4, -6], step=[1, 1, 1, -1], dtype="fixed<12,5>")
    outs += [s, b.mul(s, b.abs(s), dtype="fixed<12,4,RND,SAT>")]
    b.output(*outs)
    return b.build()


def rows() -> Graph:
    """softmax with several table sizes and types, argmax on every axis, topk values and indices."""
    b = GraphBuilder("rows", dtype="fixed<10,4>")
    x = b.input("x", [2, 3, 6])
    w = b.input("w", [4, 5], dtype="fixed<4,2>")  # few values: ties for argmax and topk
    v = b.input("v", [3, 4], dtype="ufixed<8,3,RND,SAT>")
    k = b.input("k", [7], dtype="int8")
    f = b.input("f", [3, 5], dtype="float32")
    z = b.add(x, x, dtype="fixed<10,4,RND,SAT>")  # a map stage, forked to several own stages
    outs = [
        b.softmax(x, table_bits=3),
        b.softmax(z, table_bits=6, dtype="ufixed<8,0,RND_CONV,SAT>"),
        b.softmax(v, table_bits=10),  # unsigned input: x - max is signed
        b.softmax(
            w,
            table_bits=12,
            exp_dtype="fixed<12,3,RND,SAT>",
            recip_dtype="ufixed<12,2,RND_INF,SAT>",
            dtype="fixed<12,2,RND,SAT>",
        ),
        b.softmax(k, table_bits=16, exp_dtype="ufixed<10,1,RND,SAT>", recip_dtype="ufixed<10,3,RND,SAT>"),
        b.softmax(f),
        b.relu(b.softmax(z, table_bits=8, dtype="fixed<9,1,TRN_ZERO,SAT_SYM>")),  # an own stage feeding a map
    ]
    for axis in range(3):
        outs.append(b.argmax(z, axis=axis))
        outs.append(b.argmax(x, axis=axis - 3, keepdims=True, dtype="uint8"))
    outs += [
        b.argmax(w, axis=0, dtype="int16"),
        b.argmax(w, axis=1, dtype="fixed<12,8>"),
        b.argmax(v, axis=-1, dtype="float32"),  # float indices of a fixed input
        b.argmax(k),
        b.argmax(f, axis=0),
        b.topk(x, k=2),
        b.topk(w, k=5),  # a full sort, ties by lower index
        b.topk(w, k=3, ret="indices"),
        b.topk(w, k=1, ret="indices", dtype="uint8"),
        b.topk(v, k=4, dtype="fixed<6,2,RND,SAT>"),
        b.topk(k, k=3, ret="indices", dtype="fixed<10,6,RND,SAT>"),
        b.topk(f, k=2),
        b.topk(f, k=4, ret="indices"),
    ]
    b.output(*outs)
    return b.build()


def floats() -> Graph:
    """Every own op but softmax in float32 (exact: they only move or compare values), with map stages."""
    b = GraphBuilder("floats", dtype="float32")
    x = b.input("x", [2, 3, 4])
    y = b.input("y", [2, 3, 2])
    e = b.exp(x)
    c = b.constant("c", np.random.default_rng(4).normal(size=[2, 1, 4]))
    outs = [
        b.slice(x, begin=[-1, 2, 3], end=[-3, -4, 0], step=[-1, -1, -1]),
        b.pad(e, pads=[1, 0, 2, 0, 1, 1], value=-2.5),
        b.pad(x, pads=[0, 2, 1, 1, 1, 3], mode="reflect"),
        b.pad(c, pads=[1, 0, 2, 0, 0, 1], mode="edge"),  # a constant, read from its ROM
        b.concat(x, y, e, axis=-1),
        b.concat(x, c, axis=1),
        b.transpose(e, axes=[2, 0, 1]),
        b.argmax(x, axis=1),
        b.argmax(e, axis=2, keepdims=True),
        b.topk(x, k=3),
        b.topk(y, k=2, ret="indices"),
    ]
    t = b.transpose(x, axes=[1, 0, 2])
    outs.append(b.add(t, b.relu(b.slice(t, begin=[2, 0, 3], end=[1, 2, -5], step=[-1, 1, -1]))))  # held: [1, 2, 4]
    # a scalar stream, and stages whose only operand is a constant (streamed from its ROM)
    outs += [b.slice(b.input("s", []), begin=[], end=[]), b.transpose(c), b.topk(c, k=2, ret="indices")]
    b.output(*outs)
    return b.build()


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def own_ops(graph: Graph, plan) -> set[str]:
    return {graph.node(s.head).op for s in plan.stages if s.kind == "own"}


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
    graph = movers()
    plan = run(graph, tmp_path)
    assert own_ops(graph, plan) == {"slice", "pad", "concat", "transpose"}
    assert any(s.kind == "fork" for s in plan.stages) and any(s.kind == "map" for s in plan.stages)


@pytest.mark.gxx
def test_softmax_argmax_topk_are_bit_exact(tmp_path):
    graph = rows()
    plan = run(graph, tmp_path, frames=3)
    assert own_ops(graph, plan) == {"softmax", "argmax", "topk"}


@pytest.mark.gxx
def test_float32_own_stages_are_exact(tmp_path):
    graph = floats()
    plan = run(graph, tmp_path, float_rtol=0.0, float_atol=0.0)
    assert own_ops(graph, plan) == OWN_OPS - {"softmax"}


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
    assert own_ops(graph, plan) == OWN_OPS


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
