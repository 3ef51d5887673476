"""Names that are keywords of C++ or (System)Verilog: one table (hlsfuse.lower.names), one rename by the sanitizer
that both backends accept, and a design full of such names that compiles, says how it renamed them, and simulates
bit-exactly under both header sets and in RTL."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re

import pytest

from hlsfuse import GraphBuilder, HlsfuseError, save_graph
from hlsfuse.backends.hls import emit_hls
from hlsfuse.backends.hls.names import assign_names
from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.backends.verilog.module import ModuleBuilder
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.fusion import fuse
from hlsfuse.lower import lower
from hlsfuse.lower.names import CXX_KEYWORDS, KEYWORDS, VERILOG_KEYWORDS, Namer, sanitize

F = "fixed<8,3,RND,SAT>"
ALTERNATIVE_TOKENS = ("and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq")
INPUTS = ("and_eq", "module", "wire", "class", "decltype")
GLOBALS = ("int8_t", "hlsf", "size_t", "INLINE")  # defined at global scope by the generated C++ or its headers


def test_the_table_holds_every_keyword_of_both_languages():
    assert set(ALTERNATIVE_TOKENS) <= CXX_KEYWORDS
    assert {"decltype", "static_assert", "alignas", "alignof", "char16_t", "char32_t", "constexpr", "noexcept",
            "nullptr", "thread_local", "wchar_t", "typeid", "reinterpret_cast", "concept", "requires"} <= CXX_KEYWORDS
    cxx17 = CXX_KEYWORDS - {"char8_t", "concept", "consteval", "constinit", "co_await", "co_return", "co_yield",
                            "requires"}
    assert len(cxx17) == 84
    assert {"module", "wire", "logic", "packed", "always_ff", "small", "fork", "interconnect", "nettype", "soft",
            "implements", "s_until_with", "pulsestyle_ondetect", "unique0", "uwire"} <= VERILOG_KEYWORDS
    assert len(VERILOG_KEYWORDS) == 248  # IEEE 1800-2017, annex B
    assert KEYWORDS == CXX_KEYWORDS | VERILOG_KEYWORDS
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*[a-z0-9]", k) for k in KEYWORDS)


def _every_keyword():
    words = sorted(KEYWORDS)
    b = GraphBuilder("keywords", dtype=F)
    total = b.input(words[0], [2])
    for word in words[1:]:
        total = b.add(total, b.input(word, [2]))
    b.output(total)
    return b.build(), words


def test_every_keyword_is_renamed_once_and_both_backends_take_the_rename():
    graph, words = _every_keyword()
    plan = lower(graph, fuse(graph))
    assert [p.name for p in plan.inputs] == [f"{w}_" for w in words] == [sanitize(w) for w in words]
    assert "and_eq_.txt" in {path.rpartition("/")[2] for path in emit_hls(graph, plan)}
    manifest = json.loads(emit_verilog(graph, plan)["manifest.json"])
    assert [(p["name"], p["tensor"]) for p in manifest["ports"][:2]] == [("accept_on_", "accept_on"),
                                                                        ("alias_", "alias")]
    # the Verilog backend's own names go through the same rename
    builder = ModuleBuilder(graph, plan, plan.stages[0], "m")
    assert [builder.fresh(w) for w in words] == [f"{w}_" for w in words]


def test_the_hls_backend_refuses_a_raw_keyword_exactly_where_the_sanitizer_renames_it():
    b = GraphBuilder("g", dtype=F)
    b.output(b.relu(b.input("x", [2])))
    graph = b.build()
    plan = lower(graph, fuse(graph))

    def named(port: str):
        return dataclasses.replace(plan, inputs=(dataclasses.replace(plan.inputs[0], name=port),))

    for word in sorted(CXX_KEYWORDS):
        message = f"dataflow plan: port name '{word}' is not a usable C++ identifier"
        with pytest.raises(HlsfuseError, match=f"^{re.escape(message)}$"):
            assign_names(graph, named(word))
        assert sanitize(word) == f"{word}_"
        assert assign_names(graph, named(sanitize(word))).adapters[f"{word}_"] == f"read_{word}"


@pytest.mark.parametrize("word", INPUTS + GLOBALS)
def test_a_keyword_as_graph_or_input_name_compiles_for_both_targets(word):
    for graph_name, input_name, top, port in ((word, "x", f"{word}_", "x"), ("g", word, "g", f"{word}_"),
                                              (word, word, f"{word}_", f"{word}_2")):
        b = GraphBuilder(graph_name, dtype=F)
        b.output(b.relu(b.input(input_name, [2, 3]), name="y"))
        design = compile(b.build(), CompileOptions(target="all"))
        assert (design.plan.top, design.plan.inputs[0].name) == (top, port)
        assert json.loads(design.files["hls/ports.json"])["ports"][0]["name"] == port
        assert f"verilog/{top}.v" in design.files


def test_a_name_sanitized_to_a_taken_keyword_rename_gets_no_double_underscore():
    namer = Namer()
    assert [namer(n) for n in ("int", "int!", "int_2", "ap_x", "ap.x")] == ["int_", "int_2", "int_2_2", "ap_x_",
                                                                           "ap_x_2"]


# --------------------------------------------------------------------------
# A design of keyword names, compiled on the command line and simulated
# --------------------------------------------------------------------------


def keyword_graph():
    """A graph called 'module' whose inputs are called and_eq, module, wire, class and decltype, and whose outputs
    static_assert and input (keywords of C++, of SystemVerilog, or of both)."""
    b = GraphBuilder("module", dtype=F)
    ins = {name: b.input(name, [2, 3]) for name in INPUTS}
    total = b.add(b.add(ins["and_eq"], ins["module"], name="bitand"), ins["wire"], name="or_eq")
    b.output(b.relu(b.sub(total, ins["class"]), name="static_assert"), b.neg(ins["decltype"], name="input"))
    return b.build()


PORTS = {"and_eq": "and_eq_", "module": "module_2", "wire": "wire_", "class": "class_", "decltype": "decltype_",
         "static_assert": "static_assert_", "input": "input_"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keywords")
    save_graph(keyword_graph(), folder / "g.json")
    out = folder / "out"
    stdout = io.StringIO()  # capsys is function-scoped; the module fixture captures by hand
    with contextlib.redirect_stdout(stdout):
        code = main(["compile", str(folder / "g.json"), "-o", str(out), "--target", "all"])
    assert code == 0
    return out, stdout.getvalue()


def test_compile_shows_every_rename(compiled):
    out, printed = compiled
    lines = printed.splitlines()
    assert lines[0].startswith("design 'module_' (graph 'module'): 2 stages, ")
    directions = {name: "out" if name in ("static_assert", "input") else "in" for name in PORTS}
    assert lines[1] == "ports: " + ", ".join(f"{directions[t]} {p} (tensor '{t}'): {F}[2,3]" for t, p in PORTS.items())
    assert "\nch_and_eq         and_eq         " + F in printed  # the channel table: the tensor and its port
    for manifest in (out / "hls" / "ports.json", out / "verilog" / "manifest.json"):
        data = json.loads(manifest.read_text())
        assert (data["top"], data["graph"]) == ("module_", "module")
        assert {p["tensor"]: p["name"] for p in data["ports"]} == PORTS
    assert (out / "report.md").read_text().startswith("# hlsfuse design 'module_' (graph 'module')\n\n"
                                                      "design 'module_' (graph 'module'): ")


@pytest.mark.gxx
def test_keyword_names_pass_csim_under_both_header_sets(compiled):
    from hls_support import csim_both

    out, _ = compiled
    result = csim_both(out)
    assert result.passed, result.report()
    assert result.compared == 2 * 2 * 6  # two outputs of six elements, two frames


@pytest.mark.verilator
@pytest.mark.parametrize("driver", ["pyverilator", "native"])
def test_keyword_names_pass_rtlsim(compiled, driver):
    from rtl_design import assert_model

    from hlsfuse.sim.rtlsim import rtlsim

    out, _ = compiled
    graph = keyword_graph()
    result = rtlsim(out, frames=2, driver=driver, graph=graph)
    assert result.passed, result.report()
    assert result.compared == 2 * 2 * 6
    assert_model(result, compile(graph, CompileOptions(target="verilog")).plan, 2)


@pytest.mark.verilator
def test_every_keyword_as_an_input_lints_clean(tmp_path):
    from rtl_design import design, lint

    graph, _ = _every_keyword()
    assert lint(design(graph, tmp_path)) == ""
