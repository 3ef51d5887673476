"""Compile graphs to Verilog designs and simulate them, for the tests of the Verilog backend.

    random_fold(graph, rng)        a random legal folding of the graph's map, window, rows and reduce stages and
                                   ports
    saved_fold(graph, fold)        the folding as fold.json text
    design(graph, folder)          write OUT/graph.json and OUT/verilog/ for ``graph`` (fpga fusion)
    simulate(graph, folder, ...)   design() then rtlsim(); returns the RtlsimResult. A run that passes
                                   must be the timing model's, cycle for cycle (``assert_model``)
    simulate_union(graphs, folder, ...)   the graphs side by side in one design (tests/union.py), simulated once;
                                   a SharedRun: the result, and per graph its stages, their counts and the cycles per
                                   frame at its own output ports
    lint(folder)                   run ``verilator --lint-only -Wall`` on OUT/verilog; returns its output
    DRIVER, DRIVER_MARK            the rtlsim driver of the tests that are not about a driver, and the marker of
                                   what it needs
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tiers import fresh
from union import own_depths, union, union_fold

from hlsfuse import reference
from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.errors import HlsfuseError
from hlsfuse.fusion import fuse
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower import PORT_BITS, Folding, LowerOptions, actors, links, lower, refold
from hlsfuse.lower.fold import fold_json
from hlsfuse.lower.timing import simulate as model_simulate
from hlsfuse.outdir import CHECKSUMS, Files, checksums_text
from hlsfuse.sim.rtlsim import RtlsimResult, StageCount, read_manifest, rtlsim
from hlsfuse.sim.rtlsim_native import drive_native
from hlsfuse.sim.rtlsim_pyverilator import drive_pyverilator

DRIVER = "pyverilator" if fresh() else "native"
"""The rtlsim driver of the tests that check designs, not a driver: under make test the native one, whose model
builds in a third of the pyverilator driver's time (pyverilator builds every model with --trace); under make
test-random (``tiers.fresh``) hlsfuse's default, the pyverilator driver, so that those designs run under both. The
two observe the same run, cycle for cycle (tests/test_rtlsim_native.py, and tests/test_examples_rtl.py on two
examples), and the tests of the pyverilator driver use it on every run."""
DRIVER_MARK = pytest.mark.pyverilator if DRIVER == "pyverilator" else pytest.mark.verilator


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def random_fold(graph, rng, max_folds: int = 8) -> Folding:
    """A random legal folding of ``graph``, drawn from ``rng`` (a random.Random): per MAC stage a SIMD whose folds
    are at most ``max_folds`` (so that random designs stay quick to simulate); half the map stages and a third of
    the ports get lanes dividing their innermost dimensions, half the window and rows stages input lanes (channels
    or row elements per push) and a PE (output channels or columns per emit, over constant weights), half the
    window stages a ring of 2 to 4 snapshots, half the reduce and own stages input lanes (those ``refold``
    allows); the lowering adds the width converters."""
    fusion = fuse(graph, mode="fpga")
    plan = lower(graph, fusion, LowerOptions())
    simd, lanes, pe, snapshots = [], [], [], []

    def innermost(s) -> int:  # what lanes (or PE) of the stage's output and per-element inputs must divide
        tensors = [*s.nodes, *(plan.channel(c).tensor for c, use in zip(s.inputs, s.uses) if use == "post")]
        return math.gcd(*(graph.types[t].shape[-1] if graph.types[t].shape else 1 for t in tensors))

    for s in plan.stages:
        if s.schedule.multipliers:
            products = s.schedule.main.products
            simd.append((s.head, rng.choice([d for d in _divisors(products) if products // d <= max_folds])))
        if s.kind == "map" and rng.random() < 0.5:
            lanes.append((s.sink, rng.choice(_divisors(innermost(s)))))
        if s.kind in ("window", "rows") and rng.random() < 0.5:
            main = s.schedule.main
            lanes.append((s.head, rng.choice(_divisors(main.geometry.c if s.kind == "window" else main.k))))
            if main.weights is None or main.weights in graph.constant_map:  # pe reads constant weights only
                pe.append((s.head, rng.choice(_divisors(innermost(s)))))
        if s.kind == "window" and rng.random() < 0.5:
            snapshots.append((s.head, rng.randint(2, 4)))
        if s.kind in ("reduce", "own") and rng.random() < 0.5:
            source = graph.types[graph.node(s.head).inputs[0]]
            allowed = []
            for d in _divisors(source.shape[-1] if source.shape else 1):
                try:  # the output side (the innermost axis kept) and the phases' operands must allow them too
                    refold(graph, fusion, plan, s, lanes=d)
                except HlsfuseError:
                    continue
                allowed.append(d)
            lanes.append((s.head, rng.choice(allowed)))
    ports = []
    for p in (*plan.inputs, *plan.outputs):
        fits = [d for d in _divisors(p.type.shape[-1] if p.type.shape else 1) if d * p.type.dtype.bits <= PORT_BITS]
        if rng.random() < 1 / 3 and not p.type.dtype.is_float:
            ports.append((p.tensor, rng.choice(fits)))
    return Folding(simd=tuple(simd), lanes=tuple(lanes), pe=tuple(pe), snapshots=tuple(snapshots),
                   ports=tuple(ports))


def saved_fold(graph, fold: Folding) -> str:
    """The text of ``fold`` as fold.json (``hlsfuse compile --fold`` reads it back)."""
    return json.dumps(fold_json(graph, plan_of(graph, fold=fold)), indent=1)


def plan_of(graph, depth=None, fold: Folding | None = None):
    """The dataflow plan of ``graph`` folded as ``fold``; ``depth`` (when given) replaces every channel's FIFO
    depth."""
    plan = lower(graph, fuse(graph, mode="fpga"), LowerOptions(fold=fold or Folding()))
    if depth is not None:
        plan = dataclasses.replace(plan, channels=tuple(dataclasses.replace(c, depth=depth) for c in plan.channels))
    return plan


def design(graph, folder: Path, plan=None) -> Path:
    """OUT/graph.json, OUT/verilog/ and OUT/checksums.json of ``graph`` as ``plan`` lowers it."""
    plan = plan if plan is not None else plan_of(graph)
    files = Files({"graph.json": json.dumps(graph_to_dict(graph))})
    files.add(emit_verilog(graph, plan), "verilog/")
    for path, text in files.items():  # into a folder the test may hold other files in (write_tree replaces it)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (folder / CHECKSUMS).write_text(checksums_text(files))
    return folder


def simulate(graph, folder: Path, frames: int = 2, driver: str = "pyverilator", plan=None, **kwargs):
    plan = plan if plan is not None else plan_of(graph)
    design(graph, folder, plan)
    result = rtlsim(folder, frames=frames, driver=driver, graph=graph, **kwargs)
    if result.passed:
        assert_model(result, plan, frames)
    return result


def assert_model(result, plan, frames: int) -> None:
    """The RTL run is the plan's timing model (hlsfuse.lower.timing.simulate) cycle for cycle: the same
    cycles to the last output, and every stage fired as many iterations."""
    acts = actors(plan.stages, plan.inputs, plan.outputs)
    depths = {c.name: c.depth for c in plan.channels}
    model = model_simulate(acts, links(plan.channels), depths, frames, until=result.cycles,
                           inputs={p.name for p in plan.inputs})
    end = max(int(model.times[p.name][-1]) for p in plan.outputs) + 1
    assert result.cycles == end, f"rtlsim took {result.cycles} cycles, the model {end}"
    busy = {s.name: s.busy for s in result.stages}
    assert busy == {s.name: len(model.times[s.name]) for s in plan.stages}, "busy cycles differ from the model's"


@dataclasses.dataclass(frozen=True)
class Part:
    """One graph of a ``simulate_union`` run."""

    plan: object  # the graph's plan in a design of its own (its predicted cycles per frame: plan.cycles)
    stages: tuple  # its stages in the union's plan (their sinks carry its prefix)
    counts: dict[str, StageCount]  # stage name -> what rtlsim counted for it
    frame_cycles: float  # cycles per frame in steady state at its own output ports (rtlsim's rule; nan untimed)

    @property
    def ratio(self) -> float:
        """Measured over predicted cycles per frame, as ``RtlsimResult.ratio`` of a design of its own."""
        return self.frame_cycles / self.plan.cycles


@dataclasses.dataclass(frozen=True)
class SharedRun:
    graph: object  # the union
    plan: object
    result: RtlsimResult
    parts: tuple[Part, ...]  # per graph, in order


def simulate_union(graphs, folder: Path, frames: int = 2, driver: str = "pyverilator", folds=None,
                   name: str = "shared", min_depth: dict[int, int] | None = None, timed: bool = True) -> SharedRun:
    """``graphs`` side by side in one design (``union``; ``folds``: one Folding per graph; ``min_depth``: graph index
    -> a depth its FIFOs get at least), simulated once by ``simulate`` (a bit-exact run is the timing model's).

    Each graph is the design of its own in the union: the same stages and FIFOs (``union.own_depths``; each FIFO
    takes its depth from the graph's own plan), and input and output ports of its own, which both drivers offer a
    transfer every cycle and never block. So its stages run as in that design, and the cycles per frame at its output
    ports are that design's. rtlsim reports only the whole design's, so with ``timed`` the run is driven again from
    the model it built (on the same frames, rtlsim's seeded ones) to read each port's cycles."""
    folds = folds if folds is not None else [Folding()] * len(graphs)
    own_plans = [_deepen(plan_of(part, fold=fold), (min_depth or {}).get(k, 0))
                 for k, (part, fold) in enumerate(zip(graphs, folds))]
    graph = union(graphs, name)
    plan = plan_of(graph, fold=union_fold(graphs, folds))
    depths = own_depths(plan, own_plans)
    plan = dataclasses.replace(plan, channels=tuple(dataclasses.replace(c, depth=depths[c.name])
                                                    for c in plan.channels))
    result = simulate(graph, folder, frames=frames, driver=driver, plan=plan)
    ends = _frame_ends(folder, graph, frames, driver, result) if timed and result.passed else {}
    counts = {c.name: c for c in result.stages}
    parts = []
    for k, (part, own) in enumerate(zip(graphs, own_plans)):
        prefix = f"g{k}_"
        stages = tuple(s for s in plan.stages if s.sink.startswith(prefix))
        done = [max(ends[prefix + t][f] for t in part.outputs) for f in range(frames)] if ends else []
        per_frame = (done[-1] - done[0]) / (frames - 1) if len(done) >= 2 else float("nan")
        parts.append(Part(own, stages, {s.name: counts[s.name] for s in stages}, per_frame))
    return SharedRun(graph, plan, result, tuple(parts))


def _deepen(plan, depth: int):
    """``plan`` with every FIFO at least ``depth`` deep."""
    return dataclasses.replace(plan, channels=tuple(dataclasses.replace(c, depth=max(c.depth, depth))
                                                    for c in plan.channels))


def _frame_ends(folder: Path, graph, frames: int, driver: str, result: RtlsimResult) -> dict[str, list[int]]:
    """Per output tensor, the cycle in which each frame's last element left its port, in a second run of the model
    rtlsim built for ``result``, on rtlsim's seeded frames; the run must be ``result``'s, cycle for cycle."""
    vdir = folder / "verilog"
    manifest = read_manifest(vdir)
    raw = [reference.quantize_inputs(graph, reference.random_inputs(graph, k)) for k in range(frames)]
    ins = [p for p in manifest["ports"] if p["direction"] == "in"]
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    streams = {p["name"]: np.concatenate([f[p["tensor"]].reshape(-1) for f in raw]).astype(np.int64) for p in ins}
    sizes = {p["name"]: int(np.prod(p["shape"], dtype=np.int64)) for p in outs}
    drive = drive_native if driver == "native" else drive_pyverilator
    run, built = drive(vdir, manifest, streams, {n: frames * size for n, size in sizes.items()},
                       20 * manifest["cycles"] * frames + 10_000)
    assert not built, "the second run built its model again"
    assert (run.cycles, run.busy) == (result.cycles, tuple(c.busy for c in result.stages)), "the second run differs"
    return {p["tensor"]: [int(run.out_cycles[p["name"]][(f + 1) * sizes[p["name"]] - 1]) for f in range(frames)]
            for p in outs}


def lint(folder: Path) -> str:
    """Verilator's lint of the design (with the simulation wrapper); '' when clean."""
    vdir = folder / "verilog"
    manifest = read_manifest(vdir)
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", manifest["sim_top"], *manifest["sim_sources"]]
    done = subprocess.run(cmd, cwd=vdir, capture_output=True, text=True, timeout=600)
    return (done.stdout + done.stderr).strip()

