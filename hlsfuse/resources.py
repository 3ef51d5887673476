"""Where the files that ship with hlsfuse are: the Jinja2 ``templates/`` and the hand-written ``hw/``.

In the repository both folders sit beside the ``hlsfuse`` package; an installed wheel carries
them inside it (``hlsfuse/templates``, ``hlsfuse/hw``; see pyproject.toml). So a folder is looked
for inside the package first (a regular install) and then beside it (a source checkout, used
directly or through an editable install).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .errors import HlsfuseError

__all__ = ["templates_dir", "hw_dir"]


def _folder(name: str) -> Path:
    package = Path(str(files(__package__)))
    for candidate in (package / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise HlsfuseError(f"hlsfuse's '{name}' folder is missing from {package} and {package.parent}; reinstall hlsfuse")


def templates_dir() -> Path:
    """The folder of Jinja2 templates (``templates/`` in the repository)."""
    return _folder("templates")


def hw_dir() -> Path:
    """The folder of hand-written hardware, ``rtl/`` and ``hls/`` (``hw/`` in the repository)."""
    return _folder("hw")
