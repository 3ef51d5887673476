"""Lanes: wide tokens on map, fork and window stages (input lanes, PE), width converters and wide ports
(docs/folding.md section 5).

The lowering's facts (tokens, converters, rates, banks, FIFO widths, fold.json) are checked here
without a compiler; csim and both rtlsim drivers check the same designs bit for bit and cycle for
cycle, including a map stage of L lanes running at elements / L cycles per frame.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from rtl_design import lint, simulate

from hlsfuse import GraphBuilder
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.errors import HlsfuseError
from hlsfuse.fusion import fuse
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.area import design_area, dsp_of_part
from hlsfuse.lower.elements import Operand, Program, Step, tokens
from hlsfuse.lower.fold import read_fold
from hlsfuse.lower.report import stage_table
from hlsfuse.outdir import write_tree
from hlsfuse.sim import csim


def chain(c: int = 12):
    """x [1, 4, 4, c] -> bias_add, relu (stage a) -> + a per-row constant, + x (stage b) -> * a (stage c);
    outputs b and c: forks, a residual join and broadcasts along and across the innermost axis."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("lanes", dtype="fixed<16,6>")
    x = b.input("x", [1, 4, 4, c])
    r = b.relu(b.bias_add(x, b.constant("bias", rng.uniform(-1, 1, c), dtype="fixed<8,2>")), name="a")
    s = b.add(r, b.constant("row", rng.uniform(-1, 1, [4, 1]), dtype="fixed<8,2>"))
    t = b.add(s, x, name="b")
    b.output(t)
    b.output(b.mul(t, r, name="c"))
    return b.build()


def plan(graph, **fold):
    return lower(graph, fuse(graph), LowerOptions(fold=Folding(**fold)))


def test_tokens_rewrite_digits_per_lane():
    prog = Program(24, (Step("n", (Operand("bias", "rom", ((1, 4, 1),)), Operand("s", "rom", ((4, 6, 1),)))),))
    (step,) = tokens(prog, 2, "here").steps
    bias, s = step.operands
    assert (bias.digits, bias.lane) == (((1, 2, 2),), 1)  # bias[(t % 2) * 2 + l]
    assert (s.digits, s.lane) == (((2, 6, 1),), 0)  # s[(t / 2) % 6], the same for both lanes
    for t in range(12):
        for lane in range(2):
            i = t * 2 + lane
            assert (t % 2) * 2 + lane == i % 4 and (t // 2) % 6 == (i // 4) % 6
    with pytest.raises(HlsfuseError, match="here: lanes 3 does not divide the innermost run of 4 elements of 'bias'"):
        tokens(prog, 3, "here")


def test_map_stage_of_l_lanes_takes_elements_over_l_iterations_and_converters_fill_the_gaps():
    g = chain()
    unfolded = plan(g)
    assert [s.kind for s in unfolded.stages].count("convert") == 0
    p = plan(g, lanes=(("a", 4), ("b", 6), ("c", 2)))
    stages = {s.sink: s for s in p.stages if s.kind == "map"}
    assert [stages[n].cycles for n in "abc"] == [48, 32, 96]  # 192 elements / lanes
    converts = [(s.schedule.main.lanes_in, s.schedule.main.lanes_out) for s in p.stages if s.kind == "convert"]
    # x: 1 -> 6 for b (and a is fed 1 -> 4); a: 4 -> 6 for b (one gearbox), 4 -> 2 for c; b: 6 -> 2 for c, 6 -> 1 out
    assert sorted(converts) == sorted([(1, 4), (1, 6), (4, 6), (4, 2), (6, 2), (6, 1), (2, 1)])
    gearbox = next(s for s in p.stages if s.kind == "convert" and s.schedule.main.lanes_in == 4
                   and s.schedule.main.lanes_out == 6)
    assert gearbox.cycles == 48 and gearbox.schedule.main.kept == 4  # 192 / 4 iterations; 6 - gcd(4, 6) kept
    for c in p.channels:
        assert c.tokens * c.lanes == c.type.size
        producer = next((s for s in p.stages if s.name == c.producer), None)
        if producer is not None:
            assert len(producer.schedule.io[c.name]) == c.tokens
    assert p.cycles == 192  # the 1-lane ports
    # the bias is read at consecutive elements by the lanes: one bank per lane; the per-row constant once
    banks = {b.tensor: (b.banks, b.banking) for b in stages["a"].schedule.buffers if b.rom}
    assert banks == {"bias": (4, "cyclic")}
    assert {b.tensor: b.banks for b in stages["b"].schedule.buffers if b.rom} == {"row": 1}
    wide = plan(g, lanes=(("a", 4), ("b", 4), ("c", 4)), port_lanes=4)
    assert wide.cycles == 48 and not [s for s in wide.stages if s.kind == "convert"]
    fifo_bits = {c.name: c.width for c in wide.channels}
    assert set(fifo_bits.values()) == {64}
    areas, fifos, _ = design_area(g, wide, dsp_of_part("xczu7ev"))
    narrow_areas, narrow_fifos, _ = design_area(g, unfolded, dsp_of_part("xczu7ev"))
    assert fifos.lutram_bits == 4 * narrow_fifos.lutram_bits  # same depths, four times as wide
    mul = next(s.name for s in wide.stages if s.sink == "c")
    assert areas[mul].lut - narrow_areas[next(s.name for s in unfolded.stages if s.sink == "c")].lut == 3 * 16


@pytest.mark.parametrize("fold, message", [
    ({"lanes": (("a", 5),)}, "stage 's0_bias_add_relu': lanes 5 does not divide the innermost dimension"),
    ({"lanes": (("a", 0),)}, "lanes must be a positive integer, not 0"),
    ({"port_lanes": 6}, "port 'x': 6 lanes of fixed<16,6> do not fit a TDATA of at most 64 bits"),
    ({"ports": (("nope", 2),)}, "port lanes: 'nope' is not a graph input or output"),
    ({"ports": (("x", 5),)}, "port 'x': lanes 5 does not divide the innermost dimension"),
])
def test_bad_lanes_are_one_line_errors(fold, message):
    with pytest.raises(HlsfuseError, match=message):
        plan(chain(), **fold)


def test_lanes_and_pe_on_stages_that_have_none_are_refused():
    b = GraphBuilder("fc", dtype="fixed<8,3>")
    x = b.input("x", [1, 4])
    b.output(b.relu(b.dense(x, b.constant("w", np.ones([2, 4]), dtype="fixed<8,3>"), name="fc"), name="r"))
    with pytest.raises(HlsfuseError, match="is a rows stage; lanes is for map, window and reduce stages"):
        plan(b.build(), lanes=(("fc", 2),))
    with pytest.raises(HlsfuseError, match="is a map stage; pe is for window stages"):
        plan(chain(), pe=(("a", 2),))


def test_fold_json_round_trips_lanes_and_ports(tmp_path, capsys):
    (tmp_path / "g.json").write_text(json.dumps(graph_to_dict(chain())))
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--port-lanes", "2"]) == 0
    fold = json.loads((out / "fold.json").read_text())
    assert fold["ports"] == {"x": 2, "b": 2, "c": 2} and fold["fold"]["a"]["lanes"] == 1
    fold["fold"]["a"]["lanes"] = 4
    fold["fold"]["c"]["lanes"] = 2
    (tmp_path / "f.json").write_text(json.dumps(fold))
    again = tmp_path / "again"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(again), "--fold", str(tmp_path / "f.json")]) == 0
    assert read_fold(str(again / "fold.json")) == read_fold(str(tmp_path / "f.json"))
    report = json.loads((again / "report.json").read_text())
    assert {s["nodes"][-1]: s["lanes"] for s in report["stages"] if s["kind"] == "map"} == {"a": 4, "b": 1, "c": 2}
    printed = capsys.readouterr().out
    assert "lanes 4" in printed and "4->1" in printed and "(2 lanes)" in printed
    (tmp_path / "bad.json").write_text('{"fold": {"a": {}}}')
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "x"), "--fold",
                 str(tmp_path / "bad.json")]) == 2
    assert "fold entry 'a' must be an object with 'simd'" in capsys.readouterr().err


FOLDS = [
    Folding(lanes=(("a", 4), ("b", 6), ("c", 2))),  # a gearbox from 4 to 6 lanes, 1-lane ports
    Folding(lanes=(("a", 4), ("b", 6), ("c", 2)), port_lanes=4),
    Folding(lanes=(("a", 3),), ports=(("x", 2), ("c", 4))),
]


@pytest.mark.gxx
@pytest.mark.parametrize("fold", FOLDS, ids=["gearbox", "ports4", "mixed"])
def test_wide_designs_are_bit_exact_in_csim(fold, tmp_path):
    g = chain()
    design = compile(g, CompileOptions(fold=fold))
    cpp = design.files["hls/lanes.cpp"]
    assert "hls::stream<hlsf::lanes<t_a, 4>>" in cpp or "hls::stream<hlsf::lanes<t_a, 3>>" in cpp
    assert "#pragma HLS UNROLL" in cpp
    result = csim(write_tree(tmp_path / "out", design.files), graph=g)
    assert result.passed, result.report()


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", [1, 2, 4, 12])
def test_a_map_stage_of_l_lanes_runs_at_elements_over_l_cycles_in_rtlsim(lanes, tmp_path):
    g = chain()
    fold = Folding(lanes=(("a", lanes), ("b", lanes), ("c", lanes)), port_lanes=min(lanes, 4))
    p = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=fold))
    result = simulate(g, tmp_path, frames=4, driver="native", plan=p)
    assert result.passed, result.report()
    elements = g.types["a"].size
    busy = {s.name: s.busy for s in result.stages}
    for s in p.stages:
        if s.kind == "map":
            assert s.cycles == elements // lanes
            assert busy[s.name] == 4 * elements // lanes  # every iteration fired once per frame, 4 frames
    assert result.frame_cycles == elements // min(lanes, 4)  # the ports' transfers bound the design


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", [(4, 6, 2), (6, 4, 6), (2, 3, 12)], ids=["4to6", "6to4", "2to3to12"])
def test_gearbox_converters_between_lanes_neither_dividing_the_other_run_as_modelled(lanes, tmp_path):
    g = chain()
    p = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=Folding(lanes=tuple(zip("abc", lanes)), port_lanes=2)))
    a, b = lanes[:2]
    assert any(s.kind == "convert" and (s.schedule.main.lanes_in, s.schedule.main.lanes_out) == (a, b)
               for s in p.stages)
    result = simulate(g, tmp_path, frames=4, driver="native", plan=p)  # bit-exact and cycle-exact vs the model
    assert result.passed, result.report()


@pytest.mark.verilator
def test_wide_ports_and_converters_are_bit_exact_in_the_pyverilator_driver(tmp_path):
    g = chain()
    p = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=FOLDS[2]))
    result = simulate(g, tmp_path, frames=2, plan=p)
    assert result.passed, result.report()


# ------------------------------------------------------------------ window stages: input lanes and PE


def convs():
    """x [1, 6, 6, 4] -> conv 3x3 (8) + bias + relu -> max pool 2x2 -> grouped conv 3x3 (4 groups) + the pool
    (a residual join)."""
    rng = np.random.default_rng(5)
    b = GraphBuilder("pe", dtype="fixed<16,6>")
    x = b.input("x", [1, 6, 6, 4])
    c = b.conv2d(x, b.constant("w", rng.uniform(-1, 1, [3, 3, 4, 8]), dtype="fixed<8,2>"), padding=[1, 1, 1, 1],
                 name="conv")
    r = b.relu(b.bias_add(c, b.constant("bias", rng.uniform(-1, 1, 8), dtype="fixed<8,2>")), name="r")
    p = b.max_pool2d(r, pool_size=[2, 2], name="pool")
    g = b.conv2d(p, b.constant("w2", rng.uniform(-1, 1, [3, 3, 2, 8]), dtype="fixed<8,2>"), padding=[1, 1, 1, 1],
                 groups=4, name="gconv")
    b.output(b.add(g, p, name="y"))
    return b.build()


WIDE = Folding(lanes=(("conv", 4), ("pool", 8), ("gconv", 8)), pe=(("conv", 8), ("pool", 8), ("gconv", 8)),
               simd=(("gconv", 3),), port_lanes=4)


def test_a_window_stage_pushes_its_lanes_and_emits_its_pe_channels_per_cycle():
    g = convs()
    narrow, wide = plan(g), plan(g, **WIDE.__dict__)
    stages = {s.head: s for s in wide.stages if s.kind == "window"}
    conv = stages["conv"].schedule
    # 8 x 8 padded positions, one 4-channel token each; one output pixel's 8 channels per emit
    assert conv.main.geometry.pushes == 64 and conv.main.engine.emits == 1
    # the fold column names both of a window stage's lanes as fold.json does
    table = stage_table(wide, design_area(g, wide, dsp_of_part("xczu7ev"))[0])
    assert "simd 36/36 lanes 4 pe 8" in table and "simd 3/18 lanes 8 pe 8" in table and "lanes 8 pe 8" in table
    assert conv.multipliers == 8 * 36 and conv.macs == 36 * 36 * 8
    weights = next(b for b in conv.buffers if b.tensor == "w")
    assert (weights.banks, weights.columns, weights.column_banks, weights.parts) == (36, 8, 8, 288)  # all at once
    gconv = stages["gconv"].schedule
    assert gconv.multipliers == 3 * 8 and gconv.main.folds == 6  # 18 products of an output in 6 folds of 3
    # each producer's PE meets its consumers' lanes (the 4-lane input port the conv's): one converter, at the output
    assert [(s.schedule.main.lanes_in, s.schedule.main.lanes_out) for s in wide.stages if s.kind == "convert"] == [
        (8, 4)]
    assert stages["conv"].cycles == 64 + 1  # its 8 x 8 pushes, then the last window's one emit
    # the grouped conv: 5 x 5 pushes, 9 windows of 6 folds each; the slowest stage, 5.7x faster than unfolded
    assert wide.cycles == stages["gconv"].cycles == 67 and narrow.cycles == 384


@pytest.mark.parametrize("fold, message", [
    ({"pe": (("conv", 3),)}, "stage 's0_conv2d_bias_add_relu': pe 3 does not divide the innermost dimension"),
    ({"lanes": (("conv", 3),)}, "stage 's0_conv2d_bias_add_relu': lanes 3 does not divide the innermost dimension"),
    ({"pe": (("r", 2), ("conv", 4))}, "fold: stage 's0_conv2d_bias_add_relu' is given pe 2 and 4"),
    ({"simd": (("pool", 2),)}, r"stage 's1_max_pool2d' \(of 'pool'\) is a window stage; simd is for conv2d"),
])
def test_bad_window_folds_are_one_line_errors(fold, message):
    with pytest.raises(HlsfuseError, match=message):
        plan(convs(), **fold)


@pytest.mark.gxx
def test_wide_window_stages_are_bit_exact_in_csim(tmp_path):
    g = convs()
    design = compile(g, CompileOptions(fold=WIDE))
    cpp = design.files["hls/pe.cpp"]
    assert "type=cyclic factor=8 dim=2" in cpp and "hlsf::line_buffer<t_x, 4, 8, 3, 3, 1, 1, 4>" in cpp
    result = csim(write_tree(tmp_path / "out", design.files), graph=g)
    assert result.passed, result.report()


@pytest.mark.verilator
def test_wide_window_stages_run_at_their_predicted_rate_in_rtlsim(tmp_path):
    g = convs()
    p = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=WIDE))
    result = simulate(g, tmp_path, frames=4, driver="native", plan=p)
    assert result.passed, result.report()
    assert result.frame_cycles == p.cycles == 67
    assert lint(tmp_path) == ""  # PE = Cout leaves the emit counter at 0: no unused bits either


@pytest.mark.verilator
def test_a_pe_as_wide_as_a_tiny_conv_leaves_no_unused_bits(tmp_path):
    # reproducer of a random rtlsim batch (seed 3136534100): Cout = PE = 2 and a 1-bit weight index; the lane's
    # channel was a 2-bit wire (wide enough for the literal PE) of which the index read one bit
    b = GraphBuilder("tiny", dtype="fixed<8,3>")
    x = b.input("x", [1, 2, 2, 1])
    b.output(b.conv2d(x, b.constant("w", np.array([0.5, -1.0]).reshape(1, 1, 1, 2), dtype="fixed<8,3>"), name="c"))
    g = b.build()
    result = simulate(g, tmp_path, frames=2, plan=plan(g, pe=(("c", 2),)))
    assert result.passed, result.report()
    assert lint(tmp_path) == ""
