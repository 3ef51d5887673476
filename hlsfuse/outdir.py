"""Writing a whole output folder so that a failure never leaves half of one behind.

Files are written into a temporary folder beside the target, which then takes
the target's place in one rename. An existing non-empty target is refused
unless ``force`` is given; with ``force`` the old folder is replaced only after
the new one is complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from .errors import HlsfuseError

__all__ = ["check_out_dir", "write_tree"]


def check_out_dir(out: str | os.PathLike, force: bool) -> Path:
    """Refuse a target that exists and is not an empty folder (unless ``force``); return its path."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise HlsfuseError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not force:
            raise HlsfuseError(f"{out}: folder exists and is not empty (use --force to replace it)")
    if not out.parent.resolve().is_dir():
        raise HlsfuseError(f"{out}: parent folder '{out.parent}' does not exist")
    return out


def write_tree(out: str | os.PathLike, files: Mapping[str, str | bytes], force: bool = False) -> Path:
    """Write ``files`` (relative POSIX path -> text or bytes) as the folder ``out``."""
    out = check_out_dir(out, force)
    for rel in files:
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or not parts:
            raise HlsfuseError(f"refusing to write '{rel}' outside the output folder")
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent.resolve()))
    try:
        for rel, data in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(staging, 0o755)
        if out.exists():
            trash = out.with_name(f".{out.name}.old.{os.getpid()}")
            os.replace(out, trash)
            os.replace(staging, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
