"""Shared by the tests that compile C++ against HLS headers: hlsfuse's work-alike ones and AMD's own.

AMD's ap_types headers come from the hls4ml wheel on PyPI (1.3.0 carries byte-identical copies of them and
an hls_stream.h), downloaded once into the user's cache. Outside CI a failed download skips the test; in CI
it fails it, since CI must run every test.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from tiers import fresh, in_ci
from union import own_depths, union, union_fold

from hlsfuse import HlsfuseError, fuse
from hlsfuse.backends.hls import HlsOptions, emit_hls
from hlsfuse.graph_json import graph_to_dict
from hlsfuse.lower import Folding, LowerOptions, lower
from hlsfuse.outdir import Files, write_tree
from hlsfuse.resources import hw_dir
from hlsfuse.sim import cache, csim
from hlsfuse.sim.csim import CsimResult

__all__ = ["INCLUDE", "KERNELS_ROOT", "STRICT", "HLS4ML", "amd_cache", "amd_headers", "amd_include_flags",
           "write_project", "write_union", "csim_both", "built"]

INCLUDE = hw_dir() / "hls" / "include"  # hlsfuse's work-alike ap_int.h, ap_fixed.h, hls_stream.h, ap_axi_sdata.h
KERNELS_ROOT = hw_dir() / "hls"  # holds hlsfuse/kernels.h, included as <hlsfuse/kernels.h>
STRICT = ["-std=c++14", "-O2", "-Wall", "-Wextra", "-Werror"]

HLS4ML = "hls4ml==1.3.0"
AMD_DIR_IN_WHEEL = "hls4ml/templates/vivado/ap_types/"  # ap_int.h, ap_fixed.h, hls_stream.h, etc/...


def amd_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hlsfuse"


def amd_headers(cache: Path) -> Path:
    """AMD's ap_types headers from the hls4ml wheel (downloaded once into ``cache``; concurrent test workers wait
    for the one that downloads them)."""
    target = cache / "hls4ml-1.3.0-ap_types"
    if (target / "ap_fixed.h").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "hls4ml.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "ap_fixed.h").is_file():
            _download_amd_headers(cache, target)
    return target


def _download_amd_headers(cache: Path, target: Path) -> None:
    download = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                "--retries", "1", "--timeout", "30", HLS4ML, "-d", str(cache)]
    done = subprocess.run(download, capture_output=True, text=True, timeout=300)
    wheels = sorted(cache.glob("hls4ml-1.3.0-*.whl"))
    if done.returncode != 0 or not wheels:
        reason = f"cannot download {HLS4ML} for AMD's headers: {done.stderr.strip()[-500:]}"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    staging = cache / "staging"
    shutil.rmtree(staging, ignore_errors=True)  # what a killed run left
    with zipfile.ZipFile(wheels[0]) as wheel:
        members = [m for m in wheel.namelist() if m.startswith(AMD_DIR_IN_WHEEL) and not m.endswith("/")]
        for member in members:
            out = staging / member[len(AMD_DIR_IN_WHEEL):]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(wheel.read(member))
    assert (staging / "ap_fixed.h").is_file() and (staging / "hls_stream.h").is_file(), "unexpected hls4ml wheel layout"
    staging.replace(target)


def amd_include_flags(headers: Path) -> list[str]:
    """Include flags that put AMD's headers first.

    AMD's headers are not warning-free, so they come in as system headers (and the build drops -Werror);
    the work-alike folder goes last, supplying only ap_axi_sdata.h, which the wheel lacks.
    """
    return ["-isystem", str(headers), "-idirafter", str(INCLUDE)]


def write_project(graph, out: Path, plan=None, options: HlsOptions | None = None) -> Path:
    """OUT/graph.json (when JSON can hold the constants), OUT/hls/ and OUT/checksums.json, as ``hlsfuse compile``
    writes them, for ``graph`` lowered as ``plan`` (default: fused and lowered with the defaults)."""
    plan = plan if plan is not None else lower(graph, fuse(graph))
    files = Files()
    files.add(emit_hls(graph, plan, options), "hls/")
    with contextlib.suppress(HlsfuseError):  # 64-bit constants: csim then runs on the project's own data/
        files["graph.json"] = json.dumps(graph_to_dict(graph))
    return write_tree(out, files, force=True, checksums=True)


def write_union(graphs, out: Path, folds=None, name: str = "shared", options: HlsOptions | None = None):
    """``graphs`` side by side in one project (tests/union.py; ``folds``: one Folding per graph), as ``write_project``
    writes it, so that one g++ build per header set checks them all: (the union, OUT). Each graph is lowered in the
    union as in a project of its own (``union.own_depths`` checks; its FIFOs keep their own depths)."""
    folds = folds if folds is not None else [Folding()] * len(graphs)
    graph = union(graphs, name)
    plan = lower(graph, fuse(graph), LowerOptions(fold=union_fold(graphs, folds)))
    depths = own_depths(plan, [lower(g, fuse(g), LowerOptions(fold=fold)) for g, fold in zip(graphs, folds)])
    plan = replace(plan, channels=tuple(replace(c, depth=depths[c.name]) for c in plan.channels))
    return graph, write_project(graph, out, plan, options)


def csim_both(out, *args, amd: bool = True, **kwargs) -> CsimResult:
    """``hlsfuse.sim.csim`` of a design built twice: against hlsfuse's work-alike headers and against AMD's own
    (what Vitis HLS uses). The two runs must agree on everything they compare with the reference: the verdict,
    the elements compared, the mismatches and the error, so that a design that is right under only one header set
    fails here whatever the caller then checks. Returns the work-alike run.

    ``amd=False``: the work-alikes only, for the designs of a suite that make test leaves to make test-random under
    AMD's headers (docs/hls.md says which); the random tier (``tiers.fresh()``) turns it back on."""
    ours = csim(out, *args, **kwargs)
    if not (amd or fresh()):
        return ours
    amd = csim(out, *args, hls_include=str(amd_headers(amd_cache())), **kwargs)
    facts = ("passed", "frames", "compared", "failures", "mismatches", "error")
    if any(getattr(ours, f) != getattr(amd, f) for f in facts):
        raise AssertionError(f"{out}: AMD's headers and the work-alikes disagree\n"
                             f"with AMD's headers: {amd.report()}\nwith the work-alikes: {ours.report()}")
    return ours


def built(files: dict[str, str], source: Path, args: list[str], trees: tuple[Path, ...]) -> tuple[Path, str]:
    """``g++ ARGS -iquote BUILD SOURCE -o BUILD/check`` with ``files`` written into BUILD, kept in hlsfuse's build
    cache (``hlsfuse.sim.cache``, kind "tests") so that a run after the first builds nothing: the key is g++'s
    version, the arguments, ``files``, ``source`` and every file under ``trees`` (the headers it can include).
    Returns the binary and g++'s diagnostics; a failed build is an AssertionError with them."""
    key = hashlib.sha256()
    version = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout
    for part in (version, *args, *(f"{name}\0{text}" for name, text in sorted(files.items()))):
        key.update(part.encode() + b"\0")
    key.update(source.read_bytes())
    for tree in trees:
        for path in sorted(p for p in tree.rglob("*") if p.is_file()):
            key.update(str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes())
    folder = cache.root("tests") / f"{source.stem}-{key.hexdigest()[:24]}"

    def build(scratch: Path) -> None:
        for name, text in files.items():
            (scratch / name).write_text(text)
        cmd = ["g++", *args, "-iquote", str(scratch), str(source), "-o", str(scratch / "check")]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"g++ failed:\n{done.stderr[-8000:]}"
        (scratch / "diagnostics.txt").write_text(done.stderr)

    binary, _ = cache.entry(folder, "check", build)
    return binary, (folder / "diagnostics.txt").read_text()
