"""hlsf_rsqrt against hlsfuse.ops.norm.rsqrt: every bucket of the table, the edges of every exponent and random
values, the table's word driven back from the index the module gives (as a stage's ROM does). One model, V_W = 63;
the generated designs (tests/test_hw_shared.py) instantiate it with V's own width."""

from __future__ import annotations

import numpy as np
import pytest
from verilated import model

from hlsfuse.ops.norm import rsqrt, rsqrt_table

pytestmark = pytest.mark.verilator


@pytest.fixture(scope="module")
def sim():
    return model("hlsf_rsqrt", V_W=63)


def _values() -> list[int]:
    rng = np.random.default_rng(11)
    values = [1, 2, 3]
    for index in range(256, 1024):  # every bucket in use, at its low end, at e = 10 (M = V): also its high end
        values += [index << 12, (index << 12) + 4095]
    for k in range(63):  # the edges of every exponent, and a value inside
        values += [1 << k, (2 << k) - 1, (1 << k) + int(rng.integers(0, 1 << k))]
    values += [int(v) for v in rng.integers(1, 2**63 - 1, 600, dtype=np.int64)]
    return sorted({v for v in values if 1 <= v < 2**63})


def test_rsqrt_is_the_reference(sim):
    values = _values()
    table = rsqrt_table().entries
    r, e = rsqrt(np.array(values, dtype=np.int64))
    for v, want_r, want_e in zip(values, r.tolist(), e.tolist()):
        sim.io.v = v
        index = int(sim.io.index.value)
        assert index == (int(v << max(0, 20 - 2 * want_e)) >> max(0, 2 * want_e - 20)) >> 12
        sim.io.entry = int(table[index])
        assert (int(sim.io.r.value), int(sim.io.e.value)) == (want_r, want_e), f"V = {v}"
    assert len(values) > 1500
