"""RTL simulation: run a generated Verilog design under Verilator, compare with the reference, count cycles.

    OUT/graph.json + OUT/verilog/  --Verilator (cached by content)-->  model
    frames of inputs --reference--> golden outputs;  --driver--> received outputs + cycle counts  --> RtlsimResult

Two drivers move the AXI4-Stream ports; both simulate ``<top>_sim`` (the design plus the counters of
``templates/verilog/sim.v.j2``) and return a ``Run`` (verilator.py):

    pyverilator  the model is a Python extension (PyPI pyverilator-mm), driven cycle by cycle from Python
                 (rtlsim_pyverilator.py)
    native       a C++ harness (rtlsim_native.py) built with ``verilator --cc --exe`` and make, which
                 streams inputs and outputs through binary files: for large tensors and long runs

Both build with the same Verilator options and g++ flags (``verilator.VERILATOR_FLAGS``, ``MAKE_VARS``), chosen
so that a large design builds quickly (docs/verilog.md, "Build time").

Inputs are offered on every cycle (TVALID high while data remains) and outputs always taken
(TREADY high), so the counts measure the design itself. A design that makes no progress for
``QUIET_CYCLES`` cycles before every output arrived is a deadlock: the result names the stages
that stall and the channels that are full. Models are cached under ``$XDG_CACHE_HOME/hlsfuse/rtlsim``
by a hash of the sources, the memory files, the driver and the tool versions (cache.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import reference
from ..errors import HlsfuseError
from ..graph_json import load_graph
from ..ir import Graph
from ..outdir import verify
from .compare import Mismatch, compare, failed_lines, passed_line, quantized_frames
from .rtlsim_native import drive_native
from .rtlsim_pyverilator import drive_pyverilator
from .verilator import QUIET_CYCLES, Run

__all__ = ["rtlsim", "RtlsimResult", "DRIVERS", "MAX_CYCLES", "verilog_dir", "read_manifest"]

DRIVERS = ("pyverilator", "native")
MAX_CYCLES = {"native": 1 << 30, "pyverilator": 1 << 24}
"""Most cycles one run simulates, per driver (frames x the plan's cycles per frame + its latency), so that a
run answers within minutes (the native harness simulated 552,097 cycles of ResNet-8 in under 2 s here, the
pyverilator driver steps each cycle from Python, far slower); more frames are refused before anything is built."""


@dataclass(frozen=True)
class StageCount:
    name: str
    kind: str
    busy: int
    stall: int
    iterations: int  # of the stage's loop per frame (its schedule's)


@dataclass(frozen=True)
class RtlsimResult:
    passed: bool
    driver: str
    frames: int
    compared: int
    failures: int
    mismatches: tuple[Mismatch, ...]
    cycles: int  # total simulated cycles
    frame_cycles: float  # cycles per frame in steady state (between completions of consecutive frames)
    predicted_cycles: int  # the plan's cycles per frame
    latency: int  # cycles from the first input element to the first output element
    throughput: float  # output elements per cycle in steady state
    stages: tuple[StageCount, ...]
    deadlock: str = ""  # description, when the design stopped making progress
    built: bool = False  # the model was built now (not taken from the cache)

    @property
    def ratio(self) -> float:
        return self.frame_cycles / self.predicted_cycles if self.predicted_cycles else float("nan")

    def report(self) -> str:
        lines = []
        if self.deadlock:
            lines.append(f"DEADLOCK: {self.deadlock}")
        elif self.passed:
            lines.append(passed_line(self.compared, self.frames))
        else:
            lines += failed_lines(self.failures, self.compared, self.mismatches)
        if not self.deadlock and self.frames > 1:
            lines.append(
                f"cycles: {self.cycles} total ({self.driver} driver), "
                f"{self.frame_cycles:.1f} per frame in steady state "
                f"(predicted {self.predicted_cycles}, ratio {self.ratio:.3f}), first output after {self.latency}, "
                f"throughput {self.throughput:.3g} output elements/cycle"
            )
        elif not self.deadlock:  # one frame has no steady state: its cycles include the pipeline's latency
            lines.append(
                f"cycles: {self.cycles} total ({self.driver} driver), {self.frame_cycles:.0f} from the first input "
                f"to the last output of the frame (predicted {self.predicted_cycles} per frame in steady state; "
                f"measure it with --frames 2 or more), first output after {self.latency}"
            )
        width = max([len(s.name) for s in self.stages] + [5])
        lines.append(f"  {'stage':<{width}}  {'kind':<6}  {'busy':>9}  {'stall':>9}  {'iterations/frame':>14}")
        for s in self.stages:
            lines.append(f"  {s.name:<{width}}  {s.kind:<6}  {s.busy:>9}  {s.stall:>9}  {s.iterations:>14}")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The design folder
# --------------------------------------------------------------------------


def verilog_dir(out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """(OUT, OUT/verilog) for an output folder of ``hlsfuse compile --target verilog`` or its verilog/ subfolder."""
    given = Path(out_dir)
    out = given.resolve()
    if (out / "verilog" / "manifest.json").is_file():
        return out, out / "verilog"
    if (out / "manifest.json").is_file() and out.name == "verilog":
        return out.parent, out
    raise HlsfuseError(
        f"{given}: no Verilog design here (expected {given / 'verilog' / 'manifest.json'}); "
        "run hlsfuse compile --target verilog (or all) first"
    )


def read_manifest(vdir: Path) -> dict:
    path = vdir / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in ("top", "sim_top", "sim_sources", "ports", "stages", "channels", "cycles", "latency"):
            data[key]  # noqa: B018 - presence check
        return data
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HlsfuseError(f"{path}: unreadable design description ({exc})") from None



# --------------------------------------------------------------------------
# rtlsim
# --------------------------------------------------------------------------


def _frames(graph: Graph, inputs, frames: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Raw inputs per frame: the given real values (one mapping, repeated, or one per frame) or seeded random ones."""
    if inputs is None:
        return [reference.quantize_inputs(graph, reference.random_inputs(graph, seed + k)) for k in range(frames)]
    quantized = quantized_frames(graph, inputs, "rtlsim")
    return [quantized[k % len(quantized)] for k in range(max(frames, len(quantized)))]


def _timing(manifest: dict, run: Run, frames: int) -> tuple[float, int, float]:
    """(steady-state cycles per frame, first-output latency, output elements per cycle in steady state)."""
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    sizes = {p["name"]: int(np.prod(p["shape"], dtype=np.int64)) for p in outs}
    # a frame is done when its last element has left every output port
    done = []
    for f in range(frames):
        ends = [
            run.out_cycles[n][(f + 1) * sizes[n] - 1] for n in sizes if run.out_cycles[n].size >= (f + 1) * sizes[n]
        ]
        if len(ends) == len(sizes):
            done.append(max(int(e) for e in ends))
    starts = [int(run.out_cycles[n][0]) for n in sizes if run.out_cycles[n].size]
    latency = min(starts) - run.first_input if starts else 0
    if len(done) >= 2:
        per_frame = (done[-1] - done[0]) / (len(done) - 1)
    else:
        per_frame = float(done[0] + 1 - run.first_input) if done else float(run.cycles)
    elements = sum(sizes.values())
    return per_frame, latency, (elements / per_frame if per_frame else 0.0)


def rtlsim(
    out_dir: str | os.PathLike,
    inputs: Mapping[str, object] | Sequence[Mapping[str, object]] | None = None,
    frames: int = 1,
    driver: str = "pyverilator",
    vcd: str | None = None,
    timeout_cycles: int | None = None,
    graph: Graph | None = None,
    seed: int = 0,
    allow_edits: bool = False,
) -> RtlsimResult:
    """Simulate the Verilog design in ``out_dir`` (OUT or OUT/verilog) for ``frames`` frames.

    ``inputs``: real values per graph input (one frame, repeated for every frame) or a list of such
    mappings; by default seeded random frames. Golden outputs come from the reference interpreter
    on ``graph`` (default: OUT/graph.json). ``timeout_cycles``: stop (and fail) after this many
    cycles; by default 20 times the plan's cycles for the run plus 10,000. The design's files are checked
    against OUT/checksums.json first (``outdir.verify``), unless ``allow_edits``.
    """
    if driver not in DRIVERS:
        raise HlsfuseError(f"driver must be one of {', '.join(DRIVERS)}, not {driver!r}")
    if frames < 1:
        raise HlsfuseError(f"frames must be at least 1, not {frames}")
    out, vdir = verilog_dir(out_dir)
    if not allow_edits:
        verify(out, ("verilog",))
    manifest = read_manifest(vdir)
    graph = graph if graph is not None else load_graph(out / "graph.json")
    reference.check_frames(graph, frames, "rtlsim")
    cycles = frames * manifest["cycles"] + manifest["latency"]
    if cycles > MAX_CYCLES[driver]:
        fit = max(1, (MAX_CYCLES[driver] - manifest["latency"]) // max(1, manifest["cycles"]))
        raise HlsfuseError(f"rtlsim: {frames} frames of {manifest['cycles']} cycles each exceed the "
                           f"{MAX_CYCLES[driver]} cycles one run of the {driver} driver simulates; run at most {fit}")
    raw_frames = _frames(graph, inputs, frames, seed)
    frames = len(raw_frames)
    golden = [reference.run_raw(graph, f) for f in raw_frames]
    streams = {
        p["name"]: np.concatenate([f[p["tensor"]].reshape(-1) for f in raw_frames]).astype(np.int64)
        for p in manifest["ports"]
        if p["direction"] == "in"
    }
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    expect = {p["name"]: frames * int(np.prod(p["shape"], dtype=np.int64)) for p in outs}
    timeout = timeout_cycles if timeout_cycles is not None else 20 * manifest["cycles"] * frames + 10_000
    if timeout < 1:
        raise HlsfuseError(f"timeout-cycles must be at least 1, not {timeout}")
    drive = drive_pyverilator if driver == "pyverilator" else drive_native
    run, built = drive(vdir, manifest, streams, expect, timeout, vcd)
    stages = tuple(
        StageCount(s["name"], s["kind"], b, st, s["cycles"])
        for s, b, st in zip(manifest["stages"], run.busy, run.stall)
    )
    deadlock = ""
    if run.deadlock:
        stalled = ", ".join(run.stalled) or "none"
        full = ", ".join(
            f"{c} ({next(ch['depth'] for ch in manifest['channels'] if ch['name'] == c)} deep)" for c in run.full
        ) or "none"
        deadlock = (
            f"no stage made progress for {QUIET_CYCLES} cycles after {run.cycles} cycles; "
            f"stalled stages: {stalled}; full channels: {full}"
        )
    elif run.timed_out:
        deadlock = f"timed out after {run.cycles} cycles (--timeout-cycles) before every output arrived"
    mismatches, failures, compared = compare(outs, run.outputs, golden)
    per_frame, latency, throughput = _timing(manifest, run, frames)
    return RtlsimResult(
        passed=not deadlock and failures == 0,
        driver=driver,
        frames=frames,
        compared=compared,
        failures=failures,
        mismatches=mismatches,
        cycles=run.cycles,
        frame_cycles=per_frame,
        predicted_cycles=manifest["cycles"],
        latency=latency,
        throughput=throughput,
        stages=stages,
        deadlock=deadlock,
        built=built,
    )
