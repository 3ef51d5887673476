"""The native rtlsim driver: a C++ harness around the Verilated ``<top>_sim`` model, for long runs.

    manifest --templates/verilog/harness.cpp.j2--> harness.cpp
    harness.cpp + sim sources --verilator --cc --exe--> C++ --make, g++ on every core--> binary
                              (cached by content; Verilator's runtime objects are shared by all models)
    inputs --in<k>.bin--> binary (cwd = OUT/verilog, where $readmemh finds the .mem files)
           --out<k>.bin, out<k>.cyc, result.json--> Run

It observes exactly what ``rtlsim_pyverilator.drive_pyverilator`` observes (same cycle numbering,
handshakes, deadlock rule and counters), but the cycle loop runs in C++ with the per-port code
unrolled by the template and no I/O or allocation inside it, so a small design simulates millions
of cycles per second. Values cross the process boundary as int64 files (machine byte order), one
per port. The build options, cache key and runtime objects are verilator.py's, as the other driver's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..backends.templates import render
from ..errors import HlsfuseError
from ..progress import activity
from ..types import parse_dtype
from . import cache, tools
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

__all__ = ["drive_native", "native_model", "run_model", "harness_text"]

BUILD_TIMEOUT = 1800  # seconds; Verilator and g++ on a shared machine


@dataclass(frozen=True)
class PortView:
    index: int  # position among the inputs (or the outputs) in manifest order
    name: str
    size: int  # elements per frame
    lanes: int  # elements per transfer, element 0 in the low bits of TDATA
    width: int  # bits per element
    mask: str  # the element's bits, as a C++ hexadecimal literal
    shift: int  # 64 - the element's bits: an output is sign-extended by shifting left and back (0: none)
    words: int  # 32-bit words of a TDATA wider than 64 bits (Verilator's VlWide: tdata[k]), else 0
    tdata: str  # the model's C++ member names of the port's signals
    tvalid: str
    tready: str
    tlast: str


def _member(signal_name: str) -> str:
    """The C++ member Verilator makes of a port: it escapes each ``__`` (a sanitized name may end in ``_``)."""
    return re.sub("__", "___05F", signal_name)


def _views(manifest: dict, direction: str) -> list[PortView]:
    ports = [p for p in manifest["ports"] if p["direction"] == direction]
    views = []
    for k, p in enumerate(ports):
        views.append(
            PortView(
                index=k,
                name=p["name"],
                size=int(np.prod(p["shape"], dtype=np.int64)),
                lanes=p.get("lanes", 1),
                width=p["width"],
                mask=hex((1 << p["width"]) - 1),
                shift=64 - p["width"] if parse_dtype(p["dtype"]).signed else 0,
                words=(p["bus"] + 31) // 32 if p["bus"] > 64 else 0,
                tdata=_member(f"{p['name']}_TDATA"),
                tvalid=_member(f"{p['name']}_TVALID"),
                tready=_member(f"{p['name']}_TREADY"),
                tlast=_member(f"{p['name']}_TLAST"),
            )
        )
    return views


def harness_text(manifest: dict, trace: bool) -> str:
    inputs, outputs = _views(manifest, "in"), _views(manifest, "out")
    return render(
        "verilog/harness.cpp.j2",
        sim_top=manifest["sim_top"],
        inputs=inputs,
        outputs=outputs,
        wide=any(p.words for p in (*inputs, *outputs)),
        stages=len(manifest["stages"]),
        channels=len(manifest["channels"]),
        quiet=QUIET_CYCLES,
        trace=trace,
    )


def _require_verilator() -> None:
    if shutil.which("verilator") is None:
        raise HlsfuseError("verilator is not installed; rtlsim needs it (apt-get install verilator)")


def _first_error(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("%Error") or "error:" in line:
            return line
    return lines[0] if lines else "no output"


def _tool(cmd: list[str], cwd: Path, timeout: float, top: str, key: str) -> None:
    """Run one step of a build; a failure is a one-line error with the full log kept in the cache."""
    try:
        done = tools.run(cmd, cwd=cwd, timeout=max(timeout, 1.0))
    except FileNotFoundError:
        raise HlsfuseError(f"{cmd[0]} is not installed; rtlsim needs it (apt-get install verilator make g++)") from None
    except subprocess.TimeoutExpired:
        raise HlsfuseError(f"Verilator and g++ took longer than {BUILD_TIMEOUT} s to build '{top}'") from None
    if done.returncode != 0:
        log = cache_root() / f"native-{key}.log"
        log.write_text(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}", encoding="utf-8")
        raise HlsfuseError(
            f"Verilator could not build '{top}': {_first_error(done.stdout + done.stderr)} (full log: {log})"
        )


def native_model(vdir: Path, manifest: dict, trace: bool) -> tuple[Path, bool]:
    """(the harness binary for the design in ``vdir``, whether it was built now rather than found in the cache)."""
    _require_verilator()
    top = manifest["sim_top"]
    harness = harness_text(manifest, trace)
    key = model_key(vdir, manifest, "native", str(trace), *VERILATOR_FLAGS, *MAKE_VARS, harness)
    name = f"V{top}_native"
    runtime = runtime_folder("native", trace)

    def build(scratch: Path) -> None:
        obj = scratch / "obj"
        (scratch / "harness.cpp").write_text(harness, encoding="utf-8")
        verilate = [
            "verilator", "--cc", "--exe", "-Wno-fatal", *VERILATOR_FLAGS, *(["--trace"] if trace else []),
            "--top-module", top, "-Mdir", str(obj), "-o", name, str(scratch / "harness.cpp"),
            *[str((vdir / s).resolve()) for s in manifest["sim_sources"]],
        ]
        make = ["make", "-C", str(obj), "-f", f"V{top}.mk", f"-j{os.cpu_count() or 1}", *MAKE_VARS, name]
        start = time.monotonic()
        with activity(f"rtlsim: Verilator is translating {top}") as progress:
            _tool(verilate, scratch, BUILD_TIMEOUT, top, key)
            files = len(list(obj.glob("*.cpp"))) + 1
            progress.say(f"rtlsim: g++ is compiling {top}'s model ({files} files)")
            reuse_runtime(runtime, obj)
            _tool(make, scratch, BUILD_TIMEOUT - (time.monotonic() - start), top, key)
        keep_runtime(runtime, obj)
        (obj / name).rename(scratch / name)
        shutil.rmtree(obj)  # the object files are ~10 times the binary's size; only the binary is reused

    return cache.entry(cache_root() / f"native-{key}", name, build)


def _died(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _run_folder_parent() -> str | None:
    """Where the run's files go: a long run moves hundreds of megabytes, which on tmpfs never reach the disk."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _load(path: Path) -> np.ndarray:
    """The int64 values (machine byte order) of a harness file, mapped copy-on-write rather than read: a long
    run's outputs are hundreds of megabytes, and the mapping outlives the file's deletion."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(np.memmap(path, dtype=np.int64, mode="c"))


def run_model(
    binary: Path,
    vdir: Path,
    manifest: dict,
    inputs: Mapping[str, np.ndarray],
    expect: Mapping[str, int],
    timeout: int,
    vcd: str | None = None,
) -> tuple[Run, float]:
    """Run a harness binary; (what it observed, seconds its cycle loop took)."""
    ins = [p for p in manifest["ports"] if p["direction"] == "in"]
    outs = [p for p in manifest["ports"] if p["direction"] == "out"]
    with tempfile.TemporaryDirectory(prefix="hlsfuse-rtlsim-", dir=_run_folder_parent()) as tmp:
        run_dir = Path(tmp)
        for k, p in enumerate(ins):
            np.ascontiguousarray(np.asarray(inputs[p["name"]]).reshape(-1), dtype=np.int64).tofile(
                run_dir / f"in{k}.bin"
            )
        cmd = [str(binary), str(run_dir), str(timeout), *[str(expect[p["name"]]) for p in outs]]
        if vcd is not None:
            cmd.append(str(Path(vcd).resolve()))
        with activity(f"rtlsim: simulating {manifest['sim_top']}"):
            done = tools.run(cmd, cwd=vdir)
        if done.returncode != 0 or not (run_dir / "result.json").is_file():
            why = _first_error(done.stderr + done.stdout)
            raise HlsfuseError(f"native rtlsim of '{manifest['sim_top']}' {_died(done.returncode)}: {why}")
        result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
        got = {p["name"]: _load(run_dir / f"out{k}.bin") for k, p in enumerate(outs)}
        when = {p["name"]: _load(run_dir / f"out{k}.cyc") for k, p in enumerate(outs)}
    deadlock = bool(result["deadlock"])
    stalled = tuple(s["name"] for s, flag in zip(manifest["stages"], result["stalled"]) if flag)
    full = tuple(c["name"] for c, flag in zip(manifest["channels"], result["full"]) if flag)
    run = Run(
        outputs=got,  # sign-extended by the harness
        out_cycles=when,
        first_input=max(int(result["first_input"]), 0),
        cycles=int(result["cycles"]),
        busy=tuple(int(v) for v in result["busy"]),
        stall=tuple(int(v) for v in result["stall"]),
        stalled=stalled if deadlock else (),
        full=full if deadlock else (),
        deadlock=deadlock,
        timed_out=not deadlock and any(got[p["name"]].size < expect[p["name"]] for p in outs),
    )
    return run, float(result["seconds"])


def drive_native(
    vdir: Path,
    manifest: dict,
    inputs: Mapping[str, np.ndarray],
    expect: Mapping[str, int],
    timeout: int,
    vcd: str | None = None,
) -> tuple[Run, bool]:
    """Simulate with the native harness; same contract as ``rtlsim_pyverilator.drive_pyverilator``."""
    binary, built = native_model(vdir, manifest, trace=vcd is not None)
    run, _ = run_model(binary, vdir, manifest, inputs, expect, timeout, vcd)
    return run, built
