"""The simulators' build caches: where they live, and how an entry is made and trusted.

    $XDG_CACHE_HOME/hlsfuse/csim/<key>/csim_<top>         g++ testbench binaries (hlsfuse csim)
    $XDG_CACHE_HOME/hlsfuse/rtlsim/py-<key>/V<top>         pyverilator models (hlsfuse rtlsim)
    $XDG_CACHE_HOME/hlsfuse/rtlsim/native-<key>/V<top>_native   native harnesses (--driver native)

(``~/.cache`` when XDG_CACHE_HOME is unset.) A key is a hash
of everything the build reads, so an entry never goes stale; deleting a folder, or the whole
``hlsfuse`` folder, is always safe and only costs a rebuild.

An entry is a folder holding one built file (``entry``). It is built in a scratch folder of its own,
then *sealed*: the SHA-256 of the built file is written beside it (``<file>.sha256``), and the
scratch folder is renamed into place in one step. A run uses an entry only when its file still has
that digest (``intact``), and rebuilds it otherwise. So two runs building the same entry at once
both succeed (the second rename loses, harmlessly), a build killed halfway leaves only its scratch
(never used; the next build of it starts afresh), and a truncated or corrupted entry is rebuilt,
never run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..fileio import cache_folder

__all__ = ["root", "entry", "seal", "intact"]


def root(kind: str) -> Path:
    """The cache folder of ``kind`` ("csim", "rtlsim"; "rtl" for the test suite's models of hw/rtl)."""
    return cache_folder(kind)


def _digest_file(path: Path) -> Path:
    return path.with_name(f"{path.name}.sha256")


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(path: Path) -> None:
    """Record the digest of the built file ``path`` beside it."""
    _digest_file(path).write_text(_digest(path), encoding="ascii")


def intact(path: Path) -> bool:
    """``path`` exists and has the digest it was sealed with."""
    try:
        return _digest_file(path).read_text(encoding="ascii").strip() == _digest(path)
    except OSError:
        return False


def _discard_damaged(folder: Path, path: Path) -> None:
    """Remove the entry ``folder`` when it exists and its file ``path`` is not intact. Checked in that order, a
    folder another run renames into place meanwhile is seen intact: an entry that exists cannot be renamed
    over, so only a damaged one is ever removed (renamed aside first, so no run sees it half deleted)."""
    if folder.exists() and not intact(path):
        trash = Path(tempfile.mkdtemp(prefix=".damaged-", dir=folder.parent))
        with contextlib.suppress(FileNotFoundError):  # another run removed it first
            os.rename(folder, trash / folder.name)
        shutil.rmtree(trash, ignore_errors=True)


def entry(folder: Path, name: str, build: Callable[[Path], None]) -> tuple[Path, bool]:
    """(the file ``name`` of the cache entry ``folder``, whether it was built now rather than found intact).

    ``build(scratch)`` writes ``scratch/name`` in a fresh scratch folder beside the entry (anything else it
    leaves there goes into the entry too); an exception from it removes the scratch and propagates. A damaged
    entry is removed first, so it is rebuilt."""
    path = folder / name
    _discard_damaged(folder, path)
    if intact(path):
        return path, False
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=folder.parent))
    try:
        build(scratch)
        seal(scratch / name)
        with contextlib.suppress(OSError):  # a concurrent run built the same entry: use theirs
            scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path, True
