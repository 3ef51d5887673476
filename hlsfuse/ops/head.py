"""What a stage's head op computes, as the lowering and the backends need it: one ``Head`` per node.

A head op (the one op of a stage that is not elementwise: ``OpDef.stream`` is ``window``, ``rows`` or
``reduce``) combines ``terms`` values into each output element:

    combine   what each output is                       ops
    mac       sum of terms products x * w               conv2d, dense, matmul
    max       the largest of terms values               max_pool2d, max
    sum       sum of terms values                       sum
    mean      sum of terms values, divided by a count   avg_pool2d, mean, global_avg_pool

Its registry entry computes the ``Head`` once from the node's signature (``OpDef.head``), with the
exact accumulator of a fixed-point sum (``Fmt.accumulate``) and the window of a sliding-window op, so that
nothing downstream tells the ops apart by name: the lowering builds the schedule from these facts, and
the backends key their spelling on ``combine``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..types import Fmt

__all__ = ["COMBINES", "Head", "Window"]

COMBINES = ("mac", "max", "sum", "mean")


@dataclass(frozen=True)
class Window:
    """A sliding window over NHWC rows: kernel (KH, KW), strides, padding [top, left, bottom, right],
    dilation."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class Head:
    """``combine`` (``COMBINES``) of ``terms`` values per output element.

    ``weights``: the input that holds a MAC's weights (None for the others); ``products_innermost``: the
    weights' innermost axis runs over one output's products (dense's w[N, K]), not over the outputs
    (conv2d's w[KH, KW, Cin/G, Cout], matmul's b[..., K, N]); ``accumulator``: the exact format of a
    fixed-point sum (mac, sum and mean; None for max, which keeps the input's format, and for float32);
    ``window``: a sliding-window op's window, with ``groups`` (a conv2d's); ``axes``: a reduction's axes of
    its input."""

    combine: str
    terms: int
    weights: int | None = None
    products_innermost: bool = False
    accumulator: Fmt | None = None
    window: Window | None = None
    groups: int = 1
    axes: tuple[int, ...] = ()

    @property
    def mac(self) -> bool:
        return self.combine == "mac"
