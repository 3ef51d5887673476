"""hlsf_fifo, hlsf_skid and hlsf_fork under random valid/ready patterns, against Python models.

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


N_FORK = 3


@pytest.fixture(scope="module")
def fork():
    return model("hlsf_fork", WIDTH=8, N=N_FORK)


def _fork_run(sim, data, rng, p_valid, p_ready):
    """Returns (what each output received, cycles, whether outputs ever took an element in different cycles)."""
    clk, io = Clocked(sim), sim.io
    clk.reset()
    src = Source(data, rng, p_valid)
    received = [[] for _ in range(N_FORK)]
    staggered = False
    while src.index < len(data):
        assert clk.cycle < 20000, "no progress"
        io.in_tvalid, io.in_tdata = src.offer()
        ready = [int(rng.random() < p) for p in p_ready]
        io.out_tready = sum(r << i for i, r in enumerate(ready))
        out_valid, out_data, in_ready = io.out_tvalid.value, io.out_tdata.value, io.in_tready.value
        assert out_data == io.in_tdata.value
        takes = [bool(out_valid >> i & 1) and bool(ready[i]) for i in range(N_FORK)]
        for i in range(N_FORK):
            has = len(received[i]) > src.index  # output i already took the current element
            assert bool(out_valid >> i & 1) == (src.valid and not has), f"cycle {clk.cycle}: out_tvalid[{i}]"
            if takes[i]:
                received[i].append(out_data)
        done = all(len(r) > src.index for r in received)
        assert bool(in_ready and src.valid) == (src.valid and done), f"cycle {clk.cycle}: in_tready"
        staggered |= any(takes) and not all(takes)
        if src.valid and in_ready:
            src.taken()
        clk.tick()
    return received, clk.cycle, staggered


@pytest.mark.parametrize("seed", range(4))
def test_fork_random_backpressure(fork, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, 300).tolist()
    p_ready = rng.uniform(0.2, 1.0, N_FORK)
    received, _, staggered = _fork_run(fork, data, rng, rng.uniform(0.4, 1.0), p_ready)
    assert received == [data] * N_FORK
    assert staggered  # the outputs really did take elements in different cycles


def test_fork_full_throughput(fork):
    data = list(range(100))
    received, cycles, staggered = _fork_run(fork, data, np.random.default_rng(0), 1.0, [1.0] * N_FORK)
    assert (received, cycles, staggered) == ([data] * N_FORK, len(data), False)
