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
