"""The shell examples of the docs, for the tests that check them against what the commands print."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def commands(doc: str, section: str) -> list[tuple[list[str], list[str]]]:
    """(argv, lines shown) of each ``$ hlsfuse ...`` command of the first code block of ``section``
    (a ``## `` heading) of ``docs/<doc>``."""
    text = (DOCS / doc).read_text()
    block = re.search(rf"## {re.escape(section)}\n.*?```\n(.*?)```", text, re.S).group(1)
    found = []
    for command in re.split(r"^\$ hlsfuse ", block, flags=re.M)[1:]:
        argv, *shown = command.splitlines()
        found.append((shlex.split(argv), shown))
    return found
