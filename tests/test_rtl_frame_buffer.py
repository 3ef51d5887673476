"""hlsf_frame_buffer against numpy.transpose, frame after frame, under random valid/ready patterns."""

from __future__ import annotations

import math

import numpy as np
import pytest
from verilated import model, pump

pytestmark = pytest.mark.verilator

CASES = {
    "nhwc_to_nchw": ((1, 3, 4, 5), (0, 3, 1, 2)),
    "reverse_3d": ((2, 3, 4), (2, 1, 0)),
}


def _literal(values) -> str:
    """Verilog literal of 32-bit fields, the first value in the low bits."""
    return f"{32 * len(values)}'h" + "".join(f"{v:08x}" for v in reversed(values))


def _buffer(shape, perm):
    strides = [math.prod(shape[a + 1 :]) for a in range(len(shape))]
    return model(
        "hlsf_frame_buffer", WIDTH=8, NDIM=len(shape),
        SHAPE=(_literal([shape[p] for p in perm]),), STRIDE=(_literal([strides[p] for p in perm]),),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_frame_buffer_transposes_every_frame(case):
    shape, perm = CASES[case]
    sim = _buffer(shape, perm)
    rng = np.random.default_rng(len(case))
    frames = rng.integers(0, 256, (3, *shape))
    received, _ = pump(sim, frames.reshape(-1).tolist(), rng, 0.8, 0.6)
    want = np.concatenate([np.transpose(f, perm).reshape(-1) for f in frames])
    assert received == want.tolist()


def test_frame_buffer_cycles_per_frame():
    shape, perm = CASES["reverse_3d"]
    sim = _buffer(shape, perm)
    size, frames = math.prod(shape), 4
    data = list(range(size)) * frames
    received, cycles = pump(sim, data, np.random.default_rng(0), 1.0, 1.0)
    assert received == np.transpose(np.arange(size).reshape(shape), perm).reshape(-1).tolist() * frames
    assert cycles == 2 * size * frames  # write all, then read all: the analytic "own" buffering schedule
