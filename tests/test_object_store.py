"""``ws.load("s3://...")`` against a real S3-compatible server (moto's server mode on
127.0.0.1, started by ``tests/s3_server.py``): every format gives exactly the numbers
the same file gives loaded locally; errors name the URL; no credential is ever written."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import envloop_nb as enb
from tests.s3_server import S3Server, free_port
from tests.s3_server import s3_server as s3_server  # the fixture

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
FIXTURES = ROOT.parent / "shared" / "fixtures"
AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_PROFILE")  # fmt: skip


@pytest.fixture(autouse=True)
def _no_ambient_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No AWS setting of the machine leaks in; copies go to a temp folder of the test's own."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    yield scratch
    assert not list(scratch.glob("envloop_nb-s3-*")), "a fetched copy was left behind"


def _ws(server: S3Server, **kw: Any) -> enb.Workspace:
    return enb.open(s3=server.options(), **kw)


def _jobs(ws: enb.Workspace) -> pd.DataFrame:
    return ws.jobs().drop(columns=["source_path", "loaded_at"])


def _same(local: enb.Job, remote: enb.Job, places: tuple[str, str] | None = None) -> None:
    """Exactly the same numbers: summary, curve, per-task samples and the attempts (their
    places naming files under ``places[0]`` as objects under ``places[1]``)."""
    assert remote.summary().to_dict() == local.summary().to_dict()
    pd.testing.assert_frame_equal(remote.curve(), local.curve())
    pd.testing.assert_frame_equal(remote.samples(), local.samples())
    expected = local.attempts()
    if places is not None:
        expected["source_place"] = expected["source_place"].str.replace(*places, regex=False)
    pd.testing.assert_frame_equal(remote.attempts(), expected)


def _load_both(
    server: S3Server, local: Path, url: str, places: bool = False, **kw: Any
) -> tuple[enb.Job, enb.Job]:
    mine, theirs = enb.open(), _ws(server)
    a, b = mine.load(str(local), **kw), theirs.load(url, **kw)
    _same(a, b, (str(local) + "/", url) if places else None)
    pd.testing.assert_frame_equal(_jobs(theirs), _jobs(mine))
    assert theirs.jobs()["source_path"].tolist() == [url]
    return a, b


def _attempts_table(n_tasks: int, k: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = n_tasks * k
    reward = rng.integers(0, 2, n).astype(float)
    reward[rng.random(n) < 0.05] = np.nan  # missing rewards stay missing
    return pa.table(
        {
            "task": pc.binary_join_element_wise(  # t0000000, t0000001, ... fast
                "t", pc.utf8_lpad(pc.cast(pa.array(np.arange(n) // k), pa.string()), 7, "0"), ""
            ),
            "attempt": pa.array(np.arange(n) % k + 1, pa.int32()),
            "reward": pa.array(reward, from_pandas=True),
            "subset": pa.array(np.array(["math", "code", "chat"])[np.arange(n) // k % 3]),
            "dim_quality": pa.array(rng.random(n)),
        }
    )


# -- tables ---------------------------------------------------------------------------------
def test_parquet_object(s3_server: S3Server, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(_attempts_table(300, 4), path)
    url = s3_server.put(s3_server.bucket("tables"), "runs/run.parquet", path)
    local, remote = _load_both(s3_server, path, url)
    assert remote.id == "table:run"
    assert remote.attempts()["source_place"].iloc[5] == local.attempts()["source_place"].iloc[5]


def test_parquet_glob(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.bucket("globbed")
    folder = tmp_path / "parts"
    folder.mkdir()
    table = _attempts_table(90, 2, seed=1)
    for i in range(3):
        pq.write_table(table.slice(i * 60, 60), folder / f"part-{i}.parquet")
    (folder / "notes.txt").write_text("not a table")
    s3_server.put_tree(bucket, "runs", folder)
    mine, theirs = enb.open(), _ws(s3_server)
    a = mine.load(str(folder / "part-*.parquet"), job_id="g")
    b = theirs.load(f"s3://{bucket}/runs/part-*.parquet", job_id="g")
    assert a.summary().to_dict() == b.summary().to_dict()
    pd.testing.assert_frame_equal(a.curve(), b.curve())
    places = b.attempts()["source_place"].tolist()
    assert places[0] == f"s3://{bucket}/runs/part-0.parquet row 1"
    assert places[-1] == f"s3://{bucket}/runs/part-2.parquet row 60"


def test_hive_partitioned_prefix(s3_server: S3Server, tmp_path: Path) -> None:
    """A hive folder: the keys become columns (``subset`` a tag), typed as DuckDB types
    them, and the places name each object under the prefix as they name local files."""
    folder = tmp_path / "hive"
    table = _attempts_table(120, 3, seed=2)
    frame = table.to_pandas()
    for (subset, shard), part in frame.groupby([frame["subset"], frame.index % 2]):
        out = folder / f"subset={subset}" / f"shard={shard}"
        out.mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(part.drop(columns="subset"), preserve_index=False),
                       out / "data.parquet")  # fmt: skip
    url = s3_server.put_tree(s3_server.bucket("hive"), "jobs/run-7", folder)
    local, remote = _load_both(s3_server, folder, url, places=True, job_id="hive")
    pd.testing.assert_frame_equal(remote.groups(by="subset"), local.groups(by="subset"))
    first = "s3://hive/jobs/run-7/subset=chat/shard=0/data.parquet row 1"
    assert remote.attempts()["source_place"].iloc[0] == first


def test_hive_key_clash_is_refused_by_name(s3_server: S3Server, tmp_path: Path) -> None:
    folder = tmp_path / "clash" / "Task=9"
    folder.mkdir(parents=True)
    pq.write_table(_attempts_table(3, 1), folder / "x.parquet")
    url = s3_server.put_tree(s3_server.bucket("clash"), "p", tmp_path / "clash")
    with pytest.raises(enb.LoadError, match=r"s3://clash/p/.*hive partition key 'Task'"):
        _ws(s3_server).load(url)


def test_a_million_attempts_in_one_object(s3_server: S3Server, tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    pq.write_table(_attempts_table(250_000, 4, seed=3), path)
    url = s3_server.put(s3_server.bucket("big"), "big.parquet", path)
    remote = _ws(s3_server).load(url)
    local = enb.open().load(str(path))
    assert remote.summary().to_dict() == local.summary().to_dict()
    assert remote.summary().total == 1_000_000
    pd.testing.assert_frame_equal(remote.curve(), local.curve())


# -- formats fetched to a private copy --------------------------------------------------------
@pytest.mark.parametrize("name", ["base.json", "sft-step1000.jsonl.gz", "graded.json"])
def test_envloop_exports(s3_server: S3Server, name: str) -> None:
    bucket = "envloop-" + name.split(".")[0].replace("_", "-")
    url = s3_server.put(s3_server.bucket(bucket), f"exports/{name}", SAMPLES / name)
    _load_both(s3_server, SAMPLES / name, url)


def test_inspect_eval_log(s3_server: S3Server) -> None:
    log = sorted((SAMPLES / "inspect").glob("*.eval"))[0]
    url = s3_server.put(s3_server.bucket("inspect-one"), f"logs/{log.name}", log)
    local, remote = _load_both(s3_server, log, url)
    assert remote.source_agreement().equals(local.source_agreement())


def test_harbor_job_folder(s3_server: S3Server) -> None:
    folder = FIXTURES / "harbor" / "2026-03-02__14-05-11"
    url = s3_server.put_tree(s3_server.bucket("harbor"), f"jobs/{folder.name}", folder)
    _load_both(s3_server, folder, url)


OTHER_SOURCES = [
    ROOT / "tests/data/terminal_bench/2025-06-01__12-00-00_terminus_claude-sonnet-4",
    ROOT / "tests/data/terminal_bench/2025-06-01__12-00-00_terminus_claude-sonnet-4/results.json",
    ROOT / "tests/data/lm_eval/run/envloop-dummy",
    ROOT / "tests/data/tau2/results.json",
    FIXTURES / "tau-bench/gpt-4o-airline.json",
    sorted((FIXTURES / "inspect/json").glob("*.json"))[0],
]


@pytest.mark.parametrize("source", OTHER_SOURCES, ids=lambda p: p.name[:24])
def test_other_formats(s3_server: S3Server, source: Path) -> None:
    """Each job format whose loader reads files: a file, or a folder under its own name
    (the job id and run facts come from the names, which the copy keeps)."""
    bucket = s3_server.bucket(f"other-{OTHER_SOURCES.index(source)}")
    key = f"results/{source.parent.name}/{source.name}"
    if source.is_dir():
        url = s3_server.put_tree(bucket, key, source)
    else:
        url = s3_server.put(bucket, key, source)
    _load_both(s3_server, source, url)


def test_load_all_over_a_prefix(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.bucket("many")
    s3_server.put_tree(bucket, "logs/inspect", FIXTURES / "inspect" / "eval")
    s3_server.put(bucket, "logs/exports/base.json", SAMPLES / "base.json")
    pq.write_table(_attempts_table(3, 1), tmp_path / "t.parquet")
    s3_server.put(bucket, "logs/tables/t.parquet", tmp_path / "t.parquet")  # a table: not a job
    local_folder = tmp_path / "logs"
    shutil.copytree(FIXTURES / "inspect" / "eval", local_folder / "inspect")
    (local_folder / "exports").mkdir()
    shutil.copy(SAMPLES / "base.json", local_folder / "exports" / "base.json")
    mine, theirs = enb.open(), _ws(s3_server)
    local, remote = mine.load_all(local_folder), theirs.load_all(f"s3://{bucket}/logs/")
    assert [j.id for j in remote] == [j.id for j in local] and len(remote) == 3
    for a, b in zip(local, remote, strict=True):
        _same(a, b)
    pd.testing.assert_frame_equal(_jobs(theirs), _jobs(mine))
    assert sorted(theirs.jobs()["source_path"]) == [
        f"s3://{bucket}/logs/exports/base.json",
        *sorted(f"s3://{bucket}/logs/inspect/{p.name}" for p in (FIXTURES / "inspect/eval").iterdir()),
    ]  # fmt: skip


def test_a_bad_object_names_the_url_and_changes_nothing(s3_server: S3Server) -> None:
    data = (SAMPLES / "sft-step1000.jsonl.gz").read_bytes()
    s3_server.client.create_bucket(Bucket="cut")
    s3_server.client.put_object(Bucket="cut", Key="x/run.jsonl.gz", Body=data[: len(data) // 2])
    ws = _ws(s3_server)
    with pytest.raises(enb.LoadError) as err:
        ws.load("s3://cut/x/run.jsonl.gz")
    assert str(err.value).startswith("s3://cut/x/run.jsonl.gz, ")
    assert "truncated gzip" in str(err.value) and "envloop_nb-s3-" not in str(err.value)
    assert len(ws.jobs()) == 0


def test_lenient_warning_names_the_url(s3_server: S3Server, tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("task,reward\nq1,1\nq1,high\nq2,0\n")
    url = s3_server.put(s3_server.bucket("lenient"), "csv/rows.csv", path)
    with pytest.warns(enb.LoadWarning, match=r"^s3://lenient/csv/rows.csv: skipped 1 unusable"):
        job = _ws(s3_server).load(url, lenient=True)
    assert job.summary().scored == 2 and job.id == "table:rows"


def test_local_loads_never_import_the_object_store() -> None:
    """The object store module loads only when an s3:// source is used (``pyarrow.fs``
    itself is imported by DuckDB's Arrow registration in any load; ``import envloop_nb``
    loads no pyarrow at all: tests/test_public_api.py)."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, envloop_nb as enb\n"
        f"enb.open().load({str(SAMPLES / 'base.json')!r}).summary()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m in "
        "('envloop_nb._loaders.tables.object_store',))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# -- where the settings come from ---------------------------------------------------------------
def test_settings_from_the_environment(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3_server.put(s3_server.bucket("env"), "base.json", SAMPLES / "base.json")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)  # pyarrow itself ignores it
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_access_key)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert enb.open().load(url).summary().scored == 767


def test_settings_from_a_profile(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = s3_server.put(s3_server.bucket("profiled"), "base.json", SAMPLES / "base.json")
    (tmp_path / "credentials").write_text(
        f"[lab]\naws_access_key_id = {s3_server.access_key_id}\n"
        f"aws_secret_access_key = {s3_server.secret_access_key}\n"
    )
    (tmp_path / "config").write_text(
        f"[profile lab]\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ignored-the-profile-is-named")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ignored")
    assert enb.open(s3={"profile": "lab"}).load(url).summary().scored == 767
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_PROFILE", "lab")
    assert enb.open().load(url).summary().scored == 767
    with pytest.raises(enb.LoadError, match=r"^s3://profiled/base.json: no AWS profile 'nope'"):
        enb.open(s3={"profile": "nope"}).load(url)


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown s3 option 'endpoint'"):
        enb.open(s3={"endpoint": "http://127.0.0.1:1"})


# -- errors ---------------------------------------------------------------------------------
def test_missing_object_and_bucket(s3_server: S3Server) -> None:
    s3_server.bucket("present")
    ws = _ws(s3_server)
    for url, problem in [
        ("s3://present/nope.json", "no such object or prefix"),
        ("s3://present/nope.parquet", "no such object"),
        ("s3://present/logs/", "no such object or prefix"),
        ("s3://absent-bucket/x.json", "no such bucket 'absent-bucket'"),
        ("s3://absent-bucket/x.parquet", "no such bucket 'absent-bucket'"),
        ("s3://absent-bucket/runs/*.parquet", "no such bucket 'absent-bucket'"),
    ]:
        with pytest.raises(enb.LoadError, match=problem) as err:
            ws.load(url)
        assert str(err.value).startswith(url + ": "), str(err.value)
    with pytest.raises(enb.LoadError, match=r"^s3://absent-bucket/logs/: no such bucket"):
        ws.load_all("s3://absent-bucket/logs/")


def test_denied_requests(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.bucket("guarded")
    pq.write_table(_attempts_table(3, 1), tmp_path / "t.parquet")
    urls = [s3_server.put(bucket, "base.json", SAMPLES / "base.json"),
            s3_server.put(bucket, "t.parquet", tmp_path / "t.parquet")]  # fmt: skip
    wrong_secret = enb.open(s3=s3_server.options(secret_access_key="not-the-secret"))
    lister = enb.open(
        s3=s3_server.options(
            access_key_id=s3_server.denied_key_id, secret_access_key=s3_server.denied_secret
        )
    )
    for ws in (wrong_secret, lister):
        for url in urls:
            with pytest.raises(enb.LoadError, match="access denied") as err:
                ws.load(url)
            assert str(err.value).startswith(url + ": ")
            assert "not-the-secret" not in str(err.value)
            assert s3_server.denied_secret not in str(err.value)
    # lister may list the bucket but not read from it: the object is named
    with pytest.raises(enb.LoadError, match="access denied") as err:
        lister.load_all(f"s3://{bucket}/")
    assert str(err.value).startswith(f"s3://{bucket}/, object s3://{bucket}/base.json: ")


def test_wrong_endpoint(s3_server: S3Server) -> None:
    port = free_port()  # nothing listens there
    ws = enb.open(s3=s3_server.options(endpoint_url=f"http://127.0.0.1:{port}"))
    for url in ("s3://any/base.json", "s3://any/t.parquet", "s3://any/prefix/"):
        with pytest.raises(enb.LoadError, match=f"cannot reach the object storage endpoint http://127.0.0.1:{port}") as err:  # fmt: skip
            ws.load(url)
        assert str(err.value).startswith(url + ": ")


# -- credentials are never written ----------------------------------------------------------------
def test_no_credential_in_the_workspace_or_exports(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.bucket("secretive")
    pq.write_table(_attempts_table(40, 2), tmp_path / "t.parquet")
    urls = [s3_server.put(bucket, "base.json", SAMPLES / "base.json"),
            s3_server.put(bucket, "t.parquet", tmp_path / "t.parquet")]  # fmt: skip
    db = tmp_path / "ws.duckdb"
    ws = _ws(s3_server, path=db)
    jobs = [ws.load(url) for url in urls]
    secrets = [s3_server.secret_access_key, s3_server.access_key_id]
    assert not any(s in repr(ws._s3) for s in secrets)  # nor in its repr
    xlsx, html = tmp_path / "review.xlsx", tmp_path / "report.html"
    jobs[0].export_xlsx(xlsx)
    jobs[1].export_html(html)
    tables = [r[0] for r in ws.sql("SELECT table_name FROM duckdb_tables()").fetchall()]
    for table in tables:
        text = ws.sql(f"SELECT string_agg(t::VARCHAR, '\\n') FROM \"{table}\" t").fetchone()
        assert not any(s in str(text) for s in secrets), table
    ws.close()
    for path in (db, xlsx, html):
        data = path.read_bytes()
        if path.suffix == ".xlsx":  # a zip: look inside every member
            import zipfile

            with zipfile.ZipFile(path) as z:
                data = b"".join(z.read(n) for n in z.namelist())
        for secret in secrets:
            assert secret.encode() not in data, path
