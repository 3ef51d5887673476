"""Lanes: wide tokens on map, fork, window and rows stages (input lanes, PE), width converters and wide ports
(docs/folding.md section 5).

The lowering's facts (tokens, converters, rates, banks, FIFO widths, fold.json) are checked here
without a compiler; csim and both rtlsim drivers check the same designs bit for bit and cycle for
cycle, including a map stage of L lanes running at elements / L cycles per frame. The designs each tool
checks sit side by side in one build (tests/union.py): one C simulation under both header sets, one model
of the native rtlsim driver, whose designs are fed by ports of their own (so each runs at its own rate), and
one of the pyverilator driver.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hls_support import csim_both, write_union
from own_graphs import lanes_small, own_stages
from rtl_design import lint, simulate_union

from hlsfuse import GraphBuilder
from hlsfuse.boards import family_of
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.errors import HlsfuseError
from hlsfuse.fusion import fuse
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.area import design_area
from hlsfuse.lower.elements import Operand, Program, Step, tokens
from hlsfuse.lower.engine import Streamed
from hlsfuse.lower.fold import fold_json, read_fold
from hlsfuse.lower.report import stage_table


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
    areas, fifos, _ = design_area(g, wide, family_of("xczu7ev").dsp_slice)
    narrow_areas, narrow_fifos, _ = design_area(g, unfolded, family_of("xczu7ev").dsp_slice)
    assert fifos.lutram_bits == 4 * narrow_fifos.lutram_bits  # same depths, four times as wide
    mul = next(s.name for s in wide.stages if s.sink == "c")
    assert areas[mul].lut - narrow_areas[next(s.name for s in unfolded.stages if s.sink == "c")].lut == 3 * 16


@pytest.mark.parametrize("fold, message", [
    ({"lanes": (("a", 5),)}, "stage 's0_bias_add_relu': lanes 5 does not divide the innermost dimension"),
    ({"lanes": (("a", 0),)}, "lanes must be a positive integer, not 0"),
    ({"ports": (("nope", 2),)}, "port lanes: 'nope' is not a graph input or output"),
    ({"ports": (("x", 5),)}, "port 'x': lanes 5 does not divide the innermost dimension"),
])
def test_bad_lanes_are_one_line_errors(fold, message):
    with pytest.raises(HlsfuseError, match=message):
        plan(chain(), **fold)


def test_a_port_wider_than_port_bits_is_a_one_line_error():
    plan(chain(64), port_lanes=64)  # 64 x 16 = 1024 bits: the widest TDATA
    with pytest.raises(HlsfuseError, match=r"^port 'x': 72 lanes of fixed<16,6> do not fit a TDATA of at most 1024 "
                                           r"bits of fixed-point elements$"):
        plan(chain(72), port_lanes=72)


def test_lanes_and_pe_on_stages_that_have_none_are_refused():
    b = GraphBuilder("own", dtype="fixed<8,3>")
    b.output(b.argmax(b.input("x", [1, 4, 4]), name="am"))
    with pytest.raises(HlsfuseError, match="is a own stage; pe is for window and rows stages"):
        plan(b.build(), pe=(("am", 2),))
    with pytest.raises(HlsfuseError, match="a argmax stage cannot take lanes 3: its input's innermost dimension 4 "
                                           "is not a multiple of 3"):
        plan(b.build(), lanes=(("am", 3),))
    with pytest.raises(HlsfuseError, match="is a map stage; pe is for window and rows stages"):
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
def test_wide_designs_are_bit_exact_in_csim(fold, csim_shared):
    g = chain()
    design = compile(g, CompileOptions(fold=fold))
    cpp = design.files["hls/lanes.cpp"]
    assert "hls::stream<hlsf::lanes<t_a, 4>>" in cpp or "hls::stream<hlsf::lanes<t_a, 3>>" in cpp
    assert "#pragma HLS UNROLL" in cpp
    _in_csim(csim_shared, g, fold)


MAP_LANES = [1, 2, 4, 12]


def map_lanes_fold(lanes: int) -> Folding:
    return Folding(lanes=(("a", lanes), ("b", lanes), ("c", lanes)), port_lanes=min(lanes, 4))


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", MAP_LANES)
def test_a_map_stage_of_l_lanes_runs_at_elements_over_l_cycles_in_rtlsim(lanes, rtl_shared):
    g = chain()
    part = _in_rtlsim(rtl_shared, g, map_lanes_fold(lanes))
    elements = g.types["a"].size
    for s in part.stages:
        if s.kind == "map":
            assert s.cycles == elements // lanes
            assert part.counts[s.name].busy == 4 * elements // lanes  # every iteration fired once per frame, 4 frames
    assert part.frame_cycles == elements // min(lanes, 4)  # the ports' transfers bound the design


GEARBOXES = {"4to6": (4, 6, 2), "6to4": (6, 4, 6), "2to3to12": (2, 3, 12)}


def gearbox_fold(lanes) -> Folding:
    return Folding(lanes=tuple(zip("abc", lanes)), port_lanes=2)


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", GEARBOXES.values(), ids=GEARBOXES.keys())
def test_gearbox_converters_between_lanes_neither_dividing_the_other_run_as_modelled(lanes, rtl_shared):
    g = chain()
    p = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=gearbox_fold(lanes)))
    a, b = lanes[:2]
    assert any(s.kind == "convert" and (s.schedule.main.lanes_in, s.schedule.main.lanes_out) == (a, b)
               for s in p.stages)
    _in_rtlsim(rtl_shared, g, gearbox_fold(lanes))  # bit-exact and cycle-exact vs the model


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_wide_ports_and_converters_are_bit_exact_in_the_pyverilator_driver(pyverilator_shared):
    _in_rtlsim(pyverilator_shared, chain(), FOLDS[2])


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
    table = stage_table(wide, design_area(g, wide, family_of("xczu7ev").dsp_slice)[0])
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
def test_wide_window_stages_are_bit_exact_in_csim(csim_shared):
    g = convs()
    design = compile(g, CompileOptions(fold=WIDE))
    cpp = design.files["hls/pe.cpp"]
    assert "type=cyclic factor=8 dim=2" in cpp and "hlsf::line_buffer<t_x, 4, 8, 3, 3, 1, 1, 4>" in cpp
    _in_csim(csim_shared, g, WIDE)


@pytest.mark.verilator
def test_wide_window_stages_run_at_their_predicted_rate_in_rtlsim(rtl_shared):
    part = _in_rtlsim(rtl_shared, convs(), WIDE)
    assert part.frame_cycles == part.plan.cycles == 67
    assert rtl_shared[1] == ""  # PE = Cout leaves the emit counter at 0: no unused bits either (the shared lint)


def tiny():
    # reproducer of a random rtlsim batch (seed 3136534100): Cout = PE = 2 and a 1-bit weight index; the lane's
    # channel was a 2-bit wire (wide enough for the literal PE) of which the index read one bit
    b = GraphBuilder("tiny", dtype="fixed<8,3>")
    x = b.input("x", [1, 2, 2, 1])
    b.output(b.conv2d(x, b.constant("w", np.array([0.5, -1.0]).reshape(1, 1, 1, 2), dtype="fixed<8,3>"), name="c"))
    return b.build()


TINY_PE = Folding(pe=(("c", 2),))


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_a_pe_as_wide_as_a_tiny_conv_leaves_no_unused_bits(pyverilator_shared):
    _in_rtlsim(pyverilator_shared, tiny(), TINY_PE)
    assert pyverilator_shared[1] == ""  # the shared design's lint


# ------------------------------------------------------------------ rows stages: input lanes and PE


def one_row():
    """x [1, 64] -> dense to 10 + bias + relu: one row per frame (a folded one is streamed)."""
    rng = np.random.default_rng(11)
    b = GraphBuilder("row", dtype="fixed<16,6>")
    x = b.input("x", [1, 64])
    d = b.dense(x, b.constant("w", rng.uniform(-1, 1, [10, 64]), dtype="fixed<8,2>"), name="fc")
    b.output(b.relu(b.bias_add(d, b.constant("bias", rng.uniform(-1, 1, 10), dtype="fixed<8,2>")), name="r"))
    return b.build()


def rows():
    """x [8, 16] -> dense to 12 + a streamed residual (eight rows: the snapshot's push/emit loop)."""
    rng = np.random.default_rng(12)
    b = GraphBuilder("rows", dtype="fixed<16,6>")
    x = b.input("x", [8, 16])
    d = b.dense(x, b.constant("w", rng.uniform(-1, 1, [12, 16]), dtype="fixed<8,2>"), name="fc")
    b.output(b.add(d, b.input("res", [8, 12]), name="y"))
    return b.build()


def batched():
    """a [2, 2, 3, 8] @ b [2, 1, 8, 6]: b broadcast over the second batch dim, then relu."""
    rng = np.random.default_rng(13)
    b = GraphBuilder("mm", dtype="fixed<16,6>")
    a = b.input("a", [2, 2, 3, 8])
    m = b.matmul(a, b.constant("bm", rng.uniform(-1, 1, [2, 1, 8, 6]), dtype="fixed<8,2>"), name="mm")
    b.output(b.relu(m, name="r"))
    return b.build()


def _rows_fold(head: str, lanes: int, pe: int, simd: int, **ports) -> Folding:
    return Folding(simd=((head, simd),), lanes=((head, lanes),), pe=((head, pe),), **ports)


def _streamed_by_hand(k: int, n: int, lanes: int, pe: int, simd: int) -> tuple[list[int], int]:
    """The iterations of a streamed row's emits and its iterations per frame, stepped one iteration at a time:
    a push of ``lanes`` elements per iteration; fold f of the next output token once (f + 1) x simd elements
    were pushed in earlier iterations."""
    pushed, emits, t = 0, [], 0
    folds, tokens = k // simd, n // pe
    while pushed < k or len(emits) < folds * tokens:
        if len(emits) < folds * tokens and pushed >= (len(emits) // tokens + 1) * simd:
            emits.append(t)
        pushed = min(k, pushed + lanes)
        t += 1
    return emits, t


@pytest.mark.parametrize("lanes, pe, simd, cycles", [
    (1, 1, 8, 8 + 80),  # only the first fold waits: SIMD + N x FOLDS
    (4, 2, 16, 4 + 20),  # fold f needs push 4 (f + 1) - 1; 5 tokens per fold: only the first waits
    (2, 5, 16, 34),  # 2 tokens per fold < 8 pushes per fold: every fold waits, the last for push 31
    (64, 10, 8, 1 + 8),  # the row in one push, one token per fold
    (8, 1, 64, 8 + 10),  # unfolded: the snapshot, emitted in the iterations after the row's 8 pushes
    (64, 10, 64, 2),  # L = K, P = N, SIMD = K: one push, one emit
])
def test_a_rows_stage_pushes_k_over_l_tokens_and_emits_n_over_p_per_fold(lanes, pe, simd, cycles):
    g = one_row()
    p = plan(g, **_rows_fold("fc", lanes, pe, simd).__dict__)
    (stage,) = [s for s in p.stages if s.kind == "rows"]
    main = stage.schedule.main
    assert (main.lanes_in, main.pe, main.lanes_out, main.simd) == (lanes, pe, pe, simd)
    assert stage.schedule.multipliers == pe * simd and stage.schedule.macs == 640
    assert stage.cycles == cycles
    reads, writes = stage.schedule.io[stage.inputs[0]], stage.schedule.io[stage.outputs[0]]
    assert len(reads) == 64 // lanes and len(writes) == 10 // pe
    if main.streamed:
        emits, total = _streamed_by_hand(64, 10, lanes, pe, simd)
        assert list(main.engine.timing[1]) == emits and total == cycles
    # the PE lanes of an emit read their own bank of w's rows, the SIMD lanes their own bank of each row
    w = stage.schedule.buffer("w")
    assert w.parts == pe * simd
    if pe > 1:
        assert (w.banks, w.banking, w.columns, w.column_banks) == (pe, "cyclic", 64, simd)
    # the epilogue runs once per PE lane: the bias is read at consecutive elements, one bank per lane
    assert stage.schedule.buffer("bias").banks == pe
    converters = sorted((s.schedule.main.lanes_in, s.schedule.main.lanes_out) for s in p.stages if s.kind == "convert")
    assert converters == sorted(c for c in [(1, lanes), (pe, 1)] if c[0] != c[1])


def test_the_streamed_timing_is_the_step_by_step_one_for_every_factor():
    for lanes, pe, simd in itertools.product([1, 2, 4, 8, 16, 64], [1, 2, 5, 10], [1, 2, 4, 16, 32]):
        main = Streamed(64 // lanes, 10 // pe, 64 // simd, simd, lanes)
        emits, total = _streamed_by_hand(64, 10, lanes, pe, simd)
        assert (list(main.timing[1]), main.iterations) == (emits, total), (lanes, pe, simd)


def test_several_rows_and_batched_matmuls_push_k_over_l_and_emit_n_over_p_folds():
    g = rows()
    (stage,) = [s for s in plan(g, **_rows_fold("fc", 4, 3, 4).__dict__).stages if s.kind == "rows"]
    engine = stage.schedule.main.engine
    assert not stage.schedule.main.streamed and (engine.pushes, engine.emits, engine.folds) == (8 * 4, 4 * 4, 4)
    assert list(engine.completes) == [3 + 4 * r for r in range(8)]
    # row r completes once the row before has emitted its 16 iterations: at 3 + 16 r, then emits 16 more
    assert stage.cycles == 3 + 16 * 7 + 16 + 1
    assert len(stage.schedule.io[stage.outputs[0]]) == 8 * 12 // 3
    assert stage.schedule.multipliers == 12
    res = next(c for c, use in zip(stage.inputs, stage.uses) if use == "post")
    assert len(stage.schedule.io[res]) == 8 * 12 // 3  # the residual comes in tokens of PE
    g = batched()
    (stage,) = [s for s in plan(g, **_rows_fold("mm", 2, 6, 2).__dict__).stages if s.kind == "rows"]
    main = stage.schedule.main
    assert (main.batches, main.rows, main.engine.pushes, main.engine.emits) == (4, 3, 12 * 4, 1 * 4)
    assert stage.cycles == 3 + 4 * 11 + 4 + 1 and stage.schedule.multipliers == 12
    assert main.offsets == (0, 0, 48, 48) and main.base_rows == (0, 0, 8, 8)
    b = stage.schedule.buffer("bm")  # rows j of the batches of b in blocks of SIMD, its columns cyclic PE
    assert (b.banks, b.banking, b.columns, b.column_banks, b.parts) == (4, "block", 6, 6, 24)


@pytest.mark.parametrize("fold, message", [
    ({"pe": (("fc", 4),)}, "stage 's0_dense_bias_add_relu': pe 4 does not divide the innermost dimension"),
    ({"lanes": (("fc", 3),)}, "stage 's0_dense_bias_add_relu': lanes 3 does not divide the innermost dimension"),
    ({"lanes": (("r", 2), ("fc", 4))}, "fold: stage 's0_dense_bias_add_relu' is given lanes 2 and 4"),
])
def test_bad_rows_folds_are_one_line_errors(fold, message):
    with pytest.raises(HlsfuseError, match=message):
        plan(one_row(), **fold)


def test_pe_over_weights_computed_by_another_stage_is_refused():
    b = GraphBuilder("held", dtype="fixed<8,3>")
    b.output(b.matmul(b.input("a", [3, 4]), b.input("bb", [4, 6]), name="mm"))
    g = b.build()
    assert plan(g, lanes=(("mm", 4),)).cycles > 0  # input lanes read the row, not the weights
    with pytest.raises(HlsfuseError, match="fold: stage 's0_matmul': pe needs constant matmul weights, and 'bb' is "
                                           "computed by another stage"):
        plan(g, pe=(("mm", 2),))


def test_fold_json_and_the_stage_table_list_a_rows_stages_lanes_and_pe():
    g = one_row()
    p = plan(g, **_rows_fold("fc", 4, 2, 16).__dict__)
    entry = fold_json(g, p)["fold"]["fc"]
    assert {k: entry[k] for k in ("lanes", "k", "pe", "n", "simd", "products", "cycles")} == {
        "lanes": 4, "k": 64, "pe": 2, "n": 10, "simd": 16, "products": 64, "cycles": 24}
    assert "simd 16/64 lanes 4 pe 2" in stage_table(p, design_area(g, p, family_of("xczu7ev").dsp_slice)[0])


ROWS_FOLDS = [
    (one_row, _rows_fold("fc", 4, 2, 16, ports=(("x", 4), ("r", 2)))),  # streamed, no converter
    (one_row, _rows_fold("fc", 64, 10, 64)),  # L = K, P = N, SIMD = K: the snapshot, one push and one emit
    (one_row, _rows_fold("fc", 64, 10, 8)),  # streamed, one output token per fold
    (rows, _rows_fold("fc", 4, 3, 4, port_lanes=4)),  # the snapshot, folded, a residual in tokens of 3
    (rows, _rows_fold("fc", 16, 12, 16)),
    (batched, _rows_fold("mm", 2, 6, 2, port_lanes=2)),  # matmul, b broadcast, folded
    (batched, _rows_fold("mm", 8, 2, 8)),
]
ROWS_IDS = ["streamed", "whole", "streamed-pe-n", "rows-folded", "rows-whole", "matmul-folded", "matmul"]


@pytest.mark.gxx
@pytest.mark.parametrize("graph, fold", ROWS_FOLDS, ids=ROWS_IDS)
def test_wide_rows_stages_are_bit_exact_in_csim(graph, fold, csim_shared):
    g = graph()
    design = compile(g, CompileOptions(fold=fold))
    cpp = design.files[f"hls/{g.name}.cpp"]
    pe = fold.pe[0][1]
    assert f"hls::stream<hlsf::lanes<t_x, {fold.lanes[0][1]}>>" in cpp or g.name == "mm"
    assert f"for (int l = 0; l < {pe}; l++)" in cpp and f"type=cyclic factor={pe} dim=" in cpp
    _in_csim(csim_shared, g, fold)


@pytest.mark.verilator
@pytest.mark.parametrize("graph, fold", ROWS_FOLDS, ids=ROWS_IDS)
def test_wide_rows_stages_run_at_their_predicted_rate_in_rtlsim(graph, fold, rtl_shared):
    part = _in_rtlsim(rtl_shared, graph(), fold)  # bit-exact and cycle-exact vs the model
    assert part.frame_cycles == part.plan.cycles
    assert rtl_shared[1] == ""


# ------------------------------------------------------------------ the shared builds


def _designs(*kinds: str) -> list[tuple]:
    """(graph, folding) of the designs the tests above simulate with a tool: "csim", "native" or "pyverilator"."""
    found = []
    if "csim" in kinds:
        found += [(chain(), fold) for fold in FOLDS] + [(convs(), WIDE)]
        found += [(graph(), fold) for graph, fold in ROWS_FOLDS]
    if "native" in kinds:
        found += [(chain(), map_lanes_fold(lanes)) for lanes in MAP_LANES]
        found += [(chain(), gearbox_fold(lanes)) for lanes in GEARBOXES.values()]
        found += [(convs(), WIDE)] + [(graph(), fold) for graph, fold in ROWS_FOLDS]
    if "pyverilator" in kinds:
        found += [(chain(), FOLDS[2]), (tiny(), TINY_PE)]
    return found


@pytest.fixture(scope="module")
def csim_shared(tmp_path_factory):
    """The csim designs in one project, simulated under both header sets: (their (graph, folding) list, the result)."""
    designs = _designs("csim")
    graph, out = write_union([g for g, _ in designs], tmp_path_factory.mktemp("csim"), [f for _, f in designs],
                             name="lanes")
    return designs, csim_both(out, graph=graph)


def _shared_rtlsim(tmp_path_factory, driver: str, frames: int):
    designs = _designs(driver)
    folder = tmp_path_factory.mktemp(driver)
    run = simulate_union([g for g, _ in designs], folder, frames=frames, driver=driver, folds=[f for _, f in designs],
                         name="lanes")
    return designs, lint(folder), run


@pytest.fixture(scope="module")
def rtl_shared(tmp_path_factory):
    """The designs of the native driver in one, simulated for 4 frames: (their (graph, folding) list, the lint, the
    SharedRun)."""
    return _shared_rtlsim(tmp_path_factory, "native", 4)


@pytest.fixture(scope="module")
def pyverilator_shared(tmp_path_factory):
    """The designs of the pyverilator driver in one, simulated for 2 frames: the same three."""
    return _shared_rtlsim(tmp_path_factory, "pyverilator", 2)


def _index(designs, graph, fold) -> int:
    """Where the design of ``graph`` folded as ``fold`` is in ``designs``."""
    (k,) = [k for k, (g, f) in enumerate(designs) if g.name == graph.name and f == fold]
    return k


def _in_csim(shared, graph, fold) -> None:
    """The design is in the shared C simulation, which is bit-exact under both header sets."""
    designs, result = shared
    _index(designs, graph, fold)
    assert result.passed, result.report()


def _in_rtlsim(shared, graph, fold):
    """The design's part of the shared RTL run, which is bit-exact and the timing model's, cycle for cycle."""
    designs, _, run = shared
    part = run.parts[_index(designs, graph, fold)]
    assert run.result.passed, run.result.report()
    return part


def test_a_one_token_frame_in_the_shallowest_fifo_is_no_note(capsys, tmp_path):
    # the MLP folded for 200 DSPs reads its rows in one token each: FIFOs of 2 (the shallowest) hold 2 frames
    mlp = Path(__file__).resolve().parents[1] / "examples" / "mlp.json"
    assert main(["compile", str(mlp), "-o", str(tmp_path / "o"), "--dsp", "200"]) == 0
    printed = capsys.readouterr().out
    assert "(2 lanes)" in printed and "note:" not in printed


# --------------------------------------------------------------------------
# Own stages
# --------------------------------------------------------------------------


def test_own_stages_of_l_lanes_count_tokens():
    graph = lanes_small()
    heads = ("pad", "cat", "tr", "sm", "last", "outer", "tk", "sl")
    one = own_stages(plan(graph))
    four = own_stages(plan(graph, lanes=tuple((h, 4) for h in heads)))
    # pad: 2 x 4 x 16 out / 4; concat: 2 x 3 x 12 / 4; transpose: 48 / 4 read, then written; softmax: 6 rows of
    # 8 / 4 tokens, 3 phases; argmax over the innermost axis: 6 rows of 2 tokens + 1 index; over axis 1: 2 x (3 x 8
    # read + 8 written) / 4; topk: 6 rows of 2 tokens + 2 writes; slice: the 48 / 4 input tokens
    assert {h: s.cycles for h, s in four.items()} == {"pad": 32, "cat": 18, "tr": 24, "sm": 36, "last": 18,
                                                     "outer": 16, "tk": 24, "sl": 12}
    assert {h: s.cycles for h, s in one.items()} == {"pad": 128, "cat": 72, "tr": 96, "sm": 144, "last": 54,
                                                    "outer": 64, "tk": 60, "sl": 48}
    assert [four[h].schedule.main.lanes_out for h in heads] == [4, 4, 4, 4, 1, 4, 1, 4]


@pytest.mark.parametrize("build, lanes, message", [
    (lambda b, x: b.pad(x, pads=[0, 0, 1, 0, 0, 1], name="n"), 2,
     "its padding before the innermost axis (1) is not a multiple of 2"),
    (lambda b, x: b.slice(x, begin=[0, 0, 0], end=[2, 3, 8], step=[1, 1, 2], name="n"), 2,
     "it slices the innermost axis from 0 by 2"),
    (lambda b, x: b.transpose(x, axes=[0, 2, 1], name="n"), 2, "it moves the innermost axis"),
    (lambda b, x: b.concat(x, b.constant("c", np.ones((2, 3, 3))), axis=2, name="n"), 2,
     "its output's innermost dimension 11 is not a multiple of 2"),
    (lambda b, x: b.argmax(x, axis=1, name="n"), 3, "its input's innermost dimension 8 is not a multiple of 3"),
])
def test_own_stages_refuse_lanes_their_op_cannot_take(build, lanes, message):
    b = GraphBuilder("own", dtype="fixed<16,6>")
    b.output(build(b, b.input("x", [2, 3, 8])))
    refused = f"stage 's0_.*': a .* stage cannot take lanes {lanes}: {re.escape(message)}"
    with pytest.raises(HlsfuseError, match=refused):
        plan(b.build(), lanes=(("n", lanes),))
    b = GraphBuilder("own", dtype="float32")
    b.output(b.softmax(b.input("x", [2, 8]), name="n"))
    with pytest.raises(HlsfuseError, match="a float32 softmax sums its row one element at a time"):
        plan(b.build(), lanes=(("n", 2),))


def test_the_solver_gives_own_stages_lanes():
    graph = lanes_small()
    fusion = fuse(graph, mode="fpga")
    from hlsfuse.lower.fold import Budget, fit, space
    folded = fit(space(graph, fusion, LowerOptions(), family_of("xczu7ev-ffvc1156-2-e").dsp_slice), Budget(dsp=100))
    lanes = {s.head: s.schedule.main.lanes_in for s in folded.stages if s.kind == "own"}
    assert all(v > 1 for v in lanes.values()), lanes
    assert fold_json(graph, folded)["fold"]["pad"]["lanes"] == lanes["pad"]
