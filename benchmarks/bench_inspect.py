"""Stage 6: an Inspect AI log loaded by envloop_nb vs ``inspect_ai.analysis.samples_df``.

``python -m benchmarks run --merge --stages 6 [--inspect-sizes 100kx5,10kx5]``

The log is written by inspect_ai's own writer: the ``.eval`` form by its
``EvalRecorder`` (``log_init`` / ``log_start`` / ``log_sample`` / ``log_finish``, the
path ``write_eval_log`` takes, its buffer written out every 5,000 samples so that the
samples never sit in memory all at once; each write of the buffer re-scans every
summary written so far to drop superseded ones, so every 50 samples, as before, made
the 100kx5 log take 127 min, quadratic in samples, and every 5,000 takes ~35 min;
``condense_sample`` is skipped: these samples carry no images or attachments, it
would change nothing), the ``.json`` form by ``to_json_safe`` (the
serializer of its ``JSONRecorder``), streamed sample by sample. Each sample is built
from inspect_ai's classes (``EvalSample``, ``ChatMessageUser`` /
``ChatMessageAssistant``, ``ModelOutput``, ``Score``, ``ModelUsage``, ``EvalError``):
a user and an assistant message, the output completion with its usage, two scorers
(``match``: ``C`` / ``I``, the headline; ``quality``: a float), ``metadata.subset`` /
``difficulty``, ``model_usage``, times; ~2% of the samples errored (no scores, an
``EvalError``). Everything is a function of ``(sample index, epoch)`` (deterministic).
No ``events`` are logged (a real run logs model events too: more bytes for a full-sample
reader, nothing for ``samples_df``'s default columns, which come from
``summaries.json``).

Timed (each run in a fresh process, see ``runner.py``): ``envloop_nb.open(fresh
workspace file).load(log)`` vs ``samples_df(log, quiet=True)`` with its default
columns (``SampleSummary``). Imports are setup, timed apart (``extra.import_s``).

Sizes: ``<samples>x<epochs>``, e.g. ``100kx5`` (100,000 samples × 5 epochs = 500,000
sample records) or ``200x2``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from .generate import DATA

FOLDER = DATA / "inspect"
SUBSETS = ("math", "code", "reasoning", "tool-use", "writing")
MODEL = "mockllm/model"
TASK = "bench_inspect"
ERROR_SHARE = 0.02
FLUSH_EVERY = 5_000

STAGES = (
    "inspect_envloop_eval",
    "inspect_samples_df_eval",
    "inspect_envloop_json",
    "inspect_samples_df_json",
)


def parse_size(size: str) -> tuple[int, int]:
    """``"100kx5"`` → ``(100_000, 5)``."""
    n, _, e = size.lower().partition("x")
    mult = {"k": 1_000, "m": 1_000_000}.get(n[-1:], 1)
    samples = int(float(n[:-1] if mult > 1 else n) * mult)
    return samples, int(e or 1)


def size_label(size: str) -> str:
    n, e = parse_size(size)
    return f"{size} ({n:,} samples × {e} epochs)"


def paths(size: str, root: Path = FOLDER) -> tuple[Path, Path]:
    """Inspect's own file naming: ``samples_df`` skips a ``.json`` log whose name does
    not start with a timestamp."""
    stem = f"2026-12-01T10-00-00+00-00_{TASK.replace('_', '-')}_{size}"
    return root / f"{stem}.eval", root / f"{stem}.json"


# ======================================================================================
# the log
# ======================================================================================


def _spec(n: int, epochs: int) -> tuple[Any, Any]:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalPlan, EvalPlanStep, EvalSpec
    from inspect_ai.log._log import EvalMetricDefinition, EvalScorer

    spec = EvalSpec(
        eval_id="benchInspectEval0000000",
        run_id="benchInspectRun00000000",
        created="2026-12-01T10:00:00+00:00",
        task=TASK,
        task_id="benchInspectTask0000000",
        task_version=0,
        task_file="bench_inspect.py",
        task_registry_name=TASK,
        task_attribs={},
        task_args={},
        dataset=EvalDataset(
            name="bench", samples=n, sample_ids=[_sid(i) for i in range(n)], shuffled=False
        ),
        model=MODEL,
        config=EvalConfig(epochs=epochs, fail_on_error=False),
        packages={"inspect_ai": _version()},
        scorers=[
            EvalScorer(
                name="match",
                metrics=[
                    EvalMetricDefinition(name="inspect_ai/accuracy"),
                    EvalMetricDefinition(name="inspect_ai/stderr"),
                ],
            ),
            EvalScorer(name="quality", metrics=[EvalMetricDefinition(name="inspect_ai/mean")]),
        ],
    )
    plan = EvalPlan(
        name="plan", steps=[EvalPlanStep(solver="generate", params={"tool_calls": "loop"})]
    )
    return spec, plan


def _version() -> str:
    from importlib.metadata import version

    return version("inspect_ai")


def _sid(i: int) -> str:
    return f"task-{i:06d}"


def _sample(i: int, epoch: int) -> tuple[Any, float | None, float | None]:
    """(EvalSample, match value 0/1 or None, quality or None)."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    rng = random.Random(i * 1_000 + epoch)
    subset = SUBSETS[i % len(SUBSETS)]
    difficulty = ("easy", "medium", "hard")[(i // 5) % 3]
    solve = {"easy": 0.85, "medium": 0.5, "hard": 0.15}[difficulty]
    a, b = i % 997, (i * 7) % 1009
    question = f"[{subset}] Compute {a} + {b}. Show your reasoning, then give the answer."
    target = str(a + b)
    correct = rng.random() < solve
    answer = target if correct else str(a + b + rng.randint(1, 9))
    completion = (
        f"Adding {a} and {b}: units first, then tens and hundreds, carrying as needed. "
        f"The sum is {answer}.\nANSWER: {answer}"
    )
    in_tok, out_tok = 40 + rng.randint(0, 60), 30 + rng.randint(0, 300)
    usage = ModelUsage(input_tokens=in_tok, output_tokens=out_tok, total_tokens=in_tok + out_tok)
    started = 1_764_583_200 + i * 0.37 + epoch * 11.0
    total = 0.5 + rng.random() * 20
    common: dict[str, Any] = {
        "id": _sid(i),
        "epoch": epoch,
        "input": question,
        "target": target,
        "metadata": {"subset": subset, "difficulty": difficulty},
        "started_at": _iso(started),
        "completed_at": _iso(started + total),
        "total_time": round(total, 3),
        "working_time": round(total * 0.9, 3),
        "uuid": f"u{i:07d}e{epoch}",
    }
    user = ChatMessageUser(content=question, source="input")
    if rng.random() < ERROR_SHARE:
        msg = "RuntimeError('model backend timed out after 3 retries')"
        sample = EvalSample(
            **common,
            messages=[user],
            output=ModelOutput(model=MODEL),
            error=EvalError(
                message=msg,
                traceback=f"Traceback (most recent call last):\n  ...\n{msg}\n",
                traceback_ansi=f"Traceback (most recent call last):\n  ...\n{msg}\n",
            ),
            model_usage={MODEL: ModelUsage(input_tokens=in_tok, total_tokens=in_tok)},
        )
        return sample, None, None
    quality = round(min(1.0, max(0.0, (0.75 if correct else 0.3) + rng.gauss(0, 0.15))), 4)
    output = ModelOutput.from_content(MODEL, completion)
    output.usage = usage
    sample = EvalSample(
        **common,
        messages=[user, ChatMessageAssistant(content=completion, model=MODEL, source="generate")],
        output=output,
        scores={
            "match": Score(
                value="C" if correct else "I",
                answer=answer,
                explanation=f"expected {target}, got {answer}",
            ),
            "quality": Score(value=quality, explanation="rubric score"),
        },
        model_usage={MODEL: usage},
    )
    return sample, float(correct), quality


def _iso(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def _results(
    n: int, epochs: int, per_sample: dict[str, list[list[float]]], samples_done: int
) -> Any:
    """Inspect's ``results``: epochs reduced by mean, then the metric over the samples."""
    import statistics

    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    scores = []
    for scorer, metric in (("match", "accuracy"), ("quality", "mean")):
        reduced = [statistics.fmean(v) for v in per_sample[scorer] if v]
        metrics = {metric: EvalMetric(name=metric, value=statistics.fmean(reduced))}
        if scorer == "match":
            se = statistics.stdev(reduced) / len(reduced) ** 0.5 if len(reduced) > 1 else 0.0
            metrics["stderr"] = EvalMetric(name="stderr", value=se)
        scores.append(
            EvalScore(
                name=scorer,
                scorer=scorer,
                reducer="mean",
                scored_samples=len(reduced),
                unscored_samples=n - len(reduced),
                metrics=metrics,
            )
        )
    return EvalResults(total_samples=n * epochs, completed_samples=samples_done, scores=scores)


async def _write(n: int, epochs: int, eval_path: Path, json_path: Path) -> None:
    from inspect_ai._util.json import to_json_safe
    from inspect_ai.log import EvalLog, EvalStats
    from inspect_ai.log._recorders.eval import EvalRecorder
    from inspect_ai.model import ModelUsage

    spec, plan = _spec(n, epochs)
    recorder = EvalRecorder(str(eval_path.parent))
    await recorder.log_init(spec, str(eval_path), clean=True)
    await recorder.log_start(spec, plan)
    zip_log = recorder.data[recorder._log_file_key(spec)]
    per_sample: dict[str, list[list[float]]] = {"match": [[] for _ in range(n)], "quality": []}
    per_sample["quality"] = [[] for _ in range(n)]
    in_tok = out_tok = 0
    done = 0
    tmp_json = json_path.with_suffix(".json.part")
    with tmp_json.open("wb") as jf:
        jf.write(b'  "samples": [\n')  # laid out as Inspect's JSONRecorder writes it: indent 2
        count = 0
        for epoch in range(1, epochs + 1):
            for i in range(n):
                sample, match, quality = _sample(i, epoch)
                if match is not None and quality is not None:
                    per_sample["match"][i].append(match)
                    per_sample["quality"][i].append(quality)
                    done += 1
                u = sample.model_usage[MODEL]
                in_tok += u.input_tokens
                out_tok += u.output_tokens
                if count:
                    jf.write(b",\n")
                jf.write(b"\n".join(b"    " + line for line in to_json_safe(sample).split(b"\n")))
                await recorder.log_sample(spec, sample)
                count += 1
                if count % FLUSH_EVERY == 0:
                    # write the buffer into the recorder's temp zip (its own flush
                    # also copies the whole temp file to the destination: quadratic)
                    await zip_log.write_buffered_samples()
        jf.write(b"\n  ]\n")
    stats = EvalStats(
        started_at="2026-12-01T10:00:00+00:00",
        completed_at="2026-12-01T12:00:00+00:00",
        model_usage={
            MODEL: ModelUsage(
                input_tokens=in_tok, output_tokens=out_tok, total_tokens=in_tok + out_tok
            )
        },
    )
    results = _results(n, epochs, per_sample, done)
    await recorder.log_finish(spec, "success", stats, results, None)
    # the .json form: the header as inspect's JSONRecorder serializes it, then the samples
    header = EvalLog(eval=spec, plan=plan, status="success", stats=stats, results=results)
    head = to_json_safe(header).rstrip()
    assert head.endswith(b"}")
    with json_path.open("wb") as out, tmp_json.open("rb") as part:
        out.write(head[:-1].rstrip() + b",\n")
        while chunk := part.read(1 << 24):
            out.write(chunk)
        out.write(b"}")
    tmp_json.unlink()


def ensure_log(size: str, root: Path = FOLDER) -> tuple[Path, Path]:
    """Write the ``.eval`` and ``.json`` logs of ``size`` unless they exist."""
    eval_path, json_path = paths(size, root)
    done = root / f"{size}.done"
    if done.exists() and eval_path.exists() and json_path.exists():
        return eval_path, json_path
    root.mkdir(parents=True, exist_ok=True)
    n, epochs = parse_size(size)
    t0 = time.perf_counter()
    print(f"  writing the Inspect log {size_label(size)} ...", flush=True)
    asyncio.run(_write(n, epochs, eval_path, json_path))
    seconds = time.perf_counter() - t0
    facts = {
        "seconds": seconds,
        "eval_bytes": eval_path.stat().st_size,
        "json_bytes": json_path.stat().st_size,
    }
    done.write_text(json.dumps(facts))
    print(f"  wrote {eval_path.name} and {json_path.name} in {seconds:.0f} s", flush=True)
    return eval_path, json_path


def log_facts(size: str, root: Path = FOLDER) -> dict[str, Any]:
    done = root / f"{size}.done"
    return json.loads(done.read_text()) if done.exists() else {}


# ======================================================================================
# the timed bodies (child side)
# ======================================================================================


def setup(name: str, size: str, ws_dir: Path, root: Path = FOLDER) -> tuple[Any, int, Any]:
    """(timed body, sample records, after(result) -> facts) for one stage 6 run."""
    impl, form = name.removeprefix("inspect_").rsplit("_", 1)
    eval_path, json_path = ensure_log(size, root)
    log = eval_path if form == "eval" else json_path
    n, epochs = parse_size(size)
    t0 = time.perf_counter()
    if impl == "envloop":
        import envloop_nb as enb

        import_s = time.perf_counter() - t0
        ws_file = ws_dir / f"inspect-{size}-{form}.duckdb"
        ws_file.parent.mkdir(parents=True, exist_ok=True)

        def body() -> Any:
            for p in (ws_file, Path(str(ws_file) + ".wal")):
                p.unlink(missing_ok=True)
            ws = enb.open(ws_file)
            return ws, ws.load(log)

        def after(result: Any) -> Any:
            ws, job = result
            d = job.summary().to_dict()
            rows = ws.con.execute(
                "SELECT count(*), count(reward), avg(reward) FROM attempts WHERE job_id = ?",
                [job.id],
            ).fetchone()
            ws.close()
            ws_file.unlink(missing_ok=True)
            return {
                "import_s": import_s,
                "records": int(rows[0]),
                "scored": int(rows[1]),
                "mean_reward": rows[2],
                "total": d["total"],
            }

        return body, n * epochs, after

    if impl != "samples_df":
        raise SystemExit(f"unknown stage {name!r}")
    from inspect_ai.analysis import samples_df

    import_s = time.perf_counter() - t0

    def body_df() -> Any:
        return samples_df(str(log), quiet=True)

    def after_df(df: Any) -> Any:
        col = "score_match"
        scored = df[col].map({"C": 1.0, "I": 0.0}) if col in df else None
        return {
            "import_s": import_s,
            "records": len(df),
            "columns": len(df.columns),
            "scored": int(scored.notna().sum()) if scored is not None else None,
            "mean_reward": float(scored.mean()) if scored is not None else None,
        }

    return body_df, n * epochs, after_df


def check(size: str, by_stage: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """envloop_nb and samples_df read the same records, the same headline scores."""
    n, epochs = parse_size(size)
    out = []
    for form in ("eval", "json"):
        env = by_stage.get(f"inspect_envloop_{form}")
        df = by_stage.get(f"inspect_samples_df_{form}")
        what = f"stage 6 {size} .{form}: envloop_nb vs samples_df (records, scored, mean)"
        if not env or not df or "error" in env or "error" in df:
            continue
        a, b = env["extra"], df["extra"]
        problem = None
        if not (a["records"] == b["records"] == n * epochs):
            problem = f"records {a['records']} vs {b['records']} (want {n * epochs})"
        elif a["scored"] != b["scored"]:
            problem = f"scored {a['scored']} vs {b['scored']}"
        elif abs((a["mean_reward"] or 0) - (b["mean_reward"] or 0)) > 1e-9:
            problem = f"mean reward {a['mean_reward']} vs {b['mean_reward']}"
        env["agrees"] = df["agrees"] = problem is None
        out.append({"what": what, "problem": problem})
    return out
