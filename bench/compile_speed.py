"""Compile time and C simulation time of the examples, beside hls4ml's compile() of the same networks.

For each example (mlp, cnn, residual, resnet8) this measures:
  compile   hlsfuse.compile(): fuse, lower and emit the HLS project (best of --repeat)
  g++       building the project's C simulation (once, into a fresh cache, so the build is real)
  csim      running the built testbench and comparing with the golden outputs (best of --repeat)
  ref       the baseline: one run of the numpy reference interpreter on the same input (best of --repeat)
and prints each as a ratio to the baseline, so the numbers compare across machines.

If `import hls4ml` works, the same network is also handed to hls4ml (Vivado backend, io_stream,
ap_fixed<16,6>, reuse factor 1): it is described as the architecture dict Keras would serialize and
parsed by hls4ml's own Keras-v2 layer handlers, so neither TensorFlow nor PyTorch is needed. Its
ModelGraph construction (convert) and compile() (write the project, build it with g++) are timed
once each; hls4ml's compile() is the counterpart of hlsfuse's compile plus g++ build.

    python bench/compile_speed.py [--repeat N] [--examples mlp,cnn,...]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from hlsfuse import load_graph, reference
from hlsfuse.compile import compile
from hlsfuse.sim import csim
from hlsfuse.sim.csim import build

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = ("mlp", "cnn", "residual", "resnet8")


def best_time(fn, repeat: int):
    """(best wall time, last result) of ``repeat`` calls."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def once(fn):
    return best_time(fn, 1)


# --------------------------------------------------------------------------
# hlsfuse
# --------------------------------------------------------------------------


def bench_hlsfuse(name: str, work: Path, repeat: int) -> dict:
    graph = load_graph(EXAMPLES / f"{name}.json")
    inputs = reference.random_inputs(graph, seed=0)
    t_ref, _ = best_time(lambda: reference.run(graph, inputs), repeat)
    t_compile, design = best_time(lambda: compile(graph), repeat)
    out = design.write(work / name)
    t_build, (_, built) = once(lambda: build(out / "hls", design.plan.top))
    assert built, "the fresh cache already held this binary"
    t_csim, result = best_time(lambda: csim(out), repeat)
    return {
        "graph": graph,
        "nodes": len(graph.nodes),
        "stages": len(design.plan.stages),
        "ref": t_ref,
        "compile": t_compile,
        "build": t_build,
        "csim": t_csim,
        "verdict": "PASS" if result.passed else "FAIL",
        "compared": result.compared,
    }


# --------------------------------------------------------------------------
# hls4ml (optional)
# --------------------------------------------------------------------------


def _consumers(graph) -> dict[str, list]:
    users: dict[str, list] = {}
    for node in graph.nodes:
        for src in node.inputs:
            users.setdefault(src, []).append(node)
    return users


def keras_architecture(graph) -> tuple[dict, dict]:
    """The graph as a Keras-v2 functional model dict and its weights {layer: {'kernel': .., 'bias': ..}}.

    conv2d/dense followed by a bias_add become one Conv2D/Dense with bias (Keras has no separate bias
    layer); padding [0,0,0,0] is 'valid', any other 'same' (Keras pads a stride-2 3x3 conv by 0 and 1
    where the examples pad by 1 and 1: the same shapes and work, not the same numbers).
    """
    users = _consumers(graph)
    alias = {}  # hlsfuse tensor -> Keras layer producing it
    layers, weights = [], {}

    def layer(cls, name, inputs, **config):
        inbound = [[[alias.get(t, t), 0, 0, {}] for t in inputs]] if inputs else []
        layers.append({"class_name": cls, "config": {"name": name, **config}, "inbound_nodes": inbound})

    for inp in graph.inputs:
        layer("InputLayer", inp.name, [], batch_input_shape=[None, *inp.type.shape[1:]], dtype="float32")
    fused_bias = set()
    for node in graph.nodes:
        if node.name in fused_bias:
            continue
        if node.op in ("conv2d", "dense"):
            kernel = graph.constant_map[node.inputs[1]].values
            nexts = users.get(node.name, [])
            bias_node = nexts[0] if len(nexts) == 1 and nexts[0].op == "bias_add" else None
            if bias_node is not None:
                bias = graph.constant_map[bias_node.inputs[1]].values
                fused_bias.add(bias_node.name)
                alias[bias_node.name] = node.name
            else:
                bias = np.zeros(kernel.shape[-1] if node.op == "conv2d" else kernel.shape[0])
            if node.op == "conv2d":
                attrs = node.attrs
                padding = "valid" if not any(attrs.get("padding", [0, 0, 0, 0])) else "same"
                layer("Conv2D", node.name, node.inputs[:1], filters=kernel.shape[3], kernel_size=list(kernel.shape[:2]),
                      strides=list(attrs.get("strides", [1, 1])), padding=padding, activation="linear")
                weights[node.name] = {"kernel": kernel, "bias": bias}
            else:
                layer("Dense", node.name, node.inputs[:1], units=kernel.shape[0], activation="linear")
                weights[node.name] = {"kernel": kernel.T, "bias": bias}  # hlsfuse keeps (out, in), Keras (in, out)
        elif node.op == "relu":
            layer("Activation", node.name, node.inputs, activation="relu")
        elif node.op == "add":
            layer("Add", node.name, node.inputs)
        elif node.op == "max_pool2d":
            size = list(node.attrs["pool_size"])
            layer("MaxPooling2D", node.name, node.inputs, pool_size=size, strides=list(node.attrs.get("strides", size)),
                  padding="valid")
        elif node.op == "global_avg_pool":
            layer("GlobalAveragePooling2D", node.name, node.inputs, keepdims=True)
        elif node.op == "flatten":
            layer("Flatten", node.name, node.inputs)
        else:
            raise ValueError(f"node '{node.name}' ({node.op}): no hls4ml layer for this op in the benchmark")
    (out,) = graph.outputs
    arch = {
        "class_name": "Functional",
        "config": {
            "name": graph.name,
            "layers": layers,
            "input_layers": [[i.name, 0, 0] for i in graph.inputs],
            "output_layers": [[alias.get(out, out), 0, 0]],
        },
    }
    return arch, weights


def bench_hls4ml(graph, work: Path) -> dict:
    from hls4ml.converters.keras_v2_to_hls import KerasReader, parse_keras_model
    from hls4ml.model import ModelGraph
    from hls4ml.utils.config import create_config

    arch, weights = keras_architecture(graph)

    class Reader(KerasReader):
        def get_weights_data(self, layer_name, var_name):
            return weights.get(layer_name, {}).get(var_name)

    def convert():
        layer_list, inputs, outputs, _ = parse_keras_model(arch, Reader())
        config = create_config(output_dir=str(work / f"hls4ml_{graph.name}"), project_name=graph.name,
                               backend="Vivado", io_type="io_stream")
        config["HLSConfig"] = {"Model": {"Precision": "ap_fixed<16,6>", "ReuseFactor": 1, "Strategy": "Latency"}}
        return ModelGraph.from_layer_list(config, layer_list, inputs, outputs)

    t_convert, model = once(convert)
    t_compile, _ = once(model.compile)
    return {"convert": t_convert, "compile": t_compile}


def hls4ml_status() -> str | None:
    """None when hls4ml and the parts of it this benchmark uses import, else why not."""
    try:
        import hls4ml  # noqa: F401
        from hls4ml.converters.keras_v2_to_hls import parse_keras_model  # noqa: F401  (needs h5py)
    except Exception as exc:  # hls4ml's import runs its whole package; any failure means "not usable here"
        return f"{type(exc).__name__}: {exc}"
    return None


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def report(results: dict, repeat: int, h4_reason: str | None) -> None:
    print(f"hlsfuse: compile(), g++ build of the C simulation (fresh cache) and csim run; best of {repeat} except g++")
    print("ratios are to 'ref', one run of the numpy reference interpreter on the same input, timed in the same run\n")
    print(f"{'example':9} {'nodes':>5} {'stages':>6} {'ref ms':>8} {'compile ms':>10} {'g++ s':>7} {'csim ms':>8}"
          f"  {'compile/ref':>11} {'g++/ref':>8} {'csim/ref':>8}  verdict")
    for name, r in results.items():
        times = f"{r['ref'] * 1e3:8.2f} {r['compile'] * 1e3:10.1f} {r['build']:7.2f} {r['csim'] * 1e3:8.1f}"
        ratios = f"{r['compile'] / r['ref']:11.1f} {r['build'] / r['ref']:8.0f} {r['csim'] / r['ref']:8.1f}"
        print(f"{name:9} {r['nodes']:5d} {r['stages']:6d} {times}  {ratios}  {r['verdict']} ({r['compared']} elements)")
    print()
    if h4_reason is not None:
        print(f"hls4ml: skipped, it does not import here ({h4_reason})")
        return
    print("hls4ml (Vivado backend, io_stream, ap_fixed<16,6>, reuse 1): ModelGraph construction and compile()")
    print(f"{'example':9} {'convert s':>9} {'compile s':>9}  {'compile/ref':>11}  compile / hlsfuse's (compile + g++)")
    for name, r in results.items():
        h = r["hls4ml"]
        ratio = h["compile"] / (r["compile"] + r["build"])
        print(f"{name:9} {h['convert']:9.3f} {h['compile']:9.2f}  {h['compile'] / r['ref']:11.0f}  {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of the repeated measurements (default 3)")
    parser.add_argument("--examples", default=",".join(NAMES), help=f"comma-separated (default {','.join(NAMES)})")
    args = parser.parse_args()
    names = [n for n in args.examples.split(",") if n]
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"--examples: no example named {', '.join(unknown)} (known: {', '.join(NAMES)})")

    with tempfile.TemporaryDirectory(prefix="hlsfuse-bench-") as tmp:
        work = Path(tmp)
        # a fresh csim cache, so that every g++ build below is a real one
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        results = {}
        for name in names:
            results[name] = bench_hlsfuse(name, work, args.repeat)
        h4_reason = hls4ml_status()
        if h4_reason is None:
            for name in names:
                results[name]["hls4ml"] = bench_hls4ml(results[name]["graph"], work)
    report(results, args.repeat, h4_reason)


if __name__ == "__main__":
    main()
