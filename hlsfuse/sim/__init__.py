"""Simulators of generated designs, checked against the reference interpreter."""

from .compare import Mismatch
from .csim import CsimResult, csim

__all__ = ["csim", "CsimResult", "Mismatch"]
