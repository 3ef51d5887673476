"""Lowering: a FusionPlan becomes a DataflowPlan of stages, channels, forks, ports and ROMs.

    graph + FusionPlan --layout per group--> stages --readers per tensor--> channels (+ forks)
                       --schedule per stage--> loops, tokens per iteration, buffers
                       --timing replay--> FIFO depths, cycles per frame, latency

``lower`` only computes data; the backends (``emit_hls``, ``emit_verilog``) turn
the same plan into code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..boards import Dsp
from ..errors import HlsfuseError
from ..fusion import FusionPlan
from ..ir import Graph
from ..ops import get_op
from .names import Namer, sanitize
from .plan import STAGE_KINDS, Channel, DataflowPlan, Port, Rom, Stage
from .schedule import DEFAULT_DSP, FOLDS, MULTIPLIERS, Factors, Schedule, head_of
from .stage_convert import convert_schedule
from .stage_map import fork_schedule
from .stage_own import check_lanes as own_check_lanes
from .stage_own import lanes_out as own_lanes_out
from .stage_reduce import reduce_lanes_out
from .stages import check_lanes, layout, phases, schedule_of
from .timing import Actor, Link, replay
from .verify import verify

__all__ = [
    "LowerOptions",
    "Folding",
    "PORT_BITS",
    "MIN_FIFO_DEPTH",
    "lower",
    "phases",
    "DataflowPlan",
    "Stage",
    "Channel",
    "Port",
    "Rom",
    "Schedule",
    "STAGE_KINDS",
    "actors",
    "links",
    "refold",
    "check_port",
    "verify",
]


@dataclass(frozen=True)
class Folding:
    """The parallelism of each stage and port (docs/folding.md); a stage or port not named runs unfolded."""

    simd: tuple[tuple[str, int], ...] = ()  # (stage or node name, products per iteration) of MAC stages
    lanes: tuple[tuple[str, int], ...] = ()  # (stage or node name, elements per token) of map stages, a window
    # stage's input channels per push, a rows stage's row elements per push, a reduce stage's input elements
    # per iteration
    pe: tuple[tuple[str, int], ...] = ()  # (stage or node name, outputs per emit) of window and rows stages
    snapshots: tuple[tuple[str, int], ...] = ()  # (stage or node name, completed windows held) of window stages
    multipliers: tuple[tuple[str, str], ...] = ()  # (stage or node name, schedule.MULTIPLIERS) of MAC stages
    ports: tuple[tuple[str, int], ...] = ()  # (graph input or output tensor, elements per transfer)
    port_lanes: int = 1  # elements per transfer of every port not in ``ports``


MIN_FIFO_DEPTH = 2
"""The shallowest FIFO a channel gets, whatever its timing needs (the default of LowerOptions.min_fifo_depth)."""


@dataclass(frozen=True)
class LowerOptions:
    top: str | None = None  # name of the top function / module (default: the graph's name)
    min_fifo_depth: int = MIN_FIFO_DEPTH
    fold: Folding = Folding()
    dsp: Dsp = DEFAULT_DSP  # the target's DSP slice, which packed products (multiplier "packed") are shaped for

PE_KINDS = tuple(kind for kind, factors in FOLDS.items() if "pe" in factors)
"""The stage kinds with a PE (outputs per emit, the lanes of their output) and input lanes (elements per push)."""

LANE_KINDS = tuple(kind for kind, factors in FOLDS.items() if "lanes" in factors and kind != "fork")
"""The stage kinds a folding gives lanes (elements per token of their input, or of a map stage's tokens)."""

PORT_BITS = 1024
"""A wide port's elements fill at most this many bits of TDATA (as AMD's hls::axis<ap_uint<W>> commonly takes)."""


def _by_stage(graph: Graph, entries, drafts, what: str, allowed) -> dict[str, int]:
    """Stage name -> value, for the (stage or node name, value) ``entries``; ``allowed(layout)``: the stage
    may take ``what`` (else the error says which stages can)."""
    stage_of = {name: (name, lay) for name, lay, _ in drafts}
    # then node names, which win: a node may be named like another stage (unfused, stage 's18_relu' computes node
    # 's2_relu', and stage 's2_relu' is another), and a node's name does not change with the fusion
    stage_of.update({node: (name, lay) for name, lay, group in drafts for node in group.nodes})
    out: dict[str, int] = {}
    for key, value in entries:
        if key not in stage_of:
            raise HlsfuseError(f"fold: '{key}' is neither a stage nor a node of graph '{graph.name}'")
        name, lay = stage_of[key]
        if not allowed(lay):
            kinds = {"simd": "conv2d, dense or matmul stages", "lanes": "map, window, rows, reduce and own stages",
                     "pe": "window and rows stages", "snapshots": "window stages",
                     "multiplier": "conv2d, dense or matmul stages"}[what]
            raise HlsfuseError(f"fold: stage '{name}' (of '{key}') is a {lay.kind} stage; {what} is for {kinds}")
        if out.get(name, value) != value:
            raise HlsfuseError(f"fold: stage '{name}' is given {what} {out[name]} and {value}")
        out[name] = value
    return out


def _stage_factors(graph: Graph, fold: Folding, drafts) -> dict[str, Factors]:
    """Per stage, its ``Factors``, checked against its tensors (before any width converter is placed)."""
    simd = _by_stage(graph, fold.simd, drafts, "simd",
                     lambda lay: lay.kind in PE_KINDS and head_of(graph, lay.head).mac)
    lanes = _by_stage(graph, fold.lanes, drafts, "lanes", lambda lay: lay.kind in LANE_KINDS)
    pe = _by_stage(graph, fold.pe, drafts, "pe", lambda lay: lay.kind in PE_KINDS)
    snapshots = _by_stage(graph, fold.snapshots, drafts, "snapshots", lambda lay: lay.kind == "window")
    kinds = _by_stage(graph, fold.multipliers, drafts, "multiplier",
                      lambda lay: lay.kind in PE_KINDS and head_of(graph, lay.head).mac)
    out = {}
    for name, lay, group in drafts:
        out[name] = _factors(graph, lay, simd.get(name), lanes.get(name, 1), pe.get(name, 1), snapshots.get(name, 1),
                             kinds.get(name, "dsp"))
        _check_lanes(graph, name, lay, group.nodes, out[name].lanes_out, out[name].lanes_in)
    return out


def _factors(graph: Graph, lay, simd: int | None, lanes: int, pe: int, snapshots: int,
             multiplier: str = "dsp") -> Factors:
    """The ``Factors`` of a stage that a Folding gives ``simd``, ``lanes`` (a map stage's, or of the head input),
    ``pe``, ``snapshots`` and ``multiplier`` (a MAC stage's): the output's lanes follow from them."""
    if multiplier not in MULTIPLIERS:
        raise HlsfuseError(f"fold: multiplier must be one of {', '.join(MULTIPLIERS)}, not {multiplier!r}")
    if lay.kind in PE_KINDS:
        return Factors(simd, pe, lanes, pe, snapshots, multiplier if head_of(graph, lay.head).mac else "dsp")
    if lay.kind == "reduce":
        return Factors(lanes_in=lanes, lanes_out=reduce_lanes_out(graph, lay.head, lanes))
    if lay.kind == "own":
        return Factors(lanes_in=lanes, lanes_out=own_lanes_out(graph, lay.head, lanes))
    return Factors(lanes_in=lanes, lanes_out=lanes)


def _check_lanes(graph: Graph, name: str, lay, nodes, lanes: int, head_lanes: int) -> None:
    """Refuse lanes (a window or rows stage's PE) or head lanes that the stage's tensors or weights do not allow."""
    where = f"stage '{name}'"
    if lay.kind == "own":
        own_check_lanes(graph, lay.head, head_lanes, where)
        return
    if lay.kind == "reduce":  # the input side at head lanes, the output side at (output) lanes
        prologue, epilogue = phases(graph, nodes, lay.head)
        source = graph.node(lay.head).inputs[0]
        check_lanes(where, head_lanes, [graph.types[t] for t in (source, *prologue, *(t for t, use in lay.uses
                                                                                      if use == "pre"))])
        check_lanes(where, lanes, [graph.types[t] for t in (lay.head, *epilogue, *(t for t, use in lay.uses
                                                                                  if use == "post"))])
        return
    streamed = [*nodes, *(t for t, use in lay.uses if use == "post")]
    check_lanes(where, lanes, [graph.types[t] for t in streamed], "pe" if lay.kind in PE_KINDS else "lanes")
    if lay.kind in PE_KINDS:
        head, spec = graph.node(lay.head), head_of(graph, lay.head)
        check_lanes(where, head_lanes, [graph.types[head.inputs[0]]])
        weights = head.inputs[spec.weights] if spec.weights is not None else None
        if lanes > 1 and weights is not None and weights not in graph.constant_map:
            raise HlsfuseError(f"fold: stage '{name}': pe needs constant {head.op} weights, and '{weights}' is "
                               "computed by another stage (its held array is read one output at a time)")


def _port_lanes(graph: Graph, options: LowerOptions) -> dict[str, int]:
    """Graph input or output tensor -> lanes of its port."""
    ports = [i.name for i in graph.inputs] + list(graph.outputs)
    out = dict.fromkeys(ports, options.fold.port_lanes)
    for tensor, lanes in options.fold.ports:
        if tensor not in out:
            raise HlsfuseError(f"port lanes: '{tensor}' is not a graph input or output of '{graph.name}'")
        out[tensor] = lanes
    for tensor, lanes in out.items():
        check_port(tensor, graph.types[tensor], lanes)
    return out


def check_port(tensor: str, t, lanes: int) -> None:
    """Refuse ``lanes`` elements per transfer of the port of ``tensor`` (of type ``t``) unless they divide its
    innermost dimension and fit PORT_BITS (fixed point only)."""
    check_lanes(f"port '{tensor}'", lanes, [t])
    if lanes > 1 and (t.dtype.is_float or lanes * t.dtype.bits > PORT_BITS):
        raise HlsfuseError(f"port '{tensor}': {lanes} lanes of {t.dtype} do not fit a TDATA of at most "
                           f"{PORT_BITS} bits of fixed-point elements")


def lower(graph: Graph, plan: FusionPlan, options: LowerOptions | None = None) -> DataflowPlan:
    """The streaming design of ``graph`` fused as ``plan``."""
    options = options or LowerOptions()
    if plan.graph != graph.name:
        raise HlsfuseError(f"the fusion plan is for graph '{plan.graph}', not '{graph.name}'")
    for node in graph.nodes:
        if get_op(node.op).compute is None:  # custom
            raise HlsfuseError(f"{node.where()}: custom ops model other compilers' graphs; they cannot be compiled")
    for inp in graph.inputs:
        if not graph.consumers[inp.name]:
            raise HlsfuseError(f"graph input '{inp.name}' is not used by any node; remove it to build hardware")
    namer = Namer()
    top = namer(options.top or graph.name)
    in_ports = {i.name: namer(i.name) for i in graph.inputs}
    out_names = {name: namer(name) for name in graph.outputs}
    used = {src for node in graph.nodes for src in node.inputs}
    roms = tuple(Rom(namer(f"rom_{c.name}"), c.name, c.type) for c in graph.constants if c.name in used)
    rom_of = {r.constant: r.name for r in roms}

    drafts = []  # (name, layout, group) in plan order
    for group in plan.groups:
        lay = layout(graph, group)
        ops = "_".join(dict.fromkeys(graph.node(n).op for n in group.nodes))
        drafts.append((namer(f"s{group.id}_{sanitize(ops, 24)}"), lay, group))
    factors = _stage_factors(graph, options.fold, drafts)
    port_lanes = _port_lanes(graph, options)

    producer = {i.name: in_ports[i.name] for i in graph.inputs}
    producer.update({group.nodes[-1]: name for name, _, group in drafts})
    # elements per token each stage, port, fork and converter writes
    lanes_out = {in_ports[t]: port_lanes[t] for t in in_ports}
    lanes_out.update({name: f.lanes_out for name, f in factors.items()})
    readers: dict[str, list[tuple[str, str, int]]] = {}  # tensor -> (reader, use, input slot)
    for name, lay, _ in drafts:
        for slot, (tensor, use) in enumerate(lay.uses):
            readers.setdefault(tensor, []).append((name, use, slot))
    for tensor in graph.outputs:
        readers.setdefault(tensor, []).append((out_names[tensor], "port", 0))

    def lanes_in(reader: str, use: str, tensor: str) -> int:
        if use == "port":
            return port_lanes[tensor]
        if use == "copy":  # a fork reads what its producer writes
            return lanes_out[reader]
        return factors[reader].reads(use)

    channels: list[dict] = []
    after: dict[str, list[dict]] = {}  # stage, port, fork or converter -> forks and converters placed after it
    # each stage's input channels in the order of its layout's uses
    stage_inputs: dict[str, list[tuple[str, str]]] = {name: [None] * len(lay.uses) for name, lay, _ in drafts}
    port_channel: dict[str, str] = {}

    def channel(tensor: str, src: str, dst: str, lanes: int) -> str:
        ch = namer(f"ch_{tensor}")
        channels.append({"name": ch, "tensor": tensor, "producer": src, "consumer": dst, "lanes": lanes})
        return ch

    def connect(tensor: str, src: str, dst: str, use: str, slot: int) -> str:
        a, b = lanes_out[src], lanes_in(dst, use, tensor)
        if a != b:  # a width converter
            conv = namer(f"cv_{tensor}")
            ch_in = channel(tensor, src, conv, a)
            stage_inputs[conv] = [(ch_in, "copy")]
            lanes_out[conv] = b
            after.setdefault(src, []).append({"kind": "convert", "name": conv, "tensor": tensor, "lanes": (a, b)})
            src = conv
        ch = channel(tensor, src, dst, b)
        if use == "port":
            port_channel[dst] = ch
        else:
            stage_inputs[dst][slot] = (ch, use)
        return ch

    for tensor, users in readers.items():
        src = producer[tensor]
        if len(users) == 1:
            connect(tensor, src, *users[0])
            continue
        fork = namer(f"fork_{tensor}")
        stage_inputs[fork] = [None]
        lanes_out[fork] = lanes_out[src]
        connect(tensor, src, fork, "copy", 0)
        after.setdefault(src, []).append({"kind": "fork", "name": fork, "tensor": tensor})
        for user in users:
            connect(tensor, fork, *user)

    outputs_of = {}
    for ch in channels:
        outputs_of.setdefault(ch["producer"], []).append(ch["name"])

    stages: list[Stage] = []
    tensor_of = {ch["name"]: ch["tensor"] for ch in channels}

    def add_after(name: str) -> None:
        """The forks and converters reading what ``name`` writes, each followed by its own."""
        for d in after.get(name, ()):
            ((ch, _),) = stage_inputs[d["name"]]
            outs = tuple(outputs_of[d["name"]])
            size, kind = graph.types[d["tensor"]].size, d["kind"]
            if kind == "fork":
                schedule = fork_schedule(size, ch, outs, lanes_out[d["name"]])
            else:
                schedule = convert_schedule(size, graph.types[d["tensor"]].dtype.bits, *d["lanes"], ch, outs[0])
            stages.append(Stage(d["name"], kind, -1, (), None, d["tensor"], (ch,), ("copy",), outs, (), (), schedule))
            add_after(d["name"])

    for port in in_ports.values():
        add_after(port)
    for name, lay, group in drafts:
        ins = stage_inputs[name]
        outs = tuple(outputs_of.get(name, ()))
        held = tuple(dict.fromkeys(tensor_of[ch] for ch, use in ins if use == "held"))
        schedule = schedule_of(graph, name, lay, group.nodes, tuple((ch, tensor_of[ch], use) for ch, use in ins), outs,
                               factors[name], options.dsp)
        stages.append(
            Stage(
                name=name,
                kind=lay.kind,
                group=group.id,
                nodes=group.nodes,
                head=lay.head,
                sink=group.nodes[-1],
                inputs=tuple(ch for ch, _ in ins),
                uses=tuple(use for _, use in ins),
                outputs=outs,
                roms=tuple(dict.fromkeys(rom_of[s] for n in group.nodes for s in graph.node(n).inputs if s in rom_of)),
                held=held,
                schedule=schedule,
            )
        )
        add_after(name)

    first_channel = {ch["producer"]: ch["name"] for ch in channels}
    inputs = tuple(Port(in_ports[i.name], i.name, i.type, "in", first_channel[in_ports[i.name]], port_lanes[i.name])
                   for i in graph.inputs)
    outputs = tuple(Port(out_names[t], t, graph.types[t], "out", port_channel[out_names[t]], port_lanes[t])
                    for t in graph.outputs)
    draft = tuple(
        Channel(ch["name"], ch["tensor"], graph.types[ch["tensor"]], ch["producer"], ch["consumer"], 0, ch["lanes"])
        for ch in channels
    )
    timing = replay(actors(stages, inputs, outputs), links(draft), [p.name for p in outputs])
    final_channels = tuple(
        dataclasses.replace(c, depth=max(options.min_fifo_depth, timing.depths[c.name])) for c in draft
    )
    dataflow = DataflowPlan(
        top=top,
        graph=graph.name,
        stages=tuple(stages),
        channels=final_channels,
        inputs=inputs,
        outputs=outputs,
        roms=roms,
        cycles=timing.cycles,
        latency=timing.latency,
        frame_end=timing.frame_end,
    )
    return verify(dataflow, graph, options.min_fifo_depth)


def refold(graph: Graph, fusion: FusionPlan, plan: DataflowPlan, stage: Stage, simd: int | None = None,
           lanes: int = 1, pe: int = 1, snapshots: int = 1, multiplier: str = "dsp", dsp: Dsp = DEFAULT_DSP) -> Stage:
    """``stage`` of ``plan`` folded as a Folding entry would fold it (``simd`` and ``multiplier`` of its MAC head,
    ``lanes`` of a map stage or of a window, rows or reduce stage's input, ``pe`` of a window or rows stage,
    ``snapshots`` of a window stage), its channels and every other fact unchanged (the plan's timing is not
    replayed): what the solver costs; ``dsp``: the DSP slice packed products are shaped for. Illegal factors raise
    HlsfuseError."""
    group = next(g for g in fusion.groups if g.id == stage.group)
    lay = layout(graph, group)
    if (stage.kind not in PE_KINDS and pe != 1 or stage.kind not in LANE_KINDS and lanes != 1
            or stage.kind != "window" and snapshots != 1):
        raise HlsfuseError(f"fold: stage '{stage.name}' is a {stage.kind} stage")
    factors = _factors(graph, lay, simd, lanes, pe, snapshots, multiplier)
    _check_lanes(graph, stage.name, lay, stage.nodes, factors.lanes_out, factors.lanes_in)
    ins = tuple((ch, plan.channel(ch).tensor, use) for ch, use in zip(stage.inputs, stage.uses))
    schedule = schedule_of(graph, stage.name, lay, stage.nodes, ins, stage.outputs, factors, dsp)
    return dataclasses.replace(stage, schedule=schedule)


def actors(stages, inputs, outputs) -> list[Actor]:
    """The plan's stages and ports as actors of the timing replay, in topological order."""
    out = []
    for port in inputs:
        out.append(Actor(port.name, port.tokens, {port.channel: np.arange(port.tokens, dtype=np.int64)}))
    out += [Actor(s.name, s.cycles, s.schedule.io) for s in stages]
    for port in outputs:
        out.append(Actor(port.name, port.tokens, {port.channel: np.arange(port.tokens, dtype=np.int64)}))
    return out


def links(channels) -> list[Link]:
    return [Link(c.name, c.producer, c.consumer, c.tokens) for c in channels]
