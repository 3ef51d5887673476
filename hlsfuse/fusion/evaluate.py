"""Fused evaluation: run the reference interpreter group by group, in plan order.

Each group sees only what the plan says it reads (its inputs and constants)
and hands on only its outputs, so a plan with a wrong interface or order fails
here. The results must equal ``reference.run`` bit for bit: fusion changes
where values live, never what they are.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..ir import Graph
from ..reference import quantize_inputs, run_nodes
from ..types import representation, to_float
from .plan import FusionPlan

__all__ = ["run_raw", "run"]


def run_raw(plan: FusionPlan, graph: Graph, raw_inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raw values (int64 / float32) of the tensors that cross groups and of the graph outputs."""
    values: dict[str, np.ndarray] = {
        inp.name: np.asarray(raw_inputs[inp.name], dtype=representation(inp.type.dtype)) for inp in graph.inputs
    }
    consts = graph.constant_map
    node_map = graph.node_map
    for group in plan.groups:
        local = {name: values[name] for name in group.inputs}
        local.update((name, consts[name].data) for name in group.constants)
        run_nodes(graph, local, [node_map[name] for name in group.nodes])
        values.update((name, local[name]) for name in group.outputs)
    return values


def run(plan: FusionPlan, graph: Graph, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Like ``reference.run``: real-valued inputs in, real values of the graph outputs out."""
    values = run_raw(plan, graph, quantize_inputs(graph, inputs))
    return {name: _real(values[name], graph.types[name].dtype) for name in graph.outputs}


def _real(raw: np.ndarray, dtype) -> np.ndarray:
    return raw.astype(np.float32) if dtype.is_float else to_float(raw, dtype)
