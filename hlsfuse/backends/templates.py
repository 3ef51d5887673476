"""The one Jinja2 environment every backend renders its templates with.

Templates live in ``templates/`` (``hlsfuse.resources.templates_dir()``) and hold the structure of
the generated files; Python computes the facts and passes small view objects. Undefined names are
errors (``StrictUndefined``), so a template that reads a field a view lacks fails loudly instead of
emitting an empty string into C++ or Verilog. ``trim_blocks`` and ``lstrip_blocks`` let block tags
sit on their own lines without leaving blank lines or indentation behind.

Compiling the templates is most of a small design's emission time, so their Python code is kept in
``$XDG_CACHE_HOME/hlsfuse/jinja`` (Jinja2's bytecode cache, keyed by each template's source checksum and
the Python version): written whole (a temporary file and a rename), and a damaged or unreadable entry is
compiled again, never used.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, FileSystemBytecodeCache

from ..errors import HlsfuseError
from ..fileio import cache_folder
from ..resources import templates_dir

__all__ = ["environment", "render", "render_later", "comment"]

_UNSAFE_IN_COMMENT = re.compile(r"[^A-Za-z0-9_ .,:;'\"<>()\[\]{}=+*/%&|!#@$^~-]")


def _fail(message: str) -> None:
    """``{{ fail("...") }}`` in a template: a case the Python side should have rejected."""
    raise HlsfuseError(message)


def comment(text) -> str:
    """``{{ x | comment }}``: text made safe inside a ``//`` comment (no line breaks, no trailing
    backslash or trigraph that would continue the comment onto the next line)."""
    return _UNSAFE_IN_COMMENT.sub("_", str(text))


class _Bytecode(FileSystemBytecodeCache):
    """Jinja2's file cache, safe for concurrent runs: entries appear whole, and one that cannot be read is a
    miss."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a truncated or foreign entry: compile the template again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        path = Path(self._get_cache_filename(bucket))
        with contextlib.suppress(OSError):  # no cache where it cannot be written
            fd, tmp = tempfile.mkstemp(prefix=".jinja-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    bucket.write_bytecode(f)
                os.replace(tmp, path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _bytecode_cache() -> _Bytecode | None:
    folder = cache_folder("jinja")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _Bytecode(str(folder))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared environment (created once; templates are cached by Jinja2)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=_bytecode_cache(),
    )
    env.globals["fail"] = _fail
    env.filters["comment"] = comment
    return env


def render(name: str, **view) -> str:
    """Render template ``name`` (a path under ``templates/``, e.g. ``hls/top.cpp.j2``) with ``view``."""
    return environment().get_template(name).render(**view)


def render_later(name: str, **view) -> Callable[[], Iterator[str]]:
    """``render`` of a large file as a producer (``hlsfuse.outdir.Files``): the text is made in pieces as it is
    written, never whole. An error of the template shows only then (``write_tree`` then leaves OUT as it was)."""
    template = environment().get_template(name)
    return lambda: template.generate(**view)
