"""The pyverilator rtlsim driver: the Verilated ``<top>_sim`` model as a Python extension, stepped from Python.

    OUT/verilog/<top>_sim.v --pyverilator (Verilator, make, g++; cached by content)--> V<top>_sim (a shared object)
    inputs --pack--> TDATA words, offered every cycle --> outputs taken every cycle --unpack--> Run

pyverilator is PyPI's pyverilator-mm. The build runs Verilator's own make, with VERILATOR_FLAGS and
MAKE_VARS (verilator.py) and on every core, with its output sent to a log in the cache; the model
reads its .mem files relative to the working directory, so it is built and run in the design's folder.
It observes exactly what ``rtlsim_native.drive_native`` observes, cycle by cycle from Python: slower,
with nothing to build but the model.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import HlsfuseError
from ..progress import activity
from ..types import parse_dtype
from . import cache
from .verilator import (
    MAKE_VARS,
    QUIET_CYCLES,
    VERILATOR_FLAGS,
    Run,
    cache_root,
    keep_runtime,
    model_key,
    reuse_runtime,
    runtime_folder,
)

__all__ = ["drive_pyverilator", "pack", "unpack"]


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


def _pyverilator_model(vdir: Path, manifest: dict, trace: bool):
    """(the pyverilator simulation of the design in ``vdir``, whether its model was built now rather than cached)."""
    try:
        import pyverilator
    except ImportError:
        raise HlsfuseError("the pyverilator driver needs pyverilator (pip install pyverilator-mm)") from None
    top = manifest["sim_top"]
    folder = cache_root() / f"py-{model_key(vdir, manifest, 'pyverilator', str(trace), *VERILATOR_FLAGS, *MAKE_VARS)}"
    log = cache_root() / f"{top}-build.log"
    runtime = runtime_folder("pyverilator", trace)

    def build(scratch: Path) -> None:
        reuse_runtime(runtime, scratch)
        try:
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
            text = log.read_text(encoding="utf-8", errors="replace")
            first = next((line for line in text.splitlines() if "%Error" in line or "error" in line), "see the log")
            raise HlsfuseError(f"Verilator could not build '{top}': {first.strip()} (full log: {log})") from None
        keep_runtime(runtime, scratch)

    library, built = cache.entry(folder, f"V{top}", build)
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
