"""The designs that computed wrong numbers under AMD's own headers (issue 26), now bit-exact under both header sets.

A window stage taking several elements per transfer declared the token it pushes at padding as
``hlsf::lanes<t_x, L> px = {};`` and pushed it unread. AMD's ``ap_fixed_base() {}`` leaves a default-constructed
value undefined, so ``= {}`` did not zero the lanes, while the work-alike headers did: every such design passed
under the work-alikes only. The work-alikes now poison a default-constructed value (``ap_detail::poison``) and AMD
builds fill undefined storage with a pattern (``toolchain.POISON_FLAG``), so a design relying on one fails under
both. Each case below is a row of the issue's table, compiled as a user would.

The designs are C-simulated side by side (tests/union.py), so that one g++ build per header set checks them: the
rows of the table with the design that compares operands of different signedness in one project, the ROMs and
tables in their synthesis form in another. A row compiled by the command line is in the project by its fold.json,
which gives the command line's C++ (checked).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hls_support import csim_both, write_union
from test_examples import EXAMPLES

from hlsfuse import GraphBuilder, load_graph
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower.fold import Folding, read_fold

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


def _command_line(case: str, out: Path) -> Path:
    assert main(["compile", str(RESIDUAL), "-o", str(out), *OPTIONS[case]]) == 0
    return out


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_residual_as_the_command_line_folds_it(case, tmp_path, capsys, shared):
    out = _command_line(case, tmp_path / "out")
    capsys.readouterr()
    # its fold.json gives the design the command line wrote (C++ and headers), which the shared project holds
    fold = read_fold(str(out / "fold.json"))
    built = compile(load_graph(RESIDUAL), CompileOptions(fold=fold)).files
    sources = sorted(p for p in (out / "hls").iterdir() if p.suffix in (".cpp", ".h"))
    assert sources and all(built[f"hls/{p.name}"] == p.read_text() for p in sources)
    _passed(shared, load_graph(RESIDUAL), fold)


# (lanes, simd) of both window stages: one element per transfer with SIMD folding, several elements per transfer
# without and with it
FOLDS = [(1, 18), (1, 36), (1, 72), (2, 72), (8, 72), (2, 18), (8, 4)]


def _windows_fold(lanes: int, simd: int) -> Folding:
    return Folding(lanes=(("conv1", lanes), ("conv2", lanes)), simd=(("conv1", simd), ("conv2", simd)))


@pytest.mark.parametrize(("lanes", "simd"), FOLDS)
def test_residual_window_stages_of_several_lanes(lanes, simd, shared):
    graph = load_graph(RESIDUAL)
    design = compile(graph, CompileOptions(fold=_windows_fold(lanes, simd)))
    windows = [s.schedule for s in design.plan.stages if s.kind == "window"]
    assert [(w.main.geometry.lanes, w.main.simd) for w in windows] == [(lanes, simd)] * 2
    _passed(shared, graph, _windows_fold(lanes, simd))


def _synthesis_forms(out):
    """The project in ``out`` with HLSFUSE_AP_ROMS defined first thing in types.h: its ROMs and lookup tables (and a
    stage's copies of a table) hold ap_int/ap_uint words, as synthesis compiles them, not C integers."""
    types = out / "hls" / "types.h"
    types.write_text("#define HLSFUSE_AP_ROMS\n" + types.read_text())
    return out


def test_roms_and_tables_in_their_synthesis_form(tmp_path):
    """Raw ROM words of every width and signedness (1 to 64 bits, values no double holds) and lookup tables read
    through hlsf::element from ap_int/ap_uint words, copies of a table included, under both header sets."""
    from map_graphs import fixed_zoo
    from test_lut_replicas import every_kind

    zoo, tables = fixed_zoo(), every_kind()
    copies = Folding(lanes=tuple({"sg": 8, "th": 4, "ad": 8, "sg2": 8, "sm": 4, "tot": 4}.items()))
    graph, out = write_union([zoo, tables], tmp_path / "roms", [Folding(), copies], name="roms")
    assert "HLSFUSE_ROM_" in (out / "hls" / "weights.h").read_text()
    assert "_copies[" in (out / "hls" / "roms.cpp").read_text()
    result = csim_both(_synthesis_forms(out), graph=graph, allow_edits=True)
    assert result.passed and result.compared == 2 * sum(graph.types[t].size for t in graph.outputs), result.report()


def _signs():
    b = GraphBuilder("signs")
    x = b.input("x", [4, 16], dtype="fixed<40,20>")
    u = b.input("u", [4, 16], dtype="ufixed<48,28>")
    s = b.input("s", [4, 16], dtype="fixed<12,4>")
    n = b.input("n", [4, 16], dtype="ufixed<8,4>")
    out = "fixed<60,40>"
    b.output(b.maximum(x, u, dtype=out), b.maximum(u, x, dtype=out), b.minimum(x, u, dtype=out),
             b.minimum(u, x, dtype=out), b.maximum(s, n, dtype="fixed<14,6>"), b.minimum(n, s, dtype="fixed<14,6>"))
    return b.build()


def test_maximum_and_minimum_of_operands_of_different_signedness(shared):
    """AMD's ap_fixed compares a signed and an unsigned operand as unsigned numbers when the unsigned one is at least
    as wide (tests/test_hls_headers.py, amd_defects 4): a negative value would win a maximum. The generated code
    decides the sign first, at every width."""
    graph = _signs()
    design = compile(graph)
    assert "v_x.is_neg() ||" in design.files["hls/signs.cpp"] or "!v_x.is_neg() &&" in design.files["hls/signs.cpp"]
    assert sum(graph.types[t].size for t in graph.outputs) == 6 * 64
    _passed(shared, graph, Folding())


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The rows of the table (the command line's folds, by their fold.json, and the window stages' lanes) and the
    signs design in one project, C-simulated under both header sets: (its (graph, folding) list, the union, the
    result)."""
    folder = tmp_path_factory.mktemp("amd")
    residual = load_graph(RESIDUAL)
    designs = [(residual, read_fold(str(_command_line(case, folder / case) / "fold.json"))) for case in sorted(OPTIONS)]
    designs += [(residual, _windows_fold(lanes, simd)) for lanes, simd in FOLDS]
    designs.append((_signs(), Folding()))
    graph, out = write_union([g for g, _ in designs], folder / "shared", [f for _, f in designs], name="amd")
    return designs, graph, csim_both(out, graph=graph)


def _passed(shared, graph, fold) -> None:
    """The design of ``graph`` folded as ``fold`` is in the shared project, whose C simulation is bit-exact under both
    header sets, every output element of two frames compared."""
    designs, union, result = shared
    assert (graph.name, fold) in [(g.name, f) for g, f in designs]
    assert result.passed and result.compared == 2 * sum(union.types[t].size for t in union.outputs), result.report()


# tests of csim itself (its caching, its errors, its inputs), not of a design: they may build one header set only
CSIM_ITSELF = {"hls_support.py", "test_csim.py", "test_robust.py"}


def test_every_test_simulates_its_designs_under_both_header_sets():
    """A test that runs a design's C simulation does it through hls_support.csim_both."""
    tests = Path(__file__).parent
    plain = re.compile(r"(?<![\w.])csim\(")
    offenders = sorted(p.name for p in tests.glob("*.py") if p.name not in CSIM_ITSELF and plain.search(p.read_text()))
    assert not offenders, f"these call hlsfuse.sim.csim directly instead of hls_support.csim_both: {offenders}"
