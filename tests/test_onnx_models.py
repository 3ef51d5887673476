"""PyTorch-style models end to end: float32 import vs onnxruntime, fixed point and calibration."""

from __future__ import annotations

import numpy as np
import pytest
from tiers import need

need("onnx")
need("onnxruntime")

from onnx_build import errors, feeds  # noqa: E402
from onnx_zoo import MODELS  # noqa: E402

from hlsfuse import from_onnx  # noqa: E402
from hlsfuse.frontend.onnx import calibrate  # noqa: E402


@pytest.fixture(scope="module", params=sorted(MODELS))
def proto(request):
    return MODELS[request.param]()


def _samples(proto, seeds):
    """Samples stacked on a leading axis, as a calibration .npz holds them."""
    batches = [feeds(proto, seed) for seed in seeds]
    return {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}


def test_float_reference_matches_onnxruntime(proto):
    for seed in range(3):
        _, diffs, _ = errors(proto, seed=seed)
        assert max(diffs.values()) <= 1e-5, diffs


def test_outputs_keep_the_onnx_names_and_layout(proto):
    graph = from_onnx(proto, precision="float32")
    declared = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in proto.graph.output}
    assert list(graph.outputs) == list(declared)
    for name, shape in declared.items():
        got = graph.types[name].shape
        assert len(got) == len(shape) and all(d in (0, g) for d, g in zip(shape, got))  # 0: not declared


def test_default_fixed_point_is_within_its_quantization_error(proto):
    graph, diffs, expected = errors(proto, precision="fixed<16,6>")
    scale = max(float(np.max(np.abs(v))) for v in expected.values())
    # fixed<16,6> keeps 10 fractional bits (LSB ~0.001) and truncates (TRN, hls4ml's default):
    # each weight and each layer's result is biased down by up to one LSB, and a layer sums
    # up to 72 such products, so a few layers drift by a few hundredths
    assert max(diffs.values()) <= 0.04 * max(1.0, scale), diffs
    assert {str(graph.types[i.name].dtype) for i in graph.inputs} == {"fixed<16,6>"}


def test_calibration_reports_the_error_it_makes(proto):
    result = calibrate(proto, _samples(proto, range(8)), precision="fixed<16,6>")
    assert result.samples == 8
    assert set(result.errors) == set(result.graph.outputs)
    expected = max(result.errors.values())
    # held-out inputs behave like the calibration samples: the report is a fair estimate
    _, held_out, _ = errors(proto, graph=result.graph, seed=100)
    assert max(held_out.values()) <= 3 * expected + 1e-4
    # and calibrated types beat the uncalibrated default by far
    _, default, _ = errors(proto, precision="fixed<16,6>", seed=100)
    assert max(held_out.values()) < max(default.values()) / 4
    for node in result.graph.nodes:
        t = result.graph.types[node.name].dtype
        assert t.width == 16 and t.quant in ("RND", "TRN")
