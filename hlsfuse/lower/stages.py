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

from ..boards import Dsp
from ..errors import HlsfuseError
from ..fusion import Group
from ..ir import Graph
from ..ops import get_op
from .schedule import DEFAULT_DSP, Factors, Schedule, StageInputs
from .stage_map import map_schedule
from .stage_own import own_schedule
from .stage_reduce import reduce_schedule
from .stage_rows import rows_schedule
from .stage_window import window_schedule

__all__ = ["Layout", "layout", "phases", "schedule_of", "check_lanes", "KINDS"]


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


KINDS = {
    "map": map_schedule,
    "window": window_schedule,
    "rows": rows_schedule,
    "reduce": reduce_schedule,
    "own": own_schedule,
}
"""Stage kind -> the builder of its schedule (fork and convert stages are made by the lowering itself)."""


def schedule_of(graph: Graph, name: str, lay: Layout, nodes: tuple[str, ...], ins, outs: tuple[str, ...],
                factors: Factors | None = None, dsp: Dsp = DEFAULT_DSP) -> Schedule:
    """The schedule of stage ``name`` computing ``nodes`` as ``lay`` says; ``ins``: (channel, tensor, use)
    per input channel in order, ``outs``: its output channels; ``factors``: how it is folded (the lowering
    checked that its tensors allow them); ``dsp``: the DSP slice packed products are shaped for."""
    uses: dict[str, list[tuple[str, str]]] = {u: [] for u in ("head", "pre", "post", "held")}
    for channel, tensor, use in ins:
        uses[use].append((channel, tensor))
    if lay.kind not in KINDS:
        raise HlsfuseError(f"stage '{name}': unknown stage kind '{lay.kind}'")
    return KINDS[lay.kind](StageInputs(graph, name, nodes, lay.head, lay.prologue, lay.epilogue,
                                       {u: tuple(pairs) for u, pairs in uses.items()}, tuple(outs),
                                       factors or Factors(), dsp))
