"""Every example compiles to an HLS project whose C simulation matches the reference bit for bit, unfolded and
folded for every board preset, built against hlsfuse's work-alike headers and against AMD's own (``csim_both``;
RESNET8_BOARDS says which folds make test leaves to make test-random).

The g++ builds are cached by content (``$XDG_CACHE_HOME/hlsfuse/csim``), so a rerun only compiles the
graphs and runs the testbenches. The small examples, unfolded and folded for every board, are C-simulated side by
side in one project (tests/union.py), a fold by the fold.json the command line writes for the board (which gives
the command line's C++: checked), boards that give the same folding as one design.
"""

from pathlib import Path

import pytest
from hls_support import csim_both, write_union
from test_examples import EXAMPLES, NAMES
from tiers import fresh

from hlsfuse import load_graph, reference
from hlsfuse.boards import BOARDS
from hlsfuse.cli import main
from hlsfuse.compile import CompileOptions, compile
from hlsfuse.lower.fold import Folding, read_fold

pytestmark = pytest.mark.gxx

# ResNet-8 (10 s a board under both header sets) is folded on every run for the boards that matter, under both
# header sets: the Pynq-Z2's 220 DSPs give the deepest SIMD folds, the ZCU104 a middle budget, and the Alveo U250's
# 12288 DSPs the least folded design (unfolded SIMD, PE 16, rings of 9 and 7 snapshots, reduce lanes). The other
# boards' folds lie between those (the factors of the same stage kinds, in other mixes) and are built under make
# test-random.
RESNET8_BOARDS = ("pynq-z2", "zcu104", "alveo-u250")
SMALL = [name for name in NAMES if name != "resnet8"]

# output elements per frame: the logits of the classifiers, the whole feature map of the residual block
COMPARED = {"mlp": 10, "cnn": 10, "residual": 16 * 16 * 8, "resnet8": 10}


def test_every_example_has_an_expected_count():
    assert sorted(COMPARED) == sorted(NAMES)


@pytest.mark.parametrize("name", SMALL)
def test_example_is_bit_exact_in_csim(name, shared):
    """Unfolded (as ``compile`` writes it without a board), in the shared project."""
    designs, graph, out, result = shared
    assert (name, Folding()) in designs
    assert _outputs(load_graph(EXAMPLES / f"{name}.json")) == COMPARED[name]
    _check_frames(graph, out, result)


# the two tests of ResNet-8 unfolded run on one pytest-xdist worker, one after the other, so that the second takes
# the first's build of it from the cache (two workers would both build it)
UNFOLDED_RESNET8 = pytest.mark.xdist_group("resnet8-unfolded")


@UNFOLDED_RESNET8
def test_resnet8_is_bit_exact_in_csim(tmp_path):
    graph = load_graph(EXAMPLES / "resnet8.json")
    assert _outputs(graph) == COMPARED["resnet8"]
    _check_frames(graph, compile(graph).write(tmp_path / "out"))


def _outputs(graph) -> int:
    """Output elements per frame."""
    return sum(graph.types[t].size for t in graph.outputs)


def _check_frames(graph, out: Path, result=None) -> None:
    """The C simulation of the project ``graph`` has in ``out`` (``result``, or run now) is bit-exact, and again on
    three other frames from the binary built for it."""
    result = result or csim_both(out)
    assert result.passed, result.report()
    # compile's two seeded frames back to back: line buffers, FIFOs and accumulators start afresh
    compared = _outputs(graph)
    assert (result.frames, result.compared, result.failures) == (2, 2 * compared, 0)
    frames = [reference.random_inputs(graph, seed) for seed in (1, 2, 3)]
    again = csim_both(out, inputs=frames, graph=graph)
    assert again.passed, again.report()
    assert (again.frames, again.compared, again.built) == (3, 3 * compared, False)


def _folded(name: str, board: str, out: Path) -> Path:
    """OUT of ``hlsfuse compile`` of the example ``name`` for ``board`` (the folding the solver fits to it)."""
    assert main(["compile", str(EXAMPLES / f"{name}.json"), "-o", str(out), "--board", board]) == 0
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The small examples unfolded and folded for every board (by their fold.json) in one project, C-simulated under
    both header sets: (the (name, folding) pairs in it, the union, OUT, the result)."""
    folder = tmp_path_factory.mktemp("examples")
    designs = {(name, Folding()): load_graph(EXAMPLES / f"{name}.json") for name in SMALL}
    for name in SMALL:
        for board in sorted(BOARDS):
            fold = read_fold(str(_folded(name, board, folder / f"{name}-{board}") / "fold.json"))
            designs.setdefault((name, fold), load_graph(EXAMPLES / f"{name}.json"))
    graph, out = write_union(list(designs.values()), folder / "shared", [fold for _, fold in designs], name="examples")
    return list(designs), graph, out, csim_both(out, graph=graph)


@pytest.mark.parametrize("board", sorted(BOARDS))
@pytest.mark.parametrize("name", SMALL)
def test_example_folded_for_a_board_is_bit_exact_in_csim(name, board, tmp_path, capsys, shared):
    """The folding the solver fits to each board: SIMD folds, PE, window and rows stages taking several elements
    per transfer, width converters; under AMD's headers as under the work-alikes."""
    out = _folded(name, board, tmp_path / "out")
    capsys.readouterr()
    fold = read_fold(str(out / "fold.json"))
    built = compile(load_graph(EXAMPLES / f"{name}.json"), CompileOptions(fold=fold)).files
    sources = sorted(p for p in (out / "hls").iterdir() if p.suffix in (".cpp", ".h"))
    assert sources and all(built[f"hls/{p.name}"] == p.read_text() for p in sources)  # the command line's design
    designs, graph, _, result = shared
    assert (name, fold) in designs and _outputs(load_graph(EXAMPLES / f"{name}.json")) == COMPARED[name]
    assert result.passed, f"{name} for {board}: {result.report()}"
    assert (result.frames, result.compared) == (2, 2 * _outputs(graph))


@pytest.mark.parametrize("board", [b for b in sorted(BOARDS) if b in RESNET8_BOARDS or fresh()])
def test_resnet8_folded_for_a_board_is_bit_exact_in_csim(board, tmp_path, capsys):
    out = _folded("resnet8", board, tmp_path / "out")
    capsys.readouterr()
    result = csim_both(out)
    assert result.passed, f"resnet8 for {board}: {result.report()}"
    assert (result.frames, result.compared) == (2, 2 * COMPARED["resnet8"])


@UNFOLDED_RESNET8
def test_resnet8_through_the_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(EXAMPLES / "resnet8.json"), "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith("design 'resnet8': ")
    assert main(["csim", str(out)]) == 0
    assert capsys.readouterr().out == "PASS: 20 output elements in 2 frame(s) match the reference\n"
    assert main(["csim", str(out), "--frames", "3"]) == 0
    assert capsys.readouterr().out == "PASS: 30 output elements in 3 frame(s) match the reference\n"
