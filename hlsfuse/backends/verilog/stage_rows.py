"""Rows stages in Verilog: dense or matmul (``lower.stage_rows.RowsMain``), one iteration per cycle.

After the setup loops (held inputs: epilogue operands, a streamed w or b), the push/emit loop over rows:

    emit  while the snapshot has outputs left: column n of the snapshot's row, the exact dot product
          of the row and column n of the weights (K products of 64-bit sign-extended raws summed in 64
          bits: the check rule proved the exact accumulation fits), one hlsf_assign, the epilogue, write
    push  the next element into the row register; the push completing a row copies it into the
          snapshot, and waits while the snapshot has outputs left, but for the last one

dense reads w[n * K + k]; matmul reads b[base + k * N + n], base being the offset of the batch of b
that broadcasting pairs with the snapshot's output batch (a small ROM when not 0).

A stage of input lanes L pushes one token of L row elements per push (the row register holds tokens; the
snapshot single elements); a stage of PE P emits columns n P .. n P + P - 1 per emit, one copy of the
dot product (and of the epilogue) per lane, written as one token.
"""

from __future__ import annotations

from ...lower.plan import Stage
from ...lower.products import product_kind
from .decls import StageModule, Update
from .expr import rom, weight_banks
from .module import ModuleBuilder
from .narrow import kind_terms
from .packed import packed_terms
from .phase import emit_epilogue, fold_sum, in_accumulator, push_emit, setup, weight_address
from .vlog import XW, assign_params, bits_for, extend, lut_product, sext64, ulit, zext

__all__ = ["build"]


def build(b: ModuleBuilder, stage: Stage, state) -> StageModule:
    schedule = stage.schedule
    main = schedule.main
    seq = b.sequence(schedule.loops)
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

    units, per_row = main.batches * main.rows, main.pushes_per_row
    loop = push_emit(b, fire, seq.loops[-1].last, main.emits_per_row, [units, per_row],
                     lambda position: f"{position[1][0]} == {ulit(per_row - 1, position[1][1])}", main.folds)
    push, emitting, (n, nw), n_last, completes = loop.push, loop.emitting, loop.index, loop.last_emit, loop.completes
    writes = emitting if loop.fold is None else f"{emitting} && {loop.writes}"  # an output is written
    k, kw = loop.position[1]
    b.move(main.read, f"{here} && {push}")
    snap = b.array("snap", main.k, x_type.width)
    kb = b.index(snap)
    xrow = None
    if per_row > 1:  # the row so far, in tokens (the completing push's token goes straight into the snapshot)
        xrow = b.array("xrow", per_row, main.lanes_in * x_type.width)
        b.stores.append(Update(f"{fire} && {push}", f"{xrow}[{zext(k, kw, b.index(xrow))}]", f"{main.read}_tdata"))
    for j in range(main.k):
        t, lane = divmod(j, main.lanes_in)
        source = f"{main.read}_tdata" if t == per_row - 1 else f"{xrow}[{ulit(t, b.index(xrow))}]"
        if main.lanes_in > 1:
            source += f"[{(lane + 1) * x_type.width - 1}:{lane * x_type.width}]"
        b.stores.append(Update(f"{fire} && {push} && {completes}", f"{snap}[{ulit(j, kb)}]", source))

    # the weights: a constant's banks read at their address register, else an array read at each lane's base index
    # (column n P + lane of the snapshot's row) plus the product's offset
    if main.weights in b.graph.constant_map and not main.offsets:
        iterations = main.emits_per_row * main.folds  # of a row: its emits, the fold fastest
        banks, weights = _banks(b, main, weight_address(b, loop, iterations, fire, emitting)), None
    else:
        banks = None
        weights = rom(b, main.weights) if main.weights in b.graph.constant_map else arrays[main.weights]
        iw = b.index(weights)
    batch_base = None
    if main.offsets:
        batch, _ = b.odometer("out", [main.batches, main.rows], f"{fire} && {writes} && {n_last}")[0]
        table = b.rom("b_base", main.offsets, iw)
        batch_base = f"{table}[{zext(batch, bits_for(main.batches), b.index(table))}]"
    # lane s of this fold computes product j = main.product(fold, s): row element j (the same for every column)
    js = []
    for s in range(main.simd):
        if loop.fold is None:
            js.append(s)
        else:
            f, fw = loop.fold
            j0, dj = main.product(0, s), main.product(1, s) - main.product(0, s)  # j = j0 + fold * dj
            js.append(b.wire(f"j{s}", kb, f"{ulit(j0, kb)} + {zext(f, fw, kb)} * {ulit(dj % (1 << kb), kb)}"))
    raws = [f"{snap}[{ulit(j, kb) if isinstance(j, int) else j}]" for j in js]
    results = []
    packed_lo = None  # multiplier "packed": the lo lane of the pair, (its weights, tag), summed with the hi lane
    columns = [None] * main.pe if banks is not None else _columns(b, main, n, nw)
    for lane, column in enumerate(columns):
        tag = f"l{lane}_" if main.pe > 1 else ""
        if banks is not None:
            reads = [banks[(s, lane)] for s in range(main.simd)]
        else:  # weight base + j * step
            col, cw = column
            if main.products_innermost:  # dense's w[N, K], a matmul's b^T: column n's products from n K on
                first = f"{zext(col, cw, iw)} * {ulit(main.k % (1 << iw), iw)}"
                base, step = b.wire(f"{tag}wbase", iw, first if batch_base is None else f"{batch_base} + {first}"), 1
            else:
                base, step = zext(col, cw, iw), main.n
                if batch_base is not None:
                    base = b.wire(f"{tag}wbase", iw, f"{batch_base} + {base}")
            reads = [f"{weights}[{base if j == 0 else f'{base} + {ulit((j * step) % (1 << iw), iw)}'}]"
                     if isinstance(j, int) else f"{weights}[{base} + {zext(j, kb, iw)} * {ulit(step % (1 << iw), iw)}]"
                     for j in js]
        ws = [b.wire(f"{tag}w{s}", w_type.width, read) for s, read in enumerate(reads)]
        terms = _lane_terms(b, main, stage, tag, raws, ws, x_type, w_type)
        pairs = _packed_pair(b, main, lane, terms, tag, packed_lo, raws, x_type, w_type)
        if pairs is None:  # the lo lane of a pair: summed with the hi lane
            packed_lo = (terms, tag)
            continue
        for terms, tag, lane in pairs:
            b.comment(f"{main.op} '{stage.head}': the exact dot product of the snapshot's row and column "
                      f"{'n' if main.pe == 1 else f'n x {main.pe} + {lane}'}")
            exact = fold_sum(b, terms, fire, emitting, loop, f"{tag}dot", main.accumulator)
            result = b.net(f"{tag}v_head", head_type.width)
            b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), f"u_{tag}head",
                       (("in_data", exact), ("in_sticky", "1'b0"), ("out_data", result)))
            results.append(result)

    out = emit_epilogue(b, main, stage.head, results if main.pe > 1 else results[0], arrays, here, fire, writes)
    return b.build(f"{main.op} '{stage.head}', nodes {', '.join(stage.nodes)}", dict.fromkeys(main.writes, out),
                   state)


def _packed_pair(b: ModuleBuilder, main, lane: int, terms: list[str], tag: str, low, xs: list[str], x_type,
                 w_type) -> list[tuple[list[str], str, int]] | None:
    """The (terms, tag, lane) whose sums this lane completes: its own products' (``terms``), or with multiplier
    "packed" (``terms`` then the lane's weights) the pair of lanes 2i and 2i + 1 from their packed products at the
    hi lane (``low``: the lo lane's weights and tag), None at the lo lane; an odd PE's last lane unpacked."""
    if main.packing is None:
        return [(terms, tag, lane)]
    if lane % 2 == 0 and lane + 1 == main.pe:  # the odd lane
        return [([f"{sext64(x, x_type)} * {sext64(w, w_type)}" for x, w in zip(xs, terms)], tag, lane)]
    if lane % 2 == 0:
        return None
    lo, hi = packed_terms(b, low[1], xs, x_type, low[0], terms, w_type, main.packing)
    return [(lo, low[1], lane - 1), (hi, tag, lane)]


def _lane_terms(b: ModuleBuilder, main, stage: Stage, tag: str, xs: list[str], ws: list[str], x_type, w_type
                ) -> list[str]:
    """A PE lane's SIMD products of raws ``xs`` and weights ``ws`` as the stage builds them: for 1- and 2-bit
    weights no multiplier (``kind_terms``, lower.products); with multiplier "packed" the weights themselves (a
    pair's products are made at its hi lane, ``_packed_pair``); "lut": LUT products; else 64-bit products."""
    kind = product_kind(b.graph, stage)
    if kind is not None:
        return kind_terms(b, tag, kind, list(zip(xs, ws)), x_type, w_type)
    if main.packing is not None:
        return list(ws)
    if main.multiplier == "lut":
        return [lut_product(b, f"{tag}lp{s}", x, x_type, w, w_type) for s, (x, w) in enumerate(zip(xs, ws))]
    return [f"{sext64(x, x_type)} * {sext64(w, w_type)}" for x, w in zip(xs, ws)]


def _banks(b: ModuleBuilder, main, address: tuple[str, int], fold_major: bool = False) -> dict[tuple[int, int], str]:
    """The weights' banks (``expr.weight_banks``): each bank's read by (s, lane). Column c = n PE + lane's product
    j is w[c K + j] (dense's w[N, K], a matmul's b^T) or b[j N + c]."""
    data = b.graph.constant_map[main.weights].data
    emits = main.emits_per_row
    if main.products_innermost:
        by_product = data.reshape(emits, main.pe, main.k).transpose(2, 0, 1)
    else:
        by_product = data.reshape(main.k, emits, main.pe)
    return weight_banks(b, main, by_product, address, fold_major)


def _columns(b: ModuleBuilder, main, n: str, nw: int) -> list[tuple[str, int]]:
    """The column of each PE lane of the emit counted by ``n`` (``nw`` bits): n x PE + lane, as (signal, width)."""
    if main.pe == 1:
        return [(n, nw)]
    w = bits_for(main.n)
    # with PE = N the emit counter stays 0: the lane is the column (and PE would not fit w bits)
    return [(b.wire(f"col{lane}", w, ulit(lane, w) if main.emits_per_row == 1 else
                    f"{zext(n, nw, w)} * {ulit(main.pe, w)} + {ulit(lane, w)}"), w) for lane in range(main.pe)]


def _streamed(b: ModuleBuilder, stage: Stage, arrays, here: str, fire: str, frame_end: str, x_type, w_type,
              head_type) -> str:
    """A folded dense stage of one row per frame (``lower.engine.Streamed``): pushes fill the row register
    (a token of L elements each) while fold f of columns n P .. n P + P - 1 emits once the row's first
    (f + 1) x SIMD elements are in (``need``), adding to their accumulators; the last fold writes. Returns the
    signal the output channels carry."""
    main = stage.schedule.main
    lanes, width = main.lanes_in, x_type.width
    k_w = bits_for(main.k + 1)
    pushed = b.reg("pushed", k_w, ulit(0, k_w))  # row elements pushed so far in this frame
    push = b.wire("push", 1, f"{pushed} != {ulit(main.k, k_w)}")
    b.move(main.read, f"{here} && {push}")
    xrow = b.array("xrow", main.k, width)
    kb = b.index(xrow)
    at = zext(pushed, k_w, kb)
    for lane in range(lanes):  # the token's elements
        to = at if lane == 0 else f"{at} + {ulit(lane, kb)}"
        bits = f"[{(lane + 1) * width - 1}:{lane * width}]" if lanes > 1 else ""
        b.stores.append(Update(f"{fire} && {push}", f"{xrow}[{to}]", f"{main.read}_tdata{bits}"))

    f_w = bits_for(main.folds + 1)
    need_w = bits_for(main.k + main.simd + 1)
    fold = b.reg("fold", f_w, ulit(0, f_w))
    need = b.reg("need", need_w, ulit(main.simd, need_w))
    emit = b.wire("emit", 1, f"{fold} != {ulit(main.folds, f_w)} && {zext(pushed, k_w, need_w)} >= {need}")
    n, nw = b.counter("n", main.emits_per_row, f"{fire} && {emit}")
    n_last = f"{n} == {ulit(main.emits_per_row - 1, nw)}"
    b.updates += [
        Update(f"{fire} && {push}", pushed, f"{pushed} + {ulit(lanes, k_w)}"),
        Update(f"{fire} && {emit} && {n_last}", fold, f"{fold} + {ulit(1, f_w)}"),
        Update(f"{fire} && {emit} && {n_last}", need, f"{need} + {ulit(main.simd, need_w)}"),
        Update(f"{fire} && {frame_end}", pushed, ulit(0, k_w)),
        Update(f"{fire} && {frame_end}", fold, ulit(0, f_w)),
        Update(f"{fire} && {frame_end}", need, ulit(main.simd, need_w)),
    ]

    fb = zext(fold, f_w, kb)
    js = [b.wire(f"j{s}", kb, f"{fb} * {ulit(main.simd % (1 << kb), kb)} + {ulit(s, kb)}")  # j = fold x SIMD + s
          for s in range(main.simd)]
    xs = [f"{xrow}[{jx}]" for jx in js]
    columns = _columns(b, main, n, nw)
    banks = None
    if main.weights in b.graph.constant_map:  # banks read at a register counting the emits (the column fastest)
        banks = _banks(b, main, b.counter("wa", main.folds * main.emits_per_row, f"{fire} && {emit}"), fold_major=True)
    else:
        weights = arrays[main.weights]
        iw = b.index(weights)
    acc_w = main.accumulator.width if main.accumulator is not None else XW  # the exact accumulator, as the model
    accs = b.array("accs", main.n, acc_w)
    ab = b.index(accs)
    results = []
    packed_lo = None  # multiplier "packed": the lo lane of the pair, (its weights, tag), summed with the hi lane
    for lane, (col, cw) in enumerate(columns):  # lane s: weight col x K + j
        tag = f"l{lane}_" if main.pe > 1 else ""
        if banks is not None:
            reads = [banks[(s, lane)] for s in range(main.simd)]
        else:
            base = b.wire(f"{tag}wbase", iw, f"{zext(col, cw, iw)} * {ulit(main.k % (1 << iw), iw)}")
            reads = [f"{weights}[{base} + {zext(jx, kb, iw)}]" for jx in js]
        ws = [b.wire(f"{tag}w{s}", w_type.width, read) for s, read in enumerate(reads)]
        terms = _lane_terms(b, main, stage, tag, xs, ws, x_type, w_type)
        pairs = _packed_pair(b, main, lane, terms, tag, packed_lo, xs, x_type, w_type)
        if pairs is None:  # the lo lane of a pair: summed with the hi lane
            packed_lo = (terms, tag)
            continue
        for terms, tag, lane in pairs:
            acc = f"{accs}[{zext(columns[lane][0], columns[lane][1], ab)}]"
            held = b.wire(f"{tag}held", acc_w, acc)
            signed = main.accumulator is None or main.accumulator.signed
            start = b.wire(f"{tag}start", XW, f"{fold} == {ulit(0, f_w)} ? {XW}'sd0 : "
                           f"$signed({extend(held, acc_w, signed, XW)})", signed=True)
            b.comment(f"dense '{stage.head}': fold f of column {'n' if main.pe == 1 else f'n x {main.pe} + {lane}'}'s "
                      "dot product, added to its accumulator")
            total = in_accumulator(b, b.sum(f"{tag}dot", [start, *terms]), main.accumulator, f"{tag}dot")
            b.stores.append(Update(f"{fire} && {emit}", acc, f"{total}[{acc_w - 1}:0]"))
            result = b.net(f"{tag}v_head", head_type.width)
            b.instance("hlsf_assign", assign_params(x_type.frac + w_type.frac, head_type), f"u_{tag}head",
                       (("in_data", total), ("in_sticky", "1'b0"), ("out_data", result)))
            results.append(result)
    writes = b.wire("writes", 1, f"{emit} && {fold} == {ulit(main.folds - 1, f_w)}")
    return emit_epilogue(b, main, stage.head, results if main.pe > 1 else results[0], arrays, here, fire, writes)
