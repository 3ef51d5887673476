"""ONNX micro models of LayerNorm and RMSNorm as exporters write them, for the import tests: opset 17's
LayerNormalization, and the decompositions torch.onnx.export (TorchScript) writes
before opset 17 (node names like /ln/ReduceMean, scalar Constant nodes, ReduceMean's axes as an attribute before
opset 18 and as a Constant input from it) and that Hugging Face's RMSNorm gives. Merged into test_onnx_ops.CASES:
each must match onnxruntime in float32 to 1e-5.

    LN_FORMS, RMS_FORMS   name -> model factory: the forms that import as one layer_norm / rms_norm node
    layer_norm_native(...), layer_norm_torch(...), rms_norm_torch(...)   the builders
    block(form)           Linear -> LayerNorm -> Linear -> GELU, as a transformer's, in the given LayerNorm form
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper
from onnx_build import model, node, weights
from onnx_tf_cases import gelu_erf_torch, scalar

__all__ = ["NORM_CASES", "LN_FORMS", "RMS_FORMS", "layer_norm_native", "layer_norm_torch", "rms_norm_torch",
           "ln_weights", "block", "SEQ"]

SEQ = {"x": (1, 5, 8)}  # [batch, tokens, hidden]
HIDDEN = 8


def ln_weights(n: int = HIDDEN, seed: int = 17) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"ln.weight": rng.uniform(0.5, 1.5, n).astype(np.float32),
            "ln.bias": rng.uniform(-0.5, 0.5, n).astype(np.float32)}


def _axes(p: str, opset: int) -> tuple[list, dict, list]:
    """(ReduceMean's extra inputs, its attributes, the nodes they need) for axes [-1] at ``opset``."""
    if opset < 18:
        return [], {"axes": [-1]}, []
    const = node("Constant", [], [f"{p}/Constant_axes_output_0"], name=f"{p}/Constant_axes",
                 value=numpy_helper.from_array(np.array([-1], np.int64), f"{p}/Constant_axes_output_0"))
    return [f"{p}/Constant_axes_output_0"], {}, [const]


def layer_norm_native(x="x", out="y", p="/ln", epsilon=1e-5, bias=True) -> list:
    """torch nn.LayerNorm at opset 17 on: one LayerNormalization, axis -1."""
    inputs = [x, "ln.weight"] + (["ln.bias"] if bias else [])
    return [node("LayerNormalization", inputs, [out], name=f"{p}/LayerNormalization", axis=-1, epsilon=epsilon)]


def layer_norm_torch(x="x", out="y", p="/ln", opset=13, epsilon=1e-5, affine=True, square="Pow") -> list:
    """torch nn.LayerNorm before opset 17 (symbolic_opset9.native_layer_norm): ReduceMean -> Sub -> Pow(2) ->
    ReduceMean -> Add(eps) -> Sqrt -> Div -> Mul(weight) -> Add(bias); ``affine`` False: no Mul or Add;
    ``square`` "Mul": Mul(d, d) in place of the Pow."""
    extra, attrs, consts = _axes(p, opset)
    d, last = f"{p}/Sub_output_0", f"{p}/Div_output_0"
    squared = (node("Pow", [d, f"{p}/Constant_output_0"], [f"{p}/Pow_output_0"], name=f"{p}/Pow") if square == "Pow"
               else node("Mul", [d, d], [f"{p}/Pow_output_0"], name=f"{p}/Mul_square"))
    nodes = [
        *consts,
        node("ReduceMean", [x, *extra], [f"{p}/ReduceMean_output_0"], name=f"{p}/ReduceMean", **attrs),
        node("Sub", [x, f"{p}/ReduceMean_output_0"], [d], name=f"{p}/Sub"),
        scalar(f"{p}/Constant_output_0", 2.0),
        squared,
        node("ReduceMean", [f"{p}/Pow_output_0", *extra], [f"{p}/ReduceMean_1_output_0"], name=f"{p}/ReduceMean_1",
             **attrs),
        scalar(f"{p}/Constant_1_output_0", epsilon),
        node("Add", [f"{p}/ReduceMean_1_output_0", f"{p}/Constant_1_output_0"], [f"{p}/Add_output_0"], name=f"{p}/Add"),
        node("Sqrt", [f"{p}/Add_output_0"], [f"{p}/Sqrt_output_0"], name=f"{p}/Sqrt"),
        node("Div", [d, f"{p}/Sqrt_output_0"], [last if affine else out], name=f"{p}/Div"),
    ]
    if affine:
        nodes += [node("Mul", [last, "ln.weight"], [f"{p}/Mul_output_0"], name=f"{p}/Mul"),
                  node("Add", [f"{p}/Mul_output_0", "ln.bias"], [out], name=f"{p}/Add_1")]
    return nodes


def rms_norm_torch(x="x", out="y", p="/norm", opset=13, epsilon=1e-6, inverse="Div1", weight_first=True,
                   square="Pow") -> list:
    """Hugging Face's LlamaRMSNorm, weight * (x * rsqrt(mean(x^2) + eps)), as TorchScript writes it: Pow(2) ->
    ReduceMean -> Add(eps) -> Sqrt -> Div(1, s) (rsqrt's symbolic) -> Mul(x) -> Mul(weight); ``inverse``
    "Reciprocal": a Reciprocal in place of Div(1, s), "Div": Div(x, s) directly; ``square`` "Mul": Mul(x, x)."""
    extra, attrs, consts = _axes(p, opset)
    squared = (node("Pow", [x, f"{p}/Constant_output_0"], [f"{p}/Pow_output_0"], name=f"{p}/Pow") if square == "Pow"
               else node("Mul", [x, x], [f"{p}/Pow_output_0"], name=f"{p}/Mul_square"))
    s, normed = f"{p}/Sqrt_output_0", f"{p}/Mul_output_0"
    nodes = [
        *consts, scalar(f"{p}/Constant_output_0", 2.0), squared,
        node("ReduceMean", [f"{p}/Pow_output_0", *extra], [f"{p}/ReduceMean_output_0"], name=f"{p}/ReduceMean",
             **attrs),
        scalar(f"{p}/Constant_1_output_0", epsilon),
        node("Add", [f"{p}/ReduceMean_output_0", f"{p}/Constant_1_output_0"], [f"{p}/Add_output_0"], name=f"{p}/Add"),
        node("Sqrt", [f"{p}/Add_output_0"], [s], name=f"{p}/Sqrt"),
    ]
    if inverse == "Div":
        nodes.append(node("Div", [x, s], [normed], name=f"{p}/Div"))
    else:
        if inverse == "Reciprocal":
            nodes.append(node("Reciprocal", [s], [f"{p}/Div_output_0"], name=f"{p}/Reciprocal"))
        else:
            nodes += [scalar(f"{p}/Constant_2_output_0", 1.0),
                      node("Div", [f"{p}/Constant_2_output_0", s], [f"{p}/Div_output_0"], name=f"{p}/Div")]
        nodes.append(node("Mul", [x, f"{p}/Div_output_0"], [normed], name=f"{p}/Mul"))
    operands = ["ln.weight", normed] if weight_first else [normed, "ln.weight"]
    nodes.append(node("Mul", operands, [out], name=f"{p}/Mul_1"))
    return nodes


def _ln(nodes, opset, affine=True, shape=SEQ, seed=17):
    inits = ln_weights(shape["x"][-1], seed) if affine else {}
    return model(nodes, shape, inits, opset=opset, name="ln")


def _rms(nodes, opset, shape=SEQ):
    return model(nodes, shape, {"ln.weight": ln_weights(shape["x"][-1])["ln.weight"]}, opset=opset, name="rms")


LN_FORMS = {
    "LayerNormalization-17": lambda: _ln(layer_norm_native(), 17),
    "LayerNormalization-17-no-bias": lambda: model(layer_norm_native(bias=False), SEQ,
                                                   {"ln.weight": ln_weights()["ln.weight"]}, opset=17),
    "LayerNorm-torch-13": lambda: _ln(layer_norm_torch(), 13),
    "LayerNorm-torch-13-mul-square": lambda: _ln(layer_norm_torch(square="Mul"), 13),
    "LayerNorm-torch-18-axes-input": lambda: _ln(layer_norm_torch(opset=18), 18),
    "LayerNorm-torch-13-no-affine": lambda: _ln(layer_norm_torch(affine=False), 13, affine=False),
}
"""Forms that import as one layer_norm node."""

RMS_FORMS = {
    "RMSNorm-torch-13": lambda: _rms(rms_norm_torch(), 13),
    "RMSNorm-torch-13-reciprocal-mul-square": lambda: _rms(rms_norm_torch(inverse="Reciprocal", square="Mul",
                                                                          weight_first=False), 13),
    "RMSNorm-torch-18-div": lambda: _rms(rms_norm_torch(opset=18, inverse="Div"), 18),
}
"""Forms that import as one rms_norm node."""


def block(form: str = "torch", opset: int = 13, tokens: int = 5, hidden: int = HIDDEN, inner: int = 16):
    """A transformer block's feed-forward half: Linear -> LayerNorm -> Linear -> GELU (exact, decomposed), with
    the LayerNorm decomposed ("torch", before opset 17) or one LayerNormalization ("native", opset 17)."""
    rng = np.random.default_rng(4)
    ln = (layer_norm_torch("/fc1/Add_output_0", "/ln/out", opset=opset) if form == "torch"
          else layer_norm_native("/fc1/Add_output_0", "/ln/out"))
    nodes = [
        node("MatMul", ["x", "fc1.weight_t"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
        node("Add", ["fc1.bias", "/fc1/MatMul_output_0"], ["/fc1/Add_output_0"], name="/fc1/Add"),
        *ln,
        node("MatMul", ["/ln/out", "fc2.weight_t"], ["/fc2/MatMul_output_0"], name="/fc2/MatMul"),
        node("Add", ["fc2.bias", "/fc2/MatMul_output_0"], ["/fc2/Add_output_0"], name="/fc2/Add"),
        *gelu_erf_torch("/fc2/Add_output_0", "y"),
    ]
    init = {"fc1.weight_t": weights(rng, hidden, hidden), "fc1.bias": weights(rng, hidden),
            "fc2.weight_t": weights(rng, hidden, inner), "fc2.bias": weights(rng, inner), **ln_weights(hidden)}
    return model(nodes, {"x": (1, tokens, hidden)}, init, opset=opset, name="block")


NORM_CASES = {
    **LN_FORMS,
    **RMS_FORMS,
    # a LayerNorm over the last axis of an image (W), after a Conv held channel-last: its input is transposed back
    "LayerNormalization-image-last-axis": lambda: model(
        [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), *layer_norm_native("c", "y")], {"x": (1, 3, 5, 6)},
        {"w": weights(np.random.default_rng(5), 4, 3, 3, 3), **ln_weights(6)}, opset=17),
    "LayerNorm-block-torch-13": lambda: block("torch"),
}
