"""The one Jinja2 environment every backend renders its templates with.

Templates live in ``templates/`` (``hlsfuse.resources.templates_dir()``) and hold the structure of
the generated files; Python computes the facts and passes small view objects. Undefined names are
errors (``StrictUndefined``), so a template that reads a field a view lacks fails loudly instead of
emitting an empty string into C++ or Verilog. ``trim_blocks`` and ``lstrip_blocks`` let block tags
sit on their own lines without leaving blank lines or indentation behind.
"""

from __future__ import annotations

import re
from functools import lru_cache

import jinja2

from ..errors import HlsfuseError
from ..resources import templates_dir

__all__ = ["environment", "render", "comment"]

_UNSAFE_IN_COMMENT = re.compile(r"[^A-Za-z0-9_ .,:;'\"<>()\[\]{}=+*/%&|!#@$^~-]")


def _fail(message: str) -> None:
    """``{{ fail("...") }}`` in a template: a case the Python side should have rejected."""
    raise HlsfuseError(message)


def comment(text) -> str:
    """``{{ x | comment }}``: text made safe inside a ``//`` comment (no line breaks, no trailing
    backslash or trigraph that would continue the comment onto the next line)."""
    return _UNSAFE_IN_COMMENT.sub("_", str(text))


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
    )
    env.globals["fail"] = _fail
    env.filters["comment"] = comment
    return env


def render(name: str, **view) -> str:
    """Render template ``name`` (a path under ``templates/``, e.g. ``hls/top.cpp.j2``) with ``view``."""
    return environment().get_template(name).render(**view)
