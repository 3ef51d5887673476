"""``HlsOptions``: how the Vitis HLS project is spelled, beyond the graph, the dataflow plan and the target.

The part and the clock the project files name (hls_config.cfg, run_hls.tcl) are the target's
(``boards.Target``, passed to ``emit_hls`` beside these options), not options of the project.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import HlsfuseError

__all__ = ["HlsOptions", "CONTROLS"]

CONTROLS = ("none", "s_axilite")


@dataclass(frozen=True)
class HlsOptions:
    """Interface and testbench choices of the generated Vitis HLS project.

    ``control``: ``"none"`` (a free-running pipeline, ``ap_ctrl_none``) or ``"s_axilite"`` (start/done
    through an AXI4-Lite register block); ``seed``: seed of the random inputs written to ``data/`` (with
    their golden outputs) so that the testbench runs as generated; ``frames``: how many; ``float_rtol``/
    ``float_atol``: the testbench's tolerance for float32 outputs, |got - expected| <= atol + rtol * |expected|.
    """

    control: str = "none"
    seed: int = 0
    frames: int = 2
    float_rtol: float = 1e-5
    float_atol: float = 1e-6

    def __post_init__(self):
        if self.control not in CONTROLS:
            raise HlsfuseError(f"option 'control' must be one of {', '.join(CONTROLS)}, not {self.control!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise HlsfuseError(f"option 'seed' must be a non-negative integer, not {self.seed!r}")
        if isinstance(self.frames, bool) or not isinstance(self.frames, int) or self.frames < 1:
            raise HlsfuseError(f"option 'frames' must be a positive integer, not {self.frames!r}")
        for name in ("float_rtol", "float_atol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise HlsfuseError(f"option '{name}' must be a non-negative number, not {value!r}")

