"""Sample data: deterministic, valid EnvLoop exports that load and tell a consistent story."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

import envloop_nb as enb
from tests.conftest import SAMPLE_DATA, SHARED

FILES = {
    "base.json": "job_base",
    "sft-step500.json": "job_sft500",
    "sft-step1000.jsonl.gz": "job_sft1000",
    "running.json": "job_running",
    "graded.json": "job_graded",
    "other-revision.json": "job_otherrev",
}
CHECKPOINTS = ("job_base", "job_sft500", "job_sft1000")
STALE = "job_sft500"  # its platform metrics block is deliberately stale (see generate.py)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_generate", SAMPLE_DATA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


def _document(path: Path) -> dict[str, Any]:
    """The file as a single document (the streaming form reassembled)."""
    if path.name.endswith(".jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        doc = dict(lines[0])
        doc["trials"] = [line for line in lines[1:] if "task" in line]
        tail = [line for line in lines[1:] if "metrics" in line and "task" not in line]
        if tail:
            doc["metrics"] = tail[-1]["metrics"]
        return doc
    with path.open(encoding="utf-8") as f:
        result: dict[str, Any] = json.load(f)
    return result


@pytest.fixture(scope="module")
def loaded() -> Any:
    ws = enb.open()
    jobs = {job_id: ws.load(SAMPLE_DATA / name) for name, job_id in FILES.items()}
    yield ws, jobs
    ws.close()


def test_regenerating_gives_the_committed_bytes(tmp_path: Path) -> None:
    gen = _generator()
    first = tmp_path / "a"
    second = tmp_path / "b"
    gen.generate(first)
    gen.generate(second)
    for name in FILES:
        # Two runs on this machine: byte-identical, the .gz included (fixed mtime).
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
        committed = (SAMPLE_DATA / name).read_bytes()
        fresh = (first / name).read_bytes()
        if name.endswith(".gz"):
            # zlib builds may differ across machines; the content may not.
            assert gzip.decompress(fresh) == gzip.decompress(committed), name
            assert fresh[4:8] == b"\x00\x00\x00\x00"  # gzip mtime field
        else:
            assert fresh == committed, (
                f"{name} differs from what generate.py writes now: if you changed the generator "
                "(or numpy changed a random stream), run `.venv/bin/python sample_data/generate.py` "
                "and commit the files"
            )


def test_files_match_the_published_schema() -> None:
    schema = json.loads((SHARED / "formats" / "envloop-job-result.schema.json").read_text())
    for name in FILES:
        jsonschema.validate(_document(SAMPLE_DATA / name), schema)


def test_sample_data_stays_small() -> None:
    total = sum(p.stat().st_size for p in SAMPLE_DATA.iterdir() if p.is_file())
    assert total < 4_000_000


def test_every_file_loads_with_its_job_id(loaded: Any) -> None:
    ws, jobs = loaded
    assert sorted(ws.jobs()["job_id"]) == sorted(FILES.values())
    for name, job_id in FILES.items():
        doc = _document(SAMPLE_DATA / name)
        job = jobs[job_id]
        assert job.id == job_id
        slots = {(t["task"], t["attempt"]) for t in doc["trials"]}
        assert len(job.attempts()) == len(slots)  # one row per attempt of record
        assert len(job.tasks()) == len(doc["job"]["tasks"])


def _flat(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {key: metrics[key] for key in ("score", "pass", "pass@k", "pass^k", "k")}
    out.update(metrics["score_counts"])
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12)
    return bool(a == b)


def test_platform_metrics_block_equals_recomputed_summary(loaded: Any) -> None:
    _, jobs = loaded
    for name, job_id in FILES.items():
        platform = _flat(_document(SAMPLE_DATA / name)["metrics"])
        mine = jobs[job_id].summary().to_dict()
        agree = all(_same(platform[key], mine[key]) for key in platform)
        if job_id == STALE:
            # Counts agree; the stale score (and pass) do not.
            assert not agree
            assert platform["scored"] == mine["scored"]
            assert platform["score"] < mine["score"]
        else:
            assert agree, (job_id, platform, mine)


def test_checkpoints_share_the_frozen_revision(loaded: Any) -> None:
    ws, _ = loaded
    rows = ws.con.execute(
        """SELECT job_id, dataset_name, dataset_version, dataset_revision, runner, attempts
           FROM jobs WHERE job_id IN ('job_base', 'job_sft500', 'job_sft1000', 'job_running')"""
    ).fetchall()
    assert len({row[1:] for row in rows}) == 1
    assert rows[0][5] == 4
    task_sets = [
        ws.con.execute(
            "SELECT list(task || ' ' || digest ORDER BY position) FROM tasks WHERE job_id = ?",
            [job_id],
        ).fetchone()
        for job_id in (*CHECKPOINTS, "job_running")
    ]
    assert all(ts == task_sets[0] for ts in task_sets)
    subsets = ws.con.execute(
        """SELECT value, count(*) FROM task_tags WHERE job_id = 'job_base' AND key = 'subset'
           GROUP BY value ORDER BY value"""
    ).fetchall()
    assert subsets == [(s, 40) for s in ("code", "math", "reasoning", "tool-use", "writing")]


def test_other_revision_is_not_comparable(loaded: Any) -> None:
    _, jobs = loaded
    base, other = jobs["job_base"], jobs["job_otherrev"]
    assert base.info["dataset_revision"] != other.info["dataset_revision"]
    assert other.k == 2
    a = set(base.tasks()["task"])
    b = set(other.tasks()["task"])
    assert len(a ^ b) == 12


def test_checkpoints_carry_the_promised_variety(loaded: Any) -> None:
    ws, _ = loaded
    for job_id in CHECKPOINTS:
        facts = ws.con.execute(
            """SELECT count(*) FILTER (WHERE status = 'cancelled'),
                      count(*) FILTER (WHERE status = 'failed' AND reward IS NULL),
                      count(*) FILTER (WHERE status = 'completed' AND reward IS NULL),
                      count(*) FILTER (WHERE status = 'failed' AND reward IS NOT NULL),
                      count(*) FILTER (WHERE n_trials > 1),
                      count(*) FILTER (WHERE input_is_chat), count(*) FILTER (WHERE NOT input_is_chat),
                      800 - count(*)
               FROM attempts WHERE job_id = ?""",
            [job_id],
        ).fetchone()
        assert facts is not None
        assert all(n > 0 for n in facts), (job_id, facts)
    graded = ws.con.execute(
        """SELECT count(DISTINCT name), count(*) FILTER (WHERE value NOT IN (0, 1))
           FROM dimensions WHERE job_id = 'job_graded'"""
    ).fetchone()
    assert graded is not None and graded[0] == 4 and graded[1] > 0
    assert ws.job("job_graded").summary().pass_at_k is None  # non-binary


def test_fine_tunes_fix_math_and_code_but_lose_some_writing(loaded: Any) -> None:
    ws, _ = loaded
    rates = dict(
        ws.con.execute(
            """SELECT a.job_id || '/' || t.value, avg(a.reward)
               FROM attempts a JOIN task_tags t USING (job_id, task)
               WHERE t.key = 'subset' GROUP BY ALL"""
        ).fetchall()
    )
    for subset in ("math", "code"):
        assert rates[f"job_sft1000/{subset}"] > rates[f"job_base/{subset}"] + 0.15
    assert rates["job_sft1000/writing"] < rates["job_base/writing"]


def test_formula_like_outputs_exist(loaded: Any) -> None:
    ws, _ = loaded
    outputs = [
        row[0]
        for row in ws.con.execute(
            "SELECT output FROM attempts WHERE job_id = 'job_base' AND output LIKE '=%'"
        ).fetchall()
    ]
    assert any(o.startswith("=HYPERLINK(") for o in outputs)
    assert any(o.startswith("=cmd|") for o in outputs)
