"""SQL payloads as data: names and ids that look like SQL stay data, in every loader and
in every path that builds SQL from data (buckets, cases, compare, exports).

Each payload is used at once as job id, task ids, tag key (and value), dimension name
and column name (table loader: a ``dim_*``/``tag_*`` column, the mapped task column,
an extra column). A load either succeeds with every name kept verbatim or fails with
``enb.LoadError``; an innocent name (a quote, a backslash, ``$``, ``?``, unicode) must
load and round-trip exactly. In no case may a table ``pwned`` appear, a file be
written, or anything outside the loaded job change.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openpyxl import load_workbook

import envloop_nb as enb
from envloop_nb import Bucket, BucketRules
from envloop_nb._store.sql import ident, json_pointer, json_pointer_sql, literal, number
from envloop_nb._ui.cases_query import CaseQuery, CaseSource
from tests.conftest import HARBOR, TAU_BENCH, THREE_TASKS

ROOT = Path(__file__).resolve().parent.parent
TAU2 = ROOT / "tests" / "data" / "tau2" / "results.json"
MULTIKEY = HARBOR / "2026-03-03__09-00-00-multikey"
MARKER = f"pwned_{uuid.uuid4().hex}"
MARKER_FILE = Path(tempfile.gettempdir()) / f"{MARKER}.csv"

#: Payloads that try to break out of an identifier, a string literal or a ``CASE``
#: message and run a statement of their own (table ``pwned``, a file ``MARKER_FILE``).
HOSTILE = [
    'x"; CREATE TABLE pwned(a INT); --',
    "x'; CREATE TABLE pwned(a INT); --",
    "q' END AS _problem FROM _tb_src; CREATE TABLE pwned AS SELECT 1 AS a; --",
    'q" END AS _problem FROM _tb_src; CREATE TABLE pwned AS SELECT 1 AS a; --',
    f"c') AS _problem FROM _tb_src; COPY (SELECT 1) TO '{MARKER_FILE}'; --",
    f"c' END AS _problem FROM _tb_src; COPY (SELECT 1) TO '{MARKER_FILE}'; --",
    "k'), ('pwned', 1); CREATE TABLE pwned(a INT); --",
]
#: Names a user may well have: each must load and come back exactly.
INNOCENT = [
    "child's score",
    'say "hi"',
    "back\\slash\\",
    "$1 ? $jid ?",
    "$",
    "/x/~1",
    "ünïcödé 名前 🙂",
    "a.b[0] *",
    "it''s \"\"",
]
PAYLOADS = HOSTILE + INNOCENT


def _is_innocent(payload: str) -> bool:
    return payload in INNOCENT


def _id(payload: str) -> str:
    return f"{PAYLOADS.index(payload):02d}"


# -- what must not change -----------------------------------------------------------


def _catalog(ws: enb.Workspace) -> list[tuple[Any, ...]]:
    """Every table and view (temporary too) in every schema."""
    return ws.con.execute(
        """SELECT database_name, schema_name, table_name, 'table' FROM duckdb_tables()
           UNION ALL
           SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views()
           WHERE NOT internal
           ORDER BY ALL"""
    ).fetchall()


def _snapshot(ws: enb.Workspace, *, without_job: str | None = None) -> dict[str, Any]:
    """All rows of every workspace table, except (optionally) those of one job."""
    snap: dict[str, Any] = {"catalog": _catalog(ws)}
    for db, schema, table, kind in snap["catalog"]:
        if kind != "table" or db == "temp":
            continue
        name = f"{ident(db)}.{ident(schema)}.{ident(table)}"
        cols = [r[0] for r in ws.con.execute(f"DESCRIBE {name}").fetchall()]
        where = "WHERE job_id IS DISTINCT FROM ?" if "job_id" in cols and without_job else ""
        params = [without_job] if where else []
        snap[table] = ws.con.execute(
            f"SELECT * FROM {name} {where} ORDER BY ALL", params
        ).fetchall()
    return snap


def _no_side_effects(ws: enb.Workspace) -> None:
    """No table ``pwned`` anywhere, and the payloads' ``COPY ... TO`` wrote no file."""
    assert "pwned" not in [r[2].lower() for r in _catalog(ws)]
    assert not MARKER_FILE.exists()


@pytest.fixture
def ws() -> Iterator[enb.Workspace]:
    """A workspace holding one good job already (which must stay exactly as it is)."""
    workspace = enb.open()
    workspace.load(THREE_TASKS)
    yield workspace
    workspace.close()
    MARKER_FILE.unlink(missing_ok=True)


def _load_checked(
    ws: enb.Workspace,
    payload: str,
    source: Any,
    expect: dict[str, Any],
    **options: Any,
) -> enb.Job | None:
    """Load; check verbatim round-trip or a LoadError, and that nothing else changed."""
    before = _snapshot(ws)
    try:
        job = ws.load(source, **options)
    except enb.LoadError:
        if _is_innocent(payload):
            raise
        _no_side_effects(ws)
        assert _snapshot(ws) == before
        return None
    assert isinstance(job, enb.Job)
    _no_side_effects(ws)
    after = _snapshot(ws, without_job=job.id)
    assert {k: v for k, v in after.items() if k != "catalog"} == {
        k: v for k, v in before.items() if k != "catalog"
    }
    assert after["catalog"] == before["catalog"]
    _check_verbatim(job, expect)
    return job


def _check_verbatim(job: enb.Job, expect: dict[str, Any]) -> None:
    assert job.id == expect["job_id"]
    assert list(job.tasks()["task"]) == expect["tasks"]
    if "dimensions" in expect:
        assert set(job.dimensions()["name"]) == set(expect["dimensions"])
        meta = job.con.execute(
            "SELECT name FROM dimension_meta WHERE job_id = ?", [job.id]
        ).fetchall()
        assert {r[0] for r in meta} == set(expect["dimensions"])
    if "dim_values" in expect:
        got = {
            (r.task, r.name): r.value
            for r in job.dimensions().itertuples()
            if not (isinstance(r.value, float) and math.isnan(r.value))
        }
        for key, value in expect["dim_values"].items():
            assert got[key] == pytest.approx(value), key
    if "tags" in expect:
        rows = job.con.execute(
            "SELECT task, key, value FROM task_tags WHERE job_id = ? ORDER BY ALL", [job.id]
        ).fetchall()
        assert rows == sorted(expect["tags"])
    if "extra_keys" in expect:
        for extra in job.attempts()["extra"]:
            assert set(json.loads(extra)) == set(expect["extra_keys"])


# -- the names a payload stands for ------------------------------------------------


def _tasks(p: str) -> list[str]:
    return [p, p + " (2)", "plain"]


def _folder(tmp: Path, p: str) -> Path:
    """A folder named after the payload (file names cannot hold ``/`` or NUL)."""
    folder = tmp / ("dir " + p.replace("/", "∕"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- EnvLoop ------------------------------------------------------------------------


def _envloop_doc(p: str) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads(THREE_TASKS.read_text())
    tasks = _tasks(p)
    rename = dict(zip(["A", "B", "C"], tasks, strict=True))
    doc["job"]["id"] = p
    doc["job"]["status"] = "completed"
    doc["job"]["finished_at"] = "2026-11-20T09:00:00Z"
    for t in doc["job"]["tasks"]:
        t["name"] = rename[t["name"]]
        t["tags"] = {"subset": t["tags"]["subset"], p: p + " value"}
    dims = {p: 0.25, p + " 2": 0.5, "plain": 0.75}
    for trial in doc["trials"]:
        trial["task"] = rename[trial["task"]]
        trial["id"] = p + " " + trial["id"]
        trial["output"] = f"{p} said {trial['output']}"
        trial.setdefault("metrics", {})
        trial["metrics"]["dimensions"] = dims
        trial["metrics"]["units"] = {n: "unit " + n for n in dims}
        trial["metrics"]["higher_is_better"] = {n: True for n in dims}
    last = doc["trials"][-1]
    last.update(status="completed", reward=0, finished_at="2026-11-20T08:10:00Z")
    doc.pop("metrics", None)
    expect = {
        "job_id": p,
        "tasks": tasks,
        "dimensions": list(dims),
        "dim_values": {(t, n): v for t in tasks for n, v in dims.items()},
        "tags": sorted(
            (t["name"], key, value) for t in doc["job"]["tasks"] for key, value in t["tags"].items()
        ),
    }
    return doc, expect


def envloop_json(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    doc, expect = _envloop_doc(p)
    path = _folder(tmp, p) / "job.json"
    path.write_text(json.dumps(doc))
    return path, expect, {}


def envloop_jsonl(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    doc, expect = _envloop_doc(p)
    lines = [json.dumps({"schema_version": doc["schema_version"], "job": doc["job"]})]
    lines += [json.dumps(t) for t in doc["trials"]]
    path = _folder(tmp, p) / "job.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, expect, {}


# -- Harbor and τ-bench ---------------------------------------------------------------


def harbor(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    folder = _folder(tmp, p) / "job"
    shutil.copytree(MULTIKEY, folder)
    tasks = _tasks(p)
    rename = dict(zip(["fix-git", "hello-world", "regex-log"], tasks, strict=True))
    result = json.loads((folder / "result.json").read_text())
    result["id"] = p
    (folder / "result.json").write_text(json.dumps(result))
    for path in folder.glob("*/result.json"):
        trial = json.loads(path.read_text())
        trial["task_name"] = rename[trial["task_name"]]
        trial["source"] = p
        rewards = (trial.get("verifier_result") or {}).get("rewards")
        if rewards:
            rewards[p] = rewards.pop("style")
        path.write_text(json.dumps(trial))
    expect = {
        "job_id": p,
        "tasks": sorted(tasks),
        "dimensions": ["reward", p],
        "tags": [(t, "source", p) for t in tasks],
    }
    return folder, expect, {}


def tau_bench(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    rows = [r for r in json.loads(TAU_BENCH.read_text()) if r["task_id"] in (0, 1)]
    tasks = _tasks(p)[:2]
    for row in rows:
        row["task_id"] = tasks[int(row["task_id"])]
    path = _folder(tmp, p) / f"{p.replace('/', '∕')}.json"
    path.write_text(json.dumps(rows))
    stem = path.name.removesuffix(".json")
    expect = {"job_id": f"tau-bench:{stem}", "tasks": sorted(tasks)}
    return path, expect, {}


def tau2_bench(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    doc = json.loads(TAU2.read_text())
    ids = sorted({str(t["id"]) for t in doc["tasks"]})
    names = [p + f" #{i}" for i in range(len(ids))]
    rename = dict(zip(ids, names, strict=True))
    for t in doc["tasks"]:
        t["id"] = rename[str(t["id"])]
    dims: set[str] = set()
    for sim in doc["simulations"]:
        sim["task_id"] = rename[str(sim["task_id"])]
        breakdown = (sim.get("reward_info") or {}).get("reward_breakdown")
        if breakdown:
            sim["reward_info"]["reward_breakdown"] = {f"{p} {k}": v for k, v in breakdown.items()}
            dims.update(sim["reward_info"]["reward_breakdown"])
    path = _folder(tmp, p) / "results.json"
    path.write_text(json.dumps(doc))
    expect = {
        "job_id": p,
        "tasks": [t["id"] for t in doc["tasks"]],
        "dimensions": sorted(dims),
    }
    return path, expect, {"format": "tau2-bench", "job_id": p}


# -- the table loader -----------------------------------------------------------------


def _table(p: str) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Rows whose task column, dimension, tag and extra columns are named after ``p``."""
    tasks = _tasks(p)
    task_col = "task of " + p
    rows = []
    for i, task in enumerate(tasks):
        for attempt in (1, 2):
            rows.append(
                {
                    task_col: task,
                    "reward": float((i + attempt) % 2),
                    "dim_" + p: 0.125 * (i + 1),
                    "tag_" + p: p + " tag",
                    p: p + " extra",
                    "subset": "s" + str(i),
                }
            )
    expect = {
        "job_id": p,
        "tasks": tasks,
        "dimensions": [p],
        "dim_values": {(t, p): 0.125 * (i + 1) for i, t in enumerate(tasks)},
        "tags": sorted(
            [(t, p, p + " tag") for t in tasks]
            + [(t, "subset", f"s{i}") for i, t in enumerate(tasks)]
        ),
        "extra_keys": [p],
    }
    return rows, expect, {"job_id": p, "mapping": {"task": task_col}}


def table_csv(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    rows, expect, options = _table(p)
    path = _folder(tmp, p) / "runs.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    return path, expect, options


def table_parquet(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    rows, expect, options = _table(p)
    path = _folder(tmp, p) / "runs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path, expect, options


def table_jsonl(tmp: Path, p: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    rows, expect, options = _table(p)
    path = _folder(tmp, p) / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, expect, options


def table_pandas(tmp: Path, p: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    rows, expect, options = _table(p)
    return pd.DataFrame(rows), expect, options


LOADERS: list[Callable[[Path, str], tuple[Any, dict[str, Any], dict[str, Any]]]] = [
    envloop_json,
    envloop_jsonl,
    harbor,
    tau_bench,
    tau2_bench,
    table_csv,
    table_parquet,
    table_jsonl,
    table_pandas,
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=_id)
@pytest.mark.parametrize("build", LOADERS, ids=lambda f: f.__name__)
def test_payload_names_are_data_in_every_loader(
    ws: enb.Workspace, tmp_path: Path, build: Any, payload: str
) -> None:
    source, expect, options = build(tmp_path, payload)
    _load_checked(ws, payload, source, expect, **options)


def test_every_innocent_name_at_once_in_the_table_loader(ws: enb.Workspace, tmp_path: Path) -> None:
    """All innocent names in one file (each a dimension, a tag and an extra column)."""
    rows = [
        {"task": f"t{i}", "reward": 1.0, **{f"dim_{n}": 0.5 for n in INNOCENT}}
        | {f"tag_{n}": n for n in INNOCENT}
        | {n: i for n in INNOCENT}
        for i in range(3)
    ]
    expect = {
        "tasks": ["t0", "t1", "t2"],
        "dimensions": INNOCENT,
        "tags": sorted((f"t{i}", n, n) for i in range(3) for n in INNOCENT),
        "extra_keys": INNOCENT,
    }
    for jid, source in [
        ("innocent frame", pd.DataFrame(rows)),
        ("innocent jsonl", _write_jsonl(tmp_path / "all.jsonl", rows)),
    ]:
        _load_checked(ws, INNOCENT[0], source, expect | {"job_id": jid}, job_id=jid)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_json_keys_that_look_like_paths_are_keys(ws: enb.Workspace, tmp_path: Path) -> None:
    """JSONL columns and EnvLoop dimensions named ``$``, ``*``, ``""``, ``/x``, ``a.b``."""
    keys = ["$", "*", "/x", "x", "a.b", "$.x", "~0", 'q"uote', "-", "0"]
    rows = [
        {"task": "t", "reward": 1, **{f"dim_{k}": i / 10 for i, k in enumerate(keys)}},
        {"task": "u", "reward": 0, **{f"dim_{k}": 1 - i / 10 for i, k in enumerate(keys)}},
    ]
    job = ws.load(_write_jsonl(tmp_path / "keys.jsonl", rows), job_id="keys")
    got = {(r.task, r.name): r.value for r in job.dimensions().itertuples()}
    assert got == {(r["task"], k): r[f"dim_{k}"] for r in rows for k in keys}

    keys.append("")  # an EnvLoop dimension may even be named ""
    doc = json.loads(THREE_TASKS.read_text())
    doc["trials"][2]["metrics"]["dimensions"] = {k: i / 10 for i, k in enumerate(keys)}
    doc["trials"][2]["metrics"]["units"] = {k: "u" + k for k in keys}
    path = tmp_path / "dims.json"
    path.write_text(json.dumps(doc))
    job = ws.load(path, job_id="dims")
    got = {r.name: r.value for r in job.dimensions().itertuples()}
    assert got == {k: i / 10 for i, k in enumerate(keys)}
    units = dict(
        ws.con.execute("SELECT name, unit FROM dimension_meta WHERE job_id = 'dims'").fetchall()
    )
    assert units == {k: "u" + k for k in keys}


def test_a_column_name_with_a_nul_is_a_load_error(ws: enb.Workspace) -> None:
    before = _snapshot(ws)
    frame = pd.DataFrame({"task": ["a"], "reward": [1.0], "dim_x\x00y": [0.5]})
    with pytest.raises(enb.LoadError, match="NUL"):
        ws.load(frame, job_id="nul")
    assert _snapshot(ws) == before


# -- the paths after loading: buckets, cases, compare, exports -------------------------


@pytest.fixture(params=HOSTILE[:3] + INNOCENT[:2] + INNOCENT[3:4], ids=_id)
def named(request: pytest.FixtureRequest, ws: enb.Workspace, tmp_path: Path) -> enb.Job:
    """An EnvLoop job whose id, task ids, tag key and dimension names are the payload."""
    path, _, _ = envloop_json(tmp_path, request.param)
    job = ws.load(path)
    assert isinstance(job, enb.Job) and job.id == request.param
    return job


def _rules(p: str, **options: Any) -> BucketRules:
    return BucketRules([Bucket(p, 0, 0.5), Bucket(p + " high", 0.5, 1.01)], **options)


def test_buckets_with_payload_names_and_a_payload_dimension(named: enb.Job) -> None:
    p = named.id
    ws = named.workspace
    before = _snapshot(ws)
    for options in ({}, {"metric": p}, {"metric": p, "level": "attempt"}):
        result = named.buckets(_rules(p, **options))
        assert result.count_of(p) + result.count_of(p + " high") == len(result.frame)
        assert set(result.frame["bucket"]) <= {p, p + " high"}
    assert _snapshot(ws) == before
    _no_side_effects(ws)


def test_cases_search_filter_and_sort_with_payloads(named: enb.Job) -> None:
    p = named.id
    src = CaseSource(named.con, named.id)
    page = src.fetch(CaseQuery(search=p))
    assert set(page.frame["task"]) == set(_tasks(p))  # every output quotes the payload
    page = src.fetch(CaseQuery(view="task", search=p + " (2)"))
    assert list(page.frame["task"]) == [p + " (2)"]
    page = src.fetch(CaseQuery(tag_key=p, tag_value=p + " value"))
    assert page.total == 6
    assert src.fetch(CaseQuery(tag_key=p, tag_value=p)).total == 0
    page = src.fetch(CaseQuery(sort=p, descending=True))
    assert page.total == 6
    result = named.buckets(_rules(p))
    src.set_buckets(result.frame)
    assert set(src.bucket_names()) == {n for n in (p, p + " high") if result.count_of(n)}
    for name in src.bucket_names():
        page = src.fetch(CaseQuery(view="task", bucket=name))
        assert page.total == result.count_of(name)
        assert set(page.frame["bucket"]) == {name}
    _no_side_effects(named.workspace)


def test_compare_jobs_with_payload_ids_tags_and_dimensions(named: enb.Job, tmp_path: Path) -> None:
    p = named.id
    ws = named.workspace
    doc, _ = _envloop_doc(p)
    doc["job"]["id"] = p + " other"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(doc))
    other = ws.load(path)
    before = _snapshot(ws)
    cmp = ws.compare([named, other], baseline=named, threshold=np.float64(0.5))
    assert set(cmp.leaderboard()["job"]) == {p, p + " other"}
    assert set(cmp.groups(tag=p)["group"]) == {p + " value"}
    assert {p, p + " 2", "plain"} <= set(cmp.groups(by="dimension")["group"])
    assert len(cmp.table(tag=p)) > 0
    shown = cmp.attempts_of([p, p + " (2)"])
    assert set(shown["task"]) == {p, p + " (2)"} and set(shown["job"]) == {p, p + " other"}
    assert len(cmp.paired()) > 0
    assert _snapshot(ws) == before
    _no_side_effects(ws)


def test_dataset_export_with_payload_buckets_and_metric(named: enb.Job, tmp_path: Path) -> None:
    p = named.id
    rules = _rules(p, metric=p)  # per-task mean of the payload dimension: 0.25
    ds = named.export_dataset(tmp_path / "out", name="d", version="1", rules=rules, buckets=[p])
    assert ds.row_count == 3
    rows = named.con.execute(
        "SELECT task FROM dataset_rows WHERE dataset_name = 'd' ORDER BY row_index"
    ).fetchall()
    assert [r[0] for r in rows] == _tasks(p)
    none = named.export_dataset(
        tmp_path / "out", name="d", version="2", rules=rules, buckets=[p + " high"]
    )
    assert none.row_count == 0
    _no_side_effects(named.workspace)


def test_xlsx_export_with_payload_buckets_and_dimensions(named: enb.Job, tmp_path: Path) -> None:
    p = named.id
    rules = _rules(p, metric="reward", level="attempt")  # bucket names go into a CASE
    out = named.export_xlsx(tmp_path / "x.xlsx", rules=rules, buckets=[p])
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    values = [[c.value for c in row] for row in sheet.iter_rows(min_row=2)]
    assert values and {row[header.index("Bucket")] for row in values} == {p}
    assert {row[header.index(p)] for row in values} == {0.25}
    assert {row[header.index("plain")] for row in values} == {0.75}
    _no_side_effects(named.workspace)


def test_xlsx_dimensions_differing_only_in_case_keep_their_own_values(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """DuckDB identifiers ignore case: "Style" and "style" must still be two columns."""
    doc = json.loads(THREE_TASKS.read_text())
    doc["trials"][2]["metrics"]["dimensions"] = {"Style": 0.1, "style": 0.9}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    job = ws.load(path, job_id="case")
    out = job.export_xlsx(tmp_path / "case.xlsx", allow_partial=True)
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    rows = [
        dict(zip(header, (c.value for c in r), strict=True)) for r in sheet.iter_rows(min_row=2)
    ]
    (b1,) = [r for r in rows if (r["Task"], r["Attempt"]) == ("B", 1)]
    styles = [h for h in header if h and h.lower().endswith("style")]
    assert len(styles) == 2
    assert [b1[h] for h in styles] == [0.1, 0.9]


# -- the quoting module itself ------------------------------------------------------------


@pytest.mark.parametrize("name", [*PAYLOADS, "", "A", "a", "select", '"', "'"])
def test_ident_and_literal_round_trip_in_duckdb(name: str) -> None:
    import duckdb

    con = duckdb.connect()
    if name:
        assert con.execute(f"SELECT 1 AS {ident(name)}").description[0][0] == name
    else:
        with pytest.raises(ValueError, match="empty"):
            ident(name)
    assert con.execute(f"SELECT {literal(name)}").fetchone() == (name,)
    assert con.execute(f"SELECT {literal(name)} = ?", [name]).fetchone() == (True,)
    doc = json.dumps({name: 7, "other": 8})
    row = con.execute(f"SELECT ?::JSON->>{literal(json_pointer(name))}", [doc]).fetchone()
    assert row == ("7",)
    row = con.execute(f"SELECT ?::JSON->>{json_pointer_sql('?')}", [doc, name]).fetchone()
    assert row == ("7",)
    assert "pwned" not in {r[0] for r in con.execute("SHOW TABLES").fetchall()}


def test_quoting_refuses_nul_and_lone_surrogates() -> None:
    for func in (ident, literal, json_pointer):
        with pytest.raises(ValueError, match="NUL"):
            func("a\x00b")
        with pytest.raises(ValueError, match="surrogate"):
            func("a\udc80b")
        with pytest.raises(TypeError):
            func(3)  # type: ignore[arg-type]
    assert ident('a"b') == '"a""b"'
    assert literal("it's") == "'it''s'"
    assert json_pointer("a/b~c") == "/a~1b~0c"


def test_number_is_exact_and_refuses_what_is_not_a_finite_number() -> None:
    import duckdb

    con = duckdb.connect()
    for x in [0, 1, -1, 0.5, -0.25, 0.1, 1 / 3, 0.30000000000000004, 1e-300, -1e300, 5e-324,
              2**63, np.float64(0.7), np.int64(-3), np.float32(0.1)]:  # fmt: skip
        text = number(x)
        got = con.execute(f"SELECT ({text})::DOUBLE, 1-{text}").fetchone()
        assert got is not None and got[0] == float(x), (x, text)
    assert number(-2) == "(-2)" and number(0.5) == "0.5e0"
    for bad in (math.nan, math.inf, -math.inf, np.float64("nan")):
        with pytest.raises(ValueError, match="finite"):
            number(bad)
    for wrong in (True, np.bool_(False), "1", None):
        with pytest.raises(TypeError):
            number(wrong)  # type: ignore[arg-type]


def test_no_other_quoting_helper_in_the_package() -> None:
    """Every quote in SQL from data goes through envloop_nb._store.sql (one helper, not seven)."""
    offenders = []
    for path in sorted((ROOT / "envloop_nb").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() == "envloop_nb/_store/sql.py":
            continue
        text = path.read_text()
        for needle in ('replace("\'", "\'\'")', "replace('\"', '\"\"')", "def _ident", "def _lit",
                       "def _q(", "def _sql_str", "chr(34)"):  # fmt: skip
            if needle in text:
                offenders.append(f"{path.name}: {needle}")
    assert offenders == []
