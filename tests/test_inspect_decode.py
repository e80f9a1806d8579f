"""An Inspect sample decoded for its steps (msgspec, members skipped) reads as
``json.loads`` reads it: the same members, the same step rows, and ``json.loads`` itself
for any text msgspec would read otherwise."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envloop_nb._loaders.inspect.decode import decode_sample
from envloop_nb._loaders.inspect.load_steps import LogSteps
from envloop_nb._loaders.inspect.read import open_inspect_log
from envloop_nb._loaders.inspect.steps import read_inspect_steps
from envloop_nb._loaders.inspect.zip import mapped, member_bytes
from envloop_nb._store.steps import HeldRows
from tests.conftest import FIXTURES

DATA = Path(__file__).parent / "data"
LOGS = [
    *sorted((FIXTURES / "trajectories" / "inspect").iterdir()),
    *sorted((FIXTURES / "inspect" / "eval").glob("*.eval")),
    *sorted((FIXTURES / "inspect" / "json").glob("*.json")),
    *sorted((DATA / "inspect_edits").glob("capitals_edits.*")),
    *sorted((DATA / "inspect_2024").glob("*.json")),
]
_READ = ("id", "epoch", "messages", "attachments", "error")
_EVENT = (
    "event", "id", "span_id", "parent_id", "type", "action", "timestamp", "completed",
    "working_time", "model", "error", "output",
)  # fmt: skip


def _texts(path: Path) -> list[tuple[str, bytes]]:
    """Each sample's JSON text as the log holds it (an ``.eval`` member's bytes; a
    ``.json`` log's sample written back as JSON)."""
    log = open_inspect_log(path)
    if log.form == "json":
        return [(p, json.dumps(s).encode()) for p, s in log.samples()]
    with mapped(path) as data:
        return [(m.filename, member_bytes(path, data, m)) for m in log.members]


def _rows(place: str, sample: Any) -> list[dict[str, Any]]:
    held = HeldRows()
    read_inspect_steps(
        held, task=str(sample["id"]), attempt=int(sample.get("epoch") or 1), sample=sample,
        source="log", place=place,
    )  # fmt: skip
    return [dict(r) for r in held.rows]


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (``json.dumps`` writes both the same)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_members_read_are_those_json_loads_gives(path: Path) -> None:
    texts = _texts(path)
    assert texts
    for _place, text in texts:
        whole, got = json.loads(text), decode_sample(text)
        if set(got) != set(_READ) | {"events"}:  # NaN in some capitals samples: read whole
            assert _same(got, whole)
            continue
        assert {k: got[k] for k in _READ} == {k: whole.get(k) for k in _READ}
        assert got["events"] == [{k: e.get(k) for k in _EVENT} for e in whole["events"]]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_decoded_samples_give_the_same_step_rows(path: Path) -> None:
    for place, text in _texts(path):
        assert _rows(place, decode_sample(text)) == _rows(place, json.loads(text))


_SAMPLE = '{"id": "a", "epoch": 1, "messages": [{"role": "user", "content": "hi"}], %s}'


@pytest.mark.parametrize(
    "members",
    [
        '"metadata": {"x": NaN}',  # literals json.loads reads and msgspec refuses
        '"metadata": [Infinity, -Infinity]',
        '"attachments": {"x": 1e400}',  # beyond a float, in a member read: json.loads reads inf
        '"metadata": "\\ud800"',  # an unpaired surrogate: json.loads keeps it
        '"events": {"event": "model"}',  # not the shape of an Inspect sample
        '"events": [null, {"event": "tool", "id": "c"}]',
        '"events": [{"event": "model", "working_time": NaN}]',
    ],
)
def test_a_text_msgspec_reads_otherwise_is_read_by_json_loads(members: str) -> None:
    text = _SAMPLE % members
    got = decode_sample(text)
    assert _same(got, json.loads(text))
    assert _same(decode_sample(text.encode()), got)


def test_huge_integers_and_repeated_keys_read_as_json_loads_reads_them() -> None:
    text = _SAMPLE % (
        '"error": 123456789012345678901234567890, "id": "b", '
        '"events": [{"event": "tool", "id": 1, "id": -98765432109876543210987}]'
    )
    whole, got = json.loads(text), decode_sample(text)
    assert got["id"] == whole["id"] == "b"  # the last one wins
    assert got["error"] == whole["error"] == 123456789012345678901234567890
    assert got["events"][0]["id"] == -98765432109876543210987


def test_text_that_is_not_json_is_refused_as_json_loads_refuses_it() -> None:
    with pytest.raises(json.JSONDecodeError):
        decode_sample('{"id": 1,}')
    with pytest.raises(UnicodeDecodeError):
        decode_sample(b'{"id": "\xff"}')


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(deadline=None, max_examples=200)
@given(value=_JSON, nan=st.booleans())
def test_any_json_value_reads_as_json_loads_reads_it(value: Any, nan: bool) -> None:
    sample = {"id": 1, "messages": [{"role": "user", "content": value}]}
    if nan:
        sample["metadata"] = math.nan
    text = json.dumps(sample)
    got = decode_sample(text)
    assert _same(got["messages"], json.loads(text)["messages"])


def test_the_loader_reads_each_text_of_a_sliced_column(tmp_path: Path) -> None:
    """``LogSteps.texts`` reads the texts in the column's own buffers: chunks of either
    string type, sliced, and a text only ``json.loads`` reads."""
    texts = [_SAMPLE % f'"metadata": {m}' for m in ("1", "NaN", "[2]", "3")]
    texts = [t.replace('"id": "a"', f'"id": "t{i}"') for i, t in enumerate(texts)]
    column = pa.chunked_array(
        [pa.array([texts[0], "x"], pa.string()).slice(0, 1), pa.array(["y", *texts[1:]]).slice(1)]
    )
    assert [len(c) for c in column.chunks] == [1, 3]
    import envloop_nb as enb

    ws = enb.open()
    ws.con.execute("BEGIN")
    steps = LogSteps(ws.con, "j", tmp_path / "log.eval")
    places = pa.chunked_array([pa.array([f"samples[{i}]" for i in range(4)])])
    steps.texts(places, column, pa.chunked_array([pa.array([False] * 4)]))
    assert steps.close()["messages"] == 4
    got = ws.con.execute("SELECT task, content FROM steps ORDER BY task").fetchall()
    assert got == [(f"t{i}", "hi") for i in range(4)]
