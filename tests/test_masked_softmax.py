"""masked_softmax: softmax with a constant 0/1 mask (attention masks), against numpy's float softmax of the
positions kept, bit for bit softmax when nothing is left out, its errors, and its stage (the mask's ROM, lanes,
cycles). The C++ and the Verilog are checked bit for bit in the shared hardware builds (test_hw_shared.py)."""

from __future__ import annotations

import numpy as np
import pytest
from own_graphs import MASKED_LANES, causal, masked_softmaxes

from hlsfuse import GraphBuilder, HlsfuseError, fuse, reference
from hlsfuse.backends.hls import emit_hls
from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.boards import DSP48E2
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.area import design_area
from hlsfuse.ops import OPS

BIT = "ufixed<1,1>"


def run_masked(x, mask, x_dtype="fixed<12,4,RND,SAT>", out=None, **attrs):
    b = GraphBuilder("t", dtype=x_dtype)
    xin = b.input("x", np.shape(x))
    m = b.constant("m", mask, dtype=BIT)
    b.output(b.softmax(xin, mask=m, name="y", dtype=out, **attrs))
    g = b.build()
    return reference.run(g, {"x": np.asarray(x)})["y"], g


def float_masked(x, mask):
    """numpy's float64 softmax over the positions kept (row r reads mask row r mod R), 0 elsewhere."""
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    m = np.asarray(mask, dtype=bool)
    out = np.zeros_like(rows)
    for r, row in enumerate(rows):
        kept = ~m[r % len(m)]
        e = np.exp(row[kept] - row[kept].max())
        out[r, kept] = e / e.sum()
    return out.reshape(x.shape)


def _scores(shape, seed=0, scale=2.0):
    return np.random.default_rng(seed).normal(size=shape) * scale


# --------------------------------------------------------------------------
# The reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["causal", "padding", "scattered"])
def test_fixed_point_is_the_softmax_of_the_kept_positions(kind):
    s = 6
    x = _scores((1, 3, s, s))
    mask = {"causal": causal(s), "padding": [[0, 0, 0, 0, 1, 1]],
            "scattered": np.random.default_rng(1).integers(0, 2, (s, s)) * (1 - np.eye(s))}[kind]
    y, _ = run_masked(x, mask, table_bits=12, out="ufixed<16,1,RND,SAT>")
    want = float_masked(x, mask)
    left_out = np.broadcast_to(np.asarray(mask, bool), (3, s, s))[None]
    assert np.all(y[left_out] == 0.0)  # exactly 0, not merely small
    assert np.all(y[~left_out] > 0.0)
    np.testing.assert_allclose(y, want, atol=3e-3)


def test_float32_is_the_softmax_of_the_kept_positions():
    x = _scores((2, 4, 4), scale=4.0).astype(np.float32)
    y, _ = run_masked(x, causal(4), x_dtype="float32")
    assert y.dtype == np.float32 and np.all(y[:, np.triu(np.ones((4, 4), bool), 1)] == 0.0)
    np.testing.assert_allclose(y, float_masked(x, causal(4)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["fixed<12,4,RND,SAT>", "ufixed<8,3>", "float32"])
def test_no_position_left_out_is_softmax_bit_for_bit(dtype):
    x = np.abs(_scores((2, 3, 5))) if dtype.startswith("u") else _scores((2, 3, 5))
    y, g = run_masked(x, np.zeros((3, 5)), x_dtype=dtype, table_bits=8)
    b = GraphBuilder("u", dtype=dtype)
    b.output(b.softmax(b.input("x", x.shape), name="y", table_bits=8))
    plain = reference.run(b.build(), {"x": x})["y"]
    assert np.array_equal(y, plain)


def test_a_left_out_maximum_does_not_set_the_row_maximum():
    # the largest entry is left out: the others still get their softmax (a saturated d would give them 0)
    x = np.array([[7.5, -6.0, -7.0, -6.5]])
    y, _ = run_masked(x, [[1, 0, 0, 0]], table_bits=12, out="ufixed<16,1,RND,SAT>")
    assert y[0, 0] == 0.0
    np.testing.assert_allclose(y, float_masked(x, [[1, 0, 0, 0]]), atol=2e-3)


def test_a_row_keeping_one_position_gives_it_everything():
    y, _ = run_masked(_scores((2, 4)), [[1, 1, 0, 1]], table_bits=16, out="ufixed<16,1,RND,SAT>")
    assert np.all(y[:, [0, 1, 3]] == 0.0) and y[0, 2] == y[1, 2]  # e(0) * recip(e(0)) whatever the scores
    assert abs(y[0, 2] - 1.0) < 1e-3


def test_rank_one_input_takes_one_mask_row():
    y, _ = run_masked(np.array([0.5, 1.0, 2.0]), [[0, 1, 0]], table_bits=12)
    np.testing.assert_allclose(y, float_masked([[0.5, 1.0, 2.0]], [[0, 1, 0]])[0], atol=4e-3)


def test_builder_json_and_registry():
    _, g = run_masked(_scores((1, 2, 3)), [[0, 0, 1]])
    assert g.node("y").op == "masked_softmax" and g.node("y").inputs == ("x", "m")
    assert OPS["masked_softmax"].buffer_reason(g.sigs["y"]).startswith("masked_softmax needs the whole row")
    from hlsfuse.graph_json import graph_from_dict, graph_to_dict

    again = graph_from_dict(graph_to_dict(g))
    x = {"x": _scores((1, 2, 3))}
    assert np.array_equal(reference.run(again, x)["y"], reference.run(g, x)["y"])


# --------------------------------------------------------------------------
# Errors: one line naming the node
# --------------------------------------------------------------------------


def _build(shape=(2, 3, 4), mask=None, mask_shape=None, mask_dtype=BIT, x_dtype="fixed<16,6>", as_input=False):
    b = GraphBuilder("t", dtype=x_dtype)
    x = b.input("x", shape)
    if as_input:
        m = b.input("m", mask_shape, dtype=mask_dtype)
    else:
        m = b.constant("m", np.zeros(mask_shape) if mask is None else mask, dtype=mask_dtype)
    b.output(b.op("masked_softmax", x, m, name="n"))
    return b.build()


@pytest.mark.parametrize("kwargs, message", [
    ({"mask_shape": (2, 4)}, "input 'mask' must have shape [1, 4] or [3, 4] (row r of x reads mask row r mod R), "
                             "not [2, 4]"),
    ({"mask_shape": (3, 5)}, "input 'mask' must have shape [1, 4] or [3, 4] (row r of x reads mask row r mod R), "
                             "not [3, 5]"),
    ({"mask_shape": (4,)}, "input 'mask' must have shape [1, 4] or [3, 4] (row r of x reads mask row r mod R), "
                           "not [4]"),
    ({"shape": (4,), "mask_shape": (2, 4)}, "input 'mask' must have shape [1, 4] (row r of x reads mask row r "
                                            "mod R), not [2, 4]"),
    ({"mask_shape": (1, 4), "mask_dtype": "uint8"}, "input 'mask' must be ufixed<1,1> (1: left out, 0: kept), "
                                                    "not uint8"),
    ({"mask_shape": (1, 4), "mask_dtype": "float32", "x_dtype": "float32"},
     "input 'mask' must be ufixed<1,1> (1: left out, 0: kept), not float32"),
    ({"mask": [[0, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]], "mask_shape": (3, 4)},
     "mask row 1 leaves out all 4 positions: the softmax of an empty row is undefined"),
    ({"mask_shape": (1, 4), "as_input": True}, "input 'mask' must be a graph constant (the stage holds it in a ROM)"),
])
def test_errors_name_the_node(kwargs, message):
    with pytest.raises(HlsfuseError) as err:
        _build(**kwargs)
    assert str(err.value) == f"node 'n' (masked_softmax): {message}"


def test_fixed_point_checks_of_softmax_apply():
    with pytest.raises(HlsfuseError) as err:
        _build(mask_shape=(1, 4), x_dtype="fixed<64,32>")
    assert str(err.value).startswith("node 'n' (masked_softmax): the difference x - max(x) needs a 65-bit")


# --------------------------------------------------------------------------
# The stage: the mask's ROM, lanes, cycles, both backends
# --------------------------------------------------------------------------


def _plan(graph, fold=None):
    return lower(graph, fuse(graph, mode="fpga"), LowerOptions(fold=fold or Folding()))


def test_the_stage_is_softmax_s_loop_with_a_mask_rom():
    g = masked_softmaxes()
    plan = _plan(g, Folding(lanes=tuple(MASKED_LANES.items())))
    stages = {s.head: s for s in plan.stages if s.kind == "own"}
    for head in ("causal_sm", "pad_sm", "scattered_sm"):
        main = stages[head].schedule.main
        x = g.types[g.node(head).inputs[0]]
        rom = stages[head].schedule.buffer("mask")
        mask = g.types[g.node(head).inputs[1]]
        assert (main.mask, main.mask_rows) == (g.node(head).inputs[1], mask.shape[0])
        assert main.iterations == 3 * x.size // main.lanes_in == stages[head].cycles  # softmax's: 3 passes a row
        assert (rom.rom, rom.elements, rom.width, rom.banks) == (True, mask.size, 1, main.lanes_in)
    assert stages["pad_sm"].schedule.main.lanes_in == 4 and stages["scattered_sm"].schedule.main.lanes_in == 2
    areas, _, _ = design_area(g, plan, DSP48E2)
    assert areas[stages["causal_sm"].name].lutram_bits >= 16  # the 4 x 4 mask, as LUTRAM


def test_float32_masked_softmax_takes_no_lanes():
    b = GraphBuilder("f", dtype="float32")
    b.output(b.softmax(b.input("x", [2, 4]), mask=b.constant("m", [[0, 0, 1, 0]], dtype=BIT), name="y"))
    g = b.build()
    with pytest.raises(HlsfuseError) as err:
        _plan(g, Folding(lanes=(("y", 2),)))
    assert "a masked_softmax stage cannot take lanes 2: a float32 softmax sums its row one element at a time" in str(
        err.value)


def test_the_cpp_calls_the_masked_kernel_with_the_mask_rom_banked_by_lanes():
    g = masked_softmaxes()
    files = emit_hls(g, _plan(g, Folding(lanes=tuple(MASKED_LANES.items()))))
    top = next(text for path, text in files.items() if path.endswith(f"{g.name}.cpp"))
    assert top.count("hlsf::masked_softmax_stage<") == 4 and "hlsf::softmax_stage<" not in top
    assert ", 8, 4, 4>(" in top  # causal: ROWS = 8, N = 4, R = 4, and one lane (no L)
    assert "#pragma HLS ARRAY_PARTITION variable=rom_pad type=cyclic factor=4" in top
    assert "#pragma HLS ARRAY_PARTITION variable=rom_scattered type=cyclic factor=2" in top
    gf = masked_softmaxes("float32")
    files = emit_hls(gf, _plan(gf))
    top = next(text for path, text in files.items() if path.endswith(f"{gf.name}.cpp"))
    assert top.count("hlsf::masked_softmax_float_stage<") == 4


def test_the_verilog_holds_the_mask_as_a_rom_of_lane_words():
    g = masked_softmaxes()
    files = emit_verilog(g, _plan(g, Folding(lanes=tuple(MASKED_LANES.items()))))
    mems = {path: text.split() for path, text in files.items() if path.endswith("_rom_pad.mem")}
    # pad_sm's stage (4 lanes): two words of 4 bits, keys 4..7 left out; relu0's softmax (1 lane): a bit per word
    assert mems == {"masked_s1_masked_softmax_rom_pad.mem": ["0", "f"],
                    "masked_s3_masked_softmax_rom_pad.mem": ["0"] * 4 + ["1"] * 4}
    module = files["masked_s0_masked_softmax.v"]
    assert "mask_row" in module  # the causal mask's row counter (R = 4)
