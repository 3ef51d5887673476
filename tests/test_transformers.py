"""The float transformers of tests/transformers/ as PyTorch exports them (export_torch.py wrote them).

Per commit the model suite (test_model_suite.py) converts each with the defaults, compares it with onnxruntime on
32 frames (at most 2% of the float output's range, the classifiers' argmax on every frame) and compiles it; the
designs' ops are simulated in C and RTL by tests/test_hw_shared.py, and ``make test-random`` simulates every
model through the command line. Here: what a user relies on beyond that. The two exporters give the same design
for the same weights, a dynamic sequence length is refused in one line with the way out, and the blocks fit the
boards at their predicted rate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from hlsfuse import reference  # noqa: E402
from hlsfuse.boards import target_of  # noqa: E402
from hlsfuse.cli import main  # noqa: E402
from hlsfuse.compile import CompileOptions, plan_design  # noqa: E402
from hlsfuse.errors import HlsfuseError  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx  # noqa: E402
from hlsfuse.fusion import fuse  # noqa: E402
from hlsfuse.graph_json import load_graph  # noqa: E402

MODELS = Path(__file__).parent / "transformers"
TOKENS = {"x": (-3.0, 3.0)}  # token embeddings, about N(0, 1)
IMAGES = {"x": (-1.0, 1.0)}


def _load(name: str) -> onnx.ModelProto:
    return onnx.load(MODELS / f"{name}.onnx")


def _import(name: str):
    return from_onnx(_load(name), input_ranges=IMAGES if name.startswith("vit") else TOKENS)


def _groups(graph) -> list[tuple[str, tuple[str, ...]]]:
    """The fusion groups as their pattern kind and ops in order (node names differ between exporters)."""
    return [(g.pattern.name, tuple(graph.node(n).op for n in g.nodes)) for g in fuse(graph).groups]


@pytest.mark.parametrize("layer", ["gelu_post", "gelu_pre", "relu_post", "relu_pre"])
def test_both_exporters_give_the_same_design(layer):
    """The TorchScript exporter at opset 14 (LayerNorm decomposed, the causal mask built by shape arithmetic,
    Trilu and Where, GELU as Erf) and the dynamo exporter at opset 18 (LayerNormalization, the mask a constant)
    write the same layer's weights: one design, and the same numbers on the same inputs."""
    legacy, dynamo = _import(f"tel_legacy_{layer}"), _import(f"tel_{layer}_causal")
    assert _groups(legacy) == _groups(dynamo)
    assert sum(n.op == "layer_norm" for n in legacy.nodes) == 2
    rng = np.random.default_rng(29)
    x = rng.uniform(-3, 3, (1, 8, 32))
    (a,), (b,) = (reference.run(g, {g.inputs[0].name: x}).values() for g in (legacy, dynamo))
    assert np.array_equal(a, b)


def test_a_dynamic_sequence_length_is_refused_in_one_line_with_the_way_out(tmp_path, capsys):
    proto = _load("dynamic_sequence")  # torch.onnx.export(..., dynamic_shapes={"x": {1: Dim("sequence")}})
    with pytest.raises(HlsfuseError) as info:
        from_onnx(proto)
    text = str(info.value)
    assert "input 'x' has a dynamic shape (dim 1 is 'sequence')" in text
    assert "--input-shape x=1,N,32" in text and "\n" not in text
    model, out = MODELS / "dynamic_sequence.onnx", tmp_path / "fixed.json"
    assert main(["convert", str(model), "-o", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["convert", str(model), "-o", str(out), "--input-shape", "x=1,8,32"]) == 0
    assert load_graph(out).types["x"].shape == (1, 8, 32)


FITS = [(name, board) for name in ("tel_gelu_pre_causal", "tel_legacy_relu_post", "bert2", "vit_cls", "vit_mean")
        for board in ("pynq-z2", "kv260", "zcu104")]
"""An encoder block and every whole model on every board: on the Pynq-Z2 and the KV260, BERT's and ViT's
feed-forward denses fit only when the solver prices the width converter that wide input lanes bring
(``area.inflow_area``: a row of 256 elements per push costs 4,000 LUTs and makes the stage no faster)."""


@pytest.mark.parametrize("name, board", FITS)
def test_the_solver_fits_each_model_to_the_board(name, board):
    """Folded within the board's DSP, BRAM18 and LUT budgets (the FIFOs and width converters included)."""
    graph = _import(name)
    device = target_of(board)
    planned = plan_design(graph, CompileOptions(device=device))
    area = planned.area
    assert area.dsp <= device.dsp and area.bram18 <= device.bram18 and area.lut <= device.lut
    assert planned.plan.cycles == max(s.cycles for s in planned.plan.stages)
