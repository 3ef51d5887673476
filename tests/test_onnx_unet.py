"""A small U-Net end to end: conv -> maxpool -> conv -> x2 up (Resize as torch exports nn.Upsample, or a
ConvTranspose k2 s2) -> concat with the skip -> conv. Its float32 import matches onnxruntime; ``hlsfuse
compile --target all`` builds it, the upsample stage running at its bound (one output token per cycle); C and
RTL simulation: tests/test_hw_shared.py."""

from __future__ import annotations

import contextlib
import io

import pytest
from tiers import need

onnx = need("onnx")
need("onnxruntime")

from onnx_build import errors  # noqa: E402
from onnx_more_cases import unet  # noqa: E402

from hlsfuse.cli import main  # noqa: E402
from hlsfuse.frontend.onnx import from_onnx  # noqa: E402
from hlsfuse.fusion import fuse  # noqa: E402
from hlsfuse.lower import lower  # noqa: E402

UPS = ("Resize", "ConvTranspose")


@pytest.mark.parametrize("up", UPS)
def test_float_import_matches_onnxruntime(up):
    graph, diffs, _ = errors(unet(up))
    assert max(diffs.values()) <= 1e-5, diffs
    ops = [n.op for n in graph.nodes]
    assert "upsample2d" in ops and ops.count("conv2d") == 3 + (up == "ConvTranspose")


@pytest.mark.parametrize("up", UPS)
def test_upsample_stage_runs_at_its_bound(up):
    graph = from_onnx(unet(up))
    plan = lower(graph, fuse(graph))
    (stage,) = [s for s in plan.stages if s.head is not None and graph.node(s.head).op == "upsample2d"]
    assert stage.cycles == graph.types[stage.head].size == 8 * 8 * 6  # tokens out


@pytest.mark.parametrize("up", UPS)
def test_compile_all_writes_both_designs(up, tmp_path):
    """The command line builds both designs; tests/test_hw_shared.py simulates the ConvTranspose one in C and RTL."""
    model = tmp_path / "unet.onnx"
    onnx.save(unet(up), model)
    out = tmp_path / "out"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["compile", str(model), "--target", "all", "-o", str(out)]) == 0, text.getvalue()
    assert (out / "hls").is_dir() and (out / "verilog").is_dir()
