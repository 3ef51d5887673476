"""The design space of a sweep: every combination of the axes the user gave, as named points.

    fusion (fpga, unfused)  x  target (a board at its budgets, or a part at a DSP budget)
        x  port lanes (the solver's, or N)  x  precision (ONNX models: one graph per choice)

A point is plain data (its settings); ``compile_options`` turns it into the CompileOptions that
``plan_design`` evaluates. Its id is made of its settings, so the same sweep names its points the same
way every time (``--resume`` relies on it) and ``DIR/points/<id>/`` reads as what it holds.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..backends.hls import HlsOptions
from ..backends.hls.options import DEFAULT_PART
from ..boards import BOARDS, board
from ..compile import CompileOptions
from ..errors import HlsfuseError
from ..lower.fold import Budget

__all__ = ["FUSIONS", "Target", "Point", "parse_budgets", "targets", "sweep", "compile_options"]

FUSIONS = {"fpga": 2, "unfused": 0}
"""Fusion choices of a sweep and their ``opt_level``: ``fpga`` fuses (the default rules), ``unfused`` puts
every op in a stage of its own (the baseline, the way hls4ml builds designs)."""


@dataclass(frozen=True)
class Target:
    """What a design must fit: a board's part, clock and budgets, or a part with a DSP budget."""

    board: str | None
    part: str
    clock: float  # ns
    dsp: int | None
    bram18: int | None

    @property
    def label(self) -> str:
        if self.board is not None and (self.dsp, self.bram18) == (BOARDS[self.board].dsp, BOARDS[self.board].bram18):
            return self.board
        where = self.board or self.part
        return f"{where}-dsp{self.dsp}" + (f"-bram{self.bram18}" if self.bram18 is not None and not self.board else "")


@dataclass(frozen=True)
class Point:
    fusion: str  # a key of FUSIONS
    target: Target
    port_lanes: int | None  # None: the solver picks each port's lanes
    precision: str | None  # the label of an ONNX precision choice; None for a JSON graph

    @property
    def id(self) -> str:
        parts = [self.fusion, self.target.label]
        if self.port_lanes is not None:
            parts.append(f"lanes{self.port_lanes}")
        if self.precision is not None:
            parts.append(re.sub(r"[^A-Za-z0-9]+", "-", self.precision).strip("-"))
        return "_".join(parts)

    def settings(self) -> dict:
        """The point's row fields that say what it is."""
        return {"id": self.id, "fusion": self.fusion, "board": self.target.board, "part": self.target.part,
                "clock_ns": self.target.clock, "dsp_budget": self.target.dsp, "bram18_budget": self.target.bram18,
                "port_lanes": self.port_lanes if self.port_lanes is not None else "auto",
                "precision": self.precision}


def parse_budgets(text: str) -> list[int]:
    """``--dsp`` values: a list (``16,32,64``), an arithmetic range ``LO:HI:STEP`` or a geometric one
    ``LO:HI:xF`` (HI included when reached), or a mix of these separated by commas."""
    out: list[int] = []
    for item in text.split(","):
        item = item.strip()
        m = re.fullmatch(r"(\d+):(\d+):(x?)(\d+(?:\.\d+)?)", item)
        if m:
            lo, hi, geometric, step = int(m[1]), int(m[2]), m[3] == "x", float(m[4])
            if lo > hi or (geometric and (step <= 1 or lo == 0)) or (not geometric and (step < 1 or step % 1)):
                raise HlsfuseError(f"--dsp: '{item}' must be LO:HI:STEP with LO <= HI and a whole STEP >= 1, or "
                                   f"LO:HI:xF with 1 <= LO <= HI and F > 1")
            value = float(lo)
            while value <= hi:
                out.append(int(round(value)))
                value = value * step if geometric else value + step
        elif item.isdigit():
            out.append(int(item))
        else:
            raise HlsfuseError(f"--dsp: '{item}' is not a DSP count, LO:HI:STEP or LO:HI:xF")
    return sorted(set(out))


def targets(boards: list[str], dsp: list[int], base: str | None, part: str | None, clock: float | None,
            bram18: int | None) -> list[Target]:
    """Each board of ``boards`` at its full budgets, and each DSP budget of ``dsp`` on ``base`` (a board: its
    part, clock and BRAM18s) or on ``part``; ``bram18`` overrides the BRAM18 budget of the DSP budgets."""
    out = [Target(b.name, b.part, b.clock, b.dsp, b.bram18) for b in map(board, boards)]
    if dsp:
        preset = board(base) if base else None
        where_part = part or (preset.part if preset else DEFAULT_PART)
        where_clock = clock if clock is not None else (preset.clock if preset else 5.0)
        limit = bram18 if bram18 is not None else (preset.bram18 if preset else None)
        out += [Target(base, where_part, where_clock, n, limit) for n in dsp]
    return list(dict.fromkeys(out))


def sweep(fusions: list[str], target_list: list[Target], lanes: list[int | None],
          precisions: list[str | None]) -> list[Point]:
    """Every combination, in a fixed order (precision, fusion, target, lanes)."""
    for f in fusions:
        if f not in FUSIONS:
            raise HlsfuseError(f"--fusion: '{f}' must be one of {', '.join(FUSIONS)}")
    points = [Point(f, t, ll, p) for p, f, t, ll in itertools.product(precisions, fusions, target_list, lanes)]
    return list(dict.fromkeys(points))


def compile_options(point: Point, target: str = "hls") -> CompileOptions:
    t = point.target
    return CompileOptions(target=target, opt_level=FUSIONS[point.fusion], hls=HlsOptions(part=t.part, clock=t.clock),
                          budget=Budget(dsp=t.dsp, bram18=t.bram18), board=t.board, port_lanes=point.port_lanes)
