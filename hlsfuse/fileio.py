"""Writing output files so that a failure never leaves a half-written file behind."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import HlsfuseError

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same folder and a
    rename, so readers see the old file or the complete new one; returns the path."""
    path = Path(path)
    if not path.parent.is_dir():
        raise HlsfuseError(f"{path}: folder '{path.parent}' does not exist")
    # a plain open (not mkstemp) so that the file gets the usual permissions of the umask
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
