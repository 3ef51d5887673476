"""The hlsfuse command line in a child process, for the tests that need a real one (exit codes, signals, a
terminal, a fresh interpreter's hash seed or memory); the others call ``hlsfuse.cli.main`` in the test's process.

    PYTHON_M                    ``python -m hlsfuse`` under this interpreter
    cli_env(command, **set)     this process's environment for ``command``, with the variables ``set``: a
                                command this interpreter runs imports hlsfuse from this checkout (PYTHONPATH), an
                                installed ``hlsfuse`` script from where it is installed
    run_cli(*args, ...)         ``hlsfuse ARGS`` run to its end: the CompletedProcess (returncode, and stdout and
                                stderr as text)
    start_cli(*args, ...)       ``hlsfuse ARGS`` started: the Popen (stdout and stderr piped, as text), to signal
                                (SIGINT at its default, whatever this process ignores)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["PYTHON_M", "cli_env", "run_cli", "start_cli"]

ROOT = Path(__file__).resolve().parents[1]
PYTHON_M = (sys.executable, "-m", "hlsfuse")


def cli_env(command=PYTHON_M, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if command[0] == sys.executable:
        env["PYTHONPATH"] = str(ROOT)
    env.update(variables)
    return env


def run_cli(*args, command=PYTHON_M, cwd=None, env: dict[str, str] | None = None, timeout: float | None = 120,
            stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
    """``command ARGS`` (``command``: ``python -m hlsfuse``, the installed script, or a wrapper that runs either);
    ``env`` defaults to ``cli_env(command)``; ``stderr`` may go to a terminal instead of a pipe."""
    return subprocess.run([*command, *map(str, args)], cwd=cwd, env=cli_env(command) if env is None else env,
                          stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=timeout)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(*args, cwd=None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The child gets SIGINT at its default, to be interrupted: a suite run as a background job passes SIG_IGN on,
    and Python keeps an ignored SIGINT ignored."""
    return subprocess.Popen([*PYTHON_M, *map(str, args)], cwd=cwd, env=cli_env() if env is None else env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
