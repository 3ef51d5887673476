"""What every part of the C++ backend looks up: the graph, the plan, the names and the tables.

A ``Context`` is built once per ``emit_hls`` call and never changes. Stage view builders read it
to find a tensor's C++ type and variable names, the ROM holding a constant, and the lookup tables a
fixed-point node reads (its op's ``OpDef.tables``, never recomputed here): a table op's (sigmoid, elu ...)
one, a softmax's exp and reciprocal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ...errors import HlsfuseError
from ...ir import Constant, Graph, TensorType
from ...lower.plan import Channel, DataflowPlan
from ...lut import FUNCTIONS, Table
from ...ops import get_op
from ...types import DType
from .cxx import float_literal, raw_lines, raw_storage, spell_type
from .names import Names, assign_names, fresh
from .options import HlsOptions

__all__ = ["Context", "TableView", "make_context"]


@dataclass(frozen=True)
class TableView:
    """One lookup table in luts.h, read at ``hlsf::lut_index<in_width, signed, shift>(x)`` (the kernel library's)."""

    name: str
    function: str
    type: str  # C++ type of an entry's value
    storage: str  # how the table stores its entries' raw integers (cxx.raw_storage), read back by hlsf::element<type>
    raw: tuple[int, ...]  # the entries' raw integers
    in_width: int  # W of the input format (the table indexes its raw integer)
    signed: bool
    shift: int
    note: str


@dataclass(frozen=True)
class Context:
    graph: Graph
    plan: DataflowPlan
    options: HlsOptions
    names: Names
    roms: Mapping[str, str]  # constant -> ROM name
    tables: Mapping[str, tuple[TableView, ...]]  # fixed-point table node -> its tables (equal tables shared): a
    # lookup's one, a softmax's exp and reciprocal
    channels: Mapping[str, Channel]
    rom_storage: Mapping[str, str | None]  # constant -> how its ROMs store it: raw integers (cxx.raw_storage) for a
    # fixed-point constant, None for a float one (its typed values)

    def type_of(self, tensor: str) -> TensorType:
        return self.graph.types[tensor]

    def dtype(self, tensor: str) -> DType:
        return self.graph.types[tensor].dtype

    def ctype(self, tensor: str) -> str:
        """The typedef of ``tensor``'s elements (types.h)."""
        return self.names.types[tensor]

    def token(self, channel: str) -> str:
        """The C++ type of one transfer of ``channel``: an element, or ``hlsf::lanes`` of its lanes."""
        c = self.channel(channel)
        return self.ctype(c.tensor) if c.lanes == 1 else f"hlsf::lanes<{self.ctype(c.tensor)}, {c.lanes}>"

    def value(self, tensor: str) -> str:
        return self.names.values[tensor]

    def array(self, tensor: str) -> str:
        return self.names.arrays[tensor]

    def rom(self, constant: str) -> str:
        try:
            return self.roms[constant]
        except KeyError:
            raise HlsfuseError(f"dataflow plan has no ROM for constant '{constant}'") from None

    def channel(self, name: str) -> Channel:
        try:
            return self.channels[name]
        except KeyError:
            raise HlsfuseError(f"dataflow plan has no channel '{name}'") from None

    @property
    def uses_float(self) -> bool:
        return any(t.dtype.is_float for t in self.graph.types.values())


def _spelled_params(table: Table) -> str:
    """The function's parameters, when it has some: ``(alpha=0.5)``."""
    if not table.params:
        return ""
    pairs = zip(FUNCTIONS[table.function].params, table.params)
    return "(" + ", ".join(f"{name}={value!r}" for name, value in pairs) + ")"


def _table_view(name: str, table: Table) -> TableView:
    fmt = table.in_fmt
    return TableView(
        name=name,
        function=table.function,
        type=spell_type(table.out_type),
        storage=raw_storage(table.out_type),
        raw=tuple(int(v) for v in table.entries),
        in_width=fmt.width,
        signed=fmt.signed,
        shift=table.shift,
        note=f"{table.function}{_spelled_params(table)} of {fmt.width}-bit inputs with {fmt.frac} fractional bits, "
        f"{'signed' if fmt.signed else 'unsigned'}: entry ((raw - min) >> {table.shift})",
    )


def _tables(graph: Graph, names: Names):
    """(table node -> its tables, in the order of ``OpDef.tables``; names taken): one table per distinct
    ``Table.key`` (function, parameters, input format, output type, size),
    named in graph order after the op and the function
    (``lut_sigmoid_0``, ``lut_softmax_exp_1``)."""
    taken = set(names.taken)
    by_key: dict[tuple, TableView] = {}
    out: dict[str, tuple[TableView, ...]] = {}
    for node in graph.nodes:
        sig = graph.sigs[node.name]
        views = []
        for table in get_op(node.op).tables_of(sig):
            key = table.key
            if key not in by_key:
                prefix = table.function if table.function == node.op else f"{node.op}_{table.function}"
                name = fresh(f"lut_{prefix}_{len(by_key)}", taken)
                taken.add(name)
                by_key[key] = _table_view(name, table)
            views.append(by_key[key])
        if views:
            out[node.name] = tuple(views)
    return out, frozenset(taken)


def _rom_storage(graph: Graph, plan: DataflowPlan) -> dict[str, str | None]:
    """Per constant of a ROM: its storage type (``rom_lines`` makes its initializer when weights.h is written)."""
    storage = {}
    for rom in plan.roms:
        const = graph.constant_map.get(rom.constant)
        if const is None:
            raise HlsfuseError(f"dataflow plan: ROM '{rom.name}' holds '{rom.constant}', which is no graph constant")
        storage[rom.constant] = None if const.type.dtype.is_float else raw_storage(const.type.dtype)
    return storage


def rom_lines(const: Constant) -> tuple[str, ...]:
    """A ROM's initializer, lines of exact values, row-major: the raw integers of a fixed-point constant, exact
    float literals of a float one."""
    dtype = const.type.dtype
    if not dtype.is_float:
        return raw_lines(const.data, dtype.signed)
    values = [float_literal(v).value for v in const.data.reshape(-1).tolist()]
    return tuple(", ".join(values[k:k + 16]) for k in range(0, len(values), 16))


def make_context(graph: Graph, plan: DataflowPlan, options: HlsOptions) -> Context:
    if plan.graph != graph.name:
        raise HlsfuseError(f"dataflow plan is for graph '{plan.graph}', not '{graph.name}'")
    names = assign_names(graph, plan)
    tables, taken = _tables(graph, names)
    names = dataclasses.replace(names, taken=taken)
    return Context(
        graph=graph,
        plan=plan,
        options=options,
        names=names,
        roms=MappingProxyType({r.constant: r.name for r in plan.roms}),
        tables=MappingProxyType(tables),
        channels=MappingProxyType({c.name: c for c in plan.channels}),
        rom_storage=MappingProxyType(_rom_storage(graph, plan)),
    )
