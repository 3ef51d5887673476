"""ONNX micro models of the transformer pieces that map onto existing hardware (issue 29's import half): GELU
(opset 20's Gelu and the decompositions torch and hand-written code export before it), Erf, SiLU, and Split,
Gather and Where with constant arguments. Written with onnx.helper as torch.onnx.export writes them (node
names like /act/Erf, scalar Constant nodes). Merged into test_onnx_ops.CASES: each must match onnxruntime in
float32 to 1e-5.

    GELU_FORMS   name -> (model factory, approximate): the forms patterns.py rewrites into one gelu node
"""

from __future__ import annotations

import math

import numpy as np
from onnx import numpy_helper
from onnx_build import model, node, weights

__all__ = ["TF_CASES", "GELU_FORMS", "gelu_erf_torch", "gelu_tanh_torch", "silu_torch", "scalar", "ffn", "attention"]

RNG = np.random.default_rng(2929)
IMG = {"x": (1, 3, 5, 6)}
SEQ = {"x": (1, 5, 8)}  # [batch, tokens, hidden]
F32 = np.float32


def scalar(name: str, value: float):
    """A scalar float32 Constant node, as torch writes the constants of its decompositions."""
    return node("Constant", [], [name], name=name.replace("_output_0", ""),
                value=numpy_helper.from_array(np.array(value, F32), name))


def gelu_erf_torch(x: str = "x", out: str = "y", prefix: str = "/act") -> list:
    """torch nn.GELU() at opsets 13-19: Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)."""
    p = prefix
    return [
        scalar(f"{p}/Constant_output_0", math.sqrt(2.0)),
        node("Div", [x, f"{p}/Constant_output_0"], [f"{p}/Div_output_0"], name=f"{p}/Div"),
        node("Erf", [f"{p}/Div_output_0"], [f"{p}/Erf_output_0"], name=f"{p}/Erf"),
        scalar(f"{p}/Constant_1_output_0", 1.0),
        node("Add", [f"{p}/Erf_output_0", f"{p}/Constant_1_output_0"], [f"{p}/Add_output_0"], name=f"{p}/Add"),
        node("Mul", [x, f"{p}/Add_output_0"], [f"{p}/Mul_output_0"], name=f"{p}/Mul"),
        scalar(f"{p}/Constant_2_output_0", 0.5),
        node("Mul", [f"{p}/Mul_output_0", f"{p}/Constant_2_output_0"], [out], name=f"{p}/Mul_1"),
    ]


def _gelu_erf_half_first() -> list:
    """x * 0.5 * (1 + torch.erf(x * (1 / sqrt 2))): the half taken first, the 1 on the left."""
    return [
        scalar("half", 0.5), scalar("rsqrt2", 1.0 / math.sqrt(2.0)), scalar("one", 1.0),
        node("Mul", ["x", "half"], ["xh"], name="/Mul"),
        node("Mul", ["x", "rsqrt2"], ["u"], name="/Mul_1"),
        node("Erf", ["u"], ["e"], name="/Erf"),
        node("Add", ["one", "e"], ["s"], name="/Add"),
        node("Mul", ["xh", "s"], ["y"], name="/Mul_2"),
    ]


def _gelu_erf_half_left() -> list:
    """0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))) (Hugging Face's gelu): Mul(0.5, x) then Mul by s."""
    return [
        scalar("half", 0.5), scalar("sqrt2", math.sqrt(2.0)), scalar("one", 1.0),
        node("Mul", ["half", "x"], ["xh"], name="/Mul"),
        node("Div", ["x", "sqrt2"], ["u"], name="/Div"),
        node("Erf", ["u"], ["e"], name="/Erf"),
        node("Add", ["one", "e"], ["s"], name="/Add"),
        node("Mul", ["xh", "s"], ["y"], name="/Mul_1"),
    ]


def _gelu_erf_half_of_s() -> list:
    """x * ((1 + erf(x / sqrt 2)) / 2): the half taken of s, by a Div."""
    return [
        scalar("two", 2.0), scalar("sqrt2", math.sqrt(2.0)), scalar("one", 1.0),
        node("Div", ["x", "sqrt2"], ["u"], name="/Div"),
        node("Erf", ["u"], ["e"], name="/Erf"),
        node("Add", ["e", "one"], ["s"], name="/Add"),
        node("Div", ["s", "two"], ["h"], name="/Div_1"),
        node("Mul", ["h", "x"], ["y"], name="/Mul"),
    ]


def gelu_tanh_torch(x: str = "x", out: str = "y", prefix: str = "/act") -> list:
    """torch nn.GELU(approximate="tanh") at opsets 13-19 (symbolic_opset9.gelu): x * (x * x), kappa times it,
    x plus that, beta times it, Tanh, 1 plus it, x times it, 0.5 times it."""
    p = prefix
    return [
        node("Mul", [x, x], [f"{p}/Mul_output_0"], name=f"{p}/Mul"),
        node("Mul", [x, f"{p}/Mul_output_0"], [f"{p}/Mul_1_output_0"], name=f"{p}/Mul_1"),
        scalar(f"{p}/Constant_output_0", 0.044715),
        node("Mul", [f"{p}/Constant_output_0", f"{p}/Mul_1_output_0"], [f"{p}/Mul_2_output_0"], name=f"{p}/Mul_2"),
        node("Add", [x, f"{p}/Mul_2_output_0"], [f"{p}/Add_output_0"], name=f"{p}/Add"),
        scalar(f"{p}/Constant_1_output_0", math.sqrt(2.0 / math.pi)),
        node("Mul", [f"{p}/Constant_1_output_0", f"{p}/Add_output_0"], [f"{p}/Mul_3_output_0"], name=f"{p}/Mul_3"),
        node("Tanh", [f"{p}/Mul_3_output_0"], [f"{p}/Tanh_output_0"], name=f"{p}/Tanh"),
        scalar(f"{p}/Constant_2_output_0", 1.0),
        node("Add", [f"{p}/Constant_2_output_0", f"{p}/Tanh_output_0"], [f"{p}/Add_1_output_0"], name=f"{p}/Add_1"),
        node("Mul", [x, f"{p}/Add_1_output_0"], [f"{p}/Mul_4_output_0"], name=f"{p}/Mul_4"),
        scalar(f"{p}/Constant_3_output_0", 0.5),
        node("Mul", [f"{p}/Constant_3_output_0", f"{p}/Mul_4_output_0"], [out], name=f"{p}/Mul_5"),
    ]


def _gelu_tanh_pow() -> list:
    """Hugging Face's NewGELU: 0.5 * x * (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * torch.pow(x, 3.0))))."""
    return [
        scalar("half", 0.5), scalar("three", 3.0), scalar("kappa", 0.044715), scalar("one", 1.0),
        scalar("beta", math.sqrt(2.0 / math.pi)),
        node("Mul", ["half", "x"], ["xh"], name="/Mul"),
        node("Pow", ["x", "three"], ["cube"], name="/Pow"),
        node("Mul", ["kappa", "cube"], ["kc"], name="/Mul_1"),
        node("Add", ["x", "kc"], ["inner"], name="/Add"),
        node("Mul", ["beta", "inner"], ["u"], name="/Mul_2"),
        node("Tanh", ["u"], ["t"], name="/Tanh"),
        node("Add", ["one", "t"], ["s"], name="/Add_1"),
        node("Mul", ["xh", "s"], ["y"], name="/Mul_3"),
    ]


def silu_torch(x: str = "x", out: str = "y", prefix: str = "/act") -> list:
    """torch nn.SiLU(): Sigmoid then Mul(x, sigmoid)."""
    return [node("Sigmoid", [x], [f"{prefix}/Sigmoid_output_0"], name=f"{prefix}/Sigmoid"),
            node("Mul", [x, f"{prefix}/Sigmoid_output_0"], [out], name=f"{prefix}/Mul")]


GELU_FORMS = {
    "gelu-erf-torch": (lambda: model(gelu_erf_torch(), SEQ, opset=17), "none"),
    "gelu-erf-half-first": (lambda: model(_gelu_erf_half_first(), SEQ, opset=13), "none"),
    "gelu-erf-half-left": (lambda: model(_gelu_erf_half_left(), SEQ, opset=14), "none"),
    "gelu-erf-half-of-s": (lambda: model(_gelu_erf_half_of_s(), IMG, opset=13), "none"),
    "gelu-tanh-torch": (lambda: model(gelu_tanh_torch(), IMG, opset=17), "tanh"),
    "gelu-tanh-pow": (lambda: model(_gelu_tanh_pow(), SEQ, opset=15), "tanh"),
    "gelu-opset20": (lambda: model([node("Gelu", ["x"], ["y"])], IMG, opset=20), "none"),
    "gelu-opset20-tanh": (lambda: model([node("Gelu", ["x"], ["y"], approximate="tanh")], SEQ, opset=20), "tanh"),
}


def ffn(hidden: int = 8, inner: int = 16, tokens: int = 5, opset: int = 17, seed: int = 7):
    """A torch-style FFN block as torch exports Linear -> GELU() -> Linear on [1, tokens, hidden]: MatMul and Add
    per Linear (the weights transposed, [in, out]), the exact GELU decomposition between."""
    rng = np.random.default_rng(seed)
    nodes = [
        node("MatMul", ["x", "fc1.weight_t"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
        node("Add", ["fc1.bias", "/fc1/MatMul_output_0"], ["/fc1/Add_output_0"], name="/fc1/Add"),
        *gelu_erf_torch("/fc1/Add_output_0", "/act/Mul_1_output_0"),
        node("MatMul", ["/act/Mul_1_output_0", "fc2.weight_t"], ["/fc2/MatMul_output_0"], name="/fc2/MatMul"),
        node("Add", ["fc2.bias", "/fc2/MatMul_output_0"], ["y"], name="/fc2/Add"),
    ]
    init = {"fc1.weight_t": weights(rng, hidden, inner), "fc1.bias": weights(rng, inner),
            "fc2.weight_t": weights(rng, inner, hidden), "fc2.bias": weights(rng, hidden)}
    return model(nodes, {"x": (1, tokens, hidden)}, init, opset=opset, name="ffn")


_MASK = np.triu(np.ones((5, 8), bool), 1)  # a causal-style mask on [tokens, hidden]


def attention(tokens: int = 6, hidden: int = 8, heads: int = 2, key_t: str = "perm", seed: int = 11):
    """Multi-head self-attention as hand-written torch code exports it: Q, K, V projections, heads split by
    Reshape and Transpose, scores Q K^T scaled, Softmax, times V, heads merged. ``key_t``: how K^T is written:
    "perm" (one Transpose [0, 2, 3, 1] of the split K), "swap" (K.transpose(-1, -2) after the heads' Transpose),
    "swap-reshape" (the swap, a Reshape merging batch and heads, then Mul by sqrt(scale), as torch's
    scaled_dot_product_attention decomposes)."""
    rng = np.random.default_rng(seed)
    dh = hidden // heads
    split = np.array([1, tokens, heads, dh], np.int64)
    nodes = []
    for p in "qkv":
        nodes += [node("MatMul", ["x", f"w{p}"], [f"{p}0"]), node("Reshape", [f"{p}0", "split"], [f"{p}1"])]
    nodes += [node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]), node("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3])]
    if key_t == "perm":
        nodes += [node("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]), node("MatMul", ["q", "kt"], ["s0"]),
                  node("Mul", ["s0", "scale"], ["s"])]
    elif key_t == "swap":
        nodes += [node("Transpose", ["k1"], ["k"], perm=[0, 2, 1, 3]),
                  node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                  node("MatMul", ["q", "kt"], ["s0"]), node("Div", ["s0", "root"], ["s"])]
    else:
        nodes += [node("Transpose", ["k1"], ["k"], perm=[0, 2, 1, 3]),
                  node("Transpose", ["k"], ["kt0"], perm=[0, 1, 3, 2]),
                  node("Reshape", ["kt0", "merged_t"], ["kt1"]), node("Mul", ["kt1", "half"], ["kt"]),
                  node("Reshape", ["q", "merged"], ["q2"]), node("Mul", ["q2", "half"], ["qs"]),
                  node("MatMul", ["qs", "kt"], ["s1"]), node("Reshape", ["s1", "scores"], ["s"])]
    nodes += [node("Softmax", ["s"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["c"]),
              node("Transpose", ["c"], ["c1"], perm=[0, 2, 1, 3]), node("Reshape", ["c1", "merge"], ["y"])]
    init = {f"w{p}": weights(rng, hidden, hidden) for p in "qkv"}
    init.update(split=split, merge=np.array([1, tokens, hidden], np.int64), scale=np.float32(dh ** -0.5),
                root=np.float32(math.sqrt(dh)), half=np.float32(dh ** -0.25),
                merged=np.array([heads, tokens, dh], np.int64), merged_t=np.array([heads, dh, tokens], np.int64),
                scores=np.array([1, heads, tokens, tokens], np.int64))
    return model(nodes, {"x": (1, tokens, hidden)}, init, opset=17, name="attention")


TF_CASES = {
    **{name: factory for name, (factory, _) in GELU_FORMS.items()},
    "Erf": lambda: model([node("Erf", ["x"], ["y"])], IMG),
    "silu-torch": lambda: model(silu_torch(), IMG, opset=17),
    **{f"attention-{form}": (lambda form=form: attention(key_t=form)) for form in ("perm", "swap", "swap-reshape")},
    # Split: attribute form, unequal, channels of a conv (held channel-last); input form, equal parts, last axis;
    # opset 18's num_outputs with a smaller last part
    "Split-attr-unequal": lambda: model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                                         node("Split", ["c"], ["y0", "y1"], axis=1, split=[1, 3])], IMG,
                                        {"w": weights(RNG, 4, 3, 3, 3)}, outputs=["y0", "y1"], opset=11),
    "Split-input-equal": lambda: model([node("Split", ["x", "s"], ["y0", "y1", "y2"], axis=-1)], IMG,
                                       {"s": np.array([2, 2, 2], np.int64)}, outputs=["y0", "y1", "y2"]),
    "Split-equal-no-sizes": lambda: model([node("Split", ["x"], ["q", "k", "v"], axis=1)], IMG,
                                          outputs=["q", "k", "v"], opset=13),
    "Split-num-outputs": lambda: model([node("Split", ["x"], ["y0", "y1"], axis=2, num_outputs=2)], IMG,
                                       outputs=["y0", "y1"], opset=18),
    # Gather: the class token (a scalar index on the tokens axis), one head, negative and scattered indices
    "Gather-class-token": lambda: model([node("Relu", ["x"], ["r"]), node("Gather", ["r", "i"], ["y"], axis=1)],
                                        SEQ, {"i": np.array(0, np.int64)}),
    "Gather-scalar-last": lambda: model([node("Gather", ["x", "i"], ["y"], axis=-1)], IMG,
                                        {"i": np.array(-1, np.int64)}),
    "Gather-runs": lambda: model([node("Gather", ["x", "i"], ["y"], axis=3)], IMG,
                                 {"i": np.array([4, 5, 0, -6, 2], np.int64)}),
    "Gather-channels": lambda: model([node("Conv", ["x", "w"], ["c"]), node("Gather", ["c", "i"], ["y"], axis=1)],
                                     IMG, {"w": weights(RNG, 4, 3, 1, 1), "i": np.array([1, 2], np.int64)}),
    # Where: masked_fill with -1e9 (exact for |x| <= 32), zeroing with 0, both operands computed, a mask from
    # comparisons folded at import (Less on a Range, Not), an all-true mask that broadcasts
    "Where-masked-fill": lambda: model([node("Where", ["m", "big", "x"], ["y"])], SEQ,
                                       {"m": _MASK, "big": np.float32(-1e9)}),
    "Where-zero": lambda: model([node("Where", ["m", "x", "zero"], ["y"])], SEQ,
                                {"m": _MASK, "zero": np.float32(0.0)}),
    "Where-computed": lambda: model([node("Neg", ["x"], ["n"]), node("Where", ["m", "n", "x"], ["y"])], SEQ,
                                    {"m": _MASK}),
    "Where-folded-mask": lambda: model([
        node("Range", ["zero", "five", "one"], ["r"]),
        node("Unsqueeze", ["r", "ax1"], ["row"]), node("Unsqueeze", ["r", "ax0"], ["col"]),
        node("Less", ["row", "col"], ["upper"]), node("Not", ["upper"], ["keep"]),
        node("Expand", ["keep", "shape"], ["keep3"]), node("Squeeze", ["keep3", "ax0"], ["keep2"]),
        node("Equal", ["keep2", "true"], ["cond"]),
        node("Where", ["cond", "x", "fill"], ["y"])], {"x": (1, 5, 5)},
        {"zero": np.int64(0), "five": np.int64(5), "one": np.int64(1), "ax0": np.array([0], np.int64),
         "ax1": np.array([1], np.int64), "shape": np.array([1, 5, 5], np.int64), "true": np.array(True),
         "fill": np.float32(-3.5)}),
    # torch's TorchScript exporter computes constants in the graph: the sequence length from Shape, Mod, a
    # Trilu mask, sinusoidal positions (Range, Exp, Sin, Cos), comparisons combined with And/Or/Xor; all folded
    "Folded-positions-and-mask": lambda: model([
        node("Shape", ["x"], ["shape"]), node("Gather", ["shape", "one"], ["seq"]),
        node("Mod", ["seq", "three"], ["rem"]), node("Sub", ["seq", "rem"], ["even"]),
        node("Range", ["zero", "seq", "one"], ["pos_i"]), node("Cast", ["pos_i"], ["pos"], to=1),
        node("Unsqueeze", ["pos", "ax1"], ["pos2"]),
        node("Range", ["zero_f", "four_f", "one_f"], ["k"]), node("Mul", ["k", "rate"], ["kr"]),
        node("Exp", ["kr"], ["freq"]), node("Mul", ["pos2", "freq"], ["angle"]),
        node("Sin", ["angle"], ["sin"]), node("Cos", ["angle"], ["cos"]),
        node("Concat", ["sin", "cos"], ["pe"], axis=1), node("Add", ["x", "pe"], ["xp"]),
        node("ConstantOfShape", ["square"], ["ones"], value=numpy_helper.from_array(np.array([1.0], F32))),
        node("Trilu", ["ones", "k1"], ["upper"], upper=1), node("Equal", ["upper", "onef"], ["masked"]),
        node("LessOrEqual", ["pos_i", "even"], ["early"]), node("Unsqueeze", ["early", "ax0"], ["early2"]),
        node("GreaterOrEqual", ["pos_i", "zero"], ["all"]), node("Unsqueeze", ["all", "ax0"], ["all2"]),
        node("And", ["masked", "early2"], ["a"]), node("Or", ["a", "masked"], ["o"]),
        node("Xor", ["o", "all2"], ["keep"]),
        node("Where", ["keep", "xp", "fill"], ["xm"]), node("Tile", ["sign_src", "reps"], ["tiled"]),
        node("Sign", ["tiled"], ["sign"]), node("Mul", ["xm", "sign"], ["y"])], {"x": (1, 8, 8)},
        {"one": np.array(1, np.int64), "three": np.array(3, np.int64), "zero": np.array(0, np.int64),
         "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64), "zero_f": np.float32(0.0),
         "four_f": np.float32(4.0), "one_f": np.float32(1.0), "rate": np.float32(-math.log(10000.0) / 8),
         "square": np.array([8, 8], np.int64), "k1": np.array(1, np.int64), "onef": np.float32(1.0),
         "fill": np.float32(-2.0), "sign_src": np.array([[1.0, -1.0]], F32), "reps": np.array([8, 4], np.int64)},
        opset=14),
    "Where-all-true-broadcast": lambda: model([node("Where", ["m", "x", "c"], ["y"])], {"x": (5, 8)},
                                              {"m": np.ones((2, 5, 8), bool), "c": np.float32(1.0)}),
}
