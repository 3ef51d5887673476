"""The design space of a sweep: every combination of the axes the user gave, as named points.

    fusion (fpga, unfused)  x  target (a board at its budgets, or a part at a DSP budget)
        x  port lanes (the solver's, or N)  x  precision (ONNX models: one graph per choice)

A point is plain data (its settings; its target is a ``boards.Target``, what compile holds as its
device); ``compile_options`` turns it into the CompileOptions that ``plan_design`` evaluates. Its id is
made of its settings, so the same sweep names its points the same way every time (``--resume`` relies on
it) and ``DIR/points/<id>/`` reads as what it holds.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..boards import BOARDS, Target, board, target_of
from ..compile import CompileOptions
from ..errors import HlsfuseError

__all__ = ["FUSIONS", "FRONTS", "Point", "target_label", "parse_budgets", "targets", "sweep", "compile_options"]

FUSIONS = {"fpga": 2, "unfused": 0}
"""Fusion choices of a sweep and their ``opt_level``: ``fpga`` fuses (the default rules), ``unfused`` puts
every op in a stage of its own (the baseline, the way hls4ml builds designs)."""

FRONTS = {"dsp": "pareto_dsp", "bram18": "pareto_bram", "lut": "pareto_lut"}
"""Resource -> the row's flag of the cycles-against-that-resource front (and the stem of its plot)."""


def target_label(target: Target) -> str:
    """A target's part of a point's id: the board's name at its full budgets, else where and the budgets."""
    preset = BOARDS.get(target.board)
    if preset is not None and (target.dsp, target.bram18, target.lut) == (preset.dsp, preset.bram18, preset.lut):
        return preset.board
    where = target.board or target.part
    bram = f"-bram{target.bram18}" if target.bram18 is not None and not target.board else ""
    lut = f"-lut{target.lut}" if target.lut is not None and (preset is None or target.lut != preset.lut) else ""
    return f"{where}-dsp{target.dsp}{bram}{lut}"


@dataclass(frozen=True)
class Point:
    fusion: str  # a key of FUSIONS
    target: Target
    port_lanes: int | None  # None: the solver picks each port's lanes
    precision: str | None  # the label of an ONNX precision choice; None for a JSON graph

    @property
    def id(self) -> str:
        parts = [self.fusion, target_label(self.target)]
        if self.port_lanes is not None:
            parts.append(f"lanes{self.port_lanes}")
        if self.precision is not None:
            parts.append(re.sub(r"[^A-Za-z0-9]+", "-", self.precision).strip("-"))
        return "_".join(parts)

    def settings(self) -> dict:
        """The point's row fields that say what it is."""
        return {"id": self.id, "fusion": self.fusion, "board": self.target.board, "part": self.target.part,
                "clock_ns": self.target.clock, "dsp_budget": self.target.dsp, "bram18_budget": self.target.bram18,
                "lut_budget": self.target.lut,
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
            bram18: int | None, lut: int | None = None) -> list[Target]:
    """Each board of ``boards`` at its full budgets, and each DSP budget of ``dsp`` on ``base`` (a board: its
    part, clock, BRAM18s and LUTs) or on ``part``; ``bram18`` and ``lut`` override the BRAM18 and LUT budgets of
    the DSP budgets."""
    out = [board(name) for name in boards]
    out += [target_of(base, part, clock, n, bram18, lut) for n in dsp]
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
    return CompileOptions(target=target, opt_level=FUSIONS[point.fusion], device=point.target,
                          port_lanes=point.port_lanes)
