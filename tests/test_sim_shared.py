"""What csim, rtlsim and the RTL unit tests share, without a compiler: the sealed build cache
(hlsfuse/sim/cache.py) and the comparison of received outputs with the reference (hlsfuse/sim/compare.py).
The builds here are Python functions writing a file; tests/test_robust.py damages real g++ and Verilator
builds."""

from __future__ import annotations

import numpy as np
import pytest

from hlsfuse.errors import HlsfuseError
from hlsfuse.sim import cache
from hlsfuse.sim.compare import MAX_SHOWN, compare, failed_lines, locate
from hlsfuse.sim.rtlsim import RtlsimResult


def _writer(text: bytes, log: list):
    def build(scratch):
        log.append(scratch)
        (scratch / "model").write_bytes(text)
        (scratch / "build.txt").write_text("kept with the entry")

    return build


def test_an_entry_is_built_once_sealed_and_then_reused(tmp_path):
    builds = []
    path, built = cache.entry(tmp_path / "key", "model", _writer(b"\x7fELF one", builds))
    assert built and path == tmp_path / "key" / "model" and path.read_bytes() == b"\x7fELF one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["build.txt", "model", "model.sha256"]
    assert cache.intact(path)
    again, built = cache.entry(tmp_path / "key", "model", _writer(b"\x7fELF two", builds))
    assert (again, built) == (path, False) and len(builds) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["key"]  # no scratch left beside it


def test_a_damaged_entry_is_rebuilt(tmp_path):
    path, _ = cache.entry(tmp_path / "key", "model", _writer(b"\x7fELF whole", []))
    path.write_bytes(b"\x7fELF")  # truncated
    assert not cache.intact(path)
    rebuilt, built = cache.entry(tmp_path / "key", "model", _writer(b"\x7fELF whole", []))
    assert built and rebuilt.read_bytes() == b"\x7fELF whole" and cache.intact(rebuilt)
    assert [p.name for p in tmp_path.iterdir()] == ["key"]


def test_a_failed_build_leaves_neither_entry_nor_scratch(tmp_path):
    def failing(scratch):
        (scratch / "model").write_bytes(b"half")
        raise HlsfuseError("g++ could not build 'x'")

    with pytest.raises(HlsfuseError, match=r"^g\+\+ could not build 'x'$"):
        cache.entry(tmp_path / "key", "model", failing)
    assert list(tmp_path.iterdir()) == []


def test_of_two_builds_of_one_entry_at_once_the_first_renamed_wins(tmp_path):
    def outer(scratch):
        (scratch / "model").write_bytes(b"outer")
        cache.entry(tmp_path / "key", "model", _writer(b"inner", []))  # a concurrent run finishes meanwhile

    path, built = cache.entry(tmp_path / "key", "model", outer)
    assert built and path.read_bytes() == b"inner" and cache.intact(path)
    assert [p.name for p in tmp_path.iterdir()] == ["key"]


PORTS = [{"name": "y_out", "tensor": "y", "dtype": "fixed<8,4>", "shape": [2, 3]},
         {"name": "s_out", "tensor": "s", "dtype": "int8", "shape": []}]


def _golden(frames: int):
    return [{"y": np.arange(6).reshape(2, 3) + 10 * f, "s": np.array(f)} for f in range(frames)]


def test_received_outputs_are_compared_per_frame_and_index():
    golden = _golden(2)
    y = np.concatenate([g["y"].reshape(-1) for g in golden]).astype(np.int64)
    y[7] += 1  # frame 1, index (0, 1)
    outputs = {"y_out": y, "s_out": np.array([0], dtype=np.int64)}  # the second frame's s never arrived
    mismatches, failures, compared = compare(PORTS, outputs, golden)
    assert (failures, compared) == (2, 14)
    (m,) = mismatches
    assert (m.tensor, m.frame, m.index, m.expected, m.got) == ("y", 1, (0, 1), 11, 12)
    assert str(m) == "y[0, 1] of frame 1: expected 0.6875 (raw 11), got 0.75 (raw 12)"
    assert locate(1, []) == (1, ()) and locate(7, (2, 3)) == (1, (0, 1))


def test_many_mismatches_show_the_first_ones_and_count_the_rest():
    golden = _golden(4)
    outputs = {"y_out": np.full(24, -1, dtype=np.int64), "s_out": np.arange(4, dtype=np.int64)}
    mismatches, failures, compared = compare(PORTS, outputs, golden)
    assert len(mismatches) == MAX_SHOWN and (failures, compared) == (24, 28)
    lines = failed_lines(failures, compared, mismatches)
    assert lines[0] == "FAIL: 24 of 28 output elements differ from the reference"
    assert lines[1] == "  y[0, 0]: expected 0 (raw 0), got -0.0625 (raw -1)"
    assert lines[-1] == f"  ... and {24 - MAX_SHOWN} more" and len(lines) == MAX_SHOWN + 2
    result = RtlsimResult(passed=False, driver="native", frames=4, compared=compared, failures=failures,
                          mismatches=mismatches, cycles=100, frame_cycles=20.0, predicted_cycles=20, latency=3,
                          throughput=0.35, stages=())
    assert result.report().startswith("\n".join(lines) + "\ncycles: 100 total (native driver)")
    assert failed_lines(1, 2, (), "ERROR: hls::stream 'ch' is read while empty") == [
        "FAIL: ERROR: hls::stream 'ch' is read while empty", "  ... and 1 more"]
