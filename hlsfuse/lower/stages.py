"""How one fused group runs as a streaming stage: its kind, head, phases and input uses.

The head is the one node whose op is not a ``map`` op (see ``OpDef.stream``);
a group of map ops only has no head. Around the head:

    prologue (map, over head input elements) --> head --> epilogue (map, over head output elements)

Only a reduction may have a prologue (TVM fuses elementwise ops into a reduction
after them, but never into a conv2d or dense). Every input tensor of the stage
gets a *use* per order it is read in: by the head ("head"), by the prologue
("pre"), by the epilogue ("post"), or whole into a buffer first ("held": a
broadcast operand smaller than the space it is used in, or a non-constant weight).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HlsfuseError
from ..fusion import Group
from ..ir import Graph
from ..ops import get_op
from . import elements
from .own import own_main
from .schedule import (
    Buffer,
    ConvertMain,
    ForkMain,
    MapMain,
    Schedule,
    State,
    WindowGeometry,
    head_of,
    held_buffers,
    held_inputs,
    memory,
    phase_buffers,
    reduce_main,
    registers,
    rows_main,
    window_main,
)

__all__ = ["Layout", "layout", "phases", "schedule_of", "line_buffer", "fork_schedule", "convert_schedule",
           "check_lanes"]


@dataclass(frozen=True)
class Layout:
    kind: str
    head: str | None
    prologue: tuple[str, ...]
    epilogue: tuple[str, ...]
    uses: tuple[tuple[str, str], ...]  # (tensor, use) pairs in first-use order


def _describe(group: Group, graph: Graph) -> str:
    ops = ", ".join(f"{n} ({graph.node(n).op})" for n in group.nodes[:4])
    more = f", ... {len(group.nodes) - 4} more" if len(group.nodes) > 4 else ""
    return f"group {group.id} [{ops}{more}]"


def phases(graph: Graph, nodes: tuple[str, ...], head: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prologue, epilogue): the head's in-group ancestors, and every other node but the head."""
    if head is None:
        return (), nodes
    members = set(nodes)
    ancestors: set[str] = set()
    todo = [head]
    while todo:
        for src in graph.node(todo.pop()).inputs:
            if src in members and src not in ancestors:
                ancestors.add(src)
                todo.append(src)
    prologue = tuple(n for n in nodes if n in ancestors)
    epilogue = tuple(n for n in nodes if n not in ancestors and n != head)
    return prologue, epilogue


def layout(graph: Graph, group: Group) -> Layout:
    """Classify ``group`` and decide how each of its input tensors is read."""
    where = _describe(group, graph)
    if len(group.outputs) != 1:
        raise HlsfuseError(
            f"{where}: produces {len(group.outputs)} tensors for other stages ({', '.join(group.outputs)}); "
            "a streaming stage produces one (fuse in fpga mode)"
        )
    kinds = {n: get_op(graph.node(n).op).stream_kind(graph.sigs[n]) for n in group.nodes}
    special = [n for n in group.nodes if kinds[n] != "map"]
    if len(special) > 1:
        listed = ", ".join(f"{n} ({graph.node(n).op})" for n in special)
        raise HlsfuseError(f"{where}: holds several ops that are not elementwise ({listed}); a stage can run one")
    head = special[0] if special else None
    kind = kinds[head] if head else "map"
    if kind == "own" and len(group.nodes) > 1:
        raise HlsfuseError(f"{where}: '{head}' ({graph.node(head).op}) must be a stage of its own (fuse in fpga mode)")
    prologue, epilogue = phases(graph, group.nodes, head)
    if prologue and kind != "reduce":
        raise HlsfuseError(f"{where}: ops before '{head}' ({graph.node(head).op}) cannot run in its stage")
    if group.outputs[0] != group.nodes[-1]:
        raise HlsfuseError(f"{where}: its output '{group.outputs[0]}' is not its last node")
    return Layout(kind, head, prologue, epilogue, _uses(graph, group, kind, head, prologue, epilogue))


def _uses(graph, group, kind, head, prologue, epilogue) -> tuple[tuple[str, str], ...]:
    """(tensor, use) for every streamed input of the group, in first-use order."""
    constants = graph.constant_map
    head_in = graph.types[graph.node(head).inputs[0]].size if head else None
    post_size = graph.types[head].size if head else graph.types[group.nodes[-1]].size
    if kind == "own":  # one channel per streamed input position: a kernel reads each from its own stream
        return tuple((src, "head") for src in graph.node(head).inputs if src not in constants)
    uses: dict[tuple[str, str], None] = {}
    for name in group.nodes:
        node = graph.node(name)
        for pos, src in enumerate(node.inputs):
            if src in constants or src not in group.inputs:
                continue
            size = graph.types[src].size
            if name == head:
                # the head streams its data input; any other streamed operand (a weight computed
                # by another stage, matmul's b) is held whole
                use = "head" if pos == 0 else "held"
            elif name in prologue:
                use = "pre" if size == head_in else "held"
            else:
                use = "post" if size == post_size else "held"
            uses[(src, use)] = None
    return tuple(uses)


# --------------------------------------------------------------------------
# The schedule of a stage
# --------------------------------------------------------------------------

_COUNTERS = State("iteration, position and broadcast counters", "frame")


def _needed(graph: Graph, nodes: tuple[str, ...], sink: str) -> tuple[str, ...]:
    """The nodes the sink depends on, so no value is computed for nothing."""
    needed = {sink}
    for name in reversed(nodes):
        if name in needed:
            needed.update(graph.node(name).inputs)
    return tuple(n for n in nodes if n in needed)


def _used(graph: Graph, phases) -> set[str]:
    """Tensors the phases' nodes read (held inputs no node reads are read and dropped)."""
    names = [s.node for ph in phases for s in ph.program.steps]
    names += [s.node for ph in phases for p in ph.pre for s in p.program.steps]
    return {src for n in names for src in graph.node(n).inputs}


def lane_parts(phase, lanes: int) -> dict[str, dict]:
    """An array or ROM a phase over wide tokens reads at consecutive elements, one per lane: one bank per lane."""
    return {o.tensor: {"banks": lanes, "banking": "cyclic"} for step in phase.program.steps for o in step.operands
            if o.lane}


def check_lanes(where: str, lanes: int, types, what: str = "lanes") -> int:
    """``lanes``, if it is a positive integer dividing the innermost dimension of every tensor type in ``types``
    (``what``: the factor's name in the error, "lanes" or "pe")."""
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise HlsfuseError(f"{where}: {what} must be a positive integer, not {lanes!r}")
    for t in types:
        inner = t.shape[-1] if t.shape else 1
        if inner % lanes:
            raise HlsfuseError(f"{where}: {what} {lanes} does not divide the innermost dimension of {t} ({inner})")
    return lanes


def line_buffer(g: WindowGeometry, bits: int) -> Buffer:
    """A window stage's stored rows: each its own memory, each split into L banks along the channels
    (linebuffer.h)."""
    return Buffer("line buffer", g.line_buffer, bits, banks=max(1, (g.span_h - 1) * g.lanes))


def schedule_of(graph: Graph, name: str, lay: Layout, nodes: tuple[str, ...], ins, outs: tuple[str, ...],
                simd: int | None = None, lanes: int = 1, head_lanes: int = 1, snapshots: int = 1) -> Schedule:
    """The schedule of stage ``name`` computing ``nodes`` as ``lay`` says; ``ins``: (channel, tensor, use)
    per input channel in order, ``outs``: its output channels; ``simd``: a MAC stage's products per
    iteration (None: all of an output's); ``lanes``: elements per token of the output and the inputs
    read per output element (a map stage's lanes, a window or rows stage's PE, a reduce stage's output lanes
    ``schedule.reduce_lanes_out``); ``head_lanes``: a window stage's input channels per push, a rows stage's
    row elements per push, a reduce stage's input elements per iteration (its head and prologue inputs'
    lanes); ``snapshots``: the completed windows a window stage holds for emission."""
    by_use: dict[str, list[tuple[str, str]]] = {u: [] for u in ("head", "pre", "post", "held")}
    for channel, tensor, use in ins:
        by_use[use].append((channel, tensor))
    held_pairs = by_use["held"]
    held_names = {t for _, t in held_pairs}
    head = lay.head
    if lay.kind == "map":
        sink = nodes[-1]
        count = graph.types[sink].size
        phase = elements.phase(graph, _needed(graph, nodes, sink), count, (), by_use["post"], held_names, sink)
        held = held_inputs(graph, held_pairs, _used(graph, [phase]))
        phase = phase.widen(lanes, f"stage '{name}'")  # lanes checked by the lowering (``check_lanes``)
        parts = lane_parts(phase, lanes)
        state = (_COUNTERS, *([State("held inputs", "overwritten")] if held else ()))
        buffers = (*held_buffers(graph, held, parts), *phase_buffers(graph, [phase], parts))
        return Schedule("map", held, MapMain(phase.count, phase, outs, lanes), buffers, state)
    if (lanes != 1 or head_lanes != 1) and lay.kind not in ("window", "rows", "reduce", "own"):
        raise HlsfuseError(f"stage '{name}' ({lay.kind}): only map, window, rows, reduce and own stages have lanes, "
                           f"not {lanes}")
    node = graph.node(head)
    if lay.kind == "own":
        main, buffers, state = own_main(graph, head, [(c, t) for c, t, _ in ins], outs[0], name, head_lanes)
        return Schedule("own", (), main, tuple(buffers), (_COUNTERS, *state))
    if lay.kind in ("window", "rows"):
        heads = by_use["head"]
        if by_use["pre"] or len(heads) != 1 or heads[0][1] != node.inputs[0]:
            raise HlsfuseError(f"stage '{name}': must stream '{node.inputs[0]}' into '{head}' on one channel")
        spec = head_of(graph, head)
        weights = node.inputs[spec.weights] if spec.weights is not None else None
        if weights is not None and weights not in graph.constant_map and weights not in held_names:
            raise HlsfuseError(f"{node.where()}: input '{weights}' is neither a constant nor held by its stage")
        epilogue = elements.phase(graph, lay.epilogue, graph.types[head].size, {head}, by_use["post"], held_names,
                                  head)
        held = held_inputs(graph, held_pairs, _used(graph, [epilogue]) | {weights})
        epilogue = epilogue.widen(lanes, f"stage '{name}'")  # the PE output channels (columns) per emit
        x_bits = graph.types[node.inputs[0]].dtype.bits
        if lay.kind == "window":
            main = window_main(graph, head, heads[0][0], epilogue, outs, simd, lanes, head_lanes, snapshots)
            g = main.geometry
            own = [line_buffer(g, x_bits),
                   Buffer("window", g.window, x_bits, registers=True),
                   Buffer("snapshot", main.snapshots * g.taps * g.c, x_bits, registers=True,
                          banks=main.snapshots)]
            macs = g.images * g.oh * g.ow * main.out_channels * main.products if spec.mac else 0
        else:
            main = rows_main(graph, head, heads[0][0], epilogue, outs, simd, lanes, head_lanes)
            own = [Buffer("row", main.k, x_bits, registers=True), Buffer("snapshot", main.k, x_bits, registers=True)]
            if main.streamed:  # the row is emitted from while it is read; each output keeps its partial sum
                # an emit reads and writes PE consecutive ones, each again a fold (N / PE emits) later
                own[1] = memory("accumulators", main.n, main.accumulator.width if main.accumulator else 64,
                                main.emits_per_row, banks=main.pe, banking="cyclic")
            macs = main.batches * main.rows * main.n * main.k
        parts, weight_buffers = lane_parts(epilogue, lanes), []
        if weights is not None:
            # the lanes of a fold read ``simd`` banks: in blocks (conv2d, and matmul per batch of b) or cyclically;
            # the PE lanes of an emit read PE consecutive output channels (columns): a conv2d's [products][Cout]
            # and a matmul's b as rows of N, each row cyclically PE ways; a dense w[N][K], whose rows are its
            # columns, in PE cyclic banks of rows, each row cyclically SIMD ways
            size = graph.types[weights].size
            columns = main.out_channels if lay.kind == "window" else main.n
            matrices = size // (main.products * columns)  # a matmul's b with batch dims holds several
            parts[weights] = {"banks": main.simd * matrices, "banking": "block" if main.strided else "cyclic"}
            if main.pe > 1 and not main.strided:
                parts[weights] = {"banks": main.pe, "banking": "cyclic", "columns": main.k, "column_banks": main.simd}
            elif main.pe > 1:
                parts[weights].update(columns=columns, column_banks=main.pe)
            if weights in graph.constant_map:
                weight_buffers = [memory(f"rom {weights}", size, graph.types[weights].dtype.bits, tensor=weights,
                                         rom=True, **parts[weights])]
        multipliers = main.simd * main.pe if macs else 0
        buffers = (*own, *weight_buffers, *held_buffers(graph, held, parts), *phase_buffers(graph, [epilogue], parts))
        state = [_COUNTERS, State(own[0].name, "overwritten")]
        if lay.kind == "rows" and main.streamed:
            state.append(State("accumulators", "first"))
        else:
            state.append(State("snapshot", "overwritten"))
            if main.folds > 1:
                state.append(State("partial sum", "first"))
        return Schedule(lay.kind, held, main, buffers, tuple(state), macs, multipliers)
    if lay.kind == "reduce":
        streamed = by_use["head"] + by_use["pre"]
        if len({t for _, t in streamed}) != len(streamed):
            raise HlsfuseError(f"stage '{name}': reads one tensor on two channels in the same loop")
        source = node.inputs[0]
        prologue = elements.phase(graph, lay.prologue, graph.types[source].size, (), streamed, held_names, source)
        epilogue = elements.phase(graph, lay.epilogue, graph.types[head].size, {head}, by_use["post"], held_names,
                                  head)
        held = held_inputs(graph, held_pairs, _used(graph, [prologue, epilogue]))
        main = reduce_main(graph, head, prologue, epilogue, outs, head_lanes)  # lanes checked by the lowering
        if main.lanes_out != lanes:
            raise HlsfuseError(f"stage '{name}': a reduce stage of {head_lanes} input lanes writes "
                               f"{main.lanes_out}, not {lanes}")
        if main.accumulator is not None:
            acc_bits = main.accumulator.width
        else:  # max keeps the input's type; float32 sums accumulate in double
            dtype = graph.types[source].dtype
            acc_bits = 64 if dtype.is_float and main.combine != "max" else dtype.bits
        # lane l of an output token reads (and of an input token updates, the innermost axis kept) bank l
        parts = {**lane_parts(main.epilogue, main.lanes_out), **lane_parts(main.prologue, main.lanes)}
        buffers = (memory("accumulators", main.outputs, acc_bits, main.distance, banks=main.lanes_out,
                          banking="cyclic"),
                   *held_buffers(graph, held, parts), *phase_buffers(graph, [main.prologue, main.epilogue], parts))
        return Schedule("reduce", held, main, buffers, (_COUNTERS, State("accumulators", "first")))
    raise HlsfuseError(f"stage '{name}': unknown stage kind '{lay.kind}'")


def fork_schedule(size: int, source: str, outputs: tuple[str, ...], lanes: int = 1) -> Schedule:
    return Schedule("fork", (), ForkMain(size // lanes, source, outputs, lanes), (), (_COUNTERS,))


def convert_schedule(elements: int, bits: int, lanes_in: int, lanes_out: int, read: str, write: str) -> Schedule:
    """A width converter: the elements waiting for their output token are kept in registers (those that pass
    straight through in the iteration that reads them need none)."""
    main = ConvertMain(elements, lanes_in, lanes_out, read, write)
    return Schedule("convert", (), main, (registers("kept elements", main.kept, bits),),
                    (_COUNTERS, State("kept elements and their count", "frame")))
