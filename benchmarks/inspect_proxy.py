"""The Inspect steps stages without inspect_ai (not in the dev lock): a proxy log and one
timed stage.

``python -m benchmarks.inspect_proxy make 20000`` writes ``data/steps/proxy-20000.eval``:
the real fixture ``log_message_deduplication.eval`` (written by Inspect: 12 messages, five
``bash`` calls, 42 events, ~80 kB a sample, most of it ``sandbox`` events) copied 20,000
times, each copy with its own ids (as ``steps_data`` does), members zstd-compressed as
Inspect writes them. ``python -m benchmarks.inspect_proxy reader|load 20000`` times the
``steps_inspect_reader`` body (``read_inspect_steps`` over every sample, decoded as the
loader decodes it, through one ``StepWriter``) or ``ws.load`` on it, in this process:
wall, CPU (all threads) and peak RSS (``ru_maxrss``). Run it under the bench lock; the ``messages_df`` floor needs
inspect_ai, so ratios against it compare with ``RESULTS.md``'s floor.
"""

from __future__ import annotations

import json
import os
import re
import resource
import struct
import sys
import time
import zipfile
import zlib
from pathlib import Path

from .generate import DATA

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "shared/fixtures/trajectories/inspect/log_message_deduplication.eval"
)
_ID = re.compile(r'"([A-Za-z0-9]{22})"')


def proxy_path(n: int) -> Path:
    return DATA / "steps" / f"proxy-{n}.eval"


def make(n: int) -> Path:
    """Write the proxy log of ``n`` samples (a zip with zstd members, method 93)."""
    import zstandard

    z = zipfile.ZipFile(FIXTURE)
    sample = z.read("samples/0_epoch_1.json").decode()
    header = json.loads(z.read("header.json"))
    header["eval"]["dataset"].update(samples=n, sample_ids=[f"s{i:06d}" for i in range(n)])
    if header.get("results"):
        header["results"].update(total_samples=n, completed_samples=n)
    out = proxy_path(n)
    out.parent.mkdir(parents=True, exist_ok=True)
    zstd = zstandard.ZstdCompressor(level=3)
    entries: list[tuple[bytes, int, int, int, int]] = []
    with out.open("wb") as f:

        def put(name: str, data: bytes) -> None:
            at, packed, crc, raw = f.tell(), zstd.compress(data), zlib.crc32(data), name.encode()
            f.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, 93, 0, 0, crc, len(packed),
                                len(data), len(raw), 0) + raw + packed)  # fmt: skip
            entries.append((raw, crc, len(packed), len(data), at))

        put("_journal/start.json", z.read("_journal/start.json"))
        for i in range(n):
            doc = json.loads(_ID.sub(lambda m, i=i: f'"{m.group(1)[:14]}{i:08d}"', sample))
            doc.update(id=f"s{i:06d}", uuid=f"bench-{i:08d}")
            put(f"samples/s{i:06d}_epoch_1.json", json.dumps(doc).encode())
        put("header.json", json.dumps(header).encode())
        start = f.tell()
        for raw, crc, csize, usize, at in entries:
            f.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, crc, csize,
                                usize, len(raw), 0, 0, 0, 0, 0, at) + raw)  # fmt: skip
        end = f.tell()
        f.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                            end - start, start, 0))  # fmt: skip
    return out


def stage(name: str, n: int) -> str:
    """Time one stage on the proxy log (``reader`` or ``load``) in a fresh workspace file."""
    import envloop_nb as enb
    from envloop_nb._loaders.inspect.read import open_inspect_log
    from envloop_nb._loaders.inspect.steps import read_inspect_steps
    from envloop_nb._store.steps import StepWriter

    log = proxy_path(n)
    ws_file = DATA / "steps" / f"proxy-{n}.duckdb"
    for p in (ws_file, Path(f"{ws_file}.wal")):
        p.unlink(missing_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    ws = enb.open(ws_file)
    if name == "load":
        ws.load(log)
    else:
        ws.con.execute("BEGIN")
        writer = StepWriter(ws.con, "inspect")
        for place, sample in open_inspect_log(log).samples(steps=True):
            read_inspect_steps(writer, task=str(sample["id"]), attempt=int(sample["epoch"]),
                               sample=sample, source=log.name, place=place)  # fmt: skip
        writer.close()
        ws.con.execute("COMMIT")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = ws.con.execute("SELECT count(*) FROM steps").fetchone()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"{name} {n}: wall {wall:.2f} s, CPU {cpu:.2f} s, peak {peak:.0f} MB, "
            f"rows {rows[0] if rows else None}, load {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    what, size = sys.argv[1], int(sys.argv[2])
    print(make(size) if what == "make" else stage(what, size))
