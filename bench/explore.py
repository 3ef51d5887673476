"""How fast ``hlsfuse explore`` evaluates analytic points (no simulation), against compiling them one by one.

Sweeps ResNet-8 (examples/resnet8.json) over 100 DSP budgets on a ZCU104, fused and unfused: 200 points,
with the plots and the page, on ``--jobs`` processes (default 2). The baseline, measured in the same run,
is what a user would otherwise do per point: ``plan_design`` from scratch (fusion, the solver's choices, the
fit; no files), timed on a few budgets and scaled to the sweep. The issue's goal: 200 points under 20 s on
2 cores.

    python bench/explore.py [--jobs N] [--budgets N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hlsfuse.boards import target_of
from hlsfuse.cli import main as cli
from hlsfuse.compile import CompileOptions, plan_design
from hlsfuse.graph_json import load_graph

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "examples" / "resnet8.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budgets", type=int, default=100, help="DSP budgets (x 2 fusions = points)")
    args = parser.parse_args()
    step = 2000 // args.budgets
    spec = f"{step}:{step * args.budgets}:{step}"
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        code = cli(["explore", str(GRAPH), "-o", str(Path(tmp) / "x"), "--dsp", spec, "--board", "zcu104",
                    "--jobs", str(args.jobs)])
        swept = time.perf_counter() - start
    assert code == 0
    points = 2 * args.budgets
    graph = load_graph(GRAPH)
    samples = [step * k for k in (1, args.budgets // 3, 2 * args.budgets // 3, args.budgets)]
    start = time.perf_counter()
    for opt_level in (2, 0):
        for dsp in samples:
            plan_design(graph, CompileOptions(opt_level=opt_level, device=target_of("zcu104", dsp=dsp)))
    one = (time.perf_counter() - start) / (2 * len(samples))
    print(f"sweep: {points} points of ResNet-8 in {swept:.1f} s on {args.jobs} processes "
          f"({points / swept:.1f} points/s; goal: under 20 s for 200)")
    print(f"baseline: plan_design from scratch {one:.2f} s per point, {one * points:.1f} s for the sweep's points "
          f"one by one in one process")
    print(f"ratio sweep / baseline: {swept / (one * points):.3f}")


if __name__ == "__main__":
    main()
