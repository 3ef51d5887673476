"""Replicated lookup tables: a stage that reads a luts.h table more than twice per iteration gets copies of its own.

Vitis HLS implements a const array as a ROM of at most two ports and does not replicate it by itself, and
ARRAY_PARTITION applies only where an array is declared (UG1399), so a global table read by L unrolled lanes
at unrelated indices caps the loop at II = ceil(L / 2). Weights meet the same limit and are declared per
stage (``phase.local_roms``); a table is handled alike. How often a stage reads each table per iteration, and
so its copies, is the lowering's (``lower.tables.stage_tables``, also read by the resource model):

    R <= 2   the statements read the global T of luts.h, as before
    R > 2    static const T_t T_copies[C][N] = {{HLSFUSE_LUT_T}, ...}   C = ceil(R / 2), partitioned dim=1
             read number r of an iteration uses copy r / 2: each copy a 2-port ROM serving two reads

Reads are numbered per phase: lookup k (in statement order) of T in a phase of L lanes, at lane l, is
read k L + l. ``plan`` names the copies; ``use`` rewrites a phase's statements to read them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ...lower.plan import Stage
from ...lower.tables import ROM_PORTS, node_tables, stage_tables
from .context import Context, TableView
from .expr import Body
from .phase import Phase, Pre, Setup

__all__ = ["Copies", "CopyRead", "Reader", "plan", "use", "use_phase", "use_setup", "stage_copies"]


@dataclass(frozen=True)
class Copies:
    """A stage's own copies of the luts.h table ``table``: ``copies`` ROMs of ``size`` entries, declared
    ``name[copies][size]``."""

    name: str  # the local array
    table: str  # the global table (luts.h), whose HLSFUSE_LUT_<table> lists the entries
    type: str  # how an entry is stored (the table's raw-integer storage)
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











def _views(ctx: Context, stage: Stage) -> dict[tuple, TableView]:
    """The luts.h table of each table key the stage's nodes read."""
    out = {}
    for name in stage.nodes:
        keys = [k for k, _ in node_tables(ctx.graph, name)]
        views = ctx.tables.get(name, ())
        out.update(zip(keys, views))
    return out


def plan(ctx: Context, stage: Stage) -> tuple[Copies, ...]:
    """The copies of the tables ``stage`` reads more than ``ROM_PORTS`` times in one iteration, named in the
    current function."""
    views = _views(ctx, stage)
    return tuple(Copies(ctx.names.local(f"{views[t.key].name}_copies"), views[t.key].name, views[t.key].storage,
                        len(views[t.key].raw), t.copies, t.reads)
                 for t in stage_tables(ctx.graph, stage) if t.copies)

def use(reader: Reader, copies: Sequence[Copies]) -> Body:
    """``reader``'s body with each lookup of a copied table reading its copy: read k L + l at lane l."""
    by_table = {c.table: c for c in copies}
    seen: Counter = Counter()
    stmts = []
    for s in reader.body.stmts:
        table = s.params["table"].name if "table" in s.params else None
        if table in by_table:
            at = CopyRead(by_table[table].name, reader.lane, seen[table] * reader.lanes)
            seen[table] += 1
            s = dataclasses.replace(s, params=MappingProxyType({**s.params, "copy_read": at}))
        stmts.append(s)
    return dataclasses.replace(reader.body, stmts=tuple(stmts))


def use_phase(phase: Phase, lanes: int, lane: str | None, copies: Sequence[Copies]) -> Phase:
    return dataclasses.replace(phase, body=use(Reader(phase.body, lanes, lane), copies))




def use_setup(setup: Setup, copies: Sequence[Copies]) -> Setup:
    loops = tuple(dataclasses.replace(p, body=use(Reader(p.body), copies)) if isinstance(p, Pre) else p
                  for p in setup.loops)
    return dataclasses.replace(setup, loops=loops)


def stage_copies(
    ctx: Context, stage: Stage, setup: Setup, phases: Mapping[str, tuple[Phase, int, str | None]]
) -> tuple[tuple[Copies, ...], Setup, dict[str, Phase]]:
    """The copies of ``stage``, whose setup loops and element ``phases`` (name -> (phase, lanes, lane counter)) each
    run in iterations of their own, with the setup and phases rewritten to read them."""
    copies = plan(ctx, stage)
    if not copies:
        return (), setup, {k: p for k, (p, _, _) in phases.items()}
    return copies, use_setup(setup, copies), {k: use_phase(p, n, lane, copies) for k, (p, n, lane) in phases.items()}
