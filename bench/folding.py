"""Folding per example: budget -> cycles per frame, multipliers, DSPs, BRAM18s, MAC utilization, solver time.

For each example graph the script compiles the unfolded design, then asks the solver
(hlsfuse/lower/fold.py) for the fastest folding within each budget: the boards pynq-z2 and
zcu104, and a half, a quarter and an eighth of the unfolded design's DSPs. It prints per row:

    budget      what the solver was given
    cycles      cycles per frame of the folded plan (its slowest stage)
    mult, dsp   multipliers and DSPs (the resource model, hlsfuse/lower/area.py)
    bram18      BRAM18s, FIFOs included
    MAC util    MACs per frame / (multipliers x cycles per frame)
    solve       seconds in the solver (one solve; ``fit`` may solve again)
    /lower      that time over one lowering of the same graph in the same run (the baseline)

It then times the solver on a chain of 1,000 MAC stages (--stages N).

    python bench/folding.py [--stages N]
"""

import argparse
import time
from pathlib import Path

import numpy as np

from hlsfuse import GraphBuilder
from hlsfuse.boards import BOARDS, family_of
from hlsfuse.fusion import fuse
from hlsfuse.graph_json import load_graph
from hlsfuse.lower import LowerOptions, lower
from hlsfuse.lower.area import design_area
from hlsfuse.lower.fold import Budget, solve, space

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


def _row(graph, fusion, budget: Budget, part: str):
    dsp = family_of(part).dsp_slice
    start = time.perf_counter()
    lower(graph, fusion)
    lowered = time.perf_counter() - start
    start = time.perf_counter()
    fold = solve(space(graph, fusion, LowerOptions(), dsp), budget)
    solved = time.perf_counter() - start
    folded = lower(graph, fusion, LowerOptions(fold=fold))
    area = design_area(graph, folded, dsp)[2]
    macs = sum(s.schedule.macs for s in folded.stages)
    util = macs / (area.multipliers * folded.cycles) if area.multipliers else 0.0
    return folded.cycles, area, util, solved, solved / lowered


def chain(stages: int):
    """``stages`` dense layers of 16 -> 16 in a row (one MAC stage each)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("chain", dtype="fixed<16,6,RND,SAT>")
    h = b.input("x", [4, 16])
    for k in range(stages):
        h = b.dense(h, b.constant(f"w{k}", rng.normal(size=(16, 16)) * 0.2, dtype="fixed<8,1,RND,SAT>"))
    b.output(h)
    return b.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=1000, help="MAC stages of the synthetic chain (default 1000)")
    args = parser.parse_args()
    print(f"{'example':<9} {'budget':<20} {'cycles':>7} {'mult':>5} {'dsp':>5} {'bram18':>6} {'MAC util':>8} "
          f"{'solve':>7} {'/lower':>6}")
    for path in EXAMPLES:
        graph = load_graph(path)
        fusion = fuse(graph, mode="fpga")
        full = design_area(graph, lower(graph, fusion), family_of("xczu7ev").dsp_slice)[2]
        budgets = [(f"board {b}", Budget(BOARDS[b].dsp, BOARDS[b].bram18), BOARDS[b].part)
                   for b in ("pynq-z2", "zcu104", "alveo-u250")]
        budgets += [(f"--dsp {full.dsp // k}", Budget(dsp=full.dsp // k), "xczu7ev") for k in (2, 4, 8)]
        for label, budget, part in budgets:
            cycles, area, util, solved, ratio = _row(graph, fusion, budget, part)
            print(f"{path.stem:<9} {label:<20} {cycles:>7} {area.multipliers:>5} {area.dsp:>5} {area.bram18:>6} "
                  f"{util:>8.3f} {solved:>7.3f} {ratio:>6.2f}")
    graph = chain(args.stages)
    fusion = fuse(graph, mode="fpga")
    start = time.perf_counter()
    plan = lower(graph, fusion)
    lowered = time.perf_counter() - start
    full = design_area(graph, plan, family_of("xczu7ev").dsp_slice)[2]
    for label, budget in ((f"--dsp {full.dsp // 4}", Budget(dsp=full.dsp // 4)),
                          (f"--dsp {full.dsp // 4} --bram 64", Budget(dsp=full.dsp // 4, bram18=64))):
        start = time.perf_counter()
        try:
            solve(space(graph, fusion, LowerOptions(), family_of("xczu7ev").dsp_slice), budget)
            outcome = "solved"
        except Exception as exc:  # noqa: BLE001 - a budget that does not fit is a result too
            outcome = f"refused ({exc})"
        solved = time.perf_counter() - start
        print(f"chain of {len(plan.stages)} stages, {label}: {outcome} in {solved:.2f} s "
              f"(lowering it once: {lowered:.2f} s, ratio {solved / lowered:.2f})")


if __name__ == "__main__":
    main()
