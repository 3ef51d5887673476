"""C simulation of generated HLS projects with g++, bit-exact against the reference interpreter.

g++ is slow and the machine is shared, so graphs are batched: every map op of the registry (with
many fixed-point types, rounding and overflow modes, broadcasts, fan-out, float32, awkward tensor
names) sits in one "zoo" graph, compiled once against hlsfuse's work-alike headers (under -Wall
-Wextra -Werror) and once against AMD's (from the hls4ml wheel, ``csim_both``); random graphs are checked ten
at a time, against the work-alikes (and against AMD's headers too under make test-random: the zoo has their every
op under both on every run). Built binaries are cached by content, so reruns are quick.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import numpy as np
import pytest
from hls_support import csim_both, write_project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from map_graphs import awkward_names, fixed_zoo, float_zoo, random_map_graph, small_graph
from union import union

from hlsfuse import HlsfuseError, reference
from hlsfuse.backends.hls.toolchain import WORKALIKE_FLAGS
from hlsfuse.sim import csim
from hlsfuse.sim.csim import build

pytestmark = pytest.mark.gxx


def output_elements(graph) -> int:
    return sum(graph.types[t].size for t in graph.outputs)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    graph = union([fixed_zoo(), float_zoo(), awkward_names()], "zoo", keep_names=(2,))
    return graph, write_project(graph, tmp_path_factory.mktemp("zoo"))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return write_project(small_graph(), tmp_path_factory.mktemp("small"))


def test_every_map_op_is_bit_exact(zoo):
    graph, out = zoo
    result = csim_both(out)
    assert result.passed, result.report()
    # compile writes two seeded frames to data/, run back to back
    assert result.compared == 2 * output_elements(graph) and result.frames == 2
    assert result.report() == f"PASS: {result.compared} output elements in 2 frame(s) match the reference"
    # frames back to back: held inputs, pre-computed arrays and counters start afresh each frame
    frames = [reference.random_inputs(graph, seed) for seed in (7, 8, 9)]
    again = csim_both(out, inputs=frames, graph=graph)
    assert again.passed and again.frames == 3 and not again.built, again.report()


@settings(max_examples=2, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 2**32 - 1), min_size=10, max_size=10, unique=True))
def test_random_map_graphs_are_bit_exact(tmp_path_factory, seeds):
    graph = union([random_map_graph(seed) for seed in seeds], "random")
    out = write_project(graph, tmp_path_factory.mktemp("random"))
    result = csim_both(out, inputs=[reference.random_inputs(graph, 1), reference.random_inputs(graph, 2)], amd=False)
    assert result.passed, f"seeds {seeds}:\n{result.report()}"
    assert result.frames == 2 and result.compared == 2 * output_elements(graph)


def test_inputs_and_frames(small):
    graph = small_graph()
    # one frame of inputs runs twice by default, so that state one frame leaves to the next shows
    one = csim(small, inputs={"x": np.full([1, 2, 3], 1.5)})
    assert one.passed and one.frames == 2 and one.compared == 24
    assert csim(small, inputs={"x": np.full([1, 2, 3], 1.5)}, frames=1).frames == 1
    frames = [reference.random_inputs(graph, seed) for seed in range(3)]
    three = csim(small, inputs=frames)
    assert three.passed and three.frames == 3 and three.compared == 36
    assert not three.built and three.binary == one.binary  # built once, then taken from the cache
    # without inputs: data/ (two frames), or that many seeded frames: the same seed goes on where data/ ends
    assert csim(small).frames == 2
    five = csim(small, frames=5)
    assert five.passed and five.frames == 5 and five.compared == 60
    with pytest.raises(HlsfuseError, match=r"^frames must be a positive integer, not 0$"):
        csim(small, frames=0)
    with pytest.raises(HlsfuseError, match=r"^input 'x': value has shape \[2\], expected \[1, 2, 3\]$"):
        csim(small, inputs={"x": np.zeros(2)})


def test_makefile_builds_and_runs_the_testbench(small):
    done = subprocess.run(["make"], cwd=small / "hls", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " ".join(WORKALIKE_FLAGS) in done.stdout
    assert "PASS small_: 24 output elements match in 2 frame(s)" in done.stdout
    assert done.stderr == ""  # no warning from g++ or from the streams


def test_generated_headers_compile_on_their_own(small, tmp_path):
    hls = small / "hls"
    units = []
    for header in ("types.h", "weights.h", "luts.h", "small_.h"):  # each alone in a unit beside, not in, OUT
        unit = tmp_path / f"only_{header}.cpp"
        unit.write_text(f'#include "{header}"\n')
        units.append(str(unit))
    done = subprocess.run(["g++", *WORKALIKE_FLAGS, f"-I{hls}", "-fsyntax-only", *units], cwd=hls,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_mismatches_are_reported_by_tensor_and_index(small, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(small, out)
    golden = out / "hls" / "data" / "relu0.txt"
    values = [int(v) for v in golden.read_text().split()]
    values[4] += 3
    golden.write_text("".join(f"{v}\n" for v in values))
    with pytest.raises(HlsfuseError, match=r"relu0\.txt: changed since hlsfuse compile wrote it; compile again"):
        csim(out)
    result = csim(out, allow_edits=True)  # same sources: the cached binary
    assert not result.passed and result.failures == 1 and result.error is None
    (m,) = result.mismatches
    assert (m.tensor, m.frame, m.index, m.expected, m.got) == ("relu0", 0, (0, 1, 1), values[4], values[4] - 3)
    line = f"relu0[0, 1, 1]: expected {math.ldexp(values[4], -6):.12g} (raw {values[4]}), got "
    assert result.report().startswith("FAIL: 1 of 24 output elements differ from the reference\n  " + line)


def test_missing_data_is_an_error(small, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(small, out)
    (out / "hls" / "data" / "x.txt").unlink()
    with pytest.raises(HlsfuseError, match=r"x\.txt: deleted since hlsfuse compile wrote it"):
        csim(out)
    unreadable = r"^C simulation of 'small_' cannot read its data: ERROR: cannot read \S+/x\.txt$"
    with pytest.raises(HlsfuseError, match=unreadable):
        csim(out, allow_edits=True)
    with pytest.raises(HlsfuseError, match="no HLS project here"):
        csim(tmp_path)


def test_wrong_tlast_and_stalled_streams_are_caught(small, tmp_path):
    out = tmp_path / "tlast"
    shutil.copytree(small, out)
    cpp = out / "hls" / "small_.cpp"
    text = cpp.read_text()
    cpp.write_text(text.replace("packet.last = i == 5;", "packet.last = i == 4;", 1))
    result = csim(out, allow_edits=True)
    assert not result.passed
    assert [(m.tensor, m.frame, m.index, m.what) for m in result.mismatches] == [
        ("sigmoid0", 0, (0, 1, 1), "TLAST"), ("sigmoid0", 0, (0, 1, 2), "TLAST"),
        ("sigmoid0", 1, (0, 1, 1), "TLAST"), ("sigmoid0", 1, (0, 1, 2), "TLAST")]
    assert str(result.mismatches[0]) == "sigmoid0[0, 1, 1]: TLAST is 1, expected 0"

    stalled = tmp_path / "stalled"
    shutil.copytree(small, stalled)
    cpp = stalled / "hls" / "small_.cpp"
    # the fork reads one element more than its producer writes: in hardware it would wait forever
    cpp.write_text(re.sub(r"(static void fork_x\(.*?i < )6", r"\g<1>7", cpp.read_text(), count=1, flags=re.DOTALL))
    result = csim(stalled, allow_edits=True)
    assert not result.passed
    assert result.error == "ERROR: hls::stream 'ch_x' is read while empty"


def test_compile_errors_name_the_first_error(small, tmp_path):
    out = tmp_path / "broken"
    shutil.copytree(small, out)
    cpp = out / "hls" / "small_.cpp"
    cpp.write_text(cpp.read_text() + "\nint broken = ;\n")
    first_error = r"^g\+\+ could not build the C simulation of 'small_': small_\.cpp:\d+:\d+: error: "
    with pytest.raises(HlsfuseError, match=first_error):
        build(out / "hls", "small_")
