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

from ..errors import HlsfuseError
from ..fusion import FusionPlan
from ..ir import Graph
from .names import Namer, sanitize
from .plan import STAGE_KINDS, Channel, DataflowPlan, Port, Rom, Stage
from .schedule import Schedule
from .stages import fork_schedule, layout, phases, schedule_of
from .timing import Actor, Link, replay

__all__ = [
    "LowerOptions",
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
]


@dataclass(frozen=True)
class LowerOptions:
    top: str | None = None  # name of the top function / module (default: the graph's name)
    min_fifo_depth: int = 2
    fold: tuple[tuple[str, int], ...] = ()  # (stage or node name, simd) of MAC stages; others unfolded

MAC_OPS = ("conv2d", "dense", "matmul")


def _simd_of(graph: Graph, fold: tuple[tuple[str, int], ...], drafts) -> dict[str, int]:
    """Stage name -> simd, for the stages ``fold`` names (by stage name or by any of its nodes)."""
    stage_of = {}
    for name, lay, group in drafts:
        for key in (name, *group.nodes):
            stage_of[key] = (name, lay)
    out: dict[str, int] = {}
    for key, simd in fold:
        if key not in stage_of:
            raise HlsfuseError(f"fold: '{key}' is neither a stage nor a node of graph '{graph.name}'")
        name, lay = stage_of[key]
        if lay.head is None or graph.node(lay.head).op not in MAC_OPS:
            raise HlsfuseError(f"fold: stage '{name}' (of '{key}') has no conv2d, dense or matmul to fold")
        if out.get(name, simd) != simd:
            raise HlsfuseError(f"fold: stage '{name}' is given simd {out[name]} and {simd}")
        out[name] = simd
    return out


def lower(graph: Graph, plan: FusionPlan, options: LowerOptions | None = None) -> DataflowPlan:
    """The streaming design of ``graph`` fused as ``plan``."""
    options = options or LowerOptions()
    if plan.graph != graph.name:
        raise HlsfuseError(f"the fusion plan is for graph '{plan.graph}', not '{graph.name}'")
    for node in graph.nodes:
        if node.op == "custom":
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

    producer = {i.name: in_ports[i.name] for i in graph.inputs}
    producer.update({group.nodes[-1]: name for name, _, group in drafts})
    readers: dict[str, list[tuple[str, str, int]]] = {}  # tensor -> (reader, use, input slot)
    for name, lay, _ in drafts:
        for slot, (tensor, use) in enumerate(lay.uses):
            readers.setdefault(tensor, []).append((name, use, slot))
    for tensor in graph.outputs:
        readers.setdefault(tensor, []).append((out_names[tensor], "port", 0))

    channels: list[dict] = []
    forks: dict[str, dict] = {}  # producer stage name -> fork drafts placed after it
    # each stage's input channels in the order of its layout's uses
    stage_inputs: dict[str, list[tuple[str, str]]] = {name: [None] * len(lay.uses) for name, lay, _ in drafts}
    port_channel: dict[str, str] = {}

    def connect(tensor: str, src: str, dst: str, use: str, slot: int) -> str:
        ch = namer(f"ch_{tensor}")
        channels.append({"name": ch, "tensor": tensor, "producer": src, "consumer": dst})
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
        connect(tensor, src, fork, "copy", 0)
        outs = [connect(tensor, fork, *user) for user in users]
        forks.setdefault(src, []).append({"name": fork, "tensor": tensor, "outputs": outs})

    outputs_of = {}
    for ch in channels:
        outputs_of.setdefault(ch["producer"], []).append(ch["name"])

    stages: list[Stage] = []
    tensor_of = {ch["name"]: ch["tensor"] for ch in channels}

    def add_forks(after: str) -> None:
        for f in forks.get(after, ()):
            ((ch, _),) = stage_inputs[f["name"]]
            schedule = fork_schedule(graph.types[f["tensor"]].size, ch, tuple(f["outputs"]))
            stages.append(Stage(f["name"], "fork", -1, (), None, f["tensor"], (ch,), ("copy",), tuple(f["outputs"]),
                                (), (), schedule))

    simd = _simd_of(graph, options.fold, drafts)
    for port in in_ports.values():
        add_forks(port)
    for name, lay, group in drafts:
        ins = stage_inputs[name]
        outs = tuple(outputs_of.get(name, ()))
        held = tuple(dict.fromkeys(tensor_of[ch] for ch, use in ins if use == "held"))
        schedule = schedule_of(graph, name, lay, group.nodes, tuple((ch, tensor_of[ch], use) for ch, use in ins), outs,
                               simd.get(name))
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
        add_forks(name)

    first_channel = {ch["producer"]: ch["name"] for ch in channels}
    inputs = tuple(Port(in_ports[i.name], i.name, i.type, "in", first_channel[in_ports[i.name]]) for i in graph.inputs)
    outputs = tuple(Port(out_names[t], t, graph.types[t], "out", port_channel[out_names[t]]) for t in graph.outputs)
    draft = tuple(
        Channel(ch["name"], ch["tensor"], graph.types[ch["tensor"]], ch["producer"], ch["consumer"], 0)
        for ch in channels
    )
    timing = replay(actors(stages, inputs, outputs), links(draft), [p.name for p in outputs])
    final_channels = tuple(
        dataclasses.replace(c, depth=max(options.min_fifo_depth, timing.depths[c.name])) for c in draft
    )
    return DataflowPlan(
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


def refold(graph: Graph, fusion: FusionPlan, plan: DataflowPlan, stage: Stage, simd: int) -> Stage:
    """``stage`` of ``plan`` with its MAC head computing ``simd`` products per iteration (its channels
    and every other fact unchanged; the plan's timing is not replayed)."""
    group = next(g for g in fusion.groups if g.id == stage.group)
    ins = tuple((ch, plan.channel(ch).tensor, use) for ch, use in zip(stage.inputs, stage.uses))
    schedule = schedule_of(graph, stage.name, layout(graph, group), stage.nodes, ins, stage.outputs, simd)
    return dataclasses.replace(stage, schedule=schedule)


def actors(stages, inputs, outputs) -> list[Actor]:
    """The plan's stages and ports as actors of the timing replay, in topological order."""
    out = []
    for port in inputs:
        out.append(Actor(port.name, port.type.size, {port.channel: np.arange(port.type.size, dtype=np.int64)}))
    out += [Actor(s.name, s.cycles, s.schedule.io) for s in stages]
    for port in outputs:
        out.append(Actor(port.name, port.type.size, {port.channel: np.arange(port.type.size, dtype=np.int64)}))
    return out


def links(channels) -> list[Link]:
    return [Link(c.name, c.producer, c.consumer, c.type.size) for c in channels]
