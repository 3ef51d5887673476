"""What a generated stage module declares (templates/verilog/stage.v.j2 renders each): its ports, wires, nets,
registers, memories and ROMs, instances, counters, updates, the sequencer over its loops and its handshakes.

``ModuleBuilder`` (module.py) makes them; the template writes one statement per view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...errors import HlsfuseError
from ...ir import Graph
from ...types import FixedType
from .mem import mem_chunks

__all__ = [
    "fixed_type", "StreamPort", "Mem", "Wire", "Net", "Reg", "ArrayDecl", "NetArray", "RomDecl", "BankRoms", "Assign",
    "Instance", "Comment", "Counter", "Digit", "Odometer", "Update", "Loop", "Sequencer", "Handshake",
    "StageModule", "PACKED_BITS", "PACK_WIDTH",
]


def fixed_type(graph: Graph, tensor: str) -> FixedType:
    dtype = graph.types[tensor].dtype
    if not isinstance(dtype, FixedType):
        raise HlsfuseError(
            f"tensor '{tensor}' is {dtype}: the Verilog target supports fixed-point and integer types only "
            "(use --target hls for float32 graphs)"
        )
    return dtype


@dataclass(frozen=True)
class StreamPort:
    channel: str
    width: int
    data: str = ""  # outputs: the expression driving tdata


@dataclass(frozen=True, eq=False)
class Mem:
    """A ``.mem`` file loaded with ``$readmemh`` (a ROM or a lookup table): ``values`` (raw integers, row-major, a
    view of the constant's own array) then ``pad`` zeros, ``lanes`` ``width``-bit values a line. Its text is made
    as the file is written (``chunks``), a few megabytes at a time."""

    name: str
    file: str
    values: np.ndarray
    width: int
    lanes: int
    pad: int = 0

    def chunks(self) -> Iterator[str]:
        return mem_chunks(self.values, self.width, self.lanes, self.pad)

    def holds(self, values: np.ndarray, width: int, lanes: int, pad: int) -> bool:
        """Whether this file would hold the same text as the ROM of these contents."""
        return (width, lanes, pad) == (self.width, self.lanes, self.pad) and np.array_equal(values, self.values)


@dataclass(frozen=True)
class Wire:
    name: str
    width: int
    expr: str
    signed: bool = False
    kind: str = "wire"


@dataclass(frozen=True)
class Net:
    """A wire driven by an instance or an ``Assign``."""

    name: str
    width: int
    kind: str = "net"


@dataclass(frozen=True)
class Reg:
    name: str
    width: int
    kind: str = "reg"


@dataclass(frozen=True)
class ArrayDecl:
    name: str
    width: int
    size: int
    kind: str = "array"
    style: str = ""  # "block" or "distributed" (``ram_style``): what the resource model counts it as


@dataclass(frozen=True)
class NetArray:
    """An array of wires (elements driven by ``Assign``)."""

    name: str
    width: int
    size: int
    kind: str = "netarray"


@dataclass(frozen=True)
class RomDecl:
    """A ROM of ``size`` words of ``width`` bits. With ``per_word`` > 1 its .mem file holds ``per_word`` words per
    line, the first in the low bits (``words``: that packed array, ``index``: the loop that unpacks it at time 0):
    a large ROM's file then takes two hex digits per byte, without a line break per word."""

    name: str
    width: int
    size: int
    file: str
    per_word: int = 1
    words: str = ""
    index: str = ""
    kind: str = "rom"
    style: str = ""  # ``rom_style``: "block" (a block RAM, as the resource model and the C++ bind it),
    # "distributed", "logic", or "mem2reg" (logic, and no memory at all: Yosys then keeps none whose output register
    # could take the register a block RAM's address needs; a wide ROM so unrolled is one huge shift in Yosys)

    @property
    def word_file(self) -> str:
        """A packed ROM's contents one word a line, for a synthesis tool that cannot run the unpacking loop (Yosys
        evaluates no memory read at time 0): not written by compile; ``hlsfuse synth`` makes it from ``file``
        (manifest.json's ``word_files``) and defines HLSFUSE_WORD_FILES."""
        return f"{self.file.removesuffix('.mem')}.words.mem"


@dataclass(frozen=True)
class BankRoms:
    """ROMs ``banks`` of ``size`` words of ``width`` bits each, loaded from one .mem file holding them side by side
    (a line per ``per_word`` addresses, each address's words of every bank, bank 0 in the low bits): a MAC stage's
    weight banks that the model makes block RAMs, one file a stage rather than one a bank (ResNet-18 unfolded has
    tens of thousands). At time 0 a loop copies bank k's words out of ``words``, the file's array (``index``: its
    counter). A synthesis tool that runs no memory read at time 0 defines HLSFUSE_WORD_FILES, and each bank reads
    its own file of one word a line instead (``word_file(k)``, which ``hlsfuse synth`` makes from ``file``)."""

    banks: tuple[str, ...]
    width: int
    size: int
    file: str
    per_word: int
    words: str
    index: str
    style: str = "block"
    kind: str = "bankroms"

    def word_file(self, k: int | str) -> str:
        """Bank k's word file (manifest.json names them all as one entry, with ``{bank}`` for k)."""
        return f"{self.file.removesuffix('.mem')}.{k}.words.mem"


PACKED_BITS = 32768
"""ROMs of at least this many bits are packed PACK_WIDTH bits per line of their .mem file."""
PACK_WIDTH = 256


@dataclass(frozen=True)
class Assign:
    target: str
    expr: str
    kind: str = "assign"


@dataclass(frozen=True)
class Instance:
    module: str
    params: tuple[tuple[str, str], ...]
    name: str
    ports: tuple[tuple[str, str], ...]
    kind: str = "instance"


@dataclass(frozen=True)
class Comment:
    text: str
    kind: str = "comment"


@dataclass(frozen=True)
class Counter:
    """A register over 0..count-1, advanced (and wrapped) when ``step`` is high."""

    name: str
    width: int
    count: int
    step: str


@dataclass(frozen=True)
class Digit:
    name: str
    width: int
    count: int


@dataclass(frozen=True)
class Odometer:
    """Registers counting in row-major order (the last digit fastest), advanced when ``step`` is high."""

    digits: tuple[Digit, ...]
    step: str


@dataclass(frozen=True)
class Update:
    """``if (cond) target <= value;`` at a clock edge (later updates of the same target win)."""

    cond: str
    target: str
    value: str


@dataclass(frozen=True)
class Loop:
    """A loop of the sequencer: ``here`` is high while it runs, ``last`` on its last iteration."""

    what: str
    count: int
    here: str
    last: str


@dataclass(frozen=True)
class Sequencer:
    phase: str | None  # None: a single loop
    phase_width: int
    idx: str
    width: int
    loops: tuple[Loop, ...]
    next: str  # the loop after the current one
    fire: str
    inputs_ok: str


@dataclass(frozen=True)
class Handshake:
    channel: str
    read: bool
    moves: str  # the wire: this iteration moves a token of the channel
    when: str  # its expression
    space: str = ""  # outputs: the wire "moves implies tready"


@dataclass(frozen=True)
class StageModule:
    name: str  # the Verilog module name
    stage: str  # the plan's stage name (also the instance's suffix in the top)
    kind: str
    note: str
    iterations: int
    state: tuple[str, ...]
    inputs: tuple[StreamPort, ...]
    outputs: tuple[StreamPort, ...]
    sequencer: Sequencer
    counters: tuple[Counter, ...]
    odometers: tuple[Odometer, ...]
    decls: tuple
    handshakes: tuple[Handshake, ...]
    resets: tuple[Update, ...]
    updates: tuple[Update, ...]
    stores: tuple[Update, ...]
    mems: tuple[Mem, ...]
    rtl: tuple[str, ...]  # hw/rtl modules instantiated
