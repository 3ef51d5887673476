"""The Verilog backend's design and rtlsim on map and fork stages: bit-exact, lint-clean, the model's cycle counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_process import run_cli
from rtl_design import design, lint, plan_of, simulate

from hlsfuse import GraphBuilder
from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.backends.verilog.module import SUM_TERMS
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.errors import HlsfuseError
from hlsfuse.sim.rtlsim import rtlsim


def _every_map_op():
    """Every elementwise op on fixed types, with broadcast constants, several rounding and overflow modes."""
    b = GraphBuilder("maps")
    x = b.input("x", (1, 3, 4, 5), "fixed<10,4>")
    w = b.constant("w", np.linspace(-3, 3, 5), "fixed<8,3>")
    a = b.add(x, w, dtype="fixed<12,5,RND,SAT>")
    s = b.sub(a, b.constant("k", [[0.75]], "ufixed<6,2>"))
    m = b.mul(s, w, dtype="fixed<14,6,RND_CONV,SAT_SYM>")
    r = b.relu(m)
    lk = b.leaky_relu(s, alpha=0.125)
    mx = b.maximum(r, lk, dtype="fixed<9,4,RND_INF,SAT_ZERO>")
    mn = b.minimum(mx, b.neg(x))
    c = b.clip(b.abs(mn), min=-1.5, max=2.25)
    sg = b.sigmoid(c, table_bits=6)
    t = b.tanh(b.cast(m, "fixed<8,2,RND,SAT>"))
    e = b.exp(b.cast(c, "fixed<6,2>"), table_bits=4)
    y = b.mul(sg, t, dtype="fixed<16,4,RND_ZERO,WRAP>")
    z = b.add(b.reshape(y, (1, 12, 5)), b.reshape(e, (1, 12, 5)), dtype="int8")
    b.output(z, b.bias_add(b.scale(x, b.constant("g", [0.5, 1, -1, 2, 0.25], "fixed<6,3>")), w))
    return b.build()


def _held_and_fork():
    """A streamed broadcast operand (held whole) and a tensor read by three stages (forked)."""
    b = GraphBuilder("held")
    x = b.input("x", (1, 4, 4, 3), "fixed<8,3>")
    g = b.input("g", (1, 1, 1, 3), "fixed<8,2>")
    r = b.relu(x)
    y = b.mul(r, g, dtype="fixed<12,4>")
    b.output(r, y, b.add(x, r))
    return b.build()


@pytest.mark.verilator
@pytest.mark.parametrize("make", [_every_map_op, _held_and_fork])
@pytest.mark.pyverilator
def test_map_and_fork_stages_are_bit_exact_at_the_predicted_rate(make, tmp_path):
    graph = make()
    plan = plan_of(graph)
    result = simulate(graph, tmp_path, frames=8, plan=plan)
    assert result.passed, result.report()
    assert result.compared == 8 * sum(graph.types[o].size for o in graph.outputs)
    assert result.frame_cycles == plan.cycles  # one element per cycle, held inputs read once per frame
    assert result.ratio <= 1.10
    assert {s.kind for s in plan.stages} >= ({"map", "fork"} if make is _held_and_fork else {"map"})
    assert all(s.busy > 0 for s in result.stages)
    assert lint(tmp_path) == ""


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_rtlsim_reports_a_timeout_instead_of_hanging(tmp_path):
    graph = _held_and_fork()
    result = simulate(graph, tmp_path, frames=1, timeout_cycles=5)
    assert not result.passed
    assert result.deadlock == "timed out after 5 cycles (--timeout-cycles) before every output arrived"
    assert result.report().startswith("DEADLOCK: timed out after 5 cycles")


def test_design_files_are_deterministic_and_self_contained():
    graph = _every_map_op()
    plan = plan_of(graph)
    files = emit_verilog(graph, plan)
    assert files == emit_verilog(graph, plan)
    manifest = json.loads(files["manifest.json"])
    assert manifest["top"] == plan.top and manifest["sim_top"] == f"{plan.top}_sim"
    for source in manifest["sim_sources"]:
        assert source in files
    for name in ("hlsf_fifo.v", "hlsf_assign.v"):
        assert name in manifest["sources"]
    top = files[f"{plan.top}.v"]
    for port in (plan.inputs[0].name, plan.outputs[0].name):
        for suffix in ("TDATA", "TVALID", "TREADY", "TLAST"):
            assert f"{port}_{suffix}" in top
    assert "input  wire ap_clk" in top and "input  wire ap_rst_n" in top
    for channel in plan.channels:
        assert f".DEPTH({channel.depth})" in top
    mems = [f for f in files if f.endswith(".mem")]
    assert mems and all(f'$readmemh("{m}"' in "".join(files.values()) for m in mems)


def test_float_graphs_are_refused_with_one_line():
    b = GraphBuilder("f")
    b.output(b.relu(b.input("x", (4,), "float32")))
    graph = b.build()
    with pytest.raises(HlsfuseError) as info:
        compile(graph, CompileOptions(target="verilog"))
    assert str(info.value) == (
        "tensor 'x' is float32: the Verilog target supports fixed-point and integer types only "
        "(use --target hls for float32 graphs)"
    )


def test_compile_targets(tmp_path):
    graph = _held_and_fork()
    both = compile(graph, CompileOptions(target="all")).files
    assert any(p.startswith("hls/") for p in both) and any(p.startswith("verilog/") for p in both)
    only = compile(graph, CompileOptions(target="verilog")).files
    assert not any(p.startswith("hls/") for p in only)
    assert {p for p in both if p.startswith("verilog/")} == {p for p in only if p.startswith("verilog/")}


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_cli_compiles_and_simulates(tmp_path):
    from hlsfuse.graph_json import save_graph

    save_graph(_held_and_fork(), tmp_path / "g.json")
    done = run_cli("compile", "g.json", "-o", "out", "--target", "verilog", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    done = run_cli("rtlsim", "out", "--frames", "3", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASS: ") and " in 3 frame(s) match the reference" in lines[0]
    assert lines[1].startswith("cycles: ") and "per frame in steady state (predicted " in lines[1]
    vcd = tmp_path / "wave.vcd"
    done = run_cli("rtlsim", "out", "--vcd", str(vcd), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert vcd.read_text().startswith("$") and "ap_clk" in vcd.read_text()
    # one frame has no steady state: the report says what it measured and how to get the rate
    assert "from the first input to the last output of the frame (predicted " in done.stdout.splitlines()[1]
    assert "measure it with --frames 2 or more" in done.stdout
    done = run_cli("rtlsim", "out", "--vcd", str(vcd), cwd=tmp_path, timeout=600)  # never overwrites a file silently
    assert done.returncode == 2
    assert done.stderr == f"hlsfuse: error: {vcd}: already exists; remove it or name another --vcd file\n"


def test_cli_rtlsim_errors_are_one_line(tmp_path):
    done = run_cli("rtlsim", "nowhere", cwd=tmp_path, timeout=600)
    assert done.returncode == 2
    assert done.stderr == (
        "hlsfuse: error: nowhere: no Verilog design here (expected nowhere/verilog/manifest.json); "
        "run hlsfuse compile --target verilog (or all) first\n"
    )
    done = run_cli("rtlsim", "nowhere", "--frames", "0", cwd=tmp_path, timeout=600)
    assert done.returncode == 2 and "--frames: must be at least 1, not 0" in done.stderr


def test_rtlsim_api_checks_its_arguments(tmp_path):
    design(_held_and_fork(), tmp_path)
    with pytest.raises(HlsfuseError, match="driver must be one of pyverilator, native, not 'icarus'"):
        rtlsim(tmp_path, driver="icarus")
    with pytest.raises(HlsfuseError, match="frames must be at least 1, not 0"):
        rtlsim(tmp_path, frames=0)


def test_wide_dot_products_are_trees_of_small_adders():
    """A sum of hundreds of products is a tree of adders of at most SUM_TERMS terms (one expression of them all
    takes g++ a minute to compile once Verilator makes it C++)."""
    b = GraphBuilder("wide")
    x = b.input("x", [1, 6, 6, 40])
    w = b.constant("w", np.linspace(-1, 1, 3 * 3 * 40 * 4).reshape(3, 3, 40, 4), dtype="fixed<8,2>")
    b.output(b.conv2d(x, w, padding=(1, 1, 1, 1), dtype="fixed<16,6,RND,SAT>"))
    graph = b.build()
    text = next(v for k, v in emit_verilog(graph, plan_of(graph)).items() if "conv2d" in k and k.endswith(".v"))
    sums = re.findall(r"wire signed \[63:0\] (\w+) = ((?:\w+ \+ )+\w+);", text)
    products = [name for name, _ in sums if name.startswith("pr_")]
    assert len(re.findall(r"wire signed \[63:0\] pr_\d+ = ", text)) == 360  # SIMD 360: the whole window
    assert sums and max(expr.count(" + ") + 1 for _, expr in sums) <= SUM_TERMS and not products
    parts, level = [name for name, _ in sums if name.startswith("acc_part")], 360
    expected = 0
    while level > SUM_TERMS:  # 360 products: 23 adders, then 2 adders of their sums, then acc itself
        level = -(-level // SUM_TERMS)
        expected += level
    assert len(parts) == expected


@pytest.mark.verilator
@pytest.mark.pyverilator
def test_models_are_cached_by_content(tmp_path):
    graph = _held_and_fork()
    simulate(graph, tmp_path / "a", frames=1)  # built now or by an earlier test
    again = simulate(graph, tmp_path / "b", frames=1)  # same content in another folder: no rebuild
    assert again.passed and not again.built
    changed = _held_and_fork_named("held2")  # a different design: its own model
    other = simulate(changed, tmp_path / "c", frames=1)
    assert other.passed
    assert simulate(changed, tmp_path / "d", frames=1).built is False


def _held_and_fork_named(name):
    from hlsfuse.graph_json import graph_from_dict, graph_to_dict

    data = graph_to_dict(_held_and_fork())
    data["name"] = name
    return graph_from_dict(data)


def test_the_verilog_backend_takes_nothing_from_the_hls_backend():
    # it builds its own view from the plan and the schedules; the module structure is in templates/verilog
    folder = Path(__file__).resolve().parents[1] / "hlsfuse" / "backends" / "verilog"
    for source in sorted(folder.glob("*.py")):
        text = source.read_text()
        assert "backends.hls" not in text and "from ..hls" not in text and "import hls" not in text, source.name
        # statements are the template's: no "assign ... ;", "... <= ...;" or "always" spelled in Python
        for line in text.splitlines():
            code = line.split("#")[0]
            assert not re.search(r"[\"']\s*(assign|always|wire|reg)\b[^\"']*;", code), f"{source.name}: {line.strip()}"
