"""The target of a design: the part, its family and DSP slice, the clock period and the resource budgets.

One ``Target`` carries every fact about the device a design is built for; compile, explore, the resource
model (which reads its DSP slice) and the HLS project files (its part and clock) all read it:

    --board B  --part P  --clock NS  --dsp N  --bram N  --lut N   --target_of-->   Target
        Target.part, .clock          -> hls_config.cfg, run_hls.tcl (emit_hls)
        Target.dsp_slice             -> the resource model (hlsfuse.lower.area) and the folding solver
        Target.dsp, .bram18, .lut    -> the solver's budget;  .ff: the device's
        Target.excess(...)           -> what a design exceeds (compile refuses it unless allow_overfull)

``Target()`` is the fallback when no board is given: DEFAULT_PART at DEFAULT_CLOCK, with no budgets.
The presets of ``--board`` are ``BOARDS``. Device figures are AMD's (the Zynq-7000, Artix-7, Zynq
UltraScale+, Kria and Alveo product tables and data sheets): DSP slices, block RAM as BRAM18 halves (one
36 Kb block is two BRAM18), LUTs and flip-flops. The clock is a period the generated pipelines are meant
to close timing at on that family (100 MHz on 7 series, 200 MHz on Zynq UltraScale+, 300 MHz on Alveo);
``--clock`` overrides it. UltraRAM is not used by hlsfuse and not listed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .errors import HlsfuseError

__all__ = [
    "Dsp",
    "DSP48E1",
    "DSP48E2",
    "DSP58",
    "Family",
    "FAMILIES",
    "family_of",
    "DEFAULT_PART",
    "DEFAULT_CLOCK",
    "Target",
    "BOARDS",
    "board",
    "target_of",
    "overfull",
]


@dataclass(frozen=True)
class Dsp:
    """A family's DSP slice: the signed operand widths of one multiplier."""

    name: str
    a: int
    b: int


DSP48E1 = Dsp("DSP48E1", 25, 18)
DSP48E2 = Dsp("DSP48E2", 27, 18)
DSP58 = Dsp("DSP58", 27, 24)


@dataclass(frozen=True)
class Family:
    """A device family: the prefixes of its AMD part names and its DSP slice."""

    name: str
    prefixes: tuple[str, ...]
    dsp_slice: Dsp


FAMILIES = (
    Family("7 series", ("xc7",), DSP48E1),
    Family("UltraScale(+)", ("xcvu", "xcku", "xczu", "xck", "xcu", "xcau"), DSP48E2),
    Family("Versal", ("xcv",), DSP58),  # after UltraScale(+): xcvu... is a Virtex UltraScale(+)
)


def family_of(part: str) -> Family:
    """The family of an AMD part by its name: xc7* 7 series, xcvu*/xcku*/xczu*/xck*/xcu*/xcau* UltraScale(+),
    other xcv* Versal."""
    p = part.lower()
    for family in FAMILIES:
        if p.startswith(family.prefixes):
            return family
    raise HlsfuseError(f"part '{part}': not an AMD 7-series, UltraScale(+) or Versal part name (xc7..., xczu..., ...)")


DEFAULT_PART = "xcvu13p-flga2577-2-e"
DEFAULT_CLOCK = 5.0  # ns


@dataclass(frozen=True)
class Target:
    """What a design is built for and must fit. ``board``: the preset the facts came from (None: a part given
    alone); ``part``: the FPGA part; ``clock``: the clock period in ns; ``dsp``, ``bram18``: the budgets the
    folding solver fits (None: no limit); ``lut``: the LUT budget (the device's, or ``--lut``), ``ff``: the
    device's flip-flops (None: not known).
    The family and its DSP slice follow from the part."""

    board: str | None = None
    part: str = DEFAULT_PART
    clock: float = DEFAULT_CLOCK
    dsp: int | None = None
    bram18: int | None = None
    lut: int | None = None
    ff: int | None = None

    def __post_init__(self):
        if not isinstance(self.part, str) or not self.part or any(c.isspace() for c in self.part):
            raise HlsfuseError(f"option 'part' must be an FPGA part name without spaces, not {self.part!r}")
        if isinstance(self.clock, bool) or not isinstance(self.clock, (int, float)) or not math.isfinite(self.clock):
            raise HlsfuseError(f"option 'clock' must be a period in ns, not {self.clock!r}")
        if self.clock <= 0:
            raise HlsfuseError(f"option 'clock' must be a positive period in ns, not {self.clock}")
        for name in ("dsp", "bram18", "lut", "ff"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise HlsfuseError(f"target '{name}' must be a non-negative integer or None, not {value!r}")
        family_of(self.part)  # an unknown part is refused here, not when the resource model first needs it

    @property
    def family(self) -> Family:
        return family_of(self.part)

    @property
    def dsp_slice(self) -> Dsp:
        return self.family.dsp_slice

    def excess(self, dsp: int, bram18: int, lut: int, ff: int) -> str | None:
        """What a design needing these resources exceeds of this target (its budgets, the device's LUTs and
        FFs), in one phrase naming each resource and by how much; None when it fits."""
        over = [f"{need:,} {unit} of {limit:,} ({need - limit:,} over)"
                for need, limit, unit in ((dsp, self.dsp, "DSPs"), (bram18, self.bram18, "BRAM18s"),
                                          (lut, self.lut, "LUTs"), (ff, self.ff, "FFs"))
                if limit is not None and need > limit]
        return "; ".join(over) or None

    @property
    def clock_text(self) -> str:
        """The period as written in the HLS scripts, e.g. ``5`` or ``3.33``."""
        return f"{self.clock:g}"


BOARDS = {
    t.board: t
    for t in (
        Target("pynq-z2", "xc7z020clg400-1", 10.0, 220, 280, 53_200, 106_400),
        Target("arty-a7-100t", "xc7a100tcsg324-1", 10.0, 240, 270, 63_400, 126_800),
        Target("ultra96v2", "xczu3eg-sbva484-1-i", 5.0, 360, 432, 70_560, 141_120),
        Target("kv260", "xck26-sfvc784-2LV-c", 5.0, 1_248, 288, 117_120, 234_240),
        Target("zcu104", "xczu7ev-ffvc1156-2-e", 5.0, 1_728, 624, 230_400, 460_800),
        Target("zcu102", "xczu9eg-ffvb1156-2-e", 5.0, 2_520, 1_824, 274_080, 548_160),
        Target("alveo-u50", "xcu50-fsvh2104-2-e", 3.33, 5_952, 2_688, 872_160, 1_743_280),
        Target("alveo-u250", "xcu250-figd2104-2L-e", 3.33, 12_288, 5_376, 1_728_000, 3_456_000),
        Target("alveo-u55c", "xcu55c-fsvh2892-2L-e", 3.33, 9_024, 4_032, 1_303_680, 2_607_360),
    )
}


def board(name: str) -> Target:
    """The preset ``name`` at its full budgets."""
    if name not in BOARDS:
        raise HlsfuseError(f"unknown board '{name}'; known: {', '.join(BOARDS)}")
    return BOARDS[name]


def target_of(board_name: str | None = None, part: str | None = None, clock: float | None = None,
              dsp: int | None = None, bram18: int | None = None, lut: int | None = None) -> Target:
    """The target the command line describes: ``board_name``'s preset (none: the fallback ``Target()``), its part,
    clock, DSP, BRAM18 and LUT budgets each overridden by the value given (None or an empty part: the preset's)."""
    base = board(board_name) if board_name else Target()
    return dataclasses.replace(
        base,
        part=part or base.part,
        clock=clock if clock is not None else base.clock,
        dsp=dsp if dsp is not None else base.dsp,
        bram18=bram18 if bram18 is not None else base.bram18,
        lut=lut if lut is not None else base.lut,
    )


def overfull(target: Target, dsp: int, bram18: int, lut: int, ff: int) -> str | None:
    """One line saying which resources of ``target`` a design needing these exceeds and by how much, or None."""
    excess = target.excess(dsp, bram18, lut, ff)
    if excess is None:
        return None
    where = f"board {target.board}" if target.board else f"part {target.part}"
    return f"the design does not fit {where}: it needs {excess} (resource model estimates)"
