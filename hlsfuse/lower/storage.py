"""On-chip storage of a stage's schedule: the inputs read whole, the buffers and what carries state.

A ``Buffer`` is registers or a memory (``memory`` decides: small arrays, and arrays read back too soon for a
pipelined memory, are registers), with the banks its parallel reads need (``Parts``). The resource model
(``area``) counts them, and both backends declare them with these facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HlsfuseError
from ..ir import Graph

__all__ = ["REGISTER_LIMIT", "SHORT_DEPENDENCE", "COUNTERS", "Held", "Buffer", "State", "Parts", "registers",
           "memory", "held_inputs", "held_buffers", "phase_buffers", "lane_parts"]

REGISTER_LIMIT = 64
"""Arrays of at most this many elements are registers; larger ones are memories."""

SHORT_DEPENDENCE = 8
"""A memory element read back sooner than this many iterations after its write (a read-modify-write of an
accumulator, say) would stall a pipelined loop: such an array is registers whatever its size."""


@dataclass(frozen=True)
class Held:
    """A streamed input read whole into an array by the setup loops (``kept`` False: read and dropped)."""

    channel: str
    tensor: str
    size: int
    kept: bool


@dataclass(frozen=True)
class Buffer:
    """On-chip storage of a stage.

    ``registers``: every element is a register (arrays read in parallel, or small ones); otherwise
    a memory with ``banks`` parallel banks (a ROM or array read ``banks`` times per iteration) whose
    element written in one iteration is read again ``distance`` iterations later at the soonest
    (the loop-carried dependence a pipelined loop must respect; None: never read back in the loop).
    A ROM read a row at a time (``row`` > 0) has one element per row, ``width`` = row x value bits.
    An array read by several output channels at once is also seen as rows of ``columns`` elements
    (row-major; ``columns`` > 1): its rows banked ``banks`` ways as ``banking`` says, each row banked
    cyclically ``column_banks`` ways: ``banks`` x ``column_banks`` banks."""

    name: str  # its role, unique in the stage ("line buffer", "accumulators", "held x", ...)
    elements: int
    width: int  # bits per element
    registers: bool = False
    banks: int = 1
    distance: int | None = None
    tensor: str | None = None  # a held input, a pre-loop result or a ROM's constant: the tensor it holds
    banking: str = "block"  # how a flat index maps to its ``banks``: "block" (consecutive runs) or "cyclic"
    rom: bool = False  # a constant's ROM (weights): not counted in the stage's ``storage`` of data
    columns: int = 1  # > 1: elements per row of a 2-D view (weights read by PE lanes: Cout, N or K)
    column_banks: int = 1
    row: int = 0  # > 0: a ROM read a row at a time (``OpDef.rows``): each element is a row of this many values

    @property
    def parts(self) -> int:
        """Banks in all."""
        return self.banks * self.column_banks


@dataclass(frozen=True)
class State:
    """What a stage keeps from one iteration to the next, and how no frame sees another's.

    ``reset``: "frame" (a control counter: back at its initial value after the frame's last
    iteration), "first" (assigned, not combined, by the first value of each output) or
    "overwritten" (every element is written in a frame before the frame reads it)."""

    name: str
    reset: str


def registers(name: str, elements: int, width: int) -> Buffer:
    return Buffer(name, elements, width, registers=True)


def memory(name: str, elements: int, width: int, distance: int | None = None, banks: int = 1,
           tensor: str | None = None, banking: str = "block", rom: bool = False, columns: int = 1,
           column_banks: int = 1, row: int = 0) -> Buffer:
    """Registers when small, or when read back too soon for a memory; else a memory. The banks are kept
    either way: they say how the array is partitioned for parallel reads."""
    small = elements <= REGISTER_LIMIT or (distance is not None and distance < SHORT_DEPENDENCE)
    return Buffer(name, elements, width, registers=small, banks=banks, distance=distance, tensor=tensor,
                  banking=banking, rom=rom, columns=columns, column_banks=column_banks, row=row)



COUNTERS = State("iteration, position and broadcast counters", "frame")
"""The state every stage keeps: its counters, back at 0 after a frame's last iteration."""


def held_inputs(graph: Graph, pairs, used: set[str]) -> tuple[Held, ...]:
    return tuple(Held(ch, t, graph.types[t].size, t in used) for ch, t in pairs)


Parts = dict[str, dict]
"""tensor -> how its array is banked for parallel reads: ``memory``'s keywords (banks, banking, columns,
column_banks)."""


def held_buffers(graph: Graph, held: tuple[Held, ...], parts: Parts | None = None) -> list[Buffer]:
    """The arrays of the held inputs (``parts``: of those read in parallel)."""
    # a held element e is read in the main loop no sooner than the held loops' end (the
    # broadcast index of element e is at least e), so memories have a long write-to-read distance
    parts = parts or {}
    return [memory(f"held {h.tensor}", h.size, graph.types[h.tensor].dtype.bits, h.size, tensor=h.tensor,
                   **parts.get(h.tensor, {})) for h in held if h.kept]


def phase_buffers(graph: Graph, phases, parts: Parts | None = None) -> list[Buffer]:
    """The arrays of the phases' pre-loop results, then the ROMs of the constants their programs read
    (``parts``: of those read in parallel)."""
    # a pre-loop result is read by the main loop only, after every setup loop
    parts = parts or {}
    out = [memory(f"pre {n}", p.program.count, graph.types[n].dtype.bits, p.program.count, tensor=n,
                  **parts.get(n, {})) for ph in phases for p in ph.pre for n in p.kept]
    programs = [ph.program for ph in phases] + [p.program for ph in phases for p in ph.pre]
    constants: dict[str, int] = {}  # constant -> values per row (0: read element by element)
    for o in (o for program in programs for step in program.steps for o in step.operands if o.source == "rom"):
        if constants.setdefault(o.tensor, o.row) != o.row:
            raise HlsfuseError(f"constant '{o.tensor}' is read a row at a time and element by element in one stage")
    for c, row in constants.items():
        t = graph.types[c]
        out.append(memory(f"rom {c}", t.size // (row or 1), t.dtype.bits * (row or 1), tensor=c, rom=True, row=row,
                          **parts.get(c, {})))
    return out



def lane_parts(phase, lanes: int) -> Parts:
    """An array or ROM a phase over wide tokens reads at consecutive elements, one per lane: one bank per lane."""
    return {o.tensor: {"banks": lanes, "banking": "cyclic"} for step in phase.program.steps for o in step.operands
            if o.lane}
