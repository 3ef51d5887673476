"""Designs compiled for a board fit it, or say in one line what they exceed (--allow-overfull writes them
anyway); narrow (2- and 3-bit) quantized MLPs are costed at their width and folded to the board's LUTs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiers import need

from hlsfuse import GraphBuilder, save_graph
from hlsfuse.boards import BOARDS
from hlsfuse.cli import main
from hlsfuse.lower.area import adder_tree, csd_digits


def _wide(tmp_path) -> str:
    """A dense layer whose 8192-element row is registers: 131,316 FFs, over the Pynq-Z2's 106,400 however folded."""
    b = GraphBuilder("wide", dtype="fixed<16,6>")
    x = b.input("x", [1, 8192])
    w = b.constant("w", np.random.default_rng(0).normal(0, 0.01, (2, 8192)), dtype="fixed<8,1>")
    b.output(b.dense(x, w, name="fc"))
    return str(save_graph(b.build(), tmp_path / "wide.json"))


def test_a_design_over_the_board_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", _wide(tmp_path), "-o", str(out), "--board", "pynq-z2"]) == 2
    assert capsys.readouterr().err == ("hlsfuse: error: the design does not fit board pynq-z2: it needs 131,316 FFs "
                                       "of 106,400 (24,916 over) (resource model estimates); --allow-overfull "
                                       "writes it anyway\n")
    assert not out.exists()


def test_allow_overfull_writes_it_with_a_warning(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", _wide(tmp_path), "-o", str(out), "--board", "pynq-z2", "--allow-overfull"]) == 0
    assert capsys.readouterr().err.endswith("hlsfuse: warning: the design does not fit board pynq-z2: it needs "
                                            "131,316 FFs of 106,400 (24,916 over) (resource model estimates) "
                                            "(--allow-overfull)\n")
    assert json.loads((out / "report.json").read_text())["total"]["ff"] == 131_316


def test_allow_overfull_gives_the_unconstrained_design_when_no_folding_fits(tmp_path, capsys):
    out = tmp_path / "out"
    graph = _wide(tmp_path)
    assert main(["compile", graph, "-o", str(out), "--board", "pynq-z2", "--dsp", "0"]) == 2
    assert capsys.readouterr().err.startswith("hlsfuse: error: budget --dsp 0 --bram 280 (LUTs 53200): does not fit")
    assert main(["compile", graph, "-o", str(out), "--board", "pynq-z2", "--dsp", "0", "--allow-overfull"]) == 0
    assert "DSPs of 0" in capsys.readouterr().err


def test_csd_digits_and_adder_tree():
    assert [csd_digits(v) for v in (0, 1, -1, 2, 3, 7, -7, 5, 11)] == [0, 1, 1, 1, 2, 2, 2, 2, 3]
    assert adder_tree(1, 4, 20) == 0
    assert adder_tree(4, 4, 20) == 2 * 5 + 6  # two 5-bit adders, then one of 6 bits
    assert adder_tree(5, 4, 6) == 2 * 5 + 6 + 6  # capped at the accumulator's 6 bits


def _qmlp(dims, w_bits, a_bits, seed=0):
    """A Brevitas-like QONNX MLP: Quant input, per layer Quant'd weights (power-of-two scales) -> MatMul ->
    Relu -> unsigned Quant activations."""
    need("onnx")
    from quant_build import Net

    rng = np.random.default_rng(seed)
    n = Net()
    h = n.quant("x", "xq", 0.5, a_bits)
    for k, (i, o) in enumerate(zip(dims[:-1], dims[1:])):
        w = n.quant(n.const(f"w{k}", rng.standard_normal((i, o)) * 0.3), f"w{k}q", 0.25, w_bits, narrow=1)
        h = n.op("MatMul", [h, w], f"mm{k}")
        if k < len(dims) - 2:
            h = n.quant(n.op("Relu", [h], f"r{k}"), f"a{k}", 0.5, a_bits, signed=0)
    return n.model({"x": [1, dims[0]]}, h, [1, dims[-1]])


@pytest.mark.parametrize("dims, bits, most_luts", [
    ((593, 64, 64, 64, 1), 2, 15_000),  # UNSW-NB15 W2A2
    ((490, 256, 256, 256, 12), 3, BOARDS["pynq-z2"].lut),  # KWS W3A3: 6.1 M LUTs fully unrolled, before
])
def test_narrow_mlps_fit_the_pynq_z2(tmp_path, capsys, dims, bits, most_luts):
    onnx = need("onnx")
    model = tmp_path / "mlp.onnx"
    onnx.save(_qmlp(dims, bits, bits), model)
    out = tmp_path / "out"
    assert main(["compile", str(model), "-o", str(out), "--board", "pynq-z2"]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    total = report["total"]
    assert total["lut"] <= most_luts and total["ff"] <= BOARDS["pynq-z2"].ff and total["dsp"] == 0
    assert report["cycles_per_frame"] <= 600  # folded as far as the LUTs need, no further
