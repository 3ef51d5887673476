"""The lookup tables a stage reads, and how often one iteration reads each: one fact for the resource model
(``area``) and the C++ (``backends.hls.replicas``).

A fixed-point table node (sigmoid, elu, hard_swish ...) reads its table (``ops.lut.table_of``), a fixed-point
softmax its exp and reciprocal tables (``ops.opaque.softmax_tables``), a fixed-point layer_norm or rms_norm its rsqrt
table (``ops.norm.rsqrt_table``). Nodes whose tables have the same function,
parameters, input format, output type and size (``Table.key``) share one. A ROM has ROM_PORTS ports, so a stage
that reads a table R times in one iteration needs ceil(R / ROM_PORTS) copies of it:

    reads R   the most any one iteration reads: per pre loop (one element per iteration), the lookups of
              its program; per main phase, the lookups of its program times the phase's lanes (phases that
              never share an iteration, a reduce stage's prologue and epilogue, counted apart); an own
              stage as its main's ``table_reads`` say: a softmax reads its exp table once per lane and its
              reciprocal once, a normalisation its rsqrt table once
    R <= 2    the stage reads the table of luts.h (``copies`` 0); each stage reading it is a process of
              its own, so the resource model counts a ROM per stage all the same
    R > 2     the stage keeps ceil(R / 2) copies of its own
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ir import Graph
from ..lut import Table
from ..ops import get_op
from .plan import Stage

__all__ = ["ROM_PORTS", "TableReads", "node_tables", "stage_tables"]

ROM_PORTS = 2
"""Reads per cycle of one ROM (a dual-port block or distributed RAM)."""


def node_tables(graph: Graph, name: str) -> tuple[tuple[tuple, Table], ...]:
    """(key, table) of each table node ``name`` reads (``OpDef.tables``); the key is what tables equal in
    content share."""
    sig = graph.sigs[name]
    tables = get_op(graph.node(name).op).tables_of(sig)
    return tuple((t.key, t) for t in tables)


@dataclass(frozen=True)
class TableReads:
    key: tuple
    table: Table
    reads: int  # the most one iteration of the stage reads it

    @property
    def copies(self) -> int:
        """ROMs of the stage's own (0: the design's one table serves)."""
        return -(-self.reads // ROM_PORTS) if self.reads > ROM_PORTS else 0


def stage_tables(graph: Graph, stage: Stage) -> tuple[TableReads, ...]:
    """The tables ``stage`` reads, each with its reads per iteration (the module docstring), in first-use order."""
    if not any(get_op(graph.node(n).op).tables is not None for n in stage.nodes):
        return ()
    schedule, main = stage.schedule, stage.schedule.main
    found: dict[tuple, Table] = {}
    most: Counter = Counter()

    def iteration(nodes, lanes) -> None:  # the lookups of one iteration: each of ``nodes`` ``lanes(node)`` times
        reads: Counter = Counter()
        for name in nodes:
            for key, table in node_tables(graph, name):
                found.setdefault(key, table)
                reads[key] += lanes(name)
        for key, n in reads.items():
            most[key] = max(most[key], n)

    for ph in schedule.phases:
        for pre in ph.pre:
            iteration([s.node for s in pre.program.steps], lambda _: 1)
    if stage.kind == "own":  # as its main says (a softmax: the exp table once per lane, the reciprocal once)
        for (key, table), reads in zip(node_tables(graph, stage.head), main.table_reads):
            found.setdefault(key, table)
            most[key] = max(most[key], reads)
    else:  # a stage's phases never share an iteration (a reduce stage's prologue and epilogue)
        for ph in schedule.phases:
            iteration(ph.nodes, schedule.node_lanes)
    return tuple(TableReads(key, table, most[key]) for key, table in found.items())
