"""Rows stages in Verilog: dense or matmul (``backends.hls.stage_rows.body``), one loop iteration per cycle.

    loop per held input   store it whole (epilogue operands, a streamed w or b)
    loop per pre loop     epilogue nodes smaller than the output, into arrays
    row loop              K cycles: row[k] <= x                          ─┐ once per row
    emit loop             N cycles: the exact dot product of the row and  │ of every batch
                          column n, one hlsf_assign, the epilogue, write ─┘

The emit cycle computes the whole dot product combinationally: K products of 64-bit sign-extended
raws summed in 64 bits (the check rule proved the exact accumulation fits), like the reference's
int64 matmul. dense reads w[n * K + k]; matmul reads b[base + k * N + n], base being the offset of
the batch of b that broadcasting pairs with the current output batch (a small ROM when not 0).
After the emit loop of a row the sequencer would start the next frame's first loop; a later
non-blocking assignment sends it back to the row loop until the last row, so the held inputs are
read once per frame.
"""

from __future__ import annotations

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ..hls import stage_rows as hls_rows
from ..hls.context import Context
from .expr import counters, declare_rom, render_body
from .mem import mem_lines
from .module import ModuleWriter, StageModule
from .phase import compute_pre, held_loops, pre_loops, read_values, store_held
from .sequencer import Loop, Sequencer
from .vlog import XW, assign_params, bits_for, sext64, ulit, zext

__all__ = ["build"]


def _counter(w: ModuleWriter, name: str, count: int, step: str) -> str:
    """A register counting 0..count-1, advanced when ``step`` is high."""
    width = bits_for(count)
    reg = w.reg(w.fresh(name), width, ulit(0, width))
    w.seq.append(
        f"if ({step}) {reg} <= {reg} == {ulit(count - 1, width)} ? {ulit(0, width)} : {reg} + {ulit(1, width)};"
    )
    return reg


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    b = hls_rows.body(ctx, stage)
    if b.is_float:
        raise HlsfuseError(f"stage '{stage.name}': the Verilog backend computes fixed-point and integer types only")
    e = b.epilogue
    loops = held_loops(b.held) + pre_loops(e)
    first_row = len(loops)
    loops.append(Loop("row", b.k, (b.in_channel,)))
    loops.append(Loop("emit", b.n, tuple(r.channel for r in e.reads), tuple(x.channel for x in b.writes)))
    seq = Sequencer(w, loops)
    read_fire, emit_fire = seq.fire[first_row], seq.fire[first_row + 1]

    store_held(w, b.held, seq, first=0)
    compute_pre(w, e, seq, {e.index: (seq.idx, seq.width)}, first=len(b.held))

    # rows of every batch: m counts the rows of a batch, bt the batches (matmul's offsets need the batch)
    batch = None
    if b.batches * b.rows > 1 and (first_row > 0 or b.offsets):
        row_done = w.wire(w.fresh("row_done"), 1, f"{emit_fire} && {seq.last[first_row + 1]}")
        last_row = "1'b1"
        if b.rows > 1:
            m = _counter(w, "m", b.rows, row_done)
            last_row = f"{m} == {ulit(b.rows - 1, bits_for(b.rows))}"
        if b.batches > 1:
            batch = _counter(w, "bt", b.batches, f"{row_done} && {last_row}")
            last_row = f"{last_row} && {batch} == {ulit(b.batches - 1, bits_for(b.batches))}"
        if first_row > 0:
            # back to the row loop after every row but the frame's last (overrides the sequencer's next loop)
            w.seq.append(f"if ({row_done} && !({last_row})) {seq.phase} <= {ulit(first_row, bits_for(len(loops)))};")

    # the row register
    x_type, w_type = (w.dtype(t) for t in ctx.graph.node(stage.head).inputs)
    row = w.array(w.fresh("xrow"), b.k, x_type.width)
    w.stores.append(f"if ({read_fire}) {row}[{zext(seq.idx, seq.width, bits_for(b.k))}] <= {b.in_channel}_tdata;")

    # the weights, and the index of the emit loop's column n
    if b.weights not in w.arrays:
        declare_rom(w, b.weights)
    iw = w.index(b.weights)
    n = zext(seq.idx, seq.width, iw)
    if b.op == "dense":
        base = w.wire(w.fresh("wbase"), iw, f"{n} * {ulit(b.k % (1 << iw), iw)}")
        step = 1
    else:
        base = n
        if b.offsets:
            offsets = w.fresh("b_base")
            w.mem(offsets, b.offsets, iw, mem_lines(b.offsets, iw))
            ix = zext(batch, bits_for(b.batches), w.index(offsets)) if batch else ulit(0, w.index(offsets))
            base = w.wire(w.fresh("wbase"), iw, f"{offsets}[{ix}] + {n}")
        step = b.n
    terms = []
    for k in range(b.k):
        xk = sext64(f"{row}[{ulit(k, bits_for(b.k))}]", x_type)
        ix = base if k == 0 else f"{base} + {ulit((k * step) % (1 << iw), iw)}"
        wk = w.wire(w.fresh(f"w{k}"), w_type.width, f"{b.weights}[{ix}]")
        terms.append(f"{xk} * {sext64(wk, w_type)}")
    w.decls.append(f"// {b.op} '{stage.head}': the exact dot product of the row and column n")
    exact = w.wire(w.fresh("dot"), XW, " + ".join(terms), signed=True)
    head = w.dtype(stage.head)
    w.decls.append(f"wire [{head.width - 1}:0] {b.head_var};")
    w.rtl.add("hlsf_assign")
    w.decls.append(
        f"hlsf_assign {assign_params(x_type.frac + w_type.frac, head)} {w.fresh('u_head')} "
        f"(.in_data({exact}), .in_sticky(1'b0), .out_data({b.head_var}));"
    )

    # the epilogue, per output element
    scope = {}
    if e.counts_index:
        out_size = w.graph.types[stage.head].size
        scope[e.index] = (_counter(w, f"e_{e.index}", out_size, emit_fire), bits_for(out_size))
    read_values(w, e.reads)
    scope.update(counters(w, e.body, "e_", emit_fire))
    render_body(w, e.body, scope)
    seq.drive({x.channel: x.var for x in b.writes})
    return w.build("rows", f"{b.op} '{stage.head}', nodes {', '.join(stage.nodes)}")
