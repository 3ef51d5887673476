"""The ``hlsfuse`` command: a thin layer over the Python API.

Each command is a module of this package with ``add_parser(subparsers) -> parser`` and
``run(args) -> int`` (the exit code), listed by ``commands()``. Exit codes:

    0    success (a simulation that PASSes)
    1    a simulation that FAILs or deadlocks
    2    a user error (an ``HlsfuseError``, an ``OSError`` on one of the user's files, a command
         line argparse refuses): one line ``hlsfuse: error: ...`` (``--debug`` adds the traceback)
    130  interrupted (SIGINT, Ctrl-C): one line ``hlsfuse: interrupted``; output folders are as before
    141  standard output closed early (``hlsfuse ... | head``): quietly, as Unix tools end on SIGPIPE
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from .. import __version__
from ..errors import HlsfuseError

__all__ = ["main", "commands"]

COMMANDS = ("check", "run", "fuse", "compile", "csim", "rtlsim", "synth", "explore", "convert")
"""The commands in the order of ``hlsfuse --help``; each is the module of this package of its name."""


def commands(names: tuple[str, ...] = COMMANDS) -> tuple:
    """The modules of the commands ``names`` (all by default); importing one imports the parts of
    the library it needs."""
    return tuple(importlib.import_module(f".{name}", __name__) for name in names)


class _Parser(argparse.ArgumentParser):
    """argparse's usage line, then the error line every hlsfuse error has; exit code 2."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"hlsfuse: error: {self.prog.removeprefix('hlsfuse ')}: {message}\n"
                  if self.prog != "hlsfuse" else f"hlsfuse: error: {message}\n")


def build_parser(names: tuple[str, ...] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of the commands ``names`` (all by default)."""
    parser = _Parser(
        prog="hlsfuse",
        description="Fuse dataflow graphs into streaming FPGA pipelines (Vitis HLS C++ and Verilog).",
    )
    parser.add_argument("--version", action="version", version=f"hlsfuse {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    for command in commands(names):
        sub = command.add_parser(subparsers)
        # --debug is accepted after the command too; SUPPRESS keeps the global value when absent
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        sub.set_defaults(command=command)
    return parser


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` runs when only ``--debug`` comes before it, else ``None`` (then the
    whole parser is needed: ``hlsfuse --help`` lists every command)."""
    for word in argv:
        if word != "--debug":
            return word if word in COMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = _named_command(argv)
    try:
        # the library's import: an interrupt here is one line too. A command given by name is
        # the only one imported, so that `hlsfuse fuse` starts without the code generators.
        parser = build_parser((named,) if named else COMMANDS)
    except KeyboardInterrupt:
        print("hlsfuse: interrupted", file=sys.stderr)
        return 130
    args = parser.parse_args(argv)
    try:
        return args.command.run(args)
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print("hlsfuse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of standard output is gone: say nothing more (Python would complain at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except MemoryError:
        if args.debug:
            traceback.print_exc()
        print(f"hlsfuse: error: {args.command.__name__.rsplit('.', 1)[-1]}: out of memory (the graph's tensors, "
              "or the frames asked for, do not fit in this machine's memory)", file=sys.stderr)
        return 2
    except (HlsfuseError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"hlsfuse: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
