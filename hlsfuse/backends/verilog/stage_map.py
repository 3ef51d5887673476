"""Map stages in Verilog: the HLS map stage's loops (``backends.hls.stage_map.body``), one iteration per cycle.

    loop per held input   store each element into its array (or drop it)
    loop per pre loop     compute nodes smaller than the output into arrays
    main loop             read every streamed input, compute the nodes, write the sink
"""

from __future__ import annotations

from ...lower.plan import Stage
from ..hls import stage_map as hls_map
from ..hls.context import Context
from .expr import counters, render_body
from .module import ModuleWriter, StageModule
from .phase import compute_pre, held_loops, pre_loops, read_values, store_held
from .sequencer import Loop, Sequencer

__all__ = ["build"]


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    b = hls_map.body(ctx, stage)
    p = b.phase
    loops = held_loops(b.held) + pre_loops(p)
    loops.append(Loop("main", b.count, tuple(r.channel for r in p.reads), tuple(x.channel for x in b.writes)))
    seq = Sequencer(w, loops)
    scope = {p.index: (seq.idx, seq.width)}
    store_held(w, b.held, seq, first=0)
    compute_pre(w, p, seq, scope, first=len(b.held))
    read_values(w, p.reads)
    scope.update(counters(w, p.body, "m_", seq.fire[-1]))
    render_body(w, p.body, scope)
    seq.drive({x.channel: x.var for x in b.writes})
    return w.build("map", f"nodes {', '.join(stage.nodes)}")
