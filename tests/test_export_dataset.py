"""Dataset export: folder layout, manifest provenance, content hash, load back, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb import Bucket, BucketRules
from envloop_nb._datasets.dataset import canonical_lines, content_hash

from .conftest import SAMPLE_DATA, THREE_TASKS

RULES = BucketRules(
    [Bucket("hard", 0, 0.25), Bucket("medium", 0.25, 0.75), Bucket("easy", 0.75, 1.01)]
)


@pytest.fixture
def base(ws: enb.Workspace) -> enb.Job:
    return ws.load(SAMPLE_DATA / "base.json")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_round_trip_rows_and_hash(base: enb.Job, tmp_path: Path, fmt: str) -> None:
    ds = base.export_dataset(
        tmp_path, name="hard-cases", version="1", rules=RULES, buckets=["hard"], format=fmt
    )
    folder = tmp_path / "hard-cases@1"
    assert ds.path == folder
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", f"rows.{fmt}"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["name"] == "hard-cases" and manifest["version"] == "1"
    assert manifest["source"]["jobs"] == ["job_base"]
    info = base.info
    assert manifest["source"]["dataset"] == {
        "name": info["dataset_name"],
        "version": info["dataset_version"],
        "revision": info["dataset_revision"],
    }
    assert manifest["rules"] == RULES.to_dict()
    assert manifest["buckets"] == ["hard"]
    assert manifest["policy"] == "unknown"
    assert manifest["partial"] is False
    assert manifest["purpose"] is None
    assert manifest["created_at"]

    # rows: exactly the hard tasks, in task order, with their first input and reference
    result = base.buckets(RULES)
    hard = result.frame[result.frame["bucket"] == "hard"]
    rows = ds.rows()
    assert list(rows["task"]) == list(hard["task"])
    assert manifest["row_count"] == len(rows) == ds.row_count
    assert (rows["bucket"] == "hard").all()
    assert rows["pass_rate"].tolist() == pytest.approx(hard["pass_rate"].tolist())
    attempts = base.attempts()
    first = attempts.dropna(subset=["input"]).groupby("task", sort=False).first()
    for _, row in rows.iterrows():
        assert row["input"] == first.loc[row["task"], "input"]
        assert json.loads(row["tags"]) == json.loads(
            base.tasks().set_index("task").loc[row["task"], "tags"]
        )
    for col in ("task", "input", "reference", "tags", "bucket", "pass_rate", "pass@4", "n"):
        assert col in rows.columns

    # load back: same rows and hash, registered (not a job)
    ws2 = enb.open()
    back = ws2.load(folder)
    assert isinstance(back, enb.Dataset)
    assert back.content_hash == ds.content_hash == manifest["content_hash"]
    pd.testing.assert_frame_equal(back.rows(), rows)
    assert len(ws2.jobs()) == 0
    reg = ws2.sql("SELECT name, version, row_count, content_hash FROM datasets").fetchall()
    assert reg == [("hard-cases", "1", len(rows), ds.content_hash)]
    n = ws2.sql("SELECT count(*) FROM dataset_rows").fetchone()
    assert n == (len(rows),)
    assert ws2.load_dataset(folder / "manifest.json").ref == "hard-cases@1"
    assert back.rows("polars").shape == rows.shape


def test_same_export_twice_same_hash_whatever_the_format(base: enb.Job, tmp_path: Path) -> None:
    a = base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["hard"])
    b = base.export_dataset(tmp_path, name="d", version="2", rules=RULES, buckets=["hard"])
    c = base.export_dataset(
        tmp_path, name="d", version="3", rules=RULES, buckets=["hard"], format="parquet"
    )
    assert a.content_hash == b.content_hash == c.content_hash
    d = base.export_dataset(tmp_path, name="d", version="4", rules=RULES, buckets=["easy"])
    assert d.content_hash != a.content_hash
    # the JSONL file is the canonical serialization itself
    text = (tmp_path / "d@1" / "rows.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert text == "".join(line + "\n" for line in canonical_lines(rows))
    assert content_hash(rows) == a.content_hash


def test_refuses_to_overwrite(base: enb.Job, tmp_path: Path) -> None:
    first = base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["hard"])
    with pytest.raises(enb.EnvloopError, match=r"already exists.*overwrite=True"):
        base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["easy"])
    assert enb.open().load_dataset(first.path).content_hash == first.content_hash  # untouched
    other = tmp_path / "elsewhere"
    with pytest.raises(enb.EnvloopError, match="already registered"):
        base.export_dataset(other, name="d", version="1")
    again = base.export_dataset(
        tmp_path, name="d", version="1", rules=RULES, buckets=["easy"], overwrite=True
    )
    assert again.content_hash != first.content_hash
    assert set(again.rows()["bucket"]) == {"easy"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no debris


def test_tampered_rows_are_detected(base: enb.Job, tmp_path: Path) -> None:
    ds = base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["hard"])
    path = ds.path / "rows.jsonl"
    path.write_text(path.read_text().replace("hard", "easy", 1))
    with pytest.raises(enb.EnvloopError, match="content hash"):
        enb.open().load(ds.path)


def test_option_errors(base: enb.Job, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs rules"):
        base.export_dataset(tmp_path, name="d", version="1", buckets=["hard"])
    with pytest.raises(ValueError, match="unknown bucket"):
        base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["x"])
    with pytest.raises(ValueError, match="format"):
        base.export_dataset(tmp_path, name="d", version="1", format="csv")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name"):
        base.export_dataset(tmp_path, name="a/b", version="1")
    with pytest.raises(ValueError, match="version"):
        base.export_dataset(tmp_path, name="a", version="")
    with pytest.raises(ValueError, match="per task"):
        base.export_dataset(
            tmp_path,
            name="a",
            version="1",
            rules=BucketRules([Bucket("lo", 0, 0.5)], "reward", level="attempt"),
        )
    assert list(tmp_path.iterdir()) == []


def test_partial_job(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(THREE_TASKS)  # running
    with pytest.raises(enb.EnvloopError, match="still running"):
        job.export_dataset(tmp_path, name="t", version="1")
    ds = job.export_dataset(tmp_path, name="t", version="1", rules=RULES, allow_partial=True)
    assert ds.partial and ds.manifest["partial"] is True
    assert ds.manifest["source"]["job_status"] == "running"
    assert "PARTIAL" in repr(ds)
    rows = ds.rows()
    # chat input stays the stored JSON text; C is incomplete, so no bucket
    assert rows["input_is_chat"].tolist() == [False, True, True]
    assert rows["bucket"].tolist()[:2] == ["medium", "easy"] and pd.isna(rows["bucket"][2])
    assert rows["reference"].tolist()[0] == "391" and rows["reference"][1:].isna().all()


#: ``content_hash`` of sample_data/base.json exported with RULES (every task), as written
#: by the implementation before streaming (all rows as Python at once). If the per-task
#: columns of ``samples()`` change on purpose, this changes with them.
BASE_RULES_HASH = "sha256:0b33fd6a08769c68c1ecb92c0db8dd61e96940ecae154cd520fb0f1b776698d0"


@pytest.mark.parametrize(("fmt", "chunk"), [("jsonl", None), ("parquet", None), ("jsonl", 13)])
def test_streamed_hash_equals_the_all_rows_hash(
    base: enb.Job, tmp_path: Path, fmt: str, chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    import envloop_nb._datasets.export as xd

    # the old way: every row as Python at once, then the canonical hash of all of them
    frame = base.buckets(RULES).frame
    whole = pa.Table.from_batches(list(xd._task_batches(base, frame, RULES, None))).to_pylist()
    for row in whole:
        row["tags"] = json.loads(row["tags"]) if row["tags"] else {}
    monkeypatch.setattr(xd, "BATCH_ROWS", 7)  # 200 rows in many uneven batches
    if chunk is not None:  # 200 tasks queried 13 at a time, each chunk's attempts only
        monkeypatch.setattr(xd, "CHUNK_TASKS", chunk)
    ds = base.export_dataset(tmp_path, name="s", version="1", rules=RULES, format=fmt)
    assert ds.content_hash == content_hash(whole) == BASE_RULES_HASH
    assert ds.row_count == len(whole) == 200
    assert ds.manifest["bucket_counts"] == {
        k: sum((r["bucket"] or "(none)") == k for r in whole)
        for k in {r["bucket"] or "(none)" for r in whole}
    }
    assert ds.manifest["columns"] == list(whole[0])
    if fmt == "jsonl":
        text = (ds.path / "rows.jsonl").read_text(encoding="utf-8")
        assert text == "".join(line + "\n" for line in canonical_lines(whole))
    reg = base.con.execute(
        """SELECT row_index, task FROM dataset_rows
           WHERE dataset_name = 's' AND dataset_version = '1' ORDER BY row_index"""
    ).fetchall()
    assert reg == [(i, r["task"]) for i, r in enumerate(whole)]
    back = enb.open().load_dataset(ds.path)  # verifies the hash against the file
    assert back.content_hash == BASE_RULES_HASH
    assert list(tmp_path.iterdir()) == [ds.path]  # the staged registration rows are gone


def test_chunked_rows_equal_one_query(
    base: enb.Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every task, and chosen buckets only: the rows queried a few tasks at a time (each
    chunk's attempts only) are the rows of one query over the whole job."""
    import envloop_nb._datasets.export as xd

    whole = base.export_dataset(tmp_path / "one", name="a", version="1")
    hard = base.export_dataset(tmp_path / "one", name="h", version="1", rules=RULES, buckets="hard")
    monkeypatch.setattr(xd, "CHUNK_TASKS", 9)
    monkeypatch.setattr(xd, "BATCH_ROWS", 4)
    whole9 = base.export_dataset(tmp_path / "nine", name="a", version="1", overwrite=True)
    hard9 = base.export_dataset(
        tmp_path / "nine", name="h", version="1", rules=RULES, buckets="hard", overwrite=True
    )
    assert whole9.row_count == whole.row_count == 200
    assert 0 < hard9.row_count == hard.row_count < 200
    for one, nine in ((whole, whole9), (hard, hard9)):
        assert nine.content_hash == one.content_hash
        assert (nine.path / "rows.jsonl").read_bytes() == (one.path / "rows.jsonl").read_bytes()


def test_failure_mid_stream_leaves_nothing(
    base: enb.Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envloop_nb._datasets.export as xd

    calls = []

    def failing(rows: list[dict[str, object]]) -> list[str]:
        calls.append(len(rows))
        if len(calls) == 3:
            raise OSError("disk full")
        return canonical_lines(rows)

    monkeypatch.setattr(xd, "BATCH_ROWS", 16)
    monkeypatch.setattr(xd, "canonical_lines", failing)
    with pytest.raises(OSError, match="disk full"):
        base.export_dataset(tmp_path, name="f", version="1", format="parquet")
    assert list(tmp_path.iterdir()) == []
    assert base.con.execute("SELECT count(*) FROM datasets").fetchone() == (0,)
    assert base.con.execute("SELECT count(*) FROM dataset_rows").fetchone() == (0,)


@pytest.mark.parametrize("where", ["absolute", "parent", "symlink", "symlinked folder"])
def test_manifest_file_outside_the_folder_is_refused(
    base: enb.Job, tmp_path: Path, where: str
) -> None:
    ds = base.export_dataset(tmp_path / "out", name="d", version="1", rules=RULES, buckets=["hard"])
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "rows.jsonl").write_bytes((ds.path / "rows.jsonl").read_bytes())  # same hash
    manifest_path = ds.path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    if where == "absolute":
        manifest["file"] = str(outside / "rows.jsonl")
    elif where == "parent":
        manifest["file"] = "../../secret/rows.jsonl"
    elif where == "symlink":
        (ds.path / "link.jsonl").symlink_to(outside / "rows.jsonl")
        manifest["file"] = "link.jsonl"
    else:
        (ds.path / "sub").symlink_to(outside, target_is_directory=True)
        manifest["file"] = "sub/rows.jsonl"
    manifest_path.write_text(json.dumps(manifest))
    fresh = enb.open()
    with pytest.raises(enb.LoadError, match=r"is outside the dataset folder") as err:
        fresh.load(ds.path)
    assert err.value.source == str(manifest_path)
    assert str(err.value).startswith(f'{manifest_path}, "file": the rows file ')
    assert fresh.sql("SELECT count(*) FROM datasets").fetchone() == (0,)  # nothing registered
    with pytest.raises(enb.LoadError, match=r"outside the dataset folder"):
        enb.Dataset(**{**ds.__dict__, "manifest": manifest}).rows()  # reading rows: same check


def test_manifest_file_in_a_subfolder_is_fine(base: enb.Job, tmp_path: Path) -> None:
    ds = base.export_dataset(tmp_path, name="d", version="1", rules=RULES, buckets=["hard"])
    (ds.path / "data").mkdir()
    (ds.path / "rows.jsonl").rename(ds.path / "data" / "rows.jsonl")
    manifest = json.loads((ds.path / "manifest.json").read_text())
    (ds.path / "manifest.json").write_text(json.dumps({**manifest, "file": "data/rows.jsonl"}))
    assert enb.open().load(ds.path).content_hash == ds.content_hash


@pytest.mark.parametrize("kind", ["job", "experiment"])
def test_a_dataset_folder_with_a_control_character_is_refused(
    ws: enb.Workspace, tmp_path: Path, kind: str
) -> None:
    """(It made a folder named with a newline.)"""
    source = ws.load(THREE_TASKS if kind == "job" else SAMPLE_DATA / "experiments/ops-helper.json")
    folder = tmp_path / "data\nsets"
    extra = {"allow_partial": True} if kind == "job" else {}
    with pytest.raises(ValueError, match="control character") as info:
        source.export_dataset(folder, name="d", version="1", **extra)
    assert repr(str(folder)) in str(info.value)
    assert list(tmp_path.iterdir()) == []
    assert ws.sql("SELECT count(*) FROM datasets").fetchone() == (0,)


def test_a_dataset_folder_that_is_a_file_is_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    """(It raised a bare ``FileExistsError: [Errno 17] File exists``.)"""
    job = ws.load(THREE_TASKS)
    (tmp_path / "datasets").write_text("notes\n")
    with pytest.raises(NotADirectoryError) as info:
        job.export_dataset(tmp_path / "datasets", name="d", version="1", allow_partial=True)
    assert str(info.value) == (
        f"{tmp_path / 'datasets'} is a file: give the path of a folder to write the "
        "dataset into (made if missing)"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["datasets"]
    assert (tmp_path / "datasets").read_text() == "notes\n"
