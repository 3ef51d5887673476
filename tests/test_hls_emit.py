"""The HLS C++ backend without a compiler: files, names, exact constants, errors.

tests/test_snapshots.py keeps the generated code byte for byte; tests/test_csim.py compiles and runs
what is emitted.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from map_graphs import awkward_names, fixed_zoo, float_zoo, small_graph

from hlsfuse import OPS, FixedType, HlsfuseError, fuse, reference
from hlsfuse.backends.hls import STAGE_VIEWS, HlsOptions, emit_hls
from hlsfuse.backends.hls.context import make_context
from hlsfuse.backends.hls.cxx import float_literal, literal, raw_lines
from hlsfuse.backends.hls.expr import Stmt
from hlsfuse.backends.templates import comment, environment, render
from hlsfuse.boards import Target
from hlsfuse.lower import lower
from hlsfuse.lower.elements import broadcast_digits
from hlsfuse.ops import lut as lut_ops
from hlsfuse.resources import hw_dir

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def fails(message: str):
    """Expect an HlsfuseError with exactly this message."""
    return pytest.raises(HlsfuseError, match=f"^{re.escape(message)}$")


def emit(graph, target: Target | None = None, **options):
    return emit_hls(graph, lower(graph, fuse(graph)), HlsOptions(**options), target)


@pytest.fixture(scope="module")
def zoo_files():
    return emit(fixed_zoo())


# --------------------------------------------------------------------------
# The project
# --------------------------------------------------------------------------


def test_project_files():
    files = emit(small_graph())
    assert set(files) == {
        # 'small' is a Verilog keyword (a charge strength): the design, named for both backends, is 'small_'
        "small_.cpp", "small_.h", "types.h", "weights.h", "luts.h", "tb_small_.cpp", "hls_config.cfg", "run_hls.tcl",
        "cosim.tcl", "Makefile", "ports.json", "include/ap_int.h", "include/ap_int_wide.h", "include/ap_fixed.h",
        "include/hls_stream.h", "include/ap_axi_sdata.h", "hlsfuse/numeric.h", "data/x.txt",
        "data/sigmoid0.txt", "data/relu0.txt",
    }
    hls = hw_dir() / "hls"
    assert files["include/ap_fixed.h"] == (hls / "include" / "ap_fixed.h").read_text()
    assert files["hlsfuse/numeric.h"] == (hls / "hlsfuse" / "numeric.h").read_text()


def test_identical_inputs_give_identical_files_in_fresh_processes():
    script = (
        "import hashlib, sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from map_graphs import fixed_zoo\n"
        "from hlsfuse import fuse\n"
        "from hlsfuse.lower import lower\n"
        "from hlsfuse.backends.hls import emit_hls\n"
        "g = fixed_zoo()\n"
        "files = emit_hls(g, lower(g, fuse(g)))\n"
        "print(hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest())\n"
    )
    root = Path(__file__).parent.parent
    digests = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_top_function_interface_and_dataflow(zoo_files):
    cpp = zoo_files["fixed_zoo.cpp"]
    plan = lower(fixed_zoo(), fuse(fixed_zoo()))
    for port in plan.inputs + plan.outputs:
        assert f"#pragma HLS INTERFACE axis port={port.name}\n" in cpp
    for ch in plan.channels:
        assert f"#pragma HLS STREAM variable={ch.name} depth={ch.depth}\n" in cpp
    assert cpp.count("#pragma HLS DATAFLOW") == 1
    assert "#pragma HLS INTERFACE ap_ctrl_none port=return" in cpp
    # every stage loop accepts one element per cycle
    assert cpp.count("for (int ") == cpp.count("#pragma HLS PIPELINE II=1")
    calls = re.findall(r"^    (\w+)\(", cpp.split("#pragma HLS DATAFLOW")[1], re.MULTILINE)
    stage_calls = [c for c in calls if c in {s.name for s in plan.stages}]
    assert stage_calls == [s.name for s in plan.stages]  # plan order, so C simulation runs in stream order


def test_options_reach_the_scripts():
    files = emit(small_graph(), Target(part="xc7z020clg400-1", clock=3.33), control="s_axilite")
    assert "part=xc7z020clg400-1\n" in files["hls_config.cfg"] and "clock=3.33ns\n" in files["hls_config.cfg"]
    assert "set_part xc7z020clg400-1\n" in files["run_hls.tcl"]
    assert "create_clock -period 3.33 -name default\n" in files["run_hls.tcl"]
    assert "#pragma HLS INTERFACE s_axilite port=return bundle=control" in files["small_.cpp"]
    assert "ap_ctrl_none" not in files["small_.cpp"] and "disable_start_propagation" not in files["small_.cpp"]
    for step in ("csim_design", "csynth_design", "export_design -format ip_catalog"):
        assert step in files["run_hls.tcl"]
    # co-simulation is a step of its own, after synthesis
    assert "cosim_design" not in files["run_hls.tcl"] and "cosim_design" in files["cosim.tcl"]
    for script in ("run_hls.tcl", "cosim.tcl"):
        assert f"vitis-run --mode hls --tcl {script}" in files[script]
    # the C++ standard the code needs, for synthesis and the testbench alike (UG1399 C-synthesis sources)
    assert "syn.cflags=-std=c++14\n" in files["hls_config.cfg"] and "tb.cflags=-std=c++14\n" in files["hls_config.cfg"]
    assert files["run_hls.tcl"].count('-cflags "-std=c++14"') == 2
    free = emit(small_graph())["small_.cpp"]  # a free-running pipeline needs no start tokens (UG1399)
    assert "#pragma HLS INTERFACE ap_ctrl_none port=return" in free
    assert "#pragma HLS DATAFLOW disable_start_propagation" in free


@pytest.mark.parametrize(
    "options, message",
    [
        ({"control": "ap_ctrl_hs"}, "option 'control' must be one of none, s_axilite, not 'ap_ctrl_hs'"),
        ({"seed": -1}, "option 'seed' must be a non-negative integer, not -1"),
        ({"float_rtol": -1e-3}, "option 'float_rtol' must be a non-negative number, not -0.001"),
    ],
)
def test_bad_options_are_named(options, message):
    with fails(message):
        HlsOptions(**options)


def test_data_files_hold_raw_inputs_and_golden_outputs():
    g = small_graph()
    files = emit(g, seed=3)  # two frames by default, so that state one frame leaves to the next shows in csim
    frames = [reference.quantize_inputs(g, reference.random_inputs(g, 3 + k)) for k in range(2)]
    values = [reference.run_raw(g, raw) for raw in frames]
    for name in ("x", "sigmoid0", "relu0"):
        lines = files[f"data/{name}.txt"].splitlines()
        assert [int(v) for v in lines] == [int(v) for frame in values for v in frame[name].reshape(-1)]
    assert len(emit(g, frames=3)["data/x.txt"].splitlines()) == 3 * g.types["x"].size
    floats = emit(float_zoo(), frames=1)["data/f.txt"].splitlines()
    expected = reference.random_inputs(float_zoo(), 0)["f"].reshape(-1)
    assert np.array_equal(np.array([np.float32(v) for v in floats]), expected)


def test_ports_json_describes_the_ports():
    import json

    data = json.loads(emit(small_graph())["ports.json"])
    assert data["top"] == "small_"
    assert [(p["name"], p["direction"], p["dtype"], p["shape"]) for p in data["ports"]] == [
        ("x", "in", "fixed<8,3>", [1, 2, 3]),
        ("sigmoid0", "out", "ufixed<6,0,RND,SAT>", [1, 2, 3]),
        ("relu0", "out", "fixed<10,4,RND,SAT>", [1, 2, 3]),
    ]


# --------------------------------------------------------------------------
# Exact constants: ROMs and lookup tables
# --------------------------------------------------------------------------


def _array(text: str, name: str) -> list[str]:
    """The values of a lookup table (luts.h) or of a ROM's value list (weights.h)."""
    if m := re.search(rf"#define HLSFUSE_ROM_{name} \\\n(.*?)\n\n", text, re.DOTALL):
        body = m.group(1).replace("\\", "")
    else:
        body = re.search(rf"\b{name}\[\d+\] = \{{\n(.*?)\n\}};", text, re.DOTALL).group(1)
    return [v.strip() for v in body.split(",") if v.strip()]


def test_roms_hold_the_constants_raw_integers_exactly(zoo_files):
    g = fixed_zoo()
    plan = lower(g, fuse(g))
    assert {r.constant for r in plan.roms} == {c.name for c in g.constants}
    for rom in plan.roms:
        const = g.constant_map[rom.constant]
        items = _array(zoo_files["weights.h"], rom.name)
        assert [eval(v) for v in items] == const.data.reshape(-1).tolist(), rom.name  # C integer literals
    # 59 and 64 bits: shorter in hexadecimal than in decimal (and -2**63 is no valid decimal literal)
    assert "0x7ffffffffffffff," in zoo_files["weights.h"] and "(-0x7fffffffffffffff-1)," in zoo_files["weights.h"]


def test_raw_integers_take_the_fewest_characters():
    values = [0, -3, 127, (1 << 36) - 1, 1 << 40, (1 << 40) - 1, -(1 << 63), (1 << 63) - 1]
    assert raw_lines(np.array(values), per_line=4) == (  # 2**40 is 13 characters either way: the decimal stays
        "0,-3,127,68719476735", "1099511627776,0xffffffffff,(-0x7fffffffffffffff-1),0x7fffffffffffffff")
    assert raw_lines(np.array([-1, 5]), signed=False) == ("0xffffffffffffffff,5",)  # a ufixed<64>'s bit pattern
    assert len(raw_lines(np.zeros(130, dtype=np.int64))) == 3


def test_lookup_tables_are_the_ops_tables(zoo_files):
    g = fixed_zoo()
    luts = zoo_files["luts.h"]
    names = re.findall(r"static const \S+(?: \S+)*? (lut_\w+)\[", luts)
    assert len(names) == 3
    for node in g.nodes:
        if node.op not in ("sigmoid", "tanh", "exp"):
            continue
        sig = g.sigs[node.name]
        table = lut_ops.table_of(node.op, sig)
        used = re.search(rf"t_{node.name} v_{node.name} = hlsf::element<t_{node.name}>\((lut_\w+)\[hlsf::lut_index"
                         rf"<(\d+), (\w+), (\d+)>", zoo_files["fixed_zoo.cpp"])
        assert used is not None, node.name
        name, width, signed, shift = used.groups()
        assert (int(width), signed, int(shift)) == (table.in_fmt.width, str(table.in_fmt.signed).lower(), table.shift)
        assert [int(v) for v in _array(luts, name)] == table.entries.tolist()  # raw integers


def test_fixed_literals_are_exact_doubles_or_raw_integers():
    t = FixedType(60, 30)
    assert literal(3 << 20, t, "t_w").value == repr(math.ldexp(3 << 20, -30))
    assert literal(3 << 20, t, "t_w").typed == f"t_w({math.ldexp(3 << 20, -30)!r})"
    assert literal((1 << 59) - 1, t, "t_w").value == "hlsf::from_raw<t_w>(576460752303423487LL)"
    wide = FixedType(64, 64)
    assert literal(-(1 << 63) + 1, wide, "t").value == "hlsf::from_raw<t>(-9223372036854775807LL)"
    assert literal(-(1 << 63), FixedType(64, 0), "t").value == "-0.5"  # one significant bit
    assert literal(-(1 << 63) + 3, FixedType(64, 0), "t").value == "hlsf::from_raw<t>(-9223372036854775805LL)"
    # 2**-63 * (2**63 - 1): 63 significant bits, no double holds it
    assert literal((1 << 63) - 1, FixedType(64, 1), "t").value == "hlsf::from_raw<t>(9223372036854775807LL)"


@settings(max_examples=200)
@given(st.integers(1, 64), st.integers(-20, 70), st.data())
def test_decimal_literals_read_back_exactly(width, int_bits, data):
    t = FixedType(width, int_bits)
    raw = data.draw(st.integers(t.raw_min, t.raw_max))
    text = literal(raw, t, "t").value
    if text.startswith("hlsf::from_raw"):
        assert text == f"hlsf::from_raw<t>({raw}LL)"
    else:
        assert math.ldexp(float(text), t.frac) == raw


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_literals_read_back_exactly(value):
    text = float_literal(value).value
    assert text.endswith("f") and np.float32(float(text[:-1])) == np.float32(value)


def test_float_specials():
    assert float_literal(float("inf")).value == "std::numeric_limits<float>::infinity()"
    assert float_literal(float("-inf")).value == "-std::numeric_limits<float>::infinity()"
    assert float_literal(float("nan")).value == "std::numeric_limits<float>::quiet_NaN()"


# --------------------------------------------------------------------------
# Broadcast indexing
# --------------------------------------------------------------------------


@st.composite
def broadcasts(draw):
    out = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    keep = draw(st.integers(0, len(out)))
    inner = [d if draw(st.booleans()) else 1 for d in out[len(out) - keep:]]
    return tuple(out), tuple(inner)


@settings(max_examples=200)
@given(broadcasts())
def test_broadcast_digits_index_like_numpy(shapes):
    out, operand = shapes
    expected = np.broadcast_to(np.arange(math.prod(operand)).reshape(operand), out).reshape(-1)
    i = np.arange(math.prod(out))
    got = sum(((i // inner) % size) * stride for inner, size, stride in broadcast_digits(out, operand))
    assert np.array_equal(np.broadcast_to(got, expected.shape), expected)


def test_broadcast_digits_merge_dims():
    assert broadcast_digits((2, 3, 4), (4,)) == ((1, 4, 1),)
    assert broadcast_digits((2, 3, 4), (2, 1, 4)) == ((1, 4, 1), (12, 2, 4))
    assert broadcast_digits((2, 3, 4), (2, 3, 4)) == ((1, 24, 1),)
    assert broadcast_digits((5, 1, 7), (1,)) == ()


def test_broadcast_counters_in_the_generated_loop(zoo_files):
    stage = re.search(r"static void s5_minimum\(.*?\n}\n", zoo_files["fixed_zoo.cpp"], re.DOTALL).group(0)
    # minimum(y [2,3,4], n [2,1,4]): n is held whole and read at k1 * 4 + k0
    assert "t_n a_n[8] = {};" in stage  # registers, filled by the stage's first iterations
    assert "a_n[k0 + k1 * 4]" in stage
    assert "k0 = k0 == 3 ? 0 : k0 + 1;" in stage and "if (r0 == 11) {" in stage


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------


def test_generated_names_are_unique_identifiers():
    g = awkward_names()
    plan = lower(g, fuse(g))
    ctx = make_context(g, plan, HlsOptions())
    names = ctx.names
    mine = [*names.types.values(), *names.values.values(), *names.arrays.values(), *names.packets.values(),
            *names.adapters.values(), *{t.name for t in ctx.tables.values()}]
    plan_names = [plan.top, *(s.name for s in plan.stages), *(c.name for c in plan.channels),
                  *(p.name for p in plan.inputs + plan.outputs), *(r.name for r in plan.roms)]
    assert all(IDENT.match(n) and "__" not in n for n in mine)
    assert len(set(mine + plan_names)) == len(mine) + len(plan_names)
    assert names.types["int"] == "t_int" and names.types["t_int"] == "t_t_int"
    assert names.types["x-y"] == "t_x_y" and names.types["x_y"] == "t_x_y_2"
    # loop counters shadow no port (the adapter of port "i" has a parameter "i")
    assert (names.local("i"), names.local("k0"), names.local("j")) == ("i_2", "k0_2", "j")
    tb = emit(g)["tb_awkward.cpp"]
    assert 'hls::stream<::axis_i> i("i");' in tb and 'hls::stream<::axis_data> data_2("data");' in tb


def test_plan_identifiers_are_checked():
    g = small_graph()
    plan = lower(g, fuse(g))
    with fails("dataflow plan: top function name 'my top' is not a usable C++ identifier"):
        emit_hls(g, dataclasses.replace(plan, top="my top"))
    with fails("dataflow plan: top function name 'hlsf' is not a usable C++ identifier"):
        emit_hls(g, dataclasses.replace(plan, top="hlsf"))
    stage = plan.stages[0]
    clash = dataclasses.replace(plan, stages=(dataclasses.replace(stage, name=plan.channels[0].name), *plan.stages[1:]))
    with fails(f"dataflow plan: channel name '{plan.channels[0].name}' is also the name of a stage"):
        emit_hls(g, clash)
    with fails("dataflow plan is for graph 'other', not 'small'"):
        emit_hls(g, dataclasses.replace(plan, graph="other"))


# --------------------------------------------------------------------------
# What the backend refuses
# --------------------------------------------------------------------------


def test_stage_kinds_without_a_view_builder_are_refused(monkeypatch):
    g = small_graph()
    plan = lower(g, fuse(g))
    monkeypatch.delitem(STAGE_VIEWS, "map")
    with fails("stage kind 'map' is not supported by the HLS backend yet (stage 's0_bias_add_relu')"):
        emit_hls(g, plan)


def test_every_map_op_of_the_registry_has_a_micro_op_and_ops_j2_a_macro_for_it():
    source = (Path(__file__).parents[1] / "templates" / "hls" / "ops.j2").read_text()
    table = source[source.index("{% set MACROS"):source.index("} %}", source.index("{% set MACROS"))]
    macros = set(re.findall(r'"(\w+)":', table))
    # custom is never compiled; an identity transpose runs in a map loop
    map_ops = [op for op in OPS.values() if op.compute is not None and (op.stream == "map" or op.name == "transpose")]
    assert {op.name for op in map_ops} >= {"add", "bias_add", "relu", "cast", "sigmoid", "reshape", "transpose"}
    micros = {op.micro for op in map_ops if not callable(op.micro)}
    # the callable ones: cast's, and a table op's lookup or, in float32, its function
    micros |= {"to_float", "assign", "lookup"} | {f"{function}_float" for name in lut_ops.TABLE_OPS
                                                  for function in lut_ops.functions_of(name)}
    assert all(op.micro is not None for op in map_ops)
    assert micros == macros


def test_statement_dispatch_rejects_unknown_statements():
    template = environment().from_string('{% import "hls/ops.j2" as ops %}{{ ops.statement(s) }}')
    stmt = Stmt(op="nope", node="n", out="v_n", type="t_n", args=(), is_float=False)
    with fails("ops.j2 has no macro for statement 'nope'"):
        template.render(s=stmt)


def test_templates_reject_missing_fields():
    with pytest.raises(jinja2.UndefinedError):
        render("hls/hls_config.cfg.j2", top="t", graph="g")


def test_comment_filter_keeps_comments_on_one_line():
    assert comment("a\nb\\") == "a_b_"
    assert comment("x ??/ y") == "x __/ y"  # no trigraph left
    assert comment("node 'relu0' fixed<8,3>[1,2]") == "node 'relu0' fixed<8,3>[1,2]"


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=40), st.integers(1, 9), st.booleans())
def test_raw_lines_read_back_as_the_values(values, per_line, narrow):
    raw = np.array([v >> 50 if narrow else v for v in values], dtype=np.int64)  # narrow: the spelled-range path
    lines = raw_lines(raw, per_line=per_line)
    assert all(len(line.split(",")) <= per_line for line in lines)
    items = [t for line in lines for t in line.split(",") if t]
    assert [eval(t) for t in items] == raw.tolist()  # C integer literals, read as Python's


def test_compiled_templates_are_cached_and_a_damaged_entry_is_compiled_again(tmp_path, monkeypatch):
    from hlsfuse.backends import templates

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    g = fixed_zoo()
    plan = lower(g, fuse(g))
    templates.environment.cache_clear()
    try:
        first = emit_hls(g, plan, HlsOptions())
        entries = list((tmp_path / "hlsfuse" / "jinja").glob("*.cache"))
        assert entries and not list((tmp_path / "hlsfuse" / "jinja").glob(".jinja-*"))  # no leftovers
        for entry in entries:  # truncated, as a run killed while writing would leave one without the rename
            entry.write_bytes(entry.read_bytes()[:20])
        templates.environment.cache_clear()
        assert emit_hls(g, plan, HlsOptions()) == first
    finally:
        templates.environment.cache_clear()
