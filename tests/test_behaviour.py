"""Behaviour from steps (envloop_nb._behaviour): worked examples with exact numbers, a
property test of every statistic against a brute-force Python reference, hostile search
strings, and jobs without steps."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._behaviour.find import find_steps_relation
from envloop_nb._behaviour.patterns import action_patterns
from envloop_nb._behaviour.tools import tool_stats
from envloop_nb._behaviour.turns import turn_stats
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import THREE_TASKS

# THREE_TASKS' attempts: A1 pass, A2 fail, B1 pass, B2 pass, C1 fail, C2 no reward.
OUTCOME = {("A", 1): 1, ("A", 2): 0, ("B", 1): 1, ("B", 2): 1, ("C", 1): 0, ("C", 2): None}
HOSTILE = "'); DROP TABLE steps; --"


def _call(step: int, tool: str, cid: str, args: str | None = None) -> dict[str, Any]:
    return {"step": step, "role": "assistant", "kind": "tool_call", "tool": tool, "call_id": cid,
            "arguments": args}  # fmt: skip


def _result(step: int, cid: str | None, *, error: bool = False, **more: Any) -> dict[str, Any]:
    return {"step": step, "role": "tool", "kind": "tool_result", "call_id": cid,
            "is_error": error, **more}  # fmt: skip


def _msg(step: int, content: str, role: str = "assistant") -> dict[str, Any]:
    return {"step": step, "role": role, "kind": "message", "content": content}


LS = '{"p": "."}'
WORKED: dict[tuple[str, int], list[dict[str, Any]]] = {
    ("A", 1): [_msg(1, "list then read", "user"), _call(2, "ls", "c1", LS), _result(3, "c1"),
               _call(4, "cat", "c2", '{"f": "x"}'), _result(5, "c2"), _msg(6, "done")],
    ("A", 2): [_call(1, "ls", "c1", LS), _result(2, "c1", error=True),
               _call(3, "ls", "c2", LS), _result(4, "c2", error=True),
               _call(5, "ls", "c3", '{"p":"."}'), _result(6, "c3", error=True)],
    ("B", 1): [_call(1, "cat", "c1", '{"f": "x"}'), _result(2, "c1"), _msg(3, "100% done_ok")],
    ("B", 2): [_msg(1, "hi", "user"), _call(2, "ls", "c1", LS), _result(3, None), _msg(4, "ok")],
    ("C", 1): [_call(1, "broken", "c1", '{"x":1}'), _result(2, "c1", error=True),
               _call(3, "broken", "c2", '{"x": 1}'), _result(4, "c2", error=True),
               _call(5, "broken", "c3", '{"x": 2}'), _result(6, "c3", error=True),
               _msg(7, "giving up " + HOSTILE)],
    ("C", 2): [_call(1, "ls", "c1", LS),
               {"step": 2, "role": "environment", "kind": "error", "is_error": True,
                "content": "timeout"}],
}  # fmt: skip


def _job(steps: dict[tuple[str, int], list[dict[str, Any]]], job_id: str | None = None) -> enb.Job:
    ws = enb.open()
    job = (
        ws.load(THREE_TASKS, steps=False)
        if job_id is None
        else ws.load(THREE_TASKS, job_id=job_id, steps=False)
    )
    _write(job, steps)
    return job


def _write(job: enb.Job, steps: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    w = StepWriter(job.con, job.id)
    for (task, attempt), rows in steps.items():
        for row in rows:
            w.add({"task": task, "attempt": attempt, **row})
    w.close()
    check_steps(job.con, job.id, "t.json")


@pytest.fixture(scope="module")
def worked() -> enb.Job:
    return _job(WORKED)


# -- worked example: exact numbers ------------------------------------------------------


def test_tool_stats_worked_example(worked: enb.Job) -> None:
    t = worked.tool_stats(resamples=200)
    cols = ["tool", "calls", "attempts", "calls_per_attempt", "results", "errors", "error_rate",
            "passed_with", "scored_with", "pass_with", "passed_without", "scored_without",
            "pass_without"]  # fmt: skip
    assert t.tools[cols].values.tolist() == [
        ["ls", 6, 4, 1.5, 4, 3, 0.75, 2, 3, 2 / 3, 1, 2, 0.5],
        ["broken", 3, 1, 3.0, 3, 3, 1.0, 0, 1, 0.0, 3, 4, 0.75],
        ["cat", 2, 2, 1.0, 2, 0, 0.0, 2, 2, 1.0, 1, 3, 1 / 3],
    ]
    assert t.unattributed_results == 1  # B2's result names no tool and no call
    b = t.basis
    assert (b.attempts, b.passed, b.failed, b.unscored, b.without_steps, b.tasks) == (
        6,
        3,
        2,
        1,
        0,
        3,
    )
    for name in ("error_rate", "pass_with", "pass_without"):
        low, est, high = t.tools[f"{name}_low"], t.tools[name], t.tools[f"{name}_high"]
        assert ((low <= est + 1e-12) & (est <= high + 1e-12)).all()
    assert "task bootstrap" in t.method and "200 resamples" in t.method


def test_turn_stats_worked_example(worked: enb.Job) -> None:
    t = worked.turn_stats(resamples=200)
    assert t.steps[["low", "high", "attempts", "scored", "passed"]].values.tolist() == [
        [2, 2, 1, 0, 0], [3, 3, 1, 1, 1], [4, 4, 1, 1, 1], [6, 6, 2, 2, 1], [7, 7, 1, 1, 0],
    ]  # fmt: skip
    assert t.steps["pass_rate"].tolist()[1:] == [1.0, 1.0, 0.5, 0.0]
    assert t.steps["pass_rate"].isna().tolist()[0]  # C2 has no reward: no pass rate, not 0
    assert t.first_error.values.tolist() == [[2, 3]]
    assert t.survival["no_error"].tolist() == [6, 6, 3, 3, 3, 3, 3, 3]
    assert t.survival["share"].tolist() == [1, 1] + [0.5] * 6
    assert (t.median_steps, t.median_first_error, t.without_error) == (5.0, 2.0, 3)
    binned = worked.turn_stats(bins=2, resamples=50).steps
    assert binned[["low", "high", "attempts"]].values.tolist() == [[2, 4, 3], [5, 7, 3]]


def test_action_patterns_worked_example(worked: enb.Job) -> None:
    p = worked.action_patterns()
    cols = ["n", "pattern", "calls_failed", "calls_passed", "attempts_failed", "attempts_passed"]
    assert p.ngrams[cols].values.tolist() == [
        [1, "ls", 3, 2, 1, 2], [1, "cat", 0, 2, 0, 2], [1, "broken", 3, 0, 1, 0],
        [2, "broken → broken", 2, 0, 1, 0], [2, "ls → ls", 2, 0, 1, 0], [2, "ls → cat", 0, 1, 0, 1],
        [3, "broken → broken → broken", 1, 0, 1, 0], [3, "ls → ls → ls", 1, 0, 1, 0],
    ]  # fmt: skip
    assert p.ngrams["share_failed"].tolist()[0] == 0.5 and p.ngrams["share_passed"][0] == 2 / 3
    # A2 calls ls with the same arguments three times (whitespace in the JSON ignored)
    loops = p.loops[["task", "attempt", "tool", "first_step", "last_step", "repeats", "outcome"]]
    assert loops.values.tolist() == [["A", 2, "ls", 1, 5, 3, "failed"]]
    assert p.loop_attempts() == {"failed": 1}
    two = worked.action_patterns(min_repeat=2).loops  # C1: {"x":1} twice, then {"x": 2}
    assert two[["task", "first_step", "last_step"]].values.tolist() == [["A", 1, 5], ["C", 1, 3]]
    after = p.after_success.set_index("outcome")
    assert after.loc[
        "passed", ["attempts", "with_success", "mean_after", "max_after"]
    ].tolist() == [3, 3, 1.0, 1]
    assert after.loc["failed", ["attempts", "with_success"]].tolist() == [2, 0]
    assert after["mean_after"].isna().tolist() == [True, False, True]  # none: null, not 0


def test_find_steps_worked_example(worked: enb.Job) -> None:
    def found(**kw: Any) -> list[list[Any]]:
        return worked.find_steps(**kw).values.tolist()

    assert found(tool="ls") == [["A", 1, 2, 1], ["A", 2, 1, 3], ["B", 2, 2, 1], ["C", 2, 1, 1]]
    assert found(error=True) == [["A", 2, 2, 3], ["C", 1, 2, 3], ["C", 2, 2, 1]]
    assert found(kind="error") == [["C", 2, 2, 1]]
    assert found(tool="ls", error=True) == []  # the results carry no tool name
    assert found(contains='"F"') == [["A", 1, 4, 1], ["B", 1, 1, 1]]  # in the arguments
    assert found(contains="GIVING") == [["C", 1, 7, 1]]
    calls = worked.find_steps(kind="tool_call", frame="polars")
    assert calls.height == 6 and calls["matches"].sum() == 2 + 3 + 1 + 1 + 3 + 1
    with pytest.raises(ValueError, match="kind must be one of"):
        worked.find_steps(kind="thought")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("%", [["B", 1, 3, 1]]), ("_", [["B", 1, 3, 1]]), ("%_", []), (HOSTILE, [["C", 1, 7, 1]]),
     ("'", [["C", 1, 7, 1]]), ("\\", [])],
)  # fmt: skip
def test_hostile_contains_is_a_plain_substring(
    worked: enb.Job, text: str, expected: list[Any]
) -> None:
    assert worked.find_steps(contains=text).values.tolist() == expected
    assert worked.con.execute("SELECT count(*) FROM steps").fetchone() == (
        28,
    )  # every step still there


def test_the_threshold_decides_the_pass(worked: enb.Job) -> None:
    everything = worked.tool_stats(threshold=0.0, resamples=50)  # every scored attempt passes
    assert everything.basis.passed == 5 and everything.basis.failed == 0
    assert everything.tools.set_index("tool").loc["broken", "pass_with"] == 1.0


def test_diagnose_names_the_steps(worked: enb.Job) -> None:
    found = {f.code: f for f in worked.diagnose()}
    assert {"steps-looping", "tool-always-fails", "stops-after-tool-error"} <= set(found)
    loop = found["steps-looping"]
    assert loop.numbers["steps"][0] == {"task": "A", "attempt": 2, "step": 1, "last_step": 5,
                                        "tool": "ls", "repeats": 3}  # fmt: skip
    assert "A #2 steps 1–5 (ls ×3)" in loop.evidence
    broken = found["tool-always-fails"]
    assert broken.severity == "error" and broken.numbers["results"] == 3
    assert [(s["task"], s["attempt"], s["step"]) for s in broken.numbers["steps"]] == [
        ("C", 1, 2),
        ("C", 1, 4),
        ("C", 1, 6),
    ]
    stops = found["stops-after-tool-error"]
    assert [(s["task"], s["attempt"], s["step"]) for s in stops.numbers["steps"]] == [
        ("A", 2, 6),
        ("C", 1, 6),
    ]
    assert worked.diagnose(loop_min_repeat=4).codes().count("steps-looping") == 0


def test_a_job_without_steps_gets_nothing_invented() -> None:
    job = enb.open().load(THREE_TASKS, steps=False)
    assert str(job.tool_stats().basis) == "no steps recorded"
    assert job.tool_stats().tools.empty
    t = job.turn_stats()
    assert t.steps.empty and t.first_error.empty and t.survival.empty
    assert (t.median_steps, t.median_first_error, t.basis.without_steps) == (None, None, 6)
    p = job.action_patterns()
    assert p.ngrams.empty and p.loops.empty and p.after_success.empty
    assert job.find_steps(contains="").empty
    from envloop_nb._metrics.diagnosis import diagnose

    assert job.diagnose().codes() == diagnose(job).codes()


def test_attempts_without_steps_are_left_out_and_counted() -> None:
    job = _job({("A", 1): WORKED[("A", 1)]})
    b = job.tool_stats(resamples=50).basis
    assert (b.attempts, b.passed, b.without_steps) == (1, 1, 5)
    assert "5 attempts without steps left out" in str(b)


# -- property test against a brute-force reference --------------------------------------

_ITEM = st.tuples(
    st.sampled_from(["message", "tool_call", "tool_call", "tool_result", "error"]),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(['{"x":1}', '{"x": 1}', '{"y":2}', None]),
    st.booleans(),  # is_error
    st.sampled_from([False, False, False, True]),  # copied
    st.booleans(),  # a result answers the latest call by id (else: maybe a tool name)
)
_ATTEMPTS = st.fixed_dictionaries(
    {key: st.one_of(st.none(), st.lists(_ITEM, min_size=1, max_size=10)) for key in OUTCOME}
)


def _rows(spec: dict[tuple[str, int], Any]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out = {}
    for key, items in spec.items():
        if items is None:
            continue
        rows, last_call = [], None
        for n, (kind, tool, args, err, copied, link) in enumerate(items, 1):
            row: dict[str, Any] = {"step": n, "kind": kind, "copied": copied, "is_error": err,
                                   "role": "tool" if kind == "tool_result" else "assistant",
                                   "content": f"say {tool}{n}"}  # fmt: skip
            if kind == "tool_call":
                row.update(tool=tool, call_id=f"c{n}", arguments=args)
                last_call = (f"c{n}", tool, copied)
            elif kind == "tool_result":
                if link and last_call is not None:
                    row["call_id"] = last_call[0]
                elif link:
                    row["tool"] = tool
            rows.append(row)
        out[key] = rows
    return out


def _reference(rows: dict[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any]:
    """Every statistic by the definitions, in plain Python."""
    tools: dict[str, Counter[str]] = {}
    grams: dict[tuple[int, str], Counter[str]] = {}
    loops = []
    scored = {k: OUTCOME[k] for k in rows if OUTCOME[k] is not None}
    for key, steps in rows.items():
        calls = {
            r["call_id"]: r["tool"] for r in steps if r["kind"] == "tool_call" and not r["copied"]
        }
        seq = [r for r in steps if r["kind"] == "tool_call" and not r["copied"]]
        used = Counter(r["tool"] for r in seq)
        for r in steps:
            if r["kind"] == "tool_result" and not r["copied"]:
                name = r.get("tool") or calls.get(r.get("call_id"))
                if name:
                    c = tools.setdefault(name, Counter())
                    c["results"] += 1
                    c["errors"] += r["is_error"]
        for name, k in used.items():
            c = tools.setdefault(name, Counter())
            c["calls"] += k
            c["attempts"] += 1
        names = [r["tool"] for r in seq]
        for n in (1, 2, 3):
            here = Counter(" → ".join(names[i : i + n]) for i in range(len(names) - n + 1))
            for g, k in here.items():
                if key in scored:
                    side = "passed" if scored[key] else "failed"
                    c = grams.setdefault((n, g), Counter())
                    c[f"calls_{side}"] += k
                    c[f"attempts_{side}"] += 1
        i = 0
        while i < len(seq):
            j = i
            same = (seq[i]["tool"], _norm(seq[i]["arguments"]))
            while j + 1 < len(seq) and (seq[j + 1]["tool"], _norm(seq[j + 1]["arguments"])) == same:
                j += 1
            if j - i + 1 >= 3:
                loops.append(
                    (key[0], key[1], seq[i]["tool"], seq[i]["step"], seq[j]["step"], j - i + 1)
                )
            i = j + 1
    for name, c in tools.items():
        with_ = [k for k in scored if any(r["kind"] == "tool_call" and not r["copied"]
                                          and r["tool"] == name for r in rows[k])]  # fmt: skip
        c["passed_with"] = sum(scored[k] for k in with_)
        c["scored_with"] = len(with_)
        c["passed_without"] = sum(scored.values()) - c["passed_with"]
        c["scored_without"] = len(scored) - len(with_)
    firsts = {k: min((r["step"] for r in s if r["is_error"] or r["kind"] == "error"), default=None)
              for k, s in rows.items()}  # fmt: skip
    longest = max((len(s) for s in rows.values()), default=-1)
    survival = [sum(f is None or f > t for f in firsts.values()) for t in range(longest + 1)]
    after = {}
    for k, s in rows.items():
        ok = [
            r["step"]
            for r in s
            if r["kind"] == "tool_result" and not r["is_error"] and not r["copied"]
        ]
        after[k] = len(s) - max(ok) if ok else None
    return {"tools": tools, "grams": grams, "loops": sorted(loops), "firsts": firsts,
            "survival": survival, "after": after,
            "lengths": Counter(len(s) for s in rows.values())}  # fmt: skip


def _norm(args: str | None) -> str | None:
    return None if args is None else json.dumps(json.loads(args), separators=(",", ":"))


@settings(max_examples=40, deadline=None)
@given(spec=_ATTEMPTS)
def test_every_statistic_matches_the_reference(spec: dict[tuple[str, int], Any]) -> None:
    rows = _rows(spec)
    job = _job(rows)
    ref = _reference(rows)
    t = tool_stats(job.con, job.id, resamples=20)
    got = {r["tool"]: r for r in t.tools.to_dict("records")}
    assert set(got) == set(ref["tools"])
    for name, c in ref["tools"].items():
        for col in ("calls", "attempts", "results", "errors", "passed_with", "scored_with",
                    "passed_without", "scored_without"):  # fmt: skip
            assert got[name][col] == c[col], (name, col)
    turns = turn_stats(job.con, job.id, resamples=20, bins=100)
    assert dict(zip(turns.steps["low"], turns.steps["attempts"], strict=True)) == dict(
        ref["lengths"]
    )
    assert turns.survival["no_error"].tolist() == ref["survival"]
    firsts = Counter(f for f in ref["firsts"].values() if f is not None)
    assert (
        dict(zip(turns.first_error["step"], turns.first_error["attempts"], strict=True)) == firsts
    )
    p = action_patterns(job.con, job.id, top=1000)
    got_grams = {(r["n"], r["pattern"]): r for r in p.ngrams.to_dict("records")}
    assert set(got_grams) == set(ref["grams"])
    for key, c in ref["grams"].items():
        for col in ("calls_failed", "calls_passed", "attempts_failed", "attempts_passed"):
            assert got_grams[key][col] == c[col], (key, col)
    got_loops = p.loops[["task", "attempt", "tool", "first_step", "last_step", "repeats"]]
    assert sorted(map(tuple, got_loops.values.tolist())) == ref["loops"]
    for outcome, side in ((1, "passed"), (0, "failed"), (None, "not scored")):
        values = [v for k, v in ref["after"].items() if OUTCOME[k] == outcome and v is not None]
        row = p.after_success[p.after_success["outcome"] == side]
        if values:
            assert row["max_after"].item() == max(values)
            assert row["mean_after"].item() == pytest.approx(sum(values) / len(values))
    for tool in ("a", None):
        for error in (True, None):
            want = []
            for (task, attempt), s in rows.items():
                hits = [
                    r["step"]
                    for r in s
                    if (tool is None or r.get("tool") == tool)
                    and (error is None or (r["is_error"] or r["kind"] == "error") == error)
                ]
                if hits:
                    want.append((task, attempt, min(hits), len(hits)))
            got_find = find_steps_relation(job.con, job.id, tool=tool, error=error).fetchall()
            assert got_find == sorted(want)


def test_statistics_see_steps_written_after_a_first_call() -> None:
    # the per-attempt step summaries are memoized: rows written later must not be missed
    job = _job({("A", 1): WORKED[("A", 1)]})
    before = job.tool_stats(resamples=50)
    assert before.tools["calls"].tolist() == [1, 1]
    assert job.turn_stats(resamples=50).basis.attempts == 1
    _write(job, {("C", 1): WORKED[("C", 1)]})
    after = job.tool_stats(resamples=50)
    assert dict(zip(after.tools["tool"], after.tools["calls"], strict=True)) == {
        "broken": 3, "cat": 1, "ls": 1}  # fmt: skip
    turns = job.turn_stats(resamples=50)
    assert (turns.basis.attempts, turns.basis.failed, turns.without_error) == (2, 1, 1)
    assert turns.first_error.values.tolist() == [[2, 1]]


def test_the_empty_substring_is_in_every_step(worked: enb.Job) -> None:
    # a step without content or arguments holds "" too
    found = worked.find_steps(contains="")
    keys = zip(found["task"], found["attempt"], strict=True)
    got = dict(zip(keys, found["matches"], strict=True))
    assert got == {key: len(rows) for key, rows in WORKED.items()}
