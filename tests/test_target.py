"""One target type (``hlsfuse.boards.Target``): every board preset's facts in it, the fallback without a board,
the flags' overrides, and compile, explore, the HLS project files and the resource model agreeing on the facts
of each board."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hlsfuse import GraphBuilder, HlsfuseError, save_graph
from hlsfuse.backends.hls import HlsOptions
from hlsfuse.boards import (
    BOARDS,
    DEFAULT_CLOCK,
    DEFAULT_PART,
    DSP48E1,
    DSP48E2,
    DSP58,
    FAMILIES,
    Target,
    board,
    family_of,
    target_of,
)
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.explore.evaluate import evaluate, install
from hlsfuse.explore.points import compile_options, sweep, target_label, targets
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower.area import design_area, dsp_per_product
from hlsfuse.types import parse_dtype

ROOT = Path(__file__).resolve().parents[1]
X, W = "fixed<26,8>", "fixed<18,1>"  # 26 x 18 signed bits: two DSP48E1 (25 x 18), one DSP48E2 (27 x 18)


def _graph():
    b = GraphBuilder("wide_dense", dtype=X)
    x = b.input("x", [2, 16])
    w = b.constant("w", np.linspace(-0.9, 0.9, 8 * 16).reshape(8, 16), dtype=W)
    b.output(b.dense(x, w, name="fc"))
    return b.build()


def _docs_boards() -> dict[str, Target]:
    """The board table of docs/folding.md ("## 4. Boards"), as Targets."""
    text = (ROOT / "docs" / "folding.md").read_text()
    table = text.split("| board | part | clock (ns) | DSPs | BRAM18 | LUTs | FFs |")[1].split("\n\n")[0]
    out = {}
    for line in table.strip().splitlines()[1:]:
        name, part, clock, *counts = (c.strip() for c in line.strip("|").split("|"))
        out[name] = Target(name, part, float(clock), *(int(c.replace(",", "")) for c in counts))
    return out


def test_the_docs_table_is_the_presets():
    assert _docs_boards() == BOARDS


def test_every_preset_is_one_target_with_all_its_facts():
    assert len(BOARDS) == 9
    for name, t in BOARDS.items():
        assert type(t) is Target and t.board == name and board(name) is t
        for field in ("dsp", "bram18", "lut", "ff"):
            assert isinstance(getattr(t, field), int) and getattr(t, field) > 0, (name, field)
        assert t.clock > 0 and t.family in FAMILIES and t.dsp_slice is t.family.dsp_slice
        assert t.clock_text == f"{t.clock:g}"
    slices = {name: t.dsp_slice for name, t in BOARDS.items()}
    assert slices["pynq-z2"] is slices["arty-a7-100t"] is DSP48E1
    assert all(slices[n] is DSP48E2 for n in ("ultra96v2", "kv260", "zcu104", "zcu102", "alveo-u50", "alveo-u250"))
    assert BOARDS["pynq-z2"].family.name == "7 series" and BOARDS["zcu104"].family.name == "UltraScale(+)"
    assert family_of("xcvc1902-vsva2197-2MP-e-S").dsp_slice is DSP58 and family_of("XCVU9P").dsp_slice is DSP48E2


def test_the_fallback_without_a_board_is_one_place():
    fallback = Target(None, DEFAULT_PART, DEFAULT_CLOCK, None, None, None, None)
    assert Target() == target_of() == target_of(None, "", None) == fallback
    assert (DEFAULT_PART, DEFAULT_CLOCK, Target().dsp_slice) == ("xcvu13p-flga2577-2-e", 5.0, DSP48E2)
    assert CompileOptions().device == fallback and CompileOptions().budget.empty
    options = CompileOptions(device=BOARDS["kv260"], target_cycles=500)
    assert (options.budget.dsp, options.budget.bram18, options.budget.cycles) == (1_248, 288, 500)
    with pytest.raises(HlsfuseError, match=r"^budget 'cycles' must be a non-negative integer, not -1$"):
        CompileOptions(target_cycles=-1)
    assert targets([], [16], None, None, None, None) == [dataclasses.replace(fallback, dsp=16)]
    # the HLS options spell the project only: part and clock are the target's
    assert not {f.name for f in dataclasses.fields(HlsOptions)} & {"part", "clock", "dsp", "bram18", "board"}


def test_flags_override_the_preset():
    pynq = BOARDS["pynq-z2"]
    assert target_of("pynq-z2") == pynq
    assert target_of("pynq-z2", "") == pynq  # an empty --part is the board's
    moved = target_of("pynq-z2", "xczu3eg-sbva484-1-i", 4.0, 10, 5)
    assert moved == Target("pynq-z2", "xczu3eg-sbva484-1-i", 4.0, 10, 5, pynq.lut, pynq.ff)
    assert moved.dsp_slice is DSP48E2
    assert target_of(None, "xc7a100tcsg324-1", None, 4) == Target(part="xc7a100tcsg324-1", dsp=4)
    assert target_of("zcu104", bram18=0).bram18 == 0 and target_of("zcu104", dsp=0).dsp == 0
    # explore's DSP budgets on a board are the same targets, named by board and budget
    assert targets([], [10], "pynq-z2", "xczu3eg-sbva484-1-i", 4.0, 5) == [moved]
    assert [target_label(t) for t in targets(["zcu104"], [8], "pynq-z2", None, None, None)] == ["zcu104",
                                                                                                "pynq-z2-dsp8"]
    assert target_label(Target(part="xc7a100tcsg324-1", dsp=4, bram18=9)) == "xc7a100tcsg324-1-dsp4-bram9"


@pytest.mark.parametrize("fields, message", [
    ({"clock": 0}, "option 'clock' must be a positive period in ns, not 0"),
    ({"clock": "fast"}, "option 'clock' must be a period in ns, not 'fast'"),
    ({"clock": float("nan")}, "option 'clock' must be a period in ns, not nan"),
    ({"part": "xc7 z020"}, "option 'part' must be an FPGA part name without spaces, not 'xc7 z020'"),
    ({"part": ""}, "option 'part' must be an FPGA part name without spaces, not ''"),
    ({"part": "ep4ce22"},
     "part 'ep4ce22': not an AMD 7-series, UltraScale(+) or Versal part name (xc7..., xczu..., ...)"),
    ({"dsp": -1}, "target 'dsp' must be a non-negative integer or None, not -1"),
    ({"bram18": True}, "target 'bram18' must be a non-negative integer or None, not True"),
    ({"lut": 1.5}, "target 'lut' must be a non-negative integer or None, not 1.5"),
])
def test_bad_targets_are_named(fields, message):
    with pytest.raises(HlsfuseError, match=f"^{re.escape(message)}$"):
        Target(**fields)


def test_an_unknown_part_is_refused_on_the_command_line(tmp_path, capsys):
    save_graph(_graph(), tmp_path / "g.json")
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "o"), "--part", "ep4ce22"]) == 2
    assert "part 'ep4ce22': not an AMD" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_compile_explore_and_the_resource_model_agree_on_a_board(name, tmp_path, capsys):
    """compile --board NAME and explore's point for NAME: the same target in the HLS scripts, report.json and the
    sweep's row, the same report, and DSPs counted with the board's own DSP slice."""
    t = BOARDS[name]
    graph = _graph()
    save_graph(graph, tmp_path / "g.json")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), "--board", name]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert (report["board"], report["part"], report["clock_ns"], report["dsp_slice"]) == (
        name, t.part, t.clock, t.dsp_slice.name)
    assert report["budget"] == {"dsp": t.dsp, "bram18": t.bram18, "lut": t.lut, "cycles_per_frame": None}
    config, tcl = (out / "hls" / "hls_config.cfg").read_text(), (out / "hls" / "run_hls.tcl").read_text()
    assert f"\npart={t.part}\n" in config and f"\nclock={t.clock_text}ns\n" in config
    assert f"\nset_part {t.part}\n" in tcl and f"\ncreate_clock -period {t.clock_text} -name default\n" in tcl

    [point] = sweep(["fpga"], targets([name], [], None, None, None, None), [None], [None])
    assert point.target is t and compile_options(point).device is t
    install({"wide_dense": graph_to_dict(graph)})
    result = evaluate("wide_dense", point)
    row = result["row"]
    assert (row["board"], row["part"], row["clock_ns"], row["dsp_budget"], row["bram18_budget"]) == (
        name, t.part, t.clock, t.dsp, t.bram18)
    assert json.loads(json.dumps(result["report"])) == report

    design = compile(graph, CompileOptions(device=t))
    assert json.loads(json.dumps(design.report)) == report and design.files["hls/hls_config.cfg"] == config
    total = design_area(graph, design.plan, t.dsp_slice)[2]
    assert {k: report["total"][k] for k in total.to_json()} == total.to_json()
    per_product = dsp_per_product(parse_dtype(X), parse_dtype(W), t.dsp_slice)
    assert per_product == (2 if t.dsp_slice is DSP48E1 else 1)
    assert report["total"]["dsp"] == per_product * report["total"]["multipliers"] > 0


def test_flag_overrides_reach_the_scripts_and_the_report(tmp_path, capsys):
    save_graph(_graph(), tmp_path / "g.json")
    out = tmp_path / "out"
    args = ["--board", "pynq-z2", "--part", "xczu3eg-sbva484-1-i", "--clock", "4", "--dsp", "30", "--bram", "7",
            "--lut", "9000"]
    assert main(["compile", str(tmp_path / "g.json"), "-o", str(out), *args]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert (report["board"], report["part"], report["clock_ns"], report["dsp_slice"]) == (
        "pynq-z2", "xczu3eg-sbva484-1-i", 4.0, "DSP48E2")
    assert report["budget"] == {"dsp": 30, "bram18": 7, "lut": 9000, "cycles_per_frame": None}
    assert report["total"]["lut"] <= 9000
    assert report["total"]["dsp"] == report["total"]["multipliers"] <= 30  # DSP48E2: one slice per product
    assert "\npart=xczu3eg-sbva484-1-i\n" in (out / "hls" / "hls_config.cfg").read_text()
    assert "\ncreate_clock -period 4 -name default\n" in (out / "hls" / "run_hls.tcl").read_text()
