"""``Sequencer``: the loops a stage runs once per frame, one after another, one iteration per cycle.

Most stages are a fixed sequence of loops (read held inputs whole, compute small nodes, then the
main loop; or read a row, then emit its outputs). The sequencer gives every loop ``k``:

    loop_k   high while loop k is the current one
    valid_k  loop_k and every channel it reads has an element
    fire_k   valid_k and every channel it writes can take one: one iteration happens this cycle

and drives the stage's handshakes from them: an input channel's ``tready`` is the OR of the
``fire_k`` of the loops reading it, an output channel's ``tvalid`` the OR of the ``valid_k`` of the
loops writing it (valid never depends on ready). ``idx`` counts a loop's iterations; after the last
one the next loop starts (after the last loop, the first one of the next frame). A stage is
``busy`` in a cycle where a loop fires and ``stall``s when it does not although it is inside a
frame or has an input waiting.
"""

from __future__ import annotations

from dataclasses import dataclass

from .module import ModuleWriter
from .vlog import bits_for, ulit

__all__ = ["Loop", "Sequencer"]


@dataclass(frozen=True)
class Loop:
    what: str  # for the comment
    count: int
    reads: tuple[str, ...] = ()  # channels read once per iteration
    writes: tuple[str, ...] = ()  # channels written once per iteration


class Sequencer:
    def __init__(self, w: ModuleWriter, loops: list[Loop]):
        self.w, self.loops = w, loops
        n = len(loops)
        self.width = bits_for(max(loop.count for loop in loops))
        self.idx = w.reg(w.fresh("idx"), self.width, ulit(0, self.width))
        pw = bits_for(n)
        self.phase = w.reg(w.fresh("phase"), pw, ulit(0, pw)) if n > 1 else None
        self.loop, self.valid, self.fire, self.last = [], [], [], []
        for k, loop in enumerate(loops):
            w.decls.append(f"// loop {k}: {loop.what}, {loop.count} iteration(s)")
            here = "1'b1" if self.phase is None else f"{self.phase} == {ulit(k, pw)}"
            self.loop.append(w.wire(w.fresh(f"loop{k}"), 1, here))
            valid = " && ".join([self.loop[k]] + [f"{c}_tvalid" for c in loop.reads])
            self.valid.append(w.wire(w.fresh(f"valid{k}"), 1, valid))
            fire = " && ".join([self.valid[k]] + [f"{c}_tready" for c in loop.writes])
            self.fire.append(w.wire(w.fresh(f"fire{k}"), 1, fire))
            self.last.append(f"{self.idx} == {ulit(loop.count - 1, self.width)}")
        self.any_fire = w.wire(w.fresh("fire"), 1, " || ".join(self.fire))
        last = self.last[0] if n == 1 else " : ".join(
            [f"{self.loop[k]} ? {self.last[k]}" for k in range(n - 1)] + [f"({self.last[-1]})"]
        )
        self.at_last = w.wire(w.fresh("last"), 1, f"({last})" if n > 1 else last)
        w.seq.append(f"if ({self.any_fire}) begin")
        w.seq.append(f"    if ({self.at_last}) begin")
        w.seq.append(f"        {self.idx} <= {ulit(0, self.width)};")
        if self.phase is not None:
            last, zero, one = ulit(n - 1, pw), ulit(0, pw), ulit(1, pw)
            w.seq.append(f"        {self.phase} <= {self.phase} == {last} ? {zero} : {self.phase} + {one};")
        w.seq.append("    end else begin")
        w.seq.append(f"        {self.idx} <= {self.idx} + {ulit(1, self.width)};")
        w.seq.append("    end")
        w.seq.append("end")

    def drive(self, outputs: dict[str, str], extra_busy: str | None = None) -> None:
        """Drive the handshakes, ``busy`` and ``stall``; ``outputs``: output channel -> its tdata expression."""
        w = self.w
        for channel in w.stage.inputs:
            fires = [f for f, loop in zip(self.fire, self.loops) if channel in loop.reads]
            ready = " || ".join(fires) or "1'b0"
            w.decls.append(f"assign {channel}_tready = {ready};")
        for channel in w.stage.outputs:
            valids = [v for v, loop in zip(self.valid, self.loops) if channel in loop.writes]
            valid = " || ".join(valids) or "1'b0"
            w.decls.append(f"assign {channel}_tvalid = {valid};")
            w.decls.append(f"assign {channel}_tdata = {outputs[channel]};")
        started = [f"{self.idx} != {ulit(0, self.width)}"]
        if self.phase is not None:
            started.append(f"{self.phase} != {ulit(0, bits_for(len(self.loops)))}")
        started += [f"{c}_tvalid" for c in w.stage.inputs]
        busy = self.any_fire if extra_busy is None else f"{self.any_fire} || {extra_busy}"
        w.decls.append(f"assign busy = {busy};")
        w.decls.append(f"assign stall = !busy && ({' || '.join(started)});")
