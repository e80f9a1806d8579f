"""Users' type checkers see the package's types (PEP 561 ``py.typed``): a frame method's
return type follows ``frame=``, and a misspelled option is an error, not ``**options``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

USER_CODE = """
import envloop_nb as enb

ws = enb.open()
job = ws.load("x.json")
reveal_type(job.curve())
reveal_type(job.curve(frame="polars"))
reveal_type(job.attempts())
reveal_type(job.intervals(frame=None))
reveal_type(job.summary().score)
job.panel(threshhold=0.5)
job.export_xlsx("out.xlsx", sheet_per_buckets=True)
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = tmp_path_factory.mktemp("user")
    (folder / "user.py").write_text(USER_CODE)
    out, err, _status = api.run(
        [str(folder / "user.py"), "--no-incremental", "--cache-dir", str(folder / "cache"),
         "--follow-imports", "silent"]
    )  # fmt: skip
    assert not err, err
    return out.splitlines()


def _line(report: list[str], n: int) -> str:
    hits = [r for r in report if f"user.py:{n}:" in r]
    assert hits, report
    return " ".join(hits)


def test_frame_methods_return_the_frame_asked_for(report: list[str]) -> None:
    assert "pandas.core.frame.DataFrame" in _line(report, 6)
    assert "polars.dataframe.frame.DataFrame" in _line(report, 7)
    assert "pandas.core.frame.DataFrame" in _line(report, 8)
    assert "dict[str, envloop_nb._metrics.uncertainty.Interval]" in _line(report, 9)
    assert "float | None" in _line(report, 10)  # no score when nothing was scored


def test_a_misspelled_option_is_a_type_error(report: list[str]) -> None:
    assert 'Unexpected keyword argument "threshhold"' in _line(report, 11)
    assert 'Unexpected keyword argument "sheet_per_buckets"' in _line(report, 12)


def test_the_wheel_ships_its_types() -> None:
    import envloop_nb

    assert (Path(envloop_nb.__file__).parent / "py.typed").is_file()
