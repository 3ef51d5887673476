"""The plots and the page of ``hlsfuse explore`` (hlsfuse.explore.plots, hlsfuse.explore.page), drawn from a
real small sweep: the residual example on two boards and two DSP budgets, fused and unfused."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tiers import need

need("matplotlib")

from hlsfuse.boards import BOARDS  # noqa: E402
from hlsfuse.compile import plan_design  # noqa: E402
from hlsfuse.explore import plots  # noqa: E402
from hlsfuse.explore.evaluate import evaluate, install  # noqa: E402
from hlsfuse.explore.page import index_html  # noqa: E402
from hlsfuse.explore.points import compile_options, sweep, targets  # noqa: E402
from hlsfuse.fusion.report import to_dot  # noqa: E402
from hlsfuse.graph_json import graph_to_dict, load_graph  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BOARD_NAMES = ["pynq-z2", "ultra96v2"]
FIGURES = ("stages fifos fifo_bits cycles_per_frame bound_cycles latency frames_per_second multipliers dsp bram18 lut "
           "ff mac_utilization bottleneck").split()
HOSTILE = "<blink>&amp;\"x'$"  # a name as a user may write it: markup, an entity, quotes, a mathtext dollar


def _fronts(rows: list[dict]) -> None:
    """Fill the fields sweep.py adds: the two fronts and the rank of the front's points by area-delay product."""
    ok = [r for r in rows if r["status"] == "ok"]
    for r in rows:
        for key in FIGURES:  # an infeasible row has them all, as None
            r.setdefault(key, None)
        for flag, key in (("pareto_dsp", "dsp"), ("pareto_bram", "bram18"), ("pareto_lut", "lut")):
            r[flag] = r["status"] == "ok" and not any(
                o[key] <= r[key] and o["cycles_per_frame"] <= r["cycles_per_frame"]
                and (o[key], o["cycles_per_frame"]) != (r[key], r["cycles_per_frame"]) for o in ok)
        r.update(rank=None, measured_cycles=None, measured_ratio=None, bit_exact=None, flag="", max_error=None,
                 mean_error=None)
    front = sorted((r for r in ok if r["pareto_dsp"] or r["pareto_bram"]),
                   key=lambda r: (r["cycles_per_frame"] * max(r["dsp"], 1), r["id"]))
    for k, r in enumerate(front, 1):
        r["rank"] = k


@pytest.fixture(scope="module")
def sweep_data():
    """(summary, reports, fusion_dot) of a real sweep; two points carry made-up measurements, one flagged."""
    graph = load_graph(ROOT / "examples" / "residual.json")
    install({"residual": graph_to_dict(graph)})
    space = sweep(["fpga", "unfused"], targets(BOARD_NAMES, [1, 16], "pynq-z2", None, None, None), [None], [None])
    results = [evaluate("residual", p) for p in space]
    rows = [r["row"] for r in results]
    _fronts(rows)
    reports = {r["row"]["id"]: r["report"] for r in results if r["report"] is not None}
    ranked = sorted((r for r in rows if r["rank"]), key=lambda r: r["rank"])
    for r, factor, flag in ((ranked[0], 1.02, ""), (ranked[-1], 1.21, "measured 21% above the model")):
        r.update(measured_cycles=r["cycles_per_frame"] * factor, measured_ratio=factor, bit_exact=not flag, flag=flag)
    chosen = next(r for r in rows if r["id"] == "fpga_pynq-z2")
    point = next(p for p in space if p.id == chosen["id"])
    dot = to_dot(plan_design(graph, compile_options(point)).fusion, graph)
    boards = [{"name": b.board, "part": b.part, "clock_ns": b.clock, "dsp": b.dsp, "bram18": b.bram18,
               "lut": b.lut}
              for b in map(BOARDS.get, BOARD_NAMES)]
    summary = {"graph": "residual", "source": "examples/residual.json", "command": "hlsfuse explore residual.json",
               "boards": boards, "chosen": chosen["id"], "points": rows}
    assert {r["status"] for r in rows} == {"ok", "infeasible"}
    return summary, reports, dot


def _render(tmp: Path, summary, reports, dot) -> tuple[plots.Figures, str]:
    tmp.mkdir(exist_ok=True)
    figures = plots.render(summary, reports, dot, tmp)
    html = index_html(summary, reports, figures, tmp)
    (tmp / "index.html").write_text(html, encoding="utf-8")
    return figures, html


def _check_files(folder: Path, figures: plots.Figures) -> None:
    for plot in figures.plots:
        for name in plot.files:
            data = (folder / name).read_bytes()
            if name.endswith(".png"):
                assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82"), name
            else:
                assert name.endswith(".svg") and b"<svg" in data[:2000] and data.rstrip().endswith(b"</svg>"), name


def test_every_plot_is_written_and_valid(sweep_data, tmp_path):
    figures, html = _render(tmp_path, *sweep_data)
    stems = [p.stem for p in figures.plots]
    assert stems[:6] == ["pareto_dsp", "pareto_bram", "pareto_lut", "stages", "resources", "verify"]
    _check_files(tmp_path, figures)
    assert html.count("<img ") == len(figures.plots) and "data:image/png;base64," in html
    assert "http://" not in html and "https://" not in html  # self-contained
    dsp = figures.plots[0]
    assert re.fullmatch(r"The cycles-vs-DSPs front holds \d of 6 fitting points; the fastest point that "
                        r"fits takes \(cycles per frame\) pynq-z2 [\d,]+, ultra96v2 [\d,]+; 2 infeasible points are "
                        r"not drawn\.", dsp.caption), dsp.caption
    assert figures.plots[2].caption.startswith("The cycles-vs-LUTs front holds ")
    assert figures.plots[3].caption.startswith("fpga_pynq-z2 has ")
    assert "1 is flagged" in figures.plots[5].caption
    assert 'class="chosen' in html and 'class="bottleneck"' in html and 'class="flagged' in html
    assert "--fold " + str(tmp_path / "points" / "fpga_pynq-z2" / "fold.json") in html
    assert "measured 21% above the model" in html


def test_output_is_byte_identical(sweep_data, tmp_path):
    figures, html = _render(tmp_path, *sweep_data)
    first = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    _, again = _render(tmp_path, *sweep_data)
    assert again == html
    assert {f.name: f.read_bytes() for f in tmp_path.iterdir()} == first
    assert len(first) == 1 + sum(len(p.files) for p in figures.plots)


def test_user_strings_are_escaped(sweep_data, tmp_path):
    summary, reports, dot = copy.deepcopy(sweep_data)
    chosen = summary["chosen"]
    summary["graph"] = HOSTILE
    summary["command"] = f"hlsfuse explore '{HOSTILE}'"
    reports[chosen]["stages"][0]["name"] = HOSTILE
    reports[chosen]["stages"][0]["nodes"] = [HOSTILE]
    bad = next(r for r in summary["points"] if r["status"] == "infeasible")
    bad["message"] = f"node '{HOSTILE}' <script>alert(1)</script>"
    figures, html = _render(tmp_path, summary, reports, dot)
    _check_files(tmp_path, figures)
    assert HOSTILE not in html and "<blink>" not in html and "<script>alert" not in html
    escaped = "&lt;blink&gt;&amp;amp;&#34;x&#39;$"
    assert html.count(escaped) >= 4  # the title, the heading, the command, the stage table (name and nodes)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_no_point_fits(sweep_data, tmp_path):
    summary, reports, _ = copy.deepcopy(sweep_data)
    bad = [r for r in summary["points"] if r["status"] == "infeasible"][0]
    summary["points"] = [bad]
    summary["chosen"] = None
    figures, html = _render(tmp_path, summary, {}, None)
    assert figures.plots == ()
    assert figures.notes == ("no point fits its budget (1 infeasible): there is no front to plot",
                             "no point was chosen: the stage plots are left out")
    assert [f.name for f in tmp_path.iterdir()] == ["index.html"]
    assert "No plot was drawn." in html and "No point is on a front." in html and "no point fits" in html
    assert bad["message"].split(":")[0] in html


def test_single_point_without_dsp_or_bram(sweep_data, tmp_path):
    """One point, with no MAC stage and no BRAM: the log axes keep it (symmetric log, 0 at the left)."""
    summary, reports, dot = copy.deepcopy(sweep_data)
    row = next(r for r in summary["points"] if r["id"] == summary["chosen"])
    row.update(dsp=0, bram18=0, measured_cycles=None, flag="")
    summary["points"] = [row]
    figures, html = _render(tmp_path, summary, reports, dot)
    _check_files(tmp_path, figures)
    assert [p.stem for p in figures.plots][:5] == ["pareto_dsp", "pareto_bram", "pareto_lut", "stages", "resources"]
    assert "verify" not in [p.stem for p in figures.plots]
    assert figures.plots[0].caption.startswith("The cycles-vs-DSPs front holds 1 of 1 fitting point; ")
    assert figures.plots[0].caption.endswith("; 1 point with no DSPs is drawn at 0.")
    assert figures.plots[1].caption.endswith("; 1 point with no BRAM18s is drawn at 0.")


def test_without_dot_a_note_replaces_the_fusion_graph(sweep_data, tmp_path, monkeypatch):
    monkeypatch.setattr(plots.shutil, "which", lambda name: None)
    figures, html = _render(tmp_path, *sweep_data)
    assert plots.NO_DOT in figures.notes and "fusion" not in [p.stem for p in figures.plots]
    assert not (tmp_path / "fusion.svg").exists()
    assert "Graphviz&#39;s dot is not installed" in html


@pytest.mark.dot
def test_fusion_graph_is_drawn(sweep_data, tmp_path):
    figures, html = _render(tmp_path, *sweep_data)
    fusion = figures.plots[-1]
    assert fusion.stem == "fusion" and fusion.files == ("fusion.svg",)
    svg = (tmp_path / "fusion.svg").read_text()
    assert "<svg" in svg and "conv1" in svg  # a node of the residual graph
    assert fusion.caption.startswith("How fpga_pynq-z2 fuses the graph: ")
    assert "data:image/svg+xml;base64," in html


@pytest.mark.chromium
def test_every_image_loads_in_chromium(sweep_data, tmp_path):
    out = tmp_path / "dir"
    figures, _ = _render(out, *sweep_data)
    n = len(figures.plots)
    assert n > 0
    done = subprocess.run(
        [shutil.which("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", (out / "index.html").as_uri()],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f'data-images="{n}/{n}"' in done.stdout, re.findall(r"<body[^>]*>", done.stdout)
