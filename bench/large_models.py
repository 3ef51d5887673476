"""Large models end to end: sizes and times of saving, compiling and simulating a ResNet-18-sized graph.

examples/resnet18.py builds 11.7 M parameters (8-bit weights) on a 1x8x8x3 image. This prints:
  save      the graph saved as JSON + .npz side file: its size against the weights' float32 bytes (goal:
            at most 1.2x + 1 MB), and the time
  compile   `hlsfuse compile --target all` end to end (a subprocess: start-up, load, fuse, fold, emit, write),
            for the ResNet-18-sized graph (goal: under 8 s) and for examples/resnet8.json (goal: under 1 s);
            OUT's size against the weights' bytes at their declared widths (goal: at most 6x + 5 MB), by folder;
            its peak memory over the idle command's, against the weights as a loaded graph holds them (int64; goal:
            at most 2x, no step holding more than two copies)
  csim      `hlsfuse csim` of the ResNet-18-sized design: the g++ build (a fresh cache) and 2 frames
The baseline, measured in the same run, is numpy writing the weights as raw int8 (np.save): the times are
also printed as ratios to it, so that they compare across machines.

    python bench/large_models.py [--skip-csim]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import resnet18  # noqa: E402 - examples/ is not a package

from hlsfuse import save_graph  # noqa: E402


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


# runs a command and prints its seconds and its peak resident memory (kB): the time is taken inside, so that the
# wrapper's own start-up is not counted
_MEASURED = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "seconds = time.perf_counter() - start\n"
    "sys.stderr.write(done.stderr)\n"
    "print(seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(done.returncode)\n"
)


def _run(args: list[str], env: dict) -> tuple[float, float]:
    """Seconds and peak resident megabytes of the command ``args``."""
    done = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{done.stderr}")
    seconds, kilobytes = done.stdout.split()
    return float(seconds), int(kilobytes) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-csim", action="store_true", help="leave out the g++ build and C simulation")
    args = parser.parse_args()
    graph = resnet18.build()
    weights = list(graph.constants)
    values = sum(c.data.size for c in weights)
    declared = sum(c.data.size * c.type.dtype.bits for c in weights) / 8
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp / "cache")}
        start = time.perf_counter()
        np.save(tmp / "base.npy", np.concatenate([c.data.reshape(-1) for c in weights]).astype(np.int8))
        base = time.perf_counter() - start
        start = time.perf_counter()
        save_graph(graph, tmp / "r18.json")
        saved = time.perf_counter() - start
        pair = _size(tmp / "r18.json") + _size(tmp / "r18.npz")
        print(f"ResNet-18-sized graph: {values:,} weights, {4 * values / 1e6:.1f} MB as float32, "
              f"{declared / 1e6:.1f} MB at their declared widths; baseline np.save {base:.3f} s")
        print(f"save     {pair / 1e6:6.1f} MB = {pair / (4 * values):.3f} x float32 bytes "
              f"(goal <= 1.2 x + 1 MB) in {saved:.2f} s ({saved / base:.0f} x baseline)")
        cli = [sys.executable, "-m", "hlsfuse"]
        _, idle = _run([*cli, "compile", "--help"], env)  # the interpreter with compile's modules loaded
        held = 8 * values / 2**20  # the weights as a loaded graph holds them: raw int64
        for name, source in (("resnet18", tmp / "r18.json"), ("resnet8", ROOT / "examples" / "resnet8.json")):
            out = tmp / f"out_{name}"
            _run([*cli, "compile", str(source), "-o", str(out), "--target", "all"], env)  # templates compiled, cached
            seconds, peak = _run([*cli, "compile", str(source), "-o", str(out), "--target", "all", "--force"], env)
            parts = ", ".join(f"{p.name} {_size(p) / 1e6:.1f} MB" for p in sorted(out.iterdir()) if _size(p) > 1e5)
            ratio = (f" = {(_size(out) - 5e6) / declared:.2f} x declared bytes + 5 MB (goal <= 6)"
                     if name == "resnet18" else "")
            print(f"compile  {name:<9} {seconds:6.2f} s ({seconds / base:.0f} x baseline); "
                  f"OUT {_size(out) / 1e6:.1f} MB{ratio}: {parts}")
            if name == "resnet18":
                print(f"memory   resnet18  peak {peak:.0f} MB, {peak - idle:.0f} MB over the idle command's "
                      f"{idle:.0f} MB = {(peak - idle) / held:.2f} x the weights as the graph holds them "
                      f"({held:.0f} MB of int64; goal <= 2)")
        if not args.skip_csim:
            seconds, _ = _run([*cli, "csim", str(tmp / "out_resnet18")], env)
            print(f"csim     resnet18  {seconds:6.2f} s, g++ build and 2 frames ({seconds / base:.0f} x baseline)")


if __name__ == "__main__":
    main()
