"""Helpers for the ONNX tests: small models written with onnx.helper (as PyTorch exports
them), onnxruntime as the reference, and hlsfuse's reference on the imported graph."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, shape_inference

from hlsfuse import reference
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout
from hlsfuse.frontend.onnx.batch import split_frames

FLOAT = TensorProto.FLOAT
node = helper.make_node


def model(nodes, inputs, initializers=None, outputs=None, opset=13, name="model", output_shapes=None):
    """A checked model. ``inputs``: {name: shape}; ``outputs``: names (default: the last
    node's first output), shapes found by ONNX shape inference unless given."""
    outputs = outputs or [nodes[-1].output[0]]
    shapes = output_shapes or {}
    inits = []
    for key, value in (initializers or {}).items():
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        inits.append(numpy_helper.from_array(array, key))
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(k, FLOAT, list(s)) for k, s in inputs.items()],
        [helper.make_tensor_value_info(o, FLOAT, shapes.get(o)) for o in outputs],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tests")
    proto.ir_version = 10 if opset >= 21 else 8  # what onnxruntime accepts for these opsets
    proto = shape_inference.infer_shapes(proto, data_prop=True)
    unknown = [o for o in proto.graph.output if not o.type.tensor_type.HasField("shape")]
    if unknown:  # shape inference gave up (e.g. old Slice): take the shape onnxruntime computes
        got = ort_run(proto, feeds(proto))
        for o in unknown:
            o.CopyFrom(helper.make_tensor_value_info(o.name, FLOAT, list(got[o.name].shape)))
    onnx.checker.check_model(proto)
    return proto


def feeds(proto, seed=0, scale=1.0):
    """Seeded normal inputs in ONNX layout."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in proto.graph.initializer}
    out = {}
    for value in proto.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        out[value.name] = np.asarray(rng.standard_normal(shape) * scale, dtype=np.float32)  # an array even for []
    return out


def ort_run(proto, inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # no warnings about initializers a test model leaves unused
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def hls_run(graph, inputs):
    """The reference's outputs; a batch of inputs for a model built for one sample runs as that many frames."""
    runs = [reference.run(graph, to_graph_layout(graph, frame)) for frame in split_frames(graph, inputs)]
    return {name: np.concatenate([r[name] for r in runs]) if len(runs) > 1 else runs[0][name] for name in runs[0]}


def errors(proto, precision="float32", seed=0, scale=1.0, graph=None):
    """(graph, {output: max |hlsfuse - onnxruntime|}, onnxruntime outputs) on seeded inputs."""
    graph = graph if graph is not None else from_onnx(proto, precision=precision)
    inputs = feeds(proto, seed, scale)
    expected = ort_run(proto, inputs)
    got = hls_run(graph, inputs)
    assert set(got) == set(expected), (sorted(got), sorted(expected))
    diffs = {}
    for name, want in expected.items():
        assert got[name].shape == want.shape, (name, got[name].shape, want.shape)
        diffs[name] = float(np.max(np.abs(got[name].astype(np.float64) - want)))
    return graph, diffs, expected


def weights(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)
