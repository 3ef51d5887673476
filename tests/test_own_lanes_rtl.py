"""Own stages of the Verilog backend with lanes > 1 (``lower/stage_own.py``: tokens of L elements), bit for bit.

Every own op with lanes L in (2, 4): the data movers (pad in every mode, concat along the innermost and an
outer axis with a constant operand, streaming and block slices, transposes keeping the innermost axis) over the
schedule's token view, softmax over rows of tokens, argmax over an outer and the innermost axis (ties), topk
values and indices (ties, a full sort, rows of one token). Each design runs several frames back to back in
rtlsim, compared with the reference interpreter and with the timing model cycle for cycle
(``rtl_design.simulate``), and lints clean.
"""

from __future__ import annotations

import pytest
from own_graphs import lanes_movers, lanes_picks, own_stages
from rtl_design import lint, plan_of, simulate

from hlsfuse.lower import Folding

pytestmark = pytest.mark.verilator


def check(make, lanes: int, tmp_path):
    graph, own = make(lanes)
    fold = Folding(lanes=tuple((name, lanes) for name in own))
    plan = plan_of(graph, fold=fold)
    stages = own_stages(plan)
    assert sorted(stages) == sorted(own)
    assert all(s.schedule.main.lanes_in == lanes for s in stages.values())
    result = simulate(graph, tmp_path, frames=3, driver="native", plan=plan)
    assert result.passed, result.report()
    assert result.compared == 3 * sum(graph.types[t].size for t in graph.outputs)
    assert lint(tmp_path) == ""


@pytest.mark.parametrize("lanes", [2, 4])
def test_movers(lanes, tmp_path):
    check(lanes_movers, lanes, tmp_path)


@pytest.mark.parametrize("lanes", [2, 4])
def test_softmax_argmax_topk(lanes, tmp_path):
    check(lanes_picks, lanes, tmp_path)
