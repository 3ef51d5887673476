"""The Verilog backend: a DataflowPlan as Verilog built from the hand-written modules of hw/rtl."""

from .mem import mem_lines

__all__ = ["mem_lines"]
