"""Writing output files so that a failure never leaves a half-written file behind, refusing input
paths that are no file at all, and where hlsfuse keeps its caches."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .errors import HlsfuseError

__all__ = ["write_atomic", "write_together", "check_readable", "cache_folder"]


def cache_folder(kind: str) -> Path:
    """hlsfuse's cache folder of ``kind`` ("csim", "rtlsim", "jinja"): ``$XDG_CACHE_HOME/hlsfuse/<kind>``,
    ``~/.cache`` when XDG_CACHE_HOME is unset. Deleting it is always safe and only costs a rebuild."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hlsfuse" / kind


def write_atomic(path: str | os.PathLike, data: str | bytes, overwrite: bool = True) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same folder and a
    rename, so readers see the old file or the complete new one; returns the path.

    Without ``overwrite`` an existing ``path`` is refused, and the file is moved in with a hard link,
    which fails if ``path`` exists: a file that appeared since the command checked
    (``cli.common.output_arg``) is never replaced."""
    write_together({path: data}, overwrite=overwrite)
    return Path(path)


def write_together(files: Mapping[str | os.PathLike, str | bytes], overwrite: bool = True) -> None:
    """Write several files as ``write_atomic`` writes one: every file is written to its temporary file
    first, and only when all of them are complete are they moved in, in the order given (a graph's side
    file before the JSON that names it). A failure before that leaves every path as it was; without
    ``overwrite``, files this call already moved in are removed again if a later one cannot be. The
    renames themselves are one step each, not one for all: a process killed between two of them leaves
    the first file new and the next one old."""
    paths = {Path(path): data for path, data in files.items()}
    for path in paths:
        if not path.parent.is_dir():
            raise HlsfuseError(f"{path}: folder '{path.parent}' does not exist")
        if not overwrite and (path.exists() or path.is_symlink()):
            raise HlsfuseError(f"{path} already exists; pass --force to overwrite it")
    # plain opens (not mkstemp) so that the files get the usual permissions of the umask
    temps = {path: path.with_name(f".{path.name}.{os.getpid()}.tmp") for path in paths}
    moved: list[Path] = []
    current = next(iter(paths), None)
    try:
        for current, data in paths.items():
            with open(temps[current], "xb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        for current, tmp in temps.items():
            _move_in(tmp, current, overwrite)
            moved.append(current)
    except OSError as exc:  # a full disk says nothing of the file; the user needs its path
        _undo(temps, moved, overwrite)
        raise HlsfuseError(f"{current}: cannot write: {exc.strerror or exc}; {current} is left as it was") from None
    except BaseException:
        _undo(temps, moved, overwrite)
        raise


def _move_in(tmp: Path, path: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise HlsfuseError(f"{path}: appeared while the output was made; it is left as it is and nothing "
                           "was written (pass --force to overwrite it)") from None
    tmp.unlink()


def _undo(temps: Mapping[Path, Path], moved: list[Path], overwrite: bool) -> None:
    for tmp in temps.values():
        tmp.unlink(missing_ok=True)
    if not overwrite:  # the links this call made are new files of its own
        for path in moved:
            path.unlink(missing_ok=True)


# st_mode tests of the paths that are neither files nor folders, and what to call them
_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
            (stat.S_ISSOCK, "a socket"))


def check_readable(path: str | os.PathLike) -> None:
    """Refuse an input path that is a device, pipe or socket (``/dev/zero`` never ends, a pipe may never
    answer) before reading it; a missing file or a folder is left to the reader's own error."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    for test, kind in _SPECIAL:
        if test(mode):
            raise HlsfuseError(f"{path}: not a regular file ({kind})")
