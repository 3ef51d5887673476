"""Which type each imported tensor gets: the precision configuration and calibration.

A ``Precision`` has a default type for activations and graph inputs (e.g. ``fixed<16,6>``,
hls4ml's default, or ``float32``), a type for weights, and per-tensor overrides by exact
name or fnmatch glob. Names are the hlsfuse names, which are the ONNX tensor names (a
helper node ``t.<part>`` of ONNX tensor ``t`` also follows the overrides of ``t``):

    {"default": "fixed<16,6>", "weights": "fixed<12,4>",
     "tensors": {"input": "fixed<12,2>", "/fc*/Gemm_output_0": "fixed<20,8>"}}

Lookup order: an exact name, then globs in the order written (the node's own name
before its ONNX tensor's), then calibrated types, then the defaults. Nodes that only
move values (reshape, transpose, slice, pad, ...) keep their input's type unless a
rule names them, so layout changes never round.

Calibration runs the float32 import on sample inputs, records each tensor's largest
magnitude, and gives it ``fixed<W, I, RND, SAT>``: W is kept from the default (or the
weight type for constants) and I holds the magnitude plus one bit of headroom
(weights, whose values are known exactly, get no headroom). It reports the largest
absolute difference between the fixed-point and float32 results on the samples.

``auto``, ``auto:W`` or ``auto:W,I`` (as the type, or a map's "default") asks for range analysis
instead (auto.py): each activation gets the integer bits its bound needs within W bits (at most
I). The default precision is ``auto:16,6``. A map's "tensors" may then name nodes with
``"auto:W"`` for another width, or give them a type.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ...errors import HlsfuseError
from ...ir import Graph
from ...types import DEFAULT_PRECISION, EXACT, FLOAT32, DType, FixedType, parse_dtype

__all__ = ["DEFAULT_PRECISION", "EXACT", "AUTO_WIDTH", "Precision", "MOVING_OPS", "load_precision_map", "precision_of",
           "parse_auto", "int_bits_for"]

AUTO_WIDTH = 16
"""Total bits of ``--precision auto`` without a width (and of what ``exact`` cannot hold exactly)."""

MOVING_OPS = frozenset({"reshape", "flatten", "transpose", "squeeze", "expand_dims", "slice", "pad", "upsample2d"})
"""hlsfuse ops that only move values: they keep their input's type unless overridden."""

_MAP_KEYS = ("default", "weights", "tensors")


@dataclass(frozen=True)
class Precision:
    default: DType = field(default_factory=lambda: FixedType(16, 6))  # hls4ml's; auto and exact set their own
    weights: DType | None = None
    tensors: tuple[tuple[str, DType], ...] = ()
    calibrated: Mapping[str, DType] = field(default_factory=dict)
    auto: int | None = None  # the width of --precision auto:W (None: not auto)
    auto_limit: int | None = None  # the most integer bits of auto:W,I (None: as many as the bounds need)
    auto_widths: tuple[tuple[str, int], ...] = ()  # per-node widths (name or glob) under auto
    exact: bool = False  # precision "exact": auto, but each node holds its exact result (quant.py, ranges.py)
    approximate_scales: bool = False  # quantizer scales that are not powers of two: the nearest one (quant.py)

    def __post_init__(self):
        object.__setattr__(self, "calibrated", MappingProxyType(dict(self.calibrated)))
        family = self.default.is_float
        named = [("weights", self.weights)] + [(f"tensor '{n}'", t) for n, t in self.tensors]
        for what, t in named:
            if t is not None and t.is_float != family:
                raise HlsfuseError(
                    f"precision: {what} is {t} but the default is {self.default}; "
                    "an imported graph is float32 throughout or fixed-point throughout"
                )

    @property
    def is_float(self) -> bool:
        return self.default.is_float

    def _override(self, *names: str) -> DType | None:
        exact = dict(self.tensors)
        for name in names:
            if name in exact:
                return exact[name]
        for name in names:
            for pattern, t in self.tensors:
                if fnmatchcase(name, pattern):
                    return t
        return None

    def input(self, name: str) -> DType:
        return self._override(name) or self.calibrated.get(name) or self.default

    def weight(self, name: str) -> DType:
        return self._override(name) or self.calibrated.get(name) or self.weights or self.default

    def node(self, name: str, group: str, op: str) -> DType | None:
        """Output type of hlsfuse node ``name`` computing (part of) ONNX tensor ``group``."""
        if self.is_float:
            return None
        chosen = self._override(name, group)
        if chosen is not None or op in MOVING_OPS:
            return chosen
        return self.calibrated.get(name) or self.default

    def auto_width(self, name: str) -> int | None:
        """The width an ``"auto:W"`` entry gives node ``name`` (exact name first, then globs in order)."""
        widths = dict(self.auto_widths)
        if name in widths:
            return widths[name]
        return next((w for pattern, w in self.auto_widths if fnmatchcase(name, pattern)), None)

    def with_calibration(self, types: Mapping[str, DType]) -> Precision:
        return replace(self, calibrated=types)


def _dtype(value, where: str) -> DType:
    try:
        return value if isinstance(value, (FixedType, type(FLOAT32))) else parse_dtype(value)
    except HlsfuseError as exc:
        raise HlsfuseError(f"precision: {where}: {exc}") from None


def precision_from_map(spec: Mapping, default: str | DType | None = None) -> Precision:
    """A ``Precision`` from a precision-map dict; ``default`` applies when it has no "default"."""
    if not isinstance(spec, Mapping):
        keys = ", ".join(_MAP_KEYS)
        raise HlsfuseError(f"precision map must be a JSON object with keys {keys}, not {type(spec).__name__}")
    unknown = sorted(set(spec) - set(_MAP_KEYS))
    if unknown:
        raise HlsfuseError(f"precision map: unknown key '{unknown[0]}' (expected: {', '.join(_MAP_KEYS)})")
    base = spec.get("default", default if default is not None else DEFAULT_PRECISION)
    tensors = spec.get("tensors", {})
    if not isinstance(tensors, Mapping):
        raise HlsfuseError("precision map: 'tensors' must be an object of name-or-glob: type")
    exact = _is_exact(base)
    auto, limit = (AUTO_WIDTH, None) if exact else _auto_spec(base, "default")
    widths = []
    for name, value in tensors.items():
        if _is_auto(value):
            width, own_limit = _auto_spec(value, f"tensor '{name}'")
            if own_limit is not None:
                raise HlsfuseError(f"precision map: tensor '{name}': {value!r}: a tensor's auto gives its width only "
                                   "(auto:W); the integer-bit limit is the default's")
            widths.append((str(name), width))
    if widths and auto is None:
        raise HlsfuseError(f"precision map: tensor '{widths[0][0]}' is auto, but the default is {base}, not auto")
    return Precision(
        default=_dtype(base, "default") if auto is None else FixedType(auto, 6),
        weights=None if spec.get("weights") is None else _dtype(spec["weights"], "weights"),
        tensors=tuple((str(k), _dtype(v, f"tensor '{k}'")) for k, v in tensors.items() if not _is_auto(v)),
        auto=auto,
        auto_limit=limit,
        auto_widths=tuple(widths),
        exact=exact,
    )


def _is_auto(value) -> bool:
    return isinstance(value, str) and value.strip().startswith("auto")


def _is_exact(value) -> bool:
    return isinstance(value, str) and value.strip() == EXACT


def parse_auto(text) -> tuple[int, int | None] | None:
    """The width and the integer-bit limit (None: no limit) of an ``auto``, ``auto:W`` or ``auto:W,I``
    spelling, or None for anything else."""
    if not _is_auto(text):
        return None
    spelled = text.strip()
    if spelled == "auto":
        return AUTO_WIDTH, None
    head, colon, rest = spelled.partition(":")
    width, comma, limit = (part.strip() for part in rest.partition(","))
    if head == "auto" and colon and width.isdigit() and 2 <= int(width) <= 64:
        if not comma:
            return int(width), None
        if limit.isdigit() and int(limit) <= int(width):
            return int(width), int(limit)
    raise HlsfuseError(f"{text!r}: expected auto, auto:W with a total width W of 2..64 bits, or auto:W,I with at "
                       "most I <= W integer bits")


def _auto_spec(value, where: str) -> tuple[int | None, int | None]:
    """(width, integer-bit limit) of an auto spelling; (None, None) for any other."""
    try:
        return parse_auto(value) or (None, None)
    except HlsfuseError as exc:
        raise HlsfuseError(f"precision: {where}: {exc}") from None


def load_precision_map(path: str | Path, default: str | DType | None = None) -> Precision:
    """Read a precision-map JSON file (see the module note)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise HlsfuseError(f"{path}: cannot read the precision map: {exc.strerror or exc}") from None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HlsfuseError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    try:
        return precision_from_map(spec, default)
    except HlsfuseError as exc:
        raise HlsfuseError(f"{path}: {exc}") from None


def precision_of(spec) -> Precision:
    """``Precision`` from a dtype spelling, a precision-map dict, a ``Precision`` or None (default)."""
    if spec is None:
        spec = DEFAULT_PRECISION
    if isinstance(spec, Precision):
        return spec
    if isinstance(spec, Mapping):
        return precision_from_map(spec)
    if _is_exact(spec):
        return Precision(default=FixedType(AUTO_WIDTH, 6), auto=AUTO_WIDTH, exact=True)
    auto, limit = _auto_spec(spec, "default")
    if auto is not None:
        return Precision(default=FixedType(auto, 6), auto=auto, auto_limit=limit)
    return Precision(default=_dtype(spec, "default"))


def int_bits_for(magnitude: float, width: int, headroom: int) -> int:
    """Integer bits of a signed ``width``-bit type holding ``magnitude`` with ``headroom`` spare bits."""
    if not math.isfinite(magnitude):
        return width
    if magnitude <= 0.0:
        return min(width, 1 + headroom)
    # a signed type with I integer bits holds [-2**(I-1), 2**(I-1)): floor(log2 m) + 2 bits hold m
    need = math.floor(math.log2(magnitude)) + 2 + headroom
    return max(-width, min(width, need))


def calibrated_types(precision: Precision, float_graph: Graph, peaks: Mapping[str, float]) -> dict[str, DType]:
    """Calibrated fixed types: activations by their observed peaks, weights by their values."""
    act, wts = precision.default, precision.weights or precision.default
    types: dict[str, DType] = {}
    for name, peak in peaks.items():
        types[name] = FixedType(act.width, int_bits_for(peak, act.width, 1), True, "RND", "SAT")
    for const in float_graph.constants:
        peak = float(np.max(np.abs(const.values))) if const.data.size else 0.0
        types[const.name] = FixedType(wts.width, int_bits_for(peak, wts.width, 0), True, "RND", "SAT")
    return types
