"""mem_lines: ROM contents as $readmemh text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlsfuse.backends.verilog import mem_lines
from hlsfuse.errors import HlsfuseError


def test_words_are_raw_bit_patterns_with_fixed_digit_count():
    assert mem_lines([0, -1, 5, -128, 255], 8) == "00\nff\n05\n80\nff\n"
    assert mem_lines(np.array([[1, -2], [3, 0]]), 5) == "01\n1e\n03\n00\n"  # row-major, 5 bits in 2 digits
    assert mem_lines([-1], 64) == "f" * 16 + "\n"
    assert mem_lines([], 8) == ""


def test_lanes_pack_consecutive_values_first_in_low_bits():
    assert mem_lines([1, -1, 2, 3], 4, lanes=2) == "f1\n32\n"
    assert mem_lines([-1, 0, 1], 30, lanes=3) == f"{1 << 60 | (1 << 30) - 1:023x}\n"


@pytest.mark.parametrize(
    "values,width,lanes,message",
    [
        ([256], 8, 1, "ROM element 0 is 256, which does not fit 8 bits"),
        ([0, -129], 8, 1, "ROM element 1 is -129, which does not fit 8 bits"),
        ([0], 65, 1, "ROM element width must be 1..64 bits, not 65"),
        ([1, 2, 3], 8, 2, "ROM of 3 elements cannot be packed 2 per word"),
    ],
)
def test_bad_contents_are_rejected(values, width, lanes, message):
    with pytest.raises(HlsfuseError, match=f"^{message}$"):
        mem_lines(values, width, lanes)


def _one_by_one(values, width: int, lanes: int) -> str:
    """The definition, a word at a time with Python integers (what the vectorized mem_lines must equal)."""
    flat = [int(v) for v in np.asarray(values).reshape(-1)]
    digits = (width * lanes + 3) // 4
    out = []
    for start in range(0, len(flat), lanes):
        word = 0
        for lane, value in enumerate(flat[start:start + lanes]):
            word |= (value & ((1 << width) - 1)) << (lane * width)
        out.append(f"{word:0{digits}x}\n")
    return "".join(out)


@given(st.data(), st.integers(1, 64), st.integers(1, 20), st.integers(0, 6), st.booleans())
@settings(max_examples=300)
def test_words_of_any_width_and_lanes_are_the_definitions(data, width, lanes, words, unsigned):
    lo, hi = (0, (1 << min(width, 63)) - 1) if unsigned else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    values = data.draw(st.lists(st.integers(lo, hi), min_size=lanes * words, max_size=lanes * words))
    assert mem_lines(values, width, lanes) == _one_by_one(values, width, lanes)


def _large_constant():
    """An addend of 71 x 65 x 8 bits (a MAC stage's weights are banks, a ROM each or a word of all per address)."""
    from hlsfuse import GraphBuilder

    b = GraphBuilder("packed", dtype="fixed<16,6,RND,SAT>")  # a SystemVerilog keyword: the top is 'packed_'
    x = b.input("x", [1, 71, 65])
    w = b.constant("w", np.random.default_rng(5).normal(0, 0.3, (71, 65)), dtype="fixed<8,1,RND,SAT>")
    b.output(b.add(x, w, name="fc"))
    return b.build()


def test_a_large_rom_is_packed_in_its_file_and_unpacked_at_time_zero():
    from hlsfuse.backends.verilog import emit_verilog
    from hlsfuse.fusion import fuse
    from hlsfuse.lower import lower

    graph = _large_constant()
    files = emit_verilog(graph, lower(graph, fuse(graph)))
    [mem] = [text for path, text in files.items() if path.endswith("_w.mem")]
    lines = mem.splitlines()
    assert len(lines) == -(-71 * 65 // 32) and {len(line) for line in lines} == {64}  # 32 bytes a line
    raw = graph.constant_map["w"].data.reshape(-1)
    assert mem == mem_lines(np.concatenate([raw, np.zeros(-raw.size % 32, dtype=np.int64)]), 8, 32)
    [module] = [text for path, text in files.items() if "$readmemh" in text and "_words" in text]
    assert "[(rom_w_i % 32) * 8 +: 8]" in module and "rom_w_i < 4615;" in module


@pytest.mark.verilator
def test_a_packed_rom_simulates_exactly_and_lints_clean(tmp_path):
    """(The graph is named 'packed', a SystemVerilog keyword, which Verilator refused as a module name.)"""
    from rtl_design import design, lint, simulate

    graph = _large_constant()
    result = simulate(graph, tmp_path, frames=2, driver="native")
    assert result.passed, result.report()
    assert lint(design(graph, tmp_path / "lint")) == ""
