"""Identifiers of the generated C++: deterministic, sanitized, and never clashing.

The DataflowPlan already names the top function, stages, channels, ports and ROMs. The C++
backend adds a typedef, a value variable and an array name per tensor (``t_x``, ``v_x``,
``a_x``), lookup tables, adapters and loop counters. Every added name is made from the graph's
tensor names by keeping ASCII letters, digits and single underscores, then made unique against
every name already taken (the plan's identifiers, C++ keywords, names the headers define),
in graph order, so identical inputs always give identical names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ...errors import HlsfuseError
from ...ir import Graph
from ...lower.names import CXX_KEYWORDS, GLOBAL_NAMES
from ...lower.plan import DataflowPlan

__all__ = ["Names", "assign_names", "sanitize", "fresh", "RESERVED"]

RESERVED = CXX_KEYWORDS | GLOBAL_NAMES

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def sanitize(text: str) -> str:
    """``text`` reduced to an identifier fragment: ASCII letters, digits, single underscores."""
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return cleaned or "x"


def fresh(wanted: str, taken: Iterable[str] | frozenset[str]) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``... : the first that is not taken or reserved."""
    taken = taken if isinstance(taken, (set, frozenset)) else set(taken)
    name, n = wanted, 1
    while name in taken or name in RESERVED:
        n += 1
        name = f"{wanted}_{n}"
    return name


@dataclass(frozen=True)
class Names:
    """Identifiers per graph tensor and of the backend's own global helpers."""

    types: Mapping[str, str]  # tensor -> typedef of its element type
    values: Mapping[str, str]  # tensor -> local variable holding one element
    arrays: Mapping[str, str]  # tensor -> local array holding a whole tensor
    packets: Mapping[str, str]  # port -> typedef of its AXI4-Stream packet
    adapters: Mapping[str, str]  # port -> function moving it between its AXI port and its channel
    taken: frozenset[str]  # every global identifier of the generated code
    locals_: set[str] = field(default_factory=set, compare=False)  # handed out in the current function

    def local(self, wanted: str) -> str:
        """A name for a function-local variable (loop index, counter) that shadows no global and is unique
        in the function being generated (``new_function`` starts another)."""
        name = fresh(wanted, self.taken | self.locals_)
        self.locals_.add(name)
        return name

    def new_function(self) -> None:
        self.locals_.clear()


def _plan_identifiers(plan: DataflowPlan) -> list[tuple[str, str, bool]]:
    """(what, name, is_global) of every identifier the plan fixes; ports are only parameters and locals."""
    found = [("top function", plan.top, True)]
    found += [("stage", s.name, True) for s in plan.stages]
    found += [("channel", c.name, True) for c in plan.channels]
    found += [("port", p.name, False) for p in plan.inputs + plan.outputs]
    found += [("ROM", r.name, True) for r in plan.roms]
    return found


def _check_plan(plan: DataflowPlan) -> set[str]:
    """The plan's identifiers, checked to be valid, distinct C++ names that hide nothing the code uses."""
    seen: dict[str, str] = {}
    for what, name, is_global in _plan_identifiers(plan):
        clash = name in CXX_KEYWORDS or (is_global and name in GLOBAL_NAMES)
        if not _IDENT.match(name) or clash or "__" in name:
            raise HlsfuseError(f"dataflow plan: {what} name {name!r} is not a usable C++ identifier")
        if name in seen:
            raise HlsfuseError(f"dataflow plan: {what} name {name!r} is also the name of a {seen[name]}")
        seen[name] = what
    return set(seen)


def assign_names(graph: Graph, plan: DataflowPlan) -> Names:
    """Allocate the backend's identifiers for ``graph`` and ``plan``."""
    taken = _check_plan(plan)

    def allocate(prefix: str, text: str) -> str:
        name = fresh(f"{prefix}_{sanitize(text)}", taken)
        taken.add(name)
        return name

    tensors = [i.name for i in graph.inputs] + [c.name for c in graph.constants] + [n.name for n in graph.nodes]
    types = {t: allocate("t", t) for t in tensors}
    values = {t: allocate("v", t) for t in tensors}
    arrays = {t: allocate("a", t) for t in tensors}
    ports = plan.inputs + plan.outputs
    packets = {p.name: allocate("axis", p.name) for p in ports}
    adapters = {p.name: allocate("read" if p.direction == "in" else "write", p.name) for p in ports}
    return Names(
        types=MappingProxyType(types),
        values=MappingProxyType(values),
        arrays=MappingProxyType(arrays),
        packets=MappingProxyType(packets),
        adapters=MappingProxyType(adapters),
        taken=frozenset(taken),
    )
