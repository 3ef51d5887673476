"""Open synthesis of the Verilog reference design with Yosys, checked against the resource model."""

from .report import table, to_json, with_section
from .run import StageSynth, SynthResult, synth
from .yosys import FAMILIES, find_yosys

__all__ = ["synth", "SynthResult", "StageSynth", "table", "to_json", "with_section", "find_yosys", "FAMILIES"]
