"""The text table and the JSON document of a ``SynthResult``."""

from __future__ import annotations

from .run import StageSynth, SynthResult

__all__ = ["table", "to_json", "construct", "LUT_NOTE", "SECTION", "with_section"]

SECTION = "## Synthesis (Yosys)"
"""The heading of the section ``hlsfuse synth`` adds to (or replaces in) OUT/report.md."""

LUT_NOTE = ("LUT: LUT1..LUT6 cells, one LUT6 site each, plus the LUTs of LUTRAM and SRL cells (RAM32M/RAM64M 4, "
            "RAM32M16/RAM64M8 8, RAM*X1D 2, SRL 1); MUXF7/8/9 and CARRY cells are not LUTs")


def _ratio(yosys: int, model: int) -> str:
    return f"{yosys / model:.2f}" if model else "-"


def construct(stage: StageSynth) -> str:
    """What makes a stage's critical path long, from the cells on it."""
    d = stage.depth
    where = f"from {d['from']} to {d['to']}" if d.get("from") else ""
    if d["dsp"] and d["carry"]:
        what = "a product and its adder tree in one cycle (DSP, then carry chains)"
    elif d["dsp"]:
        what = "a combinational DSP product"
    elif d["carry"] >= d["lut_levels"]:
        what = "chained adders or comparators (carry chains)"
    else:
        what = "LUT logic (multiplexers, selects)"
    return f"{what} {where}".strip()


def _row(s: StageSynth) -> list[str]:
    m, y, d = s.model, s.yosys, s.depth
    mark = "*" if s.differs else ""
    return [s.name, s.kind, f"{m.get('dsp', 0)}/{y['dsp']}{mark if 'dsp' in s.differs else ''}",
            f"{m.get('bram18', 0)}/{y['bram18']}{mark if 'bram18' in s.differs else ''}",
            f"{m.get('lutram_bits', 0)}/{y['lutram']}", f"{m.get('lut', 0)}/{y['lut']}",
            _ratio(y["lut"], m.get("lut", 0)),
            f"{m.get('ff', 0)}/{y['ff']}", _ratio(y["ff"], m.get("ff", 0)), str(y["carry"]),
            f"{d['lut_levels']}/{d['carry']}/{d['dsp']}", f"{d['ns']:.1f}"]


def table(result: SynthResult) -> str:
    head = ["stage", "kind", "DSP m/y", "BRAM18 m/y", "LUTRAM bits/LUTs", "LUT m/y", "ratio", "FF m/y", "ratio",
            "CARRY", "depth L/C/D", "ns"]
    rows = [_row(s) for s in result.stages]
    m, y = result.total_model, result.total_yosys
    rows.append(["total", "", f"{m.get('dsp', 0)}/{y.get('dsp', 0)}", f"{m.get('bram18', 0)}/{y.get('bram18', 0)}",
                 f"{m.get('lutram_bits', 0)}/{y.get('lutram', 0)}", f"{m.get('lut', 0)}/{y.get('lut', 0)}",
                 _ratio(y.get("lut", 0), m.get("lut", 0)), f"{m.get('ff', 0)}/{y.get('ff', 0)}",
                 _ratio(y.get("ff", 0), m.get("ff", 0)), str(y.get("carry", 0)), "", ""])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [f"synth: {result.design}, part {result.part or '?'}, {result.version.split(' (')[0]}: {result.command}",
             ""]
    for r in [head, *rows]:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     .rstrip())
    lines += ["", "m/y: the resource model (report.json) / Yosys; " + LUT_NOTE + "; depth L/C/D: LUT levels, carry "
              "cells and DSPs on the critical path, ns its estimate (docs/synth.md)"]
    for s in result.mismatches:
        lines.append(f"MISMATCH: stage {s.name} ({s.kind}): "
                     + ", ".join(f"{k} model {s.model.get(k, 0)}, Yosys {s.yosys[k]}" for k in s.differs))
    for s in result.slow():
        lines.append(f"DEEP: stage {s.name}: {s.depth['ns']:.1f} ns estimated against a {result.clock_ns:g} ns clock "
                     f"({s.depth['lut_levels']} LUT levels, {s.depth['carry']} carry cells, {s.depth['dsp']} DSP): "
                     f"{construct(s)}")
    for name, why in result.failed:
        lines.append(f"NOT SYNTHESIZED: stage {name} (not in the total): {why}")
    if not result.mismatches:
        lines.append(f"DSP and BRAM18 agree with the model in every stage{' synthesized' if result.failed else ''}")
    return "\n".join(lines) + "\n"


def to_json(result: SynthResult) -> dict:
    return {
        "design": result.design, "part": result.part, "family": result.family, "clock_ns": result.clock_ns,
        "yosys": result.version, "command": result.command, "lut_counting": LUT_NOTE,
        "stages": [{"name": s.name, "kind": s.kind, "model": s.model, "yosys": s.yosys, "depth": s.depth,
                    "differs": s.differs, "deep": s in result.slow(),
                    "construct": construct(s) if s in result.slow() else None,
                    "seconds": s.seconds, "cached": s.cached} for s in result.stages],
        "total": {"model": result.total_model, "yosys": result.total_yosys},
        "mismatches": [s.name for s in result.mismatches],
        "failed": [{"name": name, "error": why} for name, why in result.failed],
    }


def with_section(markdown: str, result: SynthResult) -> str:
    """report.md with the synthesis section (the model's figures per stage beside Yosys's, the logic depth)
    in place of any earlier one, at its end."""
    kept = markdown.split(f"\n{SECTION}\n", 1)[0].rstrip("\n")
    return f"{kept}\n\n{SECTION}\n\n```\n{table(result).rstrip()}\n```\n"
