"""Map and fork stages in Verilog, one iteration per cycle.

    map    setup loops (held inputs, pre loops), then the main loop: read every streamed input,
           compute the nodes, write the sink (``lower.schedule.MapMain``)
    fork   one loop: read the input, write it to every output in the same iteration
"""

from __future__ import annotations

from ...lower.plan import Stage
from .module import ModuleBuilder, StageModule
from .phase import element_phase, reads, setup, setup_loops

__all__ = ["build_map", "build_fork"]


def build_map(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence([*setup_loops(schedule), ("read, compute, write", main.count)])
    arrays = setup(b, schedule, seq)
    here = seq.loops[-1].here
    values = reads(b, main.phase, here)
    result = element_phase(b, main.phase, values, arrays, (seq.idx, seq.width), f"{seq.fire} && {here}", "m_")
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
