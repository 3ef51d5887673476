"""hlsf_fifo and hlsf_skid under random valid/ready patterns, against Python models.

Every cycle the testbench sets the inputs (a source that holds its element until it is taken, as
AXI4-Stream requires, and random sink readiness), checks the outputs against the model, records
the handshakes and clocks. Besides order, loss and duplication, the checks cover the AXI rule
that a valid output keeps its data until taken, full throughput when both sides are always ready,
and, for FIFO and skid, that in_tready does not change when only out_tready does (no combinational
path; test_rtl_lint.py checks the same property structurally).
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import Clocked, Source, model

pytestmark = pytest.mark.verilator


def _stream(sim, data, rng, p_valid, p_ready, depth=None, max_cycles=20000):
    """Run a 1-in 1-out module (fifo, skid) until ``data`` has passed; returns (received, cycles)."""
    clk, io = Clocked(sim), sim.io
    clk.reset()
    src = Source(data, rng, p_valid)
    received, held = [], None  # held: (data) of an output valid but not taken last cycle
    while len(received) < len(data):
        assert clk.cycle < max_cycles, f"no progress: {len(received)} of {len(data)} received"
        io.in_tvalid, io.in_tdata = src.offer()
        ready = int(rng.random() < p_ready)
        io.out_tready = 1 - ready  # in_tready must not follow out_tready within the cycle
        in_ready_other = io.in_tready.value
        io.out_tready = ready
        in_ready, out_valid, out_data = io.in_tready.value, io.out_tvalid.value, io.out_tdata.value
        assert in_ready == in_ready_other, f"cycle {clk.cycle}: in_tready follows out_tready combinationally"
        if held is not None:
            assert out_valid and out_data == held, f"cycle {clk.cycle}: a valid output changed before it was taken"
        if depth is not None:
            occupancy = src.index - len(received)
            assert io.count.value == occupancy, f"cycle {clk.cycle}: count {io.count.value}, holds {occupancy}"
            assert in_ready == (occupancy < depth) and out_valid == (occupancy > 0)
        if out_valid and ready:
            received.append(out_data)
        held = out_data if out_valid and not ready else None
        if src.valid and in_ready:
            src.taken()
        clk.tick()
    return received, clk.cycle


@pytest.fixture(scope="module", params=[2, 5])
def fifo(request):
    return request.param, model("hlsf_fifo", WIDTH=8, DEPTH=request.param)


@pytest.mark.parametrize("p_valid,p_ready", [(0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 0.7), (0.7, 1.0)])
def test_fifo_random_handshakes(fifo, p_valid, p_ready):
    depth, sim = fifo
    rng = np.random.default_rng(int(p_valid * 10) * 10 + int(p_ready * 10))
    data = rng.integers(0, 256, 400).tolist()
    received, _ = _stream(sim, data, rng, p_valid, p_ready, depth=depth)
    assert received == data


def test_fifo_full_throughput(fifo):
    depth, sim = fifo
    data = list(range(200))
    received, cycles = _stream(sim, data, np.random.default_rng(0), 1.0, 1.0, depth=depth)
    assert received == data
    assert cycles == len(data) + 1  # one element per cycle after the 1-cycle latency


def test_fifo_fills_to_depth_and_reset_empties_it(fifo):
    depth, sim = fifo
    clk, io = Clocked(sim), sim.io
    clk.reset()
    io.out_tready, io.in_tvalid = 0, 1
    for k in range(depth + 3):
        io.in_tdata = k
        clk.tick()
    assert (io.count.value, io.in_tready.value, io.out_tdata.value) == (depth, 0, 0)
    clk.reset()
    assert (io.count.value, io.in_tready.value, io.out_tvalid.value) == (0, 1, 0)


@pytest.fixture(scope="module")
def skid():
    return model("hlsf_skid", WIDTH=8)


@pytest.mark.parametrize("p_valid,p_ready", [(0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 0.6)])
def test_skid_random_handshakes(skid, p_valid, p_ready):
    rng = np.random.default_rng(int(p_valid * 10) * 10 + int(p_ready * 10))
    data = rng.integers(0, 256, 400).tolist()
    received, _ = _stream(skid, data, rng, p_valid, p_ready)
    assert received == data


def test_skid_full_throughput(skid):
    data = list(range(200))
    received, cycles = _stream(skid, data, np.random.default_rng(0), 1.0, 1.0)
    assert (received, cycles) == (data, len(data) + 1)
