"""Every example compiles to an HLS project whose C simulation matches the reference bit for bit, unfolded and
folded for every board preset, built against hlsfuse's work-alike headers and against AMD's own (``csim_both``;
AMD_BOARDS and RESNET8_BOARDS say which folds make test leaves to make test-random).

The g++ builds are cached by content (``$XDG_CACHE_HOME/hlsfuse/csim``), so a rerun only compiles the
graphs and runs the testbenches, and boards that give the same design share one build.
"""

import pytest
from hls_support import csim_both
from test_examples import EXAMPLES, NAMES
from tiers import fresh

from hlsfuse import load_graph, reference
from hlsfuse.boards import BOARDS
from hlsfuse.cli import main
from hlsfuse.compile import compile

pytestmark = pytest.mark.gxx

# the examples folded for these boards are built against AMD's headers too on every run (their folds have every stage
# kind, SIMD fold and lane configuration of the examples); the other examples for the other boards under make
# test-random
AMD_BOARDS = ("pynq-z2", "zcu104")
# ResNet-8 (11 s a board under both header sets) is folded on every run for AMD_BOARDS and the largest board, under
# both header sets: the Pynq-Z2's 220 DSPs give the deepest SIMD folds, the ZCU104 a middle budget, and the Alveo
# U250's 12288 DSPs the least folded design (unfolded SIMD, PE 16, rings of 9 and 7 snapshots, reduce lanes). The
# other boards' folds lie between those (the factors of the same stage kinds, in other mixes) and are built under
# make test-random.
RESNET8_BOARDS = (*AMD_BOARDS, "alveo-u250")
FOLDED = [(name, board) for name in NAMES for board in sorted(BOARDS)
          if name != "resnet8" or board in RESNET8_BOARDS or fresh()]

# output elements per frame: the logits of the classifiers, the whole feature map of the residual block
COMPARED = {"mlp": 10, "cnn": 10, "residual": 16 * 16 * 8, "resnet8": 10}


def test_every_example_has_an_expected_count():
    assert sorted(COMPARED) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_is_bit_exact_in_csim(name, tmp_path):
    graph = load_graph(EXAMPLES / f"{name}.json")
    out = compile(graph).write(tmp_path / "out")
    result = csim_both(out)
    assert result.passed, result.report()
    # compile's two seeded frames back to back: line buffers, FIFOs and accumulators start afresh
    assert (result.frames, result.compared, result.failures) == (2, 2 * COMPARED[name], 0)
    frames = [reference.random_inputs(graph, seed) for seed in (1, 2, 3)]
    again = csim_both(out, inputs=frames, graph=graph)
    assert again.passed, again.report()
    assert (again.frames, again.compared, again.built) == (3, 3 * COMPARED[name], False)


@pytest.mark.parametrize("name, board", FOLDED)
def test_example_folded_for_a_board_is_bit_exact_in_csim(name, board, tmp_path, capsys):
    """The folding the solver fits to each board: SIMD folds, PE, window and rows stages taking several elements
    per transfer, width converters; under AMD's headers as under the work-alikes."""
    out = tmp_path / "out"
    assert main(["compile", str(EXAMPLES / f"{name}.json"), "-o", str(out), "--board", board]) == 0
    capsys.readouterr()
    result = csim_both(out, amd=name == "resnet8" or board in AMD_BOARDS)
    assert result.passed, f"{name} for {board}: {result.report()}"
    assert (result.frames, result.compared) == (2, 2 * COMPARED[name])


def test_resnet8_through_the_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(EXAMPLES / "resnet8.json"), "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith("design 'resnet8': ")
    assert main(["csim", str(out)]) == 0
    assert capsys.readouterr().out == "PASS: 20 output elements in 2 frame(s) match the reference\n"
    assert main(["csim", str(out), "--frames", "3"]) == 0
    assert capsys.readouterr().out == "PASS: 30 output elements in 3 frame(s) match the reference\n"
