"""What the two rtlsim drivers share: how a Verilated model is built and cached, and what a driver observes.

    VERILATOR_FLAGS, MAKE_VARS   the options of every build (docs/verilog.md, "Build time")
    model_key                    the cache key of a model: its sources, memory files, tool versions, options
    runtime_folder               Verilator's runtime objects (verilated*.o), compiled once per driver and
      reuse_runtime, keep_runtime  trace setting, copied into every later build
    Run, QUIET_CYCLES            a driver's observations, and its deadlock rule

The drivers themselves are rtlsim_pyverilator.py (the model as a Python extension) and rtlsim_native.py
(a C++ harness); rtlsim.py chooses one and compares what it observed with the reference.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import HlsfuseError
from . import cache

__all__ = ["Run", "VERILATOR_FLAGS", "MAKE_VARS", "QUIET_CYCLES", "verilator_version", "model_key", "cache_root",
           "runtime_folder", "reuse_runtime", "keep_runtime"]


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
