"""Writing output files so that a failure never leaves a half-written file behind, and refusing
input paths that are no file at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import HlsfuseError

__all__ = ["write_atomic", "check_readable"]


def write_atomic(path: str | os.PathLike, data: str | bytes, overwrite: bool = True) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same folder and a
    rename, so readers see the old file or the complete new one; returns the path.

    Without ``overwrite`` the file is moved in with a hard link, which fails if ``path`` exists: a file
    that appeared since the command checked (``cli.common.output_arg``) is never replaced."""
    path = Path(path)
    if not path.parent.is_dir():
        raise HlsfuseError(f"{path}: folder '{path.parent}' does not exist")
    # a plain open (not mkstemp) so that the file gets the usual permissions of the umask
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise HlsfuseError(f"{path}: appeared while the output was made; it is left as it is and nothing "
                                   "was written (pass --force to overwrite it)") from None
            tmp.unlink()
    except OSError as exc:  # a full disk says nothing of the file; the user needs its path
        tmp.unlink(missing_ok=True)
        raise HlsfuseError(f"{path}: cannot write: {exc.strerror or exc}; {path} is left as it was") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


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
