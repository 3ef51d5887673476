"""Cycles per frame of every example: this checkout's schedules against a baseline checkout's, and the bound.

For each example graph the script lowers it with this checkout and, in a subprocess, with a baseline
commit's code (default: bc5a08c, the last commit with two loops per window stage and read-then-emit
rows and own stages), exported from git into a temporary folder, so both are measured in the same run.
It prints per example:

    before      the baseline plan's cycles per frame (its slowest stage)
    after       this plan's cycles per frame (the timing replay: its slowest stage)
    bound       the slowest stage's physical floor: max(tokens on a channel, MACs / multipliers)
    speedup     before / after;  after/bound: how close the design comes to its floor
    MAC util    MACs per frame / (multipliers x cycles per frame), over the conv2d, dense and matmul stages

With --rtlsim it also simulates each example under Verilator (native driver, --frames frames) and prints
the measured cycles per frame against the prediction.

    python bench/schedules.py [--baseline COMMIT] [--rtlsim] [--frames N]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
BASELINE = "bc5a08c"

_MEASURE = """
import json, sys
import hlsfuse
from hlsfuse.graph_json import load_graph
from hlsfuse.lower import lower
out = {}
for path in sys.argv[1:]:
    g = load_graph(path)
    out[path] = lower(g, hlsfuse.fuse(g)).cycles
print(json.dumps(out))
"""


def baseline_cycles(commit: str) -> dict[str, int] | None:
    """The baseline's cycles per frame of every example, or None when git cannot provide it."""
    with tempfile.TemporaryDirectory(prefix="hlsfuse-baseline-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "hlsfuse", "templates", "hw"],
                                 capture_output=True)
        if archive.returncode != 0:
            print(f"no baseline: git archive {commit} failed ({archive.stderr.decode().strip()})")
            return None
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        done = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, EXAMPLES)], capture_output=True, text=True,
                              cwd=tmp, env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"})
        if done.returncode != 0:
            print(f"no baseline: {done.stderr.strip().splitlines()[-1]}")
            return None
        return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"git commit to compare with (default {BASELINE})")
    parser.add_argument("--rtlsim", action="store_true", help="also measure each example under Verilator")
    parser.add_argument("--frames", type=int, default=8, help="frames per rtlsim run (default 8)")
    args = parser.parse_args()

    import hlsfuse
    from hlsfuse.compile import CompileOptions, compile
    from hlsfuse.graph_json import load_graph
    from hlsfuse.lower import lower
    from hlsfuse.sim import rtlsim

    before = baseline_cycles(args.baseline) or {}
    header = (f"{'example':10} {'before':>8} {'after':>8} {'bound':>8} {'speedup':>8} {'after/bound':>12} "
              f"{'MAC util':>9}")
    if args.rtlsim:
        header += f" {'measured':>10} {'measured/after':>15}"
    print(header)
    for path in EXAMPLES:
        graph = load_graph(path)
        plan = lower(graph, hlsfuse.fuse(graph))
        bound = max(s.schedule.bound for s in plan.stages)
        macs = sum(s.schedule.macs for s in plan.stages)
        multipliers = sum(s.schedule.multipliers for s in plan.stages)
        util = macs / (multipliers * plan.cycles) if multipliers else float("nan")
        old = before.get(str(path))
        speedup = f"{old / plan.cycles:8.2f}" if old else f"{'-':>8}"
        line = (f"{path.stem:10} {old or '-':>8} {plan.cycles:8} {bound:8} {speedup} {plan.cycles / bound:12.3f} "
                f"{util:9.3f}")
        if args.rtlsim:
            with tempfile.TemporaryDirectory(prefix="hlsfuse-bench-") as tmp:
                out = compile(graph, CompileOptions(target="verilog")).write(Path(tmp) / "out")
                result = rtlsim(out, frames=args.frames, driver="native", graph=graph)
            measured = f"{result.frame_cycles:10.1f} {result.ratio:15.3f}" if result.passed else "   FAILED"
            line += f" {measured}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
