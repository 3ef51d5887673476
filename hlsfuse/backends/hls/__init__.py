"""The Vitis HLS C++ backend: ``emit_hls(graph, plan, options, target)`` -> {path: text}.

See ``emit.py`` for the files, ``stages.py`` for how stage kinds are added, ``expr.py`` and
``templates/hls/ops.j2`` for the C++ of elementwise nodes.
"""

from .emit import emit_hls
from .options import HlsOptions
from .stages import STAGE_VIEWS

__all__ = ["emit_hls", "HlsOptions", "STAGE_VIEWS"]
