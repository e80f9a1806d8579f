"""Standalone HTML reports, checked without a browser (the offline rendering in Chromium
with the network blocked is in ``tests/test_browser.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._present.report_html import ReportSection, report_html
from tests.conftest import THREE_TASKS

ROOT = Path(__file__).resolve().parent.parent
RULES = enb.BucketRules(
    [enb.Bucket("hard", 0, 0.25), enb.Bucket("medium", 0.25, 0.75), enb.Bucket("easy", 0.75, 1.01)]
)


def test_job_report_holds_the_panels_numbers(tmp_path: Path) -> None:
    job = enb.open().load(ROOT / "sample_data" / "base.json")
    out = job.export_html(tmp_path / "job.html", rules=RULES, hard_cases=10)
    assert out.sections == ("Summary", "Job", "Inference configuration and consumption", "Charts",
                            "By subset and dimension", "Diagnosis", "Buckets", "Hard cases")  # fmt: skip
    assert out.charts == 3 and out.bytes < 10_000_000
    text = out.path.read_text(encoding="utf-8")
    assert "767/800 attempts scored" in text and "169/200 members complete" in text
    assert "Buckets of job_base on pass_rate" in text
    usage = job.consumption().iloc[0]
    assert f"{int(usage['input_tokens']):,}" in text and "787 of 797 attempts" in text
    assert "TEMPERATURE" in text and "they open with 3 different system messages" in text
    assert text.count('data-chart="') == 3
    assert "the 10 tasks with the lowest pass rate of 200" in text
    # self-contained: no script or stylesheet is loaded from anywhere, and the page forbids it
    assert not re.search(r"<(script|link)[^>]+(src|href)=", text)
    assert "default-src 'none'" in text


def test_experiment_report(tmp_path: Path) -> None:
    exp = enb.open().load(ROOT / "sample_data" / "experiments" / "ops-helper.json")
    out = exp.export_html(tmp_path / "exp.html", cases=5)
    text = out.path.read_text(encoding="utf-8")
    assert out.sections == ("Summary", "Cases", "Corrections") and out.charts == 1
    assert "20/24 rows counted" in text and "the first 5 of 12 cases" in text
    assert "Judge penalised brevity wrongly." in text


def test_text_is_escaped() -> None:
    out = report_html(
        "<script>alert(1)</script>", [ReportSection("a <b>", "<i>ours</i>", note="<x>")], bundle=""
    )
    assert "<script>alert(1)</script>" not in out and "&lt;script&gt;" in out
    assert "<i>ours</i>" in out and "&lt;x&gt;" in out
    # chart data cannot end the script element it sits in
    spec = {"data": {"values": [{"t": "</script><script>alert(2)</script>"}]}, "mark": "point"}
    out = report_html("t", [ReportSection("c", charts=(spec,))], bundle="")
    assert "</script><script>alert(2)" not in out


def test_comparison_report_marks_incomparable_jobs(tmp_path: Path) -> None:
    ws = enb.open()
    base = ws.load(ROOT / "sample_data" / "base.json")
    other = ws.load(ROOT / "sample_data" / "other-revision.json")
    out = ws.compare([base, other]).export_html(tmp_path / "cmp.html")
    text = out.path.read_text(encoding="utf-8")
    assert out.sections[:4] == ("Guard", "Leaderboard", "Charts", "By subset") and out.charts == 3
    assert "NOT comparable" in text and text.count("not comparable: dataset") >= 3
    assert "not assessed: jobs not comparable" in text


def test_the_vega_bundle_is_built_once_and_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Kept per process and in the user's cache folder; a file cut short is rebuilt."""
    from envloop_nb._present.js_cache import _BUNDLE_END as _END
    from envloop_nb._present.report_html import vega_bundle

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    vega_bundle.cache_clear()
    fresh = vega_bundle()
    (kept,) = (tmp_path / "envloop_nb").glob("vega-embed-*.js")
    assert kept.read_text(encoding="utf-8").startswith(fresh) and "</script" not in fresh
    vega_bundle.cache_clear()
    assert vega_bundle() == fresh  # read back
    kept.write_text(fresh[: len(fresh) // 2], encoding="utf-8")  # a write cut short
    vega_bundle.cache_clear()
    assert vega_bundle() == fresh  # rebuilt, and the file mended
    assert kept.read_text(encoding="utf-8").removesuffix(_END) == fresh
    vega_bundle.cache_clear()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no" / "such"))
    (tmp_path / "no").write_text("a file, so the folder cannot be made")
    assert vega_bundle() == fresh  # an unwritable cache is skipped
    vega_bundle.cache_clear()


def _html_exports() -> dict[str, Any]:
    ws = enb.open()
    job = ws.load(ROOT / "sample_data" / "base.json")
    other = ws.load(THREE_TASKS)
    exp = ws.load(ROOT / "sample_data" / "experiments" / "ops-helper.json")
    return {
        "job": job.export_html,
        "experiment": exp.export_html,
        "comparison": ws.compare([job, other]).export_html,
    }


@pytest.mark.parametrize(
    ("kind", "name"),
    [("job", "a\nb.html"), ("experiment", "tab\there.html"), ("comparison", "bell\x07.html"),
     ("experiment", "del\x7f.html"), ("experiment", "sep\u2028.html")],
)  # fmt: skip
def test_a_report_name_with_a_control_character_is_refused(
    tmp_path: Path, kind: str, name: str
) -> None:
    """(It wrote a file named with a newline.)"""
    export = _html_exports()[kind]
    with pytest.raises(ValueError, match="control character") as info:
        export(tmp_path / name)
    assert repr(str(tmp_path / name)) in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["job", "experiment", "comparison"])
def test_a_report_onto_a_folder_is_refused_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    """(It wrote ``report.html.partial-write`` beside the folder, left it there, and
    raised IsADirectoryError about that file.)"""
    export = _html_exports()[kind]
    (tmp_path / "report.html").mkdir()
    with pytest.raises(IsADirectoryError) as info:
        export(tmp_path / "report.html")
    assert str(info.value) == (
        f"{tmp_path / 'report.html'} is a folder: give the path of a file to write (a new "
        "name, or a name inside that folder)"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert list((tmp_path / "report.html").iterdir()) == []


def test_a_report_that_fails_while_writing_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = _html_exports()["experiment"]

    def full_disk(self: Path, *args: Any, **kwargs: Any) -> int:
        self.open("w").write("<html>half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError, match="No space left"):
        export(tmp_path / "exp.html")
    assert list(tmp_path.iterdir()) == []


# -- issue 37: the reports' defects ------------------------------------------------------------
SNAKE = re.compile(r"^[a-z]+(_[a-z0-9]+)+$")
RAW_FRACTION = re.compile(r"(?<![\d.$])-?0\.\d{4,}")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The job reports of base, running and graded and the comparison report of base,
    sft-step1000 and other-revision (not comparable), as text."""
    ws = enb.open()
    out = tmp_path_factory.mktemp("reports")
    jobs = {n: ws.load(ROOT / "sample_data" / f) for n, f in (
        ("base", "base.json"), ("running", "running.json"), ("graded", "graded.json"),
        ("sft", "sft-step1000.jsonl.gz"), ("other", "other-revision.json"))}  # fmt: skip
    texts = {}
    for name in ("base", "running", "graded"):
        texts[name] = jobs[name].export_html(out / f"{name}.html").path.read_text("utf-8")
    cmp = ws.compare([jobs["base"], jobs["sft"], jobs["other"]], baseline=jobs["base"])
    texts["compare"] = cmp.export_html(out / "compare.html").path.read_text("utf-8")
    return texts


def _body(text: str) -> str:
    return text.split("<body>", 1)[1].split('<script type="text/javascript">', 1)[0]


def _cells(text: str, tag: str) -> list[str]:
    found = re.findall(rf"<{tag}\b[^>]*>(.*?)</{tag}>", _body(text), flags=re.S)
    return [re.sub(r"<[^>]+>", " ", c).strip() for c in found]


@pytest.mark.parametrize("name", ["base", "running", "graded", "compare"])
def test_report_tables_have_human_headers(reports: dict[str, str], name: str) -> None:
    """Raw column names (``complete_members``, ``score_low``) were the headers."""
    heads = _cells(reports[name], "th")
    assert heads and not [h for h in heads if SNAKE.match(h)]


@pytest.mark.parametrize("name", ["base", "running", "graded", "compare"])
def test_report_numbers_have_one_format(reports: dict[str, str], name: str) -> None:
    """Interval bounds printed as raw fractions (``-0.02273``) beside ``8.3%``; a
    negative number carries a real minus."""
    cells = _cells(reports[name], "td")
    assert not [c for c in cells if RAW_FRACTION.search(c)]
    assert not [c for c in cells if re.search(r"(^|[\s\[(])-\d", c)]


def test_comparison_tables_fit_the_page(reports: dict[str, str]) -> None:
    """The leaderboard (15 columns) and the paired statistics (18) ran off the page."""
    body = _body(reports["compare"])
    sections = dict(re.findall(r"<h2>(.*?)</h2>(.*?)</section>", body, flags=re.S))
    for title, most in (("Leaderboard", 10), ("Paired statistics", 7)):
        heads = re.findall(r"<th\b", sections[title].split("</tr>", 1)[0])
        assert len(heads) <= most, title
        assert "enb-table-scroll" in sections[title]  # wider still: it scrolls, not the page
    assert "Verdict" in sections["Paired statistics"]
    assert "+11.2 pts" in sections["Paired statistics"]


def test_no_section_repeats_its_heading(reports: dict[str, str]) -> None:
    """ "Job" over "Job", "Diagnosis" over "Diagnosis"."""
    for name in ("base", "running", "graded"):
        for title, body in re.findall(r"<h2>(.*?)</h2>(.*?)</section>", reports[name], re.S):
            assert f"<h4>{title}</h4>" not in body, (name, title)


def test_running_job_slots_add_up(reports: dict[str, str]) -> None:
    """A running job's 267 undispatched slots were left out of the attempt slots."""
    part = reports["running"].split("Attempt slots", 1)[1].split("</table>", 1)[0]
    slots = dict(re.findall(r"<td>([^<]+)</td><td class=\"num\">([\d,]+)</td>", part))
    assert slots["not dispatched"] == "267"
    assert sum(int(v.replace(",", "")) for v in slots.values()) == 200 * 4


def test_graded_job_says_why_it_has_no_curve(reports: dict[str, str]) -> None:
    """The pass@k chart was drawn empty with no word why."""
    text = reports["graded"]
    assert "No pass@k / pass^k chart: the rewards are graded" in text
    assert "threshold=" in text and text.count('data-chart="') == 1


def test_hard_case_inputs_are_cut_at_a_word(reports: dict[str, str]) -> None:
    """Inputs were cut mid-word (``so that it p``) with no ellipsis."""
    part = reports["running"].split("lowest pass rate", 1)[1].split("</table>", 1)[0]
    inputs = [
        re.sub(r"<[^>]+>", "", row[-1])
        for row in (re.findall(r"<td[^>]*>(.*?)</td>", r) for r in part.split("<tr>")[2:])
    ]
    assert len(inputs) == 50
    assert "The test tests/test_cli.py::test_case_00 fails. Fix src/cli.py so that it…" in inputs
    for text in inputs:
        assert len(text) <= 80 and (text.endswith((".", "…", "?", ")")) or "error" in text), text


def test_consumption_table_is_styled(reports: dict[str, str]) -> None:
    """The consumption table stood outside the panel's styles (no rules, centred heads)."""
    section = reports["base"].split("<h2>Inference configuration and consumption</h2>", 1)[1]
    assert section.split("enb-consumption", 1)[0].count('class="enb-panel"') == 1
