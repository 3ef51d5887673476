"""Lookup tables read by many lanes: a stage reading a luts.h table R > 2 times per iteration declares
ceil(R / 2) copies of its own, partitioned by copy, and read number r uses copy r / 2 (a ROM has two ports).

Checked on the generated text (map stages of sigmoid and tanh at lanes 4 and 8, a table shared by two nodes
of a stage, a reduce stage's prologue, a fixed-point softmax at lanes 4), on lanes 2 keeping the global table,
and bit for bit in C simulation (one g++ build: the machine is shared).
"""

from __future__ import annotations

import re

import pytest
from hls_support import csim_both

from hlsfuse import GraphBuilder
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.ir import Graph
from hlsfuse.lower import Folding

F = "fixed<12,4>"


def activations(name: str = "acts") -> Graph:
    """A sigmoid and a tanh of different tables, each its own stage of lanes L."""
    b = GraphBuilder(name, dtype=F)
    x = b.input("x", [2, 16])
    b.output(b.sigmoid(x, table_bits=6, name="sg"), b.tanh(x, table_bits=7, name="th"))
    return b.build()


def shared_table() -> Graph:
    """One map stage whose two sigmoids read one table: 2 L reads per iteration."""
    b = GraphBuilder("shared", dtype=F)
    x = b.input("x", [2, 16])
    s = b.sigmoid(x, table_bits=6, name="sg")
    b.output(b.sigmoid(b.add(s, x, dtype=F, name="ad"), table_bits=6, name="sg2"))
    return b.build()


def softmax_graph() -> Graph:
    b = GraphBuilder("smx", dtype=F)
    b.output(b.softmax(b.input("y", [3, 8]), table_bits=8, name="sm"))
    return b.build()


def every_kind() -> Graph:
    """Everything above in one design, plus a sum of sigmoids (a reduce stage's prologue), for one csim build."""
    b = GraphBuilder("replicas", dtype=F)
    x = b.input("x", [2, 16])
    y = b.input("y", [3, 8])
    s = b.sigmoid(x, table_bits=6, name="sg")
    b.output(
        b.tanh(x, table_bits=7, name="th"),
        b.sigmoid(b.add(s, x, dtype=F, name="ad"), table_bits=6, name="sg2"),
        b.softmax(y, table_bits=8, name="sm"),
        b.sum(b.sigmoid(y, table_bits=5, name="sy"), axes=[0], dtype="fixed<14,6>", name="tot"),
    )
    return b.build()


def design(graph: Graph, lanes: dict[str, int]):
    return compile(graph, CompileOptions(fold=Folding(lanes=tuple(lanes.items()))))


def function(cpp: str, nodes: str) -> str:
    """The text of the stage function whose name contains ``nodes``."""
    start = re.search(rf"static void \w*{nodes}\w*\(", cpp).start()
    return cpp[start : cpp.index("\n}\n", start)]


def declares(text: str, table: str, copies: int, size: int) -> bool:
    return (f"{table}_copies[{copies}][{size}] = {{" in text
            and f"#pragma HLS ARRAY_PARTITION variable={table}_copies type=complete dim=1" in text)


@pytest.mark.parametrize("lanes", [4, 8])
def test_each_lane_reads_its_copy(lanes):
    d = design(activations(), {"sg": lanes, "th": lanes})
    cpp = d.files["hls/acts.cpp"]
    sg, th = function(cpp, "sigmoid"), function(cpp, "tanh")
    assert declares(sg, "lut_sigmoid_0", lanes // 2, 64)
    assert declares(th, "lut_tanh_1", lanes // 2, 128)
    assert sg.count("{HLSFUSE_LUT_lut_sigmoid_0}") == lanes // 2
    assert "lut_sigmoid_0_copies[l / 2][hlsf::lut_index<12, true, 6>(" in sg
    assert "lut_tanh_1_copies[l / 2][hlsf::lut_index<12, true, 5>(" in th
    assert "lut_tanh" not in sg and "lut_sigmoid" not in th
    assert f"read {lanes} times per iteration: {lanes // 2} copies" in sg
    luts = d.files["hls/luts.h"]
    assert "#define HLSFUSE_LUT_lut_sigmoid_0 \\\n" in luts
    assert "lut_sigmoid_0[64] = {HLSFUSE_LUT_lut_sigmoid_0};" in luts  # the values in one place


def test_reads_of_one_table_by_two_nodes_count_together():
    cpp = design(shared_table(), {"sg": 4, "ad": 4, "sg2": 4}).files["hls/shared.cpp"]
    body = function(cpp, "sigmoid")
    assert declares(body, "lut_sigmoid_0", 4, 64)  # 2 nodes x 4 lanes = 8 reads
    assert "v_sg = hlsf::element<t_sg>(lut_sigmoid_0_copies[l / 2][" in body  # reads 0..3: copies 0, 1
    assert "v_sg2 = hlsf::element<t_sg2>(lut_sigmoid_0_copies[(l + 4) / 2][" in body  # reads 4..7: copies 2, 3
    assert "v_sg = lut_sigmoid_0[" not in body


def test_two_lanes_read_the_global_table():
    for graph, lanes in ((activations(), {"sg": 2, "th": 2}), (softmax_graph(), {"sm": 2})):
        d = design(graph, lanes)
        cpp = d.files[f"hls/{graph.name}.cpp"]
        assert "_copies" not in cpp and "HLSFUSE_LUT" not in cpp
        assert "HLSFUSE_LUT" not in d.files["hls/luts.h"]
    cpp = design(shared_table(), {"sg": 1, "ad": 1, "sg2": 1}).files["hls/shared.cpp"]  # two reads: two ports
    assert "v_sg2 = hlsf::element<t_sg2>(lut_sigmoid_0[hlsf::lut_index" in cpp and "_copies" not in cpp


def test_a_softmax_of_four_lanes_reads_copies_of_its_exp_table():
    cpp = design(softmax_graph(), {"sm": 4}).files["hls/smx.cpp"]
    body = function(cpp, "softmax")
    exp = re.search(r"(lut_softmax_exp_\d+)_copies\[2\]\[(\d+)\]", body)
    assert exp is not None, body
    assert declares(body, exp.group(1), 2, int(exp.group(2)))
    assert f"{exp.group(1)}_copies, lut_softmax_recip_" in body  # the kernel's exp_table argument
    assert "lut_softmax_recip_1_copies" not in body  # read once per iteration


def test_a_reduce_prologue_of_four_lanes_reads_copies():
    d = design(every_kind(), {"sg": 8, "th": 4, "ad": 8, "sg2": 8, "sm": 4, "tot": 4})
    body = function(d.files["hls/replicas.cpp"], "sum")
    table = re.search(r"(lut_sigmoid_\d+)_copies\[2\]\[32\]", body)
    assert table is not None, body
    assert f"{table.group(1)}_copies[l / 2][" in body


@pytest.mark.gxx
def test_copied_tables_are_bit_exact_in_csim(tmp_path):
    graph = every_kind()
    d = design(graph, {"sg": 8, "th": 4, "ad": 8, "sg2": 8, "sm": 4, "tot": 4})
    cpp = d.files["hls/replicas.cpp"]
    assert cpp.count("#pragma HLS ARRAY_PARTITION variable=lut_") == 4  # sigmoid, tanh, softmax exp, the sum's
    result = csim_both(d.write(tmp_path / "out"), graph=graph)
    assert result.passed, result.report()


def test_the_lowering_counts_the_reads_and_the_resource_model_the_roms():
    """One count (lower.tables) for the C++ copies and the resource model: R reads per iteration need max(1,
    ceil(R / 2)) ROMs of the table's entries, each a memory by the model's rule."""
    from hlsfuse.boards import DSP48E2
    from hlsfuse.fusion import fuse
    from hlsfuse.lower import LowerOptions, lower
    from hlsfuse.lower.area import memory_area, stage_area
    from hlsfuse.lower.tables import stage_tables

    graph = every_kind()
    fold = Folding(lanes=(("sg", 4), ("th", 2), ("sm", 4), ("tot", 8)))
    plan = lower(graph, fuse(graph, mode="fpga"), LowerOptions(fold=fold))
    stages = {n: s for s in plan.stages for n in s.nodes}
    reads = {n: sorted((t.table.function, t.reads, t.copies) for t in stage_tables(graph, stages[n]))
             for n in ("th", "sg", "sm", "sy")}
    assert reads == {"th": [("tanh", 2, 0)],
                     "sg": [("sigmoid", 8, 4)],  # two sigmoids of one table in a stage of 4 lanes
                     "sm": [("exp", 4, 2), ("recip", 1, 0)],
                     "sy": [("sigmoid", 8, 4)]}  # a reduce stage's prologue, once per input lane
    # tanh of 7 bits: 128 x 12 bits, a BRAM18; the sigmoid's 4 copies of 64 x 12 bits, LUTRAM each; the map stages
    # hold no other memory
    assert stage_area(graph, stages["th"], DSP48E2).bram18 == memory_area(1, 128, 12).bram18 == 1
    assert stage_area(graph, stages["sg"], DSP48E2).lutram_bits == memory_area(4, 64, 12).lutram_bits == 4 * 64 * 12
