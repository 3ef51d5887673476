"""Rows stages in Verilog: dense or matmul (``lower.schedule.RowsMain``), one iteration per cycle.

After the setup loops (held inputs: epilogue operands, a streamed w or b), the push/emit loop over rows:

    emit  while the snapshot has outputs left: column n of the snapshot's row, the exact dot product
          of the row and column n of the weights (K products of 64-bit sign-extended raws summed in 64
          bits: the check rule proved the exact accumulation fits), one hlsf_assign, the epilogue, write
    push  the next element into the row register; the push completing a row copies it into the
          snapshot, and waits while the snapshot has outputs left, but for the last one

dense reads w[n * K + k]; matmul reads b[base + k * N + n], base being the offset of the batch of b
that broadcasting pairs with the snapshot's output batch (a small ROM when not 0).
"""

from __future__ import annotations

from ...lower.plan import Stage
from .expr import rom
from .mem import mem_lines
from .module import ModuleBuilder, StageModule, Update
from .phase import emit_epilogue, fold_sum, push_emit, setup, setup_loops
from .vlog import XW, assign_params, bits_for, sext64, ulit, zext

__all__ = ["build"]


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence([*setup_loops(schedule), ("push and emit", main.iterations)])
    arrays = setup(b, schedule, seq)
    here = seq.loops[-1].here
    fire = f"{seq.fire} && {here}"
    node = b.graph.node(stage.head)
    x_type, w_type = (b.dtype(t) for t in node.inputs)
    head_type = b.dtype(stage.head)
    if main.streamed:
        out = _streamed(b, stage, arrays, here, fire, seq.loops[-1].last, x_type, w_type, head_type)
        return b.build(f"{main.op} '{stage.head}' (streamed row), nodes {', '.join(stage.nodes)}",
                       dict.fromkeys(main.writes, out), state)

    units = main.batches * main.rows
    loop = push_emit(b, fire, seq.loops[-1].last, main.n, [units, main.k],
                     lambda position: f"{position[1][0]} == {ulit(main.k - 1, position[1][1])}", main.folds)
    push, emitting, (n, nw), n_last, completes = loop.push, loop.emitting, loop.index, loop.last_emit, loop.completes
    writes = emitting if loop.fold is None else f"{emitting} && {loop.writes}"  # an output is written
    k, kw = loop.position[1]
    b.move(main.read, f"{here} && {push}")
    snap = b.array("snap", main.k, x_type.width)
    kb = b.index(snap)
    if main.k > 1:  # the row so far (the completing push's element goes straight into the snapshot)
        xrow = b.array("xrow", main.k, x_type.width)
        b.stores.append(Update(f"{fire} && {push}", f"{xrow}[{zext(k, kw, kb)}]", f"{main.read}_tdata"))
    for j in range(main.k):
        source = f"{main.read}_tdata" if j == main.k - 1 else f"{xrow}[{ulit(j, kb)}]"
        b.stores.append(Update(f"{fire} && {push} && {completes}", f"{snap}[{ulit(j, kb)}]", source))

    # the weights, and the index of column n of the snapshot's row
    weights = rom(b, main.weights) if main.weights in b.graph.constant_map else arrays[main.weights]
    iw = b.index(weights)
    col = zext(n, nw, iw)
    if main.op == "dense":
        base, step = b.wire("wbase", iw, f"{col} * {ulit(main.k % (1 << iw), iw)}"), 1
    else:
        base, step = col, main.n
        if main.offsets:
            batch, _ = b.odometer("out", [main.batches, main.rows], f"{fire} && {writes} && {n_last}")[0]
            table = b.rom("b_base", len(main.offsets), iw, mem_lines(main.offsets, iw))
            bsel = zext(batch, bits_for(main.batches), b.index(table))
            base = b.wire("wbase", iw, f"{table}[{bsel}] + {col}")
    terms = []
    for s in range(main.simd):
        # lane s computes product j = main.product(fold, s): row element j, weight base + j * step
        if loop.fold is None:
            j = s
            xj = sext64(f"{snap}[{ulit(j, kb)}]", x_type)
            ix = base if j == 0 else f"{base} + {ulit((j * step) % (1 << iw), iw)}"
        else:
            f, fw = loop.fold
            j0, dj = main.product(0, s), main.product(1, s) - main.product(0, s)  # j = j0 + fold * dj
            jx = b.wire(f"j{s}", kb, f"{ulit(j0, kb)} + {zext(f, fw, kb)} * {ulit(dj % (1 << kb), kb)}")
            xj = sext64(f"{snap}[{jx}]", x_type)
            ix = f"{base} + {zext(jx, kb, iw)} * {ulit(step % (1 << iw), iw)}"
        wj = b.wire(f"w{s}", w_type.width, f"{weights}[{ix}]")
        terms.append(f"{xj} * {sext64(wj, w_type)}")
    b.comment(f"{main.op} '{stage.head}': the exact dot product of the snapshot's row and column n")
    exact = fold_sum(b, terms, fire, emitting, loop, "dot")
    result = b.net("v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), "u_head",
               (("in_data", exact), ("in_sticky", "1'b0"), ("out_data", result)))

    out = emit_epilogue(b, main, stage.head, result, arrays, here, fire, writes)
    return b.build(f"{main.op} '{stage.head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out),
                   state)


def _streamed(b: ModuleBuilder, stage: Stage, arrays, here: str, fire: str, frame_end: str, x_type, w_type,
              head_type) -> str:
    """A folded dense stage of one row per frame (``lower.schedule.Streamed``): pushes fill the row register
    while fold f of column n emits once the row's first (f + 1) x SIMD elements are in (``need``), adding to
    accumulator n; the last fold writes. Returns the signal the output channels carry."""
    main = stage.schedule.main
    k_w = bits_for(main.k + 1)
    pushed = b.reg("pushed", k_w, ulit(0, k_w))  # row elements pushed so far in this frame
    push = b.wire("push", 1, f"{pushed} != {ulit(main.k, k_w)}")
    b.move(main.read, f"{here} && {push}")
    xrow = b.array("xrow", main.k, x_type.width)
    kb = b.index(xrow)
    b.stores.append(Update(f"{fire} && {push}", f"{xrow}[{zext(pushed, k_w, kb)}]", f"{main.read}_tdata"))

    f_w = bits_for(main.folds + 1)
    need_w = bits_for(main.k + main.simd + 1)
    fold = b.reg("fold", f_w, ulit(0, f_w))
    need = b.reg("need", need_w, ulit(main.simd, need_w))
    emit = b.wire("emit", 1, f"{fold} != {ulit(main.folds, f_w)} && {zext(pushed, k_w, need_w)} >= {need}")
    n, nw = b.counter("n", main.n, f"{fire} && {emit}")
    n_last = f"{n} == {ulit(main.n - 1, nw)}"
    b.updates += [
        Update(f"{fire} && {push}", pushed, f"{pushed} + {ulit(1, k_w)}"),
        Update(f"{fire} && {emit} && {n_last}", fold, f"{fold} + {ulit(1, f_w)}"),
        Update(f"{fire} && {emit} && {n_last}", need, f"{need} + {ulit(main.simd, need_w)}"),
        Update(f"{fire} && {frame_end}", pushed, ulit(0, k_w)),
        Update(f"{fire} && {frame_end}", fold, ulit(0, f_w)),
        Update(f"{fire} && {frame_end}", need, ulit(main.simd, need_w)),
    ]

    weights = rom(b, main.weights) if main.weights in b.graph.constant_map else arrays[main.weights]
    iw = b.index(weights)
    base = b.wire("wbase", iw, f"{zext(n, nw, iw)} * {ulit(main.k % (1 << iw), iw)}")
    fb = zext(fold, f_w, kb)
    terms = []
    for s in range(main.simd):  # lane s: row element j = fold x SIMD + s, weight n x K + j
        jx = b.wire(f"j{s}", kb, f"{fb} * {ulit(main.simd % (1 << kb), kb)} + {ulit(s, kb)}")
        wj = b.wire(f"w{s}", w_type.width, f"{weights}[{base} + {zext(jx, kb, iw)}]")
        terms.append(f"{sext64(f'{xrow}[{jx}]', x_type)} * {sext64(wj, w_type)}")
    accs = b.array("accs", main.n, XW)
    ab = b.index(accs)
    start = b.wire("start", XW, f"{fold} == {ulit(0, f_w)} ? {XW}'sd0 : $signed({accs}[{zext(n, nw, ab)}])",
                   signed=True)
    b.comment(f"dense '{stage.head}': fold f of column n's dot product, added to its accumulator")
    total = b.wire("dot", XW, " + ".join([start, *terms]), signed=True)
    b.stores.append(Update(f"{fire} && {emit}", f"{accs}[{zext(n, nw, ab)}]", total))
    result = b.net("v_head", head_type.width)
    b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), "u_head",
               (("in_data", total), ("in_sticky", "1'b0"), ("out_data", result)))
    writes = b.wire("writes", 1, f"{emit} && {fold} == {ulit(main.folds - 1, f_w)}")
    return emit_epilogue(b, main, stage.head, result, arrays, here, fire, writes)
