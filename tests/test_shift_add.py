"""Multiplications by a constant of one value built as shifts and adds (hlsfuse/lower/shift_add.py): the digits,
the rule that chooses them, the price, and that the lowering wires the constant in. The C and RTL simulations of
``constant_products`` (on inputs at both ends of their range) are in the shared design (tests/test_hw_shared.py)."""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder, fuse, reference
from hlsfuse.boards import DSP48E1
from hlsfuse.lower import LowerOptions, lower
from hlsfuse.lower.area import csd_digits, stage_area
from hlsfuse.lower.shift_add import SHIFT_ADD_LUTS, csd, shift_add


def constant_products():
    """x fixed<8,3> [2, 16] and u ufixed<6,2> [2, 16] times constants of one value: 37 x 2^-9 (3 digits, per channel),
    -0.4375 (-2^-1 + 2^-4, a scalar), 3 on an unsigned operand, 2^-2 (a shift), 0 and 0.6180... (6 digits: its 5
    adders of 24 bits stay a multiplier); output types that round, saturate and wrap."""
    b = GraphBuilder("constant_products", dtype="fixed<16,6>")
    x = b.input("x", [2, 16], dtype="fixed<8,3>")
    u = b.input("u", [2, 16], dtype="ufixed<6,2>")
    c37 = b.constant("c37", np.full(16, 37 / 512), dtype="fixed<7,-2>")
    cneg = b.constant("cneg", [-0.4375], dtype="fixed<6,1>")
    c3 = b.constant("c3", [3.0], dtype="fixed<3,3>")
    quarter = b.constant("quarter", [0.25], dtype="fixed<3,0>")
    zero = b.constant("zero", [0.0], dtype="fixed<4,2>")
    golden = b.constant("golden", [0.6180339887], dtype="fixed<16,1>")
    b.output(
        b.scale(x, c37, name="tn", dtype="fixed<9,2,RND,SAT>"),
        b.mul(x, cneg, name="neg", dtype="fixed<6,2,RND_CONV,WRAP>"),
        b.mul(c3, u, name="three", dtype="fixed<10,4>"),
        b.mul(x, quarter, name="shift", dtype="fixed<11,3>"),
        b.mul(x, zero, name="nothing", dtype="fixed<4,2>"),
        b.mul(x, golden, name="dsp", dtype="fixed<16,4,RND,SAT>"),
    )
    return b.build()


def constant_product_frames(graph, count: int) -> list[dict]:
    """Random frames whose first row holds each input's smallest and largest values, alternating."""
    frames = []
    for seed in range(count):
        frame = reference.random_inputs(graph, seed)
        for inp in graph.inputs:
            t = inp.type.dtype
            ends = np.array([t.raw_min, t.raw_max] * 8, dtype=np.float64) * 2.0 ** -t.frac
            frame[inp.name][0] = ends if seed % 2 == 0 else ends[::-1]
        frames.append(frame)
    return frames


def test_csd_is_the_value_with_no_two_adjacent_digits():
    for value in [*range(-600, 601), 2**40 - 1, -(2**40) + 3]:
        digits = csd(value)
        assert sum(sign << shift for shift, sign in digits) == value
        assert all(b[0] - a[0] >= 2 for a, b in zip(digits, digits[1:]))
        assert len(digits) == csd_digits(value)


def test_the_rule_builds_few_digit_constants_from_adders_and_leaves_the_rest_a_multiplier():
    graph = constant_products()
    found = {n: shift_add(graph, n) for n in ("tn", "neg", "three", "shift", "nothing", "dsp")}
    tn = found["tn"]
    assert (tn.operand, tn.value, tn.digits, tn.width, tn.frac) == (1, 37, ((0, 1), (2, 1), (5, 1)), 15, 14)
    assert tn.bound == 2 * 15 and tn.luts == 2 * (8 + 1) and tn.terms == ((5, 1), (2, 1), (0, 1))  # measured: x's bits
    assert found["neg"].digits == ((1, 1), (4, -1)) and found["neg"].bound == 14  # raw -14 = -16 + 2
    assert found["three"].operand == 0 and found["three"].width == 7 + 3  # u's unsigned 6 bits count 7
    assert (found["neg"].luts, found["three"].luts) == (8 + 1, 7 + 1)
    assert found["shift"].luts == found["shift"].bound == 0 and found["nothing"].digits == ()
    assert found["nothing"].luts == found["nothing"].bound == 0
    raw = int(graph.constant_map["golden"].data[0])  # 0.6180... on 15 fractional bits: 6 digits, 5 adders of 24 bits
    assert found["dsp"] is None and len(csd(raw)) == 6 and SHIFT_ADD_LUTS < 5 * 24


def test_a_wired_constant_costs_its_adders_and_no_rom_and_the_others_a_dsp():
    graph = constant_products()
    plan = lower(graph, fuse(graph), LowerOptions())
    steps = {s.node: s for st in plan.stages if st.kind == "map"
             for ph in st.schedule.main.phases for s in ph.program.steps}
    assert [o.source for o in steps["tn"].operands] == ["value", "wired"]
    assert [o.source for o in steps["three"].operands] == ["wired", "value"]
    assert [o.source for o in steps["dsp"].operands] == ["value", "rom"]
    roms = {b.tensor for st in plan.stages for b in st.schedule.buffers if b.rom}
    assert "golden" in roms and not roms & {"c37", "cneg", "c3", "quarter", "zero"}
    def area(node):
        stage = next(st for st in plan.stages if node in st.nodes)
        return stage_area(graph, stage, DSP48E1), stage.schedule.node_lanes(node)

    assert area("dsp")[0].dsp == 1  # the golden ratio's product, 8 x 16 bits
    for node, adders in (("tn", 18), ("neg", 9), ("three", 8)):
        found, lanes = area(node)
        assert found.dsp == 0
        assert found.lut == 40 + lanes * (graph.types[node].dtype.bits + adders)  # control, the result, the adders
