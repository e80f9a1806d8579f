"""The fast paths of ``_loaders.inspect.read``: the numpy read of an ``.eval`` archive's central
directory, and the ``.json`` log's samples split as text (and its header read) without
parsing the samples. Each must agree exactly with the exact path it shortcuts, and fall
back to it whenever its assumptions do not hold."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from envloop_nb import LoadError
from envloop_nb._loaders.inspect import read as ir
from envloop_nb._loaders.inspect import zip as iz

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "inspect"
EVAL_LOGS = sorted((FIXTURES / "eval").glob("*.eval"))
JSON_LOGS = sorted((FIXTURES / "json").glob("*.json"))
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "inspect"
BENCH_EVAL = sorted(BENCH.glob("*_10kx5.eval"))


# --- the central directory ----------------------------------------------------------


def _walked(path: Path) -> list[ir.Member]:
    """The entries as the exact entry-by-entry walk reads them."""
    with ir.mapped(path) as data:
        return iz._walk_directory(data, *iz._directory_extent(data))


def _fast(path: Path) -> list[ir.Member] | None:
    with ir.mapped(path) as data:
        count, size, offset = iz._directory_extent(data)
        fast = iz._fast_directory(bytes(data[offset : offset + size]), count)
    return None if fast is None else fast.members()


def _zipfile_entries(path: Path) -> list[tuple[Any, ...]]:
    with zipfile.ZipFile(path) as z:
        return [
            (i.filename, i.compress_type, i.CRC, i.compress_size, i.file_size, i.header_offset)
            for i in z.infolist()
        ]


@pytest.mark.parametrize(
    "log", EVAL_LOGS + BENCH_EVAL, ids=lambda p: p.name[-24:] if p.exists() else str(p)
)
def test_fast_directory_equals_the_walk(log: Path) -> None:
    fast = _fast(log)
    assert fast is not None  # Inspect's archives take the fast path
    assert fast == _walked(log) == ir.central_directory(log)
    assert [tuple(m) for m in fast] == _zipfile_entries(log)
    assert all(type(m) is ir.Member for m in fast)
    assert all(type(v) is int for m in fast[:50] for v in m[1:])


def test_bench_archive_is_present_or_skipped() -> None:
    if not BENCH_EVAL:
        pytest.skip("benchmarks/data/inspect/*_10kx5.eval not generated")
    assert len(_fast(BENCH_EVAL[0]) or []) > 10_000


def test_member_keeps_its_fields() -> None:
    m = ir.Member("samples/a_epoch_1.json", 93, 1, 2, 3, 4)
    assert (m.filename, m.compress_type, m.CRC, m.compress_size, m.file_size) == (
        "samples/a_epoch_1.json",
        93,
        1,
        2,
        3,
    )
    assert m.header_offset == 4
    with pytest.raises(AttributeError):
        m.CRC = 5  # type: ignore[misc]


def test_name_holding_the_signature_falls_back(tmp_path: Path) -> None:
    log = tmp_path / "odd.eval"
    with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("samples/a_epoch_1.json", b'{"id": "a"}')
        z.writestr("samples/PK\x01\x02_epoch_1.json", b'{"id": "b"}')
        z.writestr("header.json", b'{"eval": {}}')
    assert _fast(log) is None  # one candidate too many
    assert [tuple(m) for m in ir.central_directory(log)] == _zipfile_entries(log)


def test_non_ascii_name_falls_back(tmp_path: Path) -> None:
    log = tmp_path / "utf8.eval"
    with zipfile.ZipFile(log, "w") as z:
        z.writestr("samples/é_epoch_1.json", b"{}")
        z.writestr("samples/b_epoch_1.json", b"{}")
    assert _fast(log) is None
    entries = ir.central_directory(log)
    assert [m.filename for m in entries] == ["samples/é_epoch_1.json", "samples/b_epoch_1.json"]
    assert [tuple(m) for m in entries] == _zipfile_entries(log)


def test_comments_and_extras_take_the_fast_path(tmp_path: Path) -> None:
    log = tmp_path / "extras.eval"
    with zipfile.ZipFile(log, "w") as z:
        for i in range(5):
            info = zipfile.ZipInfo(f"samples/s{i}_epoch_1.json")
            info.comment = b"c" * i
            info.extra = struct.pack("<HH", 0xCAFE, i) + b"x" * i
            z.writestr(info, json.dumps({"i": i}))
    assert _fast(log) == _walked(log)
    assert [tuple(m) for m in ir.central_directory(log)] == _zipfile_entries(log)


def _directory_only(entries: list[tuple[bytes, int, int, int, int, int, bytes]]) -> bytes:
    """A file holding only a central directory and its end record (the directory is all
    :func:`central_directory` reads): entries ``(name, method, crc, csize, usize, offset,
    extra)`` written as given, sizes of ``0xFFFFFFFF`` included."""
    cd = b""
    for name, method, crc, csize, usize, offset, extra in entries:
        cd += iz._ENTRY.pack(
            b"PK\x01\x02", 45, 45, 0, method, 0, 0, crc, csize, usize,
            len(name), len(extra), 0, 0, 0, 0, offset,
        ) + name + extra  # fmt: skip
    end = iz._EOCD.pack(b"PK\x05\x06", 0, 0, len(entries), len(entries), len(cd), 0, 0)
    return cd + end


def test_zip64_entry_falls_back_to_the_walk(tmp_path: Path) -> None:
    big = 5 << 30
    zip64 = struct.pack("<HHQQ", 1, 16, big + 1, big)  # usize, then csize
    log = tmp_path / "zip64.eval"
    log.write_bytes(
        _directory_only(
            [
                (b"samples/a_epoch_1.json", 93, 7, 10, 20, 0, b""),
                (b"samples/b_epoch_1.json", 93, 8, 0xFFFFFFFF, 0xFFFFFFFF, 30, zip64),
            ]
        )
    )
    assert _fast(log) is None
    assert [tuple(m) for m in ir.central_directory(log)] == [
        ("samples/a_epoch_1.json", 93, 7, 10, 20, 0),
        ("samples/b_epoch_1.json", 93, 8, big, big + 1, 30),
    ]


def test_zstd_directory_takes_the_fast_path(tmp_path: Path) -> None:
    # The directory is the same for any method: method 93 is only a number here.
    rows = [
        (f"samples/s{i}_epoch_{i % 3 + 1}.json".encode(), 93, i, i + 1, 2 * i, 100 * i, b"")
        for i in range(40)
    ]
    log = tmp_path / "zstd.eval"
    log.write_bytes(_directory_only(rows))
    fast = _fast(log)
    assert fast is not None
    assert fast == _walked(log)
    assert fast[3] == ("samples/s3_epoch_1.json", 93, 3, 4, 6, 300)


def test_broken_chain_falls_back(tmp_path: Path) -> None:
    # A directory whose stated size is one byte short of its entries: the chain does not
    # end at the directory's end, so the walk (and then zipfile) decide.
    log = tmp_path / "short.eval"
    blob = bytearray(
        _directory_only([(b"a.json", 0, 0, 1, 1, 0, b""), (b"b.json", 0, 0, 1, 1, 0, b"")])
    )
    struct.pack_into("<L", blob, len(blob) - 10, 2 * 46 + 12 - 1)
    log.write_bytes(bytes(blob))
    with ir.mapped(log) as data:
        count, size, offset = iz._directory_extent(data)
        assert iz._fast_directory(bytes(data[offset : offset + size]), count) is None


# --- the .json log ----------------------------------------------------------------


def _all_texts(path: Path, chunk: int) -> tuple[list[str], list[str]]:
    it = ir.json_sample_chunks(path, chunk)
    assert it is not None
    places: list[str] = []
    texts: list[str] = []
    for p, t in it:
        assert len(p) == len(t) <= chunk
        assert str(t.type) == "large_string"
        places += p
        texts += t.to_pylist()
    # Each value is one JSON object: "{" first (no leading whitespace), at most trailing
    # whitespace after its "}".
    assert all(t.startswith("{") and t.rstrip().endswith("}") for t in texts)
    return places, texts


@pytest.mark.parametrize("log", JSON_LOGS, ids=lambda p: p.name[20:40])
@pytest.mark.parametrize("chunk", [1, 7, 8192])
def test_json_chunks_are_the_samples(log: Path, chunk: int) -> None:
    doc = json.loads(log.read_bytes())
    places, texts = _all_texts(log, chunk)
    assert places == [f"samples[{i}]" for i in range(len(doc["samples"]))]
    assert [json.loads(t) for t in texts] == doc["samples"]


@pytest.mark.parametrize("log", JSON_LOGS, ids=lambda p: p.name[20:40])
def test_json_header_skips_the_samples(log: Path) -> None:
    doc = json.loads(log.read_bytes())
    header = ir.json_header(log)
    assert header is not None
    assert header.pop("samples") == []
    del doc["samples"]
    assert header == doc
    opened = ir.open_inspect_log(log)
    assert opened.header == {key: doc.get(key) for key in ir._HEADER_KEYS}
    assert opened.form == "json"
    assert [s for _, s in opened.samples()] == json.loads(log.read_bytes())["samples"]


def _inspect_like(samples: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": {"eval_id": "E1", "task": "t", "dataset": {"samples": len(samples)}},
        "plan": {"steps": [{"solver": "generate"}]},
        "results": {"scores": [{"name": "s", "metrics": {"m": {"value": float("nan")}}}]},
        "samples": samples,
        "reductions": [
            {"scorer": "s", "samples": [{"value": 1, "sample_id": "a"}, {"value": 0}]},
            {"scorer": "t", "samples": []},
        ],
        **extra,
    }


TRICKY = [
    {
        "id": "a",
        "input": '    },\n    {  "samples": [\n  ]\n  ],',
        "messages": [{"role": "user", "content": "  ]"}, {"role": "assistant", "content": "}"}],
        "scores": {"s": {"value": float("nan"), "answer": "\n    },\n    {"}},
    },
    {"id": "b", "metadata": {"k": [[], {}, [{}]], "samples": [{"x": 1}, {"x": 2}]}},
    {"id": "c", "input": "ünïcødé ✓", "score": float("inf")},
    {"id": "d"},
]


def _write(path: Path, doc: Any, **kw: Any) -> Path:
    path.write_text(json.dumps(doc, **kw), encoding="utf-8")
    return path


def test_strings_that_look_like_the_layout_do_not_split(tmp_path: Path) -> None:
    doc = _inspect_like(TRICKY)
    log = _write(tmp_path / "tricky.json", doc, indent=2, ensure_ascii=False)
    for chunk in (1, 2, 3, 100):
        places, texts = _all_texts(log, chunk)
        assert places == ["samples[0]", "samples[1]", "samples[2]", "samples[3]"]
        assert json.dumps([json.loads(t) for t in texts]) == json.dumps(TRICKY)
    header = ir.json_header(log)
    assert header is not None and header.pop("samples") == []
    assert json.dumps(header) == json.dumps({k: v for k, v in doc.items() if k != "samples"})


def test_samples_last_in_the_document(tmp_path: Path) -> None:
    doc = _inspect_like(TRICKY)
    doc["samples"] = doc.pop("samples")  # "  ]" then "}" with nothing between
    log = _write(tmp_path / "last.json", doc, indent=2)
    assert json.dumps([json.loads(t) for t in _all_texts(log, 3)[1]]) == json.dumps(TRICKY)
    assert ir.open_inspect_log(log).header["eval"]["eval_id"] == "E1"


def test_one_sample(tmp_path: Path) -> None:
    log = _write(
        tmp_path / "one.json", _inspect_like([{"id": "x", "v": [1, {"a": None}]}]), indent=2
    )
    assert [json.loads(t) for t in _all_texts(log, 5)[1]] == [{"id": "x", "v": [1, {"a": None}]}]


@pytest.mark.parametrize(
    "kw", [{}, {"indent": 4}, {"indent": 1}, {"indent": "\t"}], ids=["compact", "4", "1", "tab"]
)
def test_other_layouts_fall_back(tmp_path: Path, kw: dict[str, Any]) -> None:
    doc = _inspect_like(TRICKY)
    log = _write(tmp_path / "other.json", doc, **kw)
    assert ir.json_sample_chunks(log, 10) is None
    assert ir.json_header(log) is None
    opened = ir.open_inspect_log(log)  # the whole-document path
    assert opened.header["eval"] == doc["eval"]
    assert len(list(opened.samples())) == len(TRICKY)


def test_empty_samples_fall_back(tmp_path: Path) -> None:
    log = _write(tmp_path / "empty.json", _inspect_like([]), indent=2)  # "samples": []
    assert ir.json_sample_chunks(log, 10) is None
    assert ir.open_inspect_log(log).header["eval"]["eval_id"] == "E1"


def test_empty_samples_over_two_lines(tmp_path: Path) -> None:
    text = json.dumps(_inspect_like([]), indent=2)
    assert '"samples": [],' in text
    log = tmp_path / "empty2.json"
    log.write_text(text.replace('"samples": [],', '"samples": [\n  ],'))
    assert list(ir.json_sample_chunks(log, 10) or [None]) == []
    assert ir.open_inspect_log(log).header["eval"]["eval_id"] == "E1"


def test_cut_short_never_escapes_but_as_load_error(tmp_path: Path) -> None:
    whole = json.dumps(_inspect_like(TRICKY * 3), indent=2).encode()
    begin = whole.index(b'"samples": [')
    cuts = sorted({*range(begin - 5, len(whole), max(1, len(whole) // 60)), len(whole) - 1})
    for cut in cuts:
        log = tmp_path / f"cut{cut}.json"
        log.write_bytes(whole[:cut])
        it = ir.json_sample_chunks(log, 4)
        if it is not None:  # the samples are whole: the cut is in the text after them
            assert whole.index(b"\n  ],\n", begin) < cut
            for _places, texts in it:
                for text in texts.to_pylist():
                    json.loads(text)
        assert ir.json_header(log) is None
        with pytest.raises(LoadError):
            ir.open_inspect_log(log)


def test_invalid_utf8_names_the_sample_and_line(tmp_path: Path) -> None:
    text = json.dumps(_inspect_like(TRICKY), indent=2).encode()
    at = text.index(b'"d"')
    log = tmp_path / "bad.json"
    log.write_bytes(text[:at] + b'"\xff' + text[at + 2 :])
    line = text[:at].count(b"\n") + 1
    with pytest.raises(LoadError) as caught:
        for _ in ir.json_sample_chunks(log, 2) or []:
            pass
    assert "samples[3]" in str(caught.value)
    assert f"line {line}" in str(caught.value)
    assert "not valid UTF-8 (byte 0xff" in str(caught.value)


def test_a_rewritten_file_is_scanned_again(tmp_path: Path) -> None:
    log = _write(tmp_path / "again.json", _inspect_like(TRICKY[:2]), indent=2)
    assert len(_all_texts(log, 10)[1]) == 2
    _write(log, _inspect_like(TRICKY), indent=2)
    assert len(_all_texts(log, 10)[1]) == 4


def test_chunk_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ir.json_sample_chunks(JSON_LOGS[0], 0)
