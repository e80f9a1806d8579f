"""A run told per subset — results-only files, one number per lm-eval task and none for the
whole run — in the panel, the report and the workbook alike: each task's best checkpoint,
its indistinguishable steps or why it has none, its smallest detectable change, the tests
and the noise band per task (``envloop_nb._export.run_export``, ``_present.run_html``,
``_present.run_charts``, ``_ui.run_panel``)."""

from __future__ import annotations

import html
from pathlib import Path

import openpyxl
import pytest

import envloop_nb as enb
from envloop_nb._export.run_export import run_headline, shown_by
from envloop_nb._present.display import header

TINY = Path(__file__).resolve().parent / "data" / "lm_eval" / "tiny_run"


@pytest.fixture(scope="module")
def tiny() -> enb.Run:
    ws = enb.open()
    return ws.run([ws.load(p) for p in sorted(TINY.glob("*.json"))])


def _headline_facts(text: str) -> None:
    assert "task_a <small>(acc)</small>" in text and "step <b>200</b>: <b>60.0%</b>" in text
    assert "indistinguishable: steps 200, 300" in text
    assert "step <b>200</b>: <b>18</b>" in text and "(lower is better)" in text
    assert (
        html.escape(
            "no best: the source does not say whether a higher or a lower mystery is better"
        )
        in text
    )
    assert "11.9 points" in text  # task_a: (z_.975 + z_.8)·√2·0.03 = 0.1189
    assert "3.962 ppl" in text  # task_b: (z_.975 + z_.8)·√2·1.0, in the metric's units


def test_the_report_tells_the_run_per_task(tiny: enb.Run, tmp_path: Path) -> None:
    assert shown_by(tiny.state) == "subset"
    report = tiny.export_html(tmp_path / "tiny.html")
    text = report.path.read_text(encoding="utf-8")
    _headline_facts(text)
    assert "one line per subset" in text
    assert "across all 9 tests (one row per pair of steps and group)" in text
    assert "beyond noise: step 200 is better than step 100" in text  # task_a, z = 4


def test_the_panel_shows_what_the_report_shows(tiny: enb.Run) -> None:
    panel = tiny.panel()
    assert panel.message.value == ""
    assert panel.headline.value.endswith(run_headline(tiny.state))  # under the title
    _headline_facts(panel.headline.value)
    assert "task_a" in panel.changes.value and "100 → 200" in panel.changes.value
    spec = panel.curve.chart.to_dict()
    layers = spec["spec"]["layer"]  # small multiples: one panel per task
    filters = [t.get("filter") for layer in layers for t in layer.get("transform", [])]
    assert "isValid(datum.band_low)" in filters and "isValid(datum.sig)" in filters
    rows = spec["datasets"][spec["data"]["name"]]
    band = next(r for r in rows if r["group"] == "task_a" and r["step"] == 200)
    assert band["band_low"] == pytest.approx(tiny.noise_band(by="subset").query(
        "group == 'task_a' and step == 200")["band_low"].iloc[0])  # fmt: skip
    assert band["sig"] == "up" and band["tone"] == "better"


def test_the_workbook_holds_the_same_per_task_numbers(tiny: enb.Run, tmp_path: Path) -> None:
    path = tiny.export_xlsx(tmp_path / "tiny.xlsx")
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames[:3] == ["Run", "Best per subset", "MDE per subset"]

    def rows(name: str) -> list[dict[str, object]]:
        values = list(wb[name].iter_rows(values_only=True))
        if str(values[0][0]).startswith("⚠"):  # the guard's mark row (aggregates only)
            values = values[1:]
        # the sheets are under people's headers (header()); read them back by column name
        names = ("group", "step", "estimate", "indistinguishable", "note", "effect", "field",
                 "value")  # fmt: skip
        column = {header(n): n for n in names}
        head = [column.get(str(h), h) for h in values[0]]
        return [dict(zip(head, r, strict=False)) for r in values[1:]]

    best = {r["group"]: r for r in rows("Best per subset")}
    expected = tiny.best(by="subset").set_index("group")
    for group in ("task_a", "task_b"):
        assert best[group]["step"] == expected.loc[group, "step"]
        assert best[group]["estimate"] == expected.loc[group, "estimate"]
    assert best["task_a"]["indistinguishable"] == "200, 300"
    assert str(best["task_c"]["note"]).startswith("no best: the source does not say")
    mde = {r["group"]: r for r in rows("MDE per subset")}
    effect = tiny.mde(by="subset").set_index("group").loc["task_a", "effect"]
    assert mde["task_a"]["effect"] == pytest.approx(effect, rel=1e-15)
    tests = rows("Tests")
    assert len(tests) == 9 and {r["group"] for r in tests} == {"task_a", "task_b", "task_c"}
    assert {r["group"] for r in rows("Noise band")} == {"task_a", "task_b", "task_c"}
    facts = {r["field"]: r.get("value") for r in rows("Run")}
    assert str(facts["per subset"]).startswith("no overall number at any step")


def test_the_report_says_not_assessed_where_no_step_has_tasks(
    tiny: enb.Run, tmp_path: Path
) -> None:
    """The report listed 'learned: none' and an empty '0 tasks × 3 steps' matrix note."""
    text = tiny.export_html(tmp_path / "tiny.html").path.read_text(encoding="utf-8")
    tasks = text[text.index("Tasks over training") :]
    assert "not assessed: no step holds per-task results" in tasks
    assert "0 tasks ×" not in text and "<i>none</i>" not in text


def test_unpaired_tests_have_no_task_count_columns(tiny: enb.Run) -> None:
    """Tests from the sources' stderr count no tasks: their 'fixed / broken' and 'shared &
    complete' columns were all '-' and pushed the verdict out of a narrow panel."""
    from envloop_nb._present.run_html import tests_table_html

    shown = tests_table_html(tiny.tests(by="subset"))
    assert "verdict" in shown and "fixed / broken" not in shown and "shared &amp;" not in shown
