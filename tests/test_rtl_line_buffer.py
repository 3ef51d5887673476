"""hlsf_line_buffer against numpy windows of padded NHWC images, for several geometries at once.

tests/rtl/tb_line_buffer.v feeds one random stream, with random idle cycles, to an instance per
geometry, capturing the window into the snapshot on random pushes; the test cuts the same stream
into padded images of each geometry and compares every snapshot of a valid window (captured after
the last channel of a pixel whose window lies inside the image) with a numpy slice, also while
later pushes go by without a capture (the snapshot holds), on idle cycles and across frames.
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import Clocked, model

pytestmark = pytest.mark.verilator

WIDTH = 8
HP = 5  # padded image rows: the line buffer does not know it, the test cuts frames with it
# (C, WP, KH, KW, DH, DW)
CONFIGS = (
    (3, 7, 3, 3, 1, 1),  # 3x3 conv over 3 channels
    (2, 9, 2, 3, 2, 2),  # dilated in both directions
    (4, 5, 1, 1, 1, 1),  # 1x1: no line memories, the window is the pixel
    (1, 6, 3, 2, 1, 3),  # one channel, wide horizontal dilation
)
WMAX = max(kh * kw * c for c, _, kh, kw, _, _ in CONFIGS) * WIDTH


def _literal() -> str:
    value = 0
    for i, fields in enumerate(CONFIGS):
        for f, field in enumerate(fields):
            value |= field << (48 * i + 8 * f)
    return f"{48 * len(CONFIGS)}'h{value:x}"


def _expected(stream: np.ndarray, pushes: int, cfg) -> np.ndarray | None:
    """The window after ``pushes`` elements of ``stream``, or None when it is not a valid window."""
    c, wp, kh, kw, dh, dw = cfg
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if pushes == 0 or pushes % c:
        return None
    frame, pixel = divmod(pushes // c - 1, HP * wp)
    r, col = divmod(pixel, wp)
    if r < span_h - 1 or col < span_w - 1:
        return None
    size = HP * wp * c
    image = np.zeros(size, dtype=np.int64)
    part = stream[frame * size : (frame + 1) * size]
    image[: len(part)] = part
    image = image.reshape(HP, wp, c)
    return image[r - span_h + 1 : r + 1 : dh, col - span_w + 1 : col + 1 : dw, :].reshape(-1)


def test_line_buffer_windows_match_numpy():
    sim = model("tb_line_buffer", NCFG=len(CONFIGS), CFG=(_literal(),), WIDTH=WIDTH, WMAX=WMAX)
    clk, io = Clocked(sim), sim.io
    clk.reset()
    rng = np.random.default_rng(7)
    stream = rng.integers(0, 1 << WIDTH, 5 * HP * 9 * 2)  # five frames of the largest geometry
    pushes, checked, held = 0, [0] * len(CONFIGS), [0] * len(CONFIGS)
    captured = 0  # pushes before the last capture
    while pushes < len(stream):
        push = rng.random() < 0.7
        capture = push and rng.random() < 0.5
        io.push, io.capture, io.in_data = int(push), int(capture), int(stream[pushes]) if push else 0
        clk.tick()
        pushes += push
        captured = pushes if capture else captured
        snapshot = io.snapshot.value
        for i, cfg in enumerate(CONFIGS):
            want = _expected(stream, captured, cfg)
            if want is None:
                continue
            bits = snapshot >> (i * WMAX)
            got = [(bits >> (e * WIDTH)) & ((1 << WIDTH) - 1) for e in range(len(want))]
            assert got == want.tolist(), f"config {cfg}, captured after {captured} pushes, now {pushes}"
            checked[i] += 1
            held[i] += captured < pushes
    assert min(checked) > 20  # every geometry saw many windows, in several frames
    assert min(held) > 20  # and held them while later pushes went by
