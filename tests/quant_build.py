"""Quantized models written with onnx.helper for the QONNX and QDQ tests: QONNX ``Quant`` nodes
(domain qonnx.custom_op.general) run by the ``qonnx`` package, QDQ pairs run by onnxruntime."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QONNX = "qonnx.custom_op.general"
FLOAT = TensorProto.FLOAT


class Net:
    """Nodes and initializers of a model being written; ``quant`` and ``qdq`` add quantizers."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, np.ndarray] = {}

    def const(self, name: str, value) -> str:
        array = np.asarray(value)
        self.inits[name] = array.astype(np.float32) if array.dtype.kind == "f" else array
        return name

    def op(self, op: str, inputs, output: str, domain: str = "", **attrs) -> str:
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output, domain=domain, **attrs))
        return output

    def quant(self, x: str, out: str, scale, bits: int, signed=1, narrow=0, mode="ROUND", zero=0.0) -> str:
        """A QONNX Quant of ``x`` (a tensor or an initializer) with ``scale`` (per tensor or per channel)."""
        inputs = [x, self.const(f"{out}_scale", np.asarray(scale, np.float32)),
                  self.const(f"{out}_zero", np.float32(zero)), self.const(f"{out}_bits", np.float32(bits))]
        return self.op("Quant", inputs, out, QONNX, signed=signed, narrow=narrow, rounding_mode=mode)

    def bipolar(self, x: str, out: str, scale) -> str:
        return self.op("BipolarQuant", [x, self.const(f"{out}_scale", np.asarray(scale, np.float32))], out, QONNX)

    def qdq(self, x: str, out: str, scale, zero=None, kind=np.int8, axis=None) -> str:
        """QuantizeLinear -> DequantizeLinear of ``x`` (a constant ``x`` is stored as the integers)."""
        attrs = {} if axis is None else {"axis": axis}
        s = np.asarray(scale, np.float64)
        z = np.asarray(0 if zero is None else zero, np.int64)
        z = np.full(s.shape, z) if s.ndim == 1 else z  # per axis: one zero point per scale
        scale_name = self.const(f"{out}_scale", s.astype(np.float32))
        zero_name = self.const(f"{out}_zero", z.astype(kind))
        if x in self.inits:  # a weight: its integers, as quantize_static stores them
            real = self.inits.pop(x)
            if s.ndim == 1:
                shape = [1] * real.ndim
                shape[axis if axis is not None else 1] = s.size
                s, z = s.reshape(shape), z.reshape(shape)
            info = np.iinfo(kind)
            source = self.const(f"{out}_int", np.clip(np.round(real / s) + z, info.min, info.max).astype(kind))
        else:
            source = self.op("QuantizeLinear", [x, scale_name, zero_name], f"{out}_q", **attrs)
        return self.op("DequantizeLinear", [source, scale_name, zero_name], out, **attrs)

    def model(self, inputs: dict, output: str, shape, opset: int = 13, qonnx: bool = True) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, "qmodel",
            [helper.make_tensor_value_info(k, FLOAT, list(s)) for k, s in inputs.items()],
            [helper.make_tensor_value_info(output, FLOAT, list(shape))],
            [numpy_helper.from_array(v, k) for k, v in self.inits.items()],
        )
        opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(QONNX, 1)] if qonnx else [])
        proto = helper.make_model(graph, opset_imports=opsets, producer_name="tests")
        proto.ir_version = 8
        return proto


def weights(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def qonnx_mlp(w_bits=4, a_bits=4, seed=0, mode="ROUND", per_channel=True) -> onnx.ModelProto:
    """x[1,16] -> Quant(a) -> MatMul(Quant(w) per column) -> Relu -> Quant(a, unsigned) -> MatMul -> Quant."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.quant("x", "xq", 2.0 ** -3, a_bits, mode=mode)
    s1 = 2.0 ** -rng.integers(2, 5, size=(1, 12)) if per_channel else 2.0 ** -3
    w1 = n.quant(n.const("w1", weights(rng, (16, 12), 0.3)), "w1q", s1, w_bits, narrow=1)
    h = n.op("MatMul", [x, w1], "h")
    b1 = n.quant(n.const("b1", weights(rng, (12,), 0.5)), "b1q", 2.0 ** -8, 16)
    h = n.op("Add", [h, b1], "hb")
    r = n.op("Relu", [h], "r")
    rq = n.quant(r, "rq", 2.0 ** -2, a_bits, signed=0, mode=mode)
    s2 = 2.0 ** -rng.integers(2, 5, size=(1, 5)) if per_channel else 2.0 ** -3
    w2 = n.quant(n.const("w2", weights(rng, (12, 5), 0.3)), "w2q", s2, w_bits)
    y = n.op("MatMul", [rq, w2], "y")
    n.quant(y, "yq", 2.0 ** -4, 8)
    return n.model({"x": [1, 16]}, "yq", [1, 5])


def qonnx_cnn(w_bits=4, a_bits=4, seed=0, mode="ROUND") -> onnx.ModelProto:
    """x[1,2,6,6] -> Quant -> Conv 3x3 (per-channel Quant weights) -> Relu -> Quant(unsigned) -> MaxPool
    -> Conv 3x3 -> GlobalAveragePool (4 positions) -> Flatten -> Gemm -> Quant."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.quant("x", "xq", 2.0 ** -3, a_bits, mode=mode)
    s1 = 2.0 ** -rng.integers(2, 5, size=(4, 1, 1, 1))
    w1 = n.quant(n.const("w1", weights(rng, (4, 2, 3, 3), 0.4)), "w1q", s1, w_bits)
    c = n.op("Conv", [x, w1], "c1", pads=[1, 1, 1, 1])
    r = n.op("Relu", [c], "r1")
    rq = n.quant(r, "r1q", 2.0 ** -2, a_bits, signed=0, mode=mode)
    p = n.op("MaxPool", [rq], "p1", kernel_shape=[2, 2], strides=[2, 2])
    w2 = n.quant(n.const("w2", weights(rng, (6, 4, 2, 2), 0.4)), "w2q", 2.0 ** -3, w_bits, narrow=1)
    c2 = n.op("Conv", [p, w2], "c2")
    c2q = n.quant(c2, "c2q", 2.0 ** -2, a_bits + 2, mode=mode)
    g = n.op("GlobalAveragePool", [c2q], "g")
    f = n.op("Flatten", [g], "f")
    w3 = n.quant(n.const("w3", weights(rng, (3, 6), 0.4)), "w3q", 2.0 ** -rng.integers(2, 5, size=(3, 1)), w_bits)
    y = n.op("Gemm", [f, w3], "y", transB=1)
    n.quant(y, "yq", 2.0 ** -5, 8)
    return n.model({"x": [1, 2, 6, 6]}, "yq", [1, 3])


def qonnx_run(proto: onnx.ModelProto, inputs: dict) -> dict:
    """qonnx's own execution of a QONNX model (float32, numpy for the custom ops)."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_shapes import InferShapes

    wrapper = ModelWrapper(proto).transform(InferShapes())
    out = wrapper.graph.output[0].name
    return {out: execute_onnx(wrapper, dict(inputs))[out]}


def ort_run(proto: onnx.ModelProto, inputs: dict) -> dict:
    """onnxruntime on the QDQ float graph as written (graph optimizations off: no fused integer kernels)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(inputs))))


# --------------------------------------------------------------------------
# QDQ models
# --------------------------------------------------------------------------


def qdq_mlp(seed=0, kind=np.int8, zero=0) -> onnx.ModelProto:
    """x[1,16] -> QDQ(int8 or uint8 with ``zero``) -> MatMul(per-axis int8 weights) -> Add(int32 bias) -> Relu
    -> QDQ(uint8) -> MatMul(per-tensor weights) -> QDQ(int8)."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.qdq("x", "xq", 2.0 ** -4, zero, kind)
    w1 = n.qdq(n.const("w1", weights(rng, (16, 12), 0.3)), "w1q", 2.0 ** -rng.integers(5, 8, size=12), axis=1)
    b1 = n.qdq(n.const("b1", weights(rng, (12,), 0.5)), "b1q", 2.0 ** -10, kind=np.int32)
    h = n.op("Relu", [n.op("Add", [n.op("MatMul", [x, w1], "h"), b1], "hb")], "r")
    rq = n.qdq(h, "rq", 2.0 ** -5, kind=np.uint8)
    w2 = n.qdq(n.const("w2", weights(rng, (12, 5), 0.3)), "w2q", 2.0 ** -6)
    n.qdq(n.op("MatMul", [rq, w2], "y"), "yq", 2.0 ** -5)
    return n.model({"x": [1, 16]}, "yq", [1, 5], qonnx=False)


def qdq_cnn(seed=0) -> onnx.ModelProto:
    """x[1,2,6,6] -> QDQ(uint8, zero point 128) -> Conv 3x3 (per-axis int8, int32 bias) -> Relu -> QDQ(uint8)
    -> MaxPool -> Conv 2x2 -> QDQ(int8) -> GlobalAveragePool -> Flatten -> Gemm -> QDQ(int8)."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.qdq("x", "xq", 2.0 ** -5, 128, np.uint8)
    w1 = n.qdq(n.const("w1", weights(rng, (4, 2, 3, 3), 0.4)), "w1q", 2.0 ** -rng.integers(4, 7, size=4), axis=0)
    b1 = n.qdq(n.const("b1", weights(rng, (4,), 0.3)), "b1q", 2.0 ** -12, kind=np.int32)
    r = n.op("Relu", [n.op("Conv", [x, w1, b1], "c1", pads=[1, 1, 1, 1])], "r1")
    p = n.op("MaxPool", [n.qdq(r, "r1q", 2.0 ** -5, kind=np.uint8)], "p1", kernel_shape=[2, 2], strides=[2, 2])
    w2 = n.qdq(n.const("w2", weights(rng, (6, 4, 2, 2), 0.4)), "w2q", 2.0 ** -6)
    c2 = n.qdq(n.op("Conv", [p, w2], "c2"), "c2q", 2.0 ** -4)
    f = n.op("Flatten", [n.op("GlobalAveragePool", [c2], "g")], "f")
    w3 = n.qdq(n.const("w3", weights(rng, (3, 6), 0.4)), "w3q", 2.0 ** -6)
    n.qdq(n.op("Gemm", [f, w3], "y", transB=1), "yq", 2.0 ** -4)
    return n.model({"x": [1, 2, 6, 6]}, "yq", [1, 3], qonnx=False)


def static_quantized(proto: onnx.ModelProto, folder, samples: list[dict], per_channel=True) -> onnx.ModelProto:
    """``proto`` pre-processed and quantized by onnxruntime (QDQ, uint8 activations, int8 weights, MinMax)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.frames = iter(samples)

        def get_next(self):
            return next(self.frames, None)

    from onnxruntime.quantization.shape_inference import quant_pre_process

    src, ready, dst = folder / "float.onnx", folder / "ready.onnx", folder / "qdq.onnx"
    onnx.save(proto, src)
    quant_pre_process(str(src), str(ready))  # as onnxruntime advises: batch norms folded into the convolutions
    quantize_static(str(ready), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return onnx.load(dst)


def pow2_scales(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A QDQ model with every scale rounded to the nearest power of two (a bias's: its layer's input scale times its
    weight scale, which fused integer kernels assume); the integer weights are quantized again from their real
    values, as if quantize_static had chosen those scales."""
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    inits = {t.name: t for t in proto.graph.initializer}
    arrays = {name: numpy_helper.to_array(t) for name, t in inits.items()}
    snapped = {}
    for node in proto.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            s = arrays[node.input[1]].astype(np.float64)
            snapped[node.input[1]] = (s, np.ldexp(1.0, np.round(np.log2(s)).astype(np.int64)))
    made = {n.output[0]: n for n in proto.graph.node if n.op_type == "DequantizeLinear"}
    for node in proto.graph.node:  # a bias's scale stays the product of its layer's input and weight scales
        if node.op_type in ("Conv", "Gemm") and len(node.input) > 2 and all(i in made for i in node.input[:3]):
            x, w, b = (made[i].input[1] for i in node.input[:3])
            snapped[b] = (snapped[b][0], snapped[x][1] * snapped[w][1])
    for node in proto.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] in arrays:
            ints = arrays[node.input[0]]
            zero = arrays[node.input[2]].astype(np.int64) if len(node.input) > 2 and node.input[2] else 0
            old, new = snapped[node.input[1]]
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            if old.ndim == 1 and old.size > 1:
                shape = [1] * ints.ndim
                shape[axis] = old.size
                old, new = old.reshape(shape), new.reshape(shape)
                zero = np.reshape(zero, shape) if np.ndim(zero) else zero
            info = np.iinfo(ints.dtype)
            again = np.clip(np.round((ints.astype(np.int64) - zero) * old / new) + zero, info.min, info.max)
            inits[node.input[0]].CopyFrom(numpy_helper.from_array(again.astype(ints.dtype), node.input[0]))
    for name, (_, new) in snapped.items():
        inits[name].CopyFrom(numpy_helper.from_array(new.astype(np.float32), name))
    return proto


def frames(proto: onnx.ModelProto, count: int, scale=2.0, seed=0) -> list[dict]:
    """``count`` seeded frames of normal values times ``scale`` for the model's one input (ONNX layout)."""
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return [{proto.graph.input[0].name: (rng.standard_normal(shape) * scale).astype(np.float32)}
            for _ in range(count)]


def compiled(tmp_path, proto: onnx.ModelProto, target: str, matches):
    """``proto`` compiled by the command line into tmp_path/out (``--target``), its graph, and 3 frames in the
    graph's layout, on which ``matches(proto, graph, onnx_frames)`` has checked the reference against the model's
    own runtime (the simulators are then compared with the reference)."""
    from hlsfuse.cli import main
    from hlsfuse.frontend.onnx import from_onnx, to_graph_layout

    path = tmp_path / "model.onnx"
    onnx.save(proto, path)
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compile", str(path), "-o", str(out), "--target", target]) == 0
    graph = from_onnx(proto)
    inputs = frames(proto, 3, seed=11)
    matches(proto, graph, inputs)
    return out, graph, [to_graph_layout(graph, f) for f in inputs]


# --------------------------------------------------------------------------
# Brevitas-style exports: float scales, float biases and BatchNorm between the quantizers
# --------------------------------------------------------------------------


def float_scale(rng, shape=()) -> np.ndarray:
    """Scales as training leaves them: any float32, no power of two."""
    return (2.0 ** rng.uniform(-6, 1, size=shape)).astype(np.float32)


def batchnorm(n: Net, rng, x: str, out: str, channels: int) -> str:
    gamma = rng.uniform(0.5, 1.5, channels) * rng.choice([-1, 1], channels, p=[0.15, 0.85])
    params = [n.const(f"{out}_{k}", v) for k, v in (("gamma", gamma), ("beta", rng.normal(0, 0.5, channels)),
                                                    ("mean", rng.normal(0, 1, channels)),
                                                    ("var", rng.uniform(0.2, 2.0, channels)))]
    return n.op("BatchNormalization", [x] + params, out, epsilon=1e-3)


def activation(n: Net, rng, x: str, out: str, bits: int, bipolar: bool, relu: bool, per_channel=0) -> str:
    if bipolar:
        return n.bipolar(x, out, float_scale(rng))
    if relu:
        x = n.op("Relu", [x], f"{out}_relu")
    # per channel: one float scale times powers of two (a float per channel has no integer ratio to its neighbours)
    scale = float_scale(rng) * 2.0 ** -rng.integers(0, 4, (1, per_channel)) if per_channel else float_scale(rng)
    return n.quant(x, out, scale, bits, signed=0 if relu else 1, narrow=int(rng.integers(0, 2)) if not relu else 0,
                   mode=str(rng.choice(["ROUND", "FLOOR", "DOWN", "HALF_UP", "HALF_DOWN", "CEIL"])))


def brevitas_mlp(seed=0, w_bits=4, a_bits=4, widths=(20, 16, 12, 5), bipolar=False, bn=True,
                 output_quant=True, per_channel_acts=False) -> onnx.ModelProto:
    """QuantIdentity -> [QuantLinear (per-output-channel float weight scales, float bias) -> BatchNorm1d ->
    QuantReLU (or a bipolar / signed quantizer)] x N -> QuantLinear -> Mul (float) -> output Quant, as Brevitas
    exports an MLP (TFC, the keyword-spotting and intrusion-detection MLPs)."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.quant("x", "xq", float_scale(rng), a_bits if not bipolar else 8)
    for i, (k, m) in enumerate(zip(widths[:-1], widths[1:])):
        scale = float_scale(rng, (1, m)) / 4
        w = n.bipolar(n.const(f"w{i}", weights(rng, (k, m), 1.0)), f"w{i}q", scale) if bipolar else n.quant(
            n.const(f"w{i}", weights(rng, (k, m), 1.0)), f"w{i}q", scale, w_bits, narrow=1)
        h = n.op("MatMul", [x, w], f"h{i}")
        if i < len(widths) - 2:
            h = n.op("Add", [h, n.const(f"b{i}", rng.normal(0, 0.3, m))], f"hb{i}")
            if bn:
                h = batchnorm(n, rng, h, f"bn{i}", m)
            x = activation(n, rng, h, f"a{i}", a_bits, bipolar, relu=i % 2 == 0, per_channel=m * per_channel_acts)
        else:
            x = n.op("Mul", [h, n.const("out_scale", float_scale(rng))], "logits")
    if output_quant:
        x = n.quant(x, "y", float_scale(rng), 8)
    return n.model({"x": [1, widths[0]]}, x, [1, widths[-1]])


def brevitas_cnn(seed=0, w_bits=4, a_bits=4) -> onnx.ModelProto:
    """QuantIdentity -> QuantConv (per-channel float scales, no bias) -> BatchNorm2d -> QuantReLU -> MaxPool ->
    QuantConv -> BatchNorm2d -> QuantReLU -> GlobalAveragePool -> Flatten -> QuantLinear -> output Quant."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.quant("x", "xq", float_scale(rng), a_bits)
    w1 = n.quant(n.const("w1", weights(rng, (4, 2, 3, 3), 1.0)), "w1q", float_scale(rng, (4, 1, 1, 1)) / 4, w_bits,
                 narrow=1)
    every = {"strides": [1, 1], "dilations": [1, 1], "group": 1}  # torch writes every attribute
    c = n.op("Conv", [x, w1], "c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], **every)
    c = batchnorm(n, rng, c, "bn1", 4)
    r = activation(n, rng, c, "a1", a_bits, False, relu=True)
    p = n.op("MaxPool", [r], "p1", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    w2 = n.quant(n.const("w2", weights(rng, (6, 4, 2, 2), 1.0)), "w2q", float_scale(rng, (6, 1, 1, 1)) / 4, w_bits)
    c2 = n.op("Conv", [p, w2], "c2", kernel_shape=[2, 2], pads=[0, 0, 0, 0], **every)
    c2 = batchnorm(n, rng, c2, "bn2", 6)
    r2 = activation(n, rng, c2, "a2", a_bits, False, relu=True)
    g = n.op("GlobalAveragePool", [r2], "g")
    f = n.op("Flatten", [g], "f")
    w3 = n.quant(n.const("w3", weights(rng, (3, 6), 1.0)), "w3q", float_scale(rng, (3, 1)) / 4, w_bits)
    y = n.op("Gemm", [f, w3], "z", transB=1)
    n.quant(y, "y", float_scale(rng), 8)
    return n.model({"x": [1, 2, 6, 6]}, "y", [1, 3])


def grid_frames(proto: onnx.ModelProto, count: int, seed=0) -> list[dict]:
    """``count`` frames of values on the input quantizer's grid (its scale times integers of its range), as
    qonnx's users feed a quantized model."""
    info = proto.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    node = next(nd for nd in proto.graph.node if info.name in nd.input)
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    scale = np.float32(inits[node.input[1]])
    bits = int(inits[node.input[3]]) if len(node.input) > 3 else 1
    rng = np.random.default_rng(seed)
    half = 1 << (bits - 1)
    return [{info.name: (rng.integers(-half, half, size=shape) * scale).astype(np.float32)} for _ in range(count)]


def qonnx_resnet8(seed=0, bits=8) -> onnx.ModelProto:
    """examples/resnet8.py's ResNet-8 (stem, three residual stages of 16, 32 and 64 channels, the second and third
    downsampling with a 1x1 projection, global average pool, a 10-way dense) as QONNX with ``bits``-bit weights and
    activations and power-of-two scales, as a Brevitas model with its batch norms folded exports it (NCHW): the
    image Quant, per-tensor weight Quants, float biases quantized to 16 bits, a Quant after every ReLU and after
    each residual sum."""
    rng = np.random.default_rng(seed)
    n = Net()
    act, wscale = 2.0 ** -4, 2.0 ** -(bits - 2)
    x = n.quant("x", "xq", 2.0 ** -(bits - 1), bits)  # the image in [-1, 1)

    def conv(h, name, c_in, c_out, k=3, stride=1):
        std = np.sqrt(2.0 / (k * k * c_in))
        w = n.quant(n.const(f"{name}_w", weights(rng, (c_out, c_in, k, k), std)), f"{name}_wq", wscale, bits,
                    narrow=1)
        bias = n.quant(n.const(f"{name}_b", weights(rng, (c_out,), 0.1)), f"{name}_bq", 2.0 ** -10, 16)
        pad = 1 if k == 3 else 0
        return n.op("Conv", [h, w, bias], name, kernel_shape=[k, k], strides=[stride, stride],
                    pads=[pad] * 4, dilations=[1, 1], group=1)

    def relu_quant(h, name):
        return n.quant(n.op("Relu", [h], f"{name}_relu"), name, act, bits, signed=0)

    h = relu_quant(conv(x, "stem", 3, 16), "stem_q")
    for i, (c_in, c_out, stride) in enumerate(((16, 16, 1), (16, 32, 2), (32, 64, 2)), start=1):
        main = relu_quant(conv(h, f"s{i}a", c_in, c_out, stride=stride), f"s{i}a_q")
        main = n.quant(conv(main, f"s{i}b", c_out, c_out), f"s{i}b_q", act, bits)
        skip = h if stride == 1 and c_in == c_out else n.quant(conv(h, f"s{i}p", c_in, c_out, k=1, stride=stride),
                                                                f"s{i}p_q", act, bits)
        h = relu_quant(n.op("Add", [main, skip], f"s{i}_add"), f"s{i}_q")
    h = n.op("Flatten", [n.op("GlobalAveragePool", [h], "gap")], "flat", axis=1)
    gap = n.quant(h, "flat_q", act, bits, signed=0)
    w = n.quant(n.const("fc_w", weights(rng, (64, 10), np.sqrt(2.0 / 64))), "fc_wq", wscale, bits, narrow=1)
    y = n.op("Add", [n.op("MatMul", [gap, w], "fc"), n.quant(n.const("fc_b", weights(rng, (10,), 0.1)), "fc_bq",
                                                                 2.0 ** -10, 16)], "logits")
    return n.model({"x": [1, 3, 32, 32]}, n.quant(y, "y", 2.0 ** -4, 16), [1, 10])

def tfc_w1a1(seed=0, widths=(784, 64, 64, 64, 10)) -> onnx.ModelProto:
    """FINN's TFC-W1A1 as Brevitas's bnn_pynq ``FC`` exports it to QONNX: the input's BipolarQuant (QuantIdentity of
    bit width 1; FINN feeds 2x - 1 of the image), per hidden layer a QuantLinear without bias of bipolar weights
    (scale 1), BatchNorm1d and a bipolar activation, then the last QuantLinear and TensorNorm (a scalar Mul by a
    float and Add of a float), a float output."""
    rng = np.random.default_rng(seed)
    n = Net()
    x = n.bipolar("x", "xq", 1.0)
    for i, (k, m) in enumerate(zip(widths[:-1], widths[1:])):
        w = n.bipolar(n.const(f"w{i}", weights(rng, (k, m), 1.0)), f"w{i}q", 1.0)
        h = n.op("MatMul", [x, w], f"h{i}")
        if i < len(widths) - 2:
            x = n.bipolar(batchnorm(n, rng, h, f"bn{i}", m), f"a{i}", 1.0)
    scale = n.const("tn_scale", np.float32(rng.uniform(0.02, 0.2)))
    x = n.op("Add", [n.op("Mul", [h, scale], "tn_mul"), n.const("tn_bias", np.float32(rng.normal(0, 0.5)))], "y")
    return n.model({"x": [1, widths[0]]}, x, [1, widths[-1]])


def image_frames(proto: onnx.ModelProto, count: int, seed=0) -> list[dict]:
    """``count`` frames as FINN feeds a binarized MNIST model: 2 x - 1 of 8-bit images x = k / 255 (never 0, so
    every input quantizer sees its sign)."""
    info = proto.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return [{info.name: (2 * rng.integers(0, 256, size=shape) / 255 - 1).astype(np.float32)} for _ in range(count)]
