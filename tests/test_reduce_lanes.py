"""Lanes on reduce stages: L input elements per iteration (docs/folding.md section 5).

A reduce stage of L lanes reads tokens of L consecutive innermost elements. When the innermost axis
is kept (a global average pool over H and W of NHWC), lane l updates its own bank of the cyclically
banked accumulators and the output goes out in tokens of L_o = L; when it is reduced (a sum or max
over the last axis), the lanes are combined by a tree into one accumulator and L_o = 1. The plan's
facts are checked here without a compiler; csim and the native rtlsim driver check the designs bit
for bit, and rtlsim cycle for cycle against the plan's model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hls_support import csim_both
from rtl_design import lint, random_fold, simulate

import hlsfuse
from hlsfuse import GraphBuilder
from hlsfuse.boards import family_of
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.errors import HlsfuseError
from hlsfuse.fusion import fuse
from hlsfuse.lower import Folding, LowerOptions, lower, refold
from hlsfuse.lower.area import stage_area
from hlsfuse.lower.fold import Budget, choices, fit, fold_json, read_fold, space

F = "fixed<16,6,RND,SAT>"


def reductions():
    """x [1, 8, 8, 16] into reductions keeping the innermost axis (lanes L_o = L) and reducing it (L_o = 1):

    pool   relu -> global_avg_pool -> * a per-channel constant + a streamed z [1, 1, 1, 16] (epilogue)
    keep   sum over H, W of relu(x) * a per-channel constant (prologue, keepdims)
    last   sum over the last axis of relu(x + w), w streamed (a prologue input), keepdims
    peak   max over the last axis of x * a per-channel constant
    mean   mean over W and C of x (innermost reduced with another axis)
    """
    rng = np.random.default_rng(21)
    b = GraphBuilder("rlanes", dtype=F)
    x = b.input("x", [1, 8, 8, 16])
    z = b.input("z", [1, 1, 1, 16])
    w = b.input("w", [1, 8, 8, 16])
    k = b.constant("k", rng.uniform(-2, 2, 16), dtype="fixed<8,3>")
    c = b.constant("c", rng.uniform(-1, 1, 16), dtype="fixed<8,2>")
    g = b.global_avg_pool(b.relu(x, name="r"), dtype=F, name="pool")
    b.output(b.add(b.mul(g, k), z, name="y_pool"))
    b.output(b.sum(b.mul(b.relu(x), c), axes=[1, 2], keepdims=True, dtype="fixed<20,10,RND,SAT>", name="keep"))
    b.output(b.sum(b.relu(b.add(x, w)), axes=[-1], keepdims=True, dtype="fixed<20,10,RND,SAT>", name="last"))
    b.output(b.max(b.mul(x, c), axes=[3], name="peak"))
    b.output(b.mean(x, axes=[2, 3], name="mean"))
    return b.build()


HEADS = ("pool", "keep", "last", "peak", "mean")


def folded(graph, lanes: int):
    fold = Folding(lanes=tuple((h, lanes) for h in HEADS))
    return lower(graph, fuse(graph, mode="fpga"), LowerOptions(fold=fold))


def reduce_stages(plan):
    return {s.head: s for s in plan.stages if s.kind == "reduce"}


@pytest.mark.parametrize("lanes", [1, 2, 4, 16])
def test_a_reduce_stage_of_l_lanes_takes_n_in_over_l_plus_n_out_over_l_out_iterations(lanes):
    g = reductions()
    plan = folded(g, lanes)
    stages = reduce_stages(plan)
    assert set(stages) == set(HEADS)
    kept = {"pool": True, "keep": True, "last": False, "peak": False, "mean": False}
    for head, s in stages.items():
        main = s.schedule.main
        n_in, n_out = g.types[g.node(head).inputs[0]].size, g.types[head].size
        lanes_out = lanes if kept[head] else 1
        assert (main.lanes_in, main.lanes_out, main.combines) == (lanes, lanes_out, lanes > 1 and not kept[head])
        assert s.cycles == s.schedule.setup_iterations + n_in // lanes + n_out // lanes_out, head
        assert s.schedule.setup_iterations == 0
        # the stage's channels carry its lanes: the head and prologue inputs L, the output and epilogue inputs L_o
        for ch, use in zip(s.inputs, s.uses):
            assert plan.channel(ch).lanes == {"head": lanes, "pre": lanes, "post": lanes_out}[use], (head, use)
        for ch in s.outputs:
            assert plan.channel(ch).lanes == lanes_out
        acc = s.schedule.buffer("accumulators")
        assert (acc.elements, acc.banks, acc.banking) == (n_out, lanes_out, "cyclic")
    assert {u for s in stages.values() for u in s.uses} >= {"head", "pre", "post"}
    # one accumulator is updated again after C / L tokens (a pixel's channels), or at every token of a row
    assert stages["pool"].schedule.main.distance == 16 // lanes
    assert stages["last"].schedule.main.distance == (1 if lanes < 16 else 64)
    # the tree's L - 1 adders when the lanes combine, the accumulating adders and the epilogue once per lane
    dsp = family_of("xczu7ev").dsp_slice
    unfolded = reduce_stages(folded(g, 1))
    last = stage_area(g, stages["last"], dsp).lut - stage_area(g, unfolded["last"], dsp).lut
    relu_add = 2 * 16  # the prologue's add and relu, 16 bits each, per extra lane
    assert last == (lanes - 1) * (relu_add + stages["last"].schedule.buffer("accumulators").width) + (
        _ram_luts(stages["last"]) - _ram_luts(unfolded["last"]))
    pool = stage_area(g, stages["pool"], dsp).lut - stage_area(g, unfolded["pool"], dsp).lut
    assert pool == (lanes - 1) * 16 * 3 + _ram_luts(stages["pool"]) - _ram_luts(unfolded["pool"])  # pool, mul, add


def _ram_luts(stage) -> int:
    """LUTs of a stage's LUTRAM banks (the ROMs split per lane)."""
    from hlsfuse.lower.area import buffer_area

    return sum(buffer_area(b).lut for b in stage.schedule.buffers)


def test_lanes_on_a_reduce_stage_are_checked_and_fold_json_lists_them(tmp_path):
    g = reductions()
    with pytest.raises(HlsfuseError, match=r"stage 's\d+_global_avg_pool_mul_add': lanes 3 does not divide the "
                                           r"innermost dimension"):
        lower(g, fuse(g, mode="fpga"), LowerOptions(fold=Folding(lanes=(("pool", 3),))))
    b = GraphBuilder("odd", dtype=F)
    b.output(b.sum(b.input("x", [2, 6, 4]), axes=[0], name="s"))  # output [6, 4]: lanes must divide 4
    odd = b.build()
    assert reduce_stages(lower(odd, fuse(odd), LowerOptions(fold=Folding(lanes=(("s", 4),)))))["s"].cycles == 12 + 6
    plan = folded(g, 4)
    fold = fold_json(g, plan)
    assert fold["fold"]["pool"] == {"stage": reduce_stages(plan)["pool"].name, "lanes": 4, "innermost": 16,
                                    "lanes_out": 4, "cycles": 1024 // 4 + 16 // 4}
    assert fold["fold"]["last"]["lanes_out"] == 1
    (tmp_path / "fold.json").write_text(json.dumps(fold))
    assert dict(read_fold(str(tmp_path / "fold.json")).lanes) == {**dict.fromkeys(HEADS, 4), "r": 1}  # + a map stage
    # refold (what the solver costs) takes lanes on a reduce stage; the solver's choices are its input divisors
    fusion, unfolded = fuse(g, mode="fpga"), lower(g, fuse(g, mode="fpga"))
    stage = reduce_stages(unfolded)["last"]
    assert refold(g, fusion, unfolded, stage, lanes=8).cycles == 1024 // 8 + 64
    cycles = [c.cycles for c in choices(g, fusion, unfolded, stage, family_of("xczu7ev").dsp_slice)]
    assert cycles == sorted({1024 // d + 64 for d in (1, 2, 4, 8, 16)}, reverse=True)


def test_the_solver_gives_the_resnet8_global_average_pool_lanes():
    """ResNet-8 on an Alveo U250's budget: the global average pool (4096 elements in, 64 out) was the floor at
    4,160 cycles per frame; with lanes it no longer is, and the DSPs bind instead."""
    graph = hlsfuse.load_graph("examples/resnet8.json")
    dsp = family_of("xcu250-figd2104-2L-e").dsp_slice
    plan = fit(space(graph, fuse(graph, mode="fpga"), LowerOptions(), dsp), Budget(dsp=12288, bram18=5376))
    (pool,) = (s for s in plan.stages if s.kind == "reduce")
    assert pool.schedule.main.lanes_in > 1 and pool.cycles < plan.cycles
    assert plan.cycles <= 1504 < 4160


def uneven():
    """x [4, 8, 24]: a sum over the first axis into 192 accumulators (a memory banked 6 ways at 6 lanes), a max over
    the last axis at 3 lanes and a sum over it at 12 (trees of 3 and 12 values, not powers of two)."""
    b = GraphBuilder("uneven", dtype=F)
    x = b.input("x", [4, 8, 24])
    b.output(b.sum(b.relu(x), axes=[0], dtype="fixed<18,8,RND,SAT>", name="a"))
    b.output(b.max(x, axes=[-1], name="m"))
    b.output(b.sum(x, axes=[2], dtype="fixed<18,8,RND,SAT>", name="c"))
    return b.build()


UNEVEN = Folding(lanes=(("a", 6), ("m", 3), ("c", 12)), ports=(("x", 2),))


def test_uneven_lanes_bank_a_memory_of_accumulators_and_build_uneven_trees():
    g = uneven()
    stages = reduce_stages(lower(g, fuse(g, mode="fpga"), LowerOptions(fold=UNEVEN)))
    acc = stages["a"].schedule.buffer("accumulators")
    # 192 accumulators, each updated again 192 / 6 tokens later: a memory of 6 cyclic banks, not registers
    assert (acc.elements, acc.banks, acc.banking, acc.registers, acc.distance) == (192, 6, "cyclic", False, 32)
    assert [stages[h].cycles for h in "amc"] == [768 // 6 + 192 // 6, 768 // 3 + 32, 768 // 12 + 32]


def test_random_folds_give_half_the_reduce_stages_lanes():
    import random

    g = reductions()
    picks = [dict(random_fold(g, random.Random(seed)).lanes) for seed in range(40)]
    given = [sum(h in p for h in HEADS) for p in picks]
    assert 0 < sum(given) < 40 * len(HEADS)
    assert any(p.get(h, 1) > 1 for p in picks for h in HEADS)


@pytest.mark.gxx
@pytest.mark.parametrize("lanes", [2, 4, 16])
def test_reduce_stages_of_l_lanes_are_bit_exact_in_csim(lanes, tmp_path):
    g = reductions()
    design = compile(g, CompileOptions(fold=Folding(lanes=tuple((h, lanes) for h in HEADS))))
    cpp = design.files["hls/rlanes.cpp"]
    assert f"type=cyclic factor={lanes}" in cpp or lanes == 16  # 16 accumulators: registers, complete
    assert "hlsf::tree_sum(" in cpp and "hlsf::tree_max(" in cpp and "#pragma HLS UNROLL" in cpp
    result = csim_both(design.write(tmp_path / "out"), graph=g)
    assert result.passed, result.report()


@pytest.mark.gxx
def test_uneven_lanes_are_bit_exact_in_csim(tmp_path):
    g = uneven()
    design = compile(g, CompileOptions(fold=UNEVEN))
    cpp = design.files["hls/uneven.cpp"]
    assert "ARRAY_PARTITION variable=acc type=cyclic factor=6" in cpp and "type=inter direction=RAW" in cpp
    result = csim_both(design.write(tmp_path / "out"), graph=g)
    assert result.passed, result.report()


@pytest.mark.verilator
def test_uneven_lanes_are_bit_and_cycle_exact_in_rtlsim(tmp_path):
    g = uneven()
    plan = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=UNEVEN))
    result = simulate(g, tmp_path, frames=4, driver="native", plan=plan)
    assert result.passed, result.report()
    assert lint(tmp_path) == ""


@pytest.mark.verilator
@pytest.mark.parametrize("lanes", [1, 2, 4, 16])
def test_reduce_stages_of_l_lanes_are_bit_and_cycle_exact_in_rtlsim(lanes, tmp_path):
    g = reductions()
    # 2-lane inputs and the pool's relu at L lanes: converters from 2 to L lanes and from L to 1 (a widening
    # converter from 1 lane is not lint-clean on this branch: fixed on main by 7eeaf96)
    fold = Folding(lanes=tuple((h, lanes) for h in (*HEADS, "r")), ports=(("x", 2), ("z", 2), ("w", 2)))
    plan = lower(g, fuse(g, mode="fpga"), LowerOptions(fold=fold))
    assert {s.schedule.main.lanes_in for s in plan.stages if s.kind == "convert"} <= {2, lanes}
    result = simulate(g, tmp_path, frames=4, driver="native", plan=plan)  # cycle-exact against the model
    assert result.passed, result.report()
    busy = {s.name: s.busy for s in result.stages}
    for s in reduce_stages(plan).values():
        assert busy[s.name] == 4 * s.cycles  # every iteration fired once per frame
    assert lint(tmp_path) == ""
