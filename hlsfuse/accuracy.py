"""Accuracy: how far a fixed-point graph's outputs are from a float model's on the same frames.

    frames --fixed-point reference--> outputs  \\
                                                 > per output: max and mean |fixed - float|,
    frames --float model-------------> outputs  /  relative error, argmax agreement -> table

Per graph output, over all frames and elements:

- max abs, mean abs: of |fixed - float|.
- relative: max abs divided by the float output's range (its largest minus its smallest value
  over all frames), so an error is read against the spread of values it disturbs; "-" when the
  float output is constant (range 0).
- argmax: the frames whose argmax over the output's last axis is the same in both (every
  position of the other axes agreeing); "-" when that axis has a single element.

The measurement is plain data (``Accuracy``); ``Accuracy.table`` renders it. Which float model
ran and on which inputs are told by the caller and printed with the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import HlsfuseError

__all__ = ["OutputError", "Accuracy", "measure"]


@dataclass(frozen=True)
class OutputError:
    """The error of one graph output; ``relative`` and ``argmax`` are None where undefined."""

    name: str
    max_abs: float
    mean_abs: float
    relative: float | None
    argmax: int | None  # frames whose argmax over the last axis agrees
    elements: int  # compared, over all frames


@dataclass(frozen=True)
class Accuracy:
    """The error of every graph output over ``frames`` frames, against ``float_model`` (what ran as
    the float side, e.g. 'onnxruntime 1.20.0') on ``inputs`` (what the frames were)."""

    outputs: tuple[OutputError, ...]
    frames: int
    float_model: str
    inputs: str

    @property
    def max_abs(self) -> float:
        """The largest |fixed - float| of any output."""
        return max((row.max_abs for row in self.outputs), default=0.0)

    @property
    def mean_abs(self) -> float:
        """The mean |fixed - float| over every element of every output."""
        count = sum(row.elements for row in self.outputs)
        return sum(row.mean_abs * row.elements for row in self.outputs) / count if count else 0.0

    def output(self, name: str) -> OutputError:
        for row in self.outputs:
            if row.name == name:
                return row
        raise KeyError(name)

    def table(self) -> str:
        """The header line and one aligned row per output, without a final newline."""
        header = ("output", "max abs", "mean abs", "relative", "argmax")
        rows = [header] + [
            (row.name, _number(row.max_abs), _number(row.mean_abs), _number(row.relative),
             "-" if row.argmax is None else f"{row.argmax}/{self.frames}")
            for row in self.outputs
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = [f"error vs float ({self.float_model}) on {self.inputs}:"]
        lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def measure(
    fixed: Sequence[Mapping[str, np.ndarray]],
    floats: Sequence[Mapping[str, np.ndarray]],
    float_model: str,
    inputs: str,
) -> Accuracy:
    """The error of the frames' fixed-point outputs ``fixed`` against the float outputs ``floats``
    (one {output: array} mapping per frame, the same outputs and shapes in both)."""
    if len(fixed) != len(floats) or not fixed:
        raise HlsfuseError(f"accuracy needs the same number of frames (at least 1) from both models, "
                           f"not {len(fixed)} and {len(floats)}")
    rows = []
    for name in fixed[0]:
        got = np.stack([np.asarray(f[name], dtype=np.float64) for f in fixed])
        if any(name not in f for f in floats):
            raise HlsfuseError(f"output '{name}': the float model does not compute it")
        want = np.stack([np.asarray(f[name], dtype=np.float64) for f in floats])
        if got.shape != want.shape:
            raise HlsfuseError(f"output '{name}': the float model gives shape {list(want.shape[1:])}, "
                               f"expected {list(got.shape[1:])}")
        rows.append(_output_error(name, got, want))
    return Accuracy(tuple(rows), len(fixed), float_model, inputs)


def _output_error(name: str, got: np.ndarray, want: np.ndarray) -> OutputError:
    """``got`` and ``want``: [frames, *shape]."""
    diff = np.abs(got - want)
    max_abs = float(diff.max()) if diff.size else 0.0
    mean_abs = float(diff.mean()) if diff.size else 0.0
    spread = float(want.max() - want.min()) if want.size else 0.0
    relative = max_abs / spread if spread > 0 else None
    argmax = None
    if got.ndim >= 2 and got.shape[-1] > 1:
        same = np.argmax(got, axis=-1) == np.argmax(want, axis=-1)
        argmax = int(np.sum(same.reshape(len(same), -1).all(axis=1)))
    return OutputError(name, max_abs, mean_abs, relative, argmax, diff.size)
