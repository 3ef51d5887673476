"""tests/model_suite.py per commit: every family converts, runs against its float model (bit-exact for the
quantized ones), and compiles; the families no other test simulates also pass csim and rtlsim."""

from __future__ import annotations

import pytest
from tiers import need

need("onnx")
need("onnxruntime")
need("qonnx")

from model_suite import FAMILIES, run_family  # noqa: E402

SIMULATED = ("channels-last",)
"""Simulated here through the command line; the others' designs are simulated by test_onnx_float_scales.py,
test_onnx_unet.py, test_onnx_qdq.py and test_onnx_frames.py (``python tests/model_suite.py`` simulates all)."""


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - set(SIMULATED)))
def test_family_converts_runs_exactly_and_compiles(name, tmp_path):
    result = run_family(name, tmp_path, sim=False)
    assert result["stages"] > 0


@pytest.mark.gxx
@pytest.mark.verilator
@pytest.mark.pyverilator
@pytest.mark.parametrize("name", SIMULATED)
def test_family_also_passes_csim_and_rtlsim(name, tmp_path):
    result = run_family(name, tmp_path, sim=True)
    assert result["csim"].startswith("PASS") and result["rtlsim"].startswith("PASS")
