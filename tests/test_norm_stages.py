"""layer_norm and rms_norm as stages (no compiler): fusion keeps them alone, the schedule's passes and cycles, lanes,
what is refused, the resource model and the folding solver, the calls and modules both backends write. Bit for
bit in C simulation (both header sets) and Verilator: tests/test_hw_shared.py (tests/norm_graphs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hlsfuse import GraphBuilder, HlsfuseError, fuse
from hlsfuse.backends.hls import emit_hls
from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.boards import DSP48E2
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.lower.area import stage_area
from hlsfuse.lower.fold import Budget, solve, space
from hlsfuse.lower.tables import stage_tables


def _graph(dtype="fixed<16,6,RND,SAT>", shape=(3, 4, 16), computed_gamma=False):
    b = GraphBuilder("ln", dtype=dtype)
    x = b.input("x", list(shape))
    n = shape[-1]
    rng = np.random.default_rng(0)
    gamma = b.constant("g", rng.uniform(0.5, 1.5, n), dtype=None if dtype == "float32" else "fixed<16,2,RND,SAT>")
    beta = b.constant("be", rng.uniform(-1, 1, n), dtype=None if dtype == "float32" else "fixed<16,2,RND,SAT>")
    if computed_gamma:
        gamma = b.relu(b.input("gin", [n], dtype=dtype), name="gr")
    r = b.relu(x, name="r")
    y = b.layer_norm(r, gamma, beta, name="y")
    z = b.rms_norm(x, beta, name="z", epsilon=1e-3)
    b.output(b.relu(y, name="after"), z)
    return b.build()


def _stage(plan, head):
    return next(s for s in plan.stages if s.head == head)


def test_each_is_a_stage_of_its_own_in_both_fusion_modes():
    graph = _graph()
    for mode in ("fpga", "tvm"):
        groups = [g.nodes for g in fuse(graph, mode=mode).groups]
        assert ("y",) in groups and ("z",) in groups and ("after",) in groups, groups
    plan = lower(graph, fuse(graph))
    assert {s.kind for s in plan.stages if s.head in ("y", "z")} == {"own"}


def test_two_passes_per_row_and_the_cycles_they_take():
    graph = _graph()
    plan = lower(graph, fuse(graph))
    y = _stage(plan, "y")
    assert y.schedule.loops == (("read a row, summing x and x^2", 16), ("write the normalised row", 16))
    assert y.cycles == 2 * 12 * 16 and y.roms == ("rom_g", "rom_be")
    (row,) = y.schedule.buffers
    assert (row.name, row.elements, row.width, row.registers, row.distance) == ("row", 16, 16, True, 16)
    io = y.schedule.io
    assert io[y.inputs[0]][:17].tolist() == list(range(16)) + [32]  # reads in the first pass of each row
    assert io[y.outputs[0]][:17].tolist() == list(range(16, 32)) + [48]  # writes in the second
    assert plan.cycles == 384 and _stage(plan, "z").roms == ("rom_be",)
    ((table,),) = [stage_tables(graph, y)]
    assert (table.table.function, table.reads, table.copies) == ("rsqrt", 1, 0)
    folded = lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("y", 4), ("z", 16)))))
    assert _stage(folded, "y").cycles == 2 * 12 * 4 and _stage(folded, "z").cycles == 2 * 12
    assert _stage(folded, "y").schedule.buffers[0].banks == 4
    assert stage_tables(graph, _stage(folded, "y"))[0].reads == 1  # one rsqrt per iteration, whatever the lanes


def test_float32_layer_norm_takes_three_passes_and_no_lanes():
    graph = _graph("float32")
    plan = lower(graph, fuse(graph))
    assert len(_stage(plan, "y").schedule.loops) == 3 and _stage(plan, "y").cycles == 3 * 12 * 16
    assert len(_stage(plan, "z").schedule.loops) == 2
    with pytest.raises(HlsfuseError, match="stage 's1_layer_norm': a layer_norm stage cannot take lanes 2: a float32 "
                                           r"normalisation sums its row one element at a time \(the sum's order is the "
                                           r"reference's\)"):
        lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("y", 2),))))


def test_what_the_stages_refuse():
    graph = _graph()
    with pytest.raises(HlsfuseError, match="a rms_norm stage cannot take lanes 3: its input's innermost dimension 16 "
                                           "is not a multiple of 3"):
        lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("z", 3),))))
    computed = _graph(computed_gamma=True)
    with pytest.raises(HlsfuseError, match=r"node 'y' \(layer_norm\): its input 'gr' is computed by another stage; "
                                           "layer_norm's gamma and beta must be graph constants"):
        lower(computed, fuse(computed))


def test_the_resource_model_prices_the_multipliers_and_the_table():
    graph = _graph()
    plan = lower(graph, fuse(graph))
    one = stage_area(graph, _stage(plan, "y"), DSP48E2)
    # per lane x^2 (16 x 16), the deviation times R (21 x 25: 2 DSP48E2s), n gamma (24 x 16); once S1^2 (20 x 20:
    # 2), the Newton step's M y0 (22 x 16), (M y0) y0 (38 x 16: 2) and y0 t (16 x 34: 2)
    assert one.dsp == 1 + 2 + 1 + 2 + 1 + 2 + 2
    assert one.bram18 == 1  # the rsqrt table: 1024 x 16 bits; the row (16 elements) is registers
    folded = lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("y", 4),))))
    four = stage_area(graph, _stage(folded, "y"), DSP48E2)
    assert four.dsp - one.dsp == 3 * (1 + 2 + 1) and four.bram18 == 1
    assert stage_area(graph, _stage(plan, "z"), DSP48E2).dsp == 1 + 2 + 1 + 1 + 2 + 2  # no S1^2


def test_the_solver_folds_them_for_a_rate():
    graph = _graph(shape=(2, 64))
    fusion = fuse(graph)
    found = solve(space(graph, fusion, LowerOptions(), DSP48E2), Budget(cycles=64))
    lanes = dict(found.lanes)
    assert lanes["y"] == 4 and lanes["z"] == 4  # 2 rows x 2 passes x 64 / L <= 64
    plan = lower(graph, fusion, LowerOptions(fold=found))
    assert plan.cycles == 64  # the ports' 128 elements at 2 per transfer


def test_the_calls_and_modules_both_backends_write():
    graph = _graph()
    plan = lower(graph, fuse(graph), LowerOptions(fold=Folding(lanes=(("y", 4),))))
    cpp = " ".join(emit_hls(graph, plan)["ln.cpp"].split())
    # E = ceil(1e-5 16^2 2^20) = 2685 and V < 2^39 (16^2 2^30 + E); the feeds read 4 elements of gamma and beta
    assert ("hlsf::layer_norm_stage<t_r, t_y, ap_fixed<24, 8, AP_RND, AP_SAT>, t_g, t_be, "
            "ap_ufixed<16, 0, AP_RND, AP_SAT>, 12, 16, 2685LL, 39, 4>(") in cpp
    assert "hlsf::rom_reader<t_g, 16, 4, hlsf::raw<16, true>::type> feed0(rom_g);" in cpp
    assert "lut_layer_norm_rsqrt_0, row);" in cpp
    # rms_norm: E = ceil(1e-3 16^2 2^20) = 268436 (1e-3 is a little above 2^-10 as a double)
    assert ("hlsf::rms_norm_stage<t_x, t_z, ap_fixed<24, 8, AP_RND, AP_SAT>, t_be, ap_ufixed<16, 0, AP_RND, "
            "AP_SAT>, 12, 16, 268436LL, 39>(") in cpp
    floats = _graph("float32")
    cpp = " ".join(emit_hls(floats, lower(floats, fuse(floats)))["ln.cpp"].split())
    assert "hlsf::layer_norm_float_stage<12, 16>(" in cpp and ", row, 1e-05);" in cpp
    assert "hlsf::rms_norm_float_stage<12, 16>(" in cpp and ", row, 0.001);" in cpp
    files = emit_verilog(graph, plan)
    module = files["ln_s1_layer_norm.v"]
    assert "hlsf_rsqrt #(" in module and ".V_W(39)" in module and "hlsf_rsqrt.v" in files
    assert "ln_s1_layer_norm_lut_rsqrt.mem" in files and "ln_s1_layer_norm_rom_g.mem" in files


def test_a_graph_of_them_round_trips_through_json_and_checks_its_ranges(tmp_path, capsys):
    from hlsfuse import load_graph, save_graph
    from hlsfuse.cli import main

    b = GraphBuilder("ln", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [2, 8])
    g = b.constant("g", np.linspace(0.5, 2, 8), dtype="fixed<16,2,RND,SAT>")
    y = b.layer_norm(x, g, b.constant("be", np.zeros(8)), name="y", norm_dtype="fixed<20,6,RND_CONV,SAT>",
                     epsilon=1e-3, dtype="fixed<16,3,RND>")  # |y| <= sqrt(7) 2 = 5.29: I = 4 can overflow
    b.output(b.rms_norm(y, g, name="z", dtype="fixed<16,4,RND,SAT>"))
    graph = b.build()
    path = save_graph(graph, tmp_path / "ln.json")
    assert load_graph(path) == graph
    assert main(["check", str(path), "--ranges"]) == 0
    out = capsys.readouterr().out
    assert "y       layer_norm  fixed<16,3,RND>" in out and "OVERFLOW" in out.split("\n  y ")[1].split("\n")[0]
