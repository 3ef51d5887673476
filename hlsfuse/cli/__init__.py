"""The ``hlsfuse`` command: a thin layer over the Python API.

Each command is a module of this package with ``add_parser(subparsers) -> parser`` and
``run(args) -> int`` (the exit code), listed in ``COMMANDS``. A user error (an
``HlsfuseError``, or an ``OSError`` on one of the user's files) prints one line,
``hlsfuse: error: ...``, and exits with code 2; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from .. import __version__
from ..errors import HlsfuseError
from . import check, compile, convert, csim, fuse, rtlsim, run

__all__ = ["main", "COMMANDS"]

COMMANDS = (check, run, fuse, compile, csim, rtlsim, convert)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hlsfuse",
        description="Fuse dataflow graphs into streaming FPGA pipelines (Vitis HLS C++ and Verilog).",
    )
    parser.add_argument("--version", action="version", version=f"hlsfuse {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(metavar="COMMAND", required=True)
    for command in COMMANDS:
        sub = command.add_parser(commands)
        # --debug is accepted after the command too; SUPPRESS keeps the global value when absent
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        sub.set_defaults(command=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.command.run(args)
    except (HlsfuseError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"hlsfuse: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
