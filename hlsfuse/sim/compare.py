"""Frames in and out of a simulation, against the reference interpreter: what csim and rtlsim share.

    inputs (one mapping of real values, or a sequence of them) --quantized_frames--> raw frames
    output streams (every frame back to back, per port) + golden frames --compare--> mismatches

csim compares inside its C++ testbench, which prints the first mismatches by port and flat index;
rtlsim compares here (``compare``). Both report a mismatch as a ``Mismatch`` (tensor, frame, index
within the frame: ``locate``) and print their verdict with ``passed_line`` and ``failed_lines``.
Fixed-point and integer values compare as raw integers, exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import reference
from ..errors import HlsfuseError
from ..ir import Graph
from ..types import DType, parse_dtype, to_float

__all__ = ["Mismatch", "MAX_SHOWN", "quantized_frames", "locate", "compare", "passed_line", "failed_lines"]

MAX_SHOWN = 10
"""Mismatches ``compare`` keeps (the failure count includes the others)."""


@dataclass(frozen=True)
class Mismatch:
    """An output element (or its TLAST flag) that differs from the reference."""

    tensor: str
    frame: int
    index: tuple[int, ...]  # position in the tensor
    expected: float | int  # raw integer for fixed-point tensors
    got: float | int
    dtype: DType
    what: str = "value"  # "value" or "TLAST"

    def __str__(self) -> str:
        where = f"{self.tensor}[{', '.join(map(str, self.index))}]"
        if self.frame:
            where += f" of frame {self.frame}"
        if self.what == "TLAST":
            return f"{where}: TLAST is {self.got}, expected {self.expected}"
        return f"{where}: expected {self._show(self.expected)}, got {self._show(self.got)}"

    def _show(self, value: float | int) -> str:
        if self.dtype.is_float:
            return f"{value:.9g}"
        real = float(to_float(np.array([value], dtype=np.int64), self.dtype)[0])
        return f"{real:.12g} (raw {value})"


def quantized_frames(graph: Graph, inputs, tool: str) -> list[dict[str, np.ndarray]]:
    """The raw input frames of ``inputs``: real values per graph input, one mapping or a sequence of them."""
    given = [inputs] if isinstance(inputs, Mapping) else list(inputs)
    if not given:
        raise HlsfuseError(f"{tool} needs at least one frame of inputs")
    return [reference.quantize_inputs(graph, frame) for frame in given]


def locate(flat: int, shape: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """(frame, index within the tensor) of element ``flat`` of a stream of frames of ``shape``."""
    frame, k = divmod(int(flat), int(np.prod(shape, dtype=np.int64)))
    return frame, tuple(int(i) for i in np.unravel_index(k, tuple(shape))) if len(shape) else ()


def compare(ports: Sequence[Mapping], outputs: Mapping[str, np.ndarray], golden: Sequence[Mapping[str, np.ndarray]]):
    """(the first MAX_SHOWN mismatches, how many elements differ or are missing, how many were compared) of the
    output ``ports`` (manifest entries: name, tensor, dtype, shape), whose ``outputs`` hold the raw values
    received, every frame back to back, against the ``golden`` frames of the reference."""
    mismatches, failures, compared = [], 0, 0
    for p in ports:
        dtype = parse_dtype(p["dtype"])
        want = np.concatenate([frame[p["tensor"]].reshape(-1) for frame in golden]).astype(np.int64)
        have = outputs[p["name"]]
        compared += want.size
        n = min(want.size, have.size)
        bad = np.flatnonzero(want[:n] != have[:n])
        failures += bad.size + (want.size - n)
        for flat in bad[: MAX_SHOWN - len(mismatches)]:
            frame, index = locate(flat, p["shape"])
            mismatches.append(Mismatch(p["tensor"], frame, index, int(want[flat]), int(have[flat]), dtype))
    return tuple(mismatches), failures, compared


def passed_line(compared: int, frames: int) -> str:
    return f"PASS: {compared} output elements in {frames} frame(s) match the reference"


def failed_lines(failures: int, compared: int, mismatches: Sequence[Mismatch], why: str | None = None) -> list[str]:
    """FAIL (with ``why`` the run stopped early, else how many elements differ) and the first mismatches."""
    head = why if why else f"{failures} of {compared} output elements differ from the reference"
    lines = [f"FAIL: {head}"] + [f"  {m}" for m in mismatches]
    if failures > len(mismatches):
        lines.append(f"  ... and {failures - len(mismatches)} more")
    return lines
