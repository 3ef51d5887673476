"""hlsfuse synth: Yosys's DSP and BRAM18 counts equal the resource model's on every stage kind and on the residual
example folded for a Pynq-Z2; the family from the part, the cell counting and the logic depth; a missing or old
Yosys is a one-line error."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tiers import fresh

from hlsfuse import GraphBuilder, save_graph
from hlsfuse.cli import main
from hlsfuse.errors import HlsfuseError
from hlsfuse.lower.area import divide_products
from hlsfuse.outdir import verify
from hlsfuse.synth.depth import logic_depth
from hlsfuse.synth.report import SECTION
from hlsfuse.synth.yosys import count_cells, family_of_part

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def kinds_graph():
    """Every stage kind: fork, window (a conv with a map's product and join after it), reduce, map, rows, own
    (softmax with its tables, a transpose's block); folded, converters too."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("kinds", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 6, 6, 4], dtype="fixed<10,2>")
    z = b.input("z", [1, 6, 6, 4], dtype="fixed<10,2>")
    w = b.constant("w", rng.uniform(-1, 1, (3, 3, 4, 4)), dtype="fixed<8,1>")
    c = b.relu(b.conv2d(x, w, padding=[1, 1, 1, 1], name="conv"), name="relu")
    s = b.add(c, b.mul(x, z, name="prod", dtype="fixed<16,4>"), name="join")
    p = b.global_avg_pool(s, name="gap")
    wd = b.constant("wd", rng.uniform(-1, 1, (8, 4)), dtype="fixed<8,1>")
    b.output(b.softmax(b.dense(b.flatten(p, name="flat"), wd, name="fc"), name="sm"))
    b.output(b.transpose(s, axes=[0, 2, 1, 3], name="tr"))
    return b.build()


KINDS_PYNQ = ("--board", "pynq-z2", "--dsp", "12")
"""The design of every kind for a Pynq-Z2, on 12 DSPs: its convolution folded (SIMD 6), a FIFO a block RAM, small
enough for a minute of Yosys."""


def _compile(graph_path: Path, out: Path, *options: str) -> None:
    assert main(["compile", str(graph_path), "-o", str(out), "--target", "verilog", "--force", *options]) == 0


@pytest.fixture(scope="module")
def kinds_json(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("kinds") / "kinds.json"
    save_graph(kinds_graph(), path)
    return path


def test_family_follows_the_part():
    assert family_of_part("xc7z020clg400-1") == "xc7"
    assert family_of_part("xczu7ev-ffvc1156-2-e") == "xcup"
    assert family_of_part("xcvu13p-flga2577-2-e") == "xcup"
    assert family_of_part("xcu250-figd2104-2L-e") == "xcup"
    assert family_of_part("xcku040-ffva1156-2-e") == "xcu"
    with pytest.raises(HlsfuseError, match="pass --family"):
        family_of_part("xcvc1902-vsva2197-2MP-e-S")


def test_cells_count_as_resources():
    counts = count_cells(Counter({"DSP48E1": 3, "RAMB36E1": 2, "RAMB18E1": 1, "LUT6": 10, "LUT2": 5, "RAM32M": 2,
                                  "SRLC32E": 3, "FDRE": 7, "FDSE": 1, "CARRY4": 4, "MUXF7": 9}))
    assert (counts["dsp"], counts["bram18"], counts["lutram"], counts["logic_lut"], counts["lut"], counts["ff"],
            counts["carry"], counts["muxf"]) == (3, 5, 11, 15, 26, 8, 4, 9)


def _cell(kind: str, ins: dict, outs: dict, **params) -> dict:
    return {"type": kind, "parameters": params, "port_directions": {**dict.fromkeys(ins, "input"),
                                                                     **dict.fromkeys(outs, "output")},
            "connections": {**ins, **outs}}


def test_depth_counts_lut_levels_and_carries_between_registers():
    # q0 -> LUT -> CARRY4 -> LUT -> q1 -> LUT -> q0: the register loop is cut, the longest path has 2 LUT levels
    cells = {
        "r0": _cell("FDRE", {"D": [9], "C": [1]}, {"Q": [2]}),
        "l0": _cell("LUT2", {"I0": [2], "I1": [2]}, {"O": [3]}),
        "c0": _cell("CARRY4", {"S": [3]}, {"O": [4]}),
        "l1": _cell("LUT3", {"I0": [4]}, {"O": [5]}),
        "r1": _cell("FDRE", {"D": [5], "C": [1]}, {"Q": [6]}),
        "l2": _cell("LUT1", {"I0": [6]}, {"O": [9]}),
    }
    netlist = {"modules": {"m": {"cells": cells, "netnames": {"q0": {"bits": [2]}, "sum": {"bits": [5]}}}}}
    depth = logic_depth(netlist, "m", "xc7")
    assert (depth.luts, depth.carry, depth.dsp) == (2, 1, 0)
    assert (depth.start, depth.end) == ("q0", "sum")
    assert depth.ns == pytest.approx(0.9 * 2 + 0.15 + 0.8)


def test_missing_or_old_yosys_is_one_line(kinds_json, tmp_path, monkeypatch, capsys):
    _compile(kinds_json, tmp_path / "out")
    capsys.readouterr()
    monkeypatch.setenv("HLSFUSE_YOSYS", str(tmp_path / "no-such-yosys"))
    assert main(["synth", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such program" in err and "pyosys" in err
    old = tmp_path / "yosys"
    old.write_text("#!/bin/sh\necho 'Yosys 0.23 (git sha1 7ce5011c24b, gcc 12.2.0)'\n")
    old.chmod(0o755)
    monkeypatch.setenv("HLSFUSE_YOSYS", str(old))
    assert main(["synth", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Yosys 0.23" in err and "too old" in err and "pip install pyosys" in err


KNOWN = {None: {}, "pynq-z2": {}}
"""Stages where Yosys and the model may disagree on DSPs or BRAM18s, by board: none (the divide-by-constant of a
mean, softmax's product and exp table, a transpose's block and the FIFOs agree since the model counts the divide's
and softmax's products and the reference reads every block-RAM memory at a registered address)."""


def test_jobs_read_the_hw_modules_they_use_and_unpack_packed_roms(tmp_path):
    from hlsfuse.synth.run import _hw_used, _one_word_a_line

    (tmp_path / "hlsf_a.v").write_text("module hlsf_a; hlsf_b u_b (); endmodule\n")
    (tmp_path / "hlsf_b.v").write_text("module hlsf_b; endmodule\n")
    (tmp_path / "hlsf_c.v").write_text("module hlsf_c; endmodule\n")
    (tmp_path / "top_s0.v").write_text("// not hlsf_c, a comment\nmodule top_s0; hlsf_a u_a (); endmodule\n")
    hw = frozenset(["hlsf_a.v", "hlsf_b.v", "hlsf_c.v"])
    assert _hw_used(tmp_path, "top_s0.v", hw) == ("hlsf_a.v", "hlsf_b.v")
    # 4 words of 8 bits a line, the first in the low bits; 6 words, the last line padded with zeros
    (tmp_path / "rom.mem").write_text("04030201\n00000605\n")
    assert _one_word_a_line(tmp_path / "rom.mem", 8, 6, 4) == "01\n02\n03\n04\n05\n06\n"


def test_a_divide_by_a_constant_multiplies():
    # a mean of 36 values: 17-bit dividend (16 bits scaled by 2) times the 18-bit magic constant ceil(2^23 / 36);
    # a rounding that reads the sticky bit needs the remainder too: the quotient times 36
    assert divide_products(16, 1, [36], "RND") == [(17, 18)]
    assert divide_products(16, 1, [36], "RND_CONV") == [(17, 18), (17, 6)]
    assert divide_products(22, 1, [64], "RND_CONV") == []  # a power of two is a shift
    assert divide_products(16, 1, [4, 6, 9], "TRN") == [(17, 20)]  # a selected constant: the widest


def _synth(out: Path, json_path: Path, known: dict | None = None) -> dict:
    code = main(["synth", str(out), "--json", str(json_path)])
    document = json.loads(json_path.read_text())
    assert {s["name"]: s["differs"] for s in document["stages"] if s["differs"]} == (known or {})
    assert code == (1 if known else 0)
    return document


def _check_against_report(out: Path, document: dict, known: dict | None = None) -> None:
    report = json.loads((out / "report.json").read_text())
    model = {s["name"]: s for s in report["stages"]}
    for stage in document["stages"]:
        if stage["name"] in (known or {}):
            continue
        expected = model[stage["name"]] if stage["kind"] != "top" else report["fifos"]
        assert (stage["yosys"]["dsp"], stage["yosys"]["bram18"]) == (expected["dsp"], expected["bram18"]), stage
    if not known:
        total = document["total"]["yosys"]
        assert (total["dsp"], total["bram18"]) == (report["total"]["dsp"], report["total"]["bram18"])
    assert document["yosys"].startswith("Yosys 0.") and "synth_xilinx -family" in document["command"]


@pytest.mark.yosys
@pytest.mark.parametrize("board", [b for b in (None, "pynq-z2") if b or fresh()])  # unfolded: make test-random
def test_every_stage_kind_maps_to_the_model(kinds_json, tmp_path, board):
    out = tmp_path / "out"
    _compile(kinds_json, out, *(KINDS_PYNQ if board else []))
    document = _synth(out, tmp_path / "synth.json", KNOWN[board])
    _check_against_report(out, document, KNOWN[board])
    kinds = {s["kind"] for s in document["stages"]}
    assert kinds >= {"fork", "window", "reduce", "map", "rows", "own", "top"} | ({"convert"} if board else set())
    assert all(s["depth"]["lut_levels"] >= 1 for s in document["stages"] if s["kind"] == "window")


@pytest.mark.yosys
def test_residual_folded_for_a_pynq_z2_maps_to_the_model(tmp_path):
    out = tmp_path / "out"
    _compile(EXAMPLES / "residual.json", out, "--board", "pynq-z2")
    document = _synth(out, tmp_path / "synth.json")
    _check_against_report(out, document)
    assert document["family"] == "xc7" and document["total"]["yosys"]["dsp"] == 192
    deep = [s["name"] for s in document["stages"] if s["deep"]]
    assert deep == ["s0_conv2d_bias_add_relu", "s1_conv2d_bias_add_add_relu"]  # a 24-product dot product a cycle


@pytest.mark.yosys
def test_the_comparison_is_kept_with_the_design(kinds_json, tmp_path):
    """OUT/synth.json and report.md's synthesis section, replaced (not repeated) by a second run, with their
    checksums: the folder still passes the simulators' check."""
    out = tmp_path / "out"
    _compile(kinds_json, out, *KINDS_PYNQ)
    first = _synth(out, tmp_path / "a.json", KNOWN["pynq-z2"])
    second = _synth(out, tmp_path / "b.json", KNOWN["pynq-z2"])  # cached: the same figures again
    assert json.loads((out / "synth.json").read_text()) == second and second["total"] == first["total"]
    assert all(s["cached"] for s in second["stages"])
    report = (out / "report.md").read_text()
    assert report.count(SECTION) == 1 and report.startswith("# hlsfuse design") and "## Stages" in report
    assert "DSP m/y" in report.split(SECTION)[1]
    sums = json.loads((out / "checksums.json").read_text())["sha256"]
    for name in ("synth.json", "report.md"):
        assert sums[name] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    verify(out, ("verilog",))


class _Wires:
    """The one method of a module builder ``vlog.lut_product`` calls: a declared wire, named as asked."""

    def __init__(self):
        self.lines: list[str] = []

    def wire(self, name: str, width: int, expr: str, signed: bool = False) -> str:
        self.lines.append(f"wire {'signed ' if signed else ''}[{width - 1}:0] {name} = {expr};")
        return name


def _dot_product(n: int, x_type, w_type, products: bool) -> str:
    """A module of ``n`` products of registered x and w operands (``vlog.lut_product``), sign-extended to 64 bits
    and summed as the reference does, the sum registered; without ``products``, the same sum of the operands'
    bits in their place (the adder tree and the registers alone)."""
    from hlsfuse.backends.verilog.vlog import extend, lut_product

    xb, wb = x_type.width, w_type.width
    b = _Wires()
    terms = []
    for k in range(n):
        x, w = f"xr[{k * xb + xb - 1}:{k * xb}]", f"wr[{k * wb + wb - 1}:{k * wb}]"
        if products:
            term = lut_product(b, f"lp{k}", b.wire(f"x{k}", xb, x), x_type, b.wire(f"w{k}", wb, w), w_type)
        else:
            term = extend(b.wire(f"t{k}", xb + wb, f"{{{x}, {w}}}"), xb + wb, True, 64)
        terms.append(b.wire(f"pr{k}", 64, term, signed=True))
    return "\n".join([
        f"module top(input clk, input [{n * xb - 1}:0] xi, input [{n * wb - 1}:0] wi, output reg [63:0] s);",
        f"reg [{n * xb - 1}:0] xr;", f"reg [{n * wb - 1}:0] wr;",
        "always @(posedge clk) begin xr <= xi; wr <= wi; end", *b.lines,
        f"always @(posedge clk) s <= {' + '.join(terms)};", "endmodule", ""])


@pytest.mark.yosys
def test_a_lut_product_costs_what_yosys_maps(tmp_path):
    """The basis of ``area.lut_product``: four 8 x 8-bit LUT products summed, less the same sum of the operands
    (the adder tree and the registers), is four times the model's LUTs within LUT_PRODUCT_BAND, and costs no
    flip-flop; the Booth spelling is the one measured (Yosys 0.70: about 407 LUTs for the four)."""
    from hlsfuse.lower.area import LUT_PRODUCT_BAND, lut_product
    from hlsfuse.synth.yosys import find_yosys, synth_script
    from hlsfuse.types import FixedType

    yosys = find_yosys()
    x_type = w_type = FixedType(8, 1, signed=True)
    counts = {}
    for products in (True, False):
        text = _dot_product(4, x_type, w_type, products)
        assert ("_pp0" in text) == products  # the Booth spelling's first partial product
        (tmp_path / "top.v").write_text(text)
        (tmp_path / "synth.ys").write_text(synth_script(["top.v"], "top", "xc7"))
        status, output = yosys.run("synth.ys", tmp_path)
        assert status == 0, output
        stat = json.loads((tmp_path / "stat.json").read_text())
        counts[products] = count_cells(Counter(stat["modules"]["\\top"]["num_cells_by_type"]))
    assert counts[True]["dsp"] == 0
    per_product = (counts[True]["lut"] - counts[False]["lut"]) / 4
    low, high = LUT_PRODUCT_BAND
    assert low <= per_product / lut_product(x_type, w_type) <= high, (per_product, lut_product(x_type, w_type))
    assert counts[True]["ff"] <= 4 * (8 + 8) + 64  # no register but the operands' and the sum's


@pytest.mark.yosys
def test_a_design_edited_after_compile_is_refused_unless_allowed(kinds_json, tmp_path, capsys):
    """The files synthesized are the ones hlsfuse compile wrote (checksums.json), as the simulators check; --allow-edits
    synthesizes them as they are."""
    out = tmp_path / "out"
    _compile(kinds_json, out, *KINDS_PYNQ)
    stage = out / "verilog" / "kinds_fork_x.v"
    stage.write_text(stage.read_text(encoding="utf-8") + "// edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["synth", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"hlsfuse: error: {stage}: changed since hlsfuse compile wrote it; compile again, or pass "
                   "--allow-edits to simulate the files as they are\n")
    assert not (out / "synth.json").exists()
    assert main(["synth", str(out), "--allow-edits"]) == 0
    document = json.loads((out / "synth.json").read_text())
    assert not any(s["differs"] for s in document["stages"])


@pytest.mark.parametrize("channels, block", [(64, True), (32, False)])
def test_a_bias_rom_the_model_makes_a_block_ram_is_read_as_one(tmp_path, channels, block):
    """ResNet-8's biases of 64 x 16 bits (1 kbit: a BRAM18 in the model) were LUTs in Yosys, read at the output channel
    counter with no ``rom_style``; the ROM now says "block" where the model counts a BRAM18 for it, its read at the
    counter (a register) being synchronous. 32 x 16 bits stays the tool's choice (LUTRAM in the model)."""
    rng = np.random.default_rng(5)
    b = GraphBuilder("bias", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 4, 4, 8], dtype="fixed<8,1>")
    w = b.constant("w", rng.uniform(-1, 1, (1, 1, 8, channels)), dtype="fixed<8,1>")
    bias = b.constant("b", rng.uniform(-1, 1, channels), dtype="fixed<16,6,RND,SAT>")
    b.output(b.bias_add(b.conv2d(x, w, name="conv"), bias, name="add"))
    save_graph(b.build(), tmp_path / "bias.json")
    _compile(tmp_path / "bias.json", tmp_path / "out")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    verilog = next((tmp_path / "out" / "verilog").glob("bias_s0_*.v")).read_text()
    declared = f"reg [15:0] rom_b [0:{channels - 1}];"
    assert declared in verilog
    assert (f'(* rom_style = "block" *) {declared}' in verilog) == block
    assert report["stages"][0]["bram18"] == int(block)  # the bias: the weights are wired in, unfolded


@pytest.mark.yosys
def test_weight_banks_of_block_rams_are_one_file_and_a_block_ram_each(tmp_path):
    """A folded dense whose 4 weight banks (SIMD 2 x PE 2) are 512 x 8 bits, a BRAM18 each in the model: the Verilog
    reads them from one .mem file (compile writes no file a bank), each bank its own ROM, and Yosys maps each to a
    RAMB18 (from the words of its bank that hlsfuse synth cuts out of the file). (Banks so loaded are bit exact in
    rtlsim: tests/test_multipliers.py's ResNet-8 for a Pynq-Z2.)"""
    rng = np.random.default_rng(1)
    b = GraphBuilder("bk", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 128], dtype="fixed<8,1>")
    b.output(b.dense(x, b.constant("w", rng.uniform(-1, 1, (16, 128)), dtype="fixed<8,1>"), name="fc"))
    save_graph(b.build(), tmp_path / "bk.json")
    (tmp_path / "fold.json").write_text(json.dumps({"fold": {"fc": {"simd": 2, "pe": 2}}}))
    out = tmp_path / "out"
    _compile(tmp_path / "bk.json", out, "--fold", str(tmp_path / "fold.json"))
    assert sorted(p.name for p in (out / "verilog").glob("*.mem")) == ["bk_s0_dense_wb.mem"]
    report = json.loads((out / "report.json").read_text())
    assert report["stages"][0]["bram18"] == 4
    document = _synth(out, tmp_path / "synth.json")
    _check_against_report(out, document)
    assert document["stages"][0]["yosys"]["bram18"] == 4


@pytest.mark.yosys
def test_a_job_over_its_memory_is_one_line(kinds_json, tmp_path, monkeypatch, capsys):
    """A native Yosys has no ceiling of its own (a sum of 576 products took more than 11 GB): each job may take the
    machine's memory over the jobs at once. A job that runs out is named in the table (the others are measured) and
    in a one-line error saying what to do; OUT keeps no partial comparison, --json has it."""
    import hlsfuse.synth.run as run

    assert run.job_memory(1) >= run.job_memory(2) >= 2 << 30
    _compile(kinds_json, tmp_path / "out")
    monkeypatch.setattr(run, "job_memory", lambda jobs: 300 << 20)  # too little to start
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no cached result
    capsys.readouterr()
    assert main(["synth", str(tmp_path / "out"), "--json", str(tmp_path / "s.json")]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "ran out of memory" in err and "0.3 GB" in err and "-j 1" in err
    assert "NOT SYNTHESIZED: stage s0_conv2d_relu_mul_add" in out and not (tmp_path / "out" / "synth.json").exists()
    failed = json.loads((tmp_path / "s.json").read_text())["failed"]
    assert {f["name"] for f in failed} >= {"s0_conv2d_relu_mul_add", "(top: FIFOs)"}


@pytest.mark.yosys
@pytest.mark.parametrize("simd", [36, None])
def test_a_convolution_reads_its_taps_and_weights_as_plain_logic(tmp_path, simd):
    """What Yosys builds from a convolution before any mapping: a SIMD lane of a folded convolution reads the
    snapshot element of each fold, a mux of those 4 (an index into all 144 taps was a comparator a tap and lane:
    ResNet-8's last convolution for a ZCU104, 288 lanes of 576 taps, took Yosys more than 10 GB), an unfolded lane
    a constant element; weights in LUTs are a memory of a word an output channel (unrolled by ``mem2reg`` they were
    one shift of every word, as wide as all of them: for ResNet-8 unfolded a shift of 520,704 bits that took
    Yosys more than 6 GB)."""
    from hlsfuse.synth.yosys import find_yosys

    rng = np.random.default_rng(3)
    b = GraphBuilder("taps", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [1, 6, 6, 16], dtype="fixed<8,1>")
    w = b.constant("w", rng.uniform(-1, 1, (3, 3, 16, 8)), dtype="fixed<8,1>")
    b.output(b.conv2d(x, w, padding=(1, 1, 1, 1), name="conv"))
    save_graph(b.build(), tmp_path / "taps.json")
    options = ()
    if simd is not None:
        (tmp_path / "fold.json").write_text(json.dumps({"fold": {"conv": {"simd": simd}}}))
        options = ("--fold", str(tmp_path / "fold.json"))
    out = tmp_path / "out"
    _compile(tmp_path / "taps.json", out, *options)
    stage = json.loads((out / "report.json").read_text())["stages"][0]
    assert stage["multipliers"] == (simd or 144)
    vdir = out / "verilog"
    module = next(vdir.glob("taps_s0_*.v")).stem
    sources = " ".join(p.name for p in vdir.glob("*.v"))
    (vdir / "front.ys").write_text(f"read_verilog -DSYNTHESIS -DHLSFUSE_WORD_FILES {sources}\nhierarchy -top {module}\n"
                                   "proc\nflatten\nopt_clean\ntee -q -o front.json stat -json -width\n")
    status, output = find_yosys().run("front.ys", vdir)
    assert status == 0, output
    cells = json.loads((vdir / "front.json").read_text())["modules"][f"\\{module}"]["num_cells_by_type"]
    cases = [int(kind.split("_")[2]) for kind in cells if kind.startswith("$pmux_")]
    assert max(cases, default=0) <= 4  # a lane's 4 folds (before: 144 taps a lane, folded or not)
    assert sum(n for kind, n in cells.items() if kind.startswith("$eq_")) < 4 * 36  # (before: 5,163 folded)
    assert not [kind for kind in cells if kind.startswith("$shiftx_") and int(kind.split("_")[1]) > 8]
    if simd is None:  # the weights: a memory of 8 words of 144 weights (before: a mux of 8 x 1152 bits)
        assert "$meminit_v2" in cells
