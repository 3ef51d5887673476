"""The generated sources of every example, unchanged, against AMD's own ap_fixed/hls_stream headers.

hls4ml's wheel carries byte-identical copies of AMD's ap_types headers (tests/hls_support.py
fetches them); the design must build with them and give the same bit-exact results as with
hlsfuse's work-alike headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hls_support import amd_cache, amd_headers

from hlsfuse import load_graph
from hlsfuse.compile import compile
from hlsfuse.sim import csim

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.gxx
@pytest.mark.parametrize("name", ["mlp", "cnn", "residual", "resnet8"])
def test_examples_are_bit_exact_with_amd_headers(tmp_path, name):
    graph = load_graph(EXAMPLES / f"{name}.json")
    out = compile(graph).write(tmp_path / "out")
    workalike = csim(out)
    amd = csim(out, hls_include=str(amd_headers(amd_cache())))
    assert workalike.passed, workalike.report()
    assert amd.passed, amd.report()
    assert amd.compared == workalike.compared == 2 * sum(graph.types[o].size for o in graph.outputs)
