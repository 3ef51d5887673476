"""RTL simulation: run a generated Verilog design under Verilator, compare with the reference, count cycles.

    OUT/graph.json + OUT/verilog/  --Verilator (cached by content)-->  model
    frames of inputs --reference--> golden outputs;  --driver--> received outputs + cycle counts  --> RtlsimResult

Two drivers move the AXI4-Stream ports; both simulate ``<top>_sim`` (the design plus the counters of
``templates/verilog/sim.v.j2``) and return a ``Run``:

    pyverilator  the model is a Python extension (PyPI pyverilator-mm), driven cycle by cycle from Python
    native       a C++ harness (rtlsim_native.py) built with ``verilator --cc --exe`` and make, which
                 streams inputs and outputs through binary files: for large tensors and long runs

Both build with the same Verilator options and g++ flags (VERILATOR_FLAGS, MAKE_VARS), chosen so that a large
design builds quickly (docs/verilog.md, "Build time").

Inputs are offered on every cycle (TVALID high while data remains) and outputs always taken
(TREADY high), so the counts measure the design itself. A design that makes no progress for
``QUIET_CYCLES`` cycles before every output arrived is a deadlock: the result names the stages
that stall and the channels that are full. Models are cached under ``$XDG_CACHE_HOME/hlsfuse/rtlsim``
by a hash of the sources, the memory files, the driver and the tool versions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import reference
from ..errors import HlsfuseError
from ..graph_json import load_graph
from ..ir import Graph
from ..outdir import verify
from ..progress import activity
from ..types import parse_dtype
from . import cache
from .csim import Mismatch

__all__ = ["rtlsim", "RtlsimResult", "Run", "DRIVERS", "VERILATOR_FLAGS", "MAKE_VARS", "QUIET_CYCLES", "MAX_CYCLES",
           "verilog_dir", "read_manifest", "model_key"]

DRIVERS = ("pyverilator", "native")


VERILATOR_FLAGS = ("-fno-dfg", "--output-split-cfuncs", "1000", "--output-split", "60000")
"""Verilator's options for every model. Its DFG pass would merge the adders of a wide dot product back into
one C++ expression, which g++ takes a minute to optimize and which runs no faster; without it each adder is a
statement, and --output-split-cfuncs spreads the statements over functions small enough to compile quickly,
in files of about 60,000 statements that make compiles on every core (fewer than Verilator's default, so
that fewer of them compile its headers)."""
MAKE_VARS = ("OPT_FAST=-O3", "OPT_SLOW=-O0", "OPT_GLOBAL=-O2")
"""Variables of Verilator's makefile: g++'s optimization of the model's per-cycle code, of its set-up code and
of Verilator's runtime library. -O1 and -O2 build no sooner than -O3 once the functions are small, and -O0
builds ResNet-8 only a quarter sooner for a model 20 times slower (bench/rtlsim_speed.py), so there is one
build for every use."""
QUIET_CYCLES = 64
"""Cycles without any stage or port making progress after which a design counts as deadlocked."""
MAX_SHOWN = 10
MAX_CYCLES = {"native": 1 << 30, "pyverilator": 1 << 24}
"""Most cycles one run simulates, per driver (frames x the plan's cycles per frame + its latency), so that a
run answers within minutes (the native harness simulated 552,097 cycles of ResNet-8 in under 2 s here, the
pyverilator driver steps each cycle from Python, far slower); more frames are refused before anything is built."""


@dataclass(frozen=True)
class Run:
    """What a driver observed (cycles count rising clock edges after reset, from 0)."""

    outputs: dict[str, np.ndarray]  # port -> raw values received (int64, sign-extended per dtype), in order
    out_cycles: dict[str, np.ndarray]  # port -> cycle of each received element
    first_input: int  # cycle of the first input transfer
    cycles: int  # cycles simulated
    busy: tuple[int, ...]  # per stage (manifest order): cycles it made progress
    stall: tuple[int, ...]  # per stage: cycles it waited inside a frame
    stalled: tuple[str, ...] = ()  # deadlock: stages stalled when it was detected
    full: tuple[str, ...] = ()  # deadlock: channels full when it was detected
    deadlock: bool = False
    timed_out: bool = False


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
            lines.append(f"PASS: {self.compared} output elements in {self.frames} frame(s) match the reference")
        else:
            lines.append(f"FAIL: {self.failures} of {self.compared} output elements differ from the reference")
            lines += [f"  {m}" for m in self.mismatches]
            if self.failures > len(self.mismatches):
                lines.append(f"  ... and {self.failures - len(self.mismatches)} more")
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


@lru_cache(maxsize=1)
def verilator_version() -> str:
    try:
        done = subprocess.run(["verilator", "--version"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise HlsfuseError("verilator is not installed; rtlsim needs it (apt-get install verilator)") from None
    return done.stdout.strip()


def model_key(vdir: Path, manifest: dict, *extra: str) -> str:
    """A hash of everything a model is built from: sources, memory files, tool versions, ``extra``."""
    digest = hashlib.sha256(verilator_version().encode())
    for item in extra:
        digest.update(item.encode() + b"\0")
    for path in [vdir / s for s in manifest["sim_sources"]] + sorted(vdir.glob("*.mem")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def cache_root() -> Path:
    return cache.root("rtlsim")


def runtime_folder(driver: str, trace: bool) -> Path:
    """Where the objects of Verilator's runtime library (verilated*.o) as ``driver`` builds them are kept: every
    model built so reuses them rather than compile the library again."""
    flags = " ".join(MAKE_VARS)
    digest = hashlib.sha256(f"{verilator_version()}\0{driver}\0{flags}\0{trace}".encode()).hexdigest()[:24]
    return cache_root() / f"runtime-{digest}"


def reuse_runtime(folder: Path, obj: Path) -> None:
    """Copy the kept runtime objects into a model's build folder, where make finds them newer than their sources."""
    if folder.is_dir():
        obj.mkdir(parents=True, exist_ok=True)
        for path in folder.glob("verilated*.o"):
            if cache.intact(path):
                shutil.copyfile(path, obj / path.name)


def keep_runtime(folder: Path, obj: Path) -> None:
    """Keep the runtime objects of a finished build in ``folder``, unless they are kept already."""
    if folder.is_dir():
        return
    scratch = Path(tempfile.mkdtemp(prefix=".runtime-", dir=folder.parent))
    try:
        for path in obj.glob("verilated*.o"):
            shutil.copyfile(path, scratch / path.name)
            cache.seal(scratch / path.name)
        with contextlib.suppress(OSError):  # a concurrent build kept them first
            scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def captured_output(log: Path):
    """Send this process's stdout and stderr (file descriptors 1 and 2, which Verilator's tools
    write to) into ``log`` for the duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


@contextlib.contextmanager
def parallel_make():
    """Let the ``make`` pyverilator runs compile the model's C++ files on every core, with MAKE_VARS."""
    previous = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = " ".join((f"-j{os.cpu_count() or 1}", *MAKE_VARS))
    try:
        yield
    finally:
        if previous is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = previous


@contextlib.contextmanager
def working_dir(path: Path):
    """$readmemh opens .mem files relative to the working directory: the design's folder."""
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


# --------------------------------------------------------------------------
# The pyverilator driver
# --------------------------------------------------------------------------


def _pyverilator_model(vdir: Path, manifest: dict, trace: bool):
    try:
        import pyverilator
    except ImportError:
        raise HlsfuseError("the pyverilator driver needs pyverilator (pip install pyverilator-mm)") from None
    top = manifest["sim_top"]
    folder = cache_root() / f"py-{model_key(vdir, manifest, 'pyverilator', str(trace), *VERILATOR_FLAGS, *MAKE_VARS)}"
    library = folder / f"V{top}"
    built = False
    cache.discard_damaged(folder, library)
    if not cache.intact(library):
        cache_root().mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{top}-", dir=cache_root()))
        log = cache_root() / f"{top}-build.log"
        runtime = runtime_folder("pyverilator", trace)
        try:
            reuse_runtime(runtime, scratch)
            # the build loads the model once, which reads the .mem files relative to the working directory;
            # the progress line goes to the terminal through a descriptor of its own: 1 and 2 go to the log
            with os.fdopen(os.dup(2), "w") as terminal, \
                    activity(f"rtlsim: Verilator and g++ are building {top}", terminal), \
                    working_dir(vdir), captured_output(log), parallel_make():
                pyverilator.PyVerilator.build(
                    str(vdir / f"{top}.v"), verilog_path=[str(vdir)], build_dir=str(scratch), quiet=True,
                    args=list(VERILATOR_FLAGS), dump_en=trace,
                )
        except Exception:  # pyverilator raises bare exceptions; Verilator's messages are in the log
            shutil.rmtree(scratch, ignore_errors=True)
            text = log.read_text(encoding="utf-8", errors="replace")
            first = next((line for line in text.splitlines() if "%Error" in line or "error" in line), "see the log")
            raise HlsfuseError(f"Verilator could not build '{top}': {first.strip()} (full log: {log})") from None
        keep_runtime(runtime, scratch)
        cache.seal(scratch / library.name)
        with contextlib.suppress(OSError):  # a concurrent run built the same model: use theirs
            scratch.rename(folder)
        shutil.rmtree(scratch, ignore_errors=True)
        built = True
    with working_dir(vdir):
        sim = pyverilator.PyVerilator(str(library))
    return sim, built


def _signed(values: np.ndarray, width: int, signed: bool) -> np.ndarray:
    values = np.asarray(values, dtype=np.int64) & ((1 << width) - 1) if width < 64 else np.asarray(values, np.int64)
    if signed and width < 64:
        values = np.where(values >> (width - 1) & 1, values - (1 << width), values)
    return values


def pack(values: np.ndarray, width: int, lanes: int) -> list[int]:
    """TDATA words of ``lanes`` consecutive ``width``-bit elements each, element 0 in the low bits, as Python ints
    (pyverilator reads and writes ports of any width so)."""
    bits = (np.asarray(values, dtype=np.int64).view(np.uint64) & np.uint64((1 << width) - 1)).tolist()
    return [sum(b << (lane * width) for lane, b in enumerate(bits[k:k + lanes])) for k in range(0, len(bits), lanes)]


def unpack(words, width: int, lanes: int) -> np.ndarray:
    """The elements of TDATA words (``pack``'s inverse), as int64 bit patterns (sign not yet extended)."""
    mask = (1 << width) - 1
    bits = [(int(w) >> (lane * width)) & mask for w in words for lane in range(lanes)]
    return np.array(bits, dtype=np.uint64).view(np.int64)


def drive_pyverilator(
    vdir: Path, manifest: dict, inputs: Mapping[str, np.ndarray], expect: Mapping[str, int], timeout: int,
    vcd: str | None = None,
) -> tuple[Run, bool]:
    """Simulate with pyverilator; ``inputs``: port -> raw values of every frame; ``expect``: port -> element count."""
    sim, built = _pyverilator_model(vdir, manifest, trace=vcd is not None)
    io = sim.io
    ins = [p for p in manifest["ports"] if p["direction"] == "in"]
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    lanes = {p["name"]: p.get("lanes", 1) for p in manifest["ports"]}
    data = {p["name"]: pack(np.asarray(inputs[p["name"]]).reshape(-1), p["width"], lanes[p["name"]]) for p in ins}
    sent = {p["name"]: 0 for p in ins}
    got: dict[str, list[int]] = {p["name"]: [] for p in outs}  # transfers
    when: dict[str, list[int]] = {p["name"]: [] for p in outs}
    size = {p["name"]: int(np.prod(p["shape"], dtype=np.int64)) // lanes[p["name"]] for p in ins}  # transfers
    first_input = -1
    trace = str(Path(vcd).resolve()) if vcd is not None else None
    with working_dir(vdir):
        if trace is not None:
            sim.start_vcd_trace(trace)
        io.ap_clk = 0
        io.ap_rst_n = 0
        for p in ins:
            setattr(io, f"{p['name']}_TVALID", 0)
            setattr(io, f"{p['name']}_TLAST", 0)
        for p in outs:
            setattr(io, f"{p['name']}_TREADY", 1)
        for _ in range(2):
            io.ap_clk = 1
            io.ap_clk = 0
        io.ap_rst_n = 1
        cycle, deadlock = 0, False
        while any(len(got[p["name"]]) * lanes[p["name"]] < expect[p["name"]] for p in outs):
            if cycle >= timeout:
                break
            moved = []
            for p in ins:
                name, k = p["name"], sent[p["name"]]
                if k < len(data[name]):
                    setattr(io, f"{name}_TDATA", data[name][k])
                    setattr(io, f"{name}_TVALID", 1)
                    setattr(io, f"{name}_TLAST", int((k + 1) % size[name] == 0))
                    moved.append(name)
                else:
                    setattr(io, f"{name}_TVALID", 0)
            for name in moved:
                if getattr(io, f"{name}_TREADY").value:
                    sent[name] += 1
                    if first_input < 0:
                        first_input = cycle
            for p in outs:
                name = p["name"]
                if getattr(io, f"{name}_TVALID").value:
                    got[name].append(int(getattr(io, f"{name}_TDATA").value))
                    when[name].append(cycle)
            io.ap_clk = 1
            io.ap_clk = 0
            cycle += 1
            if cycle % 16 == 0 and int(io.sim_quiet.value) >= QUIET_CYCLES:
                deadlock = True
                break
        busy, stall, stalled = [], [], []
        for k, stage in enumerate(manifest["stages"]):
            io.sim_sel = k
            busy.append(int(io.sim_busy.value))
            stall.append(int(io.sim_stall.value))
            if io.sim_stalled.value:
                stalled.append(stage["name"])
        full = []
        for k, channel in enumerate(manifest["channels"]):
            io.sim_sel = k
            if io.sim_full.value:
                full.append(channel["name"])
        if trace is not None:
            sim.stop_vcd_trace()
    outputs = {
        p["name"]: _signed(unpack(got[p["name"]], p["width"], lanes[p["name"]]), p["width"],
                           parse_dtype(p["dtype"]).signed)
        for p in outs
    }
    run = Run(
        outputs=outputs,
        out_cycles={k: np.repeat(np.array(v, dtype=np.int64), lanes[k]) for k, v in when.items()},
        first_input=max(first_input, 0),
        cycles=cycle,
        busy=tuple(busy),
        stall=tuple(stall),
        stalled=tuple(stalled) if deadlock else (),
        full=tuple(full) if deadlock else (),
        deadlock=deadlock,
        timed_out=not deadlock and any(len(got[p["name"]]) * lanes[p["name"]] < expect[p["name"]] for p in outs),
    )
    return run, built


# --------------------------------------------------------------------------
# rtlsim
# --------------------------------------------------------------------------


def _frames(graph: Graph, inputs, frames: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Raw inputs per frame: the given real values (one mapping, repeated, or one per frame) or seeded random ones."""
    if inputs is None:
        return [reference.quantize_inputs(graph, reference.random_inputs(graph, seed + k)) for k in range(frames)]
    given = [inputs] if isinstance(inputs, Mapping) else list(inputs)
    if not given:
        raise HlsfuseError("rtlsim needs at least one frame of inputs")
    quantized = [reference.quantize_inputs(graph, frame) for frame in given]
    return [quantized[k % len(quantized)] for k in range(max(frames, len(quantized)))]


def _compare(graph: Graph, manifest: dict, run: Run, golden: list[dict[str, np.ndarray]]):
    mismatches, failures, compared = [], 0, 0
    for p in manifest["ports"]:
        if p["direction"] != "out":
            continue
        dtype = parse_dtype(p["dtype"])
        shape = tuple(p["shape"])
        want = np.concatenate([frame[p["tensor"]].reshape(-1) for frame in golden]).astype(np.int64)
        have = run.outputs[p["name"]]
        compared += want.size
        n = min(want.size, have.size)
        bad = np.flatnonzero(want[:n] != have[:n])
        failures += bad.size + (want.size - n)
        size = int(np.prod(shape, dtype=np.int64))
        for flat in bad[: MAX_SHOWN - len(mismatches)]:
            frame, k = divmod(int(flat), size)
            index = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else ()
            mismatches.append(Mismatch(p["tensor"], frame, index, int(want[flat]), int(have[flat]), dtype))
    return tuple(mismatches), failures, compared


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
    if driver == "pyverilator":
        run, built = drive_pyverilator(vdir, manifest, streams, expect, timeout, vcd)
    else:
        from .rtlsim_native import drive_native

        run, built = drive_native(vdir, manifest, streams, expect, timeout, vcd)
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
    mismatches, failures, compared = _compare(graph, manifest, run, golden)
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
