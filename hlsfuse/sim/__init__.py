"""Simulators of generated designs, checked against the reference interpreter."""

from .csim import CsimResult, Mismatch, csim

__all__ = ["csim", "CsimResult", "Mismatch"]
