"""A batch dimension is frames (hlsfuse/frontend/onnx/batch.py): a model exported for a batch (PyTorch's baked
size, a symbolic N) is built for one sample and a batch of inputs runs as that many frames; a model whose ops mix
the samples is refused naming the node; --input-shape overrides a shape; what memory cannot hold is refused
before it is allocated."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from cli_process import ROOT, cli_env
from tiers import need

onnx = need("onnx")
ort = need("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hlsfuse import from_onnx, save_graph  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.errors import HlsfuseError  # noqa: E402

FLOAT = TensorProto.FLOAT


def torch_mlp(batch, extra=(), out_shape=None, extra_inits=()):
    """Linear(16, 32) -> ReLU -> Linear(32, 1) -> Sigmoid as torch.onnx.export writes it (Gemm with transB,
    /fc1/Gemm-style names, producer 'pytorch'), traced with ``batch``; ``extra`` nodes follow, reading 'y'."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((32, 16)) * 0.3).astype(np.float32), "fc1.weight"),
             numpy_helper.from_array((rng.standard_normal(32) * 0.1).astype(np.float32), "fc1.bias"),
             numpy_helper.from_array((rng.standard_normal((1, 32)) * 0.3).astype(np.float32), "fc2.weight"),
             numpy_helper.from_array((rng.standard_normal(1) * 0.1).astype(np.float32), "fc2.bias"), *extra_inits]
    nodes = [helper.make_node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["h"], name="/fc1/Gemm", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="/relu/Relu"),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["g"], name="/fc2/Gemm", transB=1),
             helper.make_node("Sigmoid", ["g"], ["y" if extra else "output"], name="/Sigmoid"), *extra]
    graph = helper.make_graph(nodes, "main_graph", [helper.make_tensor_value_info("input", FLOAT, [batch, 16])],
                              [helper.make_tensor_value_info("output", FLOAT, out_shape or [batch, 1])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch",
                              producer_version="2.1.0")
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return proto


def _save(proto, path):
    onnx.save(proto, path)
    return str(path)


def test_a_batch_of_1000_is_a_one_sample_design_and_runs_1000_frames(tmp_path, capsys):
    model = _save(torch_mlp(1000), tmp_path / "mlp.onnx")
    graph = from_onnx(model)
    assert [i.type.shape for i in graph.inputs] == [(1, 16)] and graph.types["output"].shape == (1, 1)
    x = np.random.default_rng(1).uniform(-2, 2, (1000, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input=x)
    out = tmp_path / "out.npz"
    assert main(["run", model, "--inputs", str(tmp_path / "in.npz"), "-o", str(out)]) == 0
    assert "(1000 frames: a batch of 1000 samples)" in capsys.readouterr().out
    got = np.load(out)["output"]
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    assert got.shape == (1000, 1) and np.max(np.abs(got - want)) < 0.02
    assert main(["run", model, "--compare", "float"]) == 0  # the float side runs one sample too
    assert "onnxruntime runs the model only on its baked batch of 1000" in capsys.readouterr().out


@pytest.mark.parametrize("batch", ["batch_size", None])
def test_a_symbolic_or_unknown_batch_is_frames(batch):
    graph = from_onnx(torch_mlp(batch))
    assert [i.type.shape for i in graph.inputs] == [(1, 16)]


def test_a_baked_batch_in_a_reshape_becomes_one(tmp_path):
    shape = numpy_helper.from_array(np.array([1000, 4, 4], np.int64), "shape")
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    extra = [helper.make_node("Reshape", ["input", "shape"], ["sq"], name="/Reshape"),
             helper.make_node("ReduceSum", ["sq", "axes"], ["output"], name="/ReduceSum", keepdims=0)]
    proto = torch_mlp(1000, extra=[], out_shape=[1000, 1])
    proto.graph.node.extend(extra)
    proto.graph.initializer.extend([shape, axes])
    proto.graph.output.append(helper.make_tensor_value_info("output2", FLOAT, [1000, 4]))
    proto.graph.node[-1].output[0] = "output2"
    graph = from_onnx(proto, precision="float32")
    assert graph.types["output2"].shape == (1, 4)


def _mixing(node, inits=(), out_shape=(1, 1)):
    return torch_mlp(1000, extra=[node], out_shape=list(out_shape), extra_inits=inits)


def _axes(*values):
    return numpy_helper.from_array(np.array(values, np.int64), "axes")


@pytest.mark.parametrize("proto, name, why", [
    (lambda: _mixing(helper.make_node("ReduceSum", ["y", "axes"], ["output"], name="/ReduceSum"), [_axes(0)]),
     "/ReduceSum", "reduces over axis 0, the batch axis"),
    (lambda: _mixing(helper.make_node("Softmax", ["y"], ["output"], name="/Softmax", axis=0), (), (1000, 1)),
     "/Softmax", "works along axis 0, the batch axis"),
    (lambda: _mixing(helper.make_node("Transpose", ["y"], ["output"], name="/T", perm=[1, 0]), (), (1, 1000)),
     "/T", "moves the batch axis"),
    (lambda: _mixing(helper.make_node("MatMul", ["y", "y"], ["output"], name="/MatMul"), (), (1000, 1)),
     "/MatMul", "has a computed operand B with the batch on a matrix axis"),
    (lambda: _mixing(helper.make_node("Concat", ["y", "y"], ["output"], name="/Concat", axis=0), (), (2000, 1)),
     "/Concat", "works along axis 0, the batch axis"),
])
def test_a_model_that_mixes_the_batch_is_refused_naming_the_node(tmp_path, capsys, proto, name, why):
    model = _save(proto(), tmp_path / "mix.onnx")
    assert main(["check", model]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: {model}: node '{name}' (") and why in err and err.count("\n") == 1
    assert main(["check", model, "--input-shape", "input=1,16"]) in (0, 2)  # one sample: the model as it is


def test_input_shape_overrides_and_is_checked(tmp_path, capsys):
    model = _save(torch_mlp(1000, extra=[helper.make_node("ReduceSum", ["y", "axes"], ["output"], name="/R")],
                            out_shape=[1, 1], extra_inits=[_axes(0)]), tmp_path / "mix.onnx")
    assert main(["check", model, "--input-shape", "input=1,16"]) == 0
    assert "  input  fixed<16,6,RND,SAT>[1,16]" in capsys.readouterr().out
    assert main(["check", model, "--input-shape", "x=1,16"]) == 2
    assert capsys.readouterr().err == "hlsfuse: error: --input-shape: the model has no input 'x' (inputs: input)\n"
    with pytest.raises(SystemExit) as exited:  # argparse's refusal
        main(["check", model, "--input-shape", "input=1,0"])
    assert exited.value.code == 2
    assert "expected NAME=D0,D1,... with whole dims of at least 1" in capsys.readouterr().err
    graph = save_graph(from_onnx(torch_mlp(1)), tmp_path / "g.json")
    assert main(["check", str(graph), "--input-shape", "input=1,16"]) == 2
    assert "--input-shape applies to ONNX models (.onnx)" in capsys.readouterr().err


def _limited(*args, limit=2 << 30):
    """``hlsfuse ARGS`` in a child process that may map at most ``limit`` bytes."""
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
            "from hlsfuse.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], env=cli_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_baked_dataset_batch_compiles_in_little_memory(tmp_path):
    model = _save(torch_mlp(789444), tmp_path / "baked.onnx")
    done = _limited("compile", model, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "ports: in input_ (tensor 'input'): fixed<16,6,RND,SAT>[1,16]" in done.stdout


def test_what_memory_cannot_hold_is_refused_naming_the_tensor(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="/Relu")], "big",
                              [helper.make_tensor_value_info("x", FLOAT, [1, 64, 2048, 2048])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 64, 2048, 2048])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    proto.ir_version = 8
    model = _save(proto, tmp_path / "big.onnx")
    done = _limited("compile", model, "-o", tmp_path / "out")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("hlsfuse: error: compile: graph 'big' needs about ")
    assert "its largest tensor is " in done.stderr and "(268,435,456 elements)" in done.stderr
    assert not (tmp_path / "out").exists()


def test_frames_of_different_batch_sizes_are_refused(tmp_path):
    from hlsfuse.frontend.onnx import split_frames

    graph = from_onnx(torch_mlp(4))
    assert len(split_frames(graph, {"input": np.zeros((4, 16))})) == 4
    assert len(split_frames(graph, {"input": np.zeros((1, 16))})) == 1
    with pytest.raises(HlsfuseError):
        two = from_onnx(helper_two_inputs())
        split_frames(two, {"a": np.zeros((3, 4)), "b": np.zeros((2, 4))})


def helper_two_inputs():
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "two",
                              [helper.make_tensor_value_info(n, FLOAT, ["N", 4]) for n in "ab"],
                              [helper.make_tensor_value_info("y", FLOAT, ["N", 4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto
