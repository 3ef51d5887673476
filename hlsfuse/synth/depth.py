"""Logic depth: the longest combinational path between registers of a mapped netlist (Yosys ``write_json``).

A path starts at a register output, a block RAM, a module input or a constant and ends at a register input, a
block RAM or a module output. Along it each cell adds an estimated delay (``DELAYS``, per family: a LUT level
with its routing, a carry cell, a wide-mux cell, a combinational DSP, a LUTRAM read); the path of the largest
sum is the stage's critical path, and the figures reported are its LUT levels, carry cells and DSPs, and the
estimate in ns. Yosys's own ``ltp`` counts cells on the longest path but treats the mapped flip-flops (FDRE) as
combinational, so every register loop is a loop to it; this module cuts the paths at them instead.

The estimates are rules of thumb for timing a design by eye (a LUT level with its net, in the slowest speed
grade), not a timing analysis: see docs/synth.md for the rule that flags a stage.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

__all__ = ["DELAYS", "Depth", "logic_depth"]

DELAYS = {
    # lut, carry, muxf, dsp, lutram (ns per cell on the path); overhead: clock to out + setup + clock skew
    "xc7": {"lut": 0.9, "carry": 0.15, "muxf": 0.3, "dsp": 4.5, "lutram": 1.2, "overhead": 0.8},
    "xcu": {"lut": 0.55, "carry": 0.1, "muxf": 0.15, "dsp": 2.8, "lutram": 0.8, "overhead": 0.5},
    "xcup": {"lut": 0.5, "carry": 0.1, "muxf": 0.15, "dsp": 2.6, "lutram": 0.7, "overhead": 0.5},
}

_SEQUENTIAL = re.compile(r"(FD|LD|RAMB|FIFO|URAM|SRL|BUFG|IBUF|OBUF)")
_DSP_REGS = ("AREG", "BREG", "CREG", "DREG", "ADREG", "MREG", "PREG", "ACASCREG", "BCASCREG")


@dataclass(frozen=True)
class Depth:
    luts: int  # LUT levels on the critical path
    carry: int  # carry cells (CARRY4/CARRY8) on it
    dsp: int  # combinational DSP slices on it
    ns: float  # its estimated delay, register overhead included
    start: str  # the first and last named signals along it
    end: str

    def to_json(self) -> dict:
        return {"lut_levels": self.luts, "carry": self.carry, "dsp": self.dsp, "ns": round(self.ns, 2),
                "from": self.start, "to": self.end}


def _kind(cell: dict) -> str | None:
    """The delay class of a cell, or None for a sequential one (it cuts paths)."""
    t = cell["type"]
    if t.startswith(("DSP48", "DSP58")):
        params = cell.get("parameters", {})
        regs = [params.get(p, "0") for p in _DSP_REGS]
        return None if any(int(str(v), 2) if set(str(v)) <= {"0", "1"} else int(v) for v in regs) else "dsp"
    if _SEQUENTIAL.match(t):
        return None
    if re.fullmatch(r"LUT[1-6]", t):
        return "lut"
    if t.startswith("CARRY"):
        return "carry"
    if t.startswith("MUXF"):
        return "muxf"
    if t.startswith("RAM"):
        return "lutram"
    return "wire"  # INV and the like: no level of their own


def _comb_inputs(cell: dict, kind: str) -> list:
    """The input bits a cell's outputs depend on within the cycle: for a LUTRAM its read addresses only."""
    bits = []
    for port, direction in cell["port_directions"].items():
        if direction != "input":
            continue
        if kind == "lutram" and not port.startswith(("A", "DPRA", "RADR")):
            continue
        bits += [b for b in cell["connections"][port] if isinstance(b, int)]
    return bits


def logic_depth(netlist: dict, top: str, family: str) -> Depth:
    """The critical path of module ``top`` of a flattened mapped netlist."""
    module = netlist["modules"][top]
    delays = DELAYS[family]
    names: dict[int, str] = {}
    for name, net in module.get("netnames", {}).items():
        if not net.get("hide_name"):
            for b in net["bits"]:
                if isinstance(b, int):
                    names.setdefault(b, name)
    comb: dict[str, tuple[str, list, list]] = {}
    driver: dict[int, str] = {}
    for cname, cell in module["cells"].items():
        kind = _kind(cell)
        if kind is None:
            continue
        outs = [b for p, d in cell["port_directions"].items() if d == "output"
                for b in cell["connections"][p] if isinstance(b, int)]
        comb[cname] = (kind, _comb_inputs(cell, kind), outs)
        for b in outs:
            driver[b] = cname
    users: dict[str, set] = defaultdict(set)
    waiting = {}
    for cname, (_, ins, _) in comb.items():
        preds = {driver[b] for b in ins if b in driver}
        waiting[cname] = len(preds)
        for p in preds:
            users[p].add(cname)
    # longest path (Kahn order): per cell (ns, luts, carry, dsp, the cell before it, itself)
    best: dict[str, tuple] = {}
    ready = [c for c, n in waiting.items() if n == 0]
    while ready:
        cname = ready.pop()
        kind, ins, _ = comb[cname]
        arrive = max((best[driver[b]] for b in ins if b in driver and driver[b] in best),
                     key=lambda t: t[0], default=None)
        ns, luts, carry, dsp = arrive[:4] if arrive else (0.0, 0, 0, 0)
        ns += delays.get(kind, 0.0)
        best[cname] = (ns, luts + (kind == "lut"), carry + (kind == "carry"), dsp + (kind == "dsp"),
                       arrive[5] if arrive else None, cname)
        for user in users[cname]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if not best:
        return Depth(0, 0, 0, delays["overhead"], "", "")
    last = max(best.values(), key=lambda t: t[0])
    path, cname = [], last[5]
    while cname is not None:
        path.append(cname)
        cname = best[cname][4]
    path.reverse()
    signals = [names[b] for c in path for b in comb[c][2] if b in names]
    first = next((names[b] for b in comb[path[0]][1] if b in names), signals[0] if signals else "")
    return Depth(last[1], last[2], last[3], last[0] + delays["overhead"], first, signals[-1] if signals else "")
