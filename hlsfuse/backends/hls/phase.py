"""C++ views of a stage's setup loops and element phases (``lower.schedule``, ``lower.elements``).

Every stage function is one loop over its schedule's iterations. Its first iterations are the
setup loops, selected by a step variable and counted by an index, rendered with the macros of
``templates/hls/phase.j2``:

    held inputs  ──read whole, one element per iteration──►  local arrays
    pre loops    ──nodes smaller than their phase's loop, from held inputs and constants──►  local arrays
    main part    the kind's own iterations; per element of a phase: read each streamed input once,
                 one statement per node (``expr.body``), advance the index counters

A phase's flat element index is a counter the template declares and advances only when a
broadcast operand is indexed by it, so no variable is ever left unused (``-Wall -Werror``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...lower.elements import ElementPhase
from ...lower.packing import Packing
from ...lower.schedule import Schedule
from ...lower.storage import Buffer
from ...types import Fmt
from .context import Context
from .expr import Body, Digit, Term, Wheel, body

__all__ = [
    "Array", "Held", "Read", "Store", "Pre", "Setup", "Write", "Token", "Phase", "Rom",
    "partition", "partitions", "array", "setup", "phase", "writes", "wheels", "accumulator", "local_roms",
    "Weights", "weights", "packing_type",
]


@dataclass(frozen=True)
class Array:
    """A local array and how it is stored: registers, or a memory (with its loop-carried distance)."""

    name: str
    type: str
    size: int
    registers: bool
    distance: int | None
    partition: str = ""  # a memory's ARRAY_PARTITION arguments for parallel reads, or ""


@dataclass(frozen=True)
class Held:
    """An input read whole, one element per iteration (``array`` None: read and dropped)."""

    channel: str
    type: str
    array: Array | None
    size: int


@dataclass(frozen=True)
class Read:
    """A streamed input read once per element into ``var`` (``None``: read and dropped)."""

    channel: str
    type: str
    var: str | None


@dataclass(frozen=True)
class Store:
    """``array[index] = var``: a node computed in a pre loop, kept for a later loop."""

    array: Array
    var: str


@dataclass(frozen=True)
class Pre:
    """A setup loop over ``size`` elements computing nodes from held inputs and constants only."""

    size: int
    body: Body
    stores: tuple[Store, ...]


@dataclass(frozen=True)
class Setup:
    """The setup loops; ``step`` selects the one running (``len(loops)``: the main part), ``index`` counts it."""

    step: str
    index: str
    loops: tuple[Held | Pre, ...]

    @property
    def arrays(self) -> tuple[Array, ...]:
        out = [h.array for h in self.loops if isinstance(h, Held) and h.array is not None]
        out += [s.array for p in self.loops if isinstance(p, Pre) for s in p.stores]
        return tuple(out)


@dataclass(frozen=True)
class Write:
    channel: str
    var: str


@dataclass(frozen=True)
class Token:
    """A wide token: read from (or written to) ``channel`` as ``var`` of type ``type``; ``element``: the
    per-lane variable it is unpacked to (None: a read dropped) or packed from."""

    channel: str
    type: str
    var: str
    element: str | None
    element_type: str


@dataclass(frozen=True)
class Phase:
    """Map nodes computed once per element of a loop (epilogue: the head's outputs; prologue: its inputs)."""

    index: str  # the flat element index (declared by the template only when ``counts_index``)
    counts_index: bool  # the body reads ``index``, so the template keeps it as a counter
    reads: tuple[Read, ...]
    body: Body
    result: str  # the variable holding the phase's last value


@dataclass(frozen=True)
class Rom:
    """A graph constant as a ROM declared in the stage function that reads it, so that its
    ARRAY_PARTITION applies (UG1399: the pragma goes where the array is declared)."""

    name: str  # the local array
    source: str  # the plan's ROM (weights.h)
    type: str
    size: int
    partitions: tuple[str, ...]  # each ARRAY_PARTITION pragma's arguments for parallel reads ("type=block factor=9")
    storage: str | None  # how it stores its elements: raw integers (cxx.raw_storage), or None: values of ``type``
    columns: int = 0  # > 0: declared as [size / columns][columns] (weights read by PE lanes at once)
    reshape: str = ""  # ARRAY_RESHAPE arguments: a ROM read a row at a time holds a row per word

    @property
    def dims(self) -> str:
        return f"[{self.size // self.columns}][{self.columns}]" if self.columns else f"[{self.size}]"


def partition(buf: Buffer) -> str:
    """The ARRAY_PARTITION arguments of a buffer read ``banks`` times per iteration, or ""."""
    return f"type={buf.banking} factor={buf.banks}" if buf.banks > 1 else ""


def partitions(buf: Buffer) -> tuple[str, ...]:
    """Each ARRAY_PARTITION pragma's arguments of a buffer: of the flat array, or of its 2-D view when it has
    ``columns`` (dim=1 its rows, banked as ``banking`` says; dim=2 each row, cyclically), the dimensions of
    one bank left out."""
    if buf.row:  # [rows][row], a row per word (``reshape``): the rows banked per lane
        return (f"type={buf.banking} factor={buf.banks} dim=1",) if buf.banks > 1 else ()
    if buf.columns == 1:
        return (partition(buf),) if buf.banks > 1 else ()
    return tuple(p for p, ways in ((f"type={buf.banking} factor={buf.banks} dim=1", buf.banks),
                                   (f"type=cyclic factor={buf.column_banks} dim=2", buf.column_banks)) if ways > 1)


def array(name: str, type_: str, buf: Buffer, parts: str | None = None) -> Array:
    """A local array as ``buf`` stores it (``parts``: its partition, else the buffer's banks)."""
    return Array(name, type_, buf.elements, buf.registers, buf.distance, partition(buf) if parts is None else parts)


def setup(ctx: Context, schedule: Schedule, partitions: Mapping[str, str] | None = None) -> Setup:
    """The setup loops of ``schedule``: its held inputs, then the pre loops of its phases; ``partitions``:
    per held tensor read in parallel (a streamed weight), its ARRAY_PARTITION arguments."""
    partitions = partitions or {}
    local = ctx.names.local
    index = local("idx")
    loops: list[Held | Pre] = []
    for h in schedule.held:
        buf = schedule.buffer(h.tensor) if h.kept else None
        arr = array(ctx.array(h.tensor), ctx.ctype(h.tensor), buf, partitions.get(h.tensor)) if h.kept else None
        loops.append(Held(h.channel, ctx.ctype(h.tensor), arr, h.size))
    for ph in schedule.phases:
        for p in ph.pre:
            stores = tuple(Store(array(ctx.array(n), ctx.ctype(n), schedule.buffer(n)), ctx.value(n)) for n in p.kept)
            loops.append(Pre(p.program.count, body(ctx, p.program, {}, index), stores))
    return Setup(local("step"), index, tuple(loops))


def phase(ctx: Context, ph: ElementPhase, values: Mapping[str, str], index: str, lane: str | None = None) -> Phase:
    """The C++ of ``ph``: ``values`` names the per-element tensors the loop already has (the head's result);
    ``lane``: the lane variable of a phase over wide tokens."""
    scalars = dict(values)
    scalars.update({r.tensor: ctx.value(r.tensor) for r in ph.reads})
    b = body(ctx, ph.program, scalars, index, lane)
    return Phase(
        index=index,
        counts_index=ph.program.reads_index,
        reads=tuple(Read(r.channel, ctx.ctype(r.tensor), ctx.value(r.tensor) if r.used else None) for r in ph.reads),
        body=b,
        result=scalars.get(ph.result, ctx.value(ph.result)),
    )


def writes(channels: Sequence[str], var: str) -> tuple[Write, ...]:
    return tuple(Write(name, var) for name in channels)


def local_roms(ctx: Context, schedule: Schedule, weights: Mapping[str, str]) -> tuple[Rom, ...]:
    """The ROMs a stage reads, each partitioned as its buffer says: ``weights`` (constant -> local name) read
    by the MACs, and every constant an element phase reads, under its ROM's name."""
    out = []
    for buf in (b for b in schedule.buffers if b.rom):
        constant = buf.tensor
        columns = buf.row or (buf.columns if buf.columns > 1 else 0)
        out.append(Rom(weights.get(constant, ctx.rom(constant)), ctx.rom(constant), ctx.ctype(constant),
                       ctx.type_of(constant).size, partitions(buf), ctx.rom_storage[constant], columns,
                       "type=complete dim=2" if buf.row else ""))
    return tuple(out)


@dataclass(frozen=True)
class Weights:
    """The weights of a conv2d, dense or matmul, read in parallel: a ROM of the stage or a held array."""

    name: str
    roms: dict[str, str]  # for local_roms: constant -> its local name
    partitions: dict[str, str]  # for setup: held tensor -> partition
    type: str  # the weights' element type (a ROM stores raw integers: the MAC helpers read them back as this)


def weights(ctx: Context, schedule: Schedule, tensor: str) -> Weights:
    """The weights ``tensor`` of a MAC stage, partitioned as its schedule banks them (a ROM by local_roms)."""
    if tensor in ctx.graph.constant_map:
        name = ctx.names.local(f"w_{ctx.rom(tensor)}")
        return Weights(name, {tensor: name}, {}, ctx.ctype(tensor))
    buf = schedule.buffer(tensor)
    return Weights(ctx.array(tensor), {}, {tensor: f"type={buf.banking} factor={buf.banks}"}, ctx.ctype(tensor))


def wheels(
    ctx: Context, digits: Sequence[tuple[int, int]], count: int, index: str, prefix: str
) -> tuple[dict[tuple[int, int], Term], tuple[Wheel, ...]]:
    """Counters for the digits (inner, size) of a loop over ``count`` elements with flat index ``index``.

    The counterpart of ``expr.body``'s counters for indices a stage computes itself (the
    accumulator of a reduction): names start with ``prefix`` so they never meet the body's.
    Returns the variable per digit (the loop index itself for the digit (1, count)) and the wheels
    to declare and advance with ``ops.counters`` and ``ops.advance``.
    """
    names: dict[tuple[int, int], str] = {}
    terms: dict[tuple[int, int], Term] = {}
    for inner, size in digits:
        if (inner, size) in terms:
            continue
        if inner == 1 and size == count:
            terms[(inner, size)] = Term(index, 1)
            continue
        names[(inner, size)] = ctx.names.local(f"{prefix}k{len(names)}")
        terms[(inner, size)] = Term(names[(inner, size)], 1)
    out = []
    for w, inner in enumerate(sorted({i for i, _ in names})):
        group = tuple(Digit(name, i, n) for (i, n), name in names.items() if i == inner)
        low = None if inner == 1 else ctx.names.local(f"{prefix}r{w}")
        out.append(Wheel(low, inner, group))
    return terms, tuple(out)


def packing_type(packing: Packing | None) -> str | None:
    """The hlsf::packing<S, G, WORD, XB, TOTAL> of a MAC stage of multiplier "packed" (mac.h), else None."""
    if packing is None:
        return None
    return (f"hlsf::packing<{packing.shift}, {packing.group}, {packing.word}, {packing.x_bits}, "
            f"{packing.total}>")


def accumulator(fmt: Fmt | None) -> str:
    """The C++ type of an exact accumulator of format ``fmt`` (``None``: a float32 graph, which
    accumulates in double as the reference does in float64)."""
    if fmt is None:
        return "double"
    return f"{'ap_fixed' if fmt.signed else 'ap_ufixed'}<{fmt.width}, {fmt.int_bits}>"
