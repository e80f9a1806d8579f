"""The data of the steps benchmarks (issue 35), each written once under ``benchmarks/data/steps``.

- :func:`ensure_inspect_log`: an Inspect AI ``.eval`` log with tool calls, written by
  inspect_ai itself. A real ``eval()`` runs a small template task (a system message, a
  question, five calls of a ``lookup`` tool — the fourth fails with a ``ToolError`` on
  every fourth sample — and a final answer: 13 messages, with the model and tool events
  inspect_ai logs), its model the ``mockllm`` provider given a callable that answers from
  the conversation so far. A real eval takes ~0.2 s a sample here, so the big log is the
  template's samples written again under new ids (sample, messages, events) by
  inspect_ai's ``EvalRecorder`` (as ``bench_inspect.py`` writes its logs). The ids
  matter: ``messages_df`` keeps one row per message id.
- :func:`ensure_atif_job`: a Harbor job folder of ``n`` trials, each with its
  ``result.json`` and an ATIF-v1.6 ``agent/trajectory.json`` of 8 ATIF steps that read as
  exactly 20 step rows (system, user, then six agent turns of message + tool call +
  result), and ``attempts.parquet`` (task, attempt, status, reward) for a table job of
  the same attempts.
- :func:`ensure_steps_workspace`: a workspace file holding a table job of ``n`` attempts
  (``ws.load`` of a Parquet file) and ``20 n`` step rows written straight into ``steps``
  by one DuckDB statement in the same shape as the ATIF files.

Everything is a function of the indices (no clock, no random state): the same size always
gives the same bytes (for one inspect_ai / DuckDB version).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from .generate import DATA

ROOT = DATA / "steps"
K = 20  # attempts per task (the 20M-step workspace and the ATIF jobs)
TOOLS = ("bash", "read_file", "edit_file", "run_tests", "grep", "submit")
CALLS = 5  # lookup calls per Inspect sample
TEMPLATES = 100  # samples of the real eval


def parse_count(size: str) -> int:
    """``"100k"`` → 100_000, ``"1M"`` → 1_000_000, ``"500"`` → 500."""
    mult = {"k": 1_000, "m": 1_000_000}.get(size[-1:].lower(), 1)
    return int(float(size[:-1] if mult > 1 else size) * mult)


def _done(folder: Path) -> Path:
    return folder / ".done"


# ======================================================================================
# Inspect: a real eval (template), then its samples written again by EvalRecorder
# ======================================================================================


def _template_task(n: int) -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def lookup() -> Any:
        async def execute(key: str) -> str:
            """Look up a key in the store.

            Args:
                key: the key to look up.
            """
            _, sample, call = key.split("-")
            if call == "3" and int(sample) % 4 == 0:
                raise ToolError(f"no such key: {key}")
            return f"value of {key}: " + "lorem ipsum dolor " * (4 + int(sample) % 5)

        return execute

    samples = [
        Sample(id=f"s{i:06d}", input=f"Question {i}: look up the five values.", target=str(i))
        for i in range(n)
    ]
    return Task(
        dataset=MemoryDataset(samples),
        solver=[system_message("You are a lookup agent."), use_tools(lookup()), generate()],
        scorer=match(),
    )


def _mock_outputs(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
    """The mock model: a ``lookup`` call until five results came back, then the answer."""
    from inspect_ai.model import ModelOutput, ModelUsage

    done = sum(1 for m in input if m.role == "tool")
    sid = input[1].text.split()[1].rstrip(":")
    if done < CALLS:
        out = ModelOutput.for_tool_call(
            "mockllm/model", "lookup", {"key": f"k-{sid}-{done}"},
            tool_call_id=f"call-{done}", content=f"Looking up value {done} of {CALLS}.",
        )  # fmt: skip
    else:
        answer = sid if int(sid) % 3 else str(int(sid) + 1)
        out = ModelOutput.from_content("mockllm/model", f"The values are in.\nANSWER: {answer}")
    out.usage = ModelUsage(
        input_tokens=120 + 45 * done, output_tokens=24, total_tokens=144 + 45 * done
    )
    return out


def _template_log(folder: Path) -> Path:
    """Run the template eval (``TEMPLATES`` samples) unless its log exists."""
    found = sorted(folder.glob("*.eval"))
    if found:
        return found[0]
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    folder.mkdir(parents=True, exist_ok=True)
    model = get_model("mockllm/model", custom_outputs=_mock_outputs)
    (log,) = inspect_eval(
        _template_task(TEMPLATES), model=model, log_dir=str(folder), display="none",
        max_samples=50, max_connections=50,
    )  # fmt: skip
    if log.status != "success":
        raise RuntimeError(f"the template eval ended {log.status}: {log.error}")
    return Path(log.location.removeprefix("file://"))


_ID = re.compile(r'"([A-Za-z0-9]{22})"')


def inspect_log_path(samples: int, root: Path = ROOT) -> Path:
    return root / f"inspect-{samples}" / f"2026-12-06T00-00-00+00-00_lookup_{samples}.eval"


async def _write_inspect(template: Path, samples: int, out: Path) -> None:
    from inspect_ai.log import EvalSample, read_eval_log
    from inspect_ai.log._recorders.eval import EvalRecorder

    log = read_eval_log(str(template))
    assert log.samples
    spec = log.eval.model_copy(deep=True)
    spec.dataset.samples = samples
    spec.dataset.sample_ids = [f"s{i:06d}" for i in range(samples)]
    recorder = EvalRecorder(str(out.parent))
    await recorder.log_init(spec, str(out), clean=True)
    await recorder.log_start(spec, log.plan)
    zip_log = recorder.data[recorder._log_file_key(spec)]
    templates = [t.model_dump_json() for t in log.samples]
    for i in range(samples):
        # every id of the template (messages, events, spans: 22-character shortuuids)
        # made the copy's own, so that no two samples share a message id
        text = _ID.sub(lambda m, i=i: f'"{m.group(1)[:14]}{i:08d}"', templates[i % len(templates)])
        sample = EvalSample.model_validate_json(text).model_copy(
            update={"id": f"s{i:06d}", "uuid": f"bench-{i:08d}"}
        )
        await recorder.log_sample(spec, sample)
        if (i + 1) % 2_000 == 0:
            await zip_log.write_buffered_samples()
    assert log.results is not None and log.stats is not None
    results = log.results.model_copy(
        update={"total_samples": samples, "completed_samples": samples}
    )
    await recorder.log_finish(spec, "success", log.stats, results, None)


def ensure_inspect_log(samples: int, root: Path = ROOT) -> Path:
    """The ``.eval`` log of ``samples`` samples (written unless it exists)."""
    out = inspect_log_path(samples, root)
    if _done(out.parent).exists() and out.exists():
        return out
    import asyncio

    t0 = time.perf_counter()
    template = _template_log(root / "inspect-template")
    shutil.rmtree(out.parent, ignore_errors=True)
    out.parent.mkdir(parents=True)
    print(f"  writing the Inspect log of {samples:,} samples ...", flush=True)
    asyncio.run(_write_inspect(template, samples, out))
    facts = {"seconds": time.perf_counter() - t0, "bytes": out.stat().st_size}
    _done(out.parent).write_text(json.dumps(facts))
    return out


# ======================================================================================
# ATIF: a Harbor job folder, 20 step rows per trial
# ======================================================================================


def _h(*key: int) -> int:
    """A small deterministic hash of integers (no random state)."""
    x = 0x9E3779B1
    for k in key:
        x = ((x ^ k) * 0x85EBCA6B + 0xC2B2AE35) & 0xFFFFFFFF
        x ^= x >> 13
    return x


def trial_name(t: int, a: int) -> str:
    return f"task-{t:06d}__a{a:02d}"


def _trajectory(t: int, a: int) -> dict[str, Any]:
    n = t * K + a
    ts = f"2026-12-06T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}"
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "timestamp": ts + ".000Z", "source": "system",
         "message": "You are a software agent in a Linux container; the task's files are in /app."},
        {"step_id": 2, "timestamp": ts + ".100Z", "source": "user",
         "message": f"Task {t}: make the tests in /app/tests pass, then submit."},
    ]  # fmt: skip
    for j in range(6):
        tool = TOOLS[_h(n, j) % len(TOOLS)] if j < 5 else "submit"
        error = j < 5 and _h(n, j, 7) % 17 == 0
        cid = f"call_{j + 1}"
        steps.append(
            {
                "step_id": j + 3,
                "timestamp": f"{ts}.{200 + 100 * j:03d}Z",
                "source": "agent",
                "model_name": "acme/coder",
                "message": f"Step {j + 1}: using {tool} to look at the next part of the task.",
                "tool_calls": [
                    {"tool_call_id": cid, "function_name": tool,
                     "arguments": {"command": f"cat /app/src/module_{_h(n, j) % 50}.py"}}
                ],
                "observation": {
                    "results": [
                        {"source_call_id": cid,
                         "content": (f"error: {tool} failed: no such file" if error else
                                     f"ok ({tool}): " + "def f(x):\n    return x + 1\n" * 3),
                         **({"extra": {"is_error": True}} if error else {})}
                    ]
                },
                "metrics": {"prompt_tokens": 1200 + 150 * j, "completion_tokens": 40 + j,
                            "cached_tokens": 1000 + 150 * j, "cost_usd": 0.0012},
            }
        )  # fmt: skip
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": f"session-{t:06d}-{a:02d}",
        "agent": {"name": "acme-agent", "version": "1.0", "model_name": "acme/coder"},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": sum(1200 + 150 * j for j in range(6)),
            "total_completion_tokens": sum(40 + j for j in range(6)),
            "total_cached_tokens": sum(1000 + 150 * j for j in range(6)),
            "total_cost_usd": round(0.0012 * 6, 6),
            "total_steps": 8,
        },
    }


def _reward(t: int, a: int) -> int:
    return int(_h(t, a, 3) % 100 < 20 + (t % 5) * 15)


def _trial_result(t: int, a: int, job: str) -> dict[str, Any]:
    name = trial_name(t, a)
    start = f"2026-12-06T{(t // 3600) % 24:02d}:{(t // 60) % 60:02d}:{t % 60:02d}"
    return {
        "id": f"trial-{t:06d}-{a:02d}",
        "task_name": f"task-{t:06d}",
        "trial_name": name,
        "trial_uri": f"file:///jobs/{job}/{name}",
        "source": "bench",
        "config": {"task": {"path": f"task-{t:06d}", "source": "bench"}, "trial_name": name,
                   "agent": {"name": "acme-agent", "model_name": "acme/coder", "kwargs": {}},
                   "job_id": job},
        "agent_info": {"name": "acme-agent", "version": "1.0",
                       "model_info": {"name": "coder", "provider": "acme"}},
        "agent_result": {"n_input_tokens": 11250, "n_cache_tokens": 8250,
                         "n_output_tokens": 255, "cost_usd": 0.0072},
        "verifier_result": {"rewards": {"reward": _reward(t, a)}},
        "exception_info": None,
        "started_at": f"{start}.{a:02d}0000Z",
        "finished_at": f"{start}.{a:02d}5000Z",
    }  # fmt: skip


def atif_folder(attempts: int, root: Path = ROOT) -> Path:
    """``<root>/atif-<n>``; ``ENB_ATIF_DATA`` (a folder) puts the big jobs elsewhere (a
    disk with room: 1M trials are ~4M inodes and ~10 GB)."""
    return Path(os.environ.get("ENB_ATIF_DATA") or root) / f"atif-{attempts}"


#: Processes writing a big job's trial folders (each writes whole tasks).
_WRITERS = 2


def _write_tasks(job: str, first: int, stop: int) -> int:
    """Write the trial folders of tasks ``first`` .. ``stop - 1`` (a worker's share)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for t in range(first, stop):
        for a in range(1, K + 1):
            trial = f"{job}/{trial_name(t, a)}"
            os.mkdir(trial)
            os.mkdir(trial + "/agent")
            for name, doc in (
                ("result.json", _trial_result(t, a, "bench")),
                ("agent/trajectory.json", _trajectory(t, a)),
            ):
                fd = os.open(f"{trial}/{name}", flags, 0o644)
                try:
                    os.write(fd, json.dumps(doc).encode())
                finally:
                    os.close(fd)
    return (stop - first) * K


def ensure_atif_job(attempts: int, root: Path = ROOT) -> Path:
    """The Harbor job folder ``<root>/atif-<n>/job`` (written unless it exists).

    The trial folders are written by :data:`_WRITERS` processes, a block of tasks each
    (the same bytes as one process: every file is a function of its indices)."""
    from concurrent.futures import ProcessPoolExecutor

    folder = atif_folder(attempts, root)
    job = folder / "job"
    if _done(folder).exists():
        return job
    shutil.rmtree(folder, ignore_errors=True)
    job.mkdir(parents=True)
    t0 = time.perf_counter()
    tasks = attempts // K
    for name, doc in (
        ("config.json", {"job_name": "bench", "n_attempts": K,
                         "agents": [{"name": "acme-agent", "model_name": "acme/coder"}],
                         "datasets": [{"name": "bench", "version": "1.0"}]}),
        ("lock.json", {"schema_version": 3, "created_at": "2026-12-06T00:00:00.000000Z",
                       "harbor": {"version": "0.27.1"}, "trials": []}),
    ):  # fmt: skip
        (job / name).write_text(json.dumps(doc, indent=4))
    block = 500
    blocks = [(str(job), b, min(b + block, tasks)) for b in range(0, tasks, block)]
    written = 0
    with ProcessPoolExecutor(min(_WRITERS, len(blocks) or 1)) as pool:
        for n in pool.map(_write_tasks, *zip(*blocks, strict=True)):
            written += n
            if written % 100_000 == 0:
                print(f"    {written:,} trials written", flush=True)
    _attempts_parquet(folder, tasks)
    facts = {"seconds": time.perf_counter() - t0, "trials": tasks * K, "writers": _WRITERS}
    _done(folder).write_text(json.dumps(facts))
    return job


def _attempts_parquet(folder: Path, tasks: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ts = [t for t in range(tasks) for _ in range(K)]
    aa = [a for _ in range(tasks) for a in range(1, K + 1)]
    pq.write_table(
        pa.table(
            {
                "task": [f"task-{t:06d}" for t in ts],
                "attempt": pa.array(aa, pa.int32()),
                "status": ["completed"] * len(ts),
                "reward": [float(_reward(t, a)) for t, a in zip(ts, aa, strict=True)],
            }
        ),
        folder / "attempts.parquet",
    )


def trajectory_glob(attempts: int, root: Path = ROOT) -> str:
    return str(atif_folder(attempts, root) / "job" / "*" / "agent" / "trajectory.json")


# ======================================================================================
# 20 steps per attempt straight into a workspace's steps table (DuckDB SQL)
# ======================================================================================

#: One row per step of attempt ``a`` (0-based: task ``a // K``, attempt ``a % K + 1``),
#: ``s`` 1..20: system, user, then six turns of message + tool call + tool result; the
#: shape of :func:`_trajectory` (tools and errors by DuckDB's ``hash``, not ``_h``).
_STEPS_SQL = """
WITH r AS (
    SELECT i // 20 AS a, (i % 20 + 1)::INTEGER AS s, ((i % 20) - 2) // 3 AS j,
           ((i % 20) - 2) % 3 AS part
    FROM range($n * 20) t(i)
), x AS (
    SELECT *, CASE WHEN j = 5 THEN 'submit'
                   ELSE ['bash', 'read_file', 'edit_file', 'run_tests', 'grep', 'submit'][
                        1 + (hash(a, j) % 6)::INTEGER] END AS tool,
           j < 5 AND hash(a, j, 7) % 17 = 0 AS failed
    FROM r
)
SELECT $job AS job_id,
       'task-' || lpad((a // 20)::VARCHAR, 6, '0') AS task,
       (a % 20 + 1)::INTEGER AS attempt,
       s AS step,
       CASE WHEN s <= 2 THEN s ELSE j + 3 END::INTEGER AS turn,
       CASE WHEN s = 1 THEN 'system' WHEN s = 2 THEN 'user'
            WHEN part = 2 THEN 'tool' ELSE 'assistant' END AS role,
       CASE WHEN s <= 2 OR part = 0 THEN 'message'
            WHEN part = 1 THEN 'tool_call' ELSE 'tool_result' END AS kind,
       CASE WHEN s > 2 AND part > 0 THEN tool END AS tool,
       CASE WHEN s > 2 AND part > 0 THEN 'call_' || (j + 1) END AS call_id,
       CASE WHEN s > 2 AND part = 1
            THEN json_object('command', 'cat /app/src/module_' || (hash(a, j) % 50) || '.py')
       END AS arguments,
       CASE WHEN s = 1 THEN 'You are a software agent in a Linux container.'
            WHEN s = 2 THEN 'Task ' || (a // 20) || ': make the tests pass, then submit.'
            WHEN part = 0 THEN 'Step ' || (j + 1) || ': using ' || tool || ' next.'
            WHEN part = 2 AND failed THEN 'error: ' || tool || ' failed: no such file'
            WHEN part = 2 THEN 'ok (' || tool || '): def f(x): return x + ' || (a % 97)
       END AS content,
       s > 2 AND part = 2 AND failed AS is_error,
       CASE WHEN s > 2 AND part = 0 THEN 1200 + 150 * j END AS tokens_in,
       CASE WHEN s > 2 AND part = 0 THEN 40 + j END AS tokens_out,
       CASE WHEN s > 2 AND part = 0 THEN 1000 + 150 * j END AS tokens_cached,
       CASE WHEN s > 2 AND part = 0 THEN 0.0012 END AS cost_usd,
       CASE WHEN s > 2 AND part <> 2 THEN 'acme/coder' END AS model,
       false AS copied,
       'trajectory.json, steps[' || (CASE WHEN s <= 2 THEN s ELSE j + 3 END - 1) || ']'
           AS source_place
FROM x
"""


def steps_ws_path(attempts: int, root: Path = ROOT) -> Path:
    return root / f"ws-steps-{attempts}.duckdb"


def steps_job_id(attempts: int) -> str:
    return f"steps_{attempts}"


def ensure_steps_workspace(attempts: int, root: Path = ROOT) -> Path:
    """A workspace file with a table job of ``attempts`` attempts (``attempts // 20`` tasks
    × 20, loaded by ``ws.load``) and ``20 × attempts`` step rows (written unless it
    exists at this workspace schema version: the benchmarks open it read-only, and an
    older file would be read through the read-only shims). The step rows pass
    ``check_steps``."""
    from envloop_nb._store.schema import SCHEMA_VERSION

    path = steps_ws_path(attempts, root)
    done = path.with_suffix(".done")
    made = json.loads(done.read_text()) if done.exists() and path.exists() else {}
    if made.get("schema_version") == SCHEMA_VERSION:
        return path
    import envloop_nb as enb
    from envloop_nb._store.steps import check_steps, insert_sql

    root.mkdir(parents=True, exist_ok=True)
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    parquet = root / f"steps-attempts-{attempts}.parquet"
    _attempts_parquet_sql(parquet, attempts // K)
    ws = enb.open(path)
    job_id = steps_job_id(attempts)
    ws.load(str(parquet), format="table", k=K, job_id=job_id)
    loaded = time.perf_counter() - t0
    ws.con.execute("BEGIN")
    ws.con.execute(insert_sql(_STEPS_SQL), {"n": attempts, "job": job_id})
    check_steps(ws.con, job_id, "generated")
    ws.con.execute("COMMIT")
    ws.con.execute("CHECKPOINT")
    ws.close()
    facts = {"load_s": loaded, "seconds": time.perf_counter() - t0, "steps": 20 * attempts,
             "bytes": path.stat().st_size, "schema_version": SCHEMA_VERSION}  # fmt: skip
    done.write_text(json.dumps(facts))
    return path


def _attempts_parquet_sql(path: Path, tasks: int) -> None:
    """The same attempts as :func:`_attempts_parquet`'s shape (rewards by DuckDB's hash)."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"""COPY (SELECT 'task-' || lpad((i // {K})::VARCHAR, 6, '0') AS task,
                         (i % {K} + 1)::INTEGER AS attempt, 'completed' AS status,
                         (hash(i, 3) % 100 < 20 + (i // {K}) % 5 * 15)::INT::DOUBLE AS reward
                  FROM range(?) t(i)) TO '{path}' (FORMAT parquet)""",
        [tasks * K],
    )
    con.close()
