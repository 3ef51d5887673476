"""The builder the stage generators fill with the views of one stage module (``decls``).

A stage module (templates/verilog/stage.v.j2) is one loop of its schedule, one iteration per cycle:

    sequencer   phase and idx registers walking the schedule's loops (setup loops, then the main
                part's); ``loop_k`` is high in loop k, ``last_k`` on its last iteration
    handshakes  per channel: the iterations that move one of its tokens (an expression of the
                state); the iteration fires when all of them can move, and only then does any move
    datapath    declarations: wires (expressions), nets driven by module instances (hlsf_assign,
                hlsf_divide_const, hlsf_line_buffer), registers, memories and ROMs
    state       counters and odometers (registers advanced by a condition, wrapping at their end),
                conditional updates of control registers (reset) and stores into memories (not reset)

Python computes the expressions; the template writes every statement. Names come from ``fresh``,
so nothing clashes with the ports, the channels' signals or a keyword (``lower.names.sanitize`` renames those).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import HlsfuseError
from ...ir import Graph
from ...lower.names import sanitize
from ...lower.plan import Channel, DataflowPlan, Stage
from ...types import FixedType
from .decls import (
    PACK_WIDTH,
    PACKED_BITS,
    ArrayDecl,
    BankRoms,
    Comment,
    Counter,
    Digit,
    Handshake,
    Instance,
    Loop,
    Mem,
    Net,
    NetArray,
    Odometer,
    Reg,
    RomDecl,
    Sequencer,
    StageModule,
    StreamPort,
    Update,
    Wire,
    fixed_type,
)
from .mem import mem_chunks
from .vlog import XW, bits_for, index_width

SUM_TERMS = 16  # terms per adder of ModuleBuilder.sum
_PORTS = frozenset(("ap_clk", "ap_rst_n", "busy", "stall"))  # every stage module's own (templates/verilog/stage.v.j2)

__all__ = ["SUM_TERMS", "ModuleBuilder"]


def _per_word(size: int, word: int) -> int:
    """Words a line of a ROM's .mem file: several in PACK_WIDTH bits for a large ROM of narrow words."""
    return max(1, PACK_WIDTH // word) if size * word >= PACKED_BITS and word <= PACK_WIDTH // 2 else 1


@dataclass
class ModuleBuilder:
    """Collects one stage module; ``loops`` are (what, count) of its schedule's loops, in order."""

    graph: Graph
    plan: DataflowPlan
    stage: Stage
    module: str
    taken: set[str] = field(default_factory=set)
    decls: list = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)
    odometers: list[Odometer] = field(default_factory=list)
    resets: list[Update] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    stores: list[Update] = field(default_factory=list)
    mems: dict[str, Mem] = field(default_factory=dict)
    rtl: set[str] = field(default_factory=set)
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (size, width)
    values: dict[str, str] = field(default_factory=dict)  # tensor -> its per-element value signal
    moves: dict[str, list[str]] = field(default_factory=dict)  # channel -> when an iteration moves a token
    sequencer: Sequencer | None = None

    def __post_init__(self):
        self.taken |= _PORTS
        for c in self.stage.inputs + self.stage.outputs:
            self.taken |= {c, *(f"{c}_{s}" for s in ("tdata", "tvalid", "tready"))}

    # ------------------------------------------------------------------ facts

    def dtype(self, tensor: str) -> FixedType:
        return fixed_type(self.graph, tensor)

    def width(self, tensor: str) -> int:
        return self.dtype(tensor).width

    def channel(self, name: str) -> Channel:
        return self.plan.channel(name)

    def bus(self, channel: str) -> int:
        """Bits of a transfer of ``channel``: lanes x element bits, lane l in bits [l W, (l + 1) W)."""
        c = self.channel(channel)
        return c.lanes * self.width(c.tensor)

    def rom_of(self, constant: str) -> str:
        for rom in self.plan.roms:
            if rom.constant == constant:
                return rom.name
        raise HlsfuseError(f"dataflow plan has no ROM for constant '{constant}'")

    def index(self, name: str) -> int:
        """Bits of an index into array ``name``."""
        return index_width(self.arrays[name][0])

    # ------------------------------------------------------------------ names and declarations

    def fresh(self, wanted: str) -> str:
        base = sanitize(wanted, 60)  # never a keyword of either language (lower.names), nor is base_2
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def wire(self, wanted: str, width: int, expr: str, signed: bool = False) -> str:
        name = self.fresh(wanted)
        self.decls.append(Wire(name, width, expr, signed))
        return name

    def sum(self, wanted: str, terms: list[str]) -> str:
        """A signed XW-bit wire of the sum of ``terms``, as a tree of adders of at most SUM_TERMS terms (the
        same bits: the sum wraps modulo 2^XW either way). Verilator makes each adder one C++ statement, so a
        dot product of hundreds of terms is many small statements it spreads over functions and files rather
        than one expression that g++ takes a minute to optimize."""
        while len(terms) > SUM_TERMS:
            terms = [self.wire(f"{wanted}_part", XW, " + ".join(terms[k:k + SUM_TERMS]), signed=True)
                     for k in range(0, len(terms), SUM_TERMS)]
        return self.wire(wanted, XW, " + ".join(terms), signed=True)

    def net(self, wanted: str, width: int) -> str:
        name = self.fresh(wanted)
        self.decls.append(Net(name, width))
        return name

    def reg(self, wanted: str, width: int, reset: str | None = None) -> str:
        name = self.fresh(wanted)
        self.decls.append(Reg(name, width))
        if reset is not None:
            self.resets.append(Update("1'b1", name, reset))
        return name

    def array(self, wanted: str, size: int, width: int, style: str = "") -> str:
        """A writable memory (held inputs, pre-loop results, buffers): written at a clock edge, read combinationally
        (``style``: its ``ram_style``, for one read at a registered address)."""
        name = self.fresh(wanted)
        self.decls.append(ArrayDecl(name, width, size, style=style))
        self.arrays[name] = (size, width)
        return name

    def net_array(self, wanted: str, width: int, size: int) -> str:
        name = self.fresh(wanted)
        self.decls.append(NetArray(name, width, size))
        self.arrays[name] = (size, width)
        return name

    def rom(self, wanted: str, values, width: int, lanes: int = 1, style: str = "") -> str:
        """A ROM of ``values`` (raw integers of ``width`` bits, row-major, any shape; ``lanes`` > 1: that many per
        word, the first in the low bits) loaded from ``<module>_<name>.mem``; equal contents share one memory."""
        values = np.asarray(values, dtype=np.int64)
        size, word = values.size // lanes, lanes * width
        per_word = _per_word(size, word)
        pad = -size % per_word * lanes  # the last line's missing words are zeros
        mem_chunks(values, width, lanes * per_word, pad)  # checks the contents now, not when the file is written
        for name, mem in self.mems.items():
            if self.arrays.get(name) == (size, word) and mem.holds(values, width, lanes * per_word, pad):
                return name
        name = self.fresh(wanted)
        file = f"{self.module}_{name}.mem"
        words, index = (self.fresh(f"{name}_words"), self.fresh(f"{name}_i")) if per_word > 1 else ("", "")
        self.decls.append(RomDecl(name, word, size, file, per_word, words, index, style=style))
        self.mems[name] = Mem(name, file, values, width, lanes * per_word, pad)
        self.arrays[name] = (size, word)
        return name

    def rom_banks(self, wanted: list[str], values: np.ndarray, width: int, style: str = "block") -> list[str]:
        """ROMs ``wanted``, bank k holding word k of each address of ``values`` (raw integers of ``width`` bits,
        addresses x len(wanted) banks in row-major order, any shape: a view is never copied whole), from one file
        (``BankRoms``)."""
        banks = len(wanted)
        size = values.size // banks
        per_word = _per_word(size, banks * width)
        pad = -size % per_word * banks
        mem_chunks(values, width, banks * per_word, pad)
        words = self.fresh("wb")
        names = tuple(self.fresh(w) for w in wanted)
        file = f"{self.module}_{words}.mem"
        self.decls.append(BankRoms(names, width, size, file, per_word, words, self.fresh(f"{words}_i"), style))
        self.mems[words] = Mem(words, file, values, width, banks * per_word, pad)
        self.arrays.update(dict.fromkeys(names, (size, width)))
        return list(names)

    def counter(self, wanted: str, count: int, step: str) -> tuple[str, int]:
        name, width = self.fresh(wanted), bits_for(count)
        self.counters.append(Counter(name, width, count, step))
        return name, width

    def odometer(self, wanted: str, extents, step: str) -> list[tuple[str, int]]:
        digits = tuple(Digit(self.fresh(f"{wanted}{d}"), bits_for(n), n) for d, n in enumerate(extents))
        self.odometers.append(Odometer(digits, step))
        return [(d.name, d.width) for d in digits]

    def instance(self, module: str, params, wanted: str, ports) -> None:
        self.rtl.add(module)
        self.decls.append(Instance(module, tuple(params), self.fresh(wanted), tuple(ports)))

    def comment(self, text: str) -> None:
        self.decls.append(Comment(text))

    def move(self, channel: str, when: str) -> None:
        """An iteration for which ``when`` holds moves one token of ``channel``."""
        self.moves.setdefault(channel, []).append(when)

    def unused(self, signal: str) -> None:
        """Consume a signal no logic reads (Verilator's lint recognises ``unused_*``)."""
        self.decls.append(Wire(self.fresh(f"unused_{signal}"), 1, f"&{{1'b0, {signal}, 1'b0}}"))

    # ------------------------------------------------------------------ the sequencer

    def sequence(self, loops: list[tuple[str, int]], next_loop: str | None = None) -> Sequencer:
        """The sequencer over ``loops`` ((what, count) in order); after the last loop, the first again.
        ``next_loop``: an expression of the loop after the current one, replacing that rule."""
        n = len(loops)
        pw = bits_for(n)
        phase = self.fresh("phase") if n > 1 else None
        width = bits_for(max(count for _, count in loops))
        idx = self.fresh("idx")
        views = tuple(Loop(what, count, self.fresh(f"loop{k}"), self.fresh(f"last{k}"))
                      for k, (what, count) in enumerate(loops))
        if next_loop is None and phase is not None:
            next_loop = f"{phase} == {pw}'d{n - 1} ? {pw}'d0 : {phase} + {pw}'d1"
        self.sequencer = Sequencer(phase, pw, idx, width, views, next_loop or "", self.fresh("fire"),
                                   self.fresh("inputs_ok"))
        return self.sequencer

    # ------------------------------------------------------------------ the module

    def build(self, note: str, outputs: dict[str, str], state: tuple[str, ...]) -> StageModule:
        if self.sequencer is None:
            raise HlsfuseError(f"stage '{self.stage.name}': its module has no sequencer")
        handshakes = []
        for c in (*self.stage.inputs, *self.stage.outputs):
            read = c in self.stage.inputs
            whens = self.moves.get(c)
            if not whens:
                raise HlsfuseError(f"stage '{self.stage.name}': no iteration moves channel '{c}'")
            when = " || ".join(f"({w})" if " " in w and len(whens) > 1 else w for w in whens)
            moves = self.fresh(f"{'rd' if read else 'wr'}_{c}")
            space = "" if read else self.fresh(f"space_{c}")
            handshakes.append(Handshake(c, read, moves, when, space))
        ins = tuple(StreamPort(c, self.bus(c)) for c in self.stage.inputs)
        outs = tuple(StreamPort(c, self.bus(c), outputs[c]) for c in self.stage.outputs)
        return StageModule(
            name=self.module,
            stage=self.stage.name,
            kind=self.stage.kind,
            note=note,
            iterations=self.stage.cycles,
            state=state,
            inputs=ins,
            outputs=outs,
            sequencer=self.sequencer,
            counters=tuple(self.counters),
            odometers=tuple(self.odometers),
            decls=tuple(self.decls),
            handshakes=tuple(handshakes),
            resets=tuple(self.resets),
            updates=tuple(self.updates),
            stores=tuple(self.stores),
            mems=tuple(self.mems.values()),
            rtl=tuple(sorted(self.rtl)),
        )

