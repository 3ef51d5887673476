"""Running the simulators' tools (g++, Verilator, the built binaries) so that an interrupt stops them at once.

A build starts a tree of processes (Verilator runs make, which runs g++ several at a time), and
killing the direct child leaves the others running. Each tool therefore runs in a process group of
its own (``start_new_session``): a Ctrl-C reaches hlsfuse only, which then kills the whole group and
reports the interrupt (exit 130, ``hlsfuse.cli``); a timeout does the same. The caller's cleanup
(deleting a scratch build folder) runs after the group is gone, so nothing writes into it any more.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence

__all__ = ["run"]


def run(cmd: Sequence[str], cwd=None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` in a process group that any exception (an
    interrupt, ``subprocess.TimeoutExpired``) kills whole before it propagates."""
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
