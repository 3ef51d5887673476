"""``ModuleWriter``: the pieces of one generated stage module, collected by the stage generators.

A stage module (templates/verilog/stage.v.j2) has the stream ports of its channels, ``busy`` and
``stall`` status outputs, and a body made of:

    decls    wires, registers, memories and module instances (combinational logic)
    resets   control registers cleared by the synchronous reset
    seq      statements run at a clock edge when not in reset (non-blocking assignments)
    stores   writes into memories at a clock edge (memories are never reset)

Generators name every signal they add through ``fresh`` so nothing clashes with the HLS backend's
value and array names (``v_*``, ``a_*``), which the Verilog backend reuses for the same tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import HlsfuseError
from ...ir import Graph
from ...lower.plan import Stage
from ...types import FixedType
from ..hls.context import Context
from .vlog import index_width

__all__ = ["StreamPort", "Mem", "StageModule", "ModuleWriter", "fixed_type"]


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


@dataclass(frozen=True)
class Mem:
    """A read-only memory loaded with ``$readmemh`` from ``file`` (a ROM or a lookup table)."""

    name: str
    file: str
    width: int
    size: int
    text: str  # the .mem file's contents


@dataclass(frozen=True)
class StageModule:
    name: str  # the Verilog module name
    stage: str  # the plan's stage name (also the instance's suffix in the top)
    kind: str
    note: str
    inputs: tuple[StreamPort, ...]
    outputs: tuple[StreamPort, ...]
    decls: tuple[str, ...]
    resets: tuple[str, ...]
    seq: tuple[str, ...]
    stores: tuple[str, ...]
    mems: tuple[Mem, ...]
    rtl: tuple[str, ...]  # hw/rtl modules instantiated


@dataclass
class ModuleWriter:
    ctx: Context  # the HLS backend's context: names of values, arrays, ROMs and tables
    stage: Stage
    module: str
    decls: list[str] = field(default_factory=list)
    resets: list[str] = field(default_factory=list)
    seq: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    mems: dict[str, Mem] = field(default_factory=dict)
    rtl: set[str] = field(default_factory=set)
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (size, width)
    taken: set[str] = field(default_factory=set)

    @property
    def graph(self) -> Graph:
        return self.ctx.graph

    def dtype(self, tensor: str) -> FixedType:
        return fixed_type(self.graph, tensor)

    def width(self, tensor: str) -> int:
        return self.dtype(tensor).width

    def fresh(self, wanted: str) -> str:
        name, n = wanted, 1
        while name in self.taken or name in _VERILOG_KEYWORDS:
            n += 1
            name = f"{wanted}_{n}"
        self.taken.add(name)
        return name

    def reg(self, name: str, width: int, reset: str | None = None) -> str:
        """Declare a control register (cleared to ``reset`` by the reset when given)."""
        self.decls.append(f"reg [{width - 1}:0] {name};")
        if reset is not None:
            self.resets.append(f"{name} <= {reset};")
        return name

    def wire(self, name: str, width: int, expr: str, signed: bool = False) -> str:
        self.decls.append(f"wire {'signed ' if signed else ''}[{width - 1}:0] {name} = {expr};")
        return name

    def array(self, name: str, size: int, width: int) -> str:
        """Declare a writable memory of ``size`` elements (held inputs, pre-loop results, buffers)."""
        if name not in self.arrays:
            self.decls.append(f"reg [{width - 1}:0] {name} [0:{size - 1}];")
            self.arrays[name] = (size, width)
        return name

    def mem(self, name: str, values, width: int, text: str) -> str:
        """Declare a ROM read combinationally and loaded from ``<module>_<name>.mem``."""
        if name not in self.mems:
            size = len(values)
            file = f"{self.module}_{name}.mem"
            self.decls.append(f"reg [{width - 1}:0] {name} [0:{size - 1}];")
            self.decls.append(f'initial $readmemh("{file}", {name});')
            self.mems[name] = Mem(name, file, width, size, text)
            self.arrays[name] = (size, width)
        return name

    def index(self, name: str) -> int:
        """Bits of an index into array ``name``."""
        return index_width(self.arrays[name][0])

    def build(self, kind: str, note: str) -> StageModule:
        ports_in = tuple(StreamPort(c, self.width(self.ctx.channel(c).tensor)) for c in self.stage.inputs)
        ports_out = tuple(StreamPort(c, self.width(self.ctx.channel(c).tensor)) for c in self.stage.outputs)
        return StageModule(
            name=self.module,
            stage=self.stage.name,
            kind=kind,
            note=note,
            inputs=ports_in,
            outputs=ports_out,
            decls=tuple(self.decls),
            resets=tuple(self.resets),
            seq=tuple(self.seq),
            stores=tuple(self.stores),
            mems=tuple(self.mems.values()),
            rtl=tuple(sorted(self.rtl)),
        )


_VERILOG_KEYWORDS = frozenset(
    """always and assign automatic begin buf bufif0 bufif1 case casex casez cell cmos config deassign default
    defparam design disable edge else end endcase endconfig endfunction endgenerate endmodule endprimitive
    endspecify endtable endtask event for force forever fork function generate genvar highz0 highz1 if ifnone
    incdir include initial inout input instance integer join large liblist library localparam macromodule medium
    module nand negedge nmos nor noshowcancelled not notif0 notif1 or output parameter pmos posedge primitive
    pull0 pull1 pulldown pullup pulsestyle_ondetect pulsestyle_onevent rcmos real realtime reg release repeat
    rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled signed small specify specparam strong0 strong1
    supply0 supply1 table task time tran tranif0 tranif1 tri tri0 tri1 triand trior trireg unsigned use uwire
    vectored wait wand weak0 weak1 while wire wor xnor xor""".split()
)
# SystemVerilog keywords: Verilator reads .v files as SystemVerilog, so these are taken too
_VERILOG_KEYWORDS |= frozenset(
    """accept_on alias always_comb always_ff always_latch assert assume before bind bins binsof bit break byte
    chandle checker class clocking const constraint context continue cover covergroup coverpoint cross dist do
    endchecker endclass endclocking endgroup endinterface endpackage endprogram endproperty endsequence enum
    eventually expect export extends extern final first_match foreach forkjoin global iff ignore_bins
    illegal_bins implements implies import inside int interconnect interface intersect join_any join_none let
    local logic longint matches modport nettype new nexttime null package packed priority program property
    protected pure rand randc randcase randsequence ref reject_on restrict return s_always s_eventually
    s_nexttime s_until s_until_with sequence shortint shortreal soft solve static string strong struct super
    sync_accept_on sync_reject_on tagged this throughout timeprecision timeunit type typedef union unique unique0
    until until_with untyped var virtual void wait_order weak wildcard with within
    ap_clk ap_rst_n busy stall""".split()
)
