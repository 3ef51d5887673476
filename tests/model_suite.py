"""Models built the way their users build them, each run through the whole tool as a user would:

    convert -> run --compare float (onnxruntime, or qonnx's execute_onnx for QONNX) -> compile --target all
    -> csim -> rtlsim

Families (``FAMILIES``):
    brevitas-mlp       QONNX as Brevitas exports an MLP: float scales per tensor and per channel, float biases
                       and BatchNorm1d between the quantizers, 4-bit (tests/quant_build.py)
    brevitas-tfc-w1a1  the same with bipolar weights and activations (FINN's TFC-W1A1 structure, smaller)
    brevitas-cnn       QONNX CNN: per-channel float weight scales, BatchNorm2d, MaxPool, GlobalAveragePool
    channels-last      that CNN after qonnx's own ConvertToChannelsLastAndClean (NHWC input, channels-last ops)
    torch-baked-batch  a PyTorch-style export (Gemm, BatchNorm1d, producer 'pytorch') traced with a batch of 256
    unet               a U-Net-like float model: conv, maxpool, ConvTranspose and Resize (x2), concat with the skip
    qdq-static         onnxruntime's quantize_static of a CNN: QDQ pairs with float scales and zero points
    tel-*, bert2, vit-* float transformers exported from torch (tests/transformers/, export_torch.py): every
                       nn.TransformerEncoderLayer variant (GELU and ReLU, post- and pre-LN, with and without a
                       causal mask, both exporters), a 2-layer BERT-style encoder with a padding mask, ViT-tiny
                       with a class token or mean pooling; 32 frames in the range such a model sees (token
                       embeddings in [-3, 3], about N(0, 1); images in [-1, 1]), the largest error at most 2%
                       of the float output's range, and the decisive classifiers' argmax (CLASSIFIERS) agreeing
                       on every frame

Run ``python tests/model_suite.py [--family NAME ...] [--no-sim] [--keep DIR]``: one line per family with the
largest error against the float model, the stage count, and the simulators' verdicts; exit 1 if any step fails.
tests/test_model_suite.py runs it per commit.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from quant_build import brevitas_cnn, brevitas_mlp  # noqa: E402

__all__ = ["FAMILIES", "run_family", "main"]


def _channels_last() -> onnx.ModelProto:
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.channels_last import ConvertToChannelsLastAndClean
    from qonnx.transformation.infer_shapes import InferShapes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper = ModelWrapper(brevitas_cnn(3)).transform(InferShapes())
        return wrapper.transform(ConvertToChannelsLastAndClean(make_input_channels_last=True)).model


def _torch_baked_batch(batch: int = 256) -> onnx.ModelProto:
    """Linear(12, 24) -> BatchNorm1d -> ReLU -> Linear(24, 4) as torch.onnx.export writes it, traced with a
    dataset-sized batch."""
    rng = np.random.default_rng(0)

    def init(name, *shape, scale=0.3, low=None):
        value = rng.uniform(low, 1.5, shape) if low is not None else rng.standard_normal(shape) * scale
        return numpy_helper.from_array(value.astype(np.float32), name)

    inits = [init("fc1.weight", 24, 12), init("fc1.bias", 24, scale=0.1), init("bn.weight", 24, low=0.5),
             init("bn.bias", 24, scale=0.1), init("bn.running_mean", 24, scale=0.2),
             init("bn.running_var", 24, low=0.5), init("fc2.weight", 4, 24), init("fc2.bias", 4, scale=0.1)]
    nodes = [helper.make_node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["h"], name="/fc1/Gemm", transB=1),
             helper.make_node("BatchNormalization", ["h", "bn.weight", "bn.bias", "bn.running_mean",
                                                     "bn.running_var"], ["n"], name="/bn/BatchNormalization"),
             helper.make_node("Relu", ["n"], ["r"], name="/relu/Relu"),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["output"], name="/fc2/Gemm", transB=1)]
    graph = helper.make_graph(nodes, "main_graph",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 12])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, 4])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch",
                              producer_version="2.1.0")
    proto.ir_version = 8
    return proto


def _unet() -> onnx.ModelProto:
    from onnx_more_cases import unet

    return unet("ConvTranspose")


def _qdq_static() -> onnx.ModelProto:
    from onnx_zoo import cnn
    from quant_build import static_quantized

    proto = cnn()
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)
    samples = [{proto.graph.input[0].name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(8)]
    with tempfile.TemporaryDirectory() as folder:
        return static_quantized(proto, Path(folder), samples)


TRANSFORMERS = Path(__file__).parent / "transformers"
EXPORTS = tuple(p.stem for p in sorted(TRANSFORMERS.glob("*.onnx")) if p.stem != "dynamic_sequence")
"""The exports a family each (dynamic_sequence needs --input-shape: tests/test_transformers.py)."""


def _exported(name: str):
    return lambda: onnx.load(TRANSFORMERS / f"{name}.onnx")


FAMILIES = {
    "brevitas-mlp": lambda: brevitas_mlp(0),
    "brevitas-tfc-w1a1": lambda: brevitas_mlp(1, bipolar=True, widths=(64, 32, 32, 10)),
    "brevitas-cnn": lambda: brevitas_cnn(0),
    "channels-last": _channels_last,
    "torch-baked-batch": _torch_baked_batch,
    "unet": _unet,
    "qdq-static": _qdq_static,
    **{stem.replace("_", "-"): _exported(stem) for stem in EXPORTS},
}

TRANSFORMER_FAMILIES = tuple(stem.replace("_", "-") for stem in EXPORTS)
CLASSIFIERS = {"bert2", "vit-cls", "vit-mean"}
"""Transformer families whose output is a class score per frame and whose argmax must agree on every frame: each
is trained (export_torch.py) and decides with a trained model's margins, not a random one's near-ties."""

OPTIONS = {"unet": ["--precision", "auto:16"],
           **{name: ["--input-range", "x=-1:1" if name.startswith("vit") else "x=-3:3"]
              for name in TRANSFORMER_FAMILIES}}
"""Import options per family (the U-Net's random weights reach beyond the default's 6 integer bits; the
transformers' inputs: token embeddings about N(0, 1), images in [-1, 1])."""

FRAMES = dict.fromkeys(TRANSFORMER_FAMILIES, 32)
"""Frames of ``run --compare float`` per family (default 2)."""

RELATIVE = dict.fromkeys(TRANSFORMER_FAMILIES, 0.02)
"""The largest error allowed, as a fraction of the float output's range, for the families that are not exact."""

EXACT = {"brevitas-mlp", "brevitas-tfc-w1a1", "brevitas-cnn", "channels-last", "qdq-static"}
"""Families whose design must equal the float model bit for bit (quantized); the others report their error."""


def _cli(args: list[str]) -> tuple[int, str]:
    from hlsfuse.cli import main as hlsfuse

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = hlsfuse(args)
    return code, out.getvalue() + err.getvalue()


def run_family(name: str, folder: Path, sim: bool = True) -> dict[str, object]:
    """The steps of one family in ``folder``: {"error": max abs vs the float model, "float": which model ran,
    "stages": count, "csim"/"rtlsim": the verdict line}; raises AssertionError naming the step that failed."""
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / f"{name}.onnx"
    onnx.save(FAMILIES[name](), model)
    result: dict[str, object] = {}
    options = OPTIONS.get(name, [])
    code, text = _cli(["convert", str(model), "-o", str(folder / f"{name}.json"), "--force", *options])
    assert code == 0, f"{name}: convert failed: {text}"
    code, text = _cli(["run", str(model), "--compare", "float", "--frames", str(FRAMES.get(name, 2)), *options])
    assert code == 0, f"{name}: run --compare float failed: {text}"
    header = re.search(r"error vs float \(([^)]*)\)", text)
    result["float"] = header.group(1) if header else "?"
    rows = re.findall(r"^  (\S+)\s+([0-9.e+-]+)\s+[0-9.e+-]+\s+(\S+)\s+(\S+)$", text, re.M)
    result["error"] = max(float(row[1]) for row in rows) if rows else float("nan")
    result["relative"] = max((float(row[2]) for row in rows if row[2] != "-"), default=0.0)
    result["argmax"] = ", ".join(row[3] for row in rows)
    if name in EXACT:
        assert result["error"] == 0.0, f"{name}: not bit-exact with {result['float']}: {text}"
    if name in RELATIVE:
        assert result["relative"] <= RELATIVE[name], f"{name}: error over {RELATIVE[name]:.0%} of the range: {text}"
    if name in CLASSIFIERS:
        frames = FRAMES[name]
        assert all(row[3] == f"{frames}/{frames}" for row in rows), f"{name}: argmax disagrees: {text}"
    out = folder / "out"
    code, text = _cli(["compile", str(model), "-o", str(out), "--target", "all" if sim else "hls", "--force",
                       *options])
    assert code == 0, f"{name}: compile failed: {text}"
    result["stages"] = len(re.findall(r"^s\d+_", text, re.M))
    if sim:
        for step, command in (("csim", ["csim", str(out)]), ("rtlsim", ["rtlsim", str(out), "--frames", "2"])):
            code, text = _cli(command)
            assert code == 0 and text.startswith("PASS"), f"{name}: {step} failed: {text}"
            result[step] = text.splitlines()[0]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="run only these families")
    parser.add_argument("--no-sim", action="store_true", help="skip csim and rtlsim")
    parser.add_argument("--keep", type=Path, help="build in this folder (default: a temporary one)")
    args = parser.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory() as temporary:
        root = args.keep or Path(temporary)
        for name in args.family or FAMILIES:
            try:
                r = run_family(name, root / name, sim=not args.no_sim)
            except AssertionError as exc:
                failed += 1
                print(f"{name:22} FAIL  {str(exc).splitlines()[0]}")
                continue
            sims = "" if args.no_sim else f"  csim {r['csim'][:4]}  rtlsim {r['rtlsim'][:4]}"
            print(f"{name:22} ok    max abs error {r['error']:.3g} ({r['relative']:.2%} of the range, argmax "
                  f"{r['argmax']}) vs {r['float']}  stages {r['stages']}{sims}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
