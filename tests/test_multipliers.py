"""Multiplier kinds (schedule.MULTIPLIERS): a MAC stage's products on DSPs or built from LUTs, chosen by the folding
solver where the DSPs run out, written in fold.json, bit-exact in the reference, csim (both header sets) and
rtlsim; the 8-bit ResNet-8 that needs them on a Pynq-Z2 (docs/folding.md, "Multipliers in LUTs")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tiers import need

from hlsfuse import GraphBuilder, HlsfuseError, reference, save_graph
from hlsfuse.boards import target_of
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, plan_design
from hlsfuse.graph_json import load_graph
from hlsfuse.lower import Folding
from hlsfuse.lower.area import LUT_MULTIPLIER_BITS, lut_product
from hlsfuse.lower.fold import read_fold

ROOT = Path(__file__).resolve().parents[1]


def small_graph(bits: int = 8):
    """A conv2d (stride 1, padded) and a dense of ``bits``-bit operands, weights across their range."""
    rng = np.random.default_rng(7)
    b = GraphBuilder("lutmul", dtype=f"fixed<{bits},4,RND,SAT>")
    x = b.input("x", [1, 6, 6, 4], dtype=f"fixed<{bits},3>")
    w = rng.uniform(-1, 1, (3, 3, 4, 6))
    w.flat[:2] = [-1.0, 1.0 - 2.0 ** (1 - bits)]  # the range limits of fixed<bits,1>
    c = b.relu(b.conv2d(x, b.constant("w", w, dtype=f"fixed<{bits},1>"), padding=[1, 1, 1, 1], name="conv"),
               name="relu")
    p = b.flatten(b.global_avg_pool(c, name="gap"), name="flat")
    wd = b.constant("wd", rng.uniform(-1, 1, (5, 6)), dtype=f"fixed<{bits},1>")
    b.output(b.dense(p, wd, name="fc", dtype="fixed<16,6>"))
    return b.build()


LUT_FOLD = Folding(simd=(("conv", 12), ("fc", 3)), pe=(("conv", 2),), multipliers=(("conv", "lut"), ("fc", "lut")))


def test_a_lut_multiplier_takes_no_dsp_and_the_luts_of_its_products():
    graph = small_graph()
    dsp = plan_design(graph, CompileOptions(fold=Folding(simd=LUT_FOLD.simd, pe=LUT_FOLD.pe)))
    lut = plan_design(graph, CompileOptions(fold=LUT_FOLD))
    assert [s["multiplier"] for s in lut.report["stages"] if s["simd"]] == ["lut", "lut"]
    assert [s["dsp"] for s in lut.report["stages"] if s["simd"]] == [0, 0]
    assert dsp.area.dsp - lut.area.dsp == 27 and lut.plan.cycles == dsp.plan.cycles  # the mean keeps its divide
    per_product = (lut.area.lut - dsp.area.lut) / 27  # the products, less the adders their narrower trees save
    assert lut_product(graph.types["x"].dtype, graph.types["w"].dtype) == 99 and 85 < per_product < 105  # Yosys: 94-102
    assert all(s["macs_per_dsp_cycle"] is None for s in lut.report["stages"] if s["simd"])
    assert lut.report["macs_per_klut_cycle"] > 0


def test_fold_json_carries_the_multiplier(tmp_path):
    save_graph(small_graph(), tmp_path / "g.json")
    (tmp_path / "f.json").write_text(json.dumps({"fold": {"conv": {"simd": 12, "multiplier": "lut"}}}))
    assert read_fold(str(tmp_path / "f.json")).multipliers == (("conv", "lut"),)
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--fold", str(tmp_path / "f.json")]) == 0
    written = json.loads((out / "fold.json").read_text())["fold"]
    assert written["conv"]["multiplier"] == "lut" and "multiplier" not in written["fc"]
    (tmp_path / "bad.json").write_text(json.dumps({"fold": {"conv": {"multiplier": "dsp48"}}}))
    with pytest.raises(HlsfuseError,
                       match="fold entry 'conv': multiplier must be one of 'dsp', 'lut', 'packed', not 'dsp48'"):
        read_fold(str(tmp_path / "bad.json"))
    (tmp_path / "pool.json").write_text(json.dumps({"fold": {"gap": {"multiplier": "lut"}}}))
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "o2"), "--fold",
                 str(tmp_path / "pool.json")]) == 2


@pytest.mark.gxx
@pytest.mark.verilator
def test_lut_multipliers_are_bit_exact_in_csim_and_rtlsim(tmp_path):
    """Products at the operands' range limits, accumulated over a whole 3x3x4 window, in LUTs: the C++ binds
    them to fabric (BIND_OP), the Verilog spells them as shifted additions."""
    from hls_support import csim_both

    from hlsfuse.sim.rtlsim import rtlsim

    save_graph(small_graph(), tmp_path / "g.json")
    (tmp_path / "f.json").write_text(json.dumps({"fold": {"conv": {"simd": 12, "pe": 2, "multiplier": "lut"},
                                                          "fc": {"simd": 3, "multiplier": "lut"}}}))
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--target", "all", "--fold",
                 str(tmp_path / "f.json")]) == 0
    assert "impl=fabric" in (ROOT / "hw" / "hls" / "hlsfuse" / "mac.h").read_text()
    assert ", true>(" in (out / "hls" / "lutmul.cpp").read_text()
    assert " * " not in "".join(line for p in (out / "verilog").glob("lutmul_s*.v")
                                for line in p.read_text().splitlines() if "_lp" in line)
    graph = load_graph(out / "graph.json")
    result = csim_both(out, frames=3, graph=graph)
    assert result.passed and result.frames == 3, result.report()
    sim = rtlsim(out, frames=2, graph=graph, driver="native")
    assert sim.passed and sim.frame_cycles == sim.predicted_cycles, sim.report()


def _resnet8_8bit():
    need("qonnx")
    sys.path.insert(0, str(Path(__file__).parent))
    from quant_build import qonnx_resnet8

    from hlsfuse.frontend.onnx import from_onnx
    proto = qonnx_resnet8()
    return proto, from_onnx(proto)


def test_an_8bit_resnet8_fits_a_pynq_z2_at_twice_the_best_published_rate():
    """Issue 31's figure: at most 29,400 cycles per frame within the Pynq-Z2's 220 DSPs and 53,200 LUTs (the
    resource model), the DSPs all busy (two products each where they pack, docs/folding.md section 9) and the rest of
    the products in LUTs: 16,455 cycles (19,904 with DSP and LUT products alone)."""
    _, graph = _resnet8_8bit()
    board = target_of("pynq-z2")
    planned = plan_design(graph, CompileOptions(device=board))
    area, report = planned.area, planned.report
    assert planned.plan.cycles <= 16_455 and area.dsp <= 220 and area.lut <= 53_200 and area.bram18 <= 280
    kinds = {s["multiplier"] for s in report["stages"] if s["simd"]}
    assert kinds >= {"packed", "lut"} and report["macs_per_dsp_cycle"] > 3
    unbound = plan_design(graph, CompileOptions(device=target_of(None, "xc7z020clg400-1")))
    assert "lut" not in {s["multiplier"] for s in unbound.report["stages"] if s["simd"]}  # no budget, no LUT products


def test_the_16bit_resnet8_keeps_its_dsps():
    """A product wider than LUT_MULTIPLIER_BITS stays on DSPs: the 16-bit ResNet-8 is no slower than before LUT
    multipliers (65,607 and 8,263 cycles), and only its stem (8-bit image, 8-bit weights) may use LUTs."""
    graph = load_graph(ROOT / "examples" / "resnet8.json")
    for board, before in (("pynq-z2", 65_607), ("zcu104", 8_263)):
        planned = plan_design(graph, CompileOptions(device=target_of(board)))
        assert planned.plan.cycles <= before
        lut = [s["nodes"][0] for s in planned.report["stages"] if s["multiplier"] == "lut"]
        assert set(lut) <= {"stem"} and LUT_MULTIPLIER_BITS == 8


def test_an_8bit_resnet8_is_bit_exact_with_qonnx():
    from quant_build import qonnx_run

    from hlsfuse.frontend.onnx import to_graph_layout
    proto, graph = _resnet8_8bit()
    assert max(graph.types[n.name].dtype.width for n in graph.nodes) < 24  # qonnx's float32 is exact too
    rng = np.random.default_rng(3)
    for _ in range(2):
        frame = {"x": rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)}
        want = qonnx_run(proto, frame)["y"]
        assert np.array_equal(reference.run(graph, to_graph_layout(graph, frame))["y"], want)


@pytest.mark.gxx
@pytest.mark.verilator
def test_the_8bit_resnet8_for_a_pynq_z2_is_bit_exact_in_csim_and_rtlsim(tmp_path):
    from hls_support import csim_both

    from hlsfuse.graph_json import save_graph as save
    from hlsfuse.sim.rtlsim import rtlsim

    _, graph = _resnet8_8bit()
    save(graph, tmp_path / "r8.json")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "r8.json"), "-o", str(out), "--target", "all", "--board", "pynq-z2"]) == 0
    graph = load_graph(out / "graph.json")
    assert csim_both(out, frames=2, graph=graph).passed
    sim = rtlsim(out, frames=2, graph=graph, driver="native")
    assert sim.passed and sim.frame_cycles == sim.predicted_cycles, sim.report()
