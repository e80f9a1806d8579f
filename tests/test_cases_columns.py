"""The Cases tab's input column switch, the Messages column, where a search matched, the
per-task "attempts" link and chooser, and the scorers' judgement in an attempt's detail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._present.cases_html import messages_snippet, scorers_html
from envloop_nb._ui.cases_query import CaseQuery, CaseSource
from envloop_nb._ui.cases_search import match_pattern

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
EXAMPLE = SHARED / "formats" / "examples" / "three-tasks-two-attempts.json"
INSPECT_JSON = sorted((SHARED / "fixtures" / "inspect" / "json").glob("*.json"))[0]


@pytest.fixture(scope="module")
def sample() -> enb.Job:
    return enb.open().load(ROOT / "sample_data" / "base.json")


@pytest.mark.parametrize(
    ("text", "shown", "hidden"),
    [("both", {"messages", "output"}, set()), ("prompt", {"messages"}, {"output"}),
     ("completion", {"output"}, {"messages"})],
)  # fmt: skip
def test_the_input_column_switch(
    sample: enb.Job, text: str, shown: set[str], hidden: set[str]
) -> None:
    src = CaseSource(sample.con, sample.id)
    page = src.fetch(CaseQuery(text=text))  # type: ignore[arg-type]
    assert shown <= set(page.frame.columns) and not hidden & set(page.frame.columns)
    assert "error" in page.frame.columns  # the error column is not a text switch
    # a hidden column still sorts
    rows = src.fetch(CaseQuery(text="completion", sort="messages")).frame
    assert len(rows) == 20


def test_plain_prompts_keep_an_input_column() -> None:
    job = enb.open().load(ROOT / "tests" / "data" / "lm_eval" / "run")
    cols = CaseSource(job.con, job.id).fetch(CaseQuery()).frame.columns
    assert "input" in cols and "messages" not in cols


def test_the_messages_column_shows_the_whole_conversation_on_hover(sample: enb.Job) -> None:
    src = CaseSource(sample.con, sample.id)
    page = src.fetch(CaseQuery(page_size=50, tag_value="writing"))  # half chat, half plain
    attempts = sample.attempts().set_index(["task", "attempt"])
    checked = 0
    for i, row in enumerate(page.frame.itertuples(index=False)):
        if not attempts.loc[(row.task, row.attempt), "input_is_chat"]:
            assert row.messages == page.titles["messages"][i]  # a plain prompt, as it is
            continue
        checked += 1
        turns = json.loads(attempts.loc[(row.task, row.attempt), "input"])
        title = page.titles["messages"][i]
        assert row.messages.startswith(f"{len(turns)} turn")
        assert title.count("\n") == len(turns) - 1  # one line per turn
        assert title.split("\n")[0].startswith(f"{turns[0]['role']}: ")
    assert checked > 10
    out = page_html_for(src, CaseQuery(page_size=50, tag_value="writing"))
    assert 'title="system: ' in out or 'title="user: ' in out


def page_html_for(src: CaseSource, q: CaseQuery) -> str:
    from envloop_nb._ui.cases_page import page_html

    return page_html(src.fetch(q))


def test_messages_snippet_of_odd_inputs() -> None:
    assert messages_snippet("not json") == ("not json", "not json")
    cell, title = messages_snippet(json.dumps([{"role": "assistant", "content": None,
                                                 "tool_calls": [{"id": 1}]}]))  # fmt: skip
    assert cell == "1 turn · assistant: " and title == "assistant: [tool calls]"


def test_a_search_shows_where_it_matched(sample: enb.Job) -> None:
    """The match sits in the error column (off to the right): the match column says so,
    with the text around it, and the page marks the term wherever it shows."""
    src = CaseSource(sample.con, sample.id)
    page = src.fetch(CaseQuery(search="TIMEOUT"))
    f = page.frame
    assert page.total > 0 and "match" in f.columns
    assert list(f.columns).index("match") < list(f.columns).index("reward")  # in view
    errors = sample.attempts().set_index(["task", "attempt"])["error"]
    for row in f.itertuples(index=False):
        column, _, context = row.match.partition(": ")
        assert column in ("error", "output", "input", "task")
        assert "timeout" in context.lower()
        if column == "error":
            assert " ".join(context.split()) in " ".join(
                str(errors[(row.task, row.attempt)]).split()
            )
    out = page_html_for(src, CaseQuery(search="TIMEOUT"))
    assert "<mark>" in out and "</mark>" in out
    # without a search there is no match column
    assert "match" not in src.fetch(CaseQuery()).frame.columns


@pytest.mark.parametrize("needle", ["a.*(b)'; DROP", "[x]{2}", "\\d+", "ü€", "$1 ^"])
def test_match_pattern_finds_the_literal_text(needle: str) -> None:
    import duckdb

    text = f"before {needle} after"
    got = duckdb.execute("SELECT regexp_extract(?, ?)", [text, match_pattern(needle)]).fetchone()
    assert got is not None and got[0] == text
    assert duckdb.execute(
        "SELECT regexp_extract(?, ?)", ["nothing here", match_pattern(needle)]
    ).fetchone() == ("",)


def test_a_search_term_with_regex_and_sql_characters(sample: enb.Job) -> None:
    src = CaseSource(sample.con, sample.id)
    for needle in ("'; DROP TABLE attempts; --", ".*", "(", "\\"):
        page = src.fetch(CaseQuery(search=needle))
        assert page.total >= 0  # answered, never an error
    assert sample.con.execute("SELECT count(*) FROM attempts").fetchone()[0] > 0


def test_task_view_rows_link_to_their_attempts(sample: enb.Job) -> None:
    p = sample.panel()
    p.cases.view.value = "task"
    assert "attempts ›" in p.cases.table.value
    assert p.cases.text.disabled  # the task view shows no texts
    p.cases.select_row(0)
    task = p.cases.frame.iloc[0]["task"]
    assert p.cases.task_attempt.layout.display is None
    attempts = [v for _, v in p.cases.task_attempt.options]
    assert attempts == sorted(sample.attempts().query("task == @task")["attempt"].tolist())
    p.cases.open_task_attempt(attempts[-1])
    assert f"task {task} · attempt {attempts[-1]}" in p.cases.attempt_detail.value
    p.cases.select_row(1)  # another task: the chooser follows, the old attempt is gone
    assert p.cases.attempt_detail.value == ""


def test_an_inspect_attempt_shows_every_scorer_and_its_explanation(tmp_path: Path) -> None:
    doc = json.loads(INSPECT_JSON.read_text())
    sample = next(s for s in doc["samples"] if s.get("scores"))
    sample["scores"]["exact"]["metadata"] = {
        "grading": [{"role": "user", "content": "Grade the answer <Paris>"},
                    {"role": "assistant", "content": "GRADE: C"}]
    }  # fmt: skip
    log = tmp_path / INSPECT_JSON.name
    log.write_text(json.dumps(doc))
    job = enb.open().load(log)
    p = job.panel()
    frame = p.cases.frame
    row = next(
        i for i, r in enumerate(frame.itertuples(index=False))
        if (r.task, r.attempt) == (str(sample["id"]), sample["epoch"])
    )  # fmt: skip
    p.cases.select_row(row)
    detail = p.cases.detail.value
    assert "scorer exact" in detail and "scorer brevity" in detail
    assert "shorter is better" in detail  # brevity's explanation
    assert "Grade the answer &lt;Paris&gt;" in detail and "GRADE: C" in detail
    assert scorers_html(None) == "" and scorers_html({}) == ""


def test_envloop_judge_summary_names_its_verifier() -> None:
    job = enb.open().load(ROOT / "sample_data" / "graded.json")
    p = job.panel()
    p.cases.select_row(0)
    assert "judge summary · rubric-judge@" in p.cases.detail.value
