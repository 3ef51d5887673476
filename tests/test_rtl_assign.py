"""hlsf_assign against hlsfuse.types.assign: every raw input of small formats, all 28 mode pairs.

One Verilated model (tests/rtl/tb_assign.v) holds an instance per configuration and mode pair,
so the 12 x 28 = 336 assignments cost one build and 2 x 1024 evaluations.
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import model

from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES, FixedType, assign

pytestmark = pytest.mark.verilator

XW, YW = 10, 8  # widest input and output below

# (IN_W, IN_FRAC, IN_SIGNED, OUT_W, OUT_FRAC, OUT_SIGNED): d = IN_FRAC - OUT_FRAC
CONFIGS = (
    (8, 4, 1, 4, 1, 1),  # d = 3, narrowing
    (8, 3, 1, 8, 2, 0),  # d = 1 (no r bits), signed into unsigned
    (7, 0, 0, 4, -2, 1),  # unsigned into signed, negative fractional bits
    (6, 2, 1, 8, 5, 1),  # d = -3: exact left shift that can still overflow
    (5, 0, 1, 3, 0, 0),  # d = 0, signed into a narrower unsigned
    (8, 12, 1, 3, 0, 1),  # d = 12 > IN_W: every bit shifted out
    (9, 9, 0, 2, 1, 1),  # unsigned, d = 8
    (4, -1, 1, 6, 3, 1),  # d = -4
    (10, 5, 1, 1, 0, 1),  # 1-bit signed output (-1..0)
    (6, 6, 1, 1, 0, 0),  # 1-bit unsigned output, d = IN_W
    (8, 1, 0, 8, 1, 0),  # identity, unsigned
    (3, 0, 1, 8, 9, 0),  # long left shift into unsigned: negatives saturate to 0
)


def _cfg_literal() -> str:
    value = 0
    for c, fields in enumerate(CONFIGS):
        for f, field in enumerate(fields):
            value |= (field & 0xFF) << (48 * c + 8 * f)
    return f"{48 * len(CONFIGS)}'h{value:x}"


def _signed(bits: np.ndarray, width: int) -> np.ndarray:
    return np.where(bits >= 1 << (width - 1), bits - (1 << width), bits)


def _expected(x: np.ndarray, sticky: bool) -> np.ndarray:
    """[input, instance] raw outputs (as unsigned OUT_W-bit fields) from the Python model."""
    columns = []
    for in_w, in_frac, in_signed, out_w, out_frac, out_signed in CONFIGS:
        raw = x & ((1 << in_w) - 1)
        if in_signed:
            raw = _signed(raw, in_w)
        frac = in_frac
        if sticky and in_frac > out_frac:  # a value strictly between raw and raw + 1: raw + 1/2
            raw, frac = 2 * raw + 1, in_frac + 1
        for quant in QUANT_MODES:
            for overflow in OVERFLOW_MODES:
                t = FixedType(out_w, out_w - out_frac, bool(out_signed), quant, overflow)
                columns.append(assign(raw, frac, t) & ((1 << out_w) - 1))
    return np.stack(columns, axis=1)


@pytest.fixture(scope="module")
def sim():
    return model("tb_assign", NCFG=len(CONFIGS), CFG=(_cfg_literal(),), XW=XW, YW=YW)


@pytest.mark.parametrize("sticky", [False, True])
def test_assign_matches_python_model_exhaustively(sim, sticky):
    x = np.arange(1 << XW, dtype=np.int64)
    count = len(CONFIGS) * len(QUANT_MODES) * len(OVERFLOW_MODES)
    got = np.zeros((len(x), count), dtype=np.int64)
    sim.io.sticky = int(sticky)
    for i in x:
        sim.io.x = int(i)
        y = sim.io.y.value
        got[i] = [(y >> (k * YW)) & ((1 << YW) - 1) for k in range(count)]
    want = _expected(x, sticky)
    bad = np.argwhere(got != want)
    if len(bad):
        i, k = bad[0]
        cfg, rest = divmod(int(k), len(QUANT_MODES) * len(OVERFLOW_MODES))
        quant, overflow = divmod(rest, len(OVERFLOW_MODES))
        pytest.fail(
            f"{len(bad)} mismatches; first: config {CONFIGS[cfg]} {QUANT_MODES[quant]},{OVERFLOW_MODES[overflow]} "
            f"x={int(i)}: rtl {got[i, k]}, python {want[i, k]}"
        )
