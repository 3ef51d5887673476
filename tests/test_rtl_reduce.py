"""hlsf_reduce (sum and max accumulators) against a Python model, as pools and as stream reductions.

tests/rtl/tb_reduce.v holds one instance per configuration; all see the same random controls
(each instance uses accumulator addr % DEPTH) and the low bits of one random input bus. Sums use
the exact accumulation width hlsfuse's check rules would prove for RUN updates of N lanes.
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import Clocked, model, pack_configs, unpack

from hlsfuse.types import Fmt

pytestmark = pytest.mark.verilator

RUN = 5  # at most RUN updates of an accumulator between two `first` updates
SUM, MAX = 0, 1
# (WIDTH, SIGNED, N, DEPTH, OP)
SHAPES = (
    (8, 1, 9, 1, MAX),  # max_pool2d 3x3: padding lanes disabled
    (8, 1, 9, 1, SUM),  # avg_pool2d 3x3 dividend
    (6, 0, 1, 5, SUM),  # sum over a stream into 5 outputs, unsigned
    (7, 1, 1, 3, MAX),  # max over a stream, signed
    (5, 0, 2, 2, MAX),  # unsigned max, two lanes
)


def _acc_w(width, signed, n, depth, op) -> int:
    return width if op == MAX else Fmt(width, width, bool(signed)).accumulate(n * RUN).width


CONFIGS = tuple((w, s, n, _acc_w(w, s, n, d, op), d, op) for w, s, n, d, op in SHAPES)
LMAX = max(n for _, _, n, _, _, _ in CONFIGS)
XMAX = max(w * n for w, _, n, _, _, _ in CONFIGS)


def test_reduce_matches_python_model():
    sim = model("tb_reduce", NCFG=len(CONFIGS), CFG=(pack_configs(CONFIGS),), LMAX=LMAX, XMAX=XMAX)
    clk, io = Clocked(sim), sim.io
    rng = np.random.default_rng(5)
    acc = [{} for _ in CONFIGS]  # per instance: address -> (value, updates since first)
    checked = [0] * len(CONFIGS)
    for _ in range(800):
        addr, rd_addr = int(rng.integers(0, 60)), int(rng.integers(0, 60))
        first = int(rng.random() < 0.3)
        lane_en = int(rng.integers(0, 1 << LMAX)) if rng.random() < 0.8 else (1 << LMAX) - 1
        data = int.from_bytes(rng.bytes((XMAX + 7) // 8), "little") & ((1 << XMAX) - 1)
        # an update that would exceed RUN terms, or accumulate into a never-started sum, starts a new one
        if any(acc[c].get(addr % d, (0, RUN))[1] >= RUN for c, (*_, d, _) in enumerate(CONFIGS)):
            first = 1
        en = int(rng.random() < 0.85)
        io.en, io.first, io.addr, io.lane_en, io.in_data, io.rd_addr = en, first, addr, lane_en, data, rd_addr
        clk.tick()
        for c, (w, s, n, acc_w, depth, op) in enumerate(CONFIGS):
            if en:
                lanes = [x for i, x in enumerate(unpack(data, w, s, n)) if lane_en >> i & 1]
                old, count = (None, 0) if first else acc[c][addr % depth]
                if op == SUM:
                    value = (old or 0) + sum(lanes)
                else:
                    lowest = -(1 << (acc_w - 1)) if s else 0
                    value = max([lowest if old is None else old, *lanes])
                acc[c][addr % depth] = (value, count + 1)
            if rd_addr % depth in acc[c]:
                want = acc[c][rd_addr % depth][0] & ((1 << acc_w) - 1)
                got = (io.rd_data.value >> (64 * c)) & ((1 << 64) - 1)
                assert got == want, f"config {CONFIGS[c]}, cycle {clk.cycle}, accumulator {rd_addr % depth}"
                checked[c] += 1
    assert min(checked) > 300
