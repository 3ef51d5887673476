"""How construction and fusion time grow with graph size, beside TVM's FuseOps on the same graphs.

ResNet-like graphs of 2,000, 10,000, 50,000 and 200,000 ops (blocks of conv2d, add, relu, conv2d,
add, residual add, relu on 1x8x8x4 NHWC tensors) and a chain of 50,000 elementwise ops. For each:

  build     ``Graph(...)`` from ready nodes: its constructor verifies every node (microseconds per op)
  fuse      ``fuse()`` alone, FPGA mode
  CLI       ``hlsfuse fuse GRAPH.json --json`` end to end, as a fresh process on the saved graph:
            Python's start-up, the imports, reading and verifying the file, fusing, printing
  TVM       TVM's FuseOps pass alone on the same graph in Relax (only when ``import tvm`` works,
            e.g. ``pip install apache-tvm``; the column is skipped otherwise)
  CLI/TVM   the CLI's time over TVM's
  growth    each time over the previous size's; linear growth gives the size ratio (5x, 4x)

Every time is the best of --repeat runs; the CLI's and TVM's runs take turns. TVM gets the graph
as its pipeline gives it to FuseOps: built of Relax ops with the block builder, then LegalizeOps
and AnnotateTIROpPattern (untimed, but LegalizeOps takes about a millisecond per op: minutes at
200,000 ops). On this graph FuseOps makes the same groups as ``fuse`` (conv2d with its bias add and
relu; conv2d, bias add, residual add and relu).

    python bench/fusion_scaling.py [--repeat N] [--sizes 2000,10000,50000,200000]
"""

from __future__ import annotations

import argparse
import compileall
import functools
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hlsfuse
from hlsfuse import Constant, Graph, Input, Node, TensorType, fuse, parse_dtype, save_graph

DTYPE = parse_dtype("fixed<16,6>")
SHAPE = (1, 8, 8, 4)
BLOCK = 7  # ops in one residual block


def resnet_like(ops: int) -> tuple[list, list, list, list]:
    """Inputs, constants, nodes and outputs of about ``ops`` ops in 7-op residual blocks."""
    rng = np.random.default_rng(0)

    def const(name, shape):
        raw = np.round(rng.normal(0.0, 0.2, shape) * 2**10).astype(np.int64)
        return Constant(name, TensorType(shape, DTYPE), raw)

    constants = [const("w1", (3, 3, 4, 4)), const("w2", (3, 3, 4, 4)), const("b1", (4,)), const("b2", (4,))]
    nodes, x = [], "x"
    pad = {"padding": [1, 1, 1, 1]}
    for k in range(blocks(ops)):
        nodes += [
            Node(f"c{k}a", "conv2d", (x, "w1"), pad),
            Node(f"b{k}a", "add", (f"c{k}a", "b1")),
            Node(f"r{k}a", "relu", (f"b{k}a",)),
            Node(f"c{k}b", "conv2d", (f"r{k}a", "w2"), pad),
            Node(f"b{k}b", "add", (f"c{k}b", "b2")),
            Node(f"s{k}", "add", (f"b{k}b", x)),
            Node(f"r{k}b", "relu", (f"s{k}",)),
        ]
        x = f"r{k}b"
    return [Input("x", TensorType(SHAPE, DTYPE))], constants, nodes, [x]


def blocks(ops: int) -> int:
    return max(1, round(ops / BLOCK))


def elementwise_chain(ops: int) -> tuple[list, list, list, list]:
    nodes, x = [], "x"
    for k in range(ops):
        nodes.append(Node(f"e{k}", "relu" if k % 2 else "neg", (x,)))
        x = f"e{k}"
    return [Input("x", TensorType((1, 64), DTYPE))], [], nodes, [x]


def best_time(fn, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` runs of ``fn()``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def compile_bytecode() -> None:
    """Byte-compile hlsfuse, as installing it does, so that the CLI runs time the command and not
    the compilation of its modules (with PYTHONDONTWRITEBYTECODE set, Python would otherwise compile
    every module in every run)."""
    compileall.compile_dir(Path(hlsfuse.__file__).parent, quiet=1)


def run_cli(path: Path) -> None:
    """``hlsfuse fuse PATH --json`` in a fresh interpreter, its output discarded."""
    command = [sys.executable, "-m", "hlsfuse", "fuse", str(path), "--json"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


# --------------------------------------------------------------------------
# TVM (optional)
# --------------------------------------------------------------------------


def tvm_fuse_ops(ops: int):
    """A run of TVM's FuseOps pass alone on the ResNet-like graph of ``ops`` ops, given as TVM's pipeline
    gives it: Relax ops, legalized to PrimFuncs and annotated with their pattern kinds (neither pass is
    part of the run)."""
    from tvm import relax

    module = relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(_relax_module(relax, ops)))
    return lambda: relax.transform.FuseOps()(module)


def side_by_side(runs: list, repeat: int) -> list[float]:
    """Seconds of the fastest of ``repeat`` runs of each of ``runs``, taken in turns (one of each, then
    again), so that a change of the machine's load meanwhile touches all of them alike."""
    times = [[] for _ in runs]
    for _ in range(repeat):
        for run, spent in zip(runs, times):
            start = time.perf_counter()
            run()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]


def _relax_module(relax, ops: int):
    """The ResNet-like graph as a Relax module of high-level ops, NHWC like hlsfuse's."""
    tensor = getattr(relax, "TensorStructInfo", None) or relax.TensorType  # the name before TVM 0.22
    bb = relax.BlockBuilder()
    shapes = {"x": SHAPE, "w1": (3, 3, 4, 4), "w2": (3, 3, 4, 4), "b1": (4,), "b2": (4,)}
    params = [relax.Var(name, tensor(shape, "float32")) for name, shape in shapes.items()]
    x, w1, w2, b1, b2 = params

    def conv2d(data, weight):
        return bb.emit(relax.op.nn.conv2d(data, weight, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO"))

    def add(a, b):
        return bb.emit(relax.op.add(a, b))

    def relu(a):
        return bb.emit(relax.op.nn.relu(a))

    with bb.function("main", params):
        with bb.dataflow():
            for _ in range(blocks(ops)):
                r = relu(add(conv2d(x, w1), b1))
                x = relu(add(add(conv2d(r, w2), b2), x))
            out = bb.emit_output(x)
        bb.emit_func_output(out)
    return bb.get()


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts (default 3)")
    parser.add_argument("--sizes", default="2000,10000,50000,200000", help="ResNet-like graph sizes in ops")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with_tvm = importlib.util.find_spec("tvm") is not None
    cases = [("resnet-like", resnet_like, size) for size in sizes] + [("elementwise chain", elementwise_chain, 50_000)]

    header = (
        f"{'graph':<18} {'ops':>8} {'groups':>7} {'build':>9} {'fuse':>8} {'CLI':>8} {'TVM':>8} {'CLI/TVM':>8}"
        f"   growth: {'fuse':>6} {'CLI':>6} {'TVM':>6}"
    )
    print(header)
    print(f"{'':<18} {'':>8} {'':>7} {'us/op':>9} {'s':>8} {'s':>8} {'s':>8}")
    print("-" * len(header))
    previous = None
    compile_bytecode()
    with tempfile.TemporaryDirectory() as work:
        for label, make, size in cases:
            parts = make(size)
            build = best_time(lambda label=label, parts=parts: Graph(label, *parts), args.repeat)
            graph = Graph(label, *parts)
            groups = len(fuse(graph).groups)
            t_fuse = best_time(lambda g=graph: fuse(g), args.repeat)
            path = save_graph(graph, Path(work) / f"{label.replace(' ', '_')}_{size}.json")
            runs = [functools.partial(run_cli, path)]
            if with_tvm and make is resnet_like:
                t_cli, t_tvm = side_by_side([*runs, tvm_fuse_ops(size)], args.repeat)
            else:
                (t_cli,), t_tvm = side_by_side(runs, args.repeat), None
            times = (t_fuse, t_cli, t_tvm)
            growth = ["", "", ""]
            if previous is not None and previous[0] == label:
                growth = [f"{t / p:.2f}x" if t and p else "" for t, p in zip(times, previous[1])]
            tvm_cells = (f"{t_tvm:>7.3f}s", f"{t_cli / t_tvm:>8.2f}") if t_tvm else (f"{'-':>8}", f"{'-':>8}")
            print(
                f"{label:<18} {len(graph.nodes):>8,} {groups:>7,} {1e6 * build / len(graph.nodes):>9.1f} "
                f"{t_fuse:>7.3f}s {t_cli:>7.3f}s {tvm_cells[0]} {tvm_cells[1]}"
                f"   {'':>7} {growth[0]:>6} {growth[1]:>6} {growth[2]:>6}",
                flush=True,
            )
            previous = (label, times)
    print(
        "\nbuild: Graph(...), which verifies every node, per op; fuse: fuse() alone (fpga mode);"
        "\nCLI: `hlsfuse fuse GRAPH.json --json` end to end in a fresh process (Python start-up included);"
        "\nTVM: relax.transform.FuseOps() alone on the same graph; growth: over the previous size"
        f"\nbest of {args.repeat} runs each; Python {sys.version.split()[0]}, {os.cpu_count()} cores"
    )
    if not with_tvm:
        print("TVM: skipped, `import tvm` fails here (pip install apache-tvm to compare)")
    else:
        import tvm

        print(f"TVM: {tvm.__version__}")


if __name__ == "__main__":
    main()
