"""Simulated cycles per second of the two rtlsim drivers, beside Verilator's own speed on the same model.

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

    python bench/rtlsim_speed.py [--frames N] [--py-cycles N]
"""

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder, reference
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.sim.rtlsim import drive_pyverilator, read_manifest
from hlsfuse.sim.rtlsim_native import BUILD_FLAGS, native_model, run_model

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


def build_raw(vdir: Path, manifest: dict, work: Path) -> Path:
    """bench/rtlsim_raw.cpp around the design's <top>_sim model, with the native driver's flags."""
    (inp,) = [p["name"] for p in manifest["ports"] if p["direction"] == "in"]
    (out,) = [p["name"] for p in manifest["ports"] if p["direction"] == "out"]
    top = manifest["sim_top"]
    defines = (
        f"-DMODEL=V{top} -DIN_TDATA={inp}_TDATA -DIN_TVALID={inp}_TVALID -DOUT_TDATA={out}_TDATA "
        f"-DOUT_TREADY={out}_TREADY"
    )
    cmd = [
        "verilator",
        "--cc",
        "--exe",
        "--build",
        *BUILD_FLAGS,
        "--top-module",
        top,
        "-Mdir",
        str(work / "raw"),
        "-o",
        "rtlsim_raw",
        "-CFLAGS",
        defines,
        str(Path(__file__).with_name("rtlsim_raw.cpp")),
        *[str((vdir / s).resolve()) for s in manifest["sim_sources"]],
    ]
    subprocess.run(cmd, cwd=work, check=True, capture_output=True, text=True)
    return work / "raw" / "rtlsim_raw"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--frames", type=int, default=320, help="frames of the native runs (default 320: 10.5 M cycles)"
    )
    parser.add_argument("--py-cycles", type=int, default=5000, help="cycles of the pyverilator run (default 5000)")
    args = parser.parse_args()

    graph = pipeline_graph()
    with tempfile.TemporaryDirectory(prefix="hlsfuse-bench-") as tmp:
        work = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")  # fresh model caches: the build times below are real
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

    py_speed = py_run.cycles / t_py
    end_to_end = native_run.cycles / t_native
    loop = native_run.cycles / t_loop
    raw_speed = native_run.cycles / t_raw
    print(f"builds: pyverilator {t_py_build:.1f} s, native {t_native_build:.1f} s\n")
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
