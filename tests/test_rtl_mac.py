"""hlsf_mac against exact Python integer dot products, with accumulation across cycles.

tests/rtl/tb_mac.v holds one instance per configuration; all see the same random operand bits
(each reads the low bits it needs), random enables and clears. ACC_W is the exact accumulation
format hlsfuse's check rules would prove (Fmt.mul then Fmt.accumulate over every term summed
between two clears); operands are drawn with extra weight on the extremes of their ranges, where
a wrong sign extension or a narrow intermediate would show.
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import Clocked, model, pack_configs, unpack

from hlsfuse.types import Fmt

pytestmark = pytest.mark.verilator

RUN = 4  # at most RUN updates between clears
# (A_W, A_SIGNED, B_W, B_SIGNED, N)
SHAPES = (
    (8, 1, 8, 1, 9),  # a 3x3 window of int8 against int8 weights
    (5, 0, 7, 1, 4),  # unsigned activations, signed weights
    (16, 0, 16, 0, 1),  # a sequential unsigned MAC
    (30, 1, 31, 1, 2),  # the widest: the accumulation needs all 64 bits
)


def _acc_fmt(a_w, a_signed, b_w, b_signed, n) -> Fmt:
    return Fmt(a_w, a_w, bool(a_signed)).mul(Fmt(b_w, b_w, bool(b_signed))).accumulate(n * RUN).check("test")


CONFIGS = tuple((*shape, _acc_fmt(*shape).width) for shape in SHAPES)
AMAX = max(a_w * n for a_w, _, _, _, n, _ in CONFIGS)
BMAX = max(b_w * n for _, _, b_w, _, n, _ in CONFIGS)


def _operand(rng, width: int) -> int:
    """Random bits, often all ones, all zeros or a lone top bit (the extremes of either signedness)."""
    bits = int.from_bytes(rng.bytes((width + 7) // 8), "little") & ((1 << width) - 1)
    pick = rng.integers(0, 4)
    return bits if pick == 0 else (1 << width) - 1 if pick == 1 else 1 << (width - 1) if pick == 2 else 0


def test_mac_exact_accumulation():
    sim = model("tb_mac", NCFG=len(CONFIGS), CFG=(pack_configs(CONFIGS),), AMAX=AMAX, BMAX=BMAX)
    clk, io = Clocked(sim), sim.io
    rng = np.random.default_rng(11)
    state = [None] * len(CONFIGS)  # the model's accumulator (None: not cleared yet)
    run = 0
    for _ in range(600):
        en = int(rng.random() < 0.8)
        clear = int(state[0] is None or run == RUN or rng.random() < 0.3)
        a = sum(_operand(rng, 8) << (8 * k) for k in range(AMAX // 8 + 1)) & ((1 << AMAX) - 1)
        b = sum(_operand(rng, 8) << (8 * k) for k in range(BMAX // 8 + 1)) & ((1 << BMAX) - 1)
        if rng.random() < 0.3:  # whole operands at their extremes
            a, b = _operand(rng, AMAX), _operand(rng, BMAX)
        io.en, io.clear, io.a, io.b = en, clear, a, b
        clk.tick()
        if en:
            run = 1 if clear else run + 1
            for c, (a_w, a_s, b_w, b_s, n, _) in enumerate(CONFIGS):
                dot = sum(x * y for x, y in zip(unpack(a, a_w, a_s, n), unpack(b, b_w, b_s, n)))
                state[c] = dot if clear else state[c] + dot
        if state[0] is None:
            continue
        got = io.acc.value
        for c, (*_, acc_w) in enumerate(CONFIGS):
            assert -(1 << 63) <= state[c] < (1 << 64)
            want = state[c] & ((1 << acc_w) - 1)
            assert (got >> (64 * c)) & ((1 << 64) - 1) == want, f"config {CONFIGS[c]}, cycle {clk.cycle}"
