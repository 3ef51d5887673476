"""Compile graphs to Verilog designs and simulate them, for the tests of the Verilog backend.

    random_fold(graph, rng)        a random legal folding of the graph's map, window, rows and reduce stages and
                                   ports
    saved_fold(graph, fold)        the folding as fold.json text
    design(graph, folder)          write OUT/graph.json and OUT/verilog/ for ``graph`` (fpga fusion)
    simulate(graph, folder, ...)   design() then rtlsim(); returns the RtlsimResult. A run that passes
                                   must be the timing model's, cycle for cycle (``assert_model``)
    lint(folder)                   run ``verilator --lint-only -Wall`` on OUT/verilog; returns its output
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
from pathlib import Path

from hlsfuse.backends.verilog import emit_verilog
from hlsfuse.errors import HlsfuseError
from hlsfuse.fusion import fuse
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower import PORT_BITS, Folding, LowerOptions, actors, links, lower, refold
from hlsfuse.lower.fold import fold_json
from hlsfuse.lower.timing import simulate as model_simulate
from hlsfuse.outdir import CHECKSUMS, Files, checksums_text
from hlsfuse.sim.rtlsim import read_manifest, rtlsim


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


def lint(folder: Path) -> str:
    """Verilator's lint of the design (with the simulation wrapper); '' when clean."""
    vdir = folder / "verilog"
    manifest = read_manifest(vdir)
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", manifest["sim_top"], *manifest["sim_sources"]]
    done = subprocess.run(cmd, cwd=vdir, capture_output=True, text=True, timeout=600)
    return (done.stdout + done.stderr).strip()

