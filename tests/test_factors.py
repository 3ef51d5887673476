"""One factor record (``lower.schedule.Factors``): fold.json, report.json and the stage table say the same of
every stage, and ``--fold fold.json`` rebuilds the design the file came from."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from hlsfuse.cli import main
from hlsfuse.lower.schedule import FOLDS

RESNET8 = Path(__file__).resolve().parents[1] / "examples" / "resnet8.json"


def compile_quietly(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["compile", *args]) == 0
    return out.getvalue()


@pytest.mark.parametrize("board", ["pynq-z2", "kv260", "zcu104"])
def test_fold_json_and_report_json_agree_on_every_factor_and_the_fold_rebuilds_the_design(tmp_path, board):
    table = compile_quietly(str(RESNET8), "-o", str(tmp_path / "a"), "--board", board, "--target", "hls")
    fold = json.loads((tmp_path / "a" / "fold.json").read_text())
    report = {s["name"]: s for s in json.loads((tmp_path / "a" / "report.json").read_text())["stages"]}
    folded = 0
    for node, entry in fold["fold"].items():
        stage = report[entry["stage"]]
        spelled = {k: entry[k] for k in FOLDS[stage["kind"]] if k in entry}
        assert spelled == {k: stage[k] for k in spelled}, (board, node)
        # a MAC stage's multiplier is spelled when it is not the default ("dsp")
        given = {k for k in FOLDS[stage["kind"]] if stage[k] is not None and (k, stage[k]) != ("multiplier", "dsp")}
        assert set(spelled) == given, (board, node)
        folded += any(v != 1 for k, v in spelled.items() if k != "simd")
        shown = next(line for line in table.splitlines() if line.split()[:1] == [entry["stage"]])
        for k, v in spelled.items():
            if k == "simd":
                assert f"simd {v}/{entry['products']}" in shown, shown
            elif v != 1:
                assert f"{k} {v}" in shown, shown
    assert folded, f"{board}: nothing folded beyond SIMD"
    # the design again, from its own fold.json: the same sources and the same report
    compile_quietly(str(RESNET8), "-o", str(tmp_path / "b"), "--board", board, "--fold",
                    str(tmp_path / "a" / "fold.json"), "--target", "hls")
    again = json.loads((tmp_path / "b" / "report.json").read_text())
    first = json.loads((tmp_path / "a" / "report.json").read_text())
    assert again["stages"] == first["stages"] and again["cycles_per_frame"] == first["cycles_per_frame"]
    for path in sorted((tmp_path / "a" / "hls").rglob("*")):
        if path.is_file():
            assert (tmp_path / "b" / "hls" / path.relative_to(tmp_path / "a" / "hls")).read_bytes() == \
                path.read_bytes(), path.name
