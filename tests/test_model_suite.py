"""tests/model_suite.py per commit: every family converts, runs against its float model (bit-exact for the
quantized ones), and compiles. Their designs' ops are simulated by test_onnx_float_scales.py, test_onnx_unet.py,
test_onnx_qdq.py and test_ops_threshold.py; ``python tests/model_suite.py`` (``make test-random``) simulates every
family through the command line."""

from __future__ import annotations

import pytest
from tiers import need

need("onnx")
need("onnxruntime")
need("qonnx")

from model_suite import FAMILIES, run_family  # noqa: E402

PER_COMMIT = sorted(set(FAMILIES) - {"qdq-static"})
"""qdq-static's quantize_static calibration takes half a minute; test_onnx_qdq.py checks those models per commit."""


@pytest.mark.parametrize("name", PER_COMMIT)
def test_family_converts_runs_exactly_and_compiles(name, tmp_path):
    result = run_family(name, tmp_path, sim=False)
    assert result["stages"] > 0
