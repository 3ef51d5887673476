"""The Verilog of the HLS backend's phases (``backends.hls.phase``): held inputs, pre loops, per-element reads.

Window, rows and reduce stages compute their prologue and epilogue map nodes with these, and a map
stage is one phase: each HLS loop becomes a ``sequencer.Loop`` running one iteration per cycle,
whose index is the sequencer's ``idx``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..hls.phase import Held, Phase, Read
from .expr import counters, render_body
from .module import ModuleWriter
from .sequencer import Loop, Sequencer
from .vlog import zext

__all__ = ["held_loops", "store_held", "pre_loops", "compute_pre", "read_values", "tensor_of_array"]


def held_loops(held: Sequence[Held]) -> list[Loop]:
    return [Loop(f"hold {h.channel}", h.size, reads=(h.channel,)) for h in held]


def store_held(w: ModuleWriter, held: Sequence[Held], seq: Sequencer, first: int) -> None:
    """Loops ``first``.. of ``seq`` store the held inputs (loop order = ``held`` order)."""
    for k, h in enumerate(held):
        width = w.width(w.ctx.channel(h.channel).tensor)
        if h.array is None:
            w.decls.append(f"wire unused_{h.channel} = &{{1'b0, {h.channel}_tdata, 1'b0}};")
            continue
        w.array(h.array, h.size, width)
        ix = zext(seq.idx, seq.width, w.index(h.array))
        w.stores.append(f"if ({seq.fire[first + k]}) {h.array}[{ix}] <= {h.channel}_tdata;")


def pre_loops(p: Phase) -> list[Loop]:
    return [Loop(f"pre {', '.join(s.var for s in pre.stores) or 'loop'}", pre.size) for pre in p.pre]


def tensor_of_array(w: ModuleWriter, array: str) -> str:
    return next(t for t, a in w.ctx.names.arrays.items() if a == array)


def compute_pre(w: ModuleWriter, p: Phase, seq: Sequencer, scope: dict, first: int) -> None:
    """Loops ``first``.. of ``seq`` compute ``p``'s pre loops into their arrays."""
    for k, pre in enumerate(p.pre):
        local = dict(scope)
        local.update(counters(w, pre.body, f"p{k}_", seq.fire[first + k]))
        render_body(w, pre.body, local)
        for store in pre.stores:
            width = w.width(tensor_of_array(w, store.array))
            w.array(store.array, pre.size, width)
            ix = zext(seq.idx, seq.width, w.index(store.array))
            w.stores.append(f"if ({seq.fire[first + k]}) {store.array}[{ix}] <= {store.var};")


def read_values(w: ModuleWriter, reads: Sequence[Read]) -> None:
    """The streamed inputs of a phase as wires (a read no node uses is consumed by an ``unused_`` wire)."""
    for r in reads:
        tensor = w.ctx.channel(r.channel).tensor
        if r.var is None:
            w.decls.append(f"wire unused_{r.channel} = &{{1'b0, {r.channel}_tdata, 1'b0}};")
        else:
            w.wire(r.var, w.width(tensor), f"{r.channel}_tdata")
