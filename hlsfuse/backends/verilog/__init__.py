"""The Verilog backend: a DataflowPlan as Verilog built from the hand-written modules of hw/rtl."""

from .emit import STAGE_BUILDERS, emit_verilog
from .mem import mem_lines

__all__ = ["emit_verilog", "mem_lines", "STAGE_BUILDERS"]
