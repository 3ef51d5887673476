"""Lanes on own stages in the HLS backend: tokens of L innermost elements through pad, concat, slice, transpose,
softmax, argmax and topk (the schedules of ``hlsfuse.lower.stage_own``).

One graph holds every op, each with lanes L by the folding; its stages' loops must count tokens (checked
without a compiler), its kernel calls must carry L and bank their buffers by L, and the design must be bit
for bit the reference in C simulation, for L = 2 and 4 (one g++ build each: the machine is shared). A
second graph, every op over an innermost axis of 6, checks lanes 3 (not a power of two: the kernels'
trees are uneven) and 6 (one token per row).
"""

from __future__ import annotations

import pytest
from hls_support import csim_both
from own_graphs import LANES_ZOO_HEADS, lanes_whole_tokens, lanes_zoo, own_stages

from hlsfuse import GraphBuilder, HlsfuseError
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower import Folding


def tokens(lanes: int) -> dict[str, int]:
    """Iterations per frame of each own stage at ``lanes``, counted by hand in tokens."""
    L = lanes
    return {
        "pad": 3 * 4 * 16 // L,  # one per output token
        "pad_rf": (2 * 3 * 8 + 3 * 6 * 8) // L,  # read the block, write it padded
        "cat_last": 2 * 3 * 12 // L,
        "cat_outer": 2 * 4 * 8 // L,
        "sl": 2 * 3 * 8 // L,  # streams: one per input token
        "sl_block": 2 * (3 * 8 + 2 * 8) // L,  # per outer index: read the block of 3 x 8, write 2 x 8
        "sl_wide": 2 * 2 * 128 // L,  # read the whole tensor, write it
        "pad_sl": 3 * 4 * 16 // L,
        "tr": 2 * 2 * 3 * 2 * 8 // L,  # read the block, write it
        "sm": 3 * 2 * 3 * 8 // L,  # read, exp and sum, write
        "sm_u": 3 * 2 * 128 // L,
        "am_outer": 2 * (3 + 1) * 8 // L,  # per outer index: 3 x 8 / L reads, 8 / L writes
        "am_first": (2 + 1) * 24 // L,
        "am_wide": (2 + 1) * 128 // L,
        "am_last": 4 * (8 // L + 1),  # per row: 8 / L reads, one index written
        "top_v": 4 * (8 // L + 3),  # per row: 8 / L reads, K writes
        "top_i": 4 * (8 // L + 5),
        "top_all": 6 * (8 // L + 8),
    }


def lanes_out(head: str, lanes: int) -> int:
    return 1 if head in ("am_last", "top_v", "top_i", "top_all") else lanes


def design(lanes: int):
    graph = lanes_zoo()
    return graph, compile(graph, CompileOptions(fold=Folding(lanes=tuple((h, lanes) for h in LANES_ZOO_HEADS))))


@pytest.mark.parametrize("lanes", [2, 4])
def test_own_stages_of_l_lanes_loop_over_tokens(lanes):
    _, d = design(lanes)
    stages = own_stages(d.plan)
    assert set(stages) == set(LANES_ZOO_HEADS)
    assert {h: s.cycles for h, s in stages.items()} == tokens(lanes)
    for head, s in stages.items():
        main = s.schedule.main
        assert (main.lanes_in, main.lanes_out) == (lanes, lanes_out(head, lanes)), head
        io = s.schedule.io
        assert len(io[s.outputs[0]]) == d.graph.types[head].size // lanes_out(head, lanes), head


@pytest.mark.parametrize("lanes", [2, 4])
def test_own_kernel_calls_carry_l_and_bank_their_buffers(lanes):
    _, d = design(lanes)
    cpp = d.files["hls/own_lanes.cpp"]
    stage = {h: s.name for h, s in own_stages(d.plan).items()}

    def body(head: str) -> str:
        start = cpp.index(f"static void {stage[head]}(")
        return cpp[start : cpp.index("\n}\n", start)]

    L = lanes
    assert f"hlsf::dims<3, 4, {16 // L}>, {L}>(" in body("pad")  # the output shape in tokens, then L
    assert f"hls::stream<hlsf::lanes<t_pad, {L}>>& " in body("pad")
    # reflect: the block (small: registers), the tables of axes 0.. (the innermost in tokens) and L last
    assert "variable=block type=complete" in body("pad_rf")
    table = ", ".join(map(str, [1, 0, 1, 2, 1, 0, 1, 2, 1, *range(8 // L)]))  # axis 0's, 1's, the tokens of 2
    assert f"static const int indices[{9 + 8 // L}] = {{{table}}};" in body("pad_rf")
    assert f"hlsf::dims<2, 3, {8 // L}>, hlsf::dims<3, 6, {8 // L}>,\n                          0, {L}>(" in body(
        "pad_rf")
    assert f"hlsf::concat_lanes_stage<t_cat_last, {L}, 6, 1, {8 // L}, {4 // L}>(" in body("cat_last")
    outer = body("cat_outer")
    assert f"hlsf::concat_lanes_stage<t_cat_outer, {L}, 2, {8 // L}, 3, 1>(" in outer
    assert f"hlsf::rom_reader<t_c, 16, {L}, hlsf::raw<" in outer  # read from its raw integers
    assert f"type=cyclic factor={L}" in outer  # the constant's ROM: a token is L parallel reads
    assert f"hlsf::dims<1, 0, {4 // L}>, hlsf::dims<1, 2, 1>, {48 // L}, {L}>(" in body("sl")
    # the block, L elements per token: banked by L (a memory), or registers (small)
    assert f"variable=block type=cyclic factor={L}" in body("tr")
    assert "variable=block type=complete" in body("sl_block")
    assert f"hlsf::dims<1, -2, 1>, 1, {80 // L}, {L}>(" in body("sl_block")
    assert f"variable=block type=cyclic factor={L}" in body("sl_wide")
    assert "variable=row type=complete" in body("sm")
    assert f", 6, 8, {L}>(" in body("sm")
    for array in ("row", "exps"):  # the row and its exponentials, L at a time
        assert f"variable={array} type=cyclic factor={L}" in body("sm_u")
    assert f", 2, 128, {L}>(" in body("sm_u")
    assert "variable=best type=complete" in body("am_outer")  # INNER running maxima, L at a time
    for array in ("best", "where"):
        assert f"variable={array} type=cyclic factor={L}" in body("am_wide")
    assert f", 2, 3, 8, {L}>(" in body("am_outer")
    assert f", 4, 8, 1, {L}>(" in body("am_last")
    assert "factor" not in body("am_last")  # one running maximum
    assert "hls::stream<t_am_last>& " in body("am_last")
    assert f"4, 8, 3,\n                     false, {L}>(" in body("top_v")


def test_lanes_one_calls_stay_as_they_were():
    _, d = design(1)
    cpp = d.files["hls/own_lanes.cpp"]
    assert "hlsf::concat_stage<t_cat_last, 6, 1, 8, 4>(" in cpp
    assert "hlsf::rom_reader<t_c, 16, 1, hlsf::raw<" in cpp  # one lane, then how its ROM stores it
    assert "hlsf::lanes" not in cpp and "concat_lanes_stage" not in cpp


def test_reflect_or_edge_padding_of_the_innermost_axis_is_refused_lanes():
    b = GraphBuilder("rf", dtype="fixed<8,3>")
    b.output(b.pad(b.input("x", [2, 8]), pads=[0, 0, 0, 2], mode="edge", name="pd"))
    with pytest.raises(HlsfuseError, match="a pad stage cannot take lanes 2: its edge padding of the innermost axis "
                                           "copies elements, not whole tokens"):
        compile(b.build(), CompileOptions(fold=Folding(lanes=(("pd", 2),))))


def test_a_float_softmax_is_refused_lanes():
    b = GraphBuilder("fsm", dtype="float32")
    b.output(b.softmax(b.input("x", [2, 8]), name="sm"))
    with pytest.raises(HlsfuseError, match="a softmax stage cannot take lanes 2: a float32 softmax sums its row"):
        compile(b.build(), CompileOptions(fold=Folding(lanes=(("sm", 2),))))


@pytest.mark.gxx
@pytest.mark.parametrize("lanes", [2, 4])
def test_own_stages_of_l_lanes_are_bit_exact_in_csim(lanes, tmp_path):
    graph, d = design(lanes)
    result = csim_both(d.write(tmp_path / "out"), graph=graph)
    assert result.passed, result.report()


@pytest.mark.gxx
@pytest.mark.parametrize("lanes", [3, 6])
def test_odd_lanes_and_a_token_per_row_are_bit_exact_in_csim(lanes, tmp_path):
    graph = lanes_whole_tokens(6)
    d = compile(graph, CompileOptions(fold=Folding(lanes=tuple((n.name, lanes) for n in graph.nodes))))
    stages = own_stages(d.plan)
    assert len(stages) == len(graph.nodes)
    assert (stages["am_last"].cycles, stages["top_v"].cycles) == (3 * (6 // lanes + 1), 3 * (6 // lanes + 6))
    result = csim_both(d.write(tmp_path / "out"), graph=graph)
    assert result.passed, result.report()
