"""The testbench's data files: ``data/<port>.txt``, one element per line, frame after frame.

Input ports hold the values fed to the design and output ports the golden values computed by the
reference interpreter. Fixed-point and integer elements are raw integers (the value times 2**F,
so nothing is rounded on the way); float32 elements are decimals that read back as the same float.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from ... import reference
from ...ir import Graph
from ...types import DType

__all__ = ["DATA_DIR", "data_path", "element_lines", "data_files", "random_frames"]

DATA_DIR = "data"


class PortLike(Protocol):
    """A port as far as data files go (``lower.plan.Port``, or an entry of ports.json)."""

    name: str
    tensor: str


def data_path(port: PortLike) -> str:
    return f"{DATA_DIR}/{port.name}.txt"


def element_lines(raw: np.ndarray, dtype: DType) -> str:
    """One line per element of ``raw`` (row-major)."""
    flat = np.asarray(raw).reshape(-1)
    if dtype.is_float:
        items = [repr(v) for v in flat.astype(np.float32).astype(np.float64).tolist()]
    else:
        items = [str(v) for v in flat.astype(np.int64).tolist()]
    return "".join(item + "\n" for item in items)


def data_files(
    graph: Graph, ports: Sequence[PortLike], frames: Sequence[Mapping[str, np.ndarray]]
) -> dict[str, str]:
    """``data/<port>.txt`` for every port, from raw input values per frame and the reference's outputs."""
    texts: dict[str, list[str]] = {p.name: [] for p in ports}
    for raw_inputs in frames:
        values = reference.run_raw(graph, raw_inputs)
        for port in ports:
            texts[port.name].append(element_lines(values[port.tensor], graph.types[port.tensor].dtype))
    return {data_path(p): "".join(texts[p.name]) for p in ports}


def random_frames(graph: Graph, seed: int, count: int = 1) -> list[dict[str, np.ndarray]]:
    """Raw inputs of ``count`` frames of seeded random values (``reference.random_inputs``)."""
    return [reference.quantize_inputs(graph, reference.random_inputs(graph, seed + k)) for k in range(count)]
