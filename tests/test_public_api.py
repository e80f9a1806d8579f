"""The public surface is explicit, sorted and importable."""

import envloop_nb as enb


def test_all_is_sorted_unique_and_importable() -> None:
    assert list(enb.__all__) == sorted(set(enb.__all__))
    for name in enb.__all__:
        assert getattr(enb, name) is not None, name


HEAVY = ("duckdb", "numpy", "pyarrow", "pandas", "polars", "scipy", "altair", "ipywidgets",
         "openpyxl", "jinja2", "vl_convert", "zstandard", "mlflow")  # fmt: skip


def _loaded_after(code: str) -> dict[str, list[str]]:
    """The envloop_nb modules and the heavy libraries loaded after ``code`` runs in a
    fresh interpreter."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys\n" + code + "\n"
        "print(json.dumps({'ours': sorted(m for m in sys.modules if m.startswith('envloop_nb')),"
        f" 'heavy': sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))}}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_loads_nothing_heavy() -> None:
    """``import envloop_nb`` loads the package alone: every public name is imported on
    first use (PEP 562), so the import takes milliseconds (it took 0.4–1.3 s: scipy,
    numpy, duckdb and the whole package were imported eagerly)."""
    loaded = _loaded_after("import envloop_nb")
    assert loaded == {"ours": ["envloop_nb"], "heavy": []}


def test_a_first_question_loads_only_what_it_uses() -> None:
    """Open, load, summary and curve need DuckDB and the frames, not the charts, the
    panels, the exports or scipy (loaded where intervals or tests are computed)."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "shared/formats/examples"
    loaded = _loaded_after(
        "import envloop_nb as enb\n"
        f"job = enb.open().load({str(example / 'three-tasks-two-attempts.json')!r})\n"
        "job.summary(); job.curve()"
    )
    assert set(loaded["heavy"]) == {"duckdb", "numpy", "pyarrow", "pandas"}
    assert loaded["heavy"] == sorted(loaded["heavy"])
    assert not [m for m in loaded["ours"] if m.startswith(("envloop_nb._ui", "envloop_nb._export"))]
    assert "envloop_nb._loaders.inspect.read" not in loaded["ours"]  # other formats wait too


def test_notebooks_use_only_the_public_api() -> None:
    """The notebooks teach the public surface: no ``envloop_nb._private`` imports."""
    import json
    import re
    from pathlib import Path

    private = re.compile(r"\benvloop_nb\._\w+|\bfrom\s+envloop_nb\s+import\s+_\w+")
    found = []
    for nb in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            hit = private.search("".join(cell["source"]))
            if cell["cell_type"] == "code" and hit:
                found.append(f"{nb.name} cell {i}: {hit.group()}")
    assert found == []
    assert "chart_widget" in enb.__all__  # the public way to put a chart in a layout
