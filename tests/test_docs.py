"""The documentation agrees with the code: every op in docs/ops.md as the registry has it, and the
example of docs/graph-format.md loads and runs."""

import json
import re
from pathlib import Path

import pytest

from hlsfuse import OPS, Pattern, graph_from_dict, reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def op_rows() -> dict[str, list[str]]:
    """The table rows of docs/ops.md by op name: [op, inputs, attributes, pattern kind, computes]."""
    rows = {}
    for line in (DOCS / "ops.md").read_text().splitlines():
        if m := re.match(r"\| `(\w+)` \|", line):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert m.group(1) not in rows, f"{m.group(1)} has two rows in docs/ops.md"
            rows[m.group(1)] = cells
    return rows


def test_every_op_has_a_row_and_every_row_an_op():
    rows = op_rows()
    assert sorted(set(OPS) - set(rows)) == [], "ops missing from docs/ops.md"
    assert sorted(set(rows) - set(OPS)) == [], "docs/ops.md lists ops the registry does not have"


@pytest.mark.parametrize("name", sorted(OPS))
def test_row_matches_the_registry(name):
    op = OPS[name]
    _, inputs, attrs, pattern, _ = op_rows()[name]
    assert re.findall(r"`(\w+)`", attrs) == [a.name for a in op.attrs]
    if op.inputs:
        assert inputs.startswith(", ".join(op.inputs))
    if name == "custom":
        assert "pattern" in pattern
    elif callable(op.pattern):
        assert pattern == "ELEMWISE / BROADCAST"
    else:
        assert pattern == op.pattern.name


def test_pattern_kinds_are_tvms():
    text = (DOCS / "ops.md").read_text()
    kinds = ", ".join(f"{p.name}={p.value}" for p in Pattern)
    assert kinds in " ".join(text.split())


def test_graph_format_example_loads_and_runs():
    text = (DOCS / "graph-format.md").read_text()
    (block,) = re.findall(r"```json\n(.*?)```", text, re.S)
    graph = graph_from_dict(json.loads(block), source="docs/graph-format.md")
    assert [n.name for n in graph.nodes] == ["conv", "bias", "relu", "pool"]
    outputs = reference.run(graph, reference.random_inputs(graph))
    assert outputs["pool"].shape == (1, 4, 4, 4)


def test_readme_python_example_runs(tmp_path, monkeypatch):
    readme = (DOCS.parent / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", readme, re.S)
    monkeypatch.chdir(tmp_path)  # it saves mlp.json
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "mlp.json").is_file()


def test_readme_links_point_to_files():
    readme = (DOCS.parent / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert links
    assert [link for link in links if not (DOCS.parent / link).exists()] == []
