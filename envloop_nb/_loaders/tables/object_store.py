"""Results in S3-compatible object storage: ``ws.load("s3://bucket/prefix/...")``.

Everything goes through pyarrow's own S3 filesystem (C++, already a dependency; DuckDB's
``httpfs`` extension cannot be installed here and s3fs reads through Python callbacks:
``docs/object-storage-notes.md`` has the measurements). This module, and ``pyarrow.fs``
from it, is imported only when an ``s3://`` source is used.

* **Parquet** (one object, a glob, a prefix of Parquet objects, hive-partitioned or not)
  is read in place: each object's footer gives its column names (the same checks as a
  local file), then its rows stream once through Arrow into a DuckDB temporary table
  with the file order ``_enb_ord`` and the place ``_enb_place`` a local read gives, and
  the table loader reads that table like a local Parquet file. No local file is written.
* **Anything else** (EnvLoop ``.json``/``.jsonl.gz``, Inspect ``.eval``, Harbor or
  Terminal-Bench folders, ...) is streamed to a private temporary folder (``0700``),
  loaded by the local loader and deleted after the load, also on error. The job records
  the ``s3://`` URL as its ``source_path``, and errors and warnings name the URL.

Settings come from ``enb.open(s3={...})`` first, then a profile it names, then the
``AWS_*`` environment variables, then ``AWS_PROFILE`` (or the ``default`` profile) in
``~/.aws/credentials`` and ``~/.aws/config``. They live in memory only: no credential is
written into the workspace, a job or an export.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError
from .columns import Source, check_parquet_names

__all__ = [
    "Fetched",
    "S3Options",
    "fetch_prefix",
    "is_object_url",
    "object_source",
    "open_parquet_url",
    "s3_options",
]

_SCHEME = "s3://"
_GLOB = re.compile(r"[*?\[]")
_CHUNK = 1 << 22  # bytes copied at a time when fetching an object


@dataclass(frozen=True)
class S3Options:
    """Where and as whom to reach object storage; each field unset means "look it up".

    The secrets never appear in ``repr`` and are never written anywhere.
    """

    endpoint_url: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str | None = None
    profile: str | None = None


def s3_options(given: Mapping[str, Any] | S3Options | None) -> S3Options | None:
    """``enb.open(s3={...})``'s mapping as :class:`S3Options`; an unknown key is refused.

    Examples
    --------
    >>> s3_options({"endpoint_url": "http://127.0.0.1:9000", "secret_access_key": "x"})
    S3Options(endpoint_url='http://127.0.0.1:9000', region=None, profile=None)
    >>> s3_options({"endpoint": "x"})
    Traceback (most recent call last):
    ...
    ValueError: unknown s3 option 'endpoint'; one of access_key_id, endpoint_url, profile, region, secret_access_key, session_token
    """
    if given is None or isinstance(given, S3Options):
        return given
    known = sorted(f.name for f in fields(S3Options))
    for key, value in given.items():
        if key not in known:
            raise ValueError(f"unknown s3 option {key!r}; one of {', '.join(known)}")
        if value is not None and not isinstance(value, str):
            raise ValueError(f"s3 option {key!r} must be a string, got {type(value).__name__}")
    return S3Options(**{k: v for k, v in given.items() if v is not None})


#: The settings of the load under way (set by :func:`object_source` and ``load_all_url``).
_CURRENT: ContextVar[S3Options | None] = ContextVar("envloop_nb_s3", default=None)


def is_object_url(source: object) -> bool:
    """True for an ``s3://`` URL (a string, not a local path).

    Examples
    --------
    >>> is_object_url("s3://bucket/runs/base.json"), is_object_url("runs/base.json")
    (True, False)
    """
    return isinstance(source, str) and source.startswith(_SCHEME)


# -- settings and the filesystem ---------------------------------------------------------
def _profile(url: str, name: str, *, required: bool) -> dict[str, str]:
    """The settings of profile ``name`` from the shared credentials and config files."""
    home = Path.home() / ".aws"
    found: dict[str, str] = {}
    hit = False
    files = (
        (os.environ.get("AWS_CONFIG_FILE") or str(home / "config"), True),
        (os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or str(home / "credentials"), False),
    )
    for path, is_config in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        section = f"profile {name}" if is_config and name != "default" else name
        if parser.has_section(section):
            hit = True
            found.update({k: v.strip() for k, v in parser.items(section) if v.strip()})
    if required and not hit:
        raise LoadError(
            url, None, f"no AWS profile {name!r} in {files[1][0]} or {files[0][0]}"
        ) from None
    return {
        "endpoint_url": found.get("endpoint_url", ""),
        "access_key_id": found.get("aws_access_key_id", ""),
        "secret_access_key": found.get("aws_secret_access_key", ""),
        "session_token": found.get("aws_session_token", ""),
        "region": found.get("region", ""),
    }


def _settings(url: str, opts: S3Options | None) -> dict[str, str]:
    """Each setting from the first place that has it (see the module docstring); the
    access key, secret and session token come together from one place."""
    opts = opts or S3Options()
    env = os.environ
    given = {f.name: getattr(opts, f.name) or "" for f in fields(S3Options)}
    named = _profile(url, opts.profile, required=True) if opts.profile else {}
    from_env = {
        "endpoint_url": env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "",
        "access_key_id": env.get("AWS_ACCESS_KEY_ID", ""),
        "secret_access_key": env.get("AWS_SECRET_ACCESS_KEY", ""),
        "session_token": env.get("AWS_SESSION_TOKEN", ""),
        "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "",
    }
    ambient: dict[str, str] = {}
    if not opts.profile:
        profile = env.get("AWS_PROFILE")
        ambient = _profile(url, profile or "default", required=bool(profile))
    places = [given, named, from_env, ambient]
    out = {key: next((p[key] for p in places if p.get(key)), "") for key in from_env}
    for place in places:  # the key pair and token from one place
        if place.get("access_key_id"):
            for key in ("access_key_id", "secret_access_key", "session_token"):
                out[key] = place.get(key, "")
            break
    if out["access_key_id"] and not out["secret_access_key"]:
        raise LoadError(url, None, "an S3 access key id without its secret access key")
    return out


def _filesystem(url: str) -> Any:
    """A pyarrow S3 filesystem for the load under way."""
    import pyarrow.fs as pafs

    s = _settings(url, _CURRENT.get())
    kw: dict[str, Any] = {
        "connect_timeout": 5.0,
        "request_timeout": 60.0,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3),
    }
    endpoint = s["endpoint_url"]
    if endpoint:
        scheme, sep, rest = endpoint.partition("://")
        kw["scheme"], kw["endpoint_override"] = (
            (scheme, rest.rstrip("/")) if sep else ("https", endpoint)
        )
    if endpoint or s["region"]:
        kw["region"] = s["region"] or "us-east-1"  # a custom endpoint: no region lookup
    if s["access_key_id"]:
        kw.update(access_key=s["access_key_id"], secret_key=s["secret_access_key"])
        if s["session_token"]:
            kw["session_token"] = s["session_token"]
    try:
        return pafs.S3FileSystem(**kw)
    except (OSError, ValueError) as err:
        raise _failure(url, err) from None


def _endpoint(url: str) -> str:
    return _settings(url, _CURRENT.get())["endpoint_url"] or "the default AWS endpoint"


def _failure(url: str, err: BaseException) -> LoadError:
    """``err`` from pyarrow's S3 client as a :class:`LoadError` naming ``url``; its text
    is shown only when it is none of the known kinds (it names keys, never secrets)."""
    text = str(err)
    if isinstance(err, FileNotFoundError) or "NO_SUCH_KEY" in text:
        return LoadError(url, None, "no such object or prefix in object storage")
    if "NO_SUCH_BUCKET" in text:
        return LoadError(url, None, f"no such bucket {_bucket(url)!r}")
    if any(k in text for k in ("ACCESS_DENIED", "SIGNATURE_DOES_NOT_MATCH", "INVALID_ACCESS_KEY")):
        return LoadError(
            url,
            None,
            "access denied by object storage: check the credentials (AWS_ACCESS_KEY_ID / "
            "AWS_SECRET_ACCESS_KEY, a profile, or enb.open(s3={...})) and their permissions",
        )
    if "NETWORK_CONNECTION" in text or "curlCode" in text:
        return LoadError(
            url,
            None,
            f"cannot reach the object storage endpoint {_endpoint(url)} (check "
            "AWS_ENDPOINT_URL or enb.open(s3={'endpoint_url': ...}))",
        )
    first = text.strip().splitlines()[0] if text.strip() else type(err).__name__
    return LoadError(url, None, f"cannot be read from object storage ({first})")


def _bucket(url: str) -> str:
    return url[len(_SCHEME) :].split("/", 1)[0]


def _key_path(url: str) -> str:
    """``s3://bucket/key`` as pyarrow names it: ``bucket/key``."""
    return url[len(_SCHEME) :].rstrip("/")


def _check_bucket(url: str, fs: Any) -> None:
    """Say "no such bucket" rather than "no such object" when the bucket is missing."""
    import pyarrow.fs as pafs

    try:
        info = fs.get_file_info(_bucket(url))
    except OSError as err:
        raise _failure(url, err) from None
    if info.type == pafs.FileType.NotFound:
        raise LoadError(url, None, f"no such bucket {_bucket(url)!r}")


def _listing(url: str, fs: Any, base: str) -> list[tuple[str, int]]:
    """``(bucket/key, size)`` of every object under ``base`` (recursive), by name."""
    import pyarrow.fs as pafs

    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            _check_bucket(url, fs)
        raise _failure(url, err) from None
    return sorted((i.path, int(i.size or 0)) for i in infos if i.type == pafs.FileType.File)


def _hidden(path: str) -> bool:
    return Path(path).name.startswith((".", "_"))


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """DuckDB's glob as a regex: ``**`` crosses folders, ``*`` and ``?`` do not."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _parquet_objects(url: str, fs: Any) -> tuple[list[str], str | None] | None:
    """The Parquet objects ``url`` names (bucket/key, by name) and the prefix they are
    named relative to, or None when ``url`` is not a Parquet source (another object, or
    a prefix holding anything else)."""
    import pyarrow.fs as pafs

    path = _key_path(url)
    glob = _GLOB.search(path)
    if glob is not None:
        head = path[: glob.start()]
        if "/" not in head:
            raise LoadError(url, None, "the bucket name cannot be a glob pattern")
        base = head.rsplit("/", 1)[0]
        regex = _glob_regex(path)
        return [p for p, _ in _listing(url, fs, base) if regex.fullmatch(p)], None
    if path.lower().endswith(".parquet"):
        return [path], None
    try:
        info = fs.get_file_info(path)
    except OSError as err:
        raise _failure(url, err) from None
    if info.type == pafs.FileType.NotFound:
        _check_bucket(url, fs)
        raise LoadError(url, None, "no such object or prefix in object storage")
    if info.type == pafs.FileType.File:
        return None
    objects = [p for p, _ in _listing(url, fs, path)]
    parquet = [p for p in objects if p.endswith(".parquet")]  # as a folder's **/*.parquet
    if parquet and all(p.endswith(".parquet") or _hidden(p) for p in objects):
        return parquet, path  # (``_SUCCESS`` and dot files beside them are fine)
    return None


# -- Parquet, read in place ---------------------------------------------------------------
def _hive(files: list[str]) -> tuple[dict[str, list[str | None]], dict[str, str]]:
    """Each hive key's value per file (None where a file's path does not set it), and
    a folder that sets each key, as DuckDB reads ``key=value`` folders."""
    values: dict[str, list[str | None]] = {}
    folder: dict[str, str] = {}
    for i, file in enumerate(files):
        for part in file.split("/")[1:-1]:  # not the bucket, not the file name
            if "=" in part:
                key, value = part.split("=", 1)
                values.setdefault(key, [None] * len(files))[i] = value
                folder.setdefault(key, part)
    return values, folder


def _hive_array(values: list[str | None]) -> Any:
    """A hive key's values, typed as DuckDB types them: BIGINT when all are integers."""
    import pyarrow as pa

    if all(v is None or re.fullmatch(r"-?\d{1,18}", v) for v in values):
        return pa.array([None if v is None else int(v) for v in values], pa.int64())
    return pa.array(values, pa.string())


def open_parquet_url(con: duckdb.DuckDBPyConnection, url: str) -> Source:
    """Stage ``_tb_src`` over the Parquet object(s) ``url`` names, as ``open_path``
    does for a local Parquet file, glob or folder (same checks, columns and places).

    Parameters
    ----------
    con
        The load's connection; the rows land in its temporary table ``_tb_s3``.
    url
        ``s3://bucket/key.parquet``, a glob (``s3://bucket/runs/*.parquet``, ``**``
        crosses folders) or a prefix holding only Parquet objects (hive ``key=value``
        folders become columns).

    Returns
    -------
    Source
        The staged view, for the table loader.

    Raises
    ------
    LoadError
        Naming ``url``: no such object, prefix or bucket, access denied, an unreachable
        endpoint, a column name DuckDB would rename or merge, not Parquet.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs = _filesystem(url)
    found = _parquet_objects(url, fs)
    if found is None:
        raise LoadError(url, None, "not a Parquet object, glob or prefix of Parquet objects")
    files, root = found
    if not files:
        raise LoadError(url, None, f"no Parquet object matches {url}")
    try:
        readers = [pq.ParquetFile(fs.open_input_file(f)) for f in files]
    except FileNotFoundError:
        _check_bucket(url, fs)
        raise LoadError(url, None, "no such object in object storage") from None
    except OSError as err:
        raise _failure(url, err) from None
    except pa.ArrowInvalid as err:
        raise LoadError(url, None, f"cannot be read as Parquet ({err})") from None

    def shown(file: str) -> str | None:
        if len(files) == 1:
            return None  # the error already names the object
        return file[len(root) :].lstrip("/") if root else _SCHEME + file

    schemas = [r.schema_arrow for r in readers]
    hive, folders = _hive(files)
    check_parquet_names(
        url, [(shown(f), s.names) for f, s in zip(files, schemas, strict=True)], folders
    )
    try:
        schema = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise LoadError(url, None, f"the objects' schemas cannot be combined ({err})") from None
    hive_arrays = {k: _hive_array(v) for k, v in hive.items()}
    out = pa.schema(
        [
            *schema,
            *(pa.field(k, a.type) for k, a in hive_arrays.items()),
            pa.field("_enb_idx", pa.int64()),
            pa.field("_enb_row", pa.int64()),
        ]
    )

    def batches() -> Iterator[Any]:
        for i, reader in enumerate(readers):
            row = 0
            for group in range(reader.num_row_groups):  # a row group at a time, in C++ threads
                batch = reader.read_row_group(group).combine_chunks()
                n = batch.num_rows
                cols = [
                    batch.column(f.name).cast(f.type)
                    if f.name in batch.schema.names
                    else pa.nulls(n, f.type)
                    for f in schema
                ]
                cols += [pa.repeat(a[i], n) for a in hive_arrays.values()]
                cols += [pa.repeat(pa.scalar(i + 1, pa.int64()), n)]
                cols += [pa.array(np.arange(row, row + n, dtype=np.int64))]
                row += n
                yield from pa.Table.from_arrays(cols, schema=out).to_batches()

    stream = pa.RecordBatchReader.from_batches(out, batches())
    con.register("_tb_s3_stream", stream)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _tb_s3 AS SELECT * FROM _tb_s3_stream")
    except duckdb.Error as err:  # a read that failed midway (the network, the object)
        raise _failure(url, err) from None
    finally:
        con.unregister("_tb_s3_stream")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _tb_files AS "
        "SELECT unnest($files) AS _enb_file, generate_subscripts($files, 1) AS _enb_idx",
        {"files": [_SCHEME + f for f in files]},
    )
    place = "'row ' || (p._enb_row + 1)"
    if len(files) > 1:
        place = "f._enb_file || ' row ' || (p._enb_row + 1)"
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
            SELECT p.* EXCLUDE (_enb_idx, _enb_row),
                   (p._enb_idx << 40) + p._enb_row AS _enb_ord, {place} AS _enb_place
            FROM _tb_s3 p JOIN _tb_files f USING (_enb_idx)"""
    )
    rows = con.execute("DESCRIBE SELECT * FROM _tb_src").fetchall()
    src = Source(url, [], json=False, types={str(r[0]): str(r[1]) for r in rows})
    src.columns = [c for c in src.types if c not in ("_enb_ord", "_enb_place")]
    return src


# -- anything else, fetched to a private folder --------------------------------------------
@dataclass(frozen=True)
class Fetched:
    """A private folder mirroring ``s3://`` as ``<root>/<bucket>/<key>``."""

    root: Path

    def local(self, url: str) -> Path:
        return self.root / _key_path(url)

    def url(self, path: Path | str) -> str:
        return self.shown(str(path))

    def shown(self, text: str) -> str:
        """``text`` with every local path of the folder written as its ``s3://`` URL."""
        return text.replace(str(self.root) + os.sep, _SCHEME)


def _copy(url: str, fs: Any, key: str, target: Path) -> None:
    """Stream object ``key`` to ``target``; an error names ``url`` (and the object, when
    ``url`` is the prefix above it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    where = None if key == _key_path(url) else f"object {_SCHEME}{key}"
    try:
        # compression=None: the bytes as stored (pyarrow would inflate a .gz unchecked)
        with fs.open_input_stream(key, compression=None) as src, target.open("wb") as dst:
            while block := src.read(_CHUNK):
                dst.write(block)
    except FileNotFoundError:
        _check_bucket(url, fs)
        raise LoadError(url, where, "no such object in object storage") from None
    except OSError as err:
        failure = _failure(url, err)
        raise LoadError(url, where, failure.problem) from None


@contextmanager
def _fetch(url: str, keys: list[str], fs: Any, *, stacklevel: int = 5) -> Iterator[Fetched]:
    """``keys`` copied into a private temporary folder, removed afterwards (also on
    error); a LoadError or warning raised inside names the URLs, not the copies."""
    fetched = Fetched(Path(tempfile.mkdtemp(prefix="envloop_nb-s3-")))
    try:
        for key in keys:
            _copy(url, fs, key, fetched.root / key)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield fetched
            except LoadError as err:
                raise LoadError(
                    fetched.shown(err.source),
                    None if err.place is None else fetched.shown(err.place),
                    fetched.shown(err.problem),
                ) from None
        for w in caught:
            warnings.warn(fetched.shown(str(w.message)), w.category, stacklevel=stacklevel)
    finally:
        shutil.rmtree(fetched.root, ignore_errors=True)


@contextmanager
def object_source(url: str, s3: S3Options | None) -> Iterator[tuple[str, str | None]]:
    """What to load for ``url``, with the settings ``s3`` in force meanwhile.

    Yields
    ------
    tuple
        ``(url, "table")`` for Parquet, read in place; else ``(local copy, None)``: the
        object, or every object under the prefix, copied to a private folder that lasts
        until the block ends (the format is then detected from the copy). LoadErrors and
        warnings raised in the block name the URL, never the copy.
    """
    token = _CURRENT.set(s3)
    try:
        fs = _filesystem(url)
        if _parquet_objects(url, fs) is not None:
            yield url, "table"
            return
        path = _key_path(url)
        import pyarrow.fs as pafs

        try:
            is_file = fs.get_file_info(path).type == pafs.FileType.File
        except OSError as err:
            raise _failure(url, err) from None
        keys = [path] if is_file else [p for p, _ in _listing(url, fs, path)]
        with _fetch(url, keys, fs) as fetched:
            yield str(fetched.local(url)), None
    finally:
        _CURRENT.reset(token)


@contextmanager
def fetch_prefix(url: str, s3: S3Options | None) -> Iterator[Fetched]:
    """Every object under the ``s3://`` prefix ``url`` but tables (Parquet and CSV are
    never gathered into jobs, so never fetched) copied to a private folder, with the
    settings ``s3`` in force; the folder lasts until the block ends. LoadErrors and
    warnings raised in the block name the URLs, never the copies (``ws.load_all``)."""
    token = _CURRENT.set(s3)
    try:
        fs = _filesystem(url)
        keys = [
            p
            for p, _ in _listing(url, fs, _key_path(url))
            if not p.lower().endswith((".parquet", ".csv", ".tsv", ".csv.gz", ".tsv.gz"))
        ]
        # the warnings name the line that called ws.load_all (two frames more than _fetch's own caller)
        with _fetch(url, keys, fs, stacklevel=7) as fetched:
            yield fetched
    finally:
        _CURRENT.reset(token)
