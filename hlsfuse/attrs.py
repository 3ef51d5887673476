"""Node attributes as immutable plain data: one canonical form whatever the node came from, and a dict key.

``canonical`` turns an attribute value written in Python or read from JSON into the form a ``Node`` holds
(tuples for lists, Python numbers for numpy's, spellings for dtypes and pattern kinds), so that two equal
graphs hold equal nodes; ``attrs_key`` makes a node's attributes a key for the memo of type inference
(``ir.Graph``), or says that they cannot be one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .ops import Pattern
from .types import FixedType, FloatType

__all__ = ["canonical", "attrs_key"]

_SCALARS = frozenset((str, int, float, bool, type(None)))  # already canonical (not subclasses: a Pattern is an int)


def canonical(value: Any) -> Any:
    """An attribute value in immutable canonical form, the same whether the node came from
    JSON or from Python: lists and tuples become tuples, numpy scalars Python numbers, dtypes
    and pattern kinds their spellings (which the attribute rules parse)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if (kind is list or kind is tuple) and _SCALARS.issuperset(map(type, value)):  # most lists: flat, of scalars
        return tuple(value)
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple([canonical(v) for v in value])
    if isinstance(value, (FixedType, FloatType)):
        return str(value)
    if isinstance(value, Pattern):
        return value.name
    return value


_EXACT = frozenset((str, int, bool, type(None)))  # equal values of one of these types are the same value


def attrs_key(attrs: Mapping[str, Any]) -> tuple | None:
    """The attributes as a dict key, or ``None`` when one is not plain data: a string, integer,
    boolean, None, float, or a flat tuple (a JSON list) of any of those but floats.

    1, 1.0 and True are one key in a dict but not one attribute value (an integer attribute refuses
    True), so each value's type stands beside it; a float is spelled in hex, so that -0.0 is not 0.0.
    """
    key = []
    for name, value in attrs.items():
        kind = type(value)
        if kind is tuple:
            kind = tuple(map(type, value))
            if not _EXACT.issuperset(kind):
                return None
        elif kind is float:
            value = value.hex()
        elif kind not in _EXACT:
            return None
        key.append((name, kind, value))
    return tuple(key)
