"""``hlsfuse fuse``: the acceptance example, the output forms and the errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hlsfuse import fuse, load_graph, save_graph
from hlsfuse.cli import main
from hlsfuse.fusion.report import to_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_residual_example_in_tvm_mode_fuses_each_conv_with_its_elementwise_tail_and_the_residual_add(capsys):
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--mode", "tvm", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "tvm"
    assert [(g["nodes"], g["anchor"]) for g in doc["groups"]] == [
        (["conv1", "bias1", "relu1"], "conv1"),
        (["conv2", "bias2", "add", "y"], "conv2"),
    ]
    assert doc["groups"][1]["inputs"] == ["relu1", "x"]  # the skip connection enters the second group
    assert doc["stats"]["tensors_on_chip"] == 5 and doc["stats"]["groups"] == 2


def test_json_is_the_plan_document_with_one_group_a_line(capsys):
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--json"]) == 0
    out = capsys.readouterr().out
    graph = load_graph(EXAMPLES / "residual.json")
    doc = to_json(fuse(graph), graph)
    assert json.loads(out) == doc
    lines = out.splitlines()
    assert lines[:2] == ["{", '  "graph": "residual",'] and lines[-1] == "}"
    groups = [json.loads(line.strip().rstrip(",")) for line in lines if line.startswith('    {"id": ')]
    assert groups == doc["groups"]
    assert '  "stats": {' in lines and '    "ops": 7,' in lines  # the rest is indented as json.dumps(indent=2)


@pytest.mark.parametrize("tail", ['}, {"id": 9', '"}, {"id": ', '\\}, {"id": ', "}\n{"])
def test_json_keeps_one_group_a_line_whatever_the_names_hold(tail, tmp_path, capsys):
    # names holding the text between two groups (or backslashes, quotes, a newline before it)
    data = json.loads((EXAMPLES / "residual.json").read_text())
    renamed = {node["name"]: node["name"] + tail for node in data["nodes"]}
    for node in data["nodes"]:
        node["name"] = renamed[node["name"]]
        node["inputs"] = [renamed.get(src, src) for src in node["inputs"]]
    data["outputs"] = [renamed[out] for out in data["outputs"]]
    path = tmp_path / "names.json"
    path.write_text(json.dumps(data))
    assert main(["fuse", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    graph = load_graph(path)
    doc = to_json(fuse(graph), graph)
    assert json.loads(out) == doc and any(tail in name for name in doc["groups"][0]["nodes"])
    groups = [json.loads(line.strip().rstrip(",")) for line in out.splitlines() if line.startswith('    {"id": ')]
    assert groups == doc["groups"]


def test_text_table_is_the_default(capsys):
    assert main(["fuse", str(EXAMPLES / "residual.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fusion plan of graph 'residual' (mode fpga, max depth 256, opt_level 2)\n")
    assert "conv2:conv2d bias2:bias_add add:add y:relu" in out
    assert "7 ops in 2 groups (2 fused, largest 4 ops)" in out


def test_options_reach_the_fuser(capsys):
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--max-depth", "2", "--json"]) == 0
    assert max(len(g["nodes"]) for g in json.loads(capsys.readouterr().out)["groups"]) == 2
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--opt-level", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["opt_level"] == 0 and len(doc["groups"]) == 7


def test_dot_file_is_written_and_not_overwritten_without_force(tmp_path, capsys):
    graph = save_graph(load_graph(EXAMPLES / "residual.json"), tmp_path / "g.json")
    dot = tmp_path / "g.dot"
    assert main(["fuse", str(graph), "--dot", str(dot)]) == 0
    assert capsys.readouterr().out.endswith(f"wrote {dot}\n")
    text = dot.read_text()
    assert text.count("subgraph cluster_g") == 2
    assert main(["fuse", str(graph), "--dot", str(dot), "--json"]) == 2
    assert capsys.readouterr().err == f"hlsfuse: error: {dot} already exists; pass --force to overwrite it\n"
    assert main(["fuse", str(graph), "--dot", str(dot), "--json", "--force"]) == 0
    json.loads(capsys.readouterr().out)  # stdout stays pure JSON when a drawing is written


def test_bad_max_depth_is_a_user_error(capsys):
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--max-depth", "0"]) == 2
    assert capsys.readouterr().err == "hlsfuse: error: max_fuse_depth must be a positive integer, not 0\n"


def test_unknown_mode_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fuse", str(EXAMPLES / "residual.json"), "--mode", "gpu"])
    assert exc.value.code == 2
    assert "invalid choice: 'gpu'" in capsys.readouterr().err


def test_docs_show_the_real_output_for_the_residual_example(capsys):
    text = (Path(__file__).resolve().parent.parent / "docs" / "fusion.md").read_text()
    (block,) = re.findall(r"```text\n\$ hlsfuse fuse examples/residual.json --mode tvm\n(.*?)```", text, re.S)
    assert main(["fuse", str(EXAMPLES / "residual.json"), "--mode", "tvm"]) == 0
    assert capsys.readouterr().out == block
