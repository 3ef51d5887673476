"""``hlsfuse synth OUT``: synthesize the compiled Verilog with Yosys and compare it with the resource model."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import HlsfuseError
from ..fileio import write_atomic
from ..outdir import amend
from ..progress import Progress
from ..synth import FAMILIES, synth, table, to_json, with_section
from .common import positive_int

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "synth",
        help="synthesize the compiled Verilog with Yosys and compare it with the resource model",
        description="Synthesize OUT/verilog with Yosys (synth_xilinx for the family of the design's part), one "
        "stage module per job and then the top (its FIFOs), each cached by the hash of what it reads. Prints per "
        "stage and in total the model's DSP, BRAM18, LUTRAM, LUT and FF against Yosys's cells, the logic depth of "
        "each stage's critical path, and names every stage whose DSP or BRAM18 count differs from the model "
        "(exit 1 then). The comparison is kept with the design: OUT/synth.json and a section of OUT/report.md. "
        "Needs Yosys 0.70 or newer (pip install pyosys).",
    )
    parser.add_argument("out", metavar="OUT", help="folder written by hlsfuse compile --target verilog (or all)")
    parser.add_argument("--family", choices=FAMILIES,
                        help="synth_xilinx -family (default: from the design's part: xc7, xcu or xcup)")
    parser.add_argument("-j", "--jobs", type=positive_int, default=2, metavar="N",
                        help="stages synthesized side by side (default 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    parser.add_argument("--allow-edits", action="store_true",
                        help="synthesize the files as they are, even if they changed since hlsfuse compile wrote them")
    return parser


def run(args: argparse.Namespace) -> int:
    progress = Progress("synth", 0)
    try:
        def done(name: str, count: int, total: int) -> None:
            progress.total = total
            progress.update(count, note=name)

        progress.say("synth (Yosys)")
        progress.update(0)
        result = synth(args.out, family=args.family, jobs=args.jobs, allow_edits=args.allow_edits, on_done=done)
    finally:
        progress.close()
    document = json.dumps(to_json(result), indent=1) + "\n"
    if result.failed:  # the others' table, the JSON if asked for; OUT keeps its comparison (if any) as it was
        if args.json:
            write_atomic(args.json, document)
        print(table(result), end="")
        (name, why), more = result.failed[0], len(result.failed) - 1
        raise HlsfuseError(f"not synthesized: stage {name}{f' and {more} more' if more else ''} (the table has the "
                           f"others; OUT/synth.json unchanged): {why}")
    report = Path(args.out) / "report.md"
    try:
        markdown = report.read_text(encoding="utf-8")
    except OSError:
        markdown = ""  # a folder compiled before report.md existed: the section alone
    amend(args.out, {"synth.json": document, "report.md": with_section(markdown, result)})
    if args.json:
        write_atomic(args.json, document)
    print(table(result), end="")
    return 1 if result.mismatches else 0
