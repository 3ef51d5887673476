"""``hlsfuse synth``: synthesize a compiled design's Verilog with Yosys, stage by stage, against the resource model.

    OUT/verilog/<top>_<stage>.v (+ hlsf_*.v, its .mem files)  --synth_xilinx, one job per stage-->  cells, depth
    OUT/verilog/<top>.v (FIFOs, stages as black boxes)         --synth_xilinx-->                     cells, depth
    OUT/report.json (the model per stage, the FIFOs)           -->  SynthResult: model and Yosys side by side

Each job is cached under ``$XDG_CACHE_HOME/hlsfuse/synth`` by a hash of everything it reads (the Yosys version,
the script, every source and memory file), sealed as csim's and rtlsim's builds are (``sim/cache.py``): a
rerun, or a stage that another design shares byte for byte, does not synthesize again. Jobs run side by side
(``jobs``), the largest first.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HlsfuseError
from ..outdir import verify
from ..sim import cache
from ..sim.rtlsim import read_manifest, verilog_dir
from .depth import logic_depth
from .yosys import FAMILIES, Yosys, count_cells, family_of_part, find_yosys, synth_script

__all__ = ["Job", "StageSynth", "SynthResult", "synth", "design_jobs"]

_MEM = re.compile(r'"([A-Za-z0-9_.-]+\.mem)"')
_HW = re.compile(r"\b(hlsf_[a-z0-9_]+)\b")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@dataclass(frozen=True)
class Job:
    """One module to synthesize: its name in the report, module, sources read whole, sources read as black
    boxes, memory files, and the model's figures for it."""

    name: str
    kind: str
    module: str
    sources: tuple[str, ...]
    blackboxes: tuple[str, ...]
    mems: tuple[str, ...]
    model: dict
    word_files: tuple[tuple[str, str, int, int, int, int, int], ...] = ()  # (file, packed file, width, words,
    # words a line, banks, bank): _one_word_a_line


@dataclass(frozen=True)
class StageSynth:
    name: str
    kind: str
    model: dict  # dsp, bram18, lutram_bits, lut, ff
    yosys: dict  # count_cells
    depth: dict  # Depth.to_json
    seconds: float  # of the synthesis (cached: when it was made)
    cached: bool

    @property
    def differs(self) -> list[str]:
        """The exact resources (DSP, BRAM18) where Yosys and the model disagree."""
        return [k for k in ("dsp", "bram18") if self.yosys[k] != self.model.get(k, 0)]


@dataclass(frozen=True)
class SynthResult:
    design: str
    part: str
    family: str
    clock_ns: float | None
    version: str
    command: str
    stages: tuple[StageSynth, ...]
    total_model: dict = field(default_factory=dict)
    total_yosys: dict = field(default_factory=dict)
    failed: tuple[tuple[str, str], ...] = ()  # (stage, why) of the jobs Yosys could not do; not in stages or totals

    @property
    def mismatches(self) -> list[StageSynth]:
        return [s for s in self.stages if s.differs]

    def slow(self) -> list[StageSynth]:
        """Stages whose critical path's estimate exceeds the clock period (docs/synth.md)."""
        return [s for s in self.stages if self.clock_ns and s.depth["ns"] > self.clock_ns]


def _stage_model(stage: dict) -> dict:
    return {k: stage.get(k, 0) for k in ("dsp", "bram18", "lutram_bits", "lut", "ff")}


def _hw_used(vdir: Path, source: str, hw: frozenset[str]) -> tuple[str, ...]:
    """The hw/rtl modules (``hlsf_*.v`` of the folder) ``source`` instantiates, and those they instantiate: a job
    reads (and its cache key hashes) only these, so an edit of one module re-synthesizes only its users."""
    used: set[str] = set()
    todo = [source]
    while todo:
        text = _COMMENT.sub("", (vdir / todo.pop()).read_text(encoding="utf-8"))
        for name in _HW.findall(text):
            if f"{name}.v" in hw and f"{name}.v" not in used:
                used.add(f"{name}.v")
                todo.append(f"{name}.v")
    return tuple(sorted(used))


def design_jobs(vdir: Path, manifest: dict, report: dict) -> list[Job]:
    """The jobs of a design: one per stage module, then the top (its FIFOs; the stages as black boxes)."""
    top = manifest["top"]
    hw = frozenset(p.name for p in vdir.glob("hlsf_*.v"))
    models = {s["name"]: s for s in report.get("stages", ())}
    words = {}  # a file of one word a line -> (it, the packed file, width, words, words a line, banks, bank)
    for w in manifest.get("word_files", ()):
        banks = w.get("banks", 1)  # a BankRoms entry: "{bank}" in its name, bank k word k of every address
        for k in range(banks):
            name = w["file"].replace("{bank}", str(k))
            words[name] = (name, w["packed"], w["width"], w["words"], w["per_line"], banks, k)
    jobs, stage_files, all_mems, all_made = [], [], set(), set()
    for stage in manifest["stages"]:
        source = f"{top}_{stage['name']}.v"
        if not (vdir / source).is_file():
            raise HlsfuseError(f"{vdir / source}: missing (stage '{stage['name']}' of manifest.json)")
        stage_files.append(source)
        named = set(_MEM.findall((vdir / source).read_text(encoding="utf-8")))
        made = tuple(sorted(words[f] for f in named if f in words))
        mems = tuple(sorted(f for f in named if f not in words))
        all_mems.update(mems)
        all_made.update(made)
        sources = (*_hw_used(vdir, source, hw), source)
        jobs.append(Job(stage["name"], stage["kind"], f"{top}_{stage['name']}", sources, (), mems,
                        _stage_model(models.get(stage["name"], {})), made))
    fifos = _stage_model(report.get("fifos", {}))
    # Yosys runs a black box's $readmemh too: the top reads every memory file
    jobs.append(Job("(top: FIFOs)", "top", top, (*_hw_used(vdir, f"{top}.v", hw), f"{top}.v"), tuple(stage_files),
                    tuple(sorted(all_mems)), fifos, tuple(sorted(all_made))))
    return jobs


def _one_word_a_line(packed: Path, width: int, count: int, per_line: int, banks: int = 1, bank: int = 0) -> str:
    """A packed ROM file (``per_line`` words of ``width`` bits a line, the first in the low bits) one word a line,
    its first ``count`` words; a file of ``banks`` banks side by side (each address's words of every bank, bank 0
    first): bank ``bank``'s."""
    digits, mask = -(-width // 4), (1 << width) - 1
    out = []
    for value in _lines(packed, packed.stat().st_mtime_ns):
        out += [f"{value >> (k * width) & mask:0{digits}x}" for k in range(bank, per_line * banks, banks)]
    return "\n".join(out[:count]) + "\n"


@functools.lru_cache(maxsize=2)
def _lines(packed: Path, _mtime: int) -> tuple[int, ...]:
    """The lines of a .mem file as integers (read once for all the banks it holds)."""
    return tuple(int(line, 16) for line in packed.read_text(encoding="ascii").split())


def _key(yosys: Yosys, script: str, vdir: Path, job: Job) -> str:
    h = hashlib.sha256()
    for part in (yosys.version, script):
        h.update(part.encode() + b"\0")
    for name in (*job.sources, *job.blackboxes, *job.mems):
        h.update(name.encode() + b"\0")
        h.update(hashlib.sha256((vdir / name).read_bytes()).digest())
    for made in job.word_files:  # made from a packed file hashed above
        h.update(repr(made).encode() + b"\0")
    return h.hexdigest()[:32]


def _synthesize(yosys: Yosys, vdir: Path, job: Job, family: str) -> tuple[dict, bool]:
    script = synth_script(list(job.sources), job.module, family, list(job.blackboxes))
    folder = cache.root("synth") / f"{family}-{_key(yosys, script, vdir, job)}"

    def build(scratch: Path) -> None:
        for name in (*job.sources, *job.blackboxes, *job.mems):
            shutil.copyfile(vdir / name, scratch / name)
        for name, packed, *layout in job.word_files:
            (scratch / name).write_text(_one_word_a_line(vdir / packed, *layout), encoding="ascii")
        (scratch / "synth.ys").write_text(script, encoding="utf-8")
        start = time.monotonic()
        status, output = yosys.run("synth.ys", scratch)
        seconds = time.monotonic() - start
        if status != 0:
            log = (scratch / "yosys.log").read_text(errors="replace") if (scratch / "yosys.log").is_file() else ""
            if yosys.memory and any(sign in output for sign in _OUT_OF_MEMORY):
                raise HlsfuseError(f"synth: Yosys {yosys.number} ran out of memory on {job.module}: a job may take "
                                   f"{yosys.memory / 2**30:.1f} GB (the machine's memory over the jobs at once; -j 1 "
                                   "gives one job all of it)")
            errors = [line for line in (log + output).splitlines() if "ERROR" in line or "rror:" in line]
            raise HlsfuseError(f"synth: Yosys {yosys.number} failed on {job.module} (exit {status}): "
                               f"{errors[-1] if errors else (output.strip().splitlines() or ['no output'])[-1]}")
        stat = json.loads((scratch / "stat.json").read_text())
        cells = Counter(stat["modules"][f"\\{job.module}"]["num_cells_by_type"])
        netlist = json.loads((scratch / "netlist.json").read_text())
        depth = logic_depth(netlist, job.module, family)
        result = {"cells": dict(sorted(cells.items())), "counts": count_cells(cells), "depth": depth.to_json(),
                  "seconds": round(seconds, 1)}
        made = tuple(w[0] for w in job.word_files)
        for name in (*job.sources, *job.blackboxes, *job.mems, *made, "netlist.json", "stat.json"):
            (scratch / name).unlink(missing_ok=True)
        (scratch / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")

    path, built = cache.entry(folder, "result.json", build)
    return json.loads(path.read_text(encoding="utf-8")), built


_OUT_OF_MEMORY = ("bad_alloc", "cannot allocate memory", "MemoryError", "out of memory")
"""What a Yosys run says when its memory limit stopped it (C++, glibc, Python)."""


def job_memory(jobs: int) -> int:
    """Bytes of address space a Yosys job may take when ``jobs`` run at once: the machine's memory shared out
    (at least 2 GB). A native Yosys has no ceiling of its own: a sum of 576 products took more than 11 GB."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(2 << 30, total // jobs)


def _sum(rows: list[dict]) -> dict:
    total = Counter()
    for row in rows:
        total.update({k: v for k, v in row.items() if isinstance(v, int)})
    return dict(total)


def synth(out_dir, family: str | None = None, jobs: int = 2, allow_edits: bool = False,
          yosys: Yosys | None = None, on_done: Callable[[str, int, int], None] | None = None) -> SynthResult:
    """Synthesize every stage of the design in ``out_dir`` (and its top) with Yosys, ``jobs`` at a time, for
    ``family`` (default: from the design's part); ``on_done(name, done, total)`` after each. A job Yosys fails on
    is in the result's ``failed``, the others are measured."""
    out, vdir = verilog_dir(out_dir)
    if not allow_edits:
        verify(out, ("verilog",))
    manifest = read_manifest(vdir)
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HlsfuseError(f"{out / 'report.json'}: unreadable ({exc}); compile the design again") from None
    part = report.get("part", "")
    if family is None:
        family = family_of_part(part)
    if family not in FAMILIES:
        raise HlsfuseError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    jobs = max(1, jobs)
    yosys = dataclasses.replace(yosys or find_yosys(), memory=job_memory(jobs), running=set(), stopped=[])
    work = design_jobs(vdir, manifest, report)
    order = sorted(work, key=lambda j: -sum((vdir / s).stat().st_size for s in j.sources[-1:]))
    results: dict[str, tuple[dict, bool]] = {}
    failed: dict[str, str] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        pending = {pool.submit(_synthesize, yosys, vdir, job, family): job for job in order}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                try:
                    results[job.name] = future.result()
                except HlsfuseError as exc:  # Yosys failed on this job (an error, out of memory): the others go on
                    failed[job.name] = str(exc)
                if on_done:
                    on_done(job.name, len(results) + len(failed), len(work))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # first, so that no queued job starts after the kill
        yosys.stop()
        raise
    pool.shutdown()
    stages = tuple(StageSynth(j.name, j.kind, j.model, results[j.name][0]["counts"], results[j.name][0]["depth"],
                              results[j.name][0]["seconds"], not results[j.name][1]) for j in work if j.name in results)
    command = synth_script(["<sources>"], "<module>", family).splitlines()[1]
    clock = report.get("clock_ns")
    return SynthResult(manifest["top"], part, family, float(clock) if clock else None, yosys.version,
                       command, stages, _sum([s.model for s in stages]), _sum([s.yosys for s in stages]),
                       tuple((j.name, failed[j.name]) for j in work if j.name in failed))
