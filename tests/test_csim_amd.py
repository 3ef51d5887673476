"""The designs that computed wrong numbers under AMD's own headers (issue 26), now bit-exact under both header sets.

A window stage taking several elements per transfer declared the token it pushes at padding as
``hlsf::lanes<t_x, L> px = {};`` and pushed it unread. AMD's ``ap_fixed_base() {}`` leaves a default-constructed
value undefined, so ``= {}`` did not zero the lanes, while the work-alike headers did: every such design passed
under the work-alikes only. The work-alikes now poison a default-constructed value (``ap_detail::poison``) and AMD
builds fill undefined storage with a pattern (``toolchain.POISON_FLAG``), so a design relying on one fails under
both. Each case below is a row of the issue's table, compiled as a user would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hls_support import csim_both
from test_examples import EXAMPLES

from hlsfuse import load_graph
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower.fold import Folding

pytestmark = pytest.mark.gxx

RESIDUAL = EXAMPLES / "residual.json"

# hlsfuse compile options of the table's rows: SIMD folding alone, window stages of several lanes with and
# without SIMD folding, the fold `make demo` shows
OPTIONS = {
    "port-lanes-2": ["--port-lanes", "2"],
    "dsp-9": ["--dsp", "9"],
    "dsp-36": ["--dsp", "36"],
    "pynq-z2-8600": ["--board", "pynq-z2", "--target-cycles", "8600"],
    "zcu104": ["--board", "zcu104"],
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_residual_as_the_command_line_folds_it(case, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(RESIDUAL), "-o", str(out), *OPTIONS[case]]) == 0
    capsys.readouterr()
    result = csim_both(out)
    assert result.passed and result.compared == 2 * 16 * 16 * 8, result.report()


# (lanes, simd) of both window stages: one element per transfer with SIMD folding, several elements per transfer
# without and with it
FOLDS = [(1, 18), (1, 36), (1, 72), (2, 72), (8, 72), (2, 18), (8, 4)]


@pytest.mark.parametrize(("lanes", "simd"), FOLDS)
def test_residual_window_stages_of_several_lanes(lanes, simd, tmp_path):
    graph = load_graph(RESIDUAL)
    fold = Folding(lanes=(("conv1", lanes), ("conv2", lanes)), simd=(("conv1", simd), ("conv2", simd)))
    design = compile(graph, CompileOptions(fold=fold))
    windows = [s.schedule for s in design.plan.stages if s.kind == "window"]
    assert [(w.main.geometry.lanes, w.main.simd) for w in windows] == [(lanes, simd)] * 2
    result = csim_both(design.write(tmp_path / "out"), graph=graph)
    assert result.passed and result.compared == 2 * 16 * 16 * 8, result.report()


def _synthesis_forms(out):
    """The project in ``out`` with HLSFUSE_AP_ROMS defined first thing in types.h: its ROMs and lookup tables (and a
    stage's copies of a table) hold ap_int/ap_uint words, as synthesis compiles them, not C integers."""
    types = out / "hls" / "types.h"
    types.write_text("#define HLSFUSE_AP_ROMS\n" + types.read_text())
    return out


def test_roms_and_tables_in_their_synthesis_form(tmp_path):
    """Raw ROM words of every width and signedness (1 to 64 bits, values no double holds) and lookup tables read
    through hlsf::element from ap_int/ap_uint words, copies of a table included, under both header sets."""
    from hls_support import write_project
    from map_graphs import fixed_zoo
    from test_lut_replicas import design, every_kind

    zoo = fixed_zoo()
    result = csim_both(_synthesis_forms(write_project(zoo, tmp_path / "zoo")), graph=zoo, allow_edits=True)
    assert result.passed and result.compared == 2 * sum(zoo.types[t].size for t in zoo.outputs), result.report()
    assert "HLSFUSE_ROM_" in (tmp_path / "zoo" / "hls" / "weights.h").read_text()
    tables = every_kind()
    out = design(tables, {"sg": 8, "th": 4, "ad": 8, "sg2": 8, "sm": 4, "tot": 4}).write(tmp_path / "tables")
    assert "_copies[" in (out / "hls" / "replicas.cpp").read_text()
    result = csim_both(_synthesis_forms(out), graph=tables, allow_edits=True)
    assert result.passed, result.report()


def test_maximum_and_minimum_of_operands_of_different_signedness(tmp_path):
    """AMD's ap_fixed compares a signed and an unsigned operand as unsigned numbers when the unsigned one is at least
    as wide (tests/test_hls_headers.py, amd_defects 4): a negative value would win a maximum. The generated code
    decides the sign first, at every width."""
    from hlsfuse import GraphBuilder

    b = GraphBuilder("signs")
    x = b.input("x", [4, 16], dtype="fixed<40,20>")
    u = b.input("u", [4, 16], dtype="ufixed<48,28>")
    s = b.input("s", [4, 16], dtype="fixed<12,4>")
    n = b.input("n", [4, 16], dtype="ufixed<8,4>")
    out = "fixed<60,40>"
    b.output(b.maximum(x, u, dtype=out), b.maximum(u, x, dtype=out), b.minimum(x, u, dtype=out),
             b.minimum(u, x, dtype=out), b.maximum(s, n, dtype="fixed<14,6>"), b.minimum(n, s, dtype="fixed<14,6>"))
    graph = b.build()
    design = compile(graph)
    assert "v_x.is_neg() ||" in design.files["hls/signs.cpp"] or "!v_x.is_neg() &&" in design.files["hls/signs.cpp"]
    result = csim_both(design.write(tmp_path / "out"), graph=graph)
    assert result.passed and result.compared == 2 * 6 * 64, result.report()


# tests of csim itself (its caching, its errors, its inputs), not of a design: they may build one header set only
CSIM_ITSELF = {"hls_support.py", "test_csim.py", "test_robust.py"}


def test_every_test_simulates_its_designs_under_both_header_sets():
    """A test that runs a design's C simulation does it through hls_support.csim_both."""
    tests = Path(__file__).parent
    plain = re.compile(r"(?<![\w.])csim\(")
    offenders = sorted(p.name for p in tests.glob("*.py") if p.name not in CSIM_ITSELF and plain.search(p.read_text()))
    assert not offenders, f"these call hlsfuse.sim.csim directly instead of hls_support.csim_both: {offenders}"
