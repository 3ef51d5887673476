"""Width converters: a stage of its own between two stages whose tokens carry different lanes.

    convert N / min(A, B) iterations re-packing tokens of A lanes into tokens of B lanes (a gearbox:
            each iteration reads a token when fewer than B elements wait, and writes one when B do)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import HlsfuseError
from .schedule import Factors, Schedule
from .storage import COUNTERS, State, registers

__all__ = ["ConvertMain", "convert_schedule"]


@dataclass(frozen=True)
class ConvertMain:
    """Tokens of ``lanes_in`` elements re-packed into tokens of ``lanes_out`` (a gearbox: element 0 of a token in
    lane 0, any two widths dividing the elements). Per iteration it reads an input token when fewer than
    ``lanes_out`` elements are kept, then writes an output token when it has ``lanes_out``; so it runs
    max(tokens in, tokens out) iterations, at most ``kept`` elements wait between them, and the lanes of
    ``fill`` elements kept (a multiple of gcd(lanes_in, lanes_out)) decide where each element goes:

        4 -> 6 lanes    iteration 0: read 0-3            kept 0-3
                        iteration 1: read 4-7, write 0-5 kept 6-7
                        iteration 2: read 8-11, write 6-11
    """

    elements: int  # per frame
    lanes_in: int
    lanes_out: int
    read: str
    write: str

    def __post_init__(self):
        if self.elements % self.lanes_in or self.elements % self.lanes_out:
            raise HlsfuseError(f"a width converter from {self.lanes_in} to {self.lanes_out} lanes over "
                               f"{self.elements} elements: both must divide the elements")

    @property
    def widens(self) -> bool:
        return self.lanes_out > self.lanes_in

    @property
    def kept(self) -> int:
        """Elements kept from one iteration to the next, at most."""
        return max(self.lanes_in, self.lanes_out) - math.gcd(self.lanes_in, self.lanes_out)

    @property
    def iterations(self) -> int:
        return self.elements // min(self.lanes_in, self.lanes_out)

    @property
    def span(self) -> int:
        """Elements an iteration holds at most: those kept, then the token read."""
        step = math.gcd(self.lanes_in, self.lanes_out)
        last_read = min(self.kept, self.lanes_out - 1) // step * step  # the largest fill that reads
        return max(self.kept, last_read + self.lanes_in)

    def sources(self) -> tuple[int, ...]:
        """Per element held (0 .. span - 1), how many different elements it may come from over the possible
        fills: a kept element, or one lane of the token read (a dividing pair needs one or two)."""
        a, b, step = self.lanes_in, self.lanes_out, math.gcd(self.lanes_in, self.lanes_out)
        out = []
        for p in range(self.span):
            kept = any(p < f for f in range(0, self.kept + 1, step))
            lanes = {p - f for f in range(0, min(self.kept, b - 1) + 1, step) if 0 <= p - f < a}
            out.append(int(kept) + len(lanes))
        return tuple(out)

    @property
    def loops(self) -> tuple[tuple[str, int], ...]:
        return (("re-pack", self.iterations),)

    @property
    def factors(self) -> Factors:
        return Factors(lanes_in=self.lanes_in, lanes_out=self.lanes_out)

    phases = ()

    def node_lanes(self, name: str) -> int:
        return 1

    def io(self) -> dict[str, np.ndarray]:
        a, b = self.lanes_in, self.lanes_out
        every = np.arange(self.iterations, dtype=np.int64)
        if a >= b:  # every iteration writes; input token r is read by the first output needing element r a
            return {self.read: np.arange(self.elements // a, dtype=np.int64) * a // b, self.write: every}
        # every iteration reads; output token o is written once its last element (o + 1) b - 1 is in
        out = np.arange(1, self.elements // b + 1, dtype=np.int64) * b
        return {self.read: every, self.write: (out + a - 1) // a - 1}




def convert_schedule(elements: int, bits: int, lanes_in: int, lanes_out: int, read: str, write: str) -> Schedule:
    """A width converter: the elements waiting for their output token are kept in registers (those that pass
    straight through in the iteration that reads them need none)."""
    main = ConvertMain(elements, lanes_in, lanes_out, read, write)
    return Schedule("convert", (), main, (registers("kept elements", main.kept, bits),),
                    (COUNTERS, State("kept elements and their count", "frame")))
