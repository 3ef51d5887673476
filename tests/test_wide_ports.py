"""Ports wider than 64 bits of TDATA (up to PORT_BITS = 1024): the work-alike ap_uint<W> for W > 64 against
Python's integers, and a graph with 128-, 480- and 96-bit ports bit-exact in C simulation and in Verilator
with both drivers (and the timing model's cycles), lint clean."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hls_support import INCLUDE, STRICT
from rtl_design import lint, plan_of, simulate

from hlsfuse import GraphBuilder
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower import Folding
from hlsfuse.sim import csim
from hlsfuse.sim.rtlsim import pack, unpack

WIDE_CHECK = Path(__file__).parent / "cxx" / "ap_wide_check.cpp"
WIDTHS = (65, 128, 200)
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


def _words(p: int, w: int) -> list[str]:
    return [f"{(p >> (64 * k)) & (2**64 - 1):x}" for k in range((w + 63) // 64)]


def _signed(p: int, bits: int) -> int:
    p &= (1 << bits) - 1
    return p - (1 << bits) if p >> (bits - 1) else p


def _cases(rng: random.Random):
    """(input line, expected output line) pairs for every width, signedness and operation."""
    for w in WIDTHS:
        mask = (1 << w) - 1
        for s in (0, 1):
            for _ in range(6):
                p = rng.getrandbits(w) if rng.random() < 0.8 else rng.choice([0, mask, 1 << (w - 1)])
                q = rng.getrandbits(w)
                v = _signed(p, w) if s else p
                head = f"{w} {s}"
                xs = " ".join(_words(p, w))
                lo = rng.randrange(w)
                hi = rng.randrange(lo, w)
                n = hi - lo + 1
                field = (p >> lo) & ((1 << n) - 1)
                yield f"{head} words {xs}", " ".join(_words(p, w))
                yield f"{head} read {xs} {hi} {lo}", " ".join([*_words(field, w), f"{field & (2**64 - 1):x}"])
                put = (p & ~(((1 << n) - 1) << lo) | ((q & ((1 << n) - 1)) << lo)) & mask
                yield f"{head} write {xs} {hi} {lo} {' '.join(_words(q, w))}", " ".join(_words(put, w))
                hi64 = rng.randrange(lo, min(lo + 64, w))
                n64 = hi64 - lo + 1
                v64 = rng.getrandbits(64)
                put = (p & ~(((1 << n64) - 1) << lo) | ((v64 & ((1 << n64) - 1)) << lo)) & mask
                yield f"{head} write64 {xs} {hi64} {lo} {v64:x}", " ".join(_words(put, w))
                for k in (0, 1, 31, 63, 64, 65, w - 1, w, w + 7, rng.randrange(w)):
                    yield f"{head} shl {xs} {k}", " ".join(_words((p << k) & mask, w))
                    yield f"{head} shr {xs} {k}", " ".join(_words((v >> k) & mask, w))
                yield f"{head} shl {xs} -3", " ".join(_words((v >> 3) & mask, w))
                yield f"{head} not {xs}", " ".join(_words(~p & mask, w))
                i, b = rng.randrange(w), rng.randrange(2)
                yield f"{head} bit {xs} {i} {b}", " ".join([*_words(p & ~(1 << i) | (b << i), w), str(b)])
                c = rng.choice([-1, -(2**63), 2**63 - 1, rng.randrange(-(2**40), 2**40)])
                yield f"{head} int {xs} {c}", " ".join(_words(c & mask, w))
                e = rng.randrange(-2048, 2048)
                lanes = w // 12
                packed = p & ~((1 << (12 * lanes)) - 1) | sum((e & 0xFFF) << (12 * k) for k in range(lanes))
                yield f"{head} elem {xs} {e}", " ".join([*_words(packed, w), *[str(e)] * lanes])
                same = q if rng.random() < 0.5 else p
                yield (f"{head} eq {xs} {' '.join(_words(same, w))}",
                       f"{int(same == p)} {int(same != p)} {int(v == 5)}")
                yield f"{head} to {xs}", f"{_signed(p, 32)} {p & (2**32 - 1)} {_signed(p, 64)} {p & (2**64 - 1):x}"
        five = " ".join(_words(5, w))
        yield f"{w} 1 eq {five} {five}", "1 0 1"


@pytest.mark.gxx
def test_wide_ap_uint_matches_python_integers(tmp_path):
    exe = tmp_path / "ap_wide_check"
    build = ["g++", *STRICT, "-I", str(INCLUDE), str(WIDE_CHECK), "-o", str(exe)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = list(_cases(random.Random(5)))
    run = subprocess.run([str(exe)], input="\n".join(line for line, _ in cases) + "\n",
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = run.stdout.splitlines()
    assert len(got) == len(cases)
    wrong = [(line, want, have.strip()) for (line, want), have in zip(cases, got) if have.strip() != want]
    assert not wrong, wrong[:5]


def test_wide_arithmetic_is_a_compile_error(tmp_path):
    source = tmp_path / "bad.cpp"
    source.write_text("#include <ap_int.h>\n"
                      "int main() {\n"
                      "  ap_uint<128> a = 1;\n"
                      "  auto sum = a + a;\n"
                      "  ap_uint<64> u = 1;\n"
                      "  auto wider = u * u;\n"
                      "  return sum.to_int() + wider.to_int();\n"
                      "}\n")
    done = subprocess.run(["g++", *STRICT, "-fsyntax-only", "-I", str(INCLUDE), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "bad.cpp:4:" in done.stderr  # no + on 128 bits
    assert "an exact intermediate (product, sum, negation) wider than 64 bits is not supported" in done.stderr


test_wide_arithmetic_is_a_compile_error = pytest.mark.gxx(test_wide_arithmetic_is_a_compile_error)


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
    result = csim(design.write(tmp_path / "out"), graph=graph)
    assert result.passed, result.report()


@pytest.mark.verilator
@pytest.mark.parametrize("driver", ["native", "pyverilator"])
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
