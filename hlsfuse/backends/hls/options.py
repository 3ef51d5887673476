"""``HlsOptions``: everything the C++ backend needs beyond the graph and the dataflow plan."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import HlsfuseError

__all__ = ["HlsOptions", "CONTROLS", "DEFAULT_PART"]

CONTROLS = ("none", "s_axilite")
DEFAULT_PART = "xcvu13p-flga2577-2-e"


@dataclass(frozen=True)
class HlsOptions:
    """Target and interface choices of the generated Vitis HLS project.

    ``part``: the FPGA part; ``clock``: clock period in ns; ``control``: ``"none"`` (a free-running
    pipeline, ``ap_ctrl_none``) or ``"s_axilite"`` (start/done through an AXI4-Lite register
    block); ``seed``: seed of the random inputs written to ``data/`` (with their golden outputs)
    so that the testbench runs as generated; ``float_rtol``/``float_atol``: the testbench's
    tolerance for float32 outputs, |got - expected| <= atol + rtol * |expected|.
    """

    part: str = DEFAULT_PART
    clock: float = 5.0
    control: str = "none"
    seed: int = 0
    frames: int = 2
    float_rtol: float = 1e-5
    float_atol: float = 1e-6

    def __post_init__(self):
        if not isinstance(self.part, str) or not self.part or any(c.isspace() for c in self.part):
            raise HlsfuseError(f"option 'part' must be an FPGA part name without spaces, not {self.part!r}")
        if isinstance(self.clock, bool) or not isinstance(self.clock, (int, float)) or not math.isfinite(self.clock):
            raise HlsfuseError(f"option 'clock' must be a period in ns, not {self.clock!r}")
        if self.clock <= 0:
            raise HlsfuseError(f"option 'clock' must be a positive period in ns, not {self.clock}")
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

    @property
    def clock_text(self) -> str:
        """The period as written in the scripts, e.g. ``5`` or ``3.33``."""
        return f"{self.clock:g}"
