"""Map, fork and convert stages in Verilog, one iteration per cycle.

    map      setup loops (held inputs, pre loops), then the main loop: read a token of every streamed
             input, compute the nodes once per lane (the same counters, each lane's own logic), write
             the sink's token (``lower.stage_map.MapMain``)
    fork     one loop: read the input, write it to every output in the same iteration
    convert  the gearbox of ``lower.stage_convert.ConvertMain``: ``fill`` elements kept; an iteration reads a
             token of A when fill < B and writes a token of B when fill (+ A) >= B, from the kept
             elements followed by the token read (one concatenation per possible fill), keeping the rest

A token of L lanes is L x W bits, lane l in bits [l W, (l + 1) W) (element 0 in the low bits).
"""

from __future__ import annotations

import math

from ...lower.plan import Stage
from .decls import StageModule, Update
from .module import ModuleBuilder
from .phase import element_phase, lanes_phase, reads, setup
from .vlog import bits_for, ulit, zext

__all__ = ["build_map", "build_fork", "build_convert"]


def build_map(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence(schedule.loops)
    arrays = setup(b, schedule, seq)
    here = seq.loops[-1].here
    step = f"{seq.fire} && {here}"
    values = reads(b, main.phase, here)
    if main.lanes == 1:
        result = element_phase(b, main.phase, values, arrays, (seq.idx, seq.width), step, "m_")
    else:
        result = lanes_phase(b, main.phase, main.lanes, values, [{}] * main.lanes, arrays, (seq.idx, seq.width),
                             step, "m")
    for c in main.writes:
        b.move(c, here)
    return b.build(f"nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, result), state)


def build_fork(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    main = stage.schedule.main
    seq = b.sequence(main.loops)
    here = seq.loops[0].here
    b.move(main.read, here)
    for c in main.writes:
        b.move(c, here)
    tensor = b.channel(main.read).tensor
    return b.build(f"copies '{tensor}' to {len(main.writes)} readers", dict.fromkeys(main.writes, f"{main.read}_tdata"),
                   state)


def build_convert(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    main = stage.schedule.main
    seq = b.sequence(main.loops)
    here = seq.loops[0].here
    a, n = main.lanes_in, main.lanes_out
    w = b.width(stage.sink)
    kept_n, span = main.kept, main.span  # the elements an iteration holds: those kept, then the token read
    fill_w = bits_for(kept_n + 1)
    fill = b.reg("fill", fill_w, ulit(0, fill_w))  # elements kept: a multiple of gcd(A, B)
    kept = b.reg("kept", kept_n * w)
    reads = b.wire("reads", 1, f"{fill} < {ulit(n, fill_w)}" if n <= kept_n else "1'b1")
    joined = "0"
    for f in range(kept_n, -1, -math.gcd(a, n)):  # one vector per possible fill
        parts = [f"{kept}[{f * w - 1}:0]"] if f else []
        if f < n:  # this fill reads: the token goes above the kept elements
            parts.insert(0, f"{main.read}_tdata")
        pad = span - f - (a if f < n else 0)
        vector = "{" + ", ".join(([ulit(0, pad * w)] if pad else []) + parts) + "}"
        joined = vector if joined == "0" else f"{fill} == {ulit(f, fill_w)} ? {vector} : {joined}"
    v = b.wire("joined", span * w, joined)
    have_w = max(bits_for(span + 1), fill_w)  # kept and read: at most span
    have = b.wire("have", have_w, f"{zext(fill, fill_w, have_w)} + ({reads} ? {ulit(a, have_w)} : {ulit(0, have_w)})")
    writes = b.wire("writes", 1, f"{have} >= {ulit(n, have_w)}")
    left = b.wire("left", have_w, f"{have} - ({writes} ? {ulit(n, have_w)} : {ulit(0, have_w)})")
    b.move(main.read, f"{here} && {reads}")
    b.move(main.write, f"{here} && {writes}")
    shifted = f"{v}[{span * w - 1}:{n * w}]" if span > n else ""  # what a write leaves
    if n + kept_n > span:  # kept elements past it: zeros, never used
        shifted = f"{{{ulit(0, (n + kept_n - span) * w)}{', ' + shifted if shifted else ''}}}"
    b.updates += [
        Update(seq.fire, kept, f"{writes} ? {shifted} : {v}[{kept_n * w - 1}:0]"),
        Update(seq.fire, fill, f"{left}[{fill_w - 1}:0]"),
    ]
    out = b.wire("token", n * w, f"{v}[{n * w - 1}:0]")
    if have_w > fill_w:
        b.unused(f"{left}[{have_w - 1}:{fill_w}]")
    return b.build(f"'{stage.sink}' from {a} to {n} lanes per transfer", {main.write: out}, state)
