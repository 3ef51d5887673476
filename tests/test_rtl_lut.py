"""hlsf_lut against hlsfuse.lut tables, and hlsf_rom with packed words, loaded from mem_lines files.

The LUT's ROM file is written by hlsfuse.backends.verilog.mem_lines from make_table's entries,
exactly as the generator will; every raw input is streamed through the stage (in random order,
under random valid/ready patterns) and must come out as Table.lookup gives it.
"""

from __future__ import annotations

import numpy as np
import pytest
from verilated import Clocked, mem_file, model, pump

from hlsfuse.backends.verilog import mem_lines
from hlsfuse.lut import make_table
from hlsfuse.types import Fmt, parse_dtype

pytestmark = pytest.mark.verilator

TABLES = {
    # signed input, 12 bits into 6 table bits: shift 6, buckets of 64 raw steps
    "tanh": ("tanh", Fmt(12, 4, True), parse_dtype("fixed<8,1,RND,SAT>"), 6),
    # unsigned input, every raw value its own entry (shift 0)
    "exp": ("exp", Fmt(7, 2, False), parse_dtype("ufixed<10,4,RND>"), 10),
}


def _lut(name: str):
    function, in_fmt, out_type, table_bits = TABLES[name]
    table = make_table(function, in_fmt, out_type, table_bits)
    path = mem_file(mem_lines(table.entries, out_type.width))
    sim = model(
        "hlsf_lut", IN_W=in_fmt.width, IN_SIGNED=int(in_fmt.signed), OUT_W=out_type.width,
        SHIFT=table.shift, INIT_FILE=str(path),
    )
    return table, sim


@pytest.mark.parametrize("name", sorted(TABLES))
def test_lut_matches_make_table(name):
    table, sim = _lut(name)
    width = table.in_fmt.width
    rng = np.random.default_rng(len(name))
    raws = rng.permutation(np.arange(table.in_min, table.in_min + (1 << width)))
    received, _ = pump(sim, [int(r) & ((1 << width) - 1) for r in raws], rng, 0.7, 0.6)
    out_w = table.out_type.width
    want = table.lookup(raws) & ((1 << out_w) - 1)
    assert table.shift == (6 if name == "tanh" else 0)
    assert received == want.tolist()
    assert len(set(received)) > 8  # the table is not flat: a wrong index would show


def test_lut_full_throughput():
    table, sim = _lut("tanh")
    data = list(range(300))  # non-negative raw values: their bits are the values
    received, cycles = pump(sim, data, np.random.default_rng(0), 1.0, 1.0)
    assert cycles == len(data) + 1
    assert received == (table.lookup(np.array(data)) & 0xFF).tolist()


def test_rom_packed_words_and_read_enable():
    width, lanes, depth = 30, 3, 5  # 90-bit words, a depth that is not a power of two
    rng = np.random.default_rng(2)
    values = rng.integers(-(1 << 29), 1 << 29, (depth, lanes))
    sim = model("hlsf_rom", WIDTH=width * lanes, DEPTH=depth, INIT_FILE=str(mem_file(mem_lines(values, width, lanes))))
    clk, io = Clocked(sim), sim.io
    words = [sum((int(v) & ((1 << width) - 1)) << (width * k) for k, v in enumerate(row)) for row in values]
    expected = None
    for _ in range(60):
        address, enable = int(rng.integers(0, depth)), int(rng.random() < 0.6)
        io.rd_addr, io.rd_en = address, enable
        clk.tick()
        expected = words[address] if enable else expected
        if expected is not None:
            assert io.rd_data.value == expected
