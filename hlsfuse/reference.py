"""The golden model: a numpy interpreter over a verified ``Graph``.

Fixed-point and integer tensors are held as raw int64 values and every op is
exact up to its single assignment to the node's output type, so the results
are bit-exact definitions that the C++ and RTL simulations must reproduce.
float32 tensors are held as float32.

    run(graph, inputs)          real values in, real values out (float64 / float32)
    run_raw(graph, raw_inputs)  raw values in, raw values of every tensor out
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from .errors import HlsfuseError
from .ir import Graph, Node
from .ops import get_op
from .types import from_float, representation, to_float

__all__ = ["run", "run_raw", "run_nodes", "quantize_inputs", "random_inputs", "MAX_STREAMED", "check_frames"]

MAX_STREAMED = 1 << 27
"""Most input and output elements a simulation streams in one run (all frames): 1 GiB of int64 values per
direction, minutes of reference interpretation; more frames are refused before anything is built."""


def check_frames(graph: Graph, frames: int, what: str) -> None:
    """Refuse ``frames`` frames of ``graph`` when they stream more than MAX_STREAMED elements."""
    per_frame = sum(i.type.size for i in graph.inputs) + sum(graph.types[t].size for t in graph.outputs)
    if frames * per_frame > MAX_STREAMED:
        raise HlsfuseError(f"{what}: {frames} frames of {per_frame} input and output elements each exceed the "
                           f"{MAX_STREAMED} elements one run streams; run at most {max(1, MAX_STREAMED // per_frame)}")


def quantize_inputs(graph: Graph, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Check real-valued inputs against the graph and convert them to raw values."""
    missing = [i.name for i in graph.inputs if i.name not in inputs]
    if missing:
        raise HlsfuseError(f"missing value for graph input '{missing[0]}'")
    known = {i.name for i in graph.inputs}
    extra = sorted(set(inputs) - known)
    if extra:
        raise HlsfuseError(f"'{extra[0]}' is not an input of graph '{graph.name}' (inputs: {', '.join(sorted(known))})")
    raw = {}
    for inp in graph.inputs:
        value = np.asarray(inputs[inp.name])
        if value.shape != inp.type.shape:
            expected = list(inp.type.shape)
            raise HlsfuseError(f"input '{inp.name}': value has shape {list(value.shape)}, expected {expected}")
        if (not np.issubdtype(value.dtype, np.number) and value.dtype != np.bool_) or np.iscomplexobj(value):
            raise HlsfuseError(f"input '{inp.name}': values must be real numbers, not {value.dtype}")
        dtype = inp.type.dtype
        try:
            raw[inp.name] = value.astype(np.float32) if dtype.is_float else from_float(value, dtype)
        except HlsfuseError as exc:
            raise HlsfuseError(f"input '{inp.name}': {exc}") from None
    return raw


def run_nodes(graph: Graph, values: dict[str, np.ndarray], nodes: Iterable[Node]) -> dict[str, np.ndarray]:
    """Evaluate ``nodes`` (in the given order) on raw ``values``, adding their results to it."""
    for node in nodes:
        op = get_op(node.op)
        if op.compute is None:
            raise HlsfuseError(
                f"{node.where()}: cannot be run; custom ops model other compilers' graphs for fusion only"
            )
        sig = graph.sigs[node.name]
        args = [values[src] for src in node.inputs]
        out = np.asarray(op.compute(args, sig), dtype=representation(sig.out_dtype))
        if out.shape != sig.out_shape:
            raise AssertionError(f"{node.where()}: reference produced shape {out.shape}, expected {sig.out_shape}")
        values[node.name] = out
    return values


def run_raw(graph: Graph, raw_inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raw values (int64 / float32) of every tensor of the graph."""
    values: dict[str, np.ndarray] = {c.name: c.data for c in graph.constants}
    for inp in graph.inputs:
        values[inp.name] = np.asarray(raw_inputs[inp.name], dtype=representation(inp.type.dtype))
    return run_nodes(graph, values, graph.nodes)


def run(graph: Graph, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Run the graph on real-valued inputs; returns the real values of its outputs."""
    values = run_raw(graph, quantize_inputs(graph, inputs))
    return {name: _real(values[name], graph.types[name].dtype) for name in graph.outputs}


def _real(raw: np.ndarray, dtype) -> np.ndarray:
    return raw.astype(np.float32) if dtype.is_float else to_float(raw, dtype)


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random real-valued inputs: every representable fixed value equally likely
    (within +-8 for wide types), standard normal values for float32."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for inp in graph.inputs:
        dtype, shape = inp.type.dtype, inp.type.shape
        if dtype.is_float:
            inputs[inp.name] = rng.standard_normal(shape).astype(np.float32)
            continue
        lo, hi = dtype.raw_min, dtype.raw_max
        limit = max(1, int(math.ldexp(8.0, dtype.frac)))
        lo, hi = max(lo, -limit), min(hi, limit)
        raw = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
        inputs[inp.name] = to_float(raw, dtype)
    return inputs
