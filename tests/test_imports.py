"""Every module of hlsfuse imports on its own, and no modules of it import each other in a circle.

A circle (a imports b, which imports a, if only inside a function) makes its modules work or fail by
the order a program happens to import them in, and a module that imports only after another one
fails the first user who imports it alone. Both are checked:

    import_graph(folder)  the modules under a package folder, and the modules of it each one imports,
                          read with ast: every import statement, those inside functions too. Importing
                          a.b.c counts a.b and a.b.c (Python runs a package's __init__ before its
                          modules), but not the importer's own packages, which are running already.
    circles(graph)        its strongly connected components of more than one module (Tarjan)
    failing_alone(...)    the modules that raise when imported alone: one fresh interpreter loads the
                          package's dependencies (numpy, jinja2) and forks a child per module, which
                          imports it with nothing of the package loaded yet (seconds, not a minute)
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import hlsfuse

HLSFUSE = Path(hlsfuse.__file__).parent
DEPENDENCIES = ("numpy", "jinja2")  # pyproject.toml's [project] dependencies

ALONE = """
import importlib, os, sys, traceback
for name in filter(None, sys.argv[1].split(",")):
    importlib.import_module(name)
for module in sys.argv[2:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(module)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        print(module, flush=True)
"""


def _module_name(path: Path, folder: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(folder.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules) -> list[str]:
    """The dotted names ``node`` of ``module`` imports: a module, or a package and a name in it."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = module.split(".")
        base = parts[: len(parts) - node.level + (1 if is_package else 0)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package in ``folder`` it imports (see the module note)."""
    files = {_module_name(path, folder): path for path in sorted(folder.rglob("*.py"))}
    modules = {name for name, _ in files}
    graph = {}
    for (module, is_package), path in files.items():
        own = {".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 2)}
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported(module, is_package, node, modules):
                    parts = name.split(".")
                    for k in range(1, len(parts) + 1):
                        if ".".join(parts[:k]) in modules and ".".join(parts[:k]) not in own:
                            graph[module].add(".".join(parts[:k]))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules (sorted) that import each other in a circle, by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def failing_alone(folder: Path, modules, preload=DEPENDENCIES) -> tuple[list[str], str]:
    """(the ``modules`` of the package in ``folder`` that raise when imported alone, their tracebacks)."""
    path = os.pathsep.join(filter(None, [str(folder.parent), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", ALONE, ",".join(preload), *modules], env=env, cwd=folder.parent,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), done.stderr


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "pkg"
    folder.mkdir()
    for name, text in {"__init__.py": "", **files}.items():
        (folder / name).write_text(text)
    return folder


def test_no_modules_of_hlsfuse_import_each_other_in_a_circle():
    graph = import_graph(HLSFUSE)
    assert {"hlsfuse.sim.cache", "hlsfuse.reference"} <= graph["hlsfuse.sim.csim"]  # the imports are read
    assert circles(graph) == []


def test_every_module_of_hlsfuse_imports_alone():
    modules = sorted(m for m in import_graph(HLSFUSE) if m.split(".")[-1] != "__main__")  # __main__ runs the CLI
    assert len(modules) > 100 and "hlsfuse.frontend.onnx.precision" in modules
    failed, tracebacks = failing_alone(HLSFUSE, modules)
    assert failed == [], tracebacks


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    folder = _package(tmp_path, {
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from . import a\n    return a\n",
        "c.py": "import pkg.a\nfrom pkg import d\n",
        "d.py": "",
    })
    graph = import_graph(folder)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a", "pkg.d"}, "pkg.d": set()}
    assert circles(graph) == [["pkg.a", "pkg.b"]]


def test_a_package_init_counts_for_a_module_outside_it(tmp_path):
    folder = _package(tmp_path, {"x.py": "from .sub.y import Y\n"})
    (folder / "sub").mkdir()
    (folder / "sub" / "__init__.py").write_text("from ..x import X\n")
    (folder / "sub" / "y.py").write_text("Y = 1\n")
    assert circles(import_graph(folder)) == [["pkg.sub", "pkg.x"]]


def test_a_module_that_imports_only_after_another_one_is_found(tmp_path):
    folder = _package(tmp_path, {"a.py": "A = 1\n", "b.py": "import sys\nB = sys.modules['pkg.a'].A\n"})
    failed, tracebacks = failing_alone(folder, ["pkg.a", "pkg.b"], preload=())
    assert failed == ["pkg.b"] and "KeyError: 'pkg.a'" in tracebacks
