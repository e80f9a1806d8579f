"""The public surface is explicit, sorted and importable."""

import envloop_nb as enb


def test_all_is_sorted_unique_and_importable() -> None:
    assert list(enb.__all__) == sorted(set(enb.__all__))
    for name in enb.__all__:
        assert getattr(enb, name) is not None, name


def test_import_is_cheap() -> None:
    import subprocess
    import sys

    code = "import sys, envloop_nb; print(any(m in sys.modules for m in ('altair', 'ipywidgets', 'openpyxl')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


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
