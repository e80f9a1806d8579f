"""The package's imports run one way: each module imports only from its own subpackage
and lower floors (at runtime and under TYPE_CHECKING alike), nothing below the facades
names Job, Workspace or Comparison, and only the UI imports widget libraries.

The floors, low to high (ARCHITECTURE.md explains each):
``_types``/``_errors``/``_files`` → ``_present`` → ``_store`` → ``_annotations`` → ``_loaders`` →
``_metrics`` →
``_behaviour`` → ``_buckets`` → ``_compare`` → ``_datasets`` → ``_export`` → ``_ui`` → the facades
``_job`` → ``_comparison`` → ``_workspace`` → ``__init__``.
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
    ("_datasets",),
    ("_experiments",),
    ("_export",),
    ("_ui",),
    ("_job",),
    ("_experiment",),
    ("_comparison",),
    ("_baseline",),
    ("_workspace",),
    ("__init__",),
]
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
FACADE_NAMES = {"Job", "Workspace", "Comparison"}
#: Third-party imports allowed only in these rooms. ``_present`` may make the one
#: anywidget a chart displays with (``_present/chart_library.py``: altair's own
#: ``JupyterChart`` is an anywidget already); panels and controls stay in ``_ui``.
ONLY_IN = {"ipywidgets": {"_ui"}, "anywidget": {"_ui", "_present"}, "openpyxl": {"_export"}}


def _room(path: Path) -> str:
    """The top-level module or subpackage a file belongs to."""
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
        if _room(path) in ("_job", "_comparison", "_baseline", "_workspace", "__init__"):
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
