"""Board presets for ``--board``: the part, a clock period and the resource budgets of the device.

Device figures are AMD's (the Zynq-7000, Artix-7, Zynq UltraScale+, Kria and Alveo product tables
and data sheets): DSP slices, block RAM as BRAM18 halves (one 36 Kb block is two BRAM18), LUTs and
flip-flops. The clock is a period the generated pipelines are meant to close timing at on that
family (100 MHz on 7 series, 200 MHz on Zynq UltraScale+, 300 MHz on Alveo); ``--clock``
overrides it. UltraRAM is not used by hlsfuse and not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import HlsfuseError

__all__ = ["Board", "BOARDS", "board"]


@dataclass(frozen=True)
class Board:
    name: str
    part: str
    clock: float  # ns
    dsp: int
    bram18: int
    lut: int
    ff: int


BOARDS = {
    b.name: b
    for b in (
        Board("pynq-z2", "xc7z020clg400-1", 10.0, 220, 280, 53_200, 106_400),
        Board("arty-a7-100t", "xc7a100tcsg324-1", 10.0, 240, 270, 63_400, 126_800),
        Board("ultra96v2", "xczu3eg-sbva484-1-i", 5.0, 360, 432, 70_560, 141_120),
        Board("kv260", "xck26-sfvc784-2LV-c", 5.0, 1_248, 288, 117_120, 234_240),
        Board("zcu104", "xczu7ev-ffvc1156-2-e", 5.0, 1_728, 624, 230_400, 460_800),
        Board("zcu102", "xczu9eg-ffvb1156-2-e", 5.0, 2_520, 1_824, 274_080, 548_160),
        Board("alveo-u50", "xcu50-fsvh2104-2-e", 3.33, 5_952, 2_688, 872_160, 1_743_280),
        Board("alveo-u250", "xcu250-figd2104-2L-e", 3.33, 12_288, 5_376, 1_728_000, 3_456_000),
        Board("alveo-u55c", "xcu55c-fsvh2892-2L-e", 3.33, 9_024, 4_032, 1_303_680, 2_607_360),
    )
}


def board(name: str) -> Board:
    if name not in BOARDS:
        raise HlsfuseError(f"unknown board '{name}'; known: {', '.join(BOARDS)}")
    return BOARDS[name]
