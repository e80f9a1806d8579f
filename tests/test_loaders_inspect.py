"""Inspect AI logs written by inspect_ai itself (``../shared/fixtures/inspect``): both
forms by path alone, the mapping of every field, Inspect's own numbers reproduced, and
bad files refused by place with the workspace left as it was."""

from __future__ import annotations

import json
import math
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from envloop_nb._loaders.inspect.map import Rows, value_to_float

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "inspect"
EVAL_LOGS = sorted((FIXTURES / "eval").glob("*.eval"))
JSON_LOGS = sorted((FIXTURES / "json").glob("*.json"))
ALL_LOGS = EVAL_LOGS + JSON_LOGS


def _raw_samples(log: Path) -> list[dict]:
    if log.suffix == ".json":
        return json.loads(log.read_text())["samples"]
    import zstandard

    out = []
    with zipfile.ZipFile(log) as z:
        for info in z.infolist():
            if info.filename.startswith("samples/"):
                with open(log, "rb") as f:
                    f.seek(info.header_offset + 26)
                    n, m = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
                    f.seek(info.header_offset + 30 + n + m)
                    data = zstandard.ZstdDecompressor().decompress(
                        f.read(info.compress_size), max_output_size=info.file_size
                    )
                out.append(json.loads(data))
    return out


def _header(log: Path) -> dict:
    if log.suffix == ".json":
        return json.loads(log.read_text())
    from envloop_nb._loaders.inspect.read import open_inspect_log

    return open_inspect_log(log).header


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.parent.name + "/" + p.name[20:40])
def test_every_fixture_loads_by_path_alone(log: Path) -> None:
    assert detect_format(log) == "inspect"
    job = enb.open().load(log)
    header = _header(log)
    samples = _raw_samples(log)
    assert job.info["source_format"] == "inspect"
    assert job.k == header["eval"]["config"]["epochs"] == 3
    assert job.info["model"] == header["eval"]["model"]
    tasks = job.tasks()
    assert tasks["task"].tolist() == header["eval"]["dataset"]["sample_ids"]
    attempts = job.attempts()
    assert len(attempts) == len(samples) == 60
    s = job.summary()
    errored = [x for x in samples if x.get("error")]
    nan_exact = [
        x
        for x in samples
        if not x.get("error") and isinstance(x["scores"]["exact"]["value"], float)
    ]
    assert s.total == 60
    assert s.scored == 60 - len(errored) - len(nan_exact)  # errors and NaN are no reward, never 0
    assert s.invalid == len(errored) + len(nan_exact)


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.parent.name + "/" + p.name[20:40])
def test_inspect_own_numbers_are_reproduced(log: Path) -> None:
    job = enb.open().load(log)
    rows = job.source_agreement()
    results = _header(log)["results"]["scores"]
    expected = sum(len(r["metrics"]) + 2 for r in results)  # each metric + the two counts
    assert len(rows) == expected == 14
    assert rows["agrees"].all(), rows[~rows["agrees"]].to_string()
    by = rows.set_index("metric")
    first = results[0]
    assert by.loc["exact · mean · accuracy", "source"] == first["metrics"]["accuracy"]["value"]
    assert (
        by.loc["exact · pass_at_2 · scored_samples", "recomputed"] == results[1]["scored_samples"]
    )
    assert "drops NaN" in by.loc["exact · mean · accuracy", "rule"]


def test_the_ckpt_a_headline_numbers_from_the_fixture_readme() -> None:
    """ckpt-a: exact mean 0.35 over 20 samples, pass_at_2 5/9 over 18 scored, 2 unscored."""
    log = next(p for p in EVAL_LOGS if _header(p)["eval"]["model"] == "mockllm/ckpt-a")
    by = enb.open().load(log).source_agreement().set_index("metric")
    assert by.loc["exact · mean · accuracy", "recomputed"] == 0.35
    assert math.isclose(by.loc["exact · pass_at_2 · accuracy", "recomputed"], 5 / 9, rel_tol=1e-15)
    assert by.loc["exact · pass_at_2 · unscored_samples", "recomputed"] == 2


def test_errored_and_nan_samples_are_invalid_attempts_with_their_error() -> None:
    log = JSON_LOGS[0]
    job = enb.open().load(log)
    a = job.attempts().set_index(["task", "attempt"])
    for raw in _raw_samples(log):
        row = a.loc[(raw["id"], raw["epoch"])]
        if raw.get("error"):
            assert row["status"] == "failed"
            assert math.isnan(row["reward"])
            assert (
                row["error"]
                == raw["error"]["message"]
                == "RuntimeError('simulated provider failure')"
            )
            assert row["error_type"] == "RuntimeError"
        else:
            assert row["status"] == "completed"
            assert pd.isna(row["error"])
            value = raw["scores"]["exact"]["value"]
            if isinstance(value, float):  # NaN: Inspect's unscored sentinel
                assert math.isnan(row["reward"])
                assert row["judge_summary"] == "unscorable"
            else:
                assert row["reward"] == {"C": 1.0, "I": 0.0}[value]


def test_fields_map_to_the_workspace() -> None:
    log = JSON_LOGS[0]
    job = enb.open().load(log)
    raw = _raw_samples(log)[0]
    a = job.attempts().set_index(["task", "attempt"]).loc[(raw["id"], raw["epoch"])]
    chat = json.loads(a["input"])
    assert a["input_is_chat"] and [m["role"] for m in chat] == ["user", "assistant"]
    assert chat[0]["content"] == raw["input"]
    assert a["output"] == raw["output"]["completion"]
    assert a["reference"] == raw["target"] == "Paris"
    usage = next(iter(raw["model_usage"].values()))
    assert (a["input_tokens"], a["output_tokens"]) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )
    assert a["duration_s"] == raw["total_time"]
    assert json.loads(a["extra"])["working_time"] == raw["working_time"]
    assert a["trial_id"] == raw["uuid"]
    tags = json.loads(job.tasks().set_index("task").loc[raw["id"], "tags"])
    assert tags == {"subset": raw["metadata"]["subset"]}
    groups = job.groups(by="subset")
    assert sorted(groups["value"]) == ["easy", "hard"]
    dims = job.dimensions()
    assert set(dims["name"]) == {"brevity"}  # the other scorer, with its own coverage
    brevity = dims[(dims.task == raw["id"]) & (dims.attempt == raw["epoch"])]["value"].item()
    assert brevity == raw["scores"]["brevity"]["value"]
    info = job.info
    assert info["extra"]["inspect"]["reward_scorer"] == "exact"
    assert info["platform_metrics"]["headline"]["scorer"] == "exact"
    assert info["status"] == "completed" and info["created_at"] is not None


def test_the_two_forms_of_one_checkpoint_agree() -> None:
    ws = enb.open()
    for model in ("mockllm/ckpt-a", "mockllm/ckpt-b"):
        jobs = [ws.load(p) for p in ALL_LOGS if _header(p)["eval"]["model"] == model]
        assert len(jobs) == 2
        a, b = (j.summary() for j in jobs)
        assert (a.score, a.scored, a.invalid, a.pass_at_k) == (
            b.score,
            b.scored,
            b.invalid,
            b.pass_at_k,
        )


def test_two_checkpoints_compare_as_the_same_frozen_work() -> None:
    ws = enb.open()
    a, b = (ws.load(p) for p in EVAL_LOGS)
    cmp = ws.compare([a, b])
    assert len(cmp.jobs) == 2


def test_value_to_float_follows_inspect() -> None:
    assert [value_to_float(v) for v in ("C", "I", "P", "N")] == [1.0, 0.0, 0.5, 0.0]
    assert value_to_float("YES") == 1.0 and value_to_float("no") == 0.0
    assert (
        value_to_float("3.5") == 3.5 and value_to_float(2) == 2.0 and value_to_float(False) == 0.0
    )
    for nothing in (float("nan"), None, "n/a", "inf", [1]):
        assert value_to_float(nothing) is None  # never an invented 0


def test_dict_valued_scores_give_one_dimension_per_key() -> None:
    rows = Rows()
    sample = {
        "id": "s1",
        "epoch": 1,
        "scores": {"rubric": {"value": {"style": 0.5, "tests": "C"}}, "exact": {"value": "I"}},
    }
    rows.add(Path("x.json"), "samples[0]", sample, "exact")
    assert rows.attempts["reward"] == [0.0]
    assert list(zip(rows.dims["name"], rows.dims["value"], strict=True)) == [
        ("rubric.style", 0.5),
        ("rubric.tests", 1.0),
    ]


def test_a_duplicate_sample_epoch_is_refused_by_place() -> None:
    rows = Rows()
    rows.add(Path("x.json"), "samples[0]", {"id": "a", "epoch": 1}, None)
    with pytest.raises(
        enb.LoadError, match=r"samples\[1\].*appears twice \(also at samples\[0\]\)"
    ):
        rows.add(Path("x.json"), "samples[1]", {"id": "a", "epoch": 1}, None)


def _snapshot(ws: enb.Workspace) -> list:
    return [
        ws.con.execute(f"SELECT count(*) FROM {t}").fetchone()
        for t in ("jobs", "tasks", "attempts", "dimensions")
    ]


def test_a_corrupt_eval_member_names_the_member_and_changes_nothing(tmp_path: Path) -> None:
    ws = enb.open()
    first = ws.load(EVAL_LOGS[0])
    bad = tmp_path / EVAL_LOGS[0].name
    shutil.copy(EVAL_LOGS[0], bad)
    with zipfile.ZipFile(bad) as z:
        info = next(i for i in z.infolist() if i.filename == "samples/c03_epoch_2.json")
    data = bytearray(bad.read_bytes())
    at = (
        info.header_offset
        + 30
        + len(info.filename.encode())
        + len(info.extra)
        + info.compress_size // 2
    )
    data[at] ^= 0xFF
    bad.write_bytes(bytes(data))
    before = _snapshot(ws)
    with pytest.raises(enb.LoadError, match=r"samples/c03_epoch_2\.json: corrupt"):
        ws.load(bad, job_id=first.id)  # a reload of the same job fails whole
    assert _snapshot(ws) == before
    assert first.summary().total == 60


def test_a_truncated_eval_log_says_so_and_changes_nothing(tmp_path: Path) -> None:
    """A .eval cut short has lost its zip directory: it is refused as an unreadable
    archive (it was parsed as JSON and reported "not valid UTF-8")."""
    ws = enb.open()
    ws.load(EVAL_LOGS[0])
    data = EVAL_LOGS[0].read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) * 2 // 3])
    before = _snapshot(ws)
    with pytest.raises(enb.LoadError, match=r"cut\.eval: not a readable \.eval archive"):
        ws.load(cut)
    assert _snapshot(ws) == before


def test_a_truncated_json_log_names_the_line_and_changes_nothing(tmp_path: Path) -> None:
    ws = enb.open()
    ws.load(JSON_LOGS[0])
    text = JSON_LOGS[0].read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    before = _snapshot(ws)
    with pytest.raises(enb.LoadError, match=r"cut\.json, line \d+"):
        ws.load(cut, format="inspect")
    assert _snapshot(ws) == before


def test_a_log_still_running_has_missing_slots(tmp_path: Path) -> None:
    """A log cut short (no header.json: Inspect was still writing) keeps what ran; the
    samples that never ran are missing slots that count in coverage."""
    src = EVAL_LOGS[0]
    part = tmp_path / "running.eval"
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(part, "w") as out:
        for info in z.infolist():
            if info.filename in ("header.json", "reductions.json", "summaries.json"):
                continue
            if info.filename.startswith("samples/") and not info.filename.endswith("_epoch_1.json"):
                continue
            out.writestr(info.filename, _member(src, info), compress_type=zipfile.ZIP_DEFLATED)
    job = enb.open().load(part)
    assert job.info["status"] == "running"
    s = job.summary()
    assert job.k == 3 and s.total == 60 and len(job.attempts()) == 20
    assert job.source_agreement().empty  # no results block: nothing to compare


def _member(src: Path, info: zipfile.ZipInfo) -> bytes:
    from envloop_nb._loaders.inspect.read import mapped, member_bytes

    with mapped(src) as data:
        return member_bytes(src, data, info)


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.parent.name + "/" + p.name[20:40])
def test_the_sql_mapping_equals_the_python_reference(log: Path) -> None:
    """The loader maps samples in DuckDB SQL; ``inspect.map.Rows`` is the same mapping in
    plain Python. Both must give the same rows, field by field."""
    from envloop_nb._loaders.inspect.map import reward_name
    from envloop_nb._loaders.inspect.read import open_inspect_log

    parsed = open_inspect_log(log)
    ref = Rows()
    reward = reward_name(parsed.header)
    for place, sample in parsed.samples():
        ref.add(log, place, sample, reward)
    job = enb.open().load(log)
    got = job.attempts().set_index(["task", "attempt"])
    expected = pd.DataFrame(ref.attempts).set_index(["task", "attempt"])
    assert sorted(got.index) == sorted(expected.index)
    for column in expected.columns:
        for key, want in expected[column].items():
            have = got.loc[key, column]
            if column in ("input", "extra") and isinstance(want, str) and isinstance(have, str):
                want_j, have_j = json.loads(want), json.loads(have)
                if column == "extra":  # the SQL path keeps the whole score objects
                    assert have_j.get("working_time") == want_j.get("working_time")
                    continue
                assert have_j == want_j, (column, key)
            elif pd.isna(want) if not isinstance(want, (list, dict)) else False:
                assert pd.isna(have), (column, key, have)
            elif column in ("started_at", "finished_at"):
                assert pd.Timestamp(have) == pd.Timestamp(want), (column, key)
            else:
                assert have == want, (column, key, have, want)
    dims = job.dimensions()
    ref_dims = pd.DataFrame(ref.dims)
    merged = dims.merge(ref_dims, on=["task", "attempt", "name"], suffixes=("", "_ref"))
    assert len(merged) == len(dims) == len(ref_dims)
    assert (
        (merged.value == merged.value_ref) | (merged.value.isna() & merged.value_ref.isna())
    ).all()
    tags = job.tasks().set_index("task")["tags"].map(json.loads).to_dict()
    assert tags == {t: ref.tags[t] for t in tags}


def test_dict_scores_nested_metadata_and_odd_values_in_a_real_log(tmp_path: Path) -> None:
    doc = json.loads(JSON_LOGS[0].read_text())
    first = doc["samples"][0]
    first["scores"]["rubric"] = {"value": {"style": 0.5, "tests": "C", "tone": "maybe"}}
    first["metadata"] = {"subset": "easy", "source": {"site": "wiki", "year": 2024}, "ok": True,
                         "refs": [1, 2], "none": None, 'say "hi"': {"it's": "q"}}  # fmt: skip
    first["scores"]["brevity"]["value"] = "yes"
    first["scores"]["brevity"]["answer"] = None
    first.pop("working_time", None)
    first["limit"] = {"type": "token", "limit": 100}
    first["error_retries"] = []
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    job = enb.open().load(path)
    dims = job.dimensions()
    mine = dims[(dims.task == first["id"]) & (dims.attempt == first["epoch"])]
    values = dict(zip(mine.name, mine.value, strict=True))
    assert (
        values["brevity"] == 1.0 and values["rubric.style"] == 0.5 and values["rubric.tests"] == 1.0
    )
    assert math.isnan(values["rubric.tone"])  # a string Inspect cannot read: no value, not 0
    attempts = job.attempts()
    row = attempts[(attempts.task == first["id"]) & (attempts.attempt == first["epoch"])]
    # extra: every score object whole (a null answer kept), the limit; no working_time
    # (the sample has none) and no empty retries list
    assert json.loads(row["extra"].iloc[0]) == {
        "scores": first["scores"], "limit": {"type": "token", "limit": 100}
    }  # fmt: skip
    tags = json.loads(job.tasks().set_index("task").loc[first["id"], "tags"])
    assert tags == {
        "subset": "easy",
        "source.site": "wiki",
        "source.year": "2024",
        "ok": "true",
        "refs": "[1,2]",
        'say "hi".it\'s': "q",
    }  # fmt: skip (quotes kept)


@pytest.mark.parametrize("k", [0, 2.5, "3", 2**31])
def test_a_bad_k_is_refused_like_every_loader(k: object) -> None:
    with pytest.raises(enb.LoadError, match=r"\.eval, k: (expected an integer >= 1|k \d+ is out)"):
        enb.open().load(EVAL_LOGS[0], k=k)


def test_a_json_log_too_large_for_memory_says_so_and_changes_nothing(tmp_path: Path) -> None:
    """A .json log not laid out as Inspect writes it is read whole: beyond the memory
    limit the error says so and what to do (it was a misleading "transaction is
    aborted"); in Inspect's own layout it is read in chunks, and a chunk beyond the
    limit says so too. Either way the workspace is unchanged."""
    import glob

    import envloop_nb as enb

    path = sorted(glob.glob(str(FIXTURES / "json" / "*.json")))[0]
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(json.loads(Path(path).read_text())))
    for log, message in (
        (compact, r"too large for the workspace's memory limit when read whole .*memory_limit='4GB'.*\.eval form"),
        (Path(path), r"a chunk of its samples does not fit the workspace's memory limit .*memory_limit='4GB'"),
    ):  # fmt: skip
        ws = enb.open()
        ws.con.execute("SET memory_limit = '3MB'")
        with pytest.raises(enb.LoadError, match=message):
            ws.load(log)
        ws.con.execute("SET memory_limit = '1GB'")
        assert len(ws.jobs()) == 0
        assert ws.load(log).id  # and with room, it loads


def _job_rows(ws: enb.Workspace, jid: str) -> dict[str, list]:
    order = {
        "attempts": "task, attempt",
        "dimensions": "task, attempt, name",
        "tasks": "position",
        "task_tags": "task, key",
        "dimension_meta": "name",
    }
    return {
        table: ws.con.execute(
            f"SELECT * EXCLUDE (job_id) FROM {table} WHERE job_id = ? ORDER BY {keys}", [jid]
        ).fetchall()
        for table, keys in order.items()
    }


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.suffix + "/" + p.name[-20:])
def test_a_log_read_in_many_chunks_equals_one_read_whole(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The samples are mapped chunk by chunk (each chunk's rows written while the next
    is mapped): a log split into chunks of 7 samples gives exactly the rows of one
    chunk, including tasks whose first sample is in an earlier chunk."""
    from envloop_nb._loaders.inspect import sql as inspect_sql

    whole = enb.open()
    job = whole.load(log)
    monkeypatch.setattr(inspect_sql, "_CHUNK", 7)
    chunked = enb.open()
    assert chunked.load(log).id == job.id
    assert _job_rows(chunked, job.id) == _job_rows(whole, job.id)
    assert len(_job_rows(whole, job.id)["attempts"]) == 60


def test_a_duplicate_across_chunks_and_a_bad_sample_in_a_later_chunk_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Errors found after earlier chunks were written (a duplicate across chunks, a bad
    sample in the last chunk) still roll the whole load back, naming the place."""
    from envloop_nb._loaders.inspect import sql as inspect_sql

    monkeypatch.setattr(inspect_sql, "_CHUNK", 7)
    doc = json.loads(JSON_LOGS[0].read_text())
    ws = enb.open()
    ws.load(EVAL_LOGS[0])
    before = _snapshot(ws)
    dup = json.loads(json.dumps(doc))
    dup["samples"][50] = dict(
        dup["samples"][50], id=dup["samples"][2]["id"], epoch=dup["samples"][2]["epoch"]
    )
    bad = json.loads(json.dumps(doc))
    bad["samples"][58]["started_at"] = "yesterday"
    # two chunks are mapped at once: a bad sample in each, the first in log order is named
    two = json.loads(json.dumps(bad))
    two["samples"][9]["completed_at"] = "later"
    for name, changed, message in (
        ("dup.json", dup, r"samples\[50\]: sample .* appears twice \(also at samples\[2\]\)"),
        ("bad.json", bad, r"samples\[58\]: started_at is not an RFC 3339 time"),
        ("two.json", two, r"samples\[9\]: completed_at is not an RFC 3339 time"),
    ):
        path = tmp_path / name
        path.write_text(json.dumps(changed, indent=2))  # Inspect's layout: read in chunks
        with pytest.raises(enb.LoadError, match=message):
            ws.load(path)
        assert _snapshot(ws) == before


LOG_2024 = next((Path(__file__).parent / "data" / "inspect_2024").glob("*.json"))


def test_a_2024_json_log_without_eval_id_is_detected_and_agrees() -> None:
    """Inspect wrote no ``eval.eval_id`` before 2025 (tests/data/inspect_2024): such a log
    was not detected and fell through to the table loader ('column task: missing')."""
    assert b'"eval_id"' not in LOG_2024.read_bytes()
    assert detect_format(LOG_2024) == "inspect"
    ws = enb.open()
    job = ws.load(LOG_2024)
    header = json.loads(LOG_2024.read_text())
    assert job.info["source_format"] == "inspect" and job.k == 3
    assert job.info["model"] == header["eval"]["model"] == "mockllm/ckpt-a"
    assert job.tasks()["task"].tolist() == header["eval"]["dataset"]["sample_ids"]
    rows = job.source_agreement()
    expected = sum(len(r["metrics"]) for r in header["results"]["scores"])  # no counts in 2024
    assert len(rows) == expected == 6
    assert rows["agrees"].all(), rows[~rows["agrees"]].to_string()
    # the same samples as the 2026 log it was made from: the same numbers
    modern = ws.load(next(p for p in JSON_LOGS if "WfHWhh9m" in p.name), job_id="modern")
    assert str(job.summary()) == str(modern.summary())
    pd.testing.assert_frame_equal(
        job.attempts()[["task", "attempt", "reward", "status"]],
        modern.attempts()[["task", "attempt", "reward", "status"]],
    )


def _choice_text(sample: dict) -> str | None:
    """``ModelOutput.completion`` as Inspect computed it in 2024: the first choice's
    message text (a string, or its text parts joined by newlines)."""
    choices = sample["output"].get("choices") or []
    if not choices:
        return None
    content = choices[0]["message"]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


@pytest.mark.parametrize("indent", [2, None], ids=["chunked", "whole"])
def test_a_2024_log_s_output_is_its_first_choice_s_text(tmp_path: Path, indent: int | None) -> None:
    """2024 logs store no ``output.completion`` (a computed property then): the output is
    ``output.choices[0].message.content``, a string or a list of content parts (text
    parts joined by newlines, as Inspect's ``.text`` does), in the SQL mapping and in the
    Python reference alike. Every 2024 attempt loaded with ``output`` empty."""
    from envloop_nb._loaders.inspect.map import reward_name
    from envloop_nb._loaders.inspect.read import open_inspect_log

    doc = json.loads(LOG_2024.read_text())
    assert all("completion" not in s["output"] for s in doc["samples"])
    parts = [
        {"type": "reasoning", "reasoning": "The capital..."},
        {"type": "text", "text": "Paris"},
        {"type": "image", "image": "data:image/png;base64,AAAA"},
        {"type": "text", "text": "I am sure"},
    ]
    doc["samples"][1]["output"]["choices"][0]["message"]["content"] = parts
    doc["samples"][2]["output"]["choices"] = []  # no choice: no output, not ""
    path = tmp_path / LOG_2024.name
    path.write_text(json.dumps(doc, indent=indent))
    want = {(str(s["id"]), s["epoch"]): _choice_text(s) for s in doc["samples"]}
    assert want[str(doc["samples"][1]["id"]), doc["samples"][1]["epoch"]] == "Paris\nI am sure"
    got = enb.open().load(path).attempts().set_index(["task", "attempt"])["output"]
    assert {k: (None if pd.isna(v) else v) for k, v in got.items()} == want
    log = open_inspect_log(path)
    ref = Rows()
    for place, sample in log.samples():
        ref.add(path, place, sample, reward_name(log.header))
    keys = zip(ref.attempts["task"], ref.attempts["attempt"], strict=True)
    assert dict(zip(keys, ref.attempts["output"], strict=True)) == want


@pytest.mark.parametrize(
    "head",
    [
        # Inspect's own order (version, status, eval first) with a long dataset before model
        b'{\n  "version": 2,\n  "status": "success",\n  "eval": {\n    "run_id": "x",\n'
        b'    "dataset": {"sample_ids": [' + b'"s", ' * 2000,
        # another writer's key order, but the top level and eval's keys say Inspect
        b'{"eval": {"task": "t", "created": "2024", "model": "m/x", "config": {}}, "status": '
        b'"success", "version": 2, "samples": [',
    ],
)
def test_an_inspect_json_head_is_recognised_without_eval_id(head: bytes) -> None:
    from envloop_nb._loaders.inspect.read import is_inspect_json_head

    assert is_inspect_json_head(head[:4096])


@pytest.mark.parametrize(
    "head",
    [
        b'{"results": [], "eval": "x", "version": 1}',  # eval not an object
        b'{"rows": [{"eval": {"task": "t", "model": "m"}, "status": "success"}]}',  # nested
        b'[{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}]',
        b'{"eval": {"task": "t", "model": "m"}}',  # no version or status beside it
        b'{"version": 2, "status": "done", "eval": {"x": 1}}',  # not an Inspect status
    ],
)
def test_other_json_heads_are_not_inspect(head: bytes) -> None:
    from envloop_nb._loaders.inspect.read import is_inspect_json_head

    assert not is_inspect_json_head(head)


def _header_only(log: Path, out: Path) -> Path:
    """The log as Inspect writes it with ``--no-log-samples``: the header, no samples."""
    if log.suffix == ".json":
        doc = json.loads(log.read_text())
        del doc["samples"]  # written with exclude_none: no key at all
        doc.pop("reductions", None)
        out = out / log.name
        out.write_text(json.dumps(doc, indent=2))
        return out
    from envloop_nb._loaders.inspect import zip as iz

    entries = {m.filename: m for m in iz.central_directory(log)}
    out = out / log.name
    with iz.mapped(log) as data, zipfile.ZipFile(out, "w") as z:
        for name in ("_journal/start.json", "header.json"):
            z.writestr(name, iz.member_bytes(log, data, entries[name]))
    return out


@pytest.mark.parametrize("log", [EVAL_LOGS[0], JSON_LOGS[0]], ids=lambda p: p.suffix)
def test_a_log_without_samples_cannot_check_its_numbers(log: Path, tmp_path: Path) -> None:
    """A header-only log states scores it holds no samples for: each is 'cannot be
    checked' (agrees None, with a note), not a disagreement against a recomputed NaN."""
    path = _header_only(log, tmp_path)
    job = enb.open().load(path)
    assert job.attempts().empty
    rows = job.source_agreement()
    assert len(rows) == 8  # the reward's numbers (the dimensions come from samples)
    assert rows["agrees"].isna().all(), rows[["metric", "agrees"]].to_string()
    assert all("cannot be checked" in n and "no attempts" in n for n in rows["note"])
    from envloop_nb._present.panel_html import source_agreement_html

    html = source_agreement_html("Inspect AI", rows.to_dict("records"))
    head = html.split('class="enb-panel">')[1].split("<details>")[0]
    assert "agree" not in head and "none of Inspect AI's 8 numbers can be checked" in head


# --- zip bombs: an .eval member's inflation is bounded before memory is spent --------


def _zip(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip archive of ``(name, method, stored bytes, crc, stated size)`` members,
    written by hand: zipfile cannot write zstd (method 93) nor state a false size."""
    import struct

    body, directory = bytearray(), bytearray()
    for name, method, raw, crc, size in members:
        n = name.encode()
        at = len(body)
        body += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(raw), size, len(n), 0
        )
        body += n + raw
        directory += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(raw), size,
            len(n), 0, 0, 0, 0, 0, at,
        ) + n  # fmt: skip
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), len(body), 0
    )
    return bytes(body + directory + end)


def _header_json() -> bytes:
    from envloop_nb._loaders.inspect import zip as iz

    entries = {m.filename: m for m in iz.central_directory(EVAL_LOGS[0])}
    with iz.mapped(EVAL_LOGS[0]) as data:
        return iz.member_bytes(EVAL_LOGS[0], data, entries["header.json"])


def _bomb_sample(size: int) -> bytes:
    """A valid sample JSON of ``size`` bytes, nearly all one repeated character."""
    head = b'{"id": "c00", "epoch": 1, "scores": {"exact": {"value": "C"}}, "pad": "'
    return head + b"a" * (size - len(head) - 2) + b'"}'


def _bomb_log(tmp_path: Path, method: int, *, stated: int | None = None) -> Path:
    import zlib

    import zstandard

    header = _header_json()
    payload = _bomb_sample(4 << 20)  # 4 MiB: compresses to a few hundred bytes
    if method == 93:
        raw = zstandard.ZstdCompressor().compress(payload)  # states its size in the frame
    else:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw = c.compress(payload) + c.flush()
    size = len(payload) if stated is None else stated
    members = [
        ("header.json", 0, header, zlib.crc32(header), len(header)),
        ("samples/c00_epoch_1.json", method, raw, zlib.crc32(payload), size),
    ]
    log = tmp_path / f"bomb-{method}.eval"
    log.write_bytes(_zip(members))
    return log


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limits scaled down (1 MiB floor) so a 4 MiB bomb stands for a 3 GiB one."""
    from envloop_nb._loaders.inspect import inflate as zip_inflate

    monkeypatch.setattr(zip_inflate, "MEMBER_RATIO_FLOOR", 1 << 20)


@pytest.mark.usefixtures("small_limits")
@pytest.mark.parametrize("method", [93, zipfile.ZIP_DEFLATED], ids=["zstd", "deflate"])
def test_a_zip_bomb_member_is_refused_by_name(method: int, tmp_path: Path) -> None:
    """246 KB stating 3 GiB: refused on its stated ratio before a byte is inflated (it
    ran the machine out of memory: a bare MemoryError at ~6 GB)."""
    log = _bomb_log(tmp_path, method)
    ws = enb.open()
    before = _snapshot(ws)
    with pytest.raises(
        enb.LoadError,
        match=rf"bomb-{method}\.eval, samples/c00_epoch_1\.json: .* compressed bytes state "
        r"4,194,304 inflated .*over the limit of 100:1.*zip bomb",
    ):
        ws.load(log)
    assert _snapshot(ws) == before


@pytest.mark.usefixtures("small_limits")
@pytest.mark.parametrize("method", [93, zipfile.ZIP_DEFLATED], ids=["zstd", "deflate"])
def test_a_member_inflating_past_its_stated_size_stops_there(method: int, tmp_path: Path) -> None:
    """The directory understates the size (1,000 bytes): inflating stops right past it
    (zstd's one-shot decompress allocated the frame's own stated size instead)."""
    log = _bomb_log(tmp_path, method, stated=1000)
    with pytest.raises(
        enb.LoadError,
        match=r"samples/c00_epoch_1\.json: corrupt member: it inflates past the 1,000 bytes",
    ):
        enb.open().load(log)


def test_a_member_over_the_absolute_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envloop_nb._loaders.inspect import inflate as zip_inflate

    monkeypatch.setattr(zip_inflate, "MEMBER_MAX_BYTES", 1 << 20)
    with pytest.raises(
        enb.LoadError,
        match=r"samples/c00_epoch_1\.json: the member states it inflates to 4,194,304 bytes, "
        r"over the limit of 1,048,576",
    ):
        enb.open().load(_bomb_log(tmp_path, zipfile.ZIP_DEFLATED))


@pytest.mark.usefixtures("small_limits")
def test_many_members_that_inflate_together_are_refused(tmp_path: Path) -> None:
    """Each member below the ratio floor, a chunk of them together far above it."""
    import zlib

    import zstandard

    header = _header_json()
    members = [("header.json", 0, header, zlib.crc32(header), len(header))]
    for i in range(8):
        payload = _bomb_sample(1 << 19).replace(b'"c00"', f'"c{i:02d}"'.encode())
        raw = zstandard.ZstdCompressor().compress(payload)
        name = f"samples/c{i:02d}_epoch_1.json"
        members.append((name, 93, raw, zlib.crc32(payload), len(payload)))
    log = tmp_path / "many.eval"
    log.write_bytes(_zip(members))
    with pytest.raises(enb.LoadError, match=r"many\.eval, samples/c0\d_epoch_1\.json: 8 members"):
        enb.open().load(log)


def test_a_bomb_header_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zlib

    import zstandard

    from envloop_nb._loaders.inspect import inflate as zip_inflate

    monkeypatch.setattr(zip_inflate, "MEMBER_RATIO_FLOOR", 1 << 20)
    header = json.loads(_header_json())
    header["pad"] = "a" * (4 << 20)
    text = json.dumps(header).encode()
    log = tmp_path / "header-bomb.eval"
    raw = zstandard.ZstdCompressor().compress(text)
    log.write_bytes(_zip([("header.json", 93, raw, zlib.crc32(text), len(text))]))
    with pytest.raises(enb.LoadError, match=r"header-bomb\.eval, header\.json: .*zip bomb"):
        enb.open().load(log)


def _with_epochs(tmp_path: Path, epochs: object) -> Path:
    doc = json.loads(JSON_LOGS[0].read_text())
    doc["eval"]["config"]["epochs"] = epochs
    path = tmp_path / f"epochs-{epochs}.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_an_absurd_epochs_claim_is_refused_by_place(tmp_path: Path) -> None:
    """``eval.config.epochs`` of 2e9 over samples of 3 epochs was taken as k, and
    ``curve()`` then built ``range(1, k + 1)`` until MemoryError."""
    ws = enb.open()
    ws.load(JSON_LOGS[0])
    before = _snapshot(ws)
    with pytest.raises(
        enb.LoadError,
        match=r"epochs-2000000000\.json, eval\.config\.epochs: claims 2,000,000,000 epochs "
        r"but no sample ran more than 3",
    ):
        ws.load(_with_epochs(tmp_path, 2_000_000_000))
    assert _snapshot(ws) == before


def test_a_plausible_epochs_claim_beyond_the_samples_is_k(tmp_path: Path) -> None:
    """A run stopped early: 20 epochs asked, 3 ran; the 17 missing count in coverage."""
    with pytest.warns(enb.LoadWarning, match="ran fewer than 20 epochs"):
        job = enb.open().load(_with_epochs(tmp_path, 20))
    assert job.k == 20
    assert enb.open().load(_with_epochs(tmp_path, 20), k=3).k == 3  # k= overrides


# -- a scorer's scale: what the log states, nothing invented (issue 37) -------------------
def _scales(job: enb.Job) -> dict[str, str]:
    from envloop_nb._metrics.scale import dimension_scales

    return {n: s.describe() for n, s in dimension_scales(job.con, job.id).items()}


@pytest.mark.parametrize("log", [EVAL_LOGS[0], JSON_LOGS[0]], ids=["eval", "json"])
def test_a_numeric_scorer_states_no_scale(log: Path) -> None:
    """``brevity`` returns numbers with a ``mean`` metric: the log says neither range nor
    direction, so neither is shown as the source's (it read '0–1, higher is better')."""
    job = enb.open().load(log)
    meta = job.workspace.sql("SELECT name, unit, higher_is_better FROM dimension_meta")
    assert meta.fetchall() == [("brevity", None, None)]
    assert _scales(job) == {"brevity": "range not stated (values within 0–1), direction not stated"}
    dims = job.groups(by="dimension").set_index("dimension")
    assert dims.loc["brevity", "higher_is_better"] is None
    assert dims.loc["reward", "higher_is_better"]  # the reward's direction is the platform's


def _rewritten(tmp_path: Path, change: dict) -> Path:
    """The fixture's first .json log with ``change`` applied (a real log, re-written)."""
    doc = json.loads(JSON_LOGS[0].read_text())
    if "headline" in change:
        doc["results"]["headline"] = change["headline"]
    for scorer in doc["eval"]["scorers"]:
        scorer["metadata"] = change.get("metadata", {}).get(scorer["name"], scorer["metadata"])
    out = tmp_path / JSON_LOGS[0].name
    out.write_text(json.dumps(doc, indent=2))
    return out


def test_correctness_letters_are_a_rate_where_higher_is_better(tmp_path: Path) -> None:
    """``exact`` scores C / I (its unscorable samples NaN): its ``accuracy`` is the share
    correct, so as a dimension (``brevity`` made the headline) it is a 0–1 rate, higher
    is better; ``brevity`` still states nothing."""
    headline = {"scorer": "brevity", "score": "brevity", "metric": "mean", "reducer": "mean"}
    job = enb.open().load(_rewritten(tmp_path, {"headline": headline}))
    meta = job.workspace.sql("SELECT name, unit, higher_is_better FROM dimension_meta")
    assert meta.fetchall() == [("exact", "rate", True)]
    assert _scales(job) == {"exact": "0–1 rate, higher is better"}


def test_a_scorers_metadata_states_its_scale(tmp_path: Path) -> None:
    """``@scorer(metrics=[mean()], unit=..., higher_is_better=...)`` lands in the log's
    ``eval.scorers[].metadata``: taken under the names EnvLoop uses."""
    said = {"brevity": {"unit": "ratio", "higher_is_better": False, "note": "x"}}
    job = enb.open().load(_rewritten(tmp_path, {"metadata": said}))
    assert _scales(job) == {"brevity": "0–1 ratio, lower is better"}
    bad = {"brevity": {"unit": 3, "higher_is_better": "yes"}}  # not a unit, not a bool
    job = enb.open().load(_rewritten(tmp_path, {"metadata": bad}))
    assert _scales(job) == {"brevity": "range not stated (values within 0–1), direction not stated"}
