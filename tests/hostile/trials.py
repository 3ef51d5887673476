#!/usr/bin/env python3
"""Hostile trials of the hlsfuse command line (README's promises on errors, exit codes and OUT folders).

    .venv/bin/python tests/hostile/trials.py [options]     (from the checkout, after make setup)

Options:
    --seed N          seed of every random choice (default 1); a run is reproducible from it
    --only KINDS      comma-separated kinds to run: json, cli, kill, conc, disk, pipe, cache (default: all)
    --kills N         number of kill trials (default 25)
    --mutations N     number of random mutations of examples/residual.json (default 36)
    --no-heavy        skip the one trial that builds with g++ if hlsfuse fails to refuse it
                      (csim on an OUT whose checksums.json was emptied and a .cpp edited)
    --no-repro        do not re-run unclean trials to see whether they reproduce
    --workdir DIR     scratch folder, wiped at the start (default $TMPDIR/hlsfuse-trials/run)
    -v, --verbose     print every trial as it runs

What is judged (a trial is clean when all hold):
    * the exit code is the expected one (2 for user errors; 0 where a mutated input may still be valid;
      130 for SIGINT, 1 only for simulation FAIL/DEADLOCK);
    * no "Traceback" on stdout or stderr;
    * on exit 2, stderr is exactly one line starting "hlsfuse: error:" (for argparse errors, usage lines
      may come first), and it names the file/path given, or a node/field (where a trial says which; a
      failure of only this check is tagged [naming]);
    * every file in the trial's folder (the user's files, any existing OUT) is unchanged, byte for byte,
      except the outputs the trial expects to be written; no hidden staging folder or temp file is left
      after a process that exited normally;
    * a written OUT is complete: every file matches OUT/checksums.json and no file is missing or extra.

Kinds:
    json  bad graph files (nested, truncated, empty, binary, invalid UTF-8, wrong types, missing fields,
          unknown ops, bad/huge/negative shapes, ...) to check / compile / run; random mutations of
          residual.json; bad fold.json for compile --fold; bad .npz for run/csim/rtlsim --inputs; bad ONNX.
    cli   argparse misuse, bad numbers, missing/wrong OUT, existing output files, tampered OUT for csim/rtlsim.
    kill  compile --force --target all over a complete old OUT, SIGKILL/SIGINT/SIGTERM at a random instant
          in [0, 2 s] (resnet8 over cnn: the compile takes ~1-1.5 s), plus one SIGINT at 0.15 s (start-up);
          OUT must be the whole old or the whole new
          folder; the next compile must leave no staging folder beside it.
    conc  four compiles into one OUT at once (over an old OUT, into an absent one, without --force); and two
          races with the user: a folder OUT (with a file) created while a compile without --force writes its
          staging folder, and an o.npz created while `run -o o.npz` (no --force) computes: neither may be lost.
    disk  (root only) compile / run -o / convert -o / fuse --dot into a full 64 KiB tmpfs (and one with too
          few inodes): one line naming the path, exit 2, nothing partial left. The tmpfs is unmounted after.
    pipe  hlsfuse ... | head -1 and | true: exit 0 or 141, nothing on stderr.
    cache (heavy: ~8 g++ and 3 Verilator builds, each under the lock) the build caches: a truncated, emptied,
          replaced or unsealed csim binary and a truncated Verilator model are rebuilt, never run; a csim
          killed (SIGKILL / SIGINT to its process group) during the g++ build leaves nothing the next csim uses.

Every hlsfuse process runs from the checkout's venv (.venv) with cwd = its trial folder,
XDG_CACHE_HOME=$TMPDIR/hlsfuse-trials/cache, an address-space limit of 6 GiB (to protect the shared machine:
a huge allocation becomes a MemoryError instead of the OOM killer) and SIGINT at its default; csim
and rtlsim run under `flock /tmp/hlsfuse-heavy.lock`. Exit code 0 only if every trial is clean.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = Path(tempfile.gettempdir()) / "hlsfuse-trials"
VENV = ROOT / ".venv"
VENV_PY = VENV / "bin" / "python"
if Path(sys.prefix).resolve() != VENV.resolve() and os.environ.get("HLSFUSE_TRIALS_REEXEC") != "1":
    os.environ["HLSFUSE_TRIALS_REEXEC"] = "1"
    os.execv(str(VENV_PY), [str(VENV_PY), __file__, *sys.argv[1:]])

import contextlib  # noqa: E402

import numpy as np  # noqa: E402  (the venv's numpy)

HLSFUSE = str(VENV / "bin" / "hlsfuse")
EXAMPLES = ROOT / "examples"
LOCK = "/tmp/hlsfuse-heavy.lock"
CACHE = SCRATCH / "cache"
MEM_LIMIT = 6 << 30
ENV = {**os.environ, "XDG_CACHE_HOME": str(CACHE), "PYTHONDONTWRITEBYTECODE": "1"}
ENV.pop("HLSFUSE_TRIALS_REEXEC", None)
ARGS: argparse.Namespace


# ----------------------------------------------------------------------------------------------- running


@dataclass
class Result:
    cmd: list
    cwd: str
    rc: object  # int, or "TIMEOUT"
    stdout: str
    stderr: str


def _child() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job inherits SIG_IGN; Python would keep it
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def hl(args, cwd, heavy=False, timeout=300) -> Result:
    """Run hlsfuse; heavy: hold /tmp/hlsfuse-heavy.lock meanwhile (taken here, so that waiting for
    the lock does not count against the timeout; shown as `flock LOCK hlsfuse ...`)."""
    cmd = [HLSFUSE, *map(str, args)]
    shown = ["flock", LOCK, *cmd] if heavy else cmd
    lock = open(LOCK, "a") if heavy else None  # noqa: SIM115 - held for the whole run, closed below
    try:
        if lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=ENV, preexec_fn=_child)
        return Result(
            shown, str(cwd), p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        )
    except subprocess.TimeoutExpired as exc:
        return Result(
            shown,
            str(cwd),
            "TIMEOUT",
            (exc.stdout or b"").decode(errors="replace"),
            (exc.stderr or b"").decode(errors="replace"),
        )
    finally:
        if lock:
            lock.close()


def spawn(args, cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [HLSFUSE, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, preexec_fn=_child
    )


def shell(script: str, cwd) -> Result:
    p = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, timeout=300, env=ENV, preexec_fn=_child)
    return Result(
        ["bash", "-c", script],
        str(cwd),
        p.returncode,
        p.stdout.decode(errors="replace"),
        p.stderr.decode(errors="replace"),
    )


# ----------------------------------------------------------------------------------------------- judging


def snapshot(root: Path, skip=()) -> dict:
    """relative path -> sha256 / 'dir' / 'link:target' of everything under root (symlinks not followed)."""
    out = {}
    root = Path(root)
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        for d in list(dirnames):
            p = Path(dirpath) / d
            rel = str(rel_dir / d)
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                dirnames.remove(d)
                continue
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
                dirnames.remove(d)
            else:
                out[rel] = "dir"
        for f in filenames:
            p = Path(dirpath) / f
            rel = str(rel_dir / f)
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                continue
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "special"
    return out


def differences(before: dict, after: dict) -> tuple[list, list, list]:
    """(keys gone, keys new, keys whose values changed) from ``before`` to ``after``, each sorted."""
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return gone, new, changed


def diff_snap(before: dict, after: dict) -> list:
    probs = []
    gone, new, changed = differences(before, after)
    if gone:
        probs.append(f"user files removed: {gone[:5]}")
    if new:
        probs.append(f"files appeared: {new[:5]}")
    if changed:
        probs.append(f"user files changed: {changed[:5]}")
    return probs


def out_complete(out: Path) -> list:
    """OUT holds every file of its checksums.json, each matching, and nothing else."""
    out = Path(out)
    if not out.is_dir():
        return [f"{out.name}: missing"]
    try:
        digests = json.loads((out / "checksums.json").read_text())["sha256"]
    except Exception as exc:  # noqa: BLE001
        return [f"{out.name}/checksums.json unreadable: {exc}"]
    have = {k: v for k, v in snapshot(out).items() if v != "dir"}
    have.pop("checksums.json", None)
    probs = []
    missing, extra, bad = differences(digests, have)
    if missing:
        probs.append(f"{out.name} incomplete, missing {missing[:5]}")
    if extra:
        probs.append(f"{out.name} has extra files {extra[:5]}")
    if bad:
        probs.append(f"{out.name} files do not match checksums.json: {bad[:5]}")
    return probs


def judge(r: Result, expect=(2,), names=(), argparse_err=False, allow_stderr_on_ok=False) -> list:
    probs = []
    if r.rc not in expect:
        probs.append(f"exit {r.rc}, expected {'/'.join(map(str, expect))}")
    if "Traceback" in r.stdout or "Traceback" in r.stderr:
        probs.append("Traceback printed")
    lines = r.stderr.splitlines()
    if r.rc == 2:
        if not lines or not lines[-1].startswith("hlsfuse: error:"):
            probs.append("last stderr line is not 'hlsfuse: error: ...'")
        else:
            before = lines[:-1]
            if argparse_err:
                if before and not before[0].startswith("usage:"):
                    probs.append(f"{len(before)} non-usage stderr lines before the error line")
            elif before:
                probs.append(f"stderr has {len(lines)} lines, expected 1")
            if any(ln.startswith("hlsfuse: error:") for ln in before):
                probs.append("several error lines")
            if names and not any(n in lines[-1] for n in names):
                probs.append(f"[naming] error line names none of {list(names)[:6]}")
    elif r.rc == 0 and not allow_stderr_on_ok and "error" in r.stderr.lower():
        probs.append("exit 0 but an error on stderr")
    return probs


@dataclass
class Trial:
    kind: str
    name: str
    fn: object  # () -> (Result | None, problems, note)
    result: Result | None = None
    problems: list = field(default_factory=list)
    note: str = ""
    reproduces: str = ""
    seconds: float = 0.0


TRIALS: list[Trial] = []


def trial(kind, name):
    def deco(fn):
        TRIALS.append(Trial(kind, name, fn))
        return fn

    return deco


def add(kind, name, fn):
    TRIALS.append(Trial(kind, name, fn))


_counter = [0]


def fresh(kind: str) -> Path:
    _counter[0] += 1
    d = ARGS.work / kind / f"t{_counter[0]:04d}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def simple(
    kind,
    name,
    setup,
    args,
    expect=(2,),
    names=(),
    argparse_err=False,
    written=(),
    heavy=False,
    complete=(),
    allow_stderr_on_ok=False,
    timeout=300,
):
    """A trial: setup(dir) writes the user's files; run hlsfuse args (may be a callable of dir); judge."""

    def fn():
        d = fresh(kind)
        setup(d)
        before = snapshot(d)
        a = args(d) if callable(args) else args
        r = hl(a, d, heavy=heavy, timeout=timeout)
        probs = judge(r, expect, names, argparse_err, allow_stderr_on_ok)
        skip = set(written) if r.rc == 0 else set()
        after = snapshot(d)
        probs += diff_snap(
            {k: v for k, v in before.items() if not any(k == s or k.startswith(s + "/") for s in skip)},
            {k: v for k, v in after.items() if not any(k == s or k.startswith(s + "/") for s in skip)},
        )
        if r.rc == 0:
            for c in complete:
                probs += out_complete(d / c)
        return r, probs, ""

    add(kind, name, fn)


# ------------------------------------------------------------------------------------------- materials

RESIDUAL = json.loads((EXAMPLES / "residual.json").read_text())
# what an error line may name instead of the file: a node, input, constant or field of residual.json
RES_NAMES = tuple(
    sorted(
        {
            n
            for e in RESIDUAL["nodes"] + RESIDUAL["inputs"] + RESIDUAL["constants"]
            for n in (f"'{e['name']}'", e["name"] if len(e["name"]) > 2 else f"'{e['name']}'")
        }
    )
)
MLP = json.loads((EXAMPLES / "mlp.json").read_text())


def write(d: Path, name: str, data):
    p = d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, (bytes, bytearray)):
        p.write_bytes(bytes(data))
    elif isinstance(data, str):
        p.write_text(data)
    else:
        p.write_text(json.dumps(data))
    return p


def small_graph(**over):
    g = {
        "name": "tiny",
        "inputs": [{"name": "x", "shape": [1, 8], "dtype": "fixed<16,6,RND,SAT>"}],
        "constants": [
            {"name": "w", "shape": [4, 8], "dtype": "fixed<8,1,RND,SAT>", "init": {"kind": "normal", "seed": 1}}
        ],
        "nodes": [{"name": "d", "op": "dense", "inputs": ["x", "w"]}, {"name": "r", "op": "relu", "inputs": ["d"]}],
        "outputs": ["r"],
    }
    g.update(over)
    return g


def onnx_model_bytes() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).normal(0, 0.3, (8, 4)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(
        nodes,
        "tinyonnx",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="trials")
    m.ir_version = 8
    return m.SerializeToString()


def onnx_unknown_op_bytes() -> bytes:
    from onnx import TensorProto, helper

    nodes = [helper.make_node("FrobnicateOp", ["x"], ["y"], domain="")]
    g = helper.make_graph(
        nodes,
        "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def onnx_dynamic_bytes() -> bytes:
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    g = helper.make_graph(
        nodes,
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", -3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", -3])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------ JSON trials

GRAPH_CMDS = {
    "check": lambda: ["check", "g.json"],
    "compile": lambda: ["compile", "g.json", "-o", "OUT", "--target", "hls"],
    "run": lambda: ["run", "g.json", "-o", "o.npz"],
}


def json_trials(rng: random.Random):
    r_text = json.dumps(RESIDUAL)

    def mod(fn):
        g = json.loads(json.dumps(RESIDUAL))
        fn(g)
        return g

    def nested(n, o="[", c="]"):
        return o * n + c * n

    bad = {  # name -> (file bytes/str/obj, expected exit codes)
        "nested [ x100000": nested(100000),
        'nested {"a": x100000': '{"a":' * 100000 + "1" + "}" * 100000,
        "nested list in shape x50000": r_text.replace('"shape": [1, 16, 16, 8]', '"shape": ' + nested(50000), 1),
        "unterminated [ x100000": "[" * 100000,
        "empty file": b"",
        "whitespace only": "   \n\t\n",
        "binary garbage": bytes(rng.randrange(256) for _ in range(4096)),
        "NUL bytes": b"\0" * 1000,
        "invalid UTF-8 in a name": r_text.replace('"residual"', '"resid\udcffual"', 1).encode(
            "utf-8", "surrogateescape"
        ),
        "UTF-16 with BOM": r_text.encode("utf-16"),
        "UTF-8 BOM": b"\xef\xbb\xbf" + r_text.encode(),
        "top-level list": "[]",
        "top-level null": "null",
        "top-level number": "42",
        "top-level string": '"graph"',
        "empty object": "{}",
        "name is a number": mod(lambda g: g.__setitem__("name", 5)),
        "inputs is an object": mod(lambda g: g.__setitem__("inputs", {})),
        "nodes is a string": mod(lambda g: g.__setitem__("nodes", "conv1")),
        "outputs is a string": mod(lambda g: g.__setitem__("outputs", "y")),
        "outputs empty": mod(lambda g: g.__setitem__("outputs", [])),
        "shape is a string": mod(lambda g: g["inputs"][0].__setitem__("shape", "1,16,16,8")),
        "dtype is a number": mod(lambda g: g["inputs"][0].__setitem__("dtype", 16)),
        "missing nodes": mod(lambda g: g.pop("nodes")),
        "missing name": mod(lambda g: g.pop("name")),
        "missing op": mod(lambda g: g["nodes"][0].pop("op")),
        "missing constant data": mod(lambda g: g["constants"][0].pop("data")),
        "unknown op": mod(lambda g: g["nodes"][0].__setitem__("op", "frobnicate")),
        "unknown top field": mod(lambda g: g.__setitem__("extra", 1)),
        "unknown output": mod(lambda g: g.__setitem__("outputs", ["nosuch"])),
        "node input unknown": mod(
            lambda g: g["nodes"][1].__setitem__("inputs", ["nosuch", g["nodes"][1]["inputs"][-1]])
        ),
        "cycle": mod(lambda g: g["nodes"][0]["inputs"].__setitem__(0, g["nodes"][-1]["name"])),
        "self loop": mod(lambda g: g["nodes"][0]["inputs"].__setitem__(0, g["nodes"][0]["name"])),
        "duplicate names": mod(lambda g: g["nodes"].append(dict(g["nodes"][0]))),
        "duplicate keys": r_text.replace('"name": "residual"', '"name": "residual", "name": "again"', 1),
        "wrong constant shape": mod(lambda g: g["constants"][0].__setitem__("shape", [3, 3, 8, 9])),
        "wrong input shape rank": mod(lambda g: g["inputs"][0].__setitem__("shape", [16, 8])),
        "huge shape [1,100000,100000,64]": mod(lambda g: g["inputs"][0].__setitem__("shape", [1, 100000, 100000, 8])),
        "huge channels [1,100000,100000,64]": small_graph(
            inputs=[{"name": "x", "shape": [1, 100000, 100000, 64], "dtype": "fixed<16,6>"}],
            constants=[],
            nodes=[{"name": "r", "op": "relu", "inputs": ["x"]}],
        ),
        "huge constant via init": small_graph(
            constants=[{"name": "w", "shape": [100000, 100000], "dtype": "fixed<8,1>", "init": {"kind": "zeros"}}]
        ),
        "dim 10**30": mod(lambda g: g["inputs"][0].__setitem__("shape", [1, 10**30, 16, 8])),
        "negative dim": mod(lambda g: g["inputs"][0].__setitem__("shape", [1, -16, 16, 8])),
        "zero dim": mod(lambda g: g["inputs"][0].__setitem__("shape", [1, 0, 16, 8])),
        "float dim": mod(lambda g: g["inputs"][0].__setitem__("shape", [1, 16.5, 16, 8])),
        "bool dim": mod(lambda g: g["inputs"][0].__setitem__("shape", [True, 16, 16, 8])),
        "dtype fixed<0,0>": mod(lambda g: g["inputs"][0].__setitem__("dtype", "fixed<0,0>")),
        "dtype fixed<100000,6>": mod(lambda g: g["inputs"][0].__setitem__("dtype", "fixed<100000,6>")),
        "dtype bad mode": mod(lambda g: g["inputs"][0].__setitem__("dtype", "fixed<16,6,FOO,SAT>")),
        "data NaN": r_text.replace("0.171875", "NaN", 1),
        "data 1e400": r_text.replace("0.171875", "1e400", 1),
        "data int 10**400": r_text.replace("0.171875", "1" + "0" * 400, 1),
        "data string element": r_text.replace("0.171875", '"x"', 1),
        "data too short": mod(lambda g: g["constants"][0].__setitem__("data", g["constants"][0]["data"][:-1])),
        "init std -1": small_graph(
            constants=[{"name": "w", "shape": [4, 8], "dtype": "fixed<8,1>", "init": {"kind": "normal", "std": -1.0}}]
        ),
        "init seed -1": small_graph(
            constants=[{"name": "w", "shape": [4, 8], "dtype": "fixed<8,1>", "init": {"kind": "uniform", "seed": -1}}]
        ),
        "init seed 2**80": small_graph(
            constants=[
                {"name": "w", "shape": [4, 8], "dtype": "fixed<8,1>", "init": {"kind": "uniform", "seed": 2**80}}
            ]
        ),
        "init kind unknown": small_graph(
            constants=[{"name": "w", "shape": [4, 8], "dtype": "fixed<8,1>", "init": {"kind": "poisson"}}]
        ),
        "attrs strides 0": mod(lambda g: g["nodes"][0].setdefault("attrs", {}).__setitem__("strides", [0, 0])),
        "attrs padding negative": mod(
            lambda g: g["nodes"][0].setdefault("attrs", {}).__setitem__("padding", [-5, -5, -5, -5])
        ),
        "attrs padding huge": mod(lambda g: g["nodes"][0].setdefault("attrs", {}).__setitem__("padding", [10**9] * 4)),
        "attrs a string": mod(lambda g: g["nodes"][0].__setitem__("attrs", "strides")),
        "pattern unknown": mod(lambda g: g["nodes"][0].__setitem__("pattern", "WHATEVER")),
        "name with newline and NUL": mod(lambda g: g["nodes"][0].__setitem__("name", "a\nb\u0000c")),
        "graph name ../../evil": mod(lambda g: g.__setitem__("name", "../../evil")),
        "graph name 'a b-c'": mod(lambda g: g.__setitem__("name", "a b-c")),
        "graph name ''": mod(lambda g: g.__setitem__("name", "")),
        "1 MB node name": mod(lambda g: g["nodes"][0].__setitem__("name", "n" * 1_000_000)),
    }
    # graphs that might legitimately be accepted (valid after all, or a name that is sanitized)
    maybe_ok = {
        "UTF-8 BOM",
        "graph name 'a b-c'",
        "graph name ../../evil",
        "init seed 2**80",
        "1 MB node name",
        "name with newline and NUL",
        "attrs padding huge",
    }
    # the rest in the three commands, rotating so each file meets each command once
    for name, data in bad.items():
        for cmd, argv in GRAPH_CMDS.items():
            expect = (0, 2) if name in maybe_ok else (2,)
            written = ("OUT", "o.npz")
            simple(
                "json",
                f"{cmd}: {name}",
                lambda d, data=data: write(d, "g.json", data),
                argv(),
                expect,
                names=("g.json",) + RES_NAMES,
                written=written,
                complete=("OUT",) if cmd == "compile" else (),
                timeout=180,
            )
    # truncated at random offsets
    for cut in sorted(rng.sample(range(1, len(r_text) - 1), 6)):
        cmd = rng.choice(list(GRAPH_CMDS))
        simple(
            "json",
            f"{cmd}: truncated at byte {cut}",
            lambda d, c=cut: write(d, "g.json", r_text[:c]),
            GRAPH_CMDS[cmd](),
            (2,),
            names=("g.json",),
        )
    # file system oddities
    simple(
        "json", "check: g.json is a directory", lambda d: (d / "g.json").mkdir(), ["check", "g.json"], names=("g.json",)
    )
    simple("json", "check: g.json does not exist", lambda d: None, ["check", "g.json"], names=("g.json",))
    simple(
        "json",
        "check: g.json -> /dev/zero (endless)",
        lambda d: (d / "g.json").symlink_to("/dev/zero"),
        ["check", "g.json"],
        names=("g.json",),
        timeout=120,
    )
    simple(
        "json",
        "check: g.json dangling symlink",
        lambda d: (d / "g.json").symlink_to("nowhere.json"),
        ["check", "g.json"],
        names=("g.json",),
    )

    # random mutations of residual.json
    for i in range(ARGS.mutations):
        g, desc = mutate(RESIDUAL, rng)
        cmd = list(GRAPH_CMDS)[i % 3]
        simple(
            "json",
            f"{cmd}: mutation {i}: {desc}",
            lambda d, g=g: write(d, "g.json", g),
            GRAPH_CMDS[cmd](),
            (0, 2),
            names=("g.json",) + RES_NAMES,
            written=("OUT", "o.npz"),
            complete=("OUT",) if cmd == "compile" else (),
        )

    # fold.json
    base_fold = None

    def fold_setup(fold):
        def setup(d):
            write(d, "g.json", RESIDUAL)
            write(d, "fold.json", fold(json.loads(json.dumps(base_fold))) if callable(fold) else fold)

        return setup

    def get_base_fold():
        nonlocal base_fold
        d = fresh("setup")
        write(d, "g.json", RESIDUAL)
        r = hl(["compile", "g.json", "-o", "OUT", "--target", "hls"], d)
        assert r.rc == 0, r.stderr
        base_fold = json.loads((d / "OUT" / "fold.json").read_text())

    get_base_fold()

    def setk(path, value):
        def f(fd):
            o = fd
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
            return fd

        return f

    folds = {
        "simd 0": setk(["fold", "conv1", "simd"], 0),
        "simd 5 (not a divisor of 72)": setk(["fold", "conv1", "simd"], 5),
        "simd -8": setk(["fold", "conv1", "simd"], -8),
        "simd a string": setk(["fold", "conv1", "simd"], "8"),
        "simd 10**12": setk(["fold", "conv1", "simd"], 10**12),
        "simd 7.5": setk(["fold", "conv1", "simd"], 7.5),
        "lanes 3": setk(["fold", "conv1", "lanes"], 3),
        "pe 0": setk(["fold", "conv2", "pe"], 0),
        "unknown node": setk(["fold", "nosuch"], {"simd": 8}),
        "entry a list": setk(["fold", "conv1"], [8]),
        "port lanes 3": setk(["ports", "x"], 3),
        "port lanes -1": setk(["ports", "y"], -1),
        "unknown port": setk(["ports", "nosuch"], 2),
        "fold a list": setk(["fold"], []),
        "top-level list": "[]",
        "not JSON": "simd=8\n",
        "empty": b"",
        "truncated": None,
    }
    for name, f in folds.items():
        if f is None:

            def setup(d):
                write(d, "g.json", RESIDUAL)
                t = json.dumps(base_fold)
                write(d, "fold.json", t[: len(t) // 2])
        else:
            setup = fold_setup(f)
        simple(
            "json",
            f"compile --fold: {name}",
            setup,
            ["compile", "g.json", "-o", "OUT", "--target", "hls", "--fold", "fold.json"],
            (2,),
            names=("fold.json",) + RES_NAMES + ("stage", "port"),
            written=("OUT",),
            complete=("OUT",),
        )

    # .npz inputs
    x = np.random.default_rng(0).normal(0, 1, (1, 16, 16, 8))
    npzs = {
        "wrong name": (npz_bytes(z=x), (2,)),
        "extra array": (npz_bytes(x=x, extra=x), (0, 2)),
        "no arrays": (npz_bytes(), (2,)),
        "wrong shape": (npz_bytes(x=x[:, :8]), (2,)),
        "wrong rank": (npz_bytes(x=x.reshape(16, 16, 8)), (2,)),
        "NaN": (npz_bytes(x=np.where(x > 1, np.nan, x)), (2,)),
        "inf": (npz_bytes(x=np.where(x > 1, np.inf, x)), (0, 2)),
        "complex": (npz_bytes(x=x.astype(complex)), (2,)),
        "strings": (npz_bytes(x=np.full((1, 16, 16, 8), "a")), (2,)),
        "object array (pickle)": (npz_bytes(x=np.array([{}], dtype=object)), (2,)),
        "bool": (npz_bytes(x=x > 0), (0, 2)),
        "0-d": (npz_bytes(x=np.float64(1.0)), (2,)),
        "value 1e300": (npz_bytes(x=x * 1e300), (0, 2)),
        "not an npz (text)": (b"x = 1,2,3\n", (2,)),
        "a single .npy": (None, (2,)),
        "truncated npz": (npz_bytes(x=x)[:3000], (2,)),
        "corrupt member (bad CRC)": (None, (2,)),
        "npy header claims a huge shape": (None, (2,)),
    }

    def npz_setup(name, data):
        def setup(d):
            write(d, "g.json", RESIDUAL)
            if name == "a single .npy":
                buf = io.BytesIO()
                np.save(buf, x)
                write(d, "in.npz", buf.getvalue())
            elif name == "corrupt member (bad CRC)":
                b = bytearray(npz_bytes(x=x))
                b[len(b) // 2] ^= 0xFF
                write(d, "in.npz", b)
            elif name == "npy header claims a huge shape":
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w") as z:
                    hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 100000, 100000, 8), }"
                    hdr = hdr + " " * (117 - len(hdr)) + "\n"
                    z.writestr(
                        "x.npy", b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + b"\0" * 64
                    )
                write(d, "in.npz", buf.getvalue())
            else:
                write(d, "in.npz", data)

        return setup

    for name, (data, expect) in npzs.items():
        simple(
            "json",
            f"run --inputs: {name}",
            npz_setup(name, data),
            ["run", "g.json", "--inputs", "in.npz", "-o", "o.npz"],
            expect,
            names=("in.npz",),
            written=("o.npz",),
        )
    simple(
        "json",
        "run --inputs: file missing",
        lambda d: write(d, "g.json", RESIDUAL),
        ["run", "g.json", "--inputs", "in.npz"],
        (2,),
        names=("in.npz",),
    )
    simple(
        "json",
        "run --inputs: a directory",
        lambda d: (write(d, "g.json", RESIDUAL), (d / "in.npz").mkdir()),
        ["run", "g.json", "--inputs", "in.npz"],
        (2,),
        names=("in.npz",),
    )
    # the simulators read --inputs before building: refusals are cheap, still under the lock
    for sim, name in (("csim", "wrong name"), ("csim", "complex"), ("rtlsim", "NaN"), ("rtlsim", "wrong shape")):
        data, _ = npzs[name]

        def setup(d, data=data):
            write(d, "g.json", RESIDUAL)
            r = hl(["compile", "g.json", "-o", "OUT", "--target", "all"], d)
            assert r.rc == 0, r.stderr
            write(d, "in.npz", data)

        simple(
            "json",
            f"{sim} --inputs: {name}",
            setup,
            [sim, "OUT", "--inputs", "in.npz"],
            (2,),
            names=("in.npz",),
            heavy=True,
        )

    # ONNX
    good = onnx_model_bytes()
    onnxs = {
        "garbage": bytes(rng.randrange(256) for _ in range(2048)),
        "empty": b"",
        "JSON text": json.dumps(RESIDUAL).encode(),
        "unknown op": onnx_unknown_op_bytes(),
        "dynamic/negative dims": onnx_dynamic_bytes(),
    }
    for cut in sorted(rng.sample(range(1, len(good)), 3)):
        onnxs[f"truncated at {cut}/{len(good)}"] = good[:cut]
    onnx_cmds = [
        ["check", "m.onnx"],
        ["convert", "m.onnx", "-o", "g.json"],
        ["compile", "m.onnx", "-o", "OUT", "--target", "hls"],
    ]
    for i, (name, data) in enumerate(onnxs.items()):
        for argv in onnx_cmds if i < 2 else [onnx_cmds[i % 3]]:
            simple(
                "json",
                f"{argv[0]} onnx: {name}",
                lambda d, data=data: write(d, "m.onnx", data),
                argv,
                (2,),
                names=("m.onnx",),
            )
    simple("json", "check onnx: control (valid model)", lambda d: write(d, "m.onnx", good), ["check", "m.onnx"], (0,))
    simple(
        "json",
        "check onnx: --precision garbage",
        lambda d: write(d, "m.onnx", good),
        ["check", "m.onnx", "--precision", "fixed<banana>"],
        (2,),
    )
    simple(
        "json",
        "check onnx: --precision-map not JSON",
        lambda d: (write(d, "m.onnx", good), write(d, "p.json", "{default: 1")),
        ["check", "m.onnx", "--precision-map", "p.json"],
        (2,),
        names=("p.json",),
    )
    simple(
        "json",
        "check onnx: --precision-map wrong types",
        lambda d: (write(d, "m.onnx", good), write(d, "p.json", {"default": 5, "weights": [], "x": None})),
        ["check", "m.onnx", "--precision-map", "p.json"],
        (2,),
        names=("p.json",),
    )
    simple(
        "json",
        "check onnx: --calibrate not an npz",
        lambda d: (write(d, "m.onnx", good), write(d, "c.npz", b"junk")),
        ["check", "m.onnx", "--calibrate", "c.npz"],
        (2,),
        names=("c.npz",),
    )


def mutate(g0, rng: random.Random):
    g = json.loads(json.dumps(g0))
    names = (
        [n["name"] for n in g["nodes"]] + [i["name"] for i in g["inputs"]] + [c["name"] for c in g.get("constants", [])]
    )

    def paths(o, pre=()):
        if pre:
            yield pre
        if isinstance(o, dict):
            for k, v in o.items():
                yield from paths(v, pre + (k,))
        elif isinstance(o, list):
            idx = range(len(o)) if not (pre and pre[-1] == "data") else [0, len(o) - 1]
            for i in idx:
                yield from paths(o[i], pre + (i,))

    def get(path):
        o = g
        for k in path:
            o = o[k]
        return o

    allp = list(paths(g))
    pool = [
        None,
        True,
        False,
        -1,
        0,
        1.5,
        10**20,
        -(2**63),
        "x",
        "",
        [],
        {},
        [1, 2],
        [[1]],
        {"a": 1},
        "fixed<16,6>",
        1e308,
    ]
    kind = rng.choice(["retype", "retype", "delete", "rename_ref", "rename_ref", "dup", "swap"])
    if kind == "retype":
        p = rng.choice(allp)
        cur = get(p)
        v = rng.choice([v for v in pool if type(v) is not type(cur)])
        get(p[:-1])[p[-1]] = v
        return g, f"{'/'.join(map(str, p))} = {json.dumps(v)[:30]}"
    if kind == "delete":
        p = rng.choice(allp)
        parent = get(p[:-1])
        del parent[p[-1]]
        return g, f"delete {'/'.join(map(str, p))}"
    if kind == "rename_ref":
        refs = [("nodes", i, "inputs", j) for i, n in enumerate(g["nodes"]) for j in range(len(n["inputs"]))]
        refs += [("outputs", j) for j in range(len(g["outputs"]))]
        p = rng.choice(refs)
        new = rng.choice(["nosuch", "", "X" * 3] + names)
        get(p[:-1])[p[-1]] = new
        return g, f"{'/'.join(map(str, p))} -> {new!r}"
    if kind == "dup":
        i = rng.randrange(len(g["nodes"]))
        g["nodes"].insert(rng.randrange(len(g["nodes"]) + 1), json.loads(json.dumps(g["nodes"][i])))
        return g, f"duplicate node {g['nodes'][i]['name']}"
    i = rng.choice([i for i, n in enumerate(g["nodes"]) if len(n["inputs"]) > 1])
    g["nodes"][i]["inputs"].reverse()
    return g, f"swap inputs of {g['nodes'][i]['name']}"


# ------------------------------------------------------------------------------------------- CLI trials


def cli_trials(rng: random.Random):
    base = fresh("setup")
    write(base, "g.json", RESIDUAL)
    for out, target in (("ALL", "all"), ("HLS", "hls"), ("VER", "verilog")):
        r = hl(["compile", "g.json", "-o", out, "--target", target], base)
        assert r.rc == 0, r.stderr
    top = RESIDUAL["name"]

    def setup(extra=None):
        def s(d):
            write(d, "g.json", RESIDUAL)
            write(d, "m.onnx", onnx_model_bytes())
            write(d, "exists.npz", npz_bytes(a=np.arange(3)))
            write(d, "exists.vcd", "user's waveform\n")
            write(d, "user.txt", "user's notes\n")
            write(d, "nonempty/keep.txt", "keep me\n")
            write(d, "in.npz", npz_bytes(x=np.zeros((1, 16, 16, 8))))
            for o in ("ALL", "HLS", "VER"):
                shutil.copytree(base / o, d / o)
            if extra:
                extra(d)

        return s

    A = {"argparse_err": True}
    C = ["compile", "g.json", "-o", "O", "--target", "hls"]
    cases = [
        ("no arguments", [], (2,), (), A),
        ("unknown command", ["nosuch"], (2,), (), A),
        ("check without GRAPH", ["check"], (2,), (), A),
        ("compile without -o", ["compile", "g.json"], (2,), (), A),
        ("convert without -o", ["convert", "m.onnx"], (2,), (), A),
        ("csim without OUT", ["csim"], (2,), (), A),
        ("rtlsim without OUT", ["rtlsim"], (2,), (), A),
        ("run --seed -1", ["run", "g.json", "--seed", "-1"], (2,), (), A),
        ("run --seed abc", ["run", "g.json", "--seed", "abc"], (2,), (), A),
        ("compile --seed -1", C + ["--seed", "-1"], (2,), (), A),
        ("run --inputs with --seed", ["run", "g.json", "--inputs", "in.npz", "--seed", "3"], (2,), (), A),
        ("csim --frames 0", ["csim", "ALL", "--frames", "0"], (2,), (), A),
        ("rtlsim --timeout-cycles 0", ["rtlsim", "ALL", "--timeout-cycles", "0"], (2,), (), A),
        ("compile --board nosuch", C + ["--board", "nosuch"], (2,), (), A),
        ("compile --control bogus", C + ["--control", "bogus"], (2,), (), A),
        ("rtlsim --driver bogus", ["rtlsim", "ALL", "--driver", "bogus"], (2,), (), A),
        ("compile --dsp abc", C + ["--dsp", "abc"], (2,), (), A),
        ("csim --frames 1000000000000", ["csim", "ALL", "--frames", "1000000000000"], (2,), (), {"heavy": True}),
        ("rtlsim --frames 1000000000000", ["rtlsim", "ALL", "--frames", "1000000000000"], (2,), (), {"heavy": True}),
        (
            "rtlsim --driver native --frames 10**9",
            ["rtlsim", "ALL", "--driver", "native", "--frames", "1000000000"],
            (2,),
            (),
            {"heavy": True},
        ),
        ("compile --dsp -3", C + ["--dsp", "-3"], (2,), ("--dsp",), {}),
        ("compile --bram -1", C + ["--bram", "-1"], (2,), ("--bram",), {}),
        ("compile --target-cycles 0", C + ["--target-cycles", "0"], (2,), ("--target-cycles",), {}),
        ("compile --target-cycles 1 (unreachable)", C + ["--target-cycles", "1"], (2,), (), {}),
        ("compile --dsp 0 --board pynq-z2", C + ["--dsp", "0", "--board", "pynq-z2"], (0, 2), (), {}),
        ("compile --port-lanes 3 (does not divide 8)", C + ["--port-lanes", "3"], (2,), (), {}),
        ("compile --port-lanes 0", C + ["--port-lanes", "0"], (2,), (), {}),
        ("compile --port-lanes -8", C + ["--port-lanes", "-8"], (2,), (), {}),
        ("compile --clock 0", C + ["--clock", "0"], (2,), ("clock",), {}),
        ("compile --clock -5", C + ["--clock", "-5"], (2,), ("clock",), {}),
        ("compile --clock nan", C + ["--clock", "nan"], (2,), ("clock",), {}),
        ("compile --clock inf", C + ["--clock", "inf"], (2,), ("clock",), {}),
        # --top is documented as sanitized (docs/hls.md): accepted, but nothing may land outside O
        ("compile --top 'a b'", C + ["--top", "a b"], (0, 2), ("top",), {}),
        ("compile --top ../evil", C + ["--top", "../evil"], (0, 2), (), {}),
        ("compile --top ''", C + ["--top", ""], (0, 2), (), {}),
        ("compile --part ''", C + ["--part", ""], (0, 2), (), {}),
        ("compile --fold missing.json", C + ["--fold", "missing.json"], (2,), ("missing.json",), {}),
        ("compile -o existing file", ["compile", "g.json", "-o", "user.txt"], (2,), ("user.txt",), {}),
        ("compile -o non-empty folder (no --force)", ["compile", "g.json", "-o", "nonempty"], (2,), ("nonempty",), {}),
        (
            "compile -o /nonexistent/dir/OUT",
            ["compile", "g.json", "-o", "/nonexistent/dir/OUT"],
            (2,),
            ("/nonexistent",),
            {},
        ),
        ("compile -o . --force (cwd holds user files)", ["compile", "g.json", "-o", ".", "--force"], (2,), (), {}),
        ("compile -o g.json/OUT (parent is a file)", ["compile", "g.json", "-o", "g.json/OUT"], (2,), ("g.json",), {}),
        ("check g.txt (unknown suffix)", ["check", "g.txt"], (2,), ("g.txt",), {}),
        ("check g.json --precision (ONNX only)", ["check", "g.json", "--precision", "fixed<8,2>"], (2,), (), {}),
        ("convert g.json (not ONNX)", ["convert", "g.json", "-o", "x.json"], (2,), ("g.json",), {}),
        ("convert -o existing file", ["convert", "m.onnx", "-o", "user.txt"], (2,), ("user.txt",), {}),
        ("run -o existing.npz", ["run", "g.json", "-o", "exists.npz"], (2,), ("exists.npz",), {}),
        ("run -o missing/dir/o.npz", ["run", "g.json", "-o", "missing/dir/o.npz"], (2,), ("missing",), {}),
        ("run --compare float on a JSON graph", ["run", "g.json", "--compare", "float"], (2,), ("g.json",), {}),
        ("run --compare bogus", ["run", "g.json", "--compare", "bogus"], (2,), (), A),
        ("run --compare float --frames 0", ["run", "g.json", "--compare", "float", "--frames", "0"], (2,), (), A),
        ("run --frames without --compare", ["run", "g.json", "--frames", "3"], (2,), ("--frames",), {}),
        ("fuse --dot g.json (the input itself)", ["fuse", "g.json", "--dot", "g.json"], (2,), ("g.json",), {}),
        ("fuse --max-depth 0", ["fuse", "g.json", "--max-depth", "0"], (0, 2), (), {}),
        ("fuse --max-depth -5", ["fuse", "g.json", "--max-depth", "-5"], (2,), (), {}),
        ("csim missing OUT", ["csim", "nosuch"], (2,), ("nosuch",), {"heavy": True}),
        ("rtlsim missing OUT", ["rtlsim", "nosuch"], (2,), ("nosuch",), {"heavy": True}),
        ("csim on a file", ["csim", "g.json"], (2,), ("g.json",), {"heavy": True}),
        ("csim on a folder that is no OUT", ["csim", "nonempty"], (2,), ("nonempty",), {"heavy": True}),
        ("csim on an OUT compiled --target verilog", ["csim", "VER"], (2,), ("VER",), {"heavy": True}),
        ("rtlsim on an OUT compiled --target hls", ["rtlsim", "HLS"], (2,), ("HLS",), {"heavy": True}),
        (
            "rtlsim --vcd /nonexistent/dir/w.vcd",
            ["rtlsim", "ALL", "--vcd", "/nonexistent/dir/w.vcd"],
            (2,),
            ("/nonexistent/dir",),
            {"heavy": True},
        ),
        (
            "rtlsim --vcd existing file",
            ["rtlsim", "ALL", "--vcd", "exists.vcd"],
            (2,),
            ("exists.vcd",),
            {"heavy": True},
        ),
        (
            "csim --hls-include /nonexistent",
            ["csim", "ALL", "--hls-include", "/nonexistent"],
            (2,),
            ("/nonexistent",),
            {"heavy": True},
        ),
    ]
    for name, argv, expect, names, kw in cases:
        kw = dict(kw)
        simple(
            "cli",
            name,
            setup(),
            argv,
            expect,
            names=names,
            argparse_err=kw.pop("argparse_err", False),
            heavy=kw.pop("heavy", False),
            written=("O",),
            complete=("O",),
        )

    # a folder beside OUT named like a staging folder, with a pid no process can have
    simple(
        "cli",
        "compile with '.O.99999999999999999999.x' beside O",
        setup(lambda d: write(d, ".O.99999999999999999999.x/f", "u")),
        C,
        (0,),
        written=("O", ".O.99999999999999999999.x"),
        complete=("O",),
    )

    # OUT is a symlink to a folder of the user's: --force may replace the link, but the user's folder must stay
    # as it was and no staging entry may stay beside O
    simple(
        "cli",
        "compile --force with O a symlink to the user's folder",
        setup(lambda d: (write(d, "userdir/f.txt", "mine\n"), (d / "O").symlink_to("userdir"))),
        C + ["--force"],
        (0, 2),
        written=("O",),
        complete=("O",),
    )

    # OUT edited, truncated or deleted after compile: csim and rtlsim must refuse, naming the file
    def tamper(fn):
        return setup(lambda d: fn(d / "ALL"))

    def append(rel, text="// edited\n"):
        return lambda o: (o / rel).open("a").write(text)

    def truncate(rel):
        return lambda o: (o / rel).write_bytes((o / rel).read_bytes()[: (o / rel).stat().st_size // 2])

    def delete(rel):
        return lambda o: (o / rel).unlink()

    mem = sorted(p.name for p in (base / "ALL" / "verilog").glob("*.mem"))[0]
    tampers = [
        ("csim", f"hls/{top}.cpp edited", append(f"hls/{top}.cpp"), (f"{top}.cpp",)),
        ("csim", "hls/weights.h truncated", truncate("hls/weights.h"), ("weights.h",)),
        ("csim", "hls/data/x.txt deleted", delete("hls/data/x.txt"), ("x.txt",)),
        ("csim", "hls/include/ap_fixed.h edited", append("hls/include/ap_fixed.h"), ("ap_fixed.h",)),
        ("csim", "graph.json edited", lambda o: (o / "graph.json").write_text(json.dumps(RESIDUAL)), ("graph.json",)),
        ("csim", "graph.json deleted", delete("graph.json"), ("graph.json",)),
        ("csim", "checksums.json deleted", delete("checksums.json"), ("checksums.json",)),
        (
            "csim",
            "checksums.json sha256 a list",
            lambda o: (o / "checksums.json").write_text('{"sha256": ["x"]}'),
            ("checksums.json",),
        ),
        ("csim", "checksums.json a list", lambda o: (o / "checksums.json").write_text("[1, 2]"), ("checksums.json",)),
        (
            "csim",
            f"hls/{top}.cpp replaced by a folder",
            lambda o: ((o / f"hls/{top}.cpp").unlink(), (o / f"hls/{top}.cpp").mkdir()),
            (f"{top}.cpp",),
        ),
        ("csim", "hls/ deleted", lambda o: shutil.rmtree(o / "hls"), ("hls",)),
        ("rtlsim", f"verilog/{top}.v truncated", truncate(f"verilog/{top}.v"), (f"{top}.v",)),
        ("rtlsim", f"verilog/{mem} deleted", delete(f"verilog/{mem}"), (mem,)),
        ("rtlsim", f"verilog/{mem} edited", append(f"verilog/{mem}", "0\n"), (mem,)),
        ("rtlsim", "verilog/manifest.json edited", append("verilog/manifest.json", " "), ("manifest.json",)),
        ("rtlsim", "graph.json truncated", truncate("graph.json"), ("graph.json",)),
        (
            "rtlsim",
            "checksums.json garbage",
            lambda o: (o / "checksums.json").write_bytes(b"\xff\xfe garbage"),
            ("checksums.json",),
        ),
        ("rtlsim", "checksums.json truncated", truncate("checksums.json"), ("checksums.json",)),
        (
            "rtlsim",
            "checksums.json sha256 values numbers",
            lambda o: (o / "checksums.json").write_text(
                json.dumps({"sha256": dict.fromkeys(json.loads((o / "checksums.json").read_text())["sha256"], 0)})
            ),
            ("checksums.json", "graph.json"),
        ),
    ]
    if ARGS.heavy:
        tampers.append(
            (
                "csim",
                f"checksums.json emptied and hls/{top}.cpp edited",
                lambda o: ((o / "checksums.json").write_text('{"sha256": {}}'), append(f"hls/{top}.cpp")(o)),
                ("checksums.json", f"{top}.cpp"),
            )
        )
    for sim, name, fn, names in tampers:
        simple("cli", f"{sim} on OUT with {name}", tamper(fn), [sim, "ALL"], (2,), names=names, heavy=True, timeout=900)


# ------------------------------------------------------------------------------------------ kill trials


def tree_id(out: Path, refs: dict):
    s = dict(snapshot(out).items())
    for name, ref in refs.items():
        if s == ref:
            return name
    return None


def leftovers(out: Path) -> list:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def kill_trials(rng: random.Random):
    d = fresh("kill")
    write(d, "old.json", json.loads((EXAMPLES / "cnn.json").read_text()))
    write(d, "new.json", json.loads((EXAMPLES / "resnet8.json").read_text()))
    out = d / "OUT"
    OLD = ["compile", "old.json", "-o", "OUT", "--force", "--target", "all", "--seed", "1"]
    NEW = ["compile", "new.json", "-o", "OUT", "--force", "--target", "all"]
    state = {}

    def prepare():
        r = hl(NEW, d)
        assert r.rc == 0, r.stderr
        state["new"] = snapshot(out)
        times = []
        for _ in range(2):
            t = time.monotonic()
            r = hl(NEW, d)
            times.append(time.monotonic() - t)
        r = hl(OLD, d)
        assert r.rc == 0, r.stderr
        state["old"] = snapshot(out)
        state["T"] = min(times)
        assert state["old"] != state["new"]

    prepare()
    user_before = snapshot(d, skip=("OUT",))
    sigs = [signal.SIGKILL, signal.SIGINT, signal.SIGTERM]
    for i in range(ARGS.kills):
        sig = sigs[i % 3]
        delay = round(rng.uniform(0, 2.0), 3)

        def fn(sig=sig, delay=delay):
            probs = []
            # OUT must hold the complete old compile now (the previous trial's clean-up run put it there)
            if tree_id(out, {"old": state["old"]}) != "old":
                r0 = hl(OLD, d)
                if r0.rc != 0 or tree_id(out, {"old": state["old"]}) != "old":
                    now = snapshot(out)
                    diff = sorted(k for k in set(now) | set(state["old"]) if now.get(k) != state["old"].get(k))
                    return r0, [f"could not restore the old OUT before the trial; differs in {diff[:6]}"], ""
            p = spawn(NEW, d)
            time.sleep(delay)
            p.send_signal(sig)
            so, se = p.communicate(timeout=120)
            r = Result([HLSFUSE, *NEW], str(d), p.returncode, so.decode(errors="replace"), se.decode(errors="replace"))
            note = ""
            if "Traceback" in r.stdout + r.stderr:
                probs.append("Traceback printed")
            if sig == signal.SIGINT:
                if r.rc == 130:
                    if r.stderr != "hlsfuse: interrupted\n":
                        probs.append(
                            "SIGINT: stderr is not the one line 'hlsfuse: interrupted' "
                            f"({len(r.stderr.splitlines())} lines)"
                        )
                elif r.rc == -2:
                    note = "died of SIGINT outside main (interpreter start-up or shutdown), shell sees 130"
                    if r.stderr:
                        probs.append("SIGINT -2 with stderr output")
                elif r.rc != 0:
                    probs.append(f"SIGINT: exit {r.rc}, expected 130 (or 0 if it had finished)")
            else:
                if r.rc not in (0, -sig):
                    probs.append(f"exit {r.rc}, expected {-sig} or 0")
            if r.rc == 0 and r.stderr:
                probs.append("exit 0 with stderr output")
            which = tree_id(out, {"old": state["old"], "new": state["new"]})
            if which is None:
                probs.append(
                    "OUT is neither the complete old nor the complete new folder: "
                    + "; ".join(out_complete(out) or ["differs from both references"])
                )
            else:
                note = (note + "; " if note else "") + f"OUT={which}"
                probs += out_complete(out)
            if r.rc == 0 and which != "new":
                probs.append("exit 0 but OUT is not the new compile")
            left = leftovers(out)
            if left:
                note += f"; staging left by the killed run: {len(left)}"
            # the next successful run cleans up
            r2 = hl(NEW, d)
            if r2.rc != 0:
                probs.append(f"next compile failed: exit {r2.rc}: {r2.stderr.strip()[:200]}")
            if tree_id(out, {"new": state["new"]}) != "new":
                probs.append("after the next compile OUT is not the new compile")
            if leftovers(out):
                probs.append(f"staging folders beside OUT after the next run: {leftovers(out)}")
            r3 = hl(OLD, d)  # back to the old OUT for the next trial (also a 'next run')
            if r3.rc != 0 or leftovers(out):
                probs.append(f"restoring run: exit {r3.rc}, leftovers {leftovers(out)}")
            probs += diff_snap(user_before, snapshot(d, skip=("OUT",)))
            return r, probs, note

        add("kill", f"{signal.Signals(sig).name} after {delay:.3f} s", fn)

    def early_sigint(delay):
        def fn():
            p = spawn(["check", "old.json"], d)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            so, se = p.communicate(timeout=120)
            r = Result(
                [HLSFUSE, "check", "old.json", f"(SIGINT after {delay} s)"],
                str(d),
                p.returncode,
                so.decode(errors="replace"),
                se.decode(errors="replace"),
            )
            probs = []
            if "Traceback" in r.stdout + r.stderr:
                probs.append("Traceback printed")
            if r.rc not in (130, 0) and not (r.rc == -2 and not r.stderr):
                probs.append(f"exit {r.rc}, expected 130")
            if r.rc == 130 and r.stderr != "hlsfuse: interrupted\n":
                probs.append("stderr is not the one line 'hlsfuse: interrupted'")
            return r, probs, ""

        return fn

    add("kill", "SIGINT to check after 0.15 s (interpreter start-up, imports)", early_sigint(0.15))


# ------------------------------------------------------------------------------------------ concurrency


def conc_trials(rng: random.Random):
    def make(name, initial, mix, force=True):
        def fn():
            d = fresh("conc")
            write(d, "old.json", json.loads((EXAMPLES / "cnn.json").read_text()))
            write(d, "new.json", json.loads((EXAMPLES / "mlp.json").read_text()))
            out = d / "OUT"
            refs = {}
            for g in ("new", "old"):
                r = hl(["compile", f"{g}.json", "-o", "OUT", "--force", "--target", "all"], d)
                assert r.rc == 0, r.stderr
                refs[g] = snapshot(out)
            if initial is None:
                shutil.rmtree(out)
            else:
                hl(["compile", f"{initial}.json", "-o", "OUT", "--force", "--target", "all"], d)
            procs = [
                spawn(["compile", f"{g}.json", "-o", "OUT", "--target", "all", *(["--force"] if force else [])], d)
                for g in mix
            ]
            results = []
            for p in procs:
                so, se = p.communicate(timeout=300)
                results.append(
                    Result(p.args, str(d), p.returncode, so.decode(errors="replace"), se.decode(errors="replace"))
                )
            probs, notes = [], []
            for i, r in enumerate(results):
                if r.rc != 0:
                    notes.append(f"#{i} exit {r.rc}: {r.stderr.strip()[:160]}")
                    probs += [f"#{i}: {p}" for p in judge(r, (0, 2))]
            which = tree_id(out, refs)
            if which is None or which not in mix:
                probs.append("OUT is not one complete compile: " + "; ".join(out_complete(out) or ["differs"]))
            if not any(r.rc == 0 for r in results):
                probs.append("no compile succeeded")
            if leftovers(out):
                probs.append(f"staging folders left: {leftovers(out)}")
            worst = next((r for r in results if r.rc != 0), results[0])
            return worst, probs, f"OUT={which}; " + " | ".join(notes)

        add("conc", name, fn)

    def user_race():
        """compile without --force into an absent OUT; while hlsfuse writes its staging folder the user creates
        OUT with a file of their own. Without --force hlsfuse must refuse (or at least keep the user's file)."""
        d = fresh("conc")
        write(d, "g.json", json.loads((EXAMPLES / "resnet8.json").read_text()))
        p = spawn(["compile", "g.json", "-o", "OUT", "--target", "all"], d)
        seen = False
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if any(e.name.startswith(".OUT.") for e in os.scandir(d)):
                seen = True
                (d / "OUT").mkdir()
                (d / "OUT" / "mine.txt").write_text("the user's file\n")
                break
            time.sleep(0.001)
        so, se = p.communicate(timeout=120)
        r = Result(
            [
                HLSFUSE,
                "compile",
                "g.json",
                "-o",
                "OUT",
                "--target",
                "all",
                "(user creates OUT/mine.txt once .OUT.* appears)",
            ],
            str(d),
            p.returncode,
            so.decode(errors="replace"),
            se.decode(errors="replace"),
        )
        if not seen:
            return r, [], "the staging folder was never seen; race not exercised"
        probs = judge(r, (2,), ("OUT",))
        if not (d / "OUT" / "mine.txt").exists():
            probs.append("the user's OUT/mine.txt was deleted (OUT replaced without --force)")
        if leftovers(d / "OUT"):
            probs.append(f"staging left: {leftovers(d / 'OUT')}")
        return r, probs, ""

    add("conc", "user creates OUT during a compile without --force", user_race)

    def user_race_file():
        """run -o o.npz (no --force) while the user creates o.npz after hlsfuse's up-front check: hlsfuse must
        not overwrite it. Tried at several instants (the window is the reference run, ~0.2 s)."""
        d = fresh("conc")
        write(d, "g.json", json.loads((EXAMPLES / "resnet8.json").read_text()))
        mine = b"the user's archive\n"
        tries = []
        r = None
        for delay in (0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70):
            (d / "o.npz").unlink(missing_ok=True)
            p = spawn(["run", "g.json", "-o", "o.npz"], d)
            time.sleep(delay)
            created = False
            if p.poll() is None:
                try:
                    with open(d / "o.npz", "xb") as f:
                        f.write(mine)
                    created = True
                except FileExistsError:
                    pass
            so, se = p.communicate(timeout=120)
            r = Result(
                [HLSFUSE, "run", "g.json", "-o", "o.npz", f"(user writes o.npz after {delay} s)"],
                str(d),
                p.returncode,
                so.decode(errors="replace"),
                se.decode(errors="replace"),
            )
            if created and (d / "o.npz").read_bytes() != mine:
                return (
                    r,
                    [
                        f"the user's o.npz, created {delay} s after the start, was overwritten without --force "
                        f"(exit {r.rc})"
                    ],
                    "",
                )
            tries.append(f"{delay}:{'created' if created else 'late'}/rc{r.rc}")
        return r, [], " ".join(tries)

    add("conc", "user creates o.npz during run -o (no --force)", user_race_file)
    make("4 x compile mlp --force over an existing OUT", "old", ["new"] * 4)
    make("4 x compile --force into an absent OUT (2 cnn, 2 mlp)", None, ["old", "new", "old", "new"])
    make("4 x compile (no --force) into an absent OUT", None, ["new"] * 4, force=False)


# ------------------------------------------------------------------------------------------- full disk


def disk_trials(rng: random.Random):
    if os.geteuid() != 0:
        print("disk trials skipped: not root")
        return
    small = SCRATCH / "small"

    def mounted(size: str, fn, extra_opts=""):
        def run():
            small.mkdir(parents=True, exist_ok=True)
            subprocess.run(["umount", str(small)], capture_output=True)
            opts = f"size={size}" + ("," + extra_opts if extra_opts else "")
            subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(small)], check=True)
            try:
                return fn()
            finally:
                subprocess.run(["umount", str(small)], check=True)

        return run

    def fill(keep=0):
        """fill the tmpfs, leaving about keep bytes"""
        st = os.statvfs(small)
        free = st.f_bavail * st.f_frsize - keep
        if free > 0:
            with open(small / "filler", "wb") as f, contextlib.suppress(OSError):
                f.write(b"\0" * free)

    src = fresh("disk")
    write(src, "g.json", RESIDUAL)
    write(src, "tiny.json", small_graph())
    write(src, "m.onnx", onnx_model_bytes())
    write(src, "user.txt", "user\n")
    src_snap = snapshot(src)

    def common(r, names, fs_before):
        probs = judge(r, (2,), names)
        probs += diff_snap(fs_before, snapshot(small))
        probs += diff_snap(src_snap, snapshot(src))
        return probs

    def d1():
        fs = snapshot(small)
        r = hl(["compile", "g.json", "-o", str(small / "OUT"), "--target", "all"], src)
        return r, common(r, (str(small / "OUT"),), fs), ""

    def d2():
        # a complete old OUT that fits; the new one does not
        r0 = hl(["compile", "tiny.json", "-o", str(small / "OUT"), "--target", "hls"], src)
        if r0.rc != 0:
            return r0, [f"setup: the tiny compile did not fit: {r0.stderr.strip()}"], ""
        fs = snapshot(small)
        r = hl(["compile", "g.json", "-o", str(small / "OUT"), "--target", "all", "--force"], src)
        probs = common(r, (str(small / "OUT"),), fs) + out_complete(small / "OUT")
        return r, probs, ""

    def tiny_size():
        d = fresh("setup")
        write(d, "tiny.json", small_graph())
        hl(["compile", "tiny.json", "-o", "OUT", "--target", "hls"], d)
        n = sum(-(-p.stat().st_size // 4096) + 1 for p in (d / "OUT").rglob("*"))
        return f"{(n + 24) * 4}k"

    def d3():
        fill()
        fs = snapshot(small)
        r = hl(["run", "g.json", "-o", str(small / "o.npz")], src)
        return r, common(r, (str(small / "o.npz"),), fs), ""

    def d4():
        fill()
        fs = snapshot(small)
        r = hl(["convert", "m.onnx", "-o", str(small / "g.json")], src)
        return r, common(r, (str(small / "g.json"),), fs), ""

    def d5():
        fill()
        fs = snapshot(small)
        r = hl(["fuse", "g.json", "--dot", str(small / "f.dot")], src)
        return r, common(r, (str(small / "f.dot"),), fs), ""

    def d6():
        fs = snapshot(small)
        r = hl(["compile", "g.json", "-o", str(small / "OUT"), "--target", "all"], src)
        return r, common(r, (str(small / "OUT"),), fs), ""

    add("disk", "compile --target all into a 64 KiB tmpfs", mounted("64k", d1))
    add("disk", "compile --force over a complete OUT on a tmpfs too small for the new one", mounted(tiny_size(), d2))
    add("disk", "run -o on a full 64 KiB tmpfs", mounted("64k", d3))
    add("disk", "convert -o on a full 64 KiB tmpfs", mounted("64k", d4))
    add("disk", "fuse --dot on a full 64 KiB tmpfs", mounted("64k", d5))
    add("disk", "compile into a tmpfs with 12 inodes", mounted("8m", d6, "nr_inodes=12"))


# ---------------------------------------------------------------------------------------------- SIGPIPE


def pipe_trials(rng: random.Random):
    def make(name, cmd, reader, out_check=False):
        def fn():
            d = fresh("pipe")
            write(d, "g.json", RESIDUAL)
            if out_check:
                hl(["compile", "g.json", "-o", "OUT", "--target", "all"], d)
            script = f'{HLSFUSE} {cmd} 2>err.txt | {reader}; echo "rc=${{PIPESTATUS[0]}}" >&2'
            r = shell(script, d)
            err = (d / "err.txt").read_text(errors="replace")
            rc_line = [ln for ln in r.stderr.splitlines() if ln.startswith("rc=")]
            rc = int(rc_line[-1][3:]) if rc_line else "?"
            res = Result(["bash", "-c", script], str(d), rc, r.stdout, err)
            probs = []
            if rc not in (0, 141):
                probs.append(f"hlsfuse exit {rc}, expected 0 or 141")
            if err:
                probs.append(f"stderr not empty: {err.strip()[:200]}")
            if out_check:
                probs += out_complete(d / "OUT")
                if leftovers(d / "OUT"):
                    probs.append("staging left")
            return res, probs, f"rc {rc}"

        add("pipe", name, fn)

    make("compile --force | head -1", "compile g.json -o OUT --target all --force", "head -1", True)
    make("compile --force | true", "compile g.json -o OUT --target all --force", "true", True)
    make("check | head -1", "check g.json", "head -1")
    make("check | true", "check g.json", "true")
    make("fuse --json | head -c 10", "fuse g.json --json", "head -c 10")
    make("run | true", "run g.json", "true")
    make("--help | true", "--help", "true")


# ----------------------------------------------------------------------------------------------- caches


def cache_trials(rng: random.Random):
    """The simulators' build caches (README): a damaged entry is rebuilt, never run; a killed build is never used.
    Each trial is heavy (g++ or Verilator): all run under the lock, one at a time."""
    d = fresh("cache")
    write(d, "g.json", RESIDUAL)
    marker = d / "FAKE_BINARY_RAN"
    csim_root = CACHE / "hlsfuse" / "csim"
    rtl_root = CACHE / "hlsfuse" / "rtlsim"
    top = RESIDUAL["name"]

    def setup():
        if not (d / "OUT" / "checksums.json").exists():
            r = hl(["compile", "g.json", "-o", "OUT", "--target", "all"], d)
            assert r.rc == 0, r.stderr

    def entries(root: Path, pattern: str):
        """the sealed files of the cache (those with a <file>.sha256 beside them)"""
        if not root.exists():
            return []
        return sorted(f.with_name(f.name[: -len(".sha256")]) for f in root.glob(pattern + ".sha256"))

    def wipe(root: Path):
        """this script's own cache (XDG_CACHE_HOME under SCRATCH) only, under the lock"""
        with open(LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            shutil.rmtree(root, ignore_errors=True)

    def csim_pass(r):
        probs = judge(r, (0,))
        if r.rc == 0 and "PASS" not in r.stdout:
            probs.append("exit 0 without PASS")
        return probs

    def intact_all(root: Path, pattern: str):
        bad = []
        if not entries(root, pattern):
            return ["no sealed cache entry after the run"]
        for f in entries(root, pattern):
            dig = f.with_name(f.name + ".sha256")
            if not dig.exists() or dig.read_text().strip() != hashlib.sha256(f.read_bytes()).hexdigest():
                bad.append(str(f))
        return [f"cache entry not sealed/intact after the run: {bad[:3]}"] if bad else []

    def c_control():
        setup()
        wipe(csim_root)
        r = hl(["csim", "OUT"], d, heavy=True, timeout=900)
        return r, csim_pass(r) + intact_all(csim_root, f"*/csim_{top}"), ""

    def c_damaged(how):
        def fn():
            setup()
            wipe(csim_root)
            r0 = hl(["csim", "OUT"], d, heavy=True, timeout=900)
            bins = entries(csim_root, f"*/csim_{top}")
            if r0.rc != 0 or not bins:
                return r0, [f"setup csim failed or no cached binary (exit {r0.rc})"], ""
            for b in bins:
                if how == "truncate":
                    b.write_bytes(b.read_bytes()[: b.stat().st_size // 3])
                elif how == "fake":
                    b.write_text(f"#!/bin/sh\ntouch {marker}\necho 'PASS {top}: 1 output elements match in 2 frames'\n")
                    b.chmod(0o755)
                elif how == "empty":
                    b.write_bytes(b"")
                elif how == "digest gone":
                    b.with_name(b.name + ".sha256").unlink()
            marker.unlink(missing_ok=True)
            r = hl(["csim", "OUT"], d, heavy=True, timeout=900)
            probs = csim_pass(r) + intact_all(csim_root, f"*/csim_{top}")
            if marker.exists():
                probs.append("the damaged cache entry was run")
            return r, probs, ""

        return fn

    def c_killed(sig):
        def fn():
            setup()
            with open(LOCK, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                shutil.rmtree(csim_root, ignore_errors=True)
                delay = round(rng.uniform(0.3, 2.5), 3)
                p = subprocess.Popen(
                    [HLSFUSE, "csim", "OUT"],
                    cwd=d,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=ENV,
                    preexec_fn=_child,
                    start_new_session=True,
                )
                time.sleep(delay)
                os.killpg(p.pid, sig)  # the whole group, as a terminal's Ctrl-C does (only processes started here)
                so, se = p.communicate(timeout=300)
            r = Result(
                ["csim", "OUT", f"({signal.Signals(sig).name} to its process group after {delay} s)"],
                str(d),
                p.returncode,
                so.decode(errors="replace"),
                se.decode(errors="replace"),
            )
            probs = []
            if "Traceback" in r.stdout + r.stderr:
                probs.append("Traceback printed")
            if sig == signal.SIGINT and r.rc not in (0, 130, -2):
                probs.append(f"exit {r.rc}, expected 130")
            if sig == signal.SIGINT and r.rc == 130 and r.stderr != "hlsfuse: interrupted\n":
                probs.append(f"SIGINT: stderr is not the one line 'hlsfuse: interrupted': {r.stderr.strip()[:200]!r}")
            if sig == signal.SIGKILL and r.rc not in (0, -9):
                probs.append(f"exit {r.rc}, expected -9")
            time.sleep(1)  # orphans of a SIGKILL (g++) are in the group too and got the signal
            r2 = hl(["csim", "OUT"], d, heavy=True, timeout=900)
            probs += [f"next csim: {p}" for p in csim_pass(r2)] + intact_all(csim_root, f"*/csim_{top}")
            return r, probs, f"next csim exit {r2.rc}"

        return fn

    def r_control():
        setup()
        wipe(rtl_root)
        r = hl(["rtlsim", "OUT"], d, heavy=True, timeout=1800)
        return r, csim_pass(r) + intact_all(rtl_root, "py-*/V*"), ""

    def r_damaged():
        setup()
        wipe(rtl_root)
        r0 = hl(["rtlsim", "OUT"], d, heavy=True, timeout=1800)
        libs = entries(rtl_root, "py-*/V*")
        if r0.rc != 0 or not libs:
            return r0, [f"setup rtlsim failed or no cached model (exit {r0.rc})"], ""
        for f in libs:
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        r = hl(["rtlsim", "OUT"], d, heavy=True, timeout=1800)
        return r, csim_pass(r) + intact_all(rtl_root, "py-*/V*"), ""

    add("cache", "csim control (PASS, entry sealed)", c_control)
    add("cache", "csim with its cached binary truncated", c_damaged("truncate"))
    add("cache", "csim with its cached binary replaced by a script", c_damaged("fake"))
    add("cache", "csim with its cached binary emptied", c_damaged("empty"))
    add("cache", "csim with the .sha256 seal deleted", c_damaged("digest gone"))
    add("cache", "csim SIGKILLed during the g++ build, then csim again", c_killed(signal.SIGKILL))
    add("cache", "csim SIGINTed during the g++ build, then csim again", c_killed(signal.SIGINT))
    add("cache", "rtlsim control (PASS, model sealed)", r_control)
    add("cache", "rtlsim with its cached model truncated", r_damaged)


# ------------------------------------------------------------------------------------------------- main

KINDS = {
    "json": json_trials,
    "cli": cli_trials,
    "kill": kill_trials,
    "conc": conc_trials,
    "disk": disk_trials,
    "pipe": pipe_trials,
    "cache": cache_trials,
}


def run_trial(t: Trial):
    try:
        r, probs, note = t.fn()
    except Exception as exc:  # noqa: BLE001  (a broken trial is reported, not hidden)
        r, probs, note = None, [f"trial harness error: {type(exc).__name__}: {exc}"], ""
    return r, probs, note


def main() -> int:
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default=",".join(KINDS))
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--mutations", type=int, default=36)
    ap.add_argument("--no-heavy", dest="heavy", action="store_false")
    ap.add_argument("--no-repro", dest="repro", action="store_false")
    ap.add_argument("--workdir", type=Path, default=SCRATCH / "run")
    ap.add_argument("-v", "--verbose", action="store_true")
    ARGS = ap.parse_args()
    ARGS.work = ARGS.workdir.resolve()
    if ARGS.work.exists():
        shutil.rmtree(ARGS.work)
    ARGS.work.mkdir(parents=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    kinds = [k.strip() for k in ARGS.only.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            ap.error(f"unknown kind {k!r}")
    start = time.monotonic()
    for k in kinds:
        KINDS[k](random.Random(f"{ARGS.seed}-{k}"))
    for i, t in enumerate(TRIALS):
        t0 = time.monotonic()
        t.result, t.problems, t.note = run_trial(t)
        t.seconds = time.monotonic() - t0
        if t.problems and ARGS.repro:
            _, again, _ = run_trial(t)
            t.reproduces = "yes" if again else "no"
        if ARGS.verbose or t.problems:
            mark = "ok " if not t.problems else "BAD"
            rc = t.result.rc if t.result else "-"
            print(
                f"[{i + 1}/{len(TRIALS)}] {mark} {t.kind:5} rc={rc} {t.seconds:5.1f}s {t.name}"
                + (f"  ({t.note})" if t.note and ARGS.verbose else ""),
                flush=True,
            )
    # summary
    print()
    print(f"{'kind':6} {'trials':>6} {'clean':>6} {'unclean':>7}")
    total = bad = 0
    for k in kinds:
        ts = [t for t in TRIALS if t.kind == k]
        nb = sum(1 for t in ts if t.problems)
        total += len(ts)
        bad += nb
        print(f"{k:6} {len(ts):6} {len(ts) - nb:6} {nb:7}")
    print(f"{'all':6} {total:6} {total - bad:6} {bad:7}   ({time.monotonic() - start:.0f} s, seed {ARGS.seed})")
    notes = [t for t in TRIALS if t.note and t.kind in ("kill", "conc", "pipe")]
    if notes:
        print("\nnotes:")
        for t in notes:
            print(f"  {t.kind:5} {t.name}: {t.note}")
    fails = [t for t in TRIALS if t.problems]
    if fails:
        print("\nunclean trials:")
    for t in fails:
        r = t.result
        print(f"\n--- {t.kind}: {t.name}  (reproduces: {t.reproduces or 'not re-run'})")
        if r is not None:
            print(f"    cwd: {r.cwd}")
            print(f"    cmd: {' '.join(map(str, r.cmd))}")
            print(f"    exit: {r.rc}")
            err = r.stderr.splitlines()
            for ln in err[:4]:
                print(f"    stderr: {ln[:300]}")
            if len(err) > 4:
                print(f"    stderr: ... ({len(err)} lines) ... {err[-1][:200]}")
        for p in t.problems:
            print(f"    problem: {p}")
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
