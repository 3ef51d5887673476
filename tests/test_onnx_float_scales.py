"""Quantized models with float scales, as Brevitas exports them (per-tensor and per-channel float scales, float
biases and BatchNorm between the quantizers, bipolar and narrow-range quantizers, 1- to 8-bit weights and
activations): bit-exact with qonnx's own execution on inputs on the input quantizer's grid, in the reference, at
the default precision and without --approximate-scales; C and RTL simulation of these designs against the reference:
tests/test_hw_shared.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from tiers import need

need("onnx")
need("qonnx")

from quant_build import brevitas_cnn, brevitas_mlp, grid_frames, qonnx_run  # noqa: E402

from hlsfuse import reference  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx, to_graph_layout, to_model_outputs  # noqa: E402
from hlsfuse.frontend.onnx.scaled import FloatTie  # noqa: E402

MODELS = {
    "mlp-w4a4": lambda seed: brevitas_mlp(seed),
    "mlp-w2a2": lambda seed: brevitas_mlp(seed, w_bits=2, a_bits=2),
    "mlp-w3a3-no-bn": lambda seed: brevitas_mlp(seed, w_bits=3, a_bits=3, bn=False),
    "mlp-w1a1-bipolar": lambda seed: brevitas_mlp(seed, bipolar=True),
    "mlp-w8a8": lambda seed: brevitas_mlp(seed, w_bits=8, a_bits=8),
    "mlp-w5a4-per-channel-acts": lambda seed: brevitas_mlp(seed, w_bits=5, a_bits=4, per_channel_acts=True),
    "mlp-w6a5-float-output": lambda seed: brevitas_mlp(seed, w_bits=6, a_bits=5, output_quant=False),
    "cnn-w4a4": lambda seed: brevitas_cnn(seed),
    "cnn-w8a6": lambda seed: brevitas_cnn(seed, w_bits=8, a_bits=6),
}


def imported(proto):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FloatTie)
        graph = from_onnx(proto)
    return graph, [w for w in caught if issubclass(w.category, FloatTie)]


def assert_matches(proto, graph, frames, ties):
    out = proto.graph.output[0].name
    for frame in frames:
        want = qonnx_run(proto, frame)[out]
        got = to_model_outputs(graph, reference.run(graph, to_graph_layout(graph, frame)))[out]
        if out in graph.scales and not ties and proto.graph.node[-1].op_type != "Quant":
            # a float output (no quantizer after the last layer): hlsfuse's integers times the float scale,
            # against qonnx's float32 sums of float32 products
            assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
            continue
        mismatch = got != want
        assert not mismatch.any() or ties, (frame, got, want)


CASES = [(name, seed) for name in sorted(MODELS) for seed in ((0,) if name == "mlp-w8a8" else (0, 1, 2))]
"""Three seeds per model; one for the 8-bit MLP, whose 255-step quantizers take seconds to solve."""


@pytest.mark.parametrize("name, seed", CASES)
def test_float_scale_models_are_bit_exact_with_qonnx(name, seed):
    proto = MODELS[name](seed)
    graph, ties = imported(proto)
    assert graph.scales  # the integers are computed, the float scales applied by the host
    assert_matches(proto, graph, grid_frames(proto, 12, seed), ties)


def test_float_scales_per_channel_into_a_layer_are_refused_naming_the_node():
    """Activation scales per channel with no small integer ratios cannot be integer weights: one line says so."""
    from quant_build import Net, weights

    from hlsfuse import HlsfuseError

    rng = np.random.default_rng(2)
    n = Net()
    x = n.quant("x", "xq", [[0.3, 0.7, 0.11, 0.5]], 4)
    w = n.quant(n.const("w", weights(rng, (4, 3), 1.0)), "wq", 0.05, 4)
    n.op("MatMul", [x, w], "y")
    with pytest.raises(HlsfuseError) as info:
        from_onnx(n.model({"x": [1, 4]}, "y", [1, 3]))
    assert str(info.value).endswith(
        "node 'y' (MatMul): input 'xq' has a scale per channel (0.3, 0.7, 0.11, ...) whose ratios need integer weights "
        "of more than 16 more bits; quantize it with one scale per tensor (as Brevitas does by default) or with "
        "power-of-two ratios")


def test_floating_batchnorm_between_power_of_two_quantizers_is_absorbed_exactly():
    """TFC's case: power-of-two activation scales, float BatchNorm between: no float constant is rounded."""
    from quant_build import Net, batchnorm, weights

    rng = np.random.default_rng(5)
    n = Net()
    x = n.quant("x", "xq", 2.0 ** -3, 4)
    w = n.quant(n.const("w", weights(rng, (16, 10), 1.0)), "wq", 2.0 ** -2, 2, narrow=1)
    h = batchnorm(n, rng, n.op("MatMul", [x, w], "h"), "bn", 10)
    n.quant(h, "y", 2.0 ** -1, 3, signed=1)
    proto = n.model({"x": [1, 16]}, "y", [1, 10])
    graph, ties = imported(proto)
    assert not graph.scales  # power-of-two scales: the design computes the real values
    assert {n.op for n in graph.nodes} >= {"dense", "threshold"}  # a compare ladder, no float constant
    assert_matches(proto, graph, grid_frames(proto, 40, 5), ties)


def test_precision_float32_names_every_quantizer_it_cannot_hold():
    """float32 runs quantizers as casts to fixed types, which a float scale has none of: every one of them is named,
    the activation quantizers after a failed weight quantizer too (their input's shape stands in)."""
    from hlsfuse import HlsfuseError

    with pytest.raises(HlsfuseError) as info:
        from_onnx(brevitas_mlp(0), precision="float32")
    text = str(info.value)
    assert "\n" not in text and "(7 problems)" in text
    named = [f"node '{n}' (Quant): scale " for n in ("xq", "w0q", "a0", "w1q", "a1", "w2q", "y")]
    assert all(part in text for part in named), text
    assert "the default precision, exact, computes float scales exactly" in text
