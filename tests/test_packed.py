"""Packed DSPs (multiplier "packed", lower/packing.py): two products that share x in one DSP slice, per family the
shift and the guard band's group; the resource model and the solver; fold.json; bit-exact in csim (both header
sets) and rtlsim at the operands' range limits and the largest fan-in; one DSP per packed product in Yosys."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tiers import fresh

from hlsfuse import GraphBuilder, HlsfuseError, save_graph
from hlsfuse.boards import DSP48E1, DSP48E2, DSP58, target_of
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, plan_design
from hlsfuse.graph_json import load_graph
from hlsfuse.lower import Folding
from hlsfuse.lower.packing import packing_of
from hlsfuse.types import parse_dtype

E1, E2 = "xc7z020clg400-1", "xczu7ev-ffvc1156-2-e"  # a Pynq-Z2's Zynq-7020 and a ZCU104's Zynq UltraScale+


def test_which_widths_pack_per_family():
    """S: w_hi's place in the packed word (the A port: 25 bits on a DSP48E1, 27 on a DSP48E2); G: products summed
    packed before the split. 8 x 8 signed: G = 1 on a DSP48E1, 7 on a DSP48E2 (AMD's INT8 packing)."""
    s8, u8, s6, s16 = (parse_dtype(t) for t in ("fixed<8,1>", "ufixed<8,4>", "fixed<6,1>", "fixed<16,6>"))
    table = {(d.name, str(x), str(w)): (p.shift, p.group) if (p := packing_of(x, w, d)) else None
             for d in (DSP48E1, DSP48E2, DSP58) for x in (s8, u8, s6, s16) for w in (s8, s6)}
    assert table[("DSP48E1", str(s8), str(s8))] == (16, 1) and table[("DSP48E2", str(s8), str(s8))] == (18, 7)
    assert table[("DSP48E1", str(u8), str(s8))] == (16, 1) and table[("DSP48E2", str(u8), str(s8))] == (18, 4)
    assert table[("DSP48E1", str(s6), str(s6))] == (18, 127) and table[("DSP48E2", str(s8), str(s6))] == (20, 127)
    assert table[("DSP58", str(s8), str(s8))] == (18, 7)
    assert table[("DSP48E1", str(s16), str(s8))] is None and table[("DSP48E2", str(s16), str(s8))] is None


@pytest.mark.parametrize("dsp", [DSP48E1, DSP48E2])
@pytest.mark.parametrize("xt, wt", [("fixed<8,1>", "fixed<8,1>"), ("ufixed<8,4>", "fixed<8,1>"),
                                    ("fixed<6,1>", "fixed<5,1>"), ("fixed<9,1>", "fixed<7,1>")])
def test_the_split_is_exact_at_the_guard_band(dsp, xt, wt):
    """The split of a group's packed sum gives back both sums, at the range limits (every product the most positive
    or the most negative one) and at random; a group one larger breaks it at a limit (G is the largest)."""
    x, w = parse_dtype(xt), parse_dtype(wt)
    p = packing_of(x, w, dsp)
    assert p is not None and p.word <= dsp.a and p.x_bits <= dsp.b

    def split(xs, lo, hi):
        q = sum(int(a) * ((int(h) << p.shift) + int(m)) for a, m, h in zip(xs, lo, hi))
        low = q & ((1 << p.shift) - 1)
        low -= (low >> (p.shift - 1)) << p.shift  # sign-extended
        return low, (q - low) >> p.shift

    ends = [(x.raw_min, w.raw_min), (x.raw_min, w.raw_max), (x.raw_max, w.raw_min), (x.raw_max, w.raw_max)]
    rng = np.random.default_rng(5)
    for a, m in ends:
        for h in (w.raw_min, w.raw_max):
            n = min(p.group, 64)
            xs, lo, hi = [a] * n, [m] * n, [h] * n
            assert split(xs, lo, hi) == (n * a * m, n * a * h)
    for _ in range(200):
        n = int(rng.integers(1, min(p.group, 64) + 1))
        xs = rng.integers(x.raw_min, x.raw_max + 1, n)
        lo, hi = (rng.integers(w.raw_min, w.raw_max + 1, n) for _ in range(2))
        assert split(xs, lo, hi) == (int(np.dot(xs, lo)), int(np.dot(xs, hi)))
    worst = max(ends, key=lambda e: abs(e[0] * e[1]))
    over = [worst[0]] * (p.group + 1), [worst[1]] * (p.group + 1), [0] * (p.group + 1)
    if p.group < 64:
        assert split(*over)[0] != (p.group + 1) * worst[0] * worst[1]


def packed_graph():
    """A conv2d (6 channels: even ones of weights -1, the range's limit, and others mixed), a grouped conv2d (2
    channels per group), a matmul and a dense of an unsigned input, 8-bit operands at their range limits."""
    rng = np.random.default_rng(11)
    lim, top = -1.0, 1.0 - 2.0 ** -7  # fixed<8,1>'s range
    b = GraphBuilder("pk", dtype="fixed<8,4,RND,SAT>")
    x = b.input("x", [1, 4, 4, 8], dtype="fixed<8,3>")
    u = b.input("u", [1, 32], dtype="ufixed<8,4>")
    w = rng.choice([lim, top, -top, 0.5], (3, 3, 8, 6))
    w[..., 0], w[..., 2], w[..., 3] = lim, top, lim  # a lo lane all -1: products of x = -4 at the guard band
    c = b.conv2d(x, b.constant("w", w, dtype="fixed<8,1>"), padding=[1, 1, 1, 1], name="conv")
    wg = rng.choice([lim, top], (3, 3, 3, 4))
    b.output(b.conv2d(c, b.constant("wg", wg, dtype="fixed<8,1>"), padding=[1, 1, 1, 1], groups=2, name="gconv",
                      dtype="fixed<16,10>"))
    bm = rng.choice([lim, top, -0.25], (6, 4))
    bm[:, 0] = lim
    b.output(b.matmul(b.reshape(c, shape=[16, 6], name="rows"), b.constant("bm", bm, dtype="fixed<8,1>"), name="mm",
                      dtype="fixed<16,8>"))
    wd = rng.choice([lim, top], (5, 32))
    wd[0], wd[2] = lim, lim
    b.output(b.dense(u, b.constant("wd", wd, dtype="fixed<8,1>"), name="fc", dtype="fixed<16,10>"))
    return b.build()


FOLDS = {  # E1: folded, an odd PE; E2: the largest fan-in in one fold (72 products: 11 groups of 7)
    E1: {"conv": {"simd": 24, "pe": 3, "multiplier": "packed"}, "gconv": {"simd": 9, "pe": 4, "multiplier": "packed"},
         "mm": {"simd": 2, "pe": 2, "multiplier": "packed"}, "fc": {"simd": 8, "pe": 5, "multiplier": "packed"}},
    E2: {"conv": {"simd": 72, "pe": 6, "multiplier": "packed"}, "gconv": {"simd": 27, "pe": 2, "multiplier": "packed"},
         "mm": {"simd": 6, "pe": 4, "multiplier": "packed"}, "fc": {"simd": 32, "pe": 5, "multiplier": "packed"}},
}


def _frames():
    """x and u at both ends of their ranges, alternating, and at random."""
    rng = np.random.default_rng(2)
    lo_x, hi_x, hi_u = -4.0, 4.0 - 2.0 ** -5, 16.0 - 2.0 ** -4
    frames = [{"x": np.full((1, 4, 4, 8), lo_x), "u": np.full((1, 32), hi_u)},
              {"x": np.full((1, 4, 4, 8), hi_x), "u": np.zeros((1, 32))},
              {"x": rng.choice([lo_x, hi_x], (1, 4, 4, 8)), "u": rng.choice([0.0, hi_u], (1, 32))},
              {"x": rng.uniform(-4, 4, (1, 4, 4, 8)), "u": rng.uniform(0, 16, (1, 32))}]
    return frames


# Yosys's folding: every kind packed and an odd PE as in FOLDS, on fewer products (a group of 7 and one of 2 on the
# DSP48E2), so that a synthesis takes seconds
SYNTH_FOLDS = {
    E1: {"conv": {"simd": 8, "pe": 3, "multiplier": "packed"}, "gconv": {"simd": 9, "pe": 2, "multiplier": "packed"},
         "mm": {"simd": 2, "pe": 2, "multiplier": "packed"}, "fc": {"simd": 4, "pe": 5, "multiplier": "packed"}},
    E2: {"conv": {"simd": 9, "pe": 2, "multiplier": "packed"}, "gconv": {"simd": 9, "pe": 2, "multiplier": "packed"},
         "mm": {"simd": 2, "pe": 2, "multiplier": "packed"}, "fc": {"simd": 8, "pe": 5, "multiplier": "packed"}},
}


def _compile(tmp_path: Path, part: str, target: str = "all", folds: dict | None = None) -> Path:
    save_graph(packed_graph(), tmp_path / "g.json")
    (tmp_path / "f.json").write_text(json.dumps({"fold": (folds or FOLDS)[part]}))
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--target", target, "--fold",
                 str(tmp_path / "f.json"), "--part", part]) == 0
    return out


def test_a_packed_stage_takes_a_dsp_per_two_products():
    graph = packed_graph()
    for part, dsp_e in ((E1, DSP48E1), (E2, DSP48E2)):
        fold = FOLDS[part]
        kinds = Folding(simd=tuple((k, v["simd"]) for k, v in fold.items()),
                        pe=tuple((k, v["pe"]) for k, v in fold.items()))
        device = target_of(None, part)
        dsp = plan_design(graph, CompileOptions(fold=kinds, device=device))
        packed = plan_design(graph, CompileOptions(fold=replace(kinds, multipliers=tuple(
            (k, "packed") for k in fold)), device=device))
        by_dsp = {s["nodes"][0]: s for s in dsp.report["stages"] if s["simd"]}
        by_packed = {s["nodes"][0]: s for s in packed.report["stages"] if s["simd"]}
        for node, f in fold.items():
            pe, simd = f["pe"], f["simd"]
            assert by_packed[node]["multiplier"] == "packed"
            assert by_dsp[node]["dsp"] == pe * simd and by_packed[node]["dsp"] == (pe // 2 + pe % 2) * simd, node
            ratio = by_packed[node]["macs_per_dsp_cycle"] / by_dsp[node]["macs_per_dsp_cycle"]
            assert ratio == pytest.approx(pe / (pe // 2 + pe % 2), rel=1e-2)  # report.json rounds it
        assert packed.plan.cycles == dsp.plan.cycles
        assert packed.report["macs_per_dsp_cycle"] > 1.5 * dsp.report["macs_per_dsp_cycle"]
        stage = next(s for s in packed.plan.stages if s.head == "conv")
        assert stage.schedule.main.packing.dsp == dsp_e.name


def test_fold_json_carries_packed_and_refuses_what_does_not_pack(tmp_path):
    out = _compile(tmp_path, E1, target="verilog")
    written = json.loads((out / "fold.json").read_text())["fold"]
    assert {k: written[k]["multiplier"] for k in FOLDS[E1]} == dict.fromkeys(FOLDS[E1], "packed")
    again = tmp_path / "again"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(again), "--target", "verilog", "--fold",
                 str(out / "fold.json"), "--part", E1]) == 0
    assert json.loads((again / "report.json").read_text())["stages"] == \
        json.loads((out / "report.json").read_text())["stages"]
    graph = packed_graph()
    device = target_of(None, E1)
    with pytest.raises(HlsfuseError, match="multiplier packed pairs PE lanes 2i and 2i \\+ 1; pe must be at least 2"):
        plan_design(graph, CompileOptions(fold=Folding(multipliers=(("fc", "packed"),)), device=device))
    with pytest.raises(HlsfuseError, match="an even number of output channels per group, not 1"):
        plan_design(packed_depthwise(), CompileOptions(fold=Folding(pe=(("dw", 2),), multipliers=(("dw", "packed"),)),
                                                       device=device))
    wide = GraphBuilder("wide", dtype="fixed<16,6>")
    xw = wide.input("x", [1, 8], dtype="fixed<16,6>")
    wide.output(wide.dense(xw, wide.constant("w", np.full((4, 8), 0.5), dtype="fixed<8,1>"), name="fc"))
    with pytest.raises(HlsfuseError, match="products of fixed<16,6> by fixed<8,1> do not pack two to a DSP48E1"):
        plan_design(wide.build(), CompileOptions(fold=Folding(pe=(("fc", 2),), multipliers=(("fc", "packed"),)),
                                                 device=device))


def test_weights_of_minus_one_zero_and_one_are_never_packed():
    """8-bit weights whose raw values are all -1, 0 or +1 need no multiplier (lower.products, a product kind): the
    solver offers no packed choice for them, even with a DSP budget of 0, and fold.json's packed is refused in one
    line."""
    b = GraphBuilder("tern", dtype="fixed<16,8>")
    x = b.input("x", [1, 16], dtype="fixed<8,3>")
    w = np.random.default_rng(3).choice([-0.25, 0.0, 0.25], (4, 16))  # raw -1, 0, +1 in fixed<8,6>
    b.output(b.dense(x, b.constant("w", w, dtype="fixed<8,6>"), name="fc"))
    graph = b.build()
    device = target_of(None, E2)
    for budget in (None, 0):
        planned = plan_design(graph, CompileOptions(device=device if budget is None else replace(device, dsp=budget)))
        fc = next(s for s in planned.report["stages"] if "fc" in s["nodes"])
        assert fc["products"] == "ternary" and fc["multiplier"] != "packed" and fc["dsp"] == 0
    with pytest.raises(HlsfuseError, match=r"its weights are all -1, 0 or \+1, products built without a multiplier"):
        plan_design(graph, CompileOptions(fold=Folding(pe=(("fc", 2),), multipliers=(("fc", "packed"),)),
                                          device=device))


def packed_depthwise():
    b = GraphBuilder("dw", dtype="fixed<8,4>")
    x = b.input("x", [1, 4, 4, 4], dtype="fixed<8,3>")
    b.output(b.conv2d(x, b.constant("w", np.full((3, 3, 1, 4), 0.5), dtype="fixed<8,1>"), groups=4, name="dw"))
    return b.build()


def test_the_solver_packs_where_the_dsps_run_out():
    """A DSP budget that holds the unpacked design at a rate: packed products reach a faster one on both families,
    within the budget; without a budget nothing is built from LUTs."""
    graph = packed_graph()
    for part in (E1, E2):
        device = target_of(None, part)
        free = plan_design(graph, CompileOptions(device=device))
        assert "lut" not in {s["multiplier"] for s in free.report["stages"] if s["simd"]}
        budget = free.area.dsp // 3
        tight = plan_design(graph, CompileOptions(device=replace(device, dsp=budget)))
        kinds = {s["multiplier"] for s in tight.report["stages"] if s["simd"]}
        assert "packed" in kinds and tight.area.dsp <= budget
        packed = [s for s in tight.report["stages"] if s["simd"] and s["multiplier"] == "packed"]
        assert all(s["macs_per_dsp_cycle"] > 1 for s in packed)


@pytest.mark.gxx
@pytest.mark.verilator
@pytest.mark.parametrize("part", [E1, E2])
def test_packed_products_are_bit_exact_in_csim_and_rtlsim(tmp_path, part):
    """Every MAC kind packed (conv2d, grouped conv2d, matmul, a streamed dense of an unsigned input; an odd PE;
    folded, and the largest fan-in in one fold), inputs and weights at their range limits: the same outputs as the
    reference in csim under both header sets and in rtlsim, the cycles as planned."""
    from hls_support import csim_both
    from rtl_design import lint

    from hlsfuse.sim.rtlsim import rtlsim

    out = _compile(tmp_path, part)
    cpp = (out / "hls" / "pk.cpp").read_text()
    assert all(f"{kind}_mac_packed<" in cpp for kind in ("conv", "dense", "matmul"))
    assert lint(out) == ""
    graph = load_graph(out / "graph.json")
    frames = _frames()
    result = csim_both(out, inputs=frames, graph=graph)
    assert result.passed and result.frames == len(frames), result.report()
    sim = rtlsim(out, inputs=frames, frames=len(frames), graph=graph, driver="native")
    assert sim.passed and sim.frame_cycles == sim.predicted_cycles, sim.report()


@pytest.mark.yosys
@pytest.mark.parametrize("part", [p for p in (E1, E2) if p == E1 or fresh()])  # the DSP48E2: make test-random
def test_yosys_maps_a_packed_product_to_one_dsp(tmp_path, part):
    """The DSP count of every stage equals the model's: one DSP48 per packed product (the packed word's adder in
    its pre-adder or LUTs, a group's sum in LUTs or its post-adder), the odd lane's products one each."""
    out = _compile(tmp_path, part, target="verilog", folds=SYNTH_FOLDS)
    code = main(["synth", str(out), "--json", str(tmp_path / "synth.json")])
    document = json.loads((tmp_path / "synth.json").read_text())
    report = json.loads((out / "report.json").read_text())
    model = {s["name"]: s for s in report["stages"]}
    assert code == 0 and not any(s["differs"] for s in document["stages"])
    for stage in document["stages"]:
        if stage["kind"] != "top":
            assert stage["yosys"]["dsp"] == model[stage["name"]]["dsp"], stage["name"]
    conv = next(s for s in report["stages"] if s["nodes"][0] == "conv")
    assert conv["dsp"] == (SYNTH_FOLDS[part]["conv"]["pe"] + 1) // 2 * SYNTH_FOLDS[part]["conv"]["simd"]
