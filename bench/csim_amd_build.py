"""How long g++ takes to build a C simulation against AMD's own headers, which every simulated design in the tests
also builds against (docs/hls.md), measured against baselines in the same run:

  designs  csim's build against AMD's headers (with the poison flag), against the same sources under the work-alike
           headers: folded examples, and twenty random graphs side by side, folded at random (seed 1 of
           tests/test_csim_random.py);
  tables   a lookup table of N entries as luts.h writes it (raw integers in hlsf::raw<W, S>::type, read with
           hlsf::element), against a brace list of ap_fixed values built from doubles, as it was written before.

Each line prints the seconds and the ratio baseline / measured. AMD's headers: --hls-include DIR, or the copy the
tests download ($XDG_CACHE_HOME/hlsfuse/hls4ml-1.3.0-ap_types; docs/hls.md says how to get one).

    python bench/csim_amd_build.py [--hls-include DIR] [--entries N]
"""

import argparse
import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hlsfuse import load_graph
from hlsfuse.backends.hls.toolchain import POISON_FLAG, cxxflags
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.resources import hw_dir
from hlsfuse.types import FixedType, to_float

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DESIGNS = (("resnet8", ["--board", "pynq-z2"]), ("residual", ["--board", "pynq-z2", "--target-cycles", "8600"]),
           ("cnn", ["--board", "zcu104"]))


def seconds(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"g++ failed in {cwd}:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def line(what: str, baseline: str, base: float, measured: str, now: float) -> None:
    print(f"{what:48s} {baseline} {base:6.2f} s   {measured} {now:6.2f} s   ratio {base / now:5.2f}x")


def bench_designs(include: str, work: Path) -> None:
    amd = [*cxxflags(include), POISON_FLAG]
    designs = []
    for name, options in DESIGNS:
        out = work / name
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # table, warnings
            assert main(["compile", str(EXAMPLES / f"{name}.json"), "-o", str(out), *options]) == 0
        designs.append((f"{name} {' '.join(options)}", out))
    designs.append(("twenty random graphs, folded at random", random_union(work / "random")))
    for what, out in designs:
        top = load_graph(out / "graph.json").name
        sources = [f"{top}.cpp", f"tb_{top}.cpp"]
        base = seconds(["g++", *cxxflags(), *sources, "-o", "workalike"], out / "hls")
        now = seconds(["g++", *amd, *sources, "-o", "amd"], out / "hls")
        line(what, "work-alikes", base, "AMD", now)


def random_union(out: Path) -> Path:
    """The twenty graphs of seed 1 in tests/test_csim_random.py side by side in one design, folded at random."""
    sys.path.insert(0, str(ROOT / "tests"))
    from random_graphs import batch
    from rtl_design import random_fold, union

    graph = union(batch(1, 20), name="batch_1")
    compile(graph, CompileOptions(fold=random_fold(graph, random.Random(1)))).write(out)
    return out


def bench_tables(include: str, work: Path, entries: int) -> None:
    t = FixedType(18, 1, False, "RND", "SAT")
    raw = np.random.default_rng(1).integers(0, 1 << 18, entries)
    values = to_float(raw, t)
    spelled = "ap_ufixed<18, 1, AP_RND, AP_SAT>"
    reader = "int main(int argc, char**) { return TABLE_READ(argc) > 0.5 ? 1 : 0; }\n"
    typed = (f"#include <ap_fixed.h>\nstatic const {spelled} table[{entries}] = {{"
             + ", ".join(repr(float(v)) for v in values) + "};\n#define TABLE_READ(i) table[i]\n" + reader)
    raws = (f"#include <hlsfuse/numeric.h>\nstatic const hlsf::raw<18, false>::type table[{entries}] = {{"
            + ", ".join(str(int(v)) for v in raw) + f"}};\n#define TABLE_READ(i) hlsf::element<{spelled}>(table[i])\n"
            + reader)
    flags = [*cxxflags(include), POISON_FLAG, "-I", str(hw_dir() / "hls")]
    for name, text in (("typed.cpp", typed), ("raw.cpp", raws)):
        (work / name).write_text(text)
    base = seconds(["g++", *flags, "typed.cpp", "-o", "typed"], work)
    now = seconds(["g++", *flags, "raw.cpp", "-o", "raw"], work)
    line(f"a table of {entries} entries", "ap_fixed", base, "raw", now)


def main_() -> None:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hlsfuse" / "hls4ml-1.3.0-ap_types"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hls-include", default=str(default), help="a folder of AMD's headers (ap_fixed.h ...)")
    parser.add_argument("--entries", type=int, default=4096, help="entries of the table (default 4096)")
    args = parser.parse_args()
    include = str(Path(args.hls_include).resolve())
    if not (Path(include) / "ap_fixed.h").is_file():
        raise SystemExit(f"{include}: no ap_fixed.h there; give --hls-include DIR (docs/hls.md, AMD's headers)")
    with tempfile.TemporaryDirectory(prefix="hlsfuse-bench-") as tmp:
        bench_designs(include, Path(tmp))
        bench_tables(include, Path(tmp), args.entries)


if __name__ == "__main__":
    main_()
