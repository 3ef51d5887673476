"""Simulated cycles per second of the two rtlsim drivers, beside Verilator's own speed on the same model, and
the time each build takes.

The design is an elementwise pipeline (add, mul, relu, clip, a square and a bias on a fixed<16,6> tensor
of shape (64, 64, 8)): one map stage between two FIFOs, 32768 cycles per frame. It is compiled with
hlsfuse.compile (target verilog) and simulated by
  pyverilator  drive_pyverilator, for --py-cycles cycles (the model is built before timing)
  native       drive_native's binary (built before timing) for --frames frames; timed twice: end to end
               (run_model: input files, the process, output files, numpy) and the harness's cycle loop alone
  raw          the baseline: bench/rtlsim_raw.cpp, a bare Verilator loop over the same model with the same
               two evals per cycle and the same build flags but no bookkeeping, for as many cycles
The outputs of both drivers are checked against the reference interpreter; the ratios printed are
native / pyverilator and native / raw, so they compare across machines.

Then the native harness of ResNet-8 (examples/resnet8.json, its default folding) is built cold three ways
and simulated for --resnet-frames frames: as hlsfuse builds it (native_model, with a fresh cache, so
Verilator's runtime library is compiled too), as hlsfuse built it before (Verilator -O3 with its DFG pass
and its default file split, g++ -O3: the baseline), and as hlsfuse builds it but with g++ -O0. Printed:
build seconds and simulated cycles per second, their ratios to the baseline, and the build against the
90 s goal of a cold build on 2 cores. The first table's builds are cold too (one fresh cache each).

    python bench/rtlsim_speed.py [--frames N] [--py-cycles N] [--resnet-frames N]
"""

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, load_graph, reference
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.sim.rtlsim import read_manifest
from hlsfuse.sim.rtlsim_native import harness_text, native_model, run_model
from hlsfuse.sim.rtlsim_pyverilator import drive_pyverilator
from hlsfuse.sim.verilator import MAKE_VARS, VERILATOR_FLAGS

RESNET8 = Path(__file__).resolve().parents[1] / "examples" / "resnet8.json"
GOAL = 90.0  # seconds: a cold native build of ResNet-8 on 2 cores

SHAPE = (64, 64, 8)
DISTINCT_FRAMES = 4  # the run repeats this many random frames, so the golden outputs stay cheap


def pipeline_graph():
    rng = np.random.default_rng(0)
    b = GraphBuilder("rtlsim_speed", dtype="fixed<16,6>")
    x = b.input("x", list(SHAPE))
    y = b.add(x, b.constant("bias", rng.uniform(-1, 1, SHAPE[-1])), dtype="fixed<16,6,RND,SAT>")
    y = b.mul(y, b.constant("gain", rng.uniform(-2, 2, SHAPE[-1]), dtype="fixed<8,2>"), dtype="fixed<16,6,RND,SAT>")
    y = b.clip(b.relu(y), min=0.0, max=6.0)
    y = b.add(b.mul(y, y, dtype="fixed<16,6,RND,SAT>"), x, dtype="fixed<16,6,RND,SAT>")
    b.output(y)
    return b.build()


def streams(graph, frames: int):
    """(raw input stream of ``frames`` frames, golden output stream), from DISTINCT_FRAMES random frames."""
    distinct = [
        reference.quantize_inputs(graph, reference.random_inputs(graph, seed=k)) for k in range(DISTINCT_FRAMES)
    ]
    golden = [reference.run_raw(graph, f) for f in distinct]
    pick = [k % DISTINCT_FRAMES for k in range(frames)]
    x = np.concatenate([distinct[k]["x"].reshape(-1) for k in pick]).astype(np.int64)
    y = np.concatenate([golden[k][graph.outputs[0]].reshape(-1) for k in pick]).astype(np.int64)
    return x, y


def verilate(vdir: Path, manifest: dict, folder: Path, name: str, sources: list[str], flags, make_vars,
             cflags: str = "") -> Path:
    """``verilator --cc --exe --build`` of ``sources`` around the design's <top>_sim model, with Verilator's
    options ``flags`` and makefile variables ``make_vars``; the binary."""
    cmd = [
        "verilator", "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 1), "-Wno-fatal", *flags,
        "-MAKEFLAGS", " ".join(make_vars), "--top-module", manifest["sim_top"], "-Mdir", str(folder), "-o", name,
        *(["-CFLAGS", cflags] if cflags else []), *sources,
        *[str((vdir / s).resolve()) for s in manifest["sim_sources"]],
    ]
    subprocess.run(cmd, cwd=folder.parent, check=True, capture_output=True, text=True)
    return folder / name


def build_raw(vdir: Path, manifest: dict, work: Path) -> Path:
    """bench/rtlsim_raw.cpp around the design's <top>_sim model, built as the native driver builds."""
    (inp,) = [p["name"] for p in manifest["ports"] if p["direction"] == "in"]
    (out,) = [p["name"] for p in manifest["ports"] if p["direction"] == "out"]
    defines = (
        f"-DMODEL=V{manifest['sim_top']} -DIN_TDATA={inp}_TDATA -DIN_TVALID={inp}_TVALID -DOUT_TDATA={out}_TDATA "
        f"-DOUT_TREADY={out}_TREADY"
    )
    raw = str(Path(__file__).with_name("rtlsim_raw.cpp"))
    return verilate(vdir, manifest, work / "raw", "rtlsim_raw", [raw], VERILATOR_FLAGS, MAKE_VARS, defines)


# the native harness built otherwise, beside hlsfuse's build: the build before (Verilator -O3 with its DFG
# pass and default file split, g++ -O3), and hlsfuse's build with g++ -O0 (the quickest build there is)
OTHER_BUILDS = {
    "before": (("-O3",), ("OPT_FAST=-O3", "OPT_GLOBAL=-O2")),
    "-O0": (VERILATOR_FLAGS, tuple(v if not v.startswith("OPT_FAST=") else "OPT_FAST=-O0" for v in MAKE_VARS)),
}


def resnet8_builds(frames: int, work: Path) -> None:
    graph = load_graph(RESNET8)
    vdir = compile(graph, CompileOptions(target="verilog")).write(work / "resnet8") / "verilog"
    manifest = read_manifest(vdir)
    raw = [reference.quantize_inputs(graph, reference.random_inputs(graph, seed=k)) for k in range(frames)]
    golden = [reference.run_raw(graph, f) for f in raw]
    ins = {p["name"]: np.concatenate([f[p["tensor"]].reshape(-1) for f in raw]).astype(np.int64)
           for p in manifest["ports"] if p["direction"] == "in"}
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    want = {p["name"]: np.concatenate([g[p["tensor"]].reshape(-1) for g in golden]) for p in outs}
    harness = work / "harness.cpp"
    harness.write_text(harness_text(manifest, trace=False))
    rows = {}
    for build in ("before", "hlsfuse", "-O0"):
        start = time.perf_counter()
        if build == "hlsfuse":
            os.environ["XDG_CACHE_HOME"] = str(work / "cache-resnet8")  # cold, Verilator's runtime included
            binary, _ = native_model(vdir, manifest, trace=False)
        else:
            flags, make_vars = OTHER_BUILDS[build]
            binary = verilate(vdir, manifest, work / f"obj{build}", "harness", [str(harness)], flags, make_vars)
        seconds = time.perf_counter() - start
        run, loop = run_model(binary, vdir, manifest, ins, {k: v.size for k, v in want.items()},
                              100 * manifest["cycles"] * frames)
        ok = not run.deadlock and all(np.array_equal(run.outputs[k], v) for k, v in want.items())
        rows[build] = (seconds, run.cycles / loop, "PASS" if ok else "FAIL")
    print(f"\nResNet-8 ({len(graph.nodes)} nodes, {len(manifest['stages'])} stages, default folding), cold native "
          f"builds on {os.cpu_count()} cores, {frames} frames simulated:")
    print(f"{'build':10} {'build s':>8} {'/ before':>9} {'/ goal':>7} {'M cycles/s':>10} {'/ before':>9}  verdict")
    base_s, base_speed, _ = rows["before"]
    for build, (seconds, speed, verdict) in rows.items():
        print(f"{build:10} {seconds:8.1f} {seconds / base_s:9.2f} {seconds / GOAL:7.2f} {speed / 1e6:10.3f} "
              f"{speed / base_speed:9.2f}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--frames", type=int, default=320, help="frames of the native runs (default 320: 10.5 M cycles)"
    )
    parser.add_argument("--py-cycles", type=int, default=5000, help="cycles of the pyverilator run (default 5000)")
    parser.add_argument("--resnet-frames", type=int, default=8, help="frames of the ResNet-8 runs (default 8)")
    args = parser.parse_args()

    graph = pipeline_graph()
    with tempfile.TemporaryDirectory(prefix="hlsfuse-bench-") as tmp:
        work = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-py")  # fresh model caches: the build times below are real
        design = compile(graph, CompileOptions(target="verilog"))
        vdir = design.write(work / "out") / "verilog"
        manifest = read_manifest(vdir)
        (port,) = [p["name"] for p in manifest["ports"] if p["direction"] == "out"]
        x, want = streams(graph, args.frames)
        frame = int(np.prod(SHAPE))
        print(
            f"design: {', '.join(s['name'] for s in manifest['stages'])} ({len(graph.nodes)} nodes), "
            f"{frame} cycles per frame (predicted {manifest['cycles']})"
        )

        # pyverilator: build with a 1-cycle run, then time a short run
        start = time.perf_counter()
        drive_pyverilator(vdir, manifest, {"x": x[:frame]}, {port: frame}, 1)
        t_py_build = time.perf_counter() - start
        start = time.perf_counter()
        py_run, _ = drive_pyverilator(vdir, manifest, {"x": x[:frame]}, {port: frame}, args.py_cycles)
        t_py = time.perf_counter() - start
        got = py_run.outputs[port]
        py_ok = py_run.cycles == args.py_cycles and got.size > 0 and np.array_equal(got, want[: got.size])

        os.environ["XDG_CACHE_HOME"] = str(work / "cache-native")
        start = time.perf_counter()
        binary, _ = native_model(vdir, manifest, trace=False)
        t_native_build = time.perf_counter() - start
        expect = {port: want.size}
        timeout = 2 * want.size + 10_000
        start = time.perf_counter()
        native_run, t_loop = run_model(binary, vdir, manifest, {"x": x}, expect, timeout)
        t_native = time.perf_counter() - start
        native_ok = not native_run.deadlock and np.array_equal(native_run.outputs[port], want)

        raw = build_raw(vdir, manifest, work)
        done = subprocess.run([str(raw), str(native_run.cycles)], cwd=vdir, check=True, capture_output=True, text=True)
        t_raw = float(done.stdout.split()[0])
        resnet8_builds(args.resnet_frames, work)

    py_speed = py_run.cycles / t_py
    end_to_end = native_run.cycles / t_native
    loop = native_run.cycles / t_loop
    raw_speed = native_run.cycles / t_raw
    print(f"cold builds: pyverilator {t_py_build:.1f} s, native {t_native_build:.1f} s\n")
    print(f"{'driver':24} {'cycles':>11} {'seconds':>8} {'M cycles/s':>10}  verdict")
    rows = [
        ("pyverilator", py_run.cycles, t_py, py_speed, "PASS" if py_ok else "FAIL"),
        ("native (end to end)", native_run.cycles, t_native, end_to_end, "PASS" if native_ok else "FAIL"),
        ("native (cycle loop)", native_run.cycles, t_loop, loop, ""),
        ("raw Verilator baseline", native_run.cycles, t_raw, raw_speed, ""),
    ]
    for name, cycles, seconds, speed, verdict in rows:
        print(f"{name:24} {cycles:11d} {seconds:8.3f} {speed / 1e6:10.3f}  {verdict}")
    print(f"\nnative end to end / pyverilator: {end_to_end / py_speed:.0f}x")
    print(
        f"native end to end / raw Verilator: {end_to_end / raw_speed:.2f}  (cycle loop / raw: {loop / raw_speed:.2f})"
    )


if __name__ == "__main__":
    main()
