"""Code generators: each turns a DataflowPlan into the files of one hardware description."""

from .hls import HlsOptions, emit_hls

__all__ = ["emit_hls", "HlsOptions"]
