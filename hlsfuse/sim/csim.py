"""C simulation: build a generated HLS project with g++, run its testbench, read the verdict.

    OUT/graph.json + OUT/hls/  --g++ (cached by content)-->  csim binary
    inputs --reference--> data/<port>.txt (inputs and golden outputs)  --binary-->  PASS / MISMATCH lines

The testbench (tb_<top>.cpp) compares every output element with the reference interpreter's
value: exactly for fixed-point and integer tensors, within the tolerance in ports.json for
float32. Binaries are cached under ``$XDG_CACHE_HOME/hlsfuse/csim`` by a hash of the sources,
the headers, the flags and the compiler, so repeated runs of the same design do not rebuild
(cache.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import reference
from ..backends.hls.data import data_files, random_frames
from ..backends.hls.toolchain import POISON_FLAG, cxxflags
from ..errors import HlsfuseError
from ..graph_json import load_graph
from ..ir import Graph
from ..outdir import verify
from ..progress import activity
from ..types import DType, parse_dtype
from . import cache, tools
from .compare import Mismatch, failed_lines, locate, passed_line, quantized_frames

__all__ = ["csim", "CsimResult", "project_dirs", "DEFAULT_FRAMES"]

DEFAULT_FRAMES = 2  # frames csim runs unless told otherwise (the seeded frames compile writes to data/)
BUILD_TIMEOUT = 1800  # seconds; large designs compile slowly on a shared machine
RUN_TIMEOUT = 1800


@dataclass(frozen=True)
class ManifestPort:
    name: str
    tensor: str
    direction: str
    dtype: DType
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class CsimResult:
    passed: bool
    frames: int
    compared: int  # output elements compared
    failures: int  # output elements (and TLAST flags) that differ
    mismatches: tuple[Mismatch, ...]  # the first ones, as the testbench printed them
    error: str | None  # why the run stopped early (a crash, a stream read while empty, missing output)
    output: str  # the testbench's output
    binary: Path
    built: bool  # False when the binary came from the cache

    def report(self) -> str:
        """PASS/FAIL and the first mismatches, as ``hlsfuse csim`` prints them."""
        if self.passed:
            return passed_line(self.compared, self.frames)
        return "\n".join(failed_lines(self.failures, self.compared, self.mismatches, self.error))


def project_dirs(out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """(OUT, OUT/hls) for an output folder of ``hlsfuse compile`` or its hls/ subfolder."""
    out = Path(out_dir)
    if (out / "hls" / "ports.json").is_file():
        return out, out / "hls"
    if (out / "ports.json").is_file():
        return out.parent, out
    raise HlsfuseError(f"{out}: no HLS project here (expected {out / 'hls' / 'ports.json'}); run hlsfuse compile first")


@dataclass(frozen=True)
class Manifest:
    top: str
    ports: list[ManifestPort]
    seed: int  # of the random frames in data/
    frames: int  # how many there are


def _manifest(hls: Path) -> Manifest:
    try:
        data = json.loads((hls / "ports.json").read_text(encoding="utf-8"))
        ports = [
            ManifestPort(p["name"], p["tensor"], p["direction"], parse_dtype(p["dtype"]), tuple(p["shape"]))
            for p in data["ports"]
        ]
        return Manifest(data["top"], ports, int(data["seed"]), int(data["frames"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HlsfuseError(f"{hls / 'ports.json'}: unreadable project description ({exc})") from None


def _frames(graph: Graph, inputs, frames: int | None) -> list[dict[str, np.ndarray]]:
    """Raw inputs per frame from one mapping of real values (repeated) or a sequence of them (in turn),
    ``frames`` of them (default: as many as given, at least DEFAULT_FRAMES)."""
    quantized = quantized_frames(graph, inputs, "csim")
    count = frames if frames is not None else max(DEFAULT_FRAMES, len(quantized))
    return [quantized[k % len(quantized)] for k in range(count)]


# --------------------------------------------------------------------------
# Building (cached)
# --------------------------------------------------------------------------


def _compiler_version() -> str:
    try:
        done = subprocess.run(["g++", "--version"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise HlsfuseError("g++ is not installed; C simulation needs it (apt-get install g++)") from None
    return done.stdout


@functools.cache
def _accepts_poison() -> bool:
    """g++ accepts POISON_FLAG (g++ 12 and newer)."""
    cmd = ["g++", POISON_FLAG, "-fsyntax-only", "-x", "c++", os.devnull]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
    except FileNotFoundError:
        raise HlsfuseError("g++ is not installed; C simulation needs it (apt-get install g++)") from None


def _build_key(hls: Path, sources: Sequence[str], flags: Sequence[str], hls_include: str | None) -> str:
    digest = hashlib.sha256()
    digest.update(_compiler_version().encode())
    digest.update("\0".join(flags).encode())
    files = [hls / s for s in sources] + sorted(hls.glob("*.h")) + sorted(hls.glob("include/*.h"))
    files += sorted(hls.glob("hlsfuse/**/*.h"))
    for path in files:
        digest.update(str(path.relative_to(hls)).encode() + b"\0" + path.read_bytes() + b"\0")
    if hls_include:
        # AMD's include folder is large: its files count by name, size and modification time
        for path in sorted(p for p in Path(hls_include).rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


def build(hls: Path, top: str, hls_include: str | None = None) -> tuple[Path, bool]:
    """The testbench binary of the project in ``hls`` and whether it was built now (not cached)."""
    hls_include = str(Path(hls_include).resolve()) if hls_include else None
    if hls_include and not (Path(hls_include) / "ap_fixed.h").is_file():
        raise HlsfuseError(f"--hls-include {hls_include}: no ap_fixed.h there")
    sources = (f"{top}.cpp", f"tb_{top}.cpp")
    flags = cxxflags(hls_include, poison=bool(hls_include) and _accepts_poison())
    key = _build_key(hls, sources, flags, hls_include)
    name = f"csim_{top}"

    def compile_into(scratch: Path) -> None:
        cmd = ["g++", *flags, *sources, "-o", str(scratch / name)]
        with activity(f"csim: g++ is building {top}"):  # a minute for a large model's weights
            done = tools.run(cmd, cwd=hls, timeout=BUILD_TIMEOUT)
        if done.returncode != 0:
            log = cache.root("csim") / f"{key}.log"
            log.write_text(" ".join(cmd) + "\n" + done.stderr, encoding="utf-8")
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[:200])
            raise HlsfuseError(f"g++ could not build the C simulation of '{top}': {first.strip()} (full log: {log})")

    return cache.entry(cache.root("csim") / key, name, compile_into)


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


_FAIL = re.compile(r"^FAIL \S+: (\d+) of (\d+) output elements differ in (\d+) frame")
_PASS = re.compile(r"^PASS \S+: (\d+) output elements match in (\d+) frame")


def _parse(output: str, ports: dict[str, ManifestPort]) -> tuple[list[Mismatch], int, int, int]:
    """(mismatches, failures, compared, frames) from the testbench's output."""
    mismatches, failures, compared, frames = [], 0, 0, 0
    for line in output.splitlines():
        words = line.split()
        if words[:1] == ["MISMATCH"] and len(words) == 5:
            name, what = (words[1][:-5], "TLAST") if words[1].endswith(".last") else (words[1], "value")
            port = ports[name]
            flat = int(words[2])
            number = float if port.dtype.is_float and what == "value" else int
            frame, index = locate(flat, port.shape)
            expected, got = number(words[3]), number(words[4])
            mismatches.append(Mismatch(port.tensor, frame, index, expected, got, port.dtype, what))
        elif m := _FAIL.match(line):
            failures, compared, frames = (int(g) for g in m.groups())
        elif m := _PASS.match(line):
            compared, frames = (int(g) for g in m.groups())
    return mismatches, failures, compared, frames


def csim(
    out_dir: str | os.PathLike,
    inputs: Mapping[str, object] | Sequence[Mapping[str, object]] | None = None,
    hls_include: str | None = None,
    graph: Graph | None = None,
    frames: int | None = None,
    allow_edits: bool = False,
) -> CsimResult:
    """Build and run the C simulation of the project in ``out_dir`` (OUT or OUT/hls).

    ``inputs``: real values per graph input (one frame, repeated) or a list of such mappings (frames
    run back to back, in turn); by default the project's own data/ (seeded random frames written by
    ``emit_hls``). ``frames``: how many frames to run (default: those of data/, or of ``inputs`` but at
    least DEFAULT_FRAMES); without ``inputs``, another count runs that many seeded random frames.
    Running several frames shows state one frame leaves to the next. Golden outputs come from the
    reference interpreter on ``graph`` (default: the graph saved as OUT/graph.json).
    ``hls_include``: a folder of AMD's headers to build against instead of the work-alikes
    (default: ``$XILINX_HLS/include`` when XILINX_HLS is set). The project's files are checked against
    OUT/checksums.json first (``outdir.verify``), unless ``allow_edits``.
    """
    if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int) or frames < 1):
        raise HlsfuseError(f"frames must be a positive integer, not {frames!r}")
    out, hls = project_dirs(out_dir)
    if not allow_edits:
        verify(out, ("hls",))
    manifest = _manifest(hls)
    top, ports = manifest.top, manifest.ports
    if frames is not None:
        reference.check_frames(graph if graph is not None else load_graph(out / "graph.json"), frames, "csim")
    if hls_include is None and os.environ.get("XILINX_HLS"):
        hls_include = str(Path(os.environ["XILINX_HLS"]) / "include")
    binary, built = build(hls, top, hls_include)
    with tempfile.TemporaryDirectory(prefix="hlsfuse-csim-") as tmp:
        data = hls.resolve() / "data"  # the binary runs in hls/, so a relative OUT would not resolve from there
        raw = None
        if inputs is not None:
            graph = graph if graph is not None else load_graph(out / "graph.json")
            raw = _frames(graph, inputs, frames)
        elif frames is not None and frames != manifest.frames:
            graph = graph if graph is not None else load_graph(out / "graph.json")
            raw = random_frames(graph, manifest.seed, frames)
        if raw is not None:
            data = Path(tmp) / "data"
            data.mkdir()
            for path, text in data_files(graph, ports, raw).items():
                (Path(tmp) / path).write_text(text, encoding="utf-8")
        with activity(f"csim: running {top}"):
            done = tools.run([str(binary), str(data)], cwd=hls, timeout=RUN_TIMEOUT)
    output = done.stdout + done.stderr
    if done.returncode == 2:
        error = next((line for line in output.splitlines() if line.startswith("ERROR")), output.strip())
        raise HlsfuseError(f"C simulation of '{top}' cannot read its data: {error}")
    mismatches, failures, compared, frames = _parse(done.stdout, {p.name: p for p in ports})
    error = None
    if done.returncode not in (0, 1) or (done.returncode == 1 and not failures):
        lines = [line for line in output.splitlines() if line.startswith("ERROR")]
        error = lines[0] if lines else f"the testbench stopped with exit status {done.returncode}"
    return CsimResult(
        passed=done.returncode == 0,
        frames=frames,
        compared=compared,
        failures=failures,
        mismatches=tuple(mismatches),
        error=error,
        output=output,
        binary=binary,
        built=built,
    )
