"""The package's imports run one way: each module imports only from its own room (a
top-level subpackage, with its own subpackages: ``_loaders/inspect/``, ...) and lower
floors (at runtime and under TYPE_CHECKING alike), nothing below the facades names Job,
Workspace or Comparison, and only the UI imports widget libraries. Inside a room the
imports run one way too: no two modules, and no two of its subpackages, import each other
(through any chain).

The floors, low to high (ARCHITECTURE.md explains each):
``_types``/``_errors``/``_files`` → ``_present`` → ``_store`` → ``_annotations`` → ``_loaders`` →
``_metrics`` →
``_behaviour`` → ``_buckets`` → ``_compare`` → ``_runs`` → ``_datasets`` → ``_export`` → ``_ui`` → the facades
``_job`` → ``_comparison`` → ``_run`` → ``_workspace`` → ``__init__``, and above them the command line
``_cli`` → ``__main__``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envloop_nb"

FLOORS: list[tuple[str, ...]] = [
    ("_types", "_errors", "_options", "_files"),
    ("_present",),
    ("_store",),
    ("_annotations",),
    ("_loaders",),
    ("_metrics",),
    ("_behaviour",),
    ("_buckets",),
    ("_compare",),
    ("_runs",),
    ("_datasets",),
    ("_experiments",),
    ("_export",),
    ("_ui",),
    ("_job",),
    ("_experiment",),
    ("_comparison",),
    ("_baseline",),
    ("_run",),
    ("_workspace",),
    ("__init__",),
    ("_cli",),
    ("__main__",),
]
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
FACADE_NAMES = {"Job", "Workspace", "Comparison"}
#: Third-party imports allowed only in these rooms. ``_present`` may make the one
#: anywidget a chart displays with (``_present/chart_library.py``: altair's own
#: ``JupyterChart`` is an anywidget already); panels and controls stay in ``_ui``.
ONLY_IN = {"ipywidgets": {"_ui"}, "anywidget": {"_ui", "_present"}, "openpyxl": {"_export"}}


def _room(path: Path) -> str:
    """The top-level module or subpackage a file belongs to (a file of a subpackage of a
    room, ``_loaders/inspect/zip.py``, belongs to the room: ``_loaders``)."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _module(path: Path) -> list[str]:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = ["envloop_nb", *rel.parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, absolute module, imported names)`` of every import in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module(path)
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target, [a.name for a in node.names]))
    return out


def _target_room(module: str, names: list[str]) -> list[str]:
    parts = module.split(".")
    if parts[0] != "envloop_nb":
        return []
    if len(parts) == 1:  # from envloop_nb import x / from . import x
        return [n for n in names] if names else ["__init__"]
    return [parts[1]]


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        room = _room(path)
        assert room in FLOOR, f"{path.relative_to(PACKAGE)} is in no floor: add it to FLOORS"
        for line, module, names in _imports(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            top = module.split(".")[0]
            if top in ONLY_IN and room not in ONLY_IN[top]:
                found.append(f"{where}: imports {top} (only {sorted(ONLY_IN[top])} may)")
            for target in _target_room(module, names):
                if target not in FLOOR:
                    found.append(f"{where}: imports envloop_nb.{target}, which is in no floor")
                    continue
                if target != room and FLOOR[target] >= FLOOR[room]:
                    found.append(
                        f"{where}: {room} (floor {FLOOR[room]}) imports {target} "
                        f"(floor {FLOOR[target]}): imports must run down"
                    )
            if FLOOR[room] < FLOOR["_job"] and module.startswith("envloop_nb"):
                named = FACADE_NAMES & set(names)
                if named:
                    found.append(f"{where}: {room} names the facade {sorted(named)}")
    return found


def _in_fresh_process(function: str) -> list[str]:
    """Run one checker of this module in a new interpreter.

    CPython 3.11's ``ast.parse`` can fail with "AST constructor recursion depth mismatch"
    in a process that earlier caught a RecursionError (the bad-input tests do, on purpose),
    so the import graph is read in a process of its own.
    """
    code = f"import json, tests.test_layers as t; print(json.dumps(t.{function}()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: list[str] = json.loads(done.stdout)
    return result


def test_imports_run_down_the_floors() -> None:
    assert _in_fresh_process("violations") == []


def private_crossings() -> list[str]:
    """``from .._metrics.counts import _helper`` is refused: rooms share public names."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        room = _room(path)
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "envloop_nb" or len(parts) < 2 or parts[1] == room:
                continue
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            if private:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {private} from {module}")
    return found


def test_no_private_name_crosses_a_subpackage() -> None:
    assert _in_fresh_process("private_crossings") == []


@pytest.mark.parametrize("limit", [600])
def test_no_logic_module_is_a_warehouse(limit: int) -> None:
    """Modules stay under ~600 lines; the facades (which only delegate) are exempt."""
    big = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if _room(path) in ("_job", "_comparison", "_baseline", "_run", "_workspace", "__init__"):
            continue
        lines = len(path.read_text().splitlines())
        if lines > limit:
            big.append(f"{path.relative_to(PACKAGE.parent)}: {lines} lines")
    assert big == []


def test_the_rule_catches_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: an upward import and a facade named in a low floor are reported."""
    fake = tmp_path / "envloop_nb"
    (fake / "_metrics").mkdir(parents=True)
    (fake / "_metrics" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .._job import Job\n"
    )
    (fake / "_ui").mkdir()
    (fake / "_ui" / "ok.py").write_text("import ipywidgets\nfrom .._metrics import bad\n")
    (fake / "_present.py").write_text("import openpyxl\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    found = violations()
    floor = f"_metrics (floor {FLOOR['_metrics']}) imports _job (floor {FLOOR['_job']})"
    assert any(floor in v for v in found)
    assert any("names the facade ['Job']" in v for v in found)
    assert any("imports openpyxl" in v for v in found)
    assert not any("_ui/ok.py" in v for v in found)


#: Import circles inside a room that are known and not yet ended (each a set of modules):
#: a summary or an interval of an lm-eval results job is made by ``lm_eval_results`` on
#: ``JobSummary`` and ``Interval``, which dispatch to it.
KNOWN_CIRCLES: list[set[str]] = [
    {
        "envloop_nb._metrics.lm_eval_results",
        "envloop_nb._metrics.summary",
    },
]


def _graph(depth: int | None = None) -> dict[str, set[str]]:
    """Imports between the package's modules within one room, every import counted (at
    the top, inside a function, under TYPE_CHECKING). With ``depth``, modules are merged
    into their package of that many parts (3: ``envloop_nb._loaders.inspect``)."""
    paths = {".".join(_module(p)): p for p in sorted(PACKAGE.rglob("*.py"))}

    def node(module: str) -> str:
        return module if depth is None else ".".join(module.split(".")[:depth])

    graph: dict[str, set[str]] = {}
    for here, path in paths.items():
        room = _room(path)
        edges = graph.setdefault(node(here), set())
        for _, module, names in _imports(path):
            # ``from . import zip`` imports a module; ``from . import load_sources`` a name
            targets = [t for t in (f"{module}.{n}" for n in names) if t in paths]
            for target in targets or ([module] if module in paths else []):
                if _room(paths[target]) == room and node(target) != node(here):
                    edges.add(node(target))
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(group)
    return found


def import_circles() -> list[str]:
    """Modules of one room importing each other (directly or through others), then
    subpackages of one room doing so (``_loaders/inspect`` ↔ ``_loaders/tables``)."""
    found = _circles(_graph()) + _circles(_graph(depth=3))
    unique = {" <-> ".join(sorted(c)) for c in found if c not in KNOWN_CIRCLES}
    return sorted(unique)


def test_no_import_circle_inside_a_room() -> None:
    assert _in_fresh_process("import_circles") == []


def test_the_circle_check_catches_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: two modules of a room importing each other, one of them inside
    a function, are reported; so are two subpackages of a room through their modules."""
    fake = tmp_path / "envloop_nb"
    (fake / "_store").mkdir(parents=True)
    (fake / "_store" / "a.py").write_text("from .b import x\n")
    (fake / "_store" / "b.py").write_text("def x() -> None:\n    from .a import y\n")
    for sub, other in (("one", "two"), ("two", "one")):
        (fake / "_loaders" / sub).mkdir(parents=True)
        (fake / "_loaders" / sub / "m.py").write_text(f"from ..{other} import n\n")
        (fake / "_loaders" / sub / "n.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    found = import_circles()
    assert "envloop_nb._store.a <-> envloop_nb._store.b" in found
    assert "envloop_nb._loaders.one <-> envloop_nb._loaders.two" in found
