"""The native rtlsim driver observes exactly what the pyverilator driver observes, and fails with clear messages.

Each design is simulated by both drivers on the same input streams; their ``Run``s (outputs, the cycle of every
output element, first input, total cycles, per-stage busy/stall, deadlock report) must be identical. Three designs
run side by side in one (tests/union.py: one model per driver), one keeping the port names Verilator renames. The
deadlocking design is built from map and fork stages alone: a fork feeds a stage that holds the whole tensor
before it writes (``s0``) and, over a 2-deep skip FIFO, a stage that first holds ``s0``'s output; with the
lowering's FIFO depths it runs, with every depth forced to 2 the fork blocks on the skip branch.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from rtl_design import design, plan_of
from union import union

from hlsfuse import GraphBuilder, reference
from hlsfuse.errors import HlsfuseError
from hlsfuse.sim import tools
from hlsfuse.sim.rtlsim import read_manifest, rtlsim
from hlsfuse.sim.rtlsim_native import drive_native
from hlsfuse.sim.rtlsim_pyverilator import drive_pyverilator

pytestmark = pytest.mark.verilator


def _zoo():
    """Several inputs and outputs of signed, unsigned and integer types up to 64 bits, broadcasts and forks."""
    b = GraphBuilder("zoo")
    x = b.input("x", [2, 3, 4])
    w = b.input("w", [5], dtype="fixed<32,16>")
    r = b.relu(x)
    b.output(
        r,
        b.add(x, r, dtype="fixed<16,6,RND,SAT>"),
        b.mul(x, b.constant("c", np.linspace(-2, 2, 4), dtype="fixed<8,3>"), dtype="fixed<12,4,RND_CONV,WRAP>"),
        b.cast(x, "int8"),
        b.relu(x, dtype="ufixed<8,4,RND,SAT>"),
        b.mul(w, w, dtype="fixed<64,24,RND,SAT>"),
        b.cast(w, "uint16"),
        b.cast(w, "fixed<64,40>"),
    )
    return b.build()


def _reconvergent():
    """x -> fork -> (s0: x held, broadcast to [8, 4]) -> fork -> s1 (holds s0's output, reads x held)."""
    b = GraphBuilder("reconv")
    x = b.input("x", [4])
    h = b.add(x, b.constant("c", np.linspace(-1, 1, 32).reshape(8, 4)))
    z = b.add(b.mul(h, b.constant("d", np.linspace(-2, 2, 64).reshape(2, 8, 4))), b.relu(x))
    b.output(h, z)
    return b.build()


def _awkward():
    """Ports Verilator renames in C++ ('new' becomes the port new_, whose new__TDATA is escaped), unsigned, int8."""
    b = GraphBuilder("awkward")
    x = b.input("new", [3, 5], dtype="ufixed<7,3>")
    y = b.input("y", [5], dtype="int8")
    b.output(b.sub(x, y, dtype="fixed<9,9,RND,SAT>"), b.relu(x, dtype="ufixed<5,2,RND,SAT>"), b.cast(y, "int8"))
    return b.build()


def _streams(graph, manifest, frames, seed=0):
    raw = [reference.quantize_inputs(graph, reference.random_inputs(graph, seed + k)) for k in range(frames)]
    inputs = {
        p["name"]: np.concatenate([f[p["tensor"]].reshape(-1) for f in raw]).astype(np.int64)
        for p in manifest["ports"]
        if p["direction"] == "in"
    }
    expect = {
        p["name"]: frames * int(np.prod(p["shape"], dtype=np.int64))
        for p in manifest["ports"]
        if p["direction"] == "out"
    }
    return inputs, expect


def _both(graph, folder, frames, plan=None, timeout=100_000):
    design(graph, folder, plan)
    return _drive_both(graph, folder, frames, timeout)


def _drive_both(graph, folder, frames, timeout=100_000):
    """The Runs of both drivers of the design in ``folder`` on the same ``frames`` seeded frames."""
    vdir = folder / "verilog"
    manifest = read_manifest(vdir)
    inputs, expect = _streams(graph, manifest, frames)
    py, _ = drive_pyverilator(vdir, manifest, inputs, expect, timeout)
    native, _ = drive_native(vdir, manifest, inputs, expect, timeout)
    return py, native


def _assert_same(py, native):
    assert py.outputs.keys() == native.outputs.keys()
    for port in py.outputs:
        assert native.outputs[port].dtype == np.int64
        np.testing.assert_array_equal(native.outputs[port], py.outputs[port], err_msg=f"outputs of {port}")
        np.testing.assert_array_equal(native.out_cycles[port], py.out_cycles[port], err_msg=f"cycles of {port}")
    for field in ("first_input", "cycles", "busy", "stall", "stalled", "full", "deadlock", "timed_out"):
        assert getattr(native, field) == getattr(py, field), field


SAME_RUN = {"_zoo": _zoo, "_awkward": _awkward, "_reconvergent": _reconvergent}
AWKWARD = 1  # its names are kept in the union: 'new' stays a port Verilator renames


@pytest.fixture(scope="module")
def same_run(tmp_path_factory):
    """The designs of SAME_RUN in one, simulated by both drivers on the same 3 frames, and by rtlsim with both."""
    graphs = [make() for make in SAME_RUN.values()]
    graph = union(graphs, "same", keep_names=(AWKWARD,))
    folder = tmp_path_factory.mktemp("same")
    py, native = _both(graph, folder, frames=3)
    return {"graphs": graphs, "graph": graph, "folder": folder, "manifest": read_manifest(folder / "verilog"),
            "py": py, "native": native, "native_rtlsim": rtlsim(folder, frames=3, driver="native", graph=graph),
            "pyverilator_rtlsim": rtlsim(folder, frames=3, graph=graph)}


@pytest.mark.parametrize("name", SAME_RUN)
@pytest.mark.pyverilator
def test_native_and_pyverilator_observe_the_same_run(name, same_run):
    py, native, result = same_run["py"], same_run["native"], same_run["native_rtlsim"]
    _assert_same(py, native)
    assert not native.deadlock and not native.timed_out
    k = list(SAME_RUN).index(name)
    tensors = {("" if k == AWKWARD else f"g{k}_") + t for t in same_run["graphs"][k].outputs}
    ports = [p["name"] for p in same_run["manifest"]["ports"] if p["direction"] == "out" and p["tensor"] in tensors]
    assert len(ports) == len(tensors)
    assert any(v < 0 for v in np.concatenate([native.outputs[p] for p in ports]))  # sign-extended, not raw bus bits
    assert result.passed, result.report()
    assert not result.built  # drive_native above built it
    assert result.report() == same_run["pyverilator_rtlsim"].report().replace("pyverilator", "native")


@pytest.mark.pyverilator
def test_both_drivers_report_the_same_deadlock(tmp_path):
    graph = _reconvergent()
    py, native = _both(graph, tmp_path, frames=2, plan=plan_of(graph, depth=2))
    _assert_same(py, native)
    assert native.deadlock and not native.timed_out
    assert native.stalled == ("fork_x", "s0_add", "s1_mul_relu_add")
    assert native.full == ("ch_x", "ch_x_3")
    result = rtlsim(tmp_path, frames=2, driver="native", graph=graph)
    assert result.deadlock == (
        "no stage made progress for 64 cycles after 80 cycles; stalled stages: fork_x, s0_add, s1_mul_relu_add; "
        "full channels: ch_x (2 deep), ch_x_3 (2 deep)"
    )


@pytest.mark.parametrize("timeout", [1, 37])
@pytest.mark.pyverilator
def test_both_drivers_stop_at_the_same_timeout(timeout, same_run):
    py, native = _drive_both(same_run["graph"], same_run["folder"], frames=2, timeout=timeout)
    _assert_same(py, native)
    assert native.timed_out and native.cycles == timeout


def test_native_model_is_cached_and_traces_to_vcd(same_run, tmp_path):
    graph, vdir = same_run["graph"], same_run["folder"] / "verilog"
    manifest = read_manifest(vdir)
    inputs, expect = _streams(graph, manifest, frames=1)
    first, built = drive_native(vdir, manifest, inputs, expect, 10_000)
    assert not built  # same_run built it
    again, built = drive_native(vdir, manifest, inputs, expect, 10_000)
    assert not built
    _assert_same(first, again)
    vcd = tmp_path / "wave.vcd"
    traced, _ = drive_native(vdir, manifest, inputs, expect, 10_000, vcd=str(vcd))
    _assert_same(first, traced)
    text = vcd.read_text()
    assert "$enddefinitions" in text and "x_TDATA" in text and f"#{10 * first.cycles - 5}\n" in text


def test_verilators_runtime_is_compiled_once_for_every_model(tmp_path, monkeypatch):
    """From a cold cache: the first build compiles Verilator's runtime library (verilated*.o) and keeps it;
    the builds after it, of other designs, compile only their model."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compiled = []
    real = tools.run

    def spy(cmd, cwd=None, timeout=None):
        done = real(cmd, cwd, timeout)
        if cmd[0] == "make":
            compiled.append({Path(o).name for o in re.findall(r" -c -o (\S+)", done.stdout)})
        return done

    monkeypatch.setattr(tools, "run", spy)
    for make in (_reconvergent, _awkward, _zoo):
        graph = make()
        design(graph, tmp_path / graph.name)
        manifest = read_manifest(tmp_path / graph.name / "verilog")
        inputs, expect = _streams(graph, manifest, frames=2)
        run, built = drive_native(tmp_path / graph.name / "verilog", manifest, inputs, expect, 10_000)
        assert built and not run.deadlock and not run.timed_out
    runtime = {"verilated.o", "verilated_threads.o"}
    assert runtime <= compiled[0] and "harness.o" in compiled[0]
    assert [c & runtime for c in compiled[1:]] == [set(), set()] and all("harness.o" in c for c in compiled)
    (kept,) = (tmp_path / "cache" / "hlsfuse" / "rtlsim").glob("runtime-*")
    assert {p.name for p in kept.iterdir()} == runtime | {f"{name}.sha256" for name in runtime}


def test_missing_verilator_is_one_clear_error(tmp_path, monkeypatch):
    graph = _reconvergent()
    design(graph, tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(
        HlsfuseError, match=r"^verilator is not installed; rtlsim needs it \(apt-get install verilator\)$"
    ):
        rtlsim(tmp_path, driver="native", graph=graph)


def test_a_failed_build_names_the_first_error_and_the_log(tmp_path):
    graph = _reconvergent()
    design(graph, tmp_path)
    stage = tmp_path / "verilog" / "reconv_s0_add.v"
    stage.write_text(stage.read_text().replace("endmodule", "wire broken = ;\nendmodule"))
    with pytest.raises(HlsfuseError) as info:
        rtlsim(tmp_path, driver="native", graph=graph, allow_edits=True)
    message = str(info.value)
    assert message.startswith("Verilator could not build 'reconv_sim': %Error: ")
    assert "reconv_s0_add.v" in message.splitlines()[0]
    log = message.rsplit("(full log: ", 1)[1].rstrip(")")
    with open(log) as text:
        assert "reconv_s0_add.v" in text.read()


def test_a_crash_of_the_model_is_one_clear_error(tmp_path):
    graph = _reconvergent()
    design(graph, tmp_path)
    (rom,) = (tmp_path / "verilog").glob("*_s0_add_*.mem")
    rom.write_text("zz not hex\n")
    with pytest.raises(HlsfuseError, match=r"\.mem: changed since hlsfuse compile wrote it"):
        rtlsim(tmp_path, driver="native", graph=graph)
    with pytest.raises(HlsfuseError, match=r"^native rtlsim of 'reconv_sim' was killed by SIGABRT: %Error: .*\.mem"):
        rtlsim(tmp_path, driver="native", graph=graph, allow_edits=True)
