"""The Verilog of a stage's setup loops and element phases (``lower.schedule``, ``lower.elements``).

Setup loops are the sequencer's first loops: each held input is stored element by element (the
sequencer's ``idx`` is the element), then every pre loop computes its nodes into arrays. A phase
reads its streamed inputs (one value wire per channel) and computes its program once per element of
the loop it runs in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...lower.elements import ElementPhase
from ...lower.schedule import Schedule
from ...types import Fmt
from .decls import Assign, Sequencer, Update
from .expr import counters, program
from .module import ModuleBuilder
from .vlog import XW, bits_for, extend, ulit, zext

__all__ = ["setup", "reads", "element_phase", "lane_values", "lanes_phase", "PushEmit", "push_emit",
           "weight_address", "fold_sum", "in_accumulator", "emit_epilogue"]


def setup(b: ModuleBuilder, schedule: Schedule, seq: Sequencer) -> dict[str, str]:
    """The setup loops' logic (sequencer loops 0..); returns the array holding each held input and pre-loop result."""
    arrays: dict[str, str] = {}
    k = 0
    for h in schedule.held:
        here = seq.loops[k].here
        b.move(h.channel, here)
        if h.kept:
            arr = b.array(f"a_{h.tensor}", h.size, b.width(h.tensor))
            arrays[h.tensor] = arr
            b.stores.append(Update(f"{seq.fire} && {here}", f"{arr}[{zext(seq.idx, seq.width, b.index(arr))}]",
                                   f"{h.channel}_tdata"))
        else:
            b.unused(f"{h.channel}_tdata")
        k += 1
    for ph in schedule.phases:
        for p in ph.pre:
            here = seq.loops[k].here
            step = f"{seq.fire} && {here}"
            scope = counters(b, p.program.counters, step, f"p{k}_")
            scope[(1, p.program.count)] = (seq.idx, seq.width)
            values = program(b, p.program, {}, arrays, scope, f"p{k}_")
            for node in p.kept:
                arr = b.array(f"a_{node}", p.program.count, b.width(node))
                arrays[node] = arr
                b.stores.append(Update(step, f"{arr}[{zext(seq.idx, seq.width, b.index(arr))}]", values[node]))
            k += 1
    return arrays


def reads(b: ModuleBuilder, ph: ElementPhase, when: str) -> dict[str, str]:
    """The phase's streamed inputs, read in the iterations where ``when`` holds: tensor -> its value wire (a
    token's lanes side by side, over wide tokens)."""
    values = {}
    for r in ph.reads:
        b.move(r.channel, when)
        if r.used:
            values[r.tensor] = b.wire(f"v_{r.channel}", b.bus(r.channel), f"{r.channel}_tdata")
        else:
            b.unused(f"{r.channel}_tdata")
    return values


def element_phase(b: ModuleBuilder, ph: ElementPhase, values: dict[str, str], arrays: dict[str, str],
                  index: tuple[str, int], step: str, prefix: str) -> str:
    """The phase's program once per element (``index``: the element's signal and width; ``step``: the
    element is done); returns the signal of its result."""
    scope = counters(b, ph.program.counters, step, prefix)
    scope[(1, ph.count)] = index
    values = program(b, ph.program, values, arrays, scope, prefix)
    return values[ph.result]


def lane_values(b: ModuleBuilder, ph: ElementPhase, lanes: int, tokens: dict[str, str], per_lane: list[dict[str, str]],
                arrays: dict[str, str], index: tuple[str, int] | None, step: str, prefix: str) -> list[str]:
    """The phase over tokens of ``lanes`` elements: its counters once, its program once per lane (``tokens``: tensor ->
    the token wire read this element, sliced per lane; ``per_lane``: each lane's other values, the head's result);
    returns the signal of each lane's result."""
    scope = counters(b, ph.program.counters, step, prefix)
    scope[(1, ph.count)] = index
    results = []
    for lane in range(lanes):
        values = dict(per_lane[lane])
        for tensor, token in tokens.items():
            w = b.width(tensor)
            values[tensor] = b.wire(f"v{lane}_{tensor}", w, f"{token}[{(lane + 1) * w - 1}:{lane * w}]")
        values = program(b, ph.program, values, arrays, scope, f"{prefix}{lane}_", lane)
        results.append(values[ph.result])
    return results


def lanes_phase(b: ModuleBuilder, ph: ElementPhase, lanes: int, tokens: dict[str, str], per_lane: list[dict[str, str]],
                arrays: dict[str, str], index: tuple[str, int] | None, step: str, prefix: str) -> str:
    """``lane_values`` packed into one token: returns its signal, lane l in bits [l W, (l + 1) W)."""
    results = lane_values(b, ph, lanes, tokens, per_lane, arrays, index, step, prefix)
    width = lanes * b.width(ph.result)
    return b.wire(f"{prefix}token", width, "{" + ", ".join(reversed(results)) + "}")


@dataclass(frozen=True)
class PushEmit:
    """The control of a push/emit loop (``lower.engine.Engine``), in the main loop of window and rows stages."""

    push: str  # this iteration pushes
    emitting: str  # this iteration emits: the snapshot has outputs left
    index: tuple[str, int]  # which output of the snapshot it emits
    fold: tuple[str, int] | None  # which fold of that output (None: one iteration per output)
    writes: str  # this emitting iteration is its output's last fold: the output is written
    last_emit: str  # the snapshot's last output
    position: list[tuple[str, int]]  # the next push's odometer digits, outermost first
    completes: str  # the next push completes a unit (captures the snapshot)
    slots: tuple[tuple[str, int], tuple[str, int]] | None  # more than one snapshot: (slot emitted, slot captured)


def push_emit(b: ModuleBuilder, fire: str, frame_end: str, outputs: int, extents,
              completes: Callable[[list[tuple[str, int]]], str], folds: int = 1, slots: int = 1) -> PushEmit:
    """Pushes over an odometer of ``extents``; ``completes(position)``: the expression saying the push at
    ``position`` completes a unit, which is captured into one of ``slots`` snapshots and then emits ``outputs``
    outputs of ``folds`` iterations each. The push completing a unit waits while every snapshot has outputs
    left, but for the last iteration of the oldest (one snapshot: the one); ``frame_end``: the main loop's last
    iteration, after which the next frame's pushes start."""
    if slots > 1:  # a ring: ``held`` units, the oldest (emitting) in slot ``first``, the next capture into ``free``
        held = b.reg("held", bits_for(slots + 1), ulit(0, bits_for(slots + 1)))
        emitting = b.wire("emitting", 1, f"{held} != {ulit(0, bits_for(slots + 1))}")
    else:
        emitting = b.reg("emitting", 1, "1'b0")
    done = b.reg("pushed", 1, "1'b0")  # every push of the frame is done
    fold, writes = None, "1'b1"
    if folds > 1:
        fold = b.counter("fold", folds, f"{fire} && {emitting}")
        writes = b.wire("writes", 1, f"{fold[0]} == {ulit(folds - 1, fold[1])}")
    step = f"{fire} && {emitting}" + ("" if fold is None else f" && {writes}")
    index = b.counter("co", outputs, step)
    last_emit = f"{index[0]} == {ulit(outputs - 1, index[1])}" + ("" if fold is None else f" && {writes}")
    push = b.net("push", 1)
    position = b.odometer("at", extents, f"{fire} && {push}")
    unit = b.wire("completes", 1, completes(position))
    last_push = " && ".join(f"{d} == {ulit(n - 1, w)}" for (d, w), n in zip(position, extents))
    b.updates += [
        Update(f"{fire} && {push} && {last_push}", done, "1'b1"),
        Update(f"{fire} && {frame_end}", done, "1'b0"),
    ]
    ring = None
    if slots > 1:
        w = bits_for(slots + 1)
        b.decls.append(Assign(push, f"!{done} && (!{unit} || {held} < {ulit(slots, w)} || {last_emit})"))
        capture, release = f"{fire} && {push} && {unit}", f"{fire} && {emitting} && {last_emit}"
        b.updates.append(Update(f"({capture}) != ({release})", held,
                                f"{capture} ? {held} + {ulit(1, w)} : {held} - {ulit(1, w)}"))
        ring = (b.counter("first", slots, release), b.counter("free", slots, capture))
    else:
        b.decls.append(Assign(push, f"!{done} && (!{unit} || !{emitting} || {last_emit})"))
        b.updates += [
            Update(f"{fire} && {emitting} && {last_emit}", emitting, "1'b0"),
            Update(f"{fire} && {push} && {unit}", emitting, "1'b1"),
        ]
    return PushEmit(push, emitting, index, fold, writes, last_emit, position, unit, ring)


def weight_address(b: ModuleBuilder, loop: PushEmit, iterations: int, fire: str, emitting: str) -> tuple[str, int]:
    """The address of a MAC stage's weight banks (``expr.weight_banks``): a register counting a snapshot's
    ``iterations`` emitting iterations, (output, fold) with the fold fastest; the output counter itself when an
    output is one iteration."""
    if loop.fold is None:
        return loop.index
    return b.counter("wa", iterations, f"{fire} && {emitting}")


def fold_sum(b: ModuleBuilder, terms: list[str], fire: str, emitting: str, loop: PushEmit, name: str,
             fmt: Fmt | None) -> str:
    """The exact sum (XW bits, signed) of this iteration's products and, after an output's first fold, of
    its earlier folds' (a partial-sum register, restarted by every output's fold 0), in ``fmt``, the stage's exact
    accumulator (``in_accumulator``)."""
    if loop.fold is None:
        return in_accumulator(b, b.sum(name, terms), fmt, name)
    fold, fw = loop.fold
    partial = b.reg("partial", XW)
    start = b.wire("start", XW, f"{fold} == {ulit(0, fw)} ? {XW}'sd0 : $signed({partial})", signed=True)
    total = in_accumulator(b, b.sum(name, [start, *terms]), fmt, name)
    b.updates.append(Update(f"{fire} && {emitting}", partial, total))
    return total


def in_accumulator(b: ModuleBuilder, total: str, fmt: Fmt | None, name: str) -> str:
    """``total``, an exact sum computed in XW bits, as the stage's exact accumulator ``fmt`` holds it (every sum of
    some of a MAC's products fits it, as the type rule proved for all of them), extended back to XW bits: the same
    value, but a synthesis tool then builds the adders as wide as the accumulator, as the C++ (which sums in that
    type) and the resource model do; 64-bit adders kept Yosys from packing an adder tree into the DSPs' post-adders
    and left it a sum of hundreds of 64-bit terms to build from LUTs."""
    if fmt is None or fmt.width >= XW:
        return total
    b.unused(f"{total}[{XW - 1}:{fmt.width}]")
    low = b.wire(f"{name}_a", fmt.width, f"{total}[{fmt.width - 1}:0]")
    return b.wire(f"{name}_x", XW, extend(low, fmt.width, fmt.signed, XW), signed=True)


def emit_epilogue(b: ModuleBuilder, main, head: str, result: str | list[str], arrays: dict[str, str], here: str,
                  fire: str, emitting: str) -> str:
    """The epilogue of a push/emit stage once per output token, on the iterations that write ``result`` (the
    head's value, or one per lane of a window stage's PE; ``emitting``: the condition of those iterations);
    moves the output channels and returns the signal of what they carry."""
    streamed = reads(b, main.epilogue, f"{here} && {emitting}")
    index = None
    if main.epilogue.program.reads_index:
        index = b.counter("o", main.epilogue.count, f"{fire} && {emitting}")
    if isinstance(result, list):
        out = lanes_phase(b, main.epilogue, len(result), streamed, [{head: r} for r in result], arrays, index,
                          f"{fire} && {emitting}", "e")
    else:
        out = element_phase(b, main.epilogue, {head: result, **streamed}, arrays, index, f"{fire} && {emitting}",
                            "e_")
    for ch in main.writes:
        b.move(ch, f"{here} && {emitting}")
    return out
