"""The steps' searchable text (schema version 5): written with every step, what
``find_steps(contains=...)`` reads, migrated into a version-4 file; the answers are the
ones the search gave when it lowered every step's text per query (``OLD_SQL``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._behaviour.find import find_steps_relation
from envloop_nb._store import migrate
from envloop_nb._store.schema import SCHEMA_VERSION
from envloop_nb._store.steps import SEARCH_SQL, STEP_COLUMNS, StepWriter, check_steps
from tests.conftest import FIXTURES, SAMPLE_DATA, TAU_BENCH, THREE_TASKS

#: ``find_steps``' query before version 5 (envloop_nb 557d927, ``_behaviour/find.py``):
#: every step's content and arguments lowered per query. The reference answers.
OLD_SQL = """
SELECT s.task, s.attempt, min(s.step)::INTEGER AS first_step, count(*)::BIGINT AS matches
FROM steps s LEFT JOIN tasks t ON t.job_id = s.job_id AND t.task = s.task
WHERE s.job_id = $job
  AND ($contains IS NULL
       OR contains(lower(coalesce(s.content, '')), lower($contains))
       OR (s.arguments IS NOT NULL AND contains(lower(s.arguments::VARCHAR), lower($contains))))
GROUP BY s.task, s.attempt
ORDER BY any_value(t.position), s.task, s.attempt
"""

#: Version 4's ``steps`` table (``_store/schema.py`` at 557d927), verbatim.
V4_STEPS = """
CREATE TABLE steps (
    job_id         VARCHAR NOT NULL,
    task           VARCHAR NOT NULL,
    attempt        INTEGER NOT NULL,
    step           INTEGER NOT NULL,  -- 1..n within the attempt, no gaps
    turn           INTEGER,           -- the source's own step / message number
    parent_step    INTEGER,           -- a sub-agent's rows: the step that delegated to it
    agent          VARCHAR,           -- NULL: the attempt's agent; else the sub-agent's name
    role           VARCHAR NOT NULL,  -- system | user | assistant | tool | environment
    kind           VARCHAR NOT NULL,  -- message | reasoning | tool_call | tool_result | error | context_summary | subagent
    tool           VARCHAR,           -- tool_call / tool_result: the function called
    call_id        VARCHAR,           -- tool_call: its id; tool_result: the call it answers
    arguments      JSON,              -- tool_call: the arguments as given
    content        VARCHAR,           -- text shown to or written by the model
    is_error       BOOLEAN NOT NULL,
    tokens_in      BIGINT,            -- usage of the model call this row's turn made
    tokens_out     BIGINT,            -- (on the turn's first row only, so sums add up)
    tokens_cached  BIGINT,
    cost_usd       DOUBLE,
    model          VARCHAR,
    started_at     TIMESTAMPTZ,
    duration_s     DOUBLE,
    copied         BOOLEAN NOT NULL,  -- replayed context (ATIF is_copied_context)
    extra          JSON,
    source_place   VARCHAR            -- where in the source: "trajectory.json, steps[3]"
);
"""

KELVIN, LONG_S, DOTTED_I = "\u212a", "\u017f", "\u0130"
#: (task, attempt): [(kind, tool, arguments, content)]: cases and characters DuckDB's
#: ``lower()`` treats apart.
UNICODE_STEPS: dict[tuple[str, int], list[tuple[str, str | None, str | None, str | None]]] = {
    ("A", 1): [
        ("message", None, None, "List the FILES, then read them"),
        ("tool_call", "ls", '{"Path": "/TMP/Straße"}', None),
        ("tool_result", "ls", None, "No Such File: /tmp/STRASSE"),
        ("message", None, None, None),
    ],
    ("A", 2): [
        ("tool_call", "cat", '{"f": "ſpecial \\u00c9t\\u00e9 ÉTÉ"}', None),
        ("tool_result", "cat", None, f"Kelvin: 300 {KELVIN}, {DOTTED_I}stanbul, ıi"),
    ],
    ("B", 1): [
        ("message", None, None, "ΣΊΣΥΦΟΣ σίσυφος ς"),
        ("tool_call", "grep", f'{{"pattern": "{DOTTED_I}|{LONG_S}|{KELVIN}"}}', "calling grep"),
        ("tool_result", "grep", None, "100% done_OK 🙂"),
    ],
    ("C", 2): [("error", None, None, "TIMEOUT after 30 s")],
}
NEEDLES = [
    "", " ", "s", "k", "i", "ı", "i̇", DOTTED_I, LONG_S, KELVIN, "K", "ß", "SS", "straße",
    "STRASSE", "/tmp/straße", "σ", "ς", "Σ", "σίσυφος", "ΣΊΣΥΦΟΣ", "é", "É", "\\u00c9",
    '"path"', '"PATH": "/tmp', "no such file", "NO SUCH FILE", "timeout", "%", "_", "%_",
    "'", "🙂", "ok 🙂", "file: /", "them\nx", "FILES, then", "\x00", "\x00{", "them\x00",
    'grep\x00{"pat', 'grep{"pat',
]  # fmt: skip


def _old(con: duckdb.DuckDBPyConnection, job_id: str, needle: str | None) -> list[Any]:
    return con.execute(OLD_SQL, {"job": job_id, "contains": needle}).fetchall()


def _new(con: duckdb.DuckDBPyConnection, job_id: str, needle: str | None) -> list[Any]:
    return find_steps_relation(con, job_id, contains=needle).fetchall()


def _write_unicode(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    w = StepWriter(con, job_id)
    for (task, attempt), rows in UNICODE_STEPS.items():
        for n, (kind, tool, arguments, content) in enumerate(rows, 1):
            role = {"tool_result": "tool", "error": "environment"}.get(kind, "assistant")
            w.add({"task": task, "attempt": attempt, "step": n, "role": role, "kind": kind,
                   "tool": tool, "arguments": arguments, "content": content,
                   "is_error": kind == "error"})  # fmt: skip
    w.close()
    check_steps(con, job_id, "UNICODE_STEPS")


def _version_4_file(path: Path) -> None:
    """A workspace file as version 4 wrote it: two jobs with steps (one through the
    ChatML SQL insert, one through ``StepWriter``), ``steps`` in version 4's table."""
    with enb.open(path) as ws:
        ws.load(THREE_TASKS, job_id="chatml")  # its ChatML steps: one SQL INSERT
        job = ws.load(THREE_TASKS, job_id="written", steps=False)
        _write_unicode(ws.con, job.id)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE v4_rows AS SELECT * EXCLUDE (search_text) FROM steps")
    con.execute("DROP TABLE steps")
    con.execute(V4_STEPS)
    con.execute("INSERT INTO steps SELECT * FROM v4_rows")
    con.execute("DROP TABLE v4_rows")
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.close()


def _file_facts(path: Path) -> dict[str, Any]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            "version": con.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchall(),
            "tables": con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall(),
            "columns": con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = 'steps'"
            ).fetchall(),
            "steps": con.execute(
                "SELECT * FROM steps ORDER BY job_id, task, attempt, step"
            ).fetchall(),
            "answers": {
                (job, needle): _old(con, job, needle)
                for job in ("chatml", "written")
                for needle in NEEDLES
            },
        }
    finally:
        con.close()


# -- a version-4 file --------------------------------------------------------------------


def test_a_version_4_workspace_gets_its_steps_searchable_text(tmp_path: Path) -> None:
    path = tmp_path / "v4.duckdb"
    _version_4_file(path)
    before = _file_facts(path)
    assert before["version"] == [("4",)]
    assert [c for (c,) in before["columns"]] == ["job_id", *STEP_COLUMNS]
    assert before["answers"][("written", "straße")] == [("A", 1, 2, 1)]  # the data holds

    with enb.open(path, read_only=True) as ro:  # read as it is, searched as before
        for (job, needle), expected in before["answers"].items():
            assert _new(ro.con, job, needle) == expected, (job, needle)
        assert list(ro.job("written").steps().columns) == list(STEP_COLUMNS)
    assert _file_facts(path) == before  # nothing written

    with enb.open(path) as ws:  # migrated
        for (job, needle), expected in before["answers"].items():
            assert _new(ws.con, job, needle) == expected, (job, needle)
        assert list(ws.job("written").steps().columns) == list(STEP_COLUMNS)
        unfilled = ws.sql(
            f"SELECT count(*) FROM steps WHERE search_text IS DISTINCT FROM {SEARCH_SQL}"
        ).fetchone()
        assert unfilled == (0,)
        assert ws.sql(  # a step without arguments: its content; with: NUL, then them
            "SELECT search_text FROM steps WHERE job_id = 'written' AND task = 'A' "
            "AND attempt = 1 ORDER BY step"
        ).fetchall() == [("list the files, then read them",), ('\x00{"path": "/tmp/straße"}',),
                         ("no such file: /tmp/strasse",), ("",)]  # fmt: skip
    after = _file_facts(path)
    assert after["version"] == [(str(SCHEMA_VERSION),)] and SCHEMA_VERSION == 5
    assert after["tables"] == before["tables"]  # the old table copied and dropped
    assert [c for (c,) in after["columns"]] == ["job_id", *STEP_COLUMNS, "search_text"]
    assert [r[:-1] for r in after["steps"]] == before["steps"]  # every row, as it was
    assert after["answers"] == before["answers"]


def test_a_migration_cut_short_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v4.duckdb"
    _version_4_file(path)
    before = _file_facts(path)

    def cut_short(select: str) -> str:
        return "SELECT error('cut short')"

    monkeypatch.setattr(migrate, "insert_sql", cut_short)
    with pytest.raises(duckdb.Error, match="cut short"):
        enb.open(path)
    assert _file_facts(path) == before  # steps renamed and made again: all undone
    monkeypatch.undo()
    with enb.open(path) as ws:
        assert _new(ws.con, "written", "STRASSE") == [("A", 1, 3, 1)]


# -- the same answers as before ----------------------------------------------------------

#: Real files with steps, each loaded by its own loader.
SOURCES = [
    TAU_BENCH,
    *sorted((FIXTURES / "trajectories" / "inspect").iterdir()),
    *sorted((FIXTURES / "trajectories" / "tau2-bench").glob("*.json")),
    *sorted((FIXTURES / "trajectories" / "tau-bench").glob("*.json")),
    SAMPLE_DATA / "agent_runs" / "base",
    THREE_TASKS,
]


@pytest.fixture(scope="module")
def loaded() -> list[enb.Job]:
    ws = enb.open()
    return [ws.load(source) for source in SOURCES]


def _needles(con: duckdb.DuckDBPyConnection, job_id: str, rng: random.Random) -> list[str]:
    """Substrings of the job's own texts at random places, in several cases."""
    texts = [
        t
        for (t,) in con.execute(
            """SELECT text FROM (SELECT content AS text FROM steps WHERE job_id = $job
                                 UNION ALL
                                 SELECT arguments::VARCHAR FROM steps WHERE job_id = $job)
               WHERE length(text) > 0 ORDER BY text""",
            {"job": job_id},
        ).fetchall()
    ]
    out = []
    for text in rng.sample(texts, min(20, len(texts))):
        at = rng.randrange(len(text))
        piece = text[at : at + rng.randint(1, 16)]
        out += [piece, piece.upper(), piece.swapcase(), piece.casefold()]
    return out


def test_find_steps_answers_as_before_on_real_files(loaded: list[enb.Job]) -> None:
    rng = random.Random(35)
    asked = 0
    for job in loaded:
        assert job.steps().shape[0] > 0, job.id
        for needle in [*NEEDLES, None, *_needles(job.con, job.id, rng)]:
            expected = _old(job.con, job.id, needle)
            assert _new(job.con, job.id, needle) == expected, (job.id, needle)
            assert job.find_steps(contains=needle).values.tolist() == [list(r) for r in expected], (
                job.id,
                needle,
            )
            asked += bool(expected)
    assert asked > 200  # most needles are found somewhere


def test_every_writer_fills_the_searchable_text(loaded: list[enb.Job]) -> None:
    con = loaded[0].con
    rows = con.execute(
        f"""SELECT count(*), count(*) FILTER (WHERE search_text IS DISTINCT FROM {SEARCH_SQL})
            FROM steps"""
    ).fetchone()
    assert rows is not None and rows[0] > 6000 and rows[1] == 0


def test_a_text_across_content_and_arguments_is_not_found(scratch: enb.Job) -> None:
    con = scratch.con
    con.execute("DELETE FROM steps WHERE job_id = 'scratch'")
    w = StepWriter(con, scratch.id)
    w.add({"task": "A", "attempt": 1, "step": 1, "role": "assistant", "kind": "tool_call",
           "tool": "ls", "content": "Calling LS", "arguments": '{"Dir": "."}'})  # fmt: skip
    w.close()
    for needle in ("calling ls", '{"dir"', "ls\x00", "\x00{", 'ls\x00{"dir', "ls{", "ls {", "\x00"):
        expected = [("A", 1, 1, 1)] if needle in ("calling ls", '{"dir"') else []
        assert _new(con, scratch.id, needle) == _old(con, scratch.id, needle) == expected, needle


# -- the predicate over random texts -----------------------------------------------------

_CHARS = st.one_of(
    st.sampled_from(["s", "S", "k", "K", "i", "I", "ı", DOTTED_I, "\u0307", LONG_S, KELVIN,
                     "ß", "ẞ", "σ", "ς", "Σ", "é", "É", "ǅ", "ﬃ", "\\", '"', "%", "_", " "]),
    st.characters(exclude_categories=("Cs",)),
)  # fmt: skip
_TEXT = st.text(_CHARS, max_size=10)


@pytest.fixture(scope="module")
def scratch() -> enb.Job:
    return enb.open().load(THREE_TASKS, job_id="scratch", steps=False)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.none() | _TEXT,
            st.none() | st.tuples(_TEXT, st.booleans()),  # arguments: {"k": text}, ASCII-escaped?
        ),
        min_size=1,
        max_size=6,
    ),
    data=st.data(),
)
def test_the_stored_text_matches_as_lowering_per_query_did(
    scratch: enb.Job, rows: list[tuple[str | None, tuple[str, bool] | None]], data: st.DataObject
) -> None:
    con = scratch.con
    con.execute("DELETE FROM steps WHERE job_id = 'scratch'")
    w = StepWriter(con, scratch.id)
    texts = []  # each text, and a step's two joined (a match across them is none)
    for n, (content, args) in enumerate(rows, 1):
        arguments = None if args is None else json.dumps({"k": args[0]}, ensure_ascii=args[1])
        texts += [t for t in (content, arguments) if t]
        if arguments is not None:
            texts += [f"{content or ''}{sep}{arguments}" for sep in ("\x00", "", " ")]
        w.add({"task": "A", "attempt": 1, "step": n, "role": "assistant", "kind": "message",
               "content": content, "arguments": arguments})  # fmt: skip
    w.close()
    if texts:
        text = data.draw(st.sampled_from(texts))
        start = data.draw(st.integers(0, len(text)))
        piece = text[start : start + data.draw(st.integers(0, 6))]
        case = data.draw(st.sampled_from([str, str.upper, str.lower, str.swapcase, str.casefold]))
        needle = data.draw(st.just(case(piece)) | _TEXT)
    else:
        needle = data.draw(_TEXT)
    assert _new(con, scratch.id, needle) == _old(con, scratch.id, needle)
