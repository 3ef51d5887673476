"""Constants kept beside a JSON graph, in a numpy .npz archive (docs/graph-format.md, "Side files").

A constant's entry names the archive, relative to the JSON file's folder so that the two files can
move together, and the array in it:

    {"name": "w", "shape": [3, 3, 2, 4], "dtype": "fixed<8,1>", "init": {"kind": "file", "file": "g.npz", "array": "w"}}

The array holds the constant's raw values, as the reference interpreter keeps them: the W-bit
integers of a fixed-point type in the smallest numpy integer type of at least W bits (``int8`` for
``fixed<8,1>``, ``uint16`` for ``ufixed<12,4>``), ``float32`` for float32. So every type up to 64 bits
round-trips exactly, and no type of up to 32 bits takes more room than float32 would.

``npz_bytes`` builds an archive in memory, the same bytes for the same arrays (fixed time stamps, deflated at
level 1 like a numpy.savez_compressed archive: random 8-bit weights take 57% of their bytes), for the writers
of files to put on disk. ``SideFiles`` reads: it opens each archive
once and checks an array's header (shape and dtype, against the JSON) before reading its data, then
its values (finite floats, integers within the type's range); every problem is one line naming the
constant and the archive.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

import numpy as np

from .errors import HlsfuseError
from .fileio import check_readable
from .ir import Constant, Graph, TensorType
from .types import DType

__all__ = ["THRESHOLD", "storage_dtype", "is_inside", "array_names", "stored_array", "npz_bytes", "SideFiles", "valued",
           "side_file_bytes", "wants_side_file", "side_path"]

THRESHOLD = 262_144
"""Graphs whose constants hold more values than this (1 MiB as float32) are saved with a side file."""

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip entry can say: no clock in the bytes
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def storage_dtype(dtype: DType) -> np.dtype:
    """The numpy type of a constant's array: float32, or the smallest integer type of the raw values."""
    if dtype.is_float:
        return np.dtype(np.float32)
    bits = next(b for b in (8, 16, 32, 64) if b >= dtype.width)
    return np.dtype(f"{'int' if dtype.signed else 'uint'}{bits}")


def _expected(dtype: DType) -> str:
    """What an array of ``dtype`` must be, for error messages."""
    stored = storage_dtype(dtype)
    return str(stored) if dtype.is_float else f"{stored} (the raw integers of {dtype})"


def is_inside(file: str) -> bool:
    """Whether a reference names a file inside the JSON file's folder: relative, no '..', no empty part."""
    path = PurePosixPath(file)
    return bool(file) and not path.is_absolute() and ".." not in path.parts and "\\" not in file and file[-1] != "/"


def array_names(names: Iterable[str]) -> dict[str, str]:
    """Array names for constants (constant name -> array name): letters, digits and '_', all different."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name)
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out[name] = candidate
    return out


def stored_array(const: Constant) -> np.ndarray:
    """The array a side file holds for ``const``; values the reader would refuse are refused here."""
    dtype, raw = const.type.dtype, const.data
    if dtype.is_float:
        if not np.all(np.isfinite(raw)):
            raise HlsfuseError(f"constant '{const.name}': a side file holds only finite numbers, and the data has "
                               "NaN or inf")
    elif raw.size and (int(raw.min()) < dtype.raw_min or int(raw.max()) > dtype.raw_max):
        raise HlsfuseError(f"constant '{const.name}': raw values outside [{dtype.raw_min}, {dtype.raw_max}], the "
                           f"range of {dtype}")
    return raw.astype(storage_dtype(dtype))


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An .npz archive (as numpy.savez_compressed writes it) of ``arrays``, in their order; the same arrays
    always give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            # level 1: most of what deflate saves on weights, at several times the speed of the default
            archive.writestr(info, member.getvalue(), compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
    return buffer.getvalue()


class SideFiles:
    """The side files of one JSON file (``folder``: its folder), each opened once; use as a context
    manager, which closes them."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._open: dict[str, zipfile.ZipFile] = {}

    def __enter__(self) -> SideFiles:
        return self

    def __exit__(self, *exc) -> None:
        for archive in self._open.values():
            archive.close()
        self._open.clear()

    def read(self, file: str, array: str, name: str, ttype: TensorType) -> np.ndarray:
        """The raw values (int64 or float32) of constant ``name`` from ``array`` of ``file``, checked
        against its type."""
        path = self.folder / file
        where = f"constant '{name}': array '{array}' of {path}"
        archive = self._archive(file, name)
        member = f"{array}.npy"
        if member not in archive.NameToInfo:
            names = sorted(n.removesuffix(".npy") for n in archive.namelist() if n.endswith(".npy"))
            listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "") if names else "none"
            raise HlsfuseError(f"constant '{name}': {path} has no array '{array}' (it has: {listed})")
        try:
            with archive.open(member) as f:  # the header first: nothing is allocated for a wrong array
                version = np.lib.format.read_magic(f)
                header = _HEADER_READERS[version](f) if version in _HEADER_READERS else None
        except (ValueError, EOFError, zipfile.BadZipFile, OSError) as exc:
            raise HlsfuseError(f"{where}: truncated or corrupt ({exc})") from None
        if header is None:
            raise HlsfuseError(f"{where}: .npy format version {version[0]}.{version[1]} is not supported "
                               "(expected 1.0 or 2.0, as numpy.save writes)")
        shape, _, dtype = header
        _check_header(where, shape, dtype, ttype)
        try:
            with archive.open(member) as f:
                values = np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, EOFError, zipfile.BadZipFile, OSError) as exc:
            raise HlsfuseError(f"{where}: truncated or corrupt ({exc})") from None
        return _checked_values(where, values, ttype.dtype)

    def _archive(self, file: str, name: str) -> zipfile.ZipFile:
        if file not in self._open:
            path = self.folder / file
            try:
                check_readable(path)
                self._open[file] = zipfile.ZipFile(path)
            except FileNotFoundError:
                raise HlsfuseError(f"constant '{name}': side file {path} not found") from None
            except OSError as exc:
                raise HlsfuseError(f"constant '{name}': cannot read the side file {path}: "
                                   f"{exc.strerror or exc}") from None
            except HlsfuseError as exc:
                raise HlsfuseError(f"constant '{name}': side file {exc}") from None
            except (zipfile.BadZipFile, ValueError, EOFError) as exc:
                raise HlsfuseError(f"constant '{name}': side file {path} is not an .npz archive ({exc})") from None
        return self._open[file]


def _check_header(where: str, shape: tuple[int, ...], dtype: np.dtype, ttype: TensorType) -> None:
    if tuple(shape) != ttype.shape:
        raise HlsfuseError(f"{where} has shape {list(shape)}, expected {list(ttype.shape)}")
    stored = storage_dtype(ttype.dtype)
    if dtype.kind != stored.kind or dtype.itemsize != stored.itemsize or dtype.fields is not None:
        raise HlsfuseError(f"{where} has dtype {dtype}, expected {_expected(ttype.dtype)}")


def _checked_values(where: str, values: np.ndarray, dtype: DType) -> np.ndarray:
    flat = values.ravel()
    if dtype.is_float:
        bad = ~np.isfinite(flat)
        if bad.any():
            index = int(np.argmax(bad))
            raise HlsfuseError(f"{where} holds {flat[index]} at index {index}; expected finite numbers")
        return values.astype(np.float32)
    raw = values.astype(np.int64)  # uint64 arrays hold at most 63 bits: ufixed is at most 63 wide
    bad = (flat < dtype.raw_min) | (flat > dtype.raw_max)
    if bad.any():
        index = int(np.argmax(bad))
        raise HlsfuseError(f"{where} holds {int(flat[index])} at index {index}, outside [{dtype.raw_min}, "
                           f"{dtype.raw_max}], the raw range of {dtype}")
    return raw


def valued(graph: Graph) -> dict[str, Constant]:
    """The constants written as values (inline or in a side file): those without an ``init`` generator."""
    return {c.name: c for c in graph.constants if c.init is None}


def side_file_bytes(graph: Graph) -> bytes:
    """The .npz archive ``graph_to_dict(graph, side_file)`` names: the raw values of every constant
    without an ``init`` generator (``hlsfuse.side_file``)."""
    written = valued(graph)
    return npz_bytes({array: stored_array(written[name]) for name, array in array_names(written).items()})


def wants_side_file(graph: Graph, weights_file: bool | None = None) -> bool:
    """Whether to save ``graph`` with a side file: as ``weights_file`` says, or by default (None) when its
    constants written as values hold more than ``THRESHOLD`` values (1 MiB as float32)."""
    if weights_file is not None:
        return weights_file
    return sum(c.data.size for c in valued(graph).values()) > THRESHOLD


def side_path(path: str | os.PathLike) -> Path:
    """The side file ``save_graph`` writes beside the JSON file ``path``: the same name, ending in .npz."""
    path = Path(path)
    side = path.with_suffix(".npz")
    if side == path:
        raise HlsfuseError(f"{path}: a graph saved with a side file must not end in .npz (the side file's name)")
    return side
