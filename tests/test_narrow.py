"""Products without multipliers (lower/products.py): a MAC stage of 1- and 2-bit weights builds each product as a
sign-select (weights -1, +1), an add/subtract/skip (weights -1, 0, +1) or an XNOR-popcount (weights -1, +1 times a
1-bit x), with no DSP and no `*`, priced per kind, bit-exact in the reference, csim (both header sets) and rtlsim
at the inputs' range limits and the largest fan-in of every stage (docs/folding.md, "Products without
multipliers")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hlsfuse import GraphBuilder, save_graph
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, plan_design
from hlsfuse.lower import Folding
from hlsfuse.lower.area import Area, adder_tree, popcount_luts
from hlsfuse.lower.products import product_kind, weight_kind
from hlsfuse.types import parse_dtype

ROOT = Path(__file__).resolve().parents[1]


def _weights(rng, values, shape, axis: int) -> np.ndarray:
    """Random weights of ``values``; along output ``axis``, output 0 all of the largest value and output 1 all of
    the smallest, so that the extreme inputs reach both ends of the exact accumulator."""
    w = rng.choice(values, size=shape)
    w = np.moveaxis(w, axis, 0)
    w[0], w[1] = max(values), min(values)
    return np.moveaxis(w, 0, axis)


def narrow_graph():
    """One graph of every kind, each on its own input: a padded conv2d of bipolar weights on 6-bit x (sign), a
    dense of ternary weights of value +-0.5 on x with fractional bits (ternary), a dense and a padded conv2d of
    bipolar weights on 1-bit {0, 1} codes, and a matmul of a constant bipolar b on 1-bit signed {-1, 0} x (xnor)."""
    rng = np.random.default_rng(31)
    b = GraphBuilder("narrow", dtype="fixed<16,8>")
    xs = b.input("xs", [1, 5, 5, 3], dtype="fixed<6,6>")
    cs = b.conv2d(xs, b.constant("ws", _weights(rng, [-1.0, 1.0], (3, 3, 3, 4), 3), dtype="fixed<2,2>"),
                  padding=[1, 1, 1, 1], name="cs", dtype="fixed<12,12>")
    xt = b.input("xt", [1, 24], dtype="fixed<5,3>")
    ct = b.dense(xt, b.constant("wt", _weights(rng, [-0.5, 0.0, 0.5], (6, 24), 0), dtype="fixed<2,1>"), name="ct",
                 dtype="fixed<12,8>")
    xb = b.input("xb", [1, 64], dtype="ufixed<1,1>")
    cb = b.dense(xb, b.constant("wb", _weights(rng, [-1.0, 1.0], (8, 64), 0), dtype="fixed<2,2>"), name="cb",
                 dtype="fixed<8,8>")
    xc = b.input("xc", [1, 4, 4, 8], dtype="ufixed<1,1>")
    cc = b.conv2d(xc, b.constant("wc", _weights(rng, [-1.0, 1.0], (3, 3, 8, 4), 3), dtype="fixed<2,2>"),
                  padding=[1, 1, 1, 1], name="cc", dtype="fixed<8,8>")
    xn = b.input("xn", [1, 3, 16], dtype="fixed<1,1>")
    mm = b.matmul(xn, b.constant("wn", _weights(rng, [-1.0, 1.0], (16, 5), 1), dtype="fixed<2,2>"), name="mm",
                  dtype="fixed<6,6>")
    b.output(cs, ct, cb, cc, mm)
    return b.build()


KINDS = {"cs": "sign", "ct": "ternary", "cb": "xnor", "cc": "xnor", "mm": "xnor"}
# folded (SIMD of P, PE of the outputs); cb: every multiplier holds one weight (wired in)
FOLD = Folding(simd=(("cs", 9), ("ct", 8), ("cb", 64), ("cc", 24), ("mm", 4)),
               pe=(("cs", 2), ("ct", 3), ("cb", 8), ("cc", 4)))


def extreme_frames(graph, count: int = 3) -> list[dict[str, np.ndarray]]:
    """Every input at its type's minimum, at its maximum, then random values of the type."""
    rng = np.random.default_rng(5)
    frames = []
    for k in range(count):
        frame = {}
        for i in graph.inputs:
            t = i.type.dtype
            raw = {0: np.full(i.type.shape, t.raw_min), 1: np.full(i.type.shape, t.raw_max)}.get(
                k, rng.integers(t.raw_min, t.raw_max + 1, size=i.type.shape))
            frame[i.name] = np.ldexp(raw.astype(np.float64), -t.frac)
        frames.append(frame)
    return frames


def test_the_kind_follows_from_the_weights_and_x():
    ufix1, fix8 = parse_dtype("ufixed<1,1>"), parse_dtype("fixed<8,8>")
    w2 = parse_dtype("fixed<2,2>")
    assert weight_kind(np.array([-1, 1, 1]), fix8, w2) == "sign"
    assert weight_kind(np.array([-1, 1, 1]), ufix1, w2) == "xnor"
    assert weight_kind(np.array([-1, 0, 1]), ufix1, w2) == "ternary"
    assert weight_kind(np.array([1, 1]), fix8, parse_dtype("ufixed<1,1>")) == "sign"
    assert weight_kind(np.array([-1, 2]), fix8, w2) is None  # a 2-bit weight of -2: a multiplier
    assert weight_kind(np.array([-1, 1]), parse_dtype("float32"), w2) is None
    graph = narrow_graph()
    planned = plan_design(graph, CompileOptions(fold=FOLD))
    stages = {s.head: s for s in planned.plan.stages if s.schedule.multipliers}
    assert {h: product_kind(graph, s) for h, s in stages.items()} == KINDS
    report = {s["nodes"][0]: s for s in planned.report["stages"] if s["simd"]}
    assert {h: report[h]["products"] for h in KINDS} == KINDS
    assert all(report[h]["dsp"] == 0 and report[h]["multiplier"] == "dsp" for h in KINDS)  # a fact, not a choice


def test_each_kind_is_priced_per_lane():
    """The resource model's figures of the kinds (area.kind_area)."""
    graph = narrow_graph()
    planned = plan_design(graph, CompileOptions(fold=FOLD))
    stage = {s.head: s for s in planned.plan.stages}
    area = {h: planned.areas[stage[h].name] for h in KINDS}
    assert all(a.dsp == 0 for a in area.values())
    # cb: wired in (PE 8 x SIMD 64 = its 512 weights): per lane the count of the code bits whose weight is +1 (the
    # ANDs are wires; on average over the lanes) and 2 a - c in the 9-bit accumulator, the count c of the code bits
    # once; no ROM
    ones = round(int((graph.constant_map["wb"].data > 0).sum()) / 8)
    assert popcount_luts(64) == 64 and 8 < ones < 64
    assert area["cb"] == Area(multipliers=512, lut=40 + 8 * (popcount_luts(ones) + 9) + popcount_luts(64), ff=40 + 128)
    # cs: sign of a 6-bit x, weights from a ROM: a negation of 6 LUTs per product, per PE lane a tree from 7 bits
    # into the 13-bit accumulator; its ROM of -1/+1 keeps one bit per weight (108 bits, 2 x 9 banks of 6)
    cs = stage["cs"].schedule
    line = cs.buffer("line buffer")
    assert area["cs"].lutram_bits == line.elements * line.width + 108
    assert area["cs"].lut == (40 + 2 * 6 + 18 * 1 + 18 * 6 + 2 * adder_tree(9, 7, 13))
    # ct: ternary (its ROM keeps both bits: -1 = 11, 0 = 00, +1 = 01)
    assert area["ct"].lutram_bits == 144 * 2


def test_fold_json_and_report_name_the_kind(tmp_path):
    """The kind is a fact of the weights, reported per stage (report.json's ``products``), not a choice: fold.json's
    ``multiplier`` stays the solver's (and has no say over these stages). No `*` is written for a product."""
    save_graph(narrow_graph(), tmp_path / "g.json")
    fold = {"cs": {"simd": 9, "pe": 2}, "ct": {"simd": 8, "pe": 3}, "cb": {"simd": 64, "pe": 8},
            "cc": {"simd": 24, "pe": 4, "multiplier": "lut"}, "mm": {"simd": 4}}
    (tmp_path / "f.json").write_text(json.dumps({"fold": fold}))
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--target", "all", "--fold",
                 str(tmp_path / "f.json")]) == 0
    report = {s["nodes"][0]: s for s in json.loads((out / "report.json").read_text())["stages"] if s["simd"]}
    assert {h: report[h]["products"] for h in KINDS} == KINDS and report["cc"]["dsp"] == 0
    cpp = (out / "hls" / "narrow.cpp").read_text()
    assert cpp.count("_narrow<") == 5 and "_mac<" not in cpp and "hlsf::narrow_xnor" in cpp
    header = (ROOT / "hw" / "hls" / "hlsfuse" / "narrow.h").read_text()
    dot = header[header.index("ACC narrow_dot("):header.index("}  // namespace detail")]  # the products' sum
    assert "(raw_of(ws[s]) > 0)" in dot and not [line for line in dot.splitlines() if "*" in line]
    verilog = [line for p in sorted((out / "verilog").glob("narrow_s*.v")) for line in p.read_text().splitlines()]
    products = [line for line in verilog if any(t in line for t in ("_sel", "sel", "xnor", "ones", "pop"))]
    assert products and not [line for line in products if "*" in line]
    # what is left of `*` are constant index steps (a weight row's base), never a data operand
    assert all("'d" in line.split("*")[1][:12] for line in verilog if " * " in line)


@pytest.mark.gxx
@pytest.mark.verilator
def test_every_kind_is_bit_exact_in_csim_and_rtlsim_and_lint_clean(tmp_path):
    """The range limits of every input (all at the minimum, all at the maximum: the largest fan-in of each stage
    summing |min| or max times its largest weights, output 0 all +1 and output 1 all -1), then a random frame."""
    from hls_support import csim_both, write_project
    from rtl_design import lint, simulate

    graph = narrow_graph()
    plan = plan_design(graph, CompileOptions(fold=FOLD)).plan
    frames = extreme_frames(graph)
    out = write_project(graph, tmp_path / "hls", plan)
    result = csim_both(out, frames, graph=graph)
    assert result.passed and result.frames == 3, result.report()
    rtl = simulate(graph, tmp_path / "rtl", frames=3, driver="native", plan=plan, inputs=frames)
    assert rtl.passed, rtl.report()
    assert lint(tmp_path / "rtl") == ""  # the weights' bits a kind does not read are consumed
