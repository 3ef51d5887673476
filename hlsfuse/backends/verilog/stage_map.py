"""Map, fork and convert stages in Verilog, one iteration per cycle.

    map      setup loops (held inputs, pre loops), then the main loop: read a token of every streamed
             input, compute the nodes once per lane (the same counters, each lane's own logic), write
             the sink's token (``lower.schedule.MapMain``)
    fork     one loop: read the input, write it to every output in the same iteration
    convert  one loop over the narrow side's tokens, ``part`` counting them within a wide token:
             narrowing reads the wide token in part 0 (passing its part 0 straight through) and keeps
             it for parts 1..R-1; widening keeps parts 0..R-2 and writes them with the last one

A token of L lanes is L x W bits, lane l in bits [l W, (l + 1) W) (element 0 in the low bits).
"""

from __future__ import annotations

from ...lower.plan import Stage
from .module import ModuleBuilder, StageModule, Update
from .phase import element_phase, lanes_phase, reads, setup, setup_loops
from .vlog import ulit

__all__ = ["build_map", "build_fork", "build_convert"]


def build_map(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence([*setup_loops(schedule), ("read, compute, write", main.count)])
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
    seq = b.sequence([("copy", main.count)])
    here = seq.loops[0].here
    b.move(main.read, here)
    for c in main.writes:
        b.move(c, here)
    tensor = b.channel(main.read).tensor
    return b.build(f"copies '{tensor}' to {len(main.writes)} readers", dict.fromkeys(main.writes, f"{main.read}_tdata"),
                   state)


def build_convert(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    main = stage.schedule.main
    seq = b.sequence([("re-pack", main.iterations)])
    here = seq.loops[0].here
    part, pw = b.counter("part", main.ratio, seq.fire)
    narrow = min(main.lanes_in, main.lanes_out) * b.width(stage.sink)  # bits of a narrow token
    source = f"{main.read}_tdata"
    kept = b.reg("wide", (main.ratio - 1) * narrow)
    if main.widens:
        b.move(main.read, here)
        b.move(main.write, f"{here} && {part} == {ulit(main.ratio - 1, pw)}")
        for p in range(main.ratio - 1):
            b.updates.append(Update(f"{seq.fire} && {part} == {ulit(p, pw)}",
                                    f"{kept}[{(p + 1) * narrow - 1}:{p * narrow}]", source))
        out = f"{{{source}, {kept}}}"
    else:
        first = f"{part} == {ulit(0, pw)}"
        b.move(main.read, f"{here} && {first}")
        b.move(main.write, here)
        b.updates.append(Update(f"{seq.fire} && {first}", kept, f"{source}[{main.ratio * narrow - 1}:{narrow}]"))
        out = f"{source}[{narrow - 1}:0]"
        for p in range(main.ratio - 1, 0, -1):
            out = f"{part} == {ulit(p, pw)} ? {kept}[{p * narrow - 1}:{(p - 1) * narrow}] : {out}"
        out = b.wire("narrow", narrow, out)
    return b.build(f"'{stage.sink}' from {main.lanes_in} to {main.lanes_out} lanes per transfer",
                   {main.write: out}, state)
