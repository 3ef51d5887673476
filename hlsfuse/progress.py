"""A status line for long work on a terminal: what is being done, how far it is, elapsed time and ETA.

It is drawn on standard error only when that is a terminal (and CI is not set), redrawn in place with a
carriage return, and cleared when the work ends; in pipes, files and CI logs nothing is written, so
logs keep only the commands' own lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["Progress", "activity", "on_terminal"]


def on_terminal(stream=None) -> bool:
    stream = stream or sys.stderr
    ci = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
    return not ci and os.environ.get("TERM") != "dumb" and hasattr(stream, "isatty") and stream.isatty()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds // 60 % 60:02d}"


class Progress:
    """``label done/total, elapsed, ETA [note]``; ``update`` after each finished item."""

    def __init__(self, label: str, total: int, stream=None, enabled: bool | None = None):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.enabled = on_terminal(self.stream) if enabled is None else enabled
        self.start = time.monotonic()
        self._width = 0
        self._lock = threading.Lock()

    def line(self, note: str = "") -> str:
        elapsed = time.monotonic() - self.start
        text = f"{self.label} {self.done}/{self.total}, {_clock(elapsed)}"
        if 0 < self.done < self.total:
            text += f", ETA {_clock(elapsed / self.done * (self.total - self.done))}"
        return f"{text} {note}".rstrip()

    def update(self, done: int | None = None, note: str = "") -> None:
        with self._lock:
            self.done = self.done + 1 if done is None else done
            self._draw(self.line(note))

    def _draw(self, text: str) -> None:
        if not self.enabled:
            return
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def say(self, label: str) -> None:
        """A new label for the line (the step a long task has come to); drawn at the next tick."""
        with self._lock:
            self.label = label

    def close(self) -> None:
        with self._lock:
            if self.enabled and self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
            self._width = 0


@contextmanager
def activity(label: str, stream=None, enabled: bool | None = None, every: float = 1.0):
    """A long task (a Verilator build, a simulation, a compile): ``label, elapsed`` redrawn every ``every``
    seconds while the block runs, on a terminal only; ``say`` changes the label as the task moves on."""
    progress = Progress(label, 0, stream, enabled)
    if not progress.enabled:
        yield progress
        return
    stop = threading.Event()

    def tick():
        while not stop.wait(every):
            with progress._lock:
                progress._draw(f"{progress.label}, {_clock(time.monotonic() - progress.start)}")

    thread = threading.Thread(target=tick, daemon=True)
    progress._draw(f"{label}, 0:00")
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()
        progress.close()
