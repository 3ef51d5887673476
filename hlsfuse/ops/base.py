"""What an op is: one ``OpDef`` holds every fact about it.

Arity, attributes (with defaults and validation), the shape rule, the default
output-type rule, the check of exact intermediates, the pattern kind and the
numpy reference all live in one entry. Backends and the fusion engine look
facts up here; nothing else keeps a copy of the op table.

Rules receive a ``Sig``: the input tensor types and the normalised attributes
(and, for ``compute``, the output type). They raise ``OpError`` with a message
about a field; ``verify`` prefixes it with the node.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import OpError
from ..types import DType, FixedType, Fmt, parse_dtype
from .head import Head
from .interval import Interval

__all__ = [
    "Pattern",
    "Attr",
    "OpDef",
    "Sig",
    "REQUIRED",
    "ints",
    "fixed_inputs",
    "same_family",
    "first_input_dtype",
]


class Pattern(enum.IntEnum):
    """TVM's OpPatternKind, same names and values, so combining kinds is ``max``."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8

    @staticmethod
    def parse(text: str, where: str) -> Pattern:
        try:
            return Pattern[str(text).upper()]
        except KeyError:
            names = ", ".join(p.name for p in Pattern)
            raise OpError(f"{where}: unknown pattern kind {text!r}, expected one of {names}") from None


REQUIRED = object()


@dataclass(frozen=True)
class Attr:
    """One attribute: name, kind, default (``REQUIRED`` if none) and an extra check.

    Kinds: ``int``, ``float``, ``bool``, ``str``, ``dtype``, ``ints`` (list of ints,
    ``length`` fixes its length), ``pattern`` and ``patterns``. ``check(value)``
    returns an error text (without the attribute name) or ``None``.
    """

    name: str
    kind: str
    default: Any = REQUIRED
    length: int | None = None
    check: Callable[[Any], str | None] | None = None

    def normalize(self, value: Any) -> Any:
        """Convert a JSON/Python value to the canonical immutable form, or raise."""
        where = f"attribute '{self.name}'"
        if value is None and self.default is None:
            return None  # an explicit None asks for the default (e.g. "all axes")
        value = _convert(self.kind, value, where, self.length)
        if self.check is not None and (problem := self.check(value)):
            raise OpError(f"{where} {problem}")
        return value


def _spelled(value: Any) -> str:
    """A bad value as the user wrote it: nodes hold attribute lists as tuples, shown here as lists."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_spelled(v) for v in value) + "]"
    return repr(value)


def _convert(kind: str, value: Any, where: str, length: int | None) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise OpError(f"{where} must be an integer, not {_spelled(value)}")
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise OpError(f"{where} must be a number, not {_spelled(value)}")
        if not math.isfinite(float(value)):
            raise OpError(f"{where} must be finite, not {_spelled(value)}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise OpError(f"{where} must be true or false, not {_spelled(value)}")
        return bool(value)
    if kind == "str":
        if not isinstance(value, str):
            raise OpError(f"{where} must be a string, not {_spelled(value)}")
        return value
    if kind == "dtype":
        if isinstance(value, (FixedType,)) or getattr(value, "is_float", False):
            return value
        try:
            return parse_dtype(value)
        except Exception as exc:
            raise OpError(f"{where}: {exc}") from None
    if kind == "ints":
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value
        ):
            raise OpError(f"{where} must be a list of integers, not {_spelled(value)}")
        if length is not None and len(value) != length:
            raise OpError(f"{where} must have {length} values, not {len(value)}")
        return tuple(int(v) for v in value)
    if kind == "pattern":
        return Pattern.parse(value, where) if not isinstance(value, Pattern) else value
    if kind == "patterns":
        if not isinstance(value, (list, tuple)):
            raise OpError(f"{where} must be a list of pattern kinds, not {_spelled(value)}")
        return tuple(v if isinstance(v, Pattern) else Pattern.parse(v, where) for v in value)
    raise OpError(f"{where}: unknown attribute kind {kind!r}")


@dataclass(frozen=True)
class Sig:
    """What a rule sees: input shapes and dtypes, attributes, and the output type if known."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[DType, ...]
    attrs: Mapping[str, Any]
    out_shape: tuple[int, ...] | None = None
    out_dtype: DType | None = None

    def __getitem__(self, name: str) -> Any:
        return self.attrs[name]


@dataclass(frozen=True)
class OpDef:
    """Every fact about one op.

    ``shape(sig) -> out shape``; ``dtype(sig) -> default out dtype`` (a node's declared
    dtype wins); ``check(sig)`` validates dtypes and exact intermediates once the output
    type is known; ``pattern`` is a kind or ``pattern(sig) -> kind``;
    ``compute(args, sig) -> array`` is the numpy reference on raw values (int64 for fixed
    types, float32 for float32) and returns the node's output in its declared type.
    ``needs_buffer(sig)`` says why the op cannot run in stream order (it emits elements
    in another order than it reads them, e.g. a transpose), or ``None`` when it can.
    ``bounds(inputs, sig) -> Interval`` is the range rule (ops/interval.py): the interval of
    the exact result, before its assignment to the output type, from the intervals of the
    (quantized) inputs.
    ``variadic`` ops take ``len(inputs)`` or more inputs.
    ``stream`` (a kind or ``stream(sig) -> kind``) says how the op runs in a streaming
    stage: ``map`` (output element i from input element i; broadcast operands are held
    on chip), ``window`` (sliding windows over NHWC rows, with a line buffer), ``rows``
    (one output row per input row of K elements), ``reduce`` (accumulates, emits when
    done) or ``own`` (a stage of its own: it changes the stream's length or order).

    What the lowering and the backends need besides, computed from the signature:
    ``head(sig) -> Head`` of a window, rows or reduce op (ops/head.py: what it combines, its
    weights, exact accumulator, window or axes); ``micro`` (a name or ``micro(sig) -> name``),
    the step a map op computes per element, which both backends spell (``add``, ``mul``,
    ``maximum``, ``relu``, ``assign``, ``clip``, ``lookup`` ...); ``constants(sig)``, its
    attribute constants as the hardware holds them (raw integers on the grid they are rounded
    to, or floats in a float32 graph: leaky_relu's ``alpha``, clip's ``lo`` and ``hi``, pad's
    ``fill``); ``tables(sig)``, the lookup tables a fixed-point node reads. An op without
    ``compute`` (``custom``) can be neither run nor compiled.
    ``rows``: the inputs a map op reads a whole row of (its last axis) per element, the rest of
    the input's shape broadcasting to the output like any operand (threshold's ``t``: n thresholds
    per channel); such an input must be a graph constant, held as a ROM of one row per word.
    ``check_constants(sig, data)`` checks the values of a node's inputs that are graph constants
    (``data``: input name -> raw values), for rules about values rather than types (``verify`` calls it).
    ``products(sig)``: the multipliers an own op's fixed-point datapath builds besides its head's, as
    (a, b, per_lane) triples of operand types, ``per_lane`` when each lane of a folded stage has its own
    (the resource model prices them; layer_norm's x^2, its deviation times 1/sqrt(V), its Newton step).
    """

    name: str
    inputs: tuple[str, ...]
    shape: Callable[[Sig], tuple[int, ...]]
    compute: Callable[[list[np.ndarray], Sig], np.ndarray] | None
    pattern: Pattern | Callable[[Sig], Pattern]
    attrs: tuple[Attr, ...] = ()
    dtype: Callable[[Sig], DType] = field(default=None)  # type: ignore[assignment]
    check: Callable[[Sig], None] | None = None
    bounds: Callable[[list[Interval], Sig], Interval] | None = None
    variadic: bool = False
    needs_buffer: Callable[[Sig], str | None] | None = None
    stream: str | Callable[[Sig], str] = "map"
    head: Callable[[Sig], Head] | None = None
    micro: str | Callable[[Sig], str] | None = None
    constants: Callable[[Sig], Mapping[str, Any]] | None = None
    tables: Callable[[Sig], tuple] | None = None
    rows: tuple[str, ...] = ()
    check_constants: Callable[[Sig, Mapping[str, np.ndarray]], None] | None = None
    products: Callable[[Sig], tuple[tuple[DType, DType, bool], ...]] | None = None
    doc: str = ""

    def __post_init__(self):
        if self.dtype is None:
            object.__setattr__(self, "dtype", first_input_dtype)

    @property
    def min_inputs(self) -> int:
        return len(self.inputs)

    def normalize_attrs(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        known = {a.name: a for a in self.attrs}
        unknown = sorted(set(attrs) - set(known))
        if unknown:
            names = ", ".join(known) or "none"
            raise OpError(f"unknown attribute '{unknown[0]}' (expected: {names})")
        out = {}
        for a in self.attrs:
            if a.name in attrs:
                out[a.name] = a.normalize(attrs[a.name])
            elif a.default is REQUIRED:
                raise OpError(f"missing required attribute '{a.name}'")
            else:
                out[a.name] = a.default
        return out

    def pattern_of(self, sig: Sig) -> Pattern:
        return self.pattern(sig) if callable(self.pattern) else self.pattern

    def buffer_reason(self, sig: Sig) -> str | None:
        return self.needs_buffer(sig) if self.needs_buffer is not None else None

    def stream_kind(self, sig: Sig) -> str:
        return self.stream(sig) if callable(self.stream) else self.stream

    def head_of(self, sig: Sig) -> Head:
        if self.head is None:
            raise OpError(f"op '{self.name}' is not the head of a window, rows or reduce stage")
        return self.head(sig)

    def micro_of(self, sig: Sig) -> str | None:
        """The per-element step of a map op (None: the op does not run element by element)."""
        return self.micro(sig) if callable(self.micro) else self.micro

    def constants_of(self, sig: Sig) -> Mapping[str, Any]:
        return self.constants(sig) if self.constants is not None else {}

    def products_of(self, sig: Sig) -> tuple[tuple[DType, DType, bool], ...]:
        """The multipliers of a fixed-point node's own datapath (none in a float32 graph)."""
        if self.products is None or sig.out_dtype is None or sig.out_dtype.is_float:
            return ()
        return self.products(sig)

    def tables_of(self, sig: Sig) -> tuple:
        """The lookup tables a node reads (none in a float32 graph, which evaluates the functions)."""
        if self.tables is None or sig.out_dtype is None or sig.out_dtype.is_float:
            return ()
        return self.tables(sig)


# --------------------------------------------------------------------------
# Small rule helpers shared by the op modules
# --------------------------------------------------------------------------


def ints(*values: int) -> tuple[int, ...]:
    return tuple(values)


def first_input_dtype(sig: Sig) -> DType:
    return sig.dtypes[0]


def same_family(sig: Sig, names: tuple[str, ...] | None = None) -> None:
    """Inputs must be all float32 or all fixed/integer, and the output the same family."""
    kinds = {d.is_float for d in sig.dtypes}
    if len(kinds) > 1:
        raise OpError("inputs mix float32 and fixed-point types; insert a cast")
    if sig.out_dtype is not None and kinds and sig.out_dtype.is_float not in kinds:
        raise OpError(f"output dtype {sig.out_dtype} does not match the inputs' family; use cast to convert")


def fixed_inputs(sig: Sig) -> list[Fmt] | None:
    """Exact formats of the inputs, or ``None`` for float graphs."""
    if any(d.is_float for d in sig.dtypes):
        return None
    return [Fmt.of(d) for d in sig.dtypes]
