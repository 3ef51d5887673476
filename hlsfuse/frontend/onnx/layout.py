"""Layouts: how an hlsfuse tensor holds an ONNX tensor.

hlsfuse streams images channel-last (NHWC); ONNX models are channel-first (NCHW). Each
converted ONNX tensor therefore carries an *order*: hlsfuse axis i holds ONNX axis
``order[i]``, or is an inserted size-1 axis (``None``):

    plain               (0, 1, 2, 3)      the ONNX order itself
    channel-last        (0, 2, 3, 1)      NCHW held as NHWC
    1-D channel-last    (0, None, 2, 1)   NCL held as N1LC: 1-D convs and pools run as 2-D ops with H = 1

An ONNX Transpose, Squeeze or Unsqueeze only changes the order (no hlsfuse node); ops
with axes translate them through it; an op that needs the ONNX order (Reshape, MatMul,
a graph output) gets the tensor converted by ``steps``, which is a free reshape whenever
the two orders list the axes of size > 1 in the same sequence (then the elements are
already in the same order).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import HlsfuseError

__all__ = [
    "Order",
    "plain",
    "channel_last",
    "is_plain",
    "hls_shape",
    "axis_of",
    "to_hls",
    "same_element_order",
    "steps",
    "reshaped",
    "transposed",
    "without",
    "with_units",
    "flat_columns",
    "from_hls",
    "to_graph_layout",
    "to_onnx_layout",
    "to_model_outputs",
]

Order = tuple[int | None, ...]


def plain(rank: int) -> Order:
    return tuple(range(rank))


def channel_last(rank: int, unit_height: bool = False) -> Order:
    """NC... held as N...C; with ``unit_height`` an NCL tensor is held as N1LC."""
    if rank < 3:
        return plain(rank)
    if unit_height and rank == 3:
        return (0, None, 2, 1)
    return (0, *range(2, rank), 1)


def is_plain(order: Order) -> bool:
    return order == plain(len(order))


def hls_shape(shape: tuple[int, ...], order: Order) -> tuple[int, ...]:
    return tuple(1 if a is None else shape[a] for a in order)


def axis_of(order: Order, onnx_axis: int) -> int:
    """The hlsfuse axis holding ONNX axis ``onnx_axis``."""
    return order.index(onnx_axis)


def to_hls(data: np.ndarray, order: Order) -> np.ndarray:
    """An ONNX-layout array in the hlsfuse layout ``order``."""
    axes = [a for a in order if a is not None]
    moved = np.transpose(data, axes)
    return moved.reshape(hls_shape(data.shape, order))


def _big_axes(shape: tuple[int, ...], order: Order) -> list[int]:
    return [a for a in order if a is not None and shape[a] > 1]


def same_element_order(shape: tuple[int, ...], a: Order, b: Order) -> bool:
    """True when both layouts hold the elements in the same sequence (only size-1 axes differ)."""
    return _big_axes(shape, a) == _big_axes(shape, b)


def steps(shape: tuple[int, ...], src: Order, dst: Order) -> list[tuple[str, tuple[int, ...]]]:
    """hlsfuse ops turning the ``src`` layout of an ONNX tensor of ``shape`` into ``dst``:
    ``("reshape", newshape)`` and ``("transpose", axes)`` steps, in order."""
    if src == dst:
        return []
    if same_element_order(shape, src, dst):
        return [("reshape", hls_shape(shape, dst))]
    out: list[tuple[str, tuple[int, ...]]] = []
    src_axes = [a for a in src if a is not None]
    dst_axes = [a for a in dst if a is not None]
    if len(src_axes) != len(src):
        out.append(("reshape", tuple(shape[a] for a in src_axes)))
    out.append(("transpose", tuple(src_axes.index(a) for a in dst_axes)))
    if len(dst_axes) != len(dst):
        out.append(("reshape", hls_shape(shape, dst)))
    return out


def reshaped(shape: tuple[int, ...], order: Order, target: tuple[int, ...]) -> Order | None:
    """The order of ``Reshape(target)``'s output held in the same elements as the input (an hlsfuse reshape, no
    transpose), or None when there is none: every run of input axes the reshape merges or splits must be held
    together and in its ONNX order (attention's K^T split into heads stays K^T, held as K)."""
    big = [a for a in range(len(shape)) if shape[a] > 1]
    tbig = [a for a in range(len(target)) if target[a] > 1]
    blocks, i, j = [], 0, 0  # (input axes, target axes) of equal products, in ONNX order
    while i < len(big) or j < len(tbig):
        src, dst, p, q = [], [], 1, 1
        while True:
            if p <= q and i < len(big):
                src.append(big[i])
                p *= shape[big[i]]
                i += 1
            elif j < len(tbig):
                dst.append(tbig[j])
                q *= target[tbig[j]]
                j += 1
            else:
                return None
            if p == q and src and dst:
                break
        blocks.append((src, dst))
    held = _big_axes(shape, order)
    sequence: list[int] = []
    while held:
        block = next((b for b in blocks if b[0][0] == held[0]), None)
        if block is None or held[:len(block[0])] != block[0]:
            return None
        sequence += block[1]
        held = held[len(block[0]):]
    out: list[int] = []
    for a in sequence:  # the target's size-1 axes go before the next larger ONNX axis held
        out += [u for u in range(len(target)) if target[u] == 1 and u < a and u not in out]
        out.append(a)
    return tuple(out + [u for u in range(len(target)) if target[u] == 1 and u not in out])


def transposed(order: Order, perm: tuple[int, ...]) -> Order:
    """The order of ``Transpose(perm)``'s output held in the same hlsfuse tensor."""
    inverse = {p: i for i, p in enumerate(perm)}
    return tuple(None if a is None else inverse[a] for a in order)


def without(order: Order, removed: tuple[int, ...]) -> Order:
    """The order after removing ONNX axes (squeeze, a reduction without keepdims)."""
    gone = set(removed)
    return tuple(None if a is None else a - sum(r < a for r in gone) for a in order if a not in gone)


def with_units(order: Order, inserted: tuple[int, ...]) -> Order:
    """The order after inserting size-1 ONNX axes at ``inserted`` (output numbering).

    Each new axis goes right after the hlsfuse position of the ONNX axis before it, so a
    plain order stays plain.
    """
    new_rank = sum(a is not None for a in order) + len(inserted)
    old_to_new = [n for n in range(new_rank) if n not in inserted]
    out: list[int | None] = [None if a is None else old_to_new[a] for a in order]
    for n in sorted(inserted):
        position = 0 if n == 0 else out.index(n - 1) + 1
        out.insert(position, n)
    return tuple(out)


def flat_columns(shape: tuple[int, ...], order: Order) -> np.ndarray:
    """For a [N, ...] tensor held in ``order`` (batch first) and flattened to [N, K] in
    hlsfuse order: the ONNX column each hlsfuse column holds."""
    k = int(np.prod(shape[1:], dtype=np.int64))
    index = np.arange(k, dtype=np.int64).reshape((1, *shape[1:]))
    return to_hls(index, order).reshape(-1)


def from_hls(data: np.ndarray, order: Order) -> np.ndarray:
    """The inverse of ``to_hls``: an array held in layout ``order``, in the ONNX layout."""
    axes = [a for a in order if a is not None]
    kept = np.reshape(data, [d for d, a in zip(data.shape, order) if a is not None])
    return np.transpose(kept, np.argsort(axes))


def _port_order(port) -> Order:
    """The layout a graph input holds its model's input in (``ir.Input.source_axes``, recorded by the import)."""
    return port.source_axes if port.source_axes is not None else plain(len(port.type.shape))


def to_graph_layout(graph, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Convert ONNX-layout input arrays to the layout of a graph made by ``from_onnx``.

    Each input is held as the import recorded it (``ir.Input.source_axes``: an NCHW input that
    convolutions read as NHWC, an [N, C, L] input of 1-D convolutions as [N, 1, L, C], an input the
    model already has channels-last as it is). Names the graph does not have are passed through
    unchanged (``reference.run`` reports them).
    """
    ports = {i.name: i for i in graph.inputs}
    out: dict[str, np.ndarray] = {}
    for name, value in inputs.items():
        array = np.asarray(value)
        port = ports.get(name)
        if port is None:
            out[name] = array
            continue
        order = _port_order(port)
        converted = to_hls(array, order) if array.ndim == sum(a is not None for a in order) else array
        if converted.shape != port.type.shape:
            raise HlsfuseError(
                f"input '{name}': ONNX-layout value has shape {list(array.shape)}, which does not match "
                f"the graph's {list(port.type.shape)} (expected the model's ONNX input shape)"
            )
        out[name] = converted
    return {name: graph.scales[name].from_real(v) if name in graph.scales else v for name, v in out.items()}


def to_model_outputs(graph, outputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The model's real output values of a graph made by ``from_onnx``: outputs with a ``Scaling`` (an integer
    result whose float scale the host applies) scaled to float32, as the model computes them; others unchanged."""
    return {name: graph.scales[name].to_real(v).astype(np.float32) if name in graph.scales else np.asarray(v)
            for name, v in outputs.items()}


def to_onnx_layout(graph, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The inverse of ``to_graph_layout``: graph-layout input arrays of a graph made by ``from_onnx``
    in the layout of its ONNX model. Names the graph does not have are passed through unchanged."""
    ports = {i.name: i for i in graph.inputs}
    out: dict[str, np.ndarray] = {}
    for name, value in inputs.items():
        array = np.asarray(value)
        port = ports.get(name)
        if port is None:
            out[name] = array
            continue
        if array.shape != port.type.shape:
            raise HlsfuseError(f"input '{name}': graph-layout value has shape {list(array.shape)}, which does not "
                               f"match the graph's {list(port.type.shape)}")
        if name in graph.scales:  # a quantizer's integer levels: the real values the model reads
            array = graph.scales[name].to_real(array)
        out[name] = from_hls(array, _port_order(port))
    return out
