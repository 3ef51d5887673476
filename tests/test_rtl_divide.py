"""hlsf_divide_const against Python floor division, and divide + hlsf_assign against assign_quotient.

tests/rtl/tb_divide.v holds one divider per configuration (with up to four selectable divisors)
and, behind each, hlsf_assign in all 28 mode pairs as a mean's final rounding. The magic constants
come from constant functions on wide vectors, so Icarus is checked to elaborate them identically. Small dividends
are checked exhaustively for every divisor; one wide configuration (a 55-bit dividend scaled by
2^9: the 64-bit limit of Fmt.dividend, a 72-bit magic shift) on random and extreme values.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from verilated import RTL, TB, model

from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES, FixedType, assign_quotient

pytestmark = pytest.mark.verilator

# (NUM_W, NUM_SIGNED, NUM_FRAC, OUT_W, OUT_FRAC, OUT_SIGNED, divisors): SHIFT = OUT_FRAC - NUM_FRAC + 1
CONFIGS = (
    (8, 1, 0, 8, 0, 1, (3, 5, 7, 9)),  # int8 means: SHIFT = 1
    (10, 1, 4, 6, 1, 1, (1, 2, 6, 10)),  # SHIFT = -2: the dividend is floored first
    (9, 0, 2, 8, 5, 0, (4, 9, 25, 255)),  # unsigned, SHIFT = 4
    (7, 1, 0, 4, -2, 1, (3, 11, 12, 13)),  # SHIFT = -1
    (6, 1, 10, 3, 0, 1, (3,)),  # SHIFT = -9: every bit shifted out; a single divisor
    (55, 1, 0, 16, 8, 1, (3, 7, 100, 255)),  # wide: SHIFT = 9, a 64-bit dividend (the limit); random values
)
SMALL = 5  # the first SMALL configurations are checked exhaustively
XW, QMAX, YW = 55, 72, 16


def _literal() -> str:
    value = 0
    for c, (*fields, divisors) in enumerate(CONFIGS):
        row = [*fields, len(divisors), 0, *divisors, *[0] * (4 - len(divisors))]
        for f, field in enumerate(row):
            value |= (field & 0xFF) << (96 * c + 8 * f)
    return f"{96 * len(CONFIGS)}'h{value:x}"


@pytest.fixture(scope="module")
def sim():
    return model("tb_divide", NCFG=len(CONFIGS), CFG=(_literal(),), XW=XW, QMAX=QMAX, YW=YW)


def _floor_division(num: int, shift: int, n: int) -> tuple[int, bool]:
    if shift >= 0:
        return (num << shift) // n, (num << shift) % n != 0
    return num // (n << -shift), num % (n << -shift) != 0


def _check(sim, c: int, raws: list[int]) -> int:
    """Compare configuration c on raw dividends ``raws`` with every divisor; returns the comparisons made."""
    num_w, num_signed, num_frac, out_w, out_frac, out_signed, divisors = CONFIGS[c]
    shift = out_frac - num_frac + 1
    quot_w = num_w + 1 + max(shift, 0)
    types = [FixedType(out_w, out_w - out_frac, bool(out_signed), q, o) for q in QUANT_MODES for o in OVERFLOW_MODES]
    done = 0
    for sel, n in enumerate(divisors):
        sim.io.sel = sel
        want_modes = [assign_quotient(np.array(raws), num_frac, n, t) & ((1 << out_w) - 1) for t in types]
        for j, raw in enumerate(raws):
            sim.io.num = raw & ((1 << num_w) - 1)
            quot = (sim.io.quot.value >> (c * QMAX)) & ((1 << quot_w) - 1)
            quot -= (quot >> (quot_w - 1)) << quot_w
            inexact = (sim.io.inexact.value >> c) & 1
            want_quot, want_inexact = _floor_division(raw, shift, n)
            assert (quot, inexact) == (want_quot, want_inexact), f"config {c}, n={n}, num={raw}: quotient"
            y = sim.io.y.value >> (c * 28 * YW)
            got = [(y >> (k * YW)) & ((1 << YW) - 1) for k in range(28)]
            want = [int(w[j]) for w in want_modes]
            assert got == want, f"config {c}, n={n}, num={raw}: mean under {QUANT_MODES} x {OVERFLOW_MODES}"
            done += 1
    return done


@pytest.mark.parametrize("c", range(SMALL))
def test_divide_exhaustive(sim, c):
    num_w, num_signed = CONFIGS[c][:2]
    low = -(1 << (num_w - 1)) if num_signed else 0
    raws = list(range(low, low + (1 << num_w)))
    assert _check(sim, c, raws) == len(raws) * len(CONFIGS[c][-1])


def test_divide_wide_dividend(sim):
    c = SMALL
    num_w = CONFIGS[c][0]
    rng = np.random.default_rng(3)
    top = 1 << (num_w - 1)
    extremes = [-top, -top + 1, -1, 0, 1, top - 1, top - 2, -top // 3]
    randoms = [int(v) for v in rng.integers(-top, top, 300, dtype=np.int64)]
    assert _check(sim, c, extremes + randoms) == 4 * 308


@pytest.mark.iverilog
def test_icarus_computes_the_same(sim, tmp_path):
    params = {"NCFG": len(CONFIGS), "CFG": _literal(), "XW": XW, "QMAX": QMAX, "YW": YW, "SWEEP_W": 10}
    binary = tmp_path / "sweep"
    command = ["iverilog", "-g2005", "-y", str(RTL), "-y", str(TB), "-o", str(binary), str(TB / "tb_divide_sweep.v")]
    command += [f"-Ptb_divide_sweep.{k}={v}" for k, v in params.items()]
    subprocess.run(command, check=True, capture_output=True, text=True)
    lines = subprocess.run(["vvp", "-n", str(binary)], check=True, capture_output=True, text=True).stdout.split("\n")
    rows = [line.split() for line in lines if line.strip()]
    assert len(rows) == 4 << 10
    for sel, num, quot, inexact, y in rows:
        sim.io.sel, sim.io.num = int(sel, 16), int(num, 16)
        assert (int(quot, 16), int(inexact, 16), int(y, 16)) == (
            sim.io.quot.value, sim.io.inexact.value, sim.io.y.value
        ), f"sel {sel}, num {num}"
