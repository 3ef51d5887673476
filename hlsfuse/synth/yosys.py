"""Running Yosys: finding a build recent enough, one synthesis of one module, and its cell counts.

The build used is Yosys 0.70 or newer: by default pyosys from PyPI (Yosys built as a Python extension, run by
``hlsfuse.synth.pyosys_cli`` in a process of its own), or a native ``yosys`` named by ``HLSFUSE_YOSYS``. Older
builds are refused: Debian 12's Yosys 0.23 maps the unfolded convolutions of an UltraScale+ design (``synth_xilinx
-family xcup``) to tens of thousands of LUT6/MUXF7..9 cells, about 30 times the LUTs 0.70 builds from the same module
(docs/synth.md). Every file a run reads or writes is named relative to the folder it runs in.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HlsfuseError
from ..sim import tools

__all__ = ["MIN_VERSION", "INSTALL", "Yosys", "find_yosys", "FAMILIES", "family_of_part", "synth_script",
           "count_cells"]

MIN_VERSION = (0, 70)
INSTALL = "pip install pyosys (Yosys 0.70+), or set HLSFUSE_YOSYS to a native yosys 0.70+"
ENV = "HLSFUSE_YOSYS"

FAMILIES = ("xc7", "xcu", "xcup")
"""``synth_xilinx -family``: 7 series, UltraScale, UltraScale+ (Zynq UltraScale+, Kria, Alveo, Virtex/Kintex
UltraScale+)."""


@dataclass(frozen=True)
class Yosys:
    command: tuple[str, ...]  # the argv prefix that runs it
    version: str  # its ``-V`` line, e.g. "Yosys 0.70 (git sha1 28ba3cb92, ...)"
    running: set = field(default_factory=set, compare=False, repr=False)  # the process groups of its runs
    memory: int | None = None  # bytes of address space a run may take (None: no limit)
    stopped: list = field(default_factory=list, compare=False, repr=False)  # non-empty once ``stop`` was called

    @property
    def number(self) -> str:
        match = re.search(r"Yosys (\d+\.\d+)", self.version)
        return match.group(1) if match else "?"

    def run(self, script: str, cwd: Path, timeout: float | None = None) -> tuple[int, str]:
        """Run the script file ``script`` (a name in ``cwd``) in ``cwd``; (exit status, its output). After
        ``stop``, no run starts (HlsfuseError)."""
        argv = [*self.command, "-q", "-l", "yosys.log", "-s", script]
        limit = None if self.memory is None else functools.partial(_limit_memory, self.memory)
        if self.stopped:
            raise HlsfuseError("synth: stopped")
        with subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True, preexec_fn=limit) as proc:
            self.running.add(proc.pid)
            if self.stopped:  # stopped while it started
                _kill(proc.pid)
            try:
                out, _ = proc.communicate(timeout=timeout)
            except BaseException:
                _kill(proc.pid)
                raise
            finally:
                self.running.discard(proc.pid)
        return proc.returncode, out

    def stop(self) -> None:
        """Kill every run still going and start no other (an interrupt or an error of the command that started
        them)."""
        self.stopped.append(True)
        for pid in list(self.running):
            _kill(pid)


def _limit_memory(limit: int) -> None:
    """In a run's process before it starts: at most ``limit`` bytes of address space (an allocation beyond fails,
    and Yosys stops with an error, rather than the machine swapping)."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _version(command: tuple[str, ...]) -> str:
    done = tools.run([*command, "-V"], timeout=600)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("Yosys ")]
    if done.returncode != 0 or not lines:
        raise HlsfuseError(f"{' '.join(command)} -V did not answer with a Yosys version; install: {INSTALL}")
    return lines[-1].strip()


def find_yosys() -> Yosys:
    """The Yosys to run: ``$HLSFUSE_YOSYS`` if set, else the pyosys package; a missing or older build is an
    HlsfuseError saying how to install one."""
    native = os.environ.get(ENV)
    if native:
        path = shutil.which(native)
        if path is None:
            raise HlsfuseError(f"{ENV}={native}: no such program; install Yosys 0.70+, or unset it to use "
                               "pip install pyosys")
        command: tuple[str, ...] = (path,)
    elif importlib.util.find_spec("pyosys") is not None:
        command = (sys.executable, "-m", "hlsfuse.synth.pyosys_cli")
    else:
        raise HlsfuseError(f"Yosys not found; install it: {INSTALL}")
    yosys = Yosys(command, _version(command))
    found = tuple(int(x) for x in yosys.number.split(".")) if yosys.number != "?" else (0, 0)
    if found < MIN_VERSION:
        raise HlsfuseError(f"{yosys.version} is too old (hlsfuse synth needs Yosys 0.70 or newer: older builds "
                           f"mis-map UltraScale+ designs); install: {INSTALL}")
    return yosys


def family_of_part(part: str) -> str:
    """``synth_xilinx -family`` of an AMD part name: xc7* -> xc7; xcku/xcvu with a ``p`` after the device number,
    xczu*, xck26, xcau*, xcu* (Alveo) -> xcup; other xcku/xcvu -> xcu. Versal has no Yosys mapping."""
    p = part.lower()
    if p.startswith("xc7"):
        return "xc7"
    if re.match(r"xc(ku|vu)\d+p", p) or p.startswith(("xczu", "xck26", "xck24", "xcau", "xcu")):
        return "xcup"
    if re.match(r"xc(ku|vu)\d+", p):
        return "xcu"
    raise HlsfuseError(f"part '{part}': Yosys maps 7-series and UltraScale(+) parts only (xc7..., xcku..., xcvu..., "
                       "xczu..., xcu...); pass --family xc7, xcu or xcup")


def synth_script(sources: list[str], top: str, family: str, blackboxes: list[str] = ()) -> str:
    """The Yosys script synthesizing module ``top`` of ``sources`` for ``family``: flattened, without I/O buffers
    (a module inside a larger design), cell counts to stat.json, the netlist to netlist.json. ``blackboxes``:
    modules read only for their ports (the stages, when synthesizing the top). HLSFUSE_WORD_FILES: a packed ROM
    reads its words from the file of one word a line the job writes (manifest.json's ``word_files``), as Yosys
    cannot run the loop that unpacks it at time 0."""
    lines = []
    if blackboxes:
        lines.append(f"read_verilog -DSYNTHESIS -DHLSFUSE_WORD_FILES -lib {' '.join(blackboxes)}")
    lines += [
        f"read_verilog -DSYNTHESIS -DHLSFUSE_WORD_FILES {' '.join(sources)}",
        f"synth_xilinx -family {family} -noiopad -noclkbuf -flatten -top {top}",
        "tee -q -o stat.json stat -json",
        "write_json netlist.json",
    ]
    return "\n".join(lines) + "\n"


# Cells per resource; every LUTk cell counts as one LUT (a LUT6 site; Vivado may pack two small ones into one
# LUT6_2, so the count is an upper bound of its), LUTRAM and SRL cells by the LUTs they occupy.
_LUTRAM = {"RAM32X1S": 1, "RAM32X1D": 2, "RAM64X1S": 1, "RAM64X1D": 2, "RAM128X1S": 2, "RAM128X1D": 4,
           "RAM256X1S": 4, "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "RAM512X1S": 8,
           "RAM64X8SW": 8, "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1}
_BRAM = {"RAMB18E1": 1, "RAMB18E2": 1, "RAMB36E1": 2, "RAMB36E2": 2, "FIFO18E1": 1, "FIFO36E1": 2}


def count_cells(cells: Counter) -> dict[str, int]:
    """Resource counts of a netlist's cell types: dsp, bram18 (a RAMB36 counts 2), uram, lutram (LUTs holding
    memory or shift registers), logic_lut (LUT1..LUT6 cells), lut (both), ff, carry (CARRY4/CARRY8 cells),
    muxf (MUXF7/8/9)."""
    out = Counter()
    for cell, n in cells.items():
        if cell.startswith("DSP48") or cell.startswith("DSP58"):
            out["dsp"] += n
        elif cell in _BRAM:
            out["bram18"] += _BRAM[cell] * n
        elif cell.startswith("URAM"):
            out["uram"] += n
        elif cell in _LUTRAM:
            out["lutram"] += _LUTRAM[cell] * n
        elif re.fullmatch(r"LUT[1-6]", cell):
            out["logic_lut"] += n
        elif cell.startswith(("FD", "LD")):
            out["ff"] += n
        elif cell.startswith("CARRY"):
            out["carry"] += n
        elif cell.startswith("MUXF"):
            out["muxf"] += n
    out["lut"] = out["logic_lut"] + out["lutram"]
    keys = ("dsp", "bram18", "uram", "lutram", "logic_lut", "lut", "ff", "carry", "muxf")
    return {k: int(out[k]) for k in keys}
