"""Replicated lookup tables: a stage that reads a luts.h table more than twice per iteration gets copies of its own.

Vitis HLS implements a const array as a ROM of at most two ports and does not replicate it by itself, and
ARRAY_PARTITION applies only where an array is declared (UG1399), so a global table read by L unrolled lanes
at unrelated indices caps the loop at II = ceil(L / 2). Weights meet the same limit and are declared per
stage (``phase.local_roms``); a table is handled alike:

    reads R per iteration of table T   (the most any one iteration reads: lanes x lookups of T per lane,
                                        phases that never share an iteration counted apart)
    R <= 2   the statements read the global T of luts.h, as before
    R > 2    static const T_t T_copies[C][N] = {{HLSFUSE_LUT_T}, ...}   C = ceil(R / 2), partitioned dim=1
             read number r of an iteration uses copy r / 2: each copy a 2-port ROM serving two reads

Reads are numbered per phase: lookup k (in statement order) of T in a phase of L lanes, at lane l, is
read k L + l. ``plan`` is the analysis (which tables, how many copies); ``use`` rewrites a phase's
statements to read their copies.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from .context import Context, TableView
from .expr import Body
from .phase import Phase, Pre, Setup

__all__ = ["ROM_PORTS", "Copies", "CopyRead", "Reader", "copies_of", "plan", "use", "use_phase", "use_setup",
           "setup_readers", "stage_copies", "tables_read"]

ROM_PORTS = 2
"""Reads per cycle of one ROM (a dual-port block or distributed RAM)."""


@dataclass(frozen=True)
class Copies:
    """A stage's own copies of the luts.h table ``table``: ``copies`` ROMs of ``size`` entries, declared
    ``name[copies][size]``."""

    name: str  # the local array
    table: str  # the global table (luts.h), whose HLSFUSE_LUT_<table> lists the entries
    type: str
    size: int
    copies: int
    reads: int  # per iteration


@dataclass(frozen=True)
class CopyRead:
    """Where one lookup statement reads: copy (``lane`` + ``first``) / ``ports`` of ``array`` (``lane`` None: no
    lane loop, copy ``first`` / ``ports``)."""

    array: str
    lane: str | None
    first: int
    ports: int = ROM_PORTS


@dataclass(frozen=True)
class Reader:
    """A body run ``lanes`` times per iteration (an unrolled loop over lanes with counter ``lane``, or once)."""

    body: Body
    lanes: int = 1
    lane: str | None = None


def tables_read(body: Body) -> Counter:
    """Table name -> lookup statements of ``body`` reading it."""
    return Counter(s.params["table"].name for s in body.stmts if s.op == "lookup")


def _tables(readers: Sequence[Reader]) -> dict[str, TableView]:
    return {s.params["table"].name: s.params["table"] for r in readers for s in r.body.stmts if s.op == "lookup"}


def plan(ctx: Context, readers: Sequence[Reader]) -> tuple[Copies, ...]:
    """The tables ``readers`` (bodies that never run in the same iteration) read more than ``ROM_PORTS`` times in one
    iteration, each with its copies named in the current function."""
    reads: Counter = Counter()
    for r in readers:
        for name, count in tables_read(r.body).items():
            reads[name] = max(reads[name], count * r.lanes)
    found = (copies_of(ctx, table, reads[name]) for name, table in _tables(readers).items())
    return tuple(c for c in found if c is not None)


def copies_of(ctx: Context, table: TableView, reads: int) -> Copies | None:
    """The copies of ``table`` for a stage reading it ``reads`` times per iteration (None: the global table serves)."""
    if reads <= ROM_PORTS:
        return None
    return Copies(ctx.names.local(f"{table.name}_copies"), table.name, table.type, len(table.entries),
                  -(-reads // ROM_PORTS), reads)


def use(reader: Reader, copies: Sequence[Copies]) -> Body:
    """``reader``'s body with each lookup of a copied table reading its copy: read k L + l at lane l."""
    by_table = {c.table: c for c in copies}
    seen: Counter = Counter()
    stmts = []
    for s in reader.body.stmts:
        table = s.params["table"].name if s.op == "lookup" else None
        if table in by_table:
            at = CopyRead(by_table[table].name, reader.lane, seen[table] * reader.lanes)
            seen[table] += 1
            s = dataclasses.replace(s, params=MappingProxyType({**s.params, "copy_read": at}))
        stmts.append(s)
    return dataclasses.replace(reader.body, stmts=tuple(stmts))


def use_phase(phase: Phase, lanes: int, lane: str | None, copies: Sequence[Copies]) -> Phase:
    return dataclasses.replace(phase, body=use(Reader(phase.body, lanes, lane), copies))


def setup_readers(setup: Setup) -> tuple[Reader, ...]:
    """The pre loops of ``setup``, one element per iteration each."""
    return tuple(Reader(p.body) for p in setup.loops if isinstance(p, Pre))


def use_setup(setup: Setup, copies: Sequence[Copies]) -> Setup:
    loops = tuple(dataclasses.replace(p, body=use(Reader(p.body), copies)) if isinstance(p, Pre) else p
                  for p in setup.loops)
    return dataclasses.replace(setup, loops=loops)


def stage_copies(
    ctx: Context, setup: Setup, phases: Mapping[str, tuple[Phase, int, str | None]]
) -> tuple[tuple[Copies, ...], Setup, dict[str, Phase]]:
    """The copies of a stage whose setup loops and element ``phases`` (name -> (phase, lanes, lane counter)) each
    run in iterations of their own, with the setup and phases rewritten to read them."""
    readers = setup_readers(setup) + tuple(Reader(p.body, lanes, lane) for p, lanes, lane in phases.values())
    copies = plan(ctx, readers)
    if not copies:
        return (), setup, {k: p for k, (p, _, _) in phases.items()}
    return copies, use_setup(setup, copies), {k: use_phase(p, n, lane, copies) for k, (p, n, lane) in phases.items()}
