"""Folding: SIMD per MAC stage in the schedule, the resource model's rules, the solver, fold.json and the CLI.

The solver's answers are checked against brute force over every combination of divisors on small
graphs; folded designs run bit-exact and cycle-exact in C simulation and Verilator.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from hls_support import csim_both, write_union
from rtl_design import DRIVER, DRIVER_MARK, lint, plan_of, simulate

import hlsfuse
from hlsfuse import GraphBuilder, HlsfuseError
from hlsfuse.boards import BOARDS, DSP48E1, DSP48E2, Target, family_of
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile, plan_design
from hlsfuse.fusion import fuse
from hlsfuse.lower import Folding, LowerOptions, lower, refold
from hlsfuse.lower.area import (
    CONTROL_LUT,
    LUTRAM_BITS,
    SRL_DEPTH,
    bram18,
    buffer_area,
    design_area,
    dsp_per_product,
    fifo_storage,
    memory_area,
    stage_area,
)
from hlsfuse.lower.fold import (
    FOLDABLE,
    Budget,
    Choice,
    _divisors,
    _knapsack,
    _structure,
    choice_area,
    choices,
    fit,
    read_fold,
    solve,
    space,
)
from hlsfuse.lower.stage_convert import ConvertMain
from hlsfuse.types import parse_dtype

F = "fixed<16,6>"
W = "fixed<8,1>"


def small_net(name: str = "net"):
    """conv (grouped, strided, padded) -> relu -> conv 1x1 -> reshape -> dense -> matmul: four MAC stages."""
    rng = np.random.default_rng(7)
    b = GraphBuilder(name, dtype=F)
    x = b.input("x", [1, 6, 6, 4])
    w1 = b.constant("w1", rng.normal(size=(3, 3, 2, 6)) * 0.3, dtype=W)
    y = b.relu(b.conv2d(x, w1, padding=[1, 1, 1, 1], groups=2, strides=[1, 2], name="conv"))
    w2 = b.constant("w2", rng.normal(size=(1, 1, 6, 4)) * 0.3, dtype=W)
    y = b.conv2d(y, w2, name="pw")
    y = b.reshape(y, [6, 12], name="flat")
    w3 = b.constant("w3", rng.normal(size=(5, 12)) * 0.3, dtype=W)
    d = b.dense(y, w3, name="fc")
    w4 = b.constant("w4", rng.normal(size=(5, 4)) * 0.3, dtype=W)
    b.output(b.matmul(d, w4, name="mm"))
    return b.build()


def mlp(name: str = "mlp"):
    """Two dense layers of one row per frame (their folded schedule streams the row, ``Streamed``)."""
    rng = np.random.default_rng(5)
    b = GraphBuilder(name, dtype=F)
    x = b.input("x", [1, 12])
    h = b.relu(b.dense(x, b.constant("w1", rng.normal(size=(10, 12)) * 0.3, dtype=W), name="l1"))
    b.output(b.dense(h, b.constant("w2", rng.normal(size=(3, 10)) * 0.3, dtype=W), name="l2"))
    return b.build()


def attention_like():
    """A matmul whose b is computed (held), after two dense projections."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("att", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [6, 8])
    q = b.dense(x, b.constant("wq", rng.normal(size=(4, 8)) * 0.3, dtype=W), name="q")
    k = b.dense(x, b.constant("wk", rng.normal(size=(4, 8)) * 0.3, dtype=W), name="k")
    b.output(b.matmul(q, b.transpose(k, name="kt"), name="scores"))
    return b.build()


def dscnn():
    """A keyword-spotting DS-CNN like MLPerf Tiny's: a 10x4 stride-2 conv, four depthwise 3x3 + pointwise 1x1
    blocks of 64 channels, global average pool, dense to 12 classes."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("dscnn", dtype="fixed<16,6,RND,SAT>")
    wt = "fixed<8,1,RND,SAT>"
    c = 64
    h = b.input("x", [1, 49, 10, 1])
    h = b.relu(b.conv2d(h, b.constant("w0", rng.normal(size=(10, 4, 1, c)) * 0.2, dtype=wt), strides=[2, 2],
                        padding=[4, 1, 5, 2], name="conv0"))
    for i in range(4):
        h = b.relu(b.conv2d(h, b.constant(f"wd{i}", rng.normal(size=(3, 3, 1, c)) * 0.3, dtype=wt),
                            padding=[1, 1, 1, 1], groups=c, name=f"dw{i}"))
        h = b.relu(b.conv2d(h, b.constant(f"wp{i}", rng.normal(size=(1, 1, c, c)) * 0.1, dtype=wt), name=f"pw{i}"))
    h = b.flatten(b.global_avg_pool(h))
    b.output(b.dense(h, b.constant("wfc", rng.normal(size=(12, c)) * 0.2, dtype=wt), name="fc"))
    return b.build()


def _plan(graph, fold=()):
    return lower(graph, hlsfuse.fuse(graph), LowerOptions(fold=Folding(simd=fold)))


# --------------------------------------------------------------------------
# The schedule
# --------------------------------------------------------------------------


def test_a_folded_stage_takes_folds_iterations_per_output():
    graph = small_net()
    full, folded = _plan(graph), _plan(graph, (("conv", 2), ("fc", 3)))
    conv = next(s for s in folded.stages if s.head == "conv")
    main = conv.schedule.main
    assert (main.products, main.simd, main.folds) == (18, 2, 9) and conv.schedule.multipliers == 2
    outputs = 6 * 3 * 6  # OH x OW x Cout
    writes = conv.schedule.io[conv.outputs[0]]
    assert len(writes) == outputs and np.all(np.diff(writes) >= 9)  # one output per 9 iterations at most
    assert conv.cycles >= outputs * 9 > next(s for s in full.stages if s.head == "conv").cycles
    fc = next(s for s in folded.stages if s.head == "fc")
    assert (fc.schedule.main.folds, fc.schedule.multipliers, fc.schedule.macs) == (4, 3, 6 * 5 * 12)
    # the lanes of a fold read different banks: conv2d and matmul stride, dense runs consecutively
    assert [main.product(1, s) for s in range(2)] == [1, 10]
    assert [fc.schedule.main.product(1, s) for s in range(3)] == [3, 4, 5]
    rom = conv.schedule.buffer("w1")
    assert (rom.banks, rom.banking, rom.rom) == (2, "block", True)
    assert fc.schedule.buffer("w3").banking == "cyclic"


def test_a_folded_row_of_its_own_is_emitted_while_it_is_read():
    plan = _plan(mlp(), (("l1", 3), ("l2", 5)))
    l1, l2 = (next(s for s in plan.stages if s.head == h) for h in ("l1", "l2"))
    assert l1.schedule.main.streamed and l2.schedule.main.streamed
    # l1: fold f of its 10 outputs needs 3(f+1) elements pushed; 10 >= 3, so only the first fold waits: 3 + 40
    assert l1.cycles == 3 + 10 * 4
    # l2: 3 outputs per fold < 5 elements per fold, so each fold waits for its elements: fold 1 for element 9
    push, emit, total = l2.schedule.main.engine.timing
    assert list(emit) == [5, 6, 7, 10, 11, 12] and total == 13
    assert list(l2.schedule.io[l2.outputs[0]]) == [10, 11, 12]  # written in the last fold
    assert l1.schedule.buffer("accumulators").elements == 10
    assert not _plan(mlp(), (("l1", 12),)).stages[0].schedule.main.streamed  # unfolded: from a snapshot


def test_folding_names_a_divisor_of_a_mac_stage():
    graph = small_net()
    with pytest.raises(HlsfuseError, match=r"node 'conv' \(conv2d\).*simd must be a divisor of its 18 products"):
        _plan(graph, (("conv", 4),))
    with pytest.raises(HlsfuseError, match="fold: 'nope' is neither a stage nor a node of graph 'net'"):
        _plan(graph, (("nope", 1),))
    with pytest.raises(HlsfuseError, match="simd is for conv2d, dense or matmul stages"):
        _plan(graph, (("flat", 1),))
    stage = next(s.name for s in _plan(graph).stages if s.head == "fc")
    with pytest.raises(HlsfuseError, match=f"stage '{stage}' is given simd 2 and 3"):
        _plan(graph, (("fc", 2), (stage, 3)))


# --------------------------------------------------------------------------
# The resource model
# --------------------------------------------------------------------------


def test_dsp_rules_by_operand_widths():
    t = parse_dtype
    assert dsp_per_product(t("fixed<16,6>"), t("fixed<8,1>"), DSP48E1) == 1
    assert dsp_per_product(t("fixed<25,6>"), t("fixed<18,1>"), DSP48E1) == 1
    assert dsp_per_product(t("ufixed<25,6>"), t("fixed<18,1>"), DSP48E1) == 2  # 26 signed bits > 25
    assert dsp_per_product(t("ufixed<25,6>"), t("fixed<18,1>"), DSP48E2) == 1
    assert dsp_per_product(t("fixed<32,16>"), t("fixed<32,16>"), DSP48E2) == 4  # 2 x 2 tiles
    assert dsp_per_product(t("fixed<16,6>"), t("fixed<4,1>"), DSP48E2) == 0  # narrow: LUTs
    assert dsp_per_product(t("float32"), t("float32"), DSP48E2) == 14
    assert family_of("xc7z020clg400-1").dsp_slice is DSP48E1
    assert family_of("xcu250-figd2104-2L-e").dsp_slice is DSP48E2
    with pytest.raises(HlsfuseError, match="part 'ep4ce22'"):
        family_of("ep4ce22")


def test_memory_rules():
    assert bram18(1024, 18) == 1 and bram18(2048, 8) == 1 and bram18(4096, 8) == 2 and bram18(512, 72) == 2
    assert bram18(100, 16) == 1 and bram18(20000, 1) == 2
    small = memory_area(4, 32, 16)  # 512 bits per bank: LUTRAM
    assert (small.bram18, small.lutram_bits, small.lut) == (0, 4 * 512, 4 * 16)
    assert LUTRAM_BITS == 1024 and memory_area(2, 64, 16).bram18 == 2


def test_a_line_buffer_is_a_memory_per_stored_row_and_lane():
    graph = small_net()
    plan = lower(graph, hlsfuse.fuse(graph), LowerOptions(fold=Folding(lanes=(("conv", 4),))))
    conv = next(s for s in plan.stages if s.head == "conv")
    buf = next(b for b in conv.schedule.buffers if b.name == "line buffer")
    g = conv.schedule.main.geometry
    assert (g.span_h, g.lanes) == (3, 4) and buf.banks == 2 * 4  # linebuffer.h: rows complete, channels cyclic L
    assert buffer_area(buf) == memory_area(8, g.wp * 4 // 4, buf.width)  # one element per bank and row position


def test_a_converter_costs_a_multiplexer_per_bit_by_its_sources():
    widen = ConvertMain(48, 1, 16, "r", "w")  # element p: kept, or the token's one lane when the fill is p
    assert (widen.kept, widen.span, widen.sources()) == (15, 16, (2,) * 15 + (1,))
    gearbox = ConvertMain(48, 4, 6, "r", "w")  # fills 0, 2, 4: element 2 takes lane 2 (fill 0), lane 0 (fill 2)
    assert (gearbox.kept, gearbox.span, gearbox.sources()) == (4, 8, (2, 2, 3, 3, 2, 2, 1, 1))
    graph = small_net()
    plan = lower(graph, hlsfuse.fuse(graph), LowerOptions(fold=Folding(lanes=(("conv", 4),))))
    areas = design_area(graph, plan, DSP48E2)[0]
    conv = next(s for s in plan.stages if s.kind == "convert" and s.schedule.main.lanes_in == 1)
    main, bits = conv.schedule.main, graph.types[conv.sink].dtype.bits
    muxes = sum(math.ceil(n / 4) for n in main.sources() if n > 1) + main.kept  # 1 -> 4: 3 x 1 + 3
    assert muxes == 6 and areas[conv.name].lut == CONTROL_LUT + muxes * bits


def test_a_shallow_wide_fifo_is_a_shift_register_in_the_model_and_the_cpp():
    assert fifo_storage(15, 128) == "srl" and fifo_storage(33, 128) == "memory" and fifo_storage(60, 16) == "auto-srl"
    graph = hlsfuse.load_graph("examples/residual.json")
    fold = Folding(lanes=(("conv1", 8), ("conv2", 8)), simd=(("conv1", 18), ("conv2", 18)))
    design = compile(graph, CompileOptions(fold=fold))
    wide = [c for c in design.plan.channels if c.lanes == 8]
    assert wide and all(c.depth <= SRL_DEPTH and c.depth * c.width >= LUTRAM_BITS for c in wide)
    cpp = design.files["hls/residual.cpp"]
    for c in design.plan.channels:
        bound = f"#pragma HLS BIND_STORAGE variable={c.name} type=fifo impl=srl\n" in cpp
        assert bound == (c in wide)
    deep = [c for c in design.plan.channels if c.depth > SRL_DEPTH]  # the residual path and conv1's output
    assert len(deep) == 2 and design.fifos.bram18 == sum(bram18(c.depth, c.width) for c in deep) == 2


def test_design_area_counts_every_stage_and_fifo():
    graph = small_net()
    plan = _plan(graph, (("conv", 2),))
    areas, fifos, total = design_area(graph, plan, DSP48E2)
    conv = next(s for s in plan.stages if s.head == "conv")
    assert areas[conv.name].multipliers == areas[conv.name].dsp == 2
    assert total.multipliers == sum(s.schedule.multipliers for s in plan.stages) == 2 + 6 + 12 + 5
    assert total.bram18 == sum(a.bram18 for a in areas.values()) + fifos.bram18


# --------------------------------------------------------------------------
# The solver, against brute force
# --------------------------------------------------------------------------


def _brute(graph, fusion, plan, budget: Budget):
    """(cycles, dsp, bram18) of the best folding by exhaustive search over every foldable stage's choices (the
    stages without choices and the FIFOs as in ``plan``; each port as wide as it may be)."""
    folded = [s for s in plan.stages if s.kind in FOLDABLE]
    areas, fifos, _ = design_area(graph, plan, DSP48E2)
    fixed = sum((areas[s.name] for s in plan.stages if s.kind not in FOLDABLE), fifos)
    ports = [p.type.size // max(d for d in range(1, 5) if p.type.shape[-1] % d == 0) for p in (*plan.inputs,
                                                                                               *plan.outputs)]
    floor = max(ports + [s.cycles for s in plan.stages if s.kind not in (*FOLDABLE, "fork", "convert")])
    options = [choices(graph, fusion, plan, s, DSP48E2) for s in folded]
    best = None
    for combo in itertools.product(*options):
        cycles = max([floor] + [c.cycles for c in combo])
        dsp = fixed.dsp + sum(c.dsp for c in combo)
        bram = fixed.bram18 + sum(c.bram18 for c in combo)
        if budget.dsp is not None and dsp > budget.dsp or budget.bram18 is not None and bram > budget.bram18:
            continue
        if budget.cycles is not None and cycles > budget.cycles:
            continue
        key = (dsp, bram) if budget.cycles is not None else (cycles, dsp, bram)
        best = key if best is None or key < best else best
    return best


@pytest.mark.parametrize("name", ["small", "residual", "mlp", "attention"])
def test_a_stages_choices_are_the_front_of_all_its_factors(name):
    """The choices skip input lanes past the fastest rate unless a wider line buffer saves BRAM18s (residual's
    3x3 windows over 8 channels do: 2 BRAM18s at 1 lane, none at 8): the front of every (lanes, pe, simd) of a
    window or rows stage (rows: one row or several, dense or matmul, constant or held weights), a window stage's
    each with the fewest snapshots that make it as fast as it goes (found here by trying them all; snapshots cost
    no DSP or BRAM18, and the solver trims them to its rate)."""
    graph = {"small": small_net, "mlp": mlp, "attention": attention_like}.get(
        name, lambda: hlsfuse.load_graph("examples/residual.json"))()
    fusion = fuse(graph, mode="fpga")
    plan = lower(graph, fusion)
    kinds, pruned = set(), False
    for stage in plan.stages:
        main = stage.schedule.main
        if stage.kind == "window":
            factors = (_divisors(main.geometry.c), _divisors(main.out_channels), _divisors(main.products))
        elif stage.kind == "rows":
            factors = (_divisors(main.k), _divisors(main.n), _divisors(main.products))
        else:
            continue
        kinds.add(stage.kind)
        every = []
        for lanes, pe, simd in itertools.product(*factors):
            try:
                folded = refold(graph, fusion, plan, stage, simd, lanes, pe)
            except HlsfuseError:
                continue
            if stage.kind == "window":
                ring = [refold(graph, fusion, plan, stage, simd, lanes, pe, q)
                        for q in range(1, len(folded.schedule.main.engine.completes) + 1)]
                folded = next(r for r in ring if r.cycles == ring[-1].cycles)
                kinds.add("snapshots" if folded.schedule.main.snapshots > 1 else "window")
            a = choice_area(graph, plan, folded, DSP48E2)
            every.append((folded.cycles, a.dsp, a.bram18, a.lut))
        front = {c for c in every if not any(o != c and all(x <= y for x, y in zip(o, c)) for o in every)}
        got = {(c.cycles, c.dsp, c.bram18, c.lut) for c in choices(graph, fusion, plan, stage, DSP48E2)}
        assert got == front, stage.name
        pruned |= len(every) > len(got)
        assert any(c.pe > 1 or c.lanes > 1 for c in choices(graph, fusion, plan, stage, DSP48E2)), stage.name
    assert kinds and (name == "residual" or "rows" in kinds) and (name != "small" or "snapshots" in kinds)
    assert pruned  # some factors are beaten by others


@pytest.mark.parametrize("budget", [Budget(dsp=4), Budget(dsp=9), Budget(dsp=20), Budget(cycles=300),
                                    Budget(cycles=600, dsp=30), Budget(dsp=12, bram18=2)])
def test_the_solver_is_optimal(budget):
    graph = small_net()
    fusion = fuse(graph, mode="fpga")
    plan = lower(graph, fusion)
    best = _brute(graph, fusion, plan, budget)
    fold = solve(space(graph, fusion, LowerOptions(), DSP48E2), budget)
    folded = lower(graph, fusion, LowerOptions(fold=fold))
    area = design_area(graph, folded, DSP48E2)[2]
    if budget.cycles is not None:
        assert (area.dsp, area.bram18) == best
    else:
        assert folded.cycles == best[0]
        assert area.dsp == best[1]  # every other stage shrunk to the slowest one's rate


def test_stages_alike_but_for_names_and_weight_values_share_their_choices():
    rng = np.random.default_rng(2)
    b = GraphBuilder("alike", dtype=F)
    h = b.input("x", [4, 16])
    for k, dtype in enumerate((W, W, "fixed<6,1>")):  # the third layer's weights are narrower
        h = b.dense(h, b.constant(f"w{k}", rng.normal(size=(16, 16)) * 0.2, dtype=dtype), name=f"fc{k}")
    b.output(h)
    graph = b.build()
    plan = lower(graph, fuse(graph, mode="fpga"))
    keys = [_structure(graph, s) for s in plan.stages if s.kind == "rows"]
    assert len(keys) == 3 and keys[0] == keys[1] != keys[2]


def test_the_knapsack_is_exact_when_both_budgets_bind():
    rng = np.random.default_rng(11)
    for _ in range(200):
        options = [[Choice(1, 1, 1, 1, 0, int(rng.integers(0, 6)), int(rng.integers(0, 6)), 0)
                    for _ in range(rng.integers(1, 4))] for _ in range(rng.integers(1, 5))]
        dsp = int(rng.integers(0, 12))
        combos = [c for c in itertools.product(*options) if sum(x.dsp for x in c) <= dsp]
        pick = _knapsack(options, dsp)
        if not combos:
            assert pick is None
            continue
        assert sum(x.dsp for x in pick) <= dsp
        assert sum(x.bram18 for x in pick) == min(sum(x.bram18 for x in c) for c in combos)


def test_budgets_that_cannot_be_met_name_the_stage():
    graph = small_net()
    fusion = fuse(graph, mode="fpga")
    fits = r"budget --dsp 3: does not fit: folded as far as it goes the design needs 4 DSPs; stage \S+ alone"
    with pytest.raises(HlsfuseError, match=fits):
        solve(space(graph, fusion, LowerOptions(), DSP48E2), Budget(dsp=3))
    with pytest.raises(HlsfuseError, match=r"--target-cycles 50: stage \S+_conv2d\S* needs at least \d+ cycles"):
        solve(space(graph, fusion, LowerOptions(), DSP48E2), Budget(cycles=50))


def test_the_residual_example_fits_two_boards():
    graph = hlsfuse.load_graph("examples/residual.json")
    fusion = fuse(graph, mode="fpga")
    for name in ("pynq-z2", "zcu104"):
        b = BOARDS[name]
        plan = fit(space(graph, fusion, LowerOptions(), b.dsp_slice), Budget(dsp=b.dsp, bram18=b.bram18))
        area = design_area(graph, plan, b.dsp_slice)[2]
        assert area.dsp <= b.dsp and area.bram18 <= b.bram18
    tight = fit(space(graph, fusion, LowerOptions(), DSP48E1), Budget(dsp=40))
    assert design_area(graph, tight, DSP48E1)[2].dsp <= 40 and _utilization(graph, tight, DSP48E1) >= 0.8


def _utilization(graph, plan, dsp) -> float:
    area = design_area(graph, plan, dsp)[2]
    return sum(s.schedule.macs for s in plan.stages) / (area.multipliers * plan.cycles)


@pytest.mark.parametrize("dsp", [16, 32])
def test_the_mlp_example_keeps_its_multipliers_busy_at_two_budgets(dsp):
    graph = hlsfuse.load_graph("examples/mlp.json")
    plan = fit(space(graph, fuse(graph, mode="fpga"), LowerOptions(), DSP48E1), Budget(dsp=dsp))
    assert design_area(graph, plan, DSP48E1)[2].dsp <= dsp
    assert _utilization(graph, plan, DSP48E1) >= 0.8
    assert all(s.schedule.main.streamed for s in plan.stages if s.schedule.multipliers)


def test_the_mlp_example_takes_lanes_and_pe_on_its_rows_to_run_faster():
    # with SIMD alone the solver's best at 200 DSP48E1s was 96 cycles per frame (fc1: 64 pushes of one element);
    # with input lanes and PE fc1 pushes its row in one token and emits PE columns at once
    graph = hlsfuse.load_graph("examples/mlp.json")
    plan = fit(space(graph, fuse(graph, mode="fpga"), LowerOptions(), DSP48E1), Budget(dsp=200))
    assert plan.cycles == 33 and design_area(graph, plan, DSP48E1)[2].dsp <= 200
    rows = [s.schedule.main for s in plan.stages if s.kind == "rows"]
    assert any(m.lanes_in > 1 for m in rows) and any(m.pe > 1 for m in rows)
    assert _utilization(graph, plan, DSP48E1) >= 0.8


@pytest.mark.parametrize("dsp", [40, 100])
def test_a_ds_cnn_keeps_its_multipliers_busy_at_two_budgets(dsp):
    graph = dscnn()
    plan = fit(space(graph, fuse(graph, mode="fpga"), LowerOptions(), DSP48E1), Budget(dsp=dsp))
    assert design_area(graph, plan, DSP48E1)[2].dsp <= dsp
    assert _utilization(graph, plan, DSP48E1) >= 0.8
    depthwise = [s for s in plan.stages if s.head and s.head.startswith("dw")]
    assert {s.schedule.main.products for s in depthwise} == {9}


# --------------------------------------------------------------------------
# Folded designs in simulation
# --------------------------------------------------------------------------

FOLDS = [(("conv", 2), ("pw", 3), ("fc", 4), ("mm", 1)), (("conv", 9), ("pw", 1), ("fc", 12), ("mm", 5))]
MLP_FOLD = (("l1", 4), ("l2", 1))


@pytest.fixture(scope="module")
def csim_shared(tmp_path_factory):
    """The folded designs the tests below C-simulate, side by side in one project (tests/union.py), under both
    header sets: (their (graph name, folding) list, the result)."""
    designs = [(small_net(), Folding(simd=fold)) for fold in FOLDS]
    designs += [(mlp(), Folding(simd=MLP_FOLD)), (strided_net(), RINGS)]
    graph, out = write_union([g for g, _ in designs], tmp_path_factory.mktemp("folded"), [f for _, f in designs],
                             name="folded")
    return [(g.name, f) for g, f in designs], csim_both(out, graph=graph)


def _bit_exact_in_csim(shared, graph, fold) -> None:
    """The design is in the shared C simulation, which is bit-exact under both header sets."""
    designs, result = shared
    assert (graph.name, fold) in designs
    assert result.passed, result.report()


@pytest.mark.gxx
@pytest.mark.parametrize("fold", FOLDS, ids=["a", "b"])
def test_folded_designs_are_bit_exact_in_csim(fold, csim_shared):
    graph = small_net()
    design = compile(graph, CompileOptions(fold=Folding(simd=fold)))
    text = design.files["hls/net.cpp"]
    simd = dict(fold)
    assert f"hlsf::conv_mac<acc_t, 9, 6, 2, {simd['conv']}, t_w1>" in text  # then the weights' type
    assert f"hlsf::dense_mac<acc_t, {simd['fc']}, t_w3>" in text
    assert f"variable=w_rom_w3 type=cyclic factor={simd['fc']}" in text
    _bit_exact_in_csim(csim_shared, graph, Folding(simd=fold))


@pytest.mark.gxx
def test_a_streamed_row_is_bit_exact_in_csim(csim_shared):
    graph = mlp()
    design = compile(graph, CompileOptions(fold=Folding(simd=MLP_FOLD)))
    assert "the frame's row, emitted from while it is read" in design.files["hls/mlp.cpp"]
    _bit_exact_in_csim(csim_shared, graph, Folding(simd=MLP_FOLD))


@pytest.mark.verilator
@DRIVER_MARK
def test_folded_designs_are_bit_exact_and_cycle_exact_in_rtlsim(tmp_path):
    from union import union

    graph = union([small_net(), small_net(), attention_like(), mlp()], name="folded")
    fold = tuple((f"g{k}_{n}", s) for k, f in enumerate(FOLDS) for n, s in f) + (("g2_q", 2), ("g2_scores", 2))
    fold += tuple((f"g3_{n}", s) for n, s in MLP_FOLD)
    plan = plan_of(graph, fold=Folding(simd=fold))
    result = simulate(graph, tmp_path, frames=3, driver=DRIVER, plan=plan)  # cycles, busy counts as the model's
    assert result.passed, result.report()
    assert lint(tmp_path) == ""


def strided_net():
    """Strided windows whose outputs complete on every other row: a 3x3 stride-2 conv, a 1x1 stride-2 conv and a
    max pool with padding."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("strided", dtype="fixed<8,3>")
    x = b.input("x", [1, 8, 8, 4])
    y = b.conv2d(x, b.constant("w", rng.integers(-8, 8, (3, 3, 4, 8)) / 8, dtype=W), strides=[2, 2],
                 padding=[1, 1, 1, 1], name="conv")
    z = b.conv2d(y, b.constant("w2", rng.integers(-8, 8, (1, 1, 8, 6)) / 8, dtype=W), strides=[2, 2], name="pw")
    b.output(b.max_pool2d(z, pool_size=[2, 2], strides=[1, 1], padding=[0, 0, 1, 1], name="mp"))
    return b.build()


RINGS = Folding(snapshots=(("conv", 3), ("pw", 2), ("mp", 2)), pe=(("conv", 2),), simd=(("conv", 9),))


def test_a_ring_of_snapshots_speeds_a_strided_window_up():
    graph = strided_net()
    one = plan_of(graph, fold=dataclasses.replace(RINGS, snapshots=()))
    ring = plan_of(graph, fold=RINGS)
    cycles = {p: {s.head: s.cycles for s in plan.stages if s.kind == "window"} for p, plan in (("one", one),
                                                                                            ("ring", ring))}
    assert cycles["ring"]["conv"] < cycles["one"]["conv"]
    conv = next(s for s in ring.stages if s.head == "conv")
    area = stage_area(graph, conv, DSP48E2)
    base = stage_area(graph, next(s for s in one.stages if s.head == "conv"), DSP48E2)
    bits = 9 * 4 * 8  # a snapshot: 3x3 taps of 4 channels of 8 bits
    assert area.ff - base.ff == 2 * bits and area.lut - base.lut == bits  # two more snapshots; a 3:1 mux per bit
    assert (area.dsp, area.bram18) == (base.dsp, base.bram18)
    with pytest.raises(HlsfuseError, match="stage 's3_dense' .*is a rows stage; snapshots is for window stages"):
        plan_of(small_net(), fold=Folding(snapshots=(("fc", 2),)))


@pytest.mark.gxx
def test_rings_of_snapshots_are_bit_exact_in_csim(csim_shared):
    graph = strided_net()
    design = compile(graph, CompileOptions(fold=RINGS))
    assert "snap[3][" in design.files["hls/strided.cpp"]
    _bit_exact_in_csim(csim_shared, graph, RINGS)


@pytest.mark.verilator
def test_rings_of_snapshots_are_bit_exact_and_cycle_exact_in_rtlsim(tmp_path):
    graph = strided_net()
    result = simulate(graph, tmp_path, frames=3, driver="native", plan=plan_of(graph, fold=RINGS))
    assert result.passed, result.report()
    assert lint(tmp_path) == ""


def test_the_solver_keeps_the_snapshots_its_rate_needs():
    """At the rate a budget allows, every window stage holds the fewest snapshots that meet it."""
    graph = strided_net()
    fusion = fuse(graph, mode="fpga")
    choices_ = space(graph, fusion, LowerOptions(), DSP48E2)
    rings = 0
    for dsp in (8, 16, 40, 400):
        fold = solve(choices_, Budget(dsp=dsp))
        folded = lower(graph, fusion, LowerOptions(fold=fold))
        for stage in folded.stages:
            main = stage.schedule.main
            if stage.kind != "window" or main.snapshots == 1:
                continue
            rings += 1
            fewer = refold(graph, fusion, folded, stage, main.simd if stage.schedule.multipliers else None,
                           main.geometry.lanes, main.pe, main.snapshots - 1)
            assert stage.cycles <= folded.cycles < fewer.cycles, (dsp, stage.name)
    assert rings


def test_resnet8_on_an_alveo_u250_in_the_model():
    """The acceptance figures of the model (csim and rtlsim of these designs are run by hand, docs/folding.md):
    at most 1,300 cycles per frame with at most 15,000 multipliers, and a MAC utilization of at least 0.8."""
    graph = hlsfuse.load_graph("examples/resnet8.json")
    fusion = fuse(graph, mode="fpga")
    board = BOARDS["alveo-u250"]
    dsp = board.dsp_slice
    plan = fit(space(graph, fusion, LowerOptions(), dsp), Budget(dsp=board.dsp, bram18=board.bram18))
    total = design_area(graph, plan, dsp)[2]
    macs = sum(s.schedule.macs for s in plan.stages)
    assert plan.cycles <= 1300 and total.multipliers <= 15000 and total.dsp <= board.dsp
    assert macs / (total.multipliers * plan.cycles) >= 0.8
    assert any(s.kind == "window" and s.schedule.main.snapshots > 1 for s in plan.stages)


# --------------------------------------------------------------------------
# fold.json, report.json and the CLI
# --------------------------------------------------------------------------


def test_fold_json_round_trips_and_report_json_has_every_figure(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["compile", "examples/residual.json", "-o", str(out), "--dsp", "40"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["budget"]["dsp"] == 40 and report["total"]["dsp"] <= 40
    keys = {"cycles_per_frame", "latency", "multipliers", "dsp", "bram18", "lutram_bits", "lut", "ff"}
    assert keys <= set(report["total"]) and all(keys <= set(s) for s in report["stages"])
    assert report["total"]["dsp"] == sum(s["dsp"] for s in report["stages"]) + report["fifos"]["dsp"]
    macs = report["macs_per_frame"]
    assert math.isclose(report["mac_utilization"], macs / (report["total"]["multipliers"] * report["cycles_per_frame"]),
                        abs_tol=1e-4)
    again = tmp_path / "b"
    assert main(["compile", "examples/residual.json", "-o", str(again), "--fold", str(out / "fold.json")]) == 0
    assert json.loads((again / "report.json").read_text())["cycles_per_frame"] == report["cycles_per_frame"]
    assert (again / "fold.json").read_text() == (out / "fold.json").read_text()
    assert "MAC utilization" in capsys.readouterr().out


def test_board_presets_set_part_clock_and_budget(tmp_path):
    out = tmp_path / "o"
    assert main(["compile", "examples/cnn.json", "-o", str(out), "--board", "pynq-z2"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert (report["board"], report["part"], report["dsp_slice"], report["clock_ns"]) == (
        "pynq-z2", "xc7z020clg400-1", "DSP48E1", 10.0)
    assert report["total"]["dsp"] <= 220
    assert report["budget"] == {"dsp": 220, "bram18": 280, "lut": 53200, "cycles_per_frame": None}
    assert "xc7z020clg400-1" in (out / "hls" / "hls_config.cfg").read_text()


@pytest.mark.parametrize("args, message", [
    (["--dsp", "1"], "budget --dsp 1: does not fit"),
    (["--dsp", "-1"], "--dsp must be a non-negative integer, not -1"),
    (["--fold", "MISSING.json"], "MISSING.json: cannot read the folding"),
    (["--fold", "BAD.json"], "BAD.json: fold entry 'c1': simd must be a positive integer, not 0"),
    (["--fold", "PE.json"], "stage 's0_conv2d_bias_add_relu': pe 3 does not divide the innermost dimension"),
    (["--fold", "GOOD.json", "--dsp", "9"], "budget --dsp 9: the folding given needs 73 DSPs, more than 9; stage"),
    (["--target-cycles", "10"], "--target-cycles 10: stage"),
    (["--fold", "RING.json"], "RING.json: fold entry 'conv2': snapshots must be a positive integer, not 0"),
])
def test_bad_folding_options_are_one_line_errors(args, message, tmp_path, capsys):
    (tmp_path / "BAD.json").write_text('{"fold": {"c1": {"simd": 0}}}')
    (tmp_path / "PE.json").write_text('{"fold": {"conv1": {"simd": 1, "pe": 3}}}')
    (tmp_path / "GOOD.json").write_text('{"fold": {"conv1": {"simd": 1}}}')
    (tmp_path / "RING.json").write_text('{"fold": {"conv2": {"snapshots": 0}}}')
    args = [a if not a.endswith(".json") else str(tmp_path / a) for a in args]
    out = tmp_path / "out"
    assert main(["compile", "examples/residual.json", "-o", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists()


def test_a_folding_given_with_a_board_is_checked_against_it(tmp_path):
    (tmp_path / "f.json").write_text('{"fold": {"conv1": {"simd": 18}, "conv2": {"simd": 9}}}')
    out = tmp_path / "o"
    assert main(["compile", "examples/residual.json", "-o", str(out), "--board", "pynq-z2",
                 "--fold", str(tmp_path / "f.json")]) == 0
    report = json.loads((out / "report.json").read_text())
    assert [s["simd"] for s in report["stages"] if s["simd"]] == [18, 9] and report["total"]["dsp"] == 27


def test_read_fold_rejects_what_is_not_a_folding(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("[1, 2]")
    with pytest.raises(HlsfuseError, match="a folding is an object with a 'fold' object"):
        read_fold(str(path))


def test_a_node_named_like_another_stage_is_folded_as_the_node():
    """Unfused, stage 's2_relu' computes node 'c' while node 's2_relu' is stage s3's (ResNet-8 on an Alveo U250
    was refused so: the solver named stages, and 's2_relu' resolved to the node's stage as well)."""
    b = GraphBuilder("clash", dtype="fixed<16,6>")
    h = b.input("x", [4, 8])
    for name, op in (("a", b.relu), ("b", b.sigmoid), ("c", b.relu), ("s2_relu", b.sigmoid), ("e", b.relu)):
        h = op(h, name=name)
    b.output(h)
    graph = b.build()
    fusion = fuse(graph, opt_level=0)
    plan = lower(graph, fusion, LowerOptions(fold=Folding(lanes=(("c", 2), ("s2_relu", 4)))))
    lanes = {s.name: (s.nodes, s.schedule.lanes_in) for s in plan.stages}
    assert lanes["s2_relu"] == (("c",), 2) and lanes["s3_sigmoid"] == (("s2_relu",), 4)
    fold = solve(space(graph, fusion, LowerOptions(), DSP48E2), Budget(dsp=100))
    assert fold.lanes and {k for k, _ in fold.lanes} <= {"a", "b", "c", "s2_relu", "e"}
    assert lower(graph, fusion, LowerOptions(fold=fold)).cycles == 4  # 32 elements, every stage and port at 8 lanes


def test_the_report_names_the_budget_that_binds_and_what_the_multipliers_deliver():
    """report.json's ``binding``: the budgets without which the solver folds faster (None when nothing was
    solved); ``macs_per_dsp_cycle`` and ``macs_per_klut_cycle``, in total and per MAC stage."""
    graph = hlsfuse.load_graph("examples/residual.json")

    def report(**device):
        target = Target(part="xc7z020clg400-1", **device)
        return plan_design(graph, CompileOptions(device=target)).report

    dsp = report(dsp=40)
    assert dsp["binding"] == ["dsp"] and dsp["total"]["dsp"] <= 40
    lut = report(lut=dsp["total"]["lut"])  # the LUTs the 40-DSP folding takes: unfolding further needs more
    assert lut["binding"] == ["lut"] and lut["cycles_per_frame"] <= dsp["cycles_per_frame"]
    assert report(dsp=100000, bram18=100000)["binding"] == []  # as fast as it folds
    assert report()["binding"] is None
    cycles, macs = dsp["cycles_per_frame"], dsp["macs_per_frame"]
    assert dsp["macs_per_dsp_cycle"] == round(macs / (dsp["total"]["dsp"] * cycles), 4) <= 1
    assert dsp["macs_per_klut_cycle"] == round(1000 * macs / (dsp["total"]["lut"] * cycles), 4)
    mac_stages = [s for s in dsp["stages"] if s["macs_per_frame"]]
    assert mac_stages and all(0 < s["macs_per_dsp_cycle"] <= 1 and s["macs_per_klut_cycle"] > 0 for s in mac_stages)
    assert all(s["macs_per_dsp_cycle"] is None for s in dsp["stages"] if not s["macs_per_frame"])


def test_a_choice_prices_the_converter_its_input_lanes_bring():
    """``area.widening_luts`` is ``converter_luts`` of a converter up from one lane, in closed form; a rows stage's
    choice of L input lanes costs it over the same stage at one lane."""
    from hlsfuse.lower.area import converter_luts, inflow_area, widening_luts
    from hlsfuse.lower.stage_convert import ConvertMain

    for lanes in (2, 3, 4, 8, 12, 64):
        assert widening_luts(lanes, 16) == converter_luts(ConvertMain(768, 1, lanes, "a", "b"), 16)
    graph = mlp()
    fusion = fuse(graph, mode="fpga")
    plan = lower(graph, fusion)
    stage = next(s for s in plan.stages if s.kind == "rows")
    one, wide = (refold(graph, fusion, plan, stage, None, lanes) for lanes in (1, 4))
    assert inflow_area(plan, one).lut == 0 and inflow_area(plan, wide).lut == widening_luts(4, 16)
    assert choice_area(graph, plan, wide, DSP48E2).lut - stage_area(graph, wide, DSP48E2).lut == widening_luts(4, 16)
