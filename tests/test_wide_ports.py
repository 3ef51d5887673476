"""Ports wider than 64 bits of TDATA (up to PORT_BITS = 1024): a graph with 128-, 480- and 96-bit ports bit-exact in
C simulation (under both header sets) and in Verilator with both drivers (and the timing model's cycles), lint
clean. tests/test_hls_headers.py checks ap_uint<W> for W > 64 itself."""

from __future__ import annotations

import numpy as np
import pytest
from hls_support import csim_both
from rtl_design import lint, plan_of, simulate

from hlsfuse import GraphBuilder
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower import Folding
from hlsfuse.sim.rtlsim_pyverilator import pack, unpack

PORTS = (("x", 8), ("y", 40), ("a", 8), ("b", 40), ("d", 8))


def wide_graph():
    """x [1, 3, 8] of 16 bits -> bias_add, relu (a); y [1, 2, 40] of 12 bits -> + a constant row (b), and a dense
    to 8 outputs (d). At the lanes of PORTS: TDATA of 128 (x, a), 480 (y, b) and 96 bits (d)."""
    rng = np.random.default_rng(11)
    g = GraphBuilder("wide", dtype="fixed<16,6>")
    x = g.input("x", [1, 3, 8])
    g.output(g.relu(g.bias_add(x, g.constant("bias", rng.uniform(-2, 2, 8))), name="a"))
    y = g.input("y", [1, 2, 40], dtype="fixed<12,4>")
    g.output(g.add(y, g.constant("row", rng.uniform(-1, 1, 40), dtype="fixed<12,4>"), name="b", dtype="fixed<12,4>"))
    w = g.constant("w", rng.uniform(-0.5, 0.5, (8, 40)), dtype="fixed<8,1>")
    g.output(g.dense(y, w, name="d", dtype="fixed<12,4>"))
    return g.build()


def test_pack_and_unpack_round_trip_tdata_wider_than_64_bits():
    values = np.array([-3, 5, -2048, 2047] * 30, dtype=np.int64)
    words = pack(values, 12, 40)
    assert len(words) == 3 and words[0] >> 468 == 0xFFF & 2047  # element 39 in the top 12 bits
    assert words[0] & 0xFFF == 0xFFF & -3
    back = unpack(words, 12, 40)
    assert (np.where(back >= 2048, back - 4096, back) == values).all()


# --------------------------------------------------------------------------
# The work-alike ap_uint<W> / ap_int<W> for W > 64
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# A graph with wide ports
# --------------------------------------------------------------------------


def test_wide_ports_are_typed_by_their_lanes():
    graph = wide_graph()
    files = compile(graph, CompileOptions(fold=Folding(ports=PORTS))).files
    header = files["hls/wide.h"]
    assert "hls::axis<ap_uint<128>, 0, 0, 0>" in header and "hls::axis<ap_uint<480>, 0, 0, 0>" in header
    assert "hls::axis<ap_uint<96>, 0, 0, 0>" in header


@pytest.mark.gxx
def test_wide_ports_are_bit_exact_in_csim(tmp_path):
    graph = wide_graph()
    design = compile(graph, CompileOptions(fold=Folding(ports=PORTS)))
    result = csim_both(design.write(tmp_path / "out"), graph=graph)
    assert result.passed, result.report()


@pytest.mark.verilator
@pytest.mark.parametrize("driver", ["native", pytest.param("pyverilator", marks=pytest.mark.pyverilator)])
def test_wide_ports_are_bit_exact_and_cycle_exact_in_rtlsim(driver, tmp_path):
    graph = wide_graph()
    plan = plan_of(graph, fold=Folding(ports=PORTS))
    assert {p.tensor: p.lanes for p in (*plan.inputs, *plan.outputs)} == dict(PORTS)
    result = simulate(graph, tmp_path, frames=3, driver=driver, plan=plan)  # cycles checked against the model
    assert result.passed, result.report()
    top = (tmp_path / "verilog" / "wide.v").read_text()
    assert "input  wire [479:0] y_TDATA" in top and "output wire [95:0] d_TDATA" in top
    if driver == "native":
        assert lint(tmp_path) == ""
