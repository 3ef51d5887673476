"""The yosys command line hlsfuse runs, through pyosys (Yosys built as a Python extension: pip install pyosys):
``-V`` prints the version; ``-q -l LOG -s SCRIPT`` runs the script in the current folder, its log to LOG and not
to the console, and exits with status 1 on an error (Yosys's own exit, its ``ERROR:`` line in LOG). A run is a
process of its own (``python -m hlsfuse.synth.pyosys_cli``), as a native yosys's would be: an error or an
interrupt ends that process only."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from pyosys import libyosys as ys

    if argv == ["-V"]:
        print(ys.yosys_maybe_version())
        return 0
    if len(argv) != 5 or argv[:2] != ["-q", "-l"] or argv[3] != "-s":
        print("usage: python -m hlsfuse.synth.pyosys_cli -V | -q -l LOG -s SCRIPT", file=sys.stderr)
        return 2
    log, script = argv[2], argv[4]
    ys.run_pass(f"tee -q -o {log} script {script}", ys.Design())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
