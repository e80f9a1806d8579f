"""The workspace's relational schema (DuckDB DDL).

One row per job in ``jobs``; one row per requested task in ``tasks`` (dispatched or
not: undispatched tasks count in coverage); one row per *attempt of record* in
the view ``attempts`` (retried slots resolved at load time, ``n_trials`` says how many
trials the slot saw): the rows a load copied, ``attempt_rows``, and the jobs registered in
place (``ws.load(..., copy=False)``: their Parquet files are read where they are, each
through the SQL recorded in ``attempt_sources``; see :mod:`.attempt_sources`); score dimensions in long form in ``dimensions`` with their units and
direction in ``dimension_meta``; task tags in long form in ``task_tags``.
Datasets exported or registered by the user live in ``datasets`` and ``dataset_rows``.

Experiments (traces judged by evaluators) live in ``experiments`` (one row each),
``exp_evaluators``, ``exp_cases`` (one per trace), ``exp_results`` (one per case ×
evaluator × run: every run is kept, only the highest counts) and ``exp_corrections``
(every manual correction ever made, live, undone or cleared by a re-evaluation, with who
and when; the machine score is never overwritten).

A *summarised* job (``ws.load_spark``, an MLflow run) keeps no attempts: its per-task
counts live in ``task_summaries``, one row per (task, threshold).

Every table carries ``job_id`` first so that a job is replaced or removed with one
``DELETE ... WHERE job_id = ?`` per table inside one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

__all__ = [
    "ANNOTATION_TABLES",
    "EXPERIMENT_TABLES",
    "JOB_TABLES",
    "ROWS_SELECT",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "missing_tables_sql",
    "table_sql",
    "written_by",
]

#: 2: ``attempts`` became a view over ``attempt_rows`` and the registered sources (a
#: version-1 file is migrated when opened for writing: :func:`.migrate.migrate`). 3:
#: ``attempt_rows.source_row``, a row number the view makes the place ``row N`` of. 4:
#: ``steps``, an attempt's trajectory (an older file gains the empty table when opened for
#: writing; an older envloop_nb refuses a version-4 file rather than leave steps behind
#: when it replaces a job). 5: ``steps.search_text``, the searchable text written with
#: each step (an older file's steps gain it, filled, when it is opened for writing; an
#: older envloop_nb refuses a version-5 file rather than write steps without it).
SCHEMA_VERSION = 5


def written_by() -> str:
    """``envloop_nb <version>``: stamped in a workspace's ``meta`` and in reports."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"envloop_nb {version('envloop_nb')}"
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "envloop_nb"


# Tables whose rows belong to one job, in the order they are written.
JOB_TABLES = (
    "jobs", "tasks", "task_tags", "attempt_rows", "dimensions", "dimension_meta", "task_summaries",
    "job_summary_cache", "task_counts_cache", "attempt_sources", "steps",
)  # fmt: skip

# A job's human annotation (kept across reloads of the job; removed with it).
ANNOTATION_TABLES = ("manual_dimensions", "annotations")

# Tables whose rows belong to one experiment (``experiment_id`` first).
EXPERIMENT_TABLES = (
    "experiments", "exp_evaluators", "exp_cases", "exp_results", "exp_corrections", "exp_steps",
)  # fmt: skip

#: ``attempt_rows`` in the ``attempts`` view's columns: a row numbered by ``source_row``
#: is placed at ``row N`` here, where only a question that shows the place makes the
#: text, rather than in every row a load writes.
ROWS_SELECT = (
    "SELECT * EXCLUDE (source_row) REPLACE (coalesce(source_place, 'row ' || source_row) "
    "AS source_place) FROM attempt_rows"
)

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

CREATE TABLE IF NOT EXISTS jobs (
    job_id            VARCHAR NOT NULL,   -- platform id, Harbor job id, or derived
    source_format     VARCHAR NOT NULL,   -- envloop | harbor | inspect | terminal-bench | lm-eval | tau-bench | tau2-bench | table
    source_path       VARCHAR,
    status            VARCHAR,            -- pending | running | completed | failed | cancelled
    created_at        TIMESTAMPTZ,
    finished_at       TIMESTAMPTZ,
    dataset_name      VARCHAR,
    dataset_version   VARCHAR,
    dataset_revision  VARCHAR,            -- content digest of the frozen revision
    runner            VARCHAR,
    profile_name      VARCHAR,
    profile_version   VARCHAR,
    profile_params    JSON,
    model             VARCHAR,
    request_id        VARCHAR,
    attempts          INTEGER NOT NULL,   -- k: attempts requested per task
    labels            JSON,
    platform_metrics  JSON,               -- the source's own aggregate numbers, verbatim
    extra             JSON,               -- format-specific job facts (Harbor stats, ...)
    loaded_at         TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS tasks (
    job_id    VARCHAR NOT NULL,
    task      VARCHAR NOT NULL,
    position  INTEGER NOT NULL,          -- order in the job's task list
    digest    VARCHAR,
    tags      JSON                       -- flat string map, as in the source
);

CREATE TABLE IF NOT EXISTS task_tags (
    job_id  VARCHAR NOT NULL,
    task    VARCHAR NOT NULL,
    key     VARCHAR NOT NULL,
    value   VARCHAR
);

CREATE TABLE IF NOT EXISTS attempt_rows (
    job_id            VARCHAR NOT NULL,
    task              VARCHAR NOT NULL,
    attempt           INTEGER NOT NULL,  -- 1..k
    trial_id          VARCHAR,
    status            VARCHAR NOT NULL,  -- pending | running | completed | failed | cancelled
    exit_code         INTEGER,
    error             VARCHAR,
    error_type        VARCHAR,
    reward            DOUBLE,            -- NULL = no reward (not yet, or never)
    composite         DOUBLE,
    judge_summary     VARCHAR,
    verifier_version  VARCHAR,
    input_tokens      BIGINT,
    output_tokens     BIGINT,
    cache_tokens      BIGINT,
    turns             INTEGER,
    cost_usd          DOUBLE,
    logprob_mean      DOUBLE,
    logprob_min       DOUBLE,
    logprob_max       DOUBLE,
    logprob_std       DOUBLE,
    logprob_zero_frac DOUBLE,
    started_at        TIMESTAMPTZ,
    finished_at       TIMESTAMPTZ,
    duration_s        DOUBLE,
    input             VARCHAR,           -- the prompt text, or a ChatML list as JSON text
    input_is_chat     BOOLEAN,
    output            VARCHAR,
    reference         VARCHAR,
    artifacts         JSON,
    extra             JSON,              -- phase timings, usage extras, raw metrics
    n_trials          INTEGER NOT NULL,  -- trials seen for this slot (>1: retried)
    source_place      VARCHAR,           -- where in the source: "line 12", trial dir, ...
    source_row        BIGINT             -- NULL source_place: the place is "row <source_row>"
);

CREATE VIEW IF NOT EXISTS attempts AS __ROWS_SELECT__;

-- An attempt's trajectory: one row per step item, in the order the agent took them
-- (envloop_nb._store.steps says what each column holds and checks every load's rows).
CREATE TABLE IF NOT EXISTS steps (
    job_id         VARCHAR NOT NULL,
    task           VARCHAR NOT NULL,
    attempt        INTEGER NOT NULL,
    step           INTEGER NOT NULL,  -- 1..n within the attempt, no gaps
    turn           INTEGER,           -- the source's own step / message number
    parent_step    INTEGER,           -- a sub-agent's rows: the step that delegated to it
    agent          VARCHAR,           -- NULL: the attempt's agent; else the sub-agent's name
    role           VARCHAR NOT NULL,  -- system | user | assistant | tool | environment
    kind           VARCHAR NOT NULL,  -- message | reasoning | tool_call | tool_result | error | context_summary | subagent
    tool           VARCHAR,           -- tool_call / tool_result: the function called
    call_id        VARCHAR,           -- tool_call: its id; tool_result: the call it answers
    arguments      JSON,              -- tool_call: the arguments as given
    content        VARCHAR,           -- text shown to or written by the model
    is_error       BOOLEAN NOT NULL,
    tokens_in      BIGINT,            -- usage of the model call this row's turn made
    tokens_out     BIGINT,            -- (on the turn's first row only, so sums add up)
    tokens_cached  BIGINT,
    cost_usd       DOUBLE,
    model          VARCHAR,
    started_at     TIMESTAMPTZ,
    duration_s     DOUBLE,
    copied         BOOLEAN NOT NULL,  -- replayed context (ATIF is_copied_context)
    extra          JSON,
    source_place   VARCHAR,           -- where in the source: "trajectory.json, steps[3]"
    search_text    VARCHAR            -- what find_steps(contains=) searches: lower(content), NUL, lower(arguments), made when written (steps.SEARCH_SQL)
);

-- A job whose attempts are read in place (ws.load(path, copy=False)): the SELECT that
-- gives its rows in attempt_rows' columns, and the files it reads with their size and
-- modification time when registered (a changed file is refused, not read).
CREATE TABLE IF NOT EXISTS attempt_sources (
    job_id      VARCHAR NOT NULL,
    select_sql  VARCHAR NOT NULL,
    files       JSON NOT NULL             -- [{path, size, mtime_ns}]
);

-- A *summarised* job (reduced elsewhere, e.g. on Spark: jobs.extra.summarised) has no
-- attempts here: its per-task counts, one row per (task, threshold), are the job.
-- threshold NULL: a pass is reward = 1. The sums are the exact fixed-point sums of
-- envloop_nb._metrics.counts.fixed_sum at the job's reward scales.
CREATE TABLE IF NOT EXISTS task_summaries (
    job_id        VARCHAR NOT NULL,
    task          VARCHAR NOT NULL,
    threshold     DOUBLE,
    dispatched    INTEGER NOT NULL,
    scored        INTEGER NOT NULL,
    invalid       INTEGER NOT NULL,
    passes        INTEGER NOT NULL,
    nonbinary     INTEGER NOT NULL,
    reward_sum    DOUBLE NOT NULL,
    reward_sumsq  DOUBLE NOT NULL,
    reward_min    DOUBLE,
    reward_max    DOUBLE
);

CREATE TABLE IF NOT EXISTS dimensions (
    job_id   VARCHAR NOT NULL,
    task     VARCHAR NOT NULL,
    attempt  INTEGER NOT NULL,
    name     VARCHAR NOT NULL,
    value    DOUBLE
);

CREATE TABLE IF NOT EXISTS dimension_meta (
    job_id            VARCHAR NOT NULL,
    name              VARCHAR NOT NULL,
    unit              VARCHAR,
    higher_is_better  BOOLEAN,
    verifier_version  VARCHAR
);

-- Human annotation: a manual dimension defined on a job (labels with their values, or a
-- numeric scale) and every annotation ever made, with who and when; the current one of a
-- (job, name, task, attempt) has replaced_at NULL, and a NULL value is a cleared one.
-- They are the user's work: a reload of the job keeps them (not in JOB_TABLES), and the
-- current values are mirrored into ``dimensions`` so every metric treats them alike.
CREATE TABLE IF NOT EXISTS manual_dimensions (
    job_id      VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    labels      JSON,                    -- [[label, value], ...] in display order, or NULL
    scale_min   DOUBLE,
    scale_max   DOUBLE,
    required    BOOLEAN NOT NULL,
    created_by  VARCHAR NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS annotations (
    job_id        VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    task          VARCHAR NOT NULL,
    attempt       INTEGER NOT NULL,
    label         VARCHAR,
    value         DOUBLE,
    reason        VARCHAR,
    annotator     VARCHAR NOT NULL,
    annotated_at  TIMESTAMPTZ NOT NULL,
    replaced_at   TIMESTAMPTZ
);

-- The workspace list's headline numbers of a job (its summary under the default policy),
-- kept so a list of many jobs opens without recounting each; valid while loaded_at
-- matches the job's, and deleted with the job's rows on a reload.
CREATE TABLE IF NOT EXISTS job_summary_cache (
    job_id     VARCHAR NOT NULL,
    loaded_at  TIMESTAMPTZ NOT NULL,
    summary    JSON NOT NULL
);

-- A job's per-task counts as its load counted them (envloop_nb._store.task_counts):
-- one row per requested task (0 for a task without attempts) at its position, passes of
-- reward = 1, the sums at the job's reward scales; valid while loaded_at matches the
-- job's, deleted with the job's rows. (Version 1 kept only the tasks with attempts,
-- without position.)
CREATE TABLE IF NOT EXISTS task_counts_cache (
    job_id        VARCHAR NOT NULL,
    loaded_at     TIMESTAMPTZ NOT NULL,
    task          VARCHAR NOT NULL,
    position      INTEGER,
    dispatched    INTEGER NOT NULL,
    scored        INTEGER NOT NULL,
    invalid       INTEGER NOT NULL,
    passes        INTEGER NOT NULL,
    nonbinary     INTEGER NOT NULL,
    reward_sum    DOUBLE NOT NULL,
    reward_sumsq  DOUBLE NOT NULL,
    reward_min    DOUBLE,
    reward_max    DOUBLE
);

CREATE TABLE IF NOT EXISTS datasets (
    name        VARCHAR NOT NULL,
    version     VARCHAR NOT NULL,
    purpose     VARCHAR,                 -- train | eval | NULL
    path        VARCHAR,
    row_count   BIGINT,
    content_hash VARCHAR,
    manifest    JSON,
    created_at  TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS dataset_rows (
    dataset_name     VARCHAR NOT NULL,
    dataset_version  VARCHAR NOT NULL,
    row_index        BIGINT NOT NULL,
    task             VARCHAR,
    input            VARCHAR,
    reference        VARCHAR,
    tags             JSON,
    extra            JSON
);

CREATE TABLE IF NOT EXISTS experiments (
    experiment_id  VARCHAR NOT NULL,
    name           VARCHAR,
    agent          VARCHAR,               -- the agent whose traces are evaluated
    type           VARCHAR,               -- single-group
    status         VARCHAR,               -- draft | running | completed | stopped
    created_at     TIMESTAMPTZ,
    started_at     TIMESTAMPTZ,
    finished_at    TIMESTAMPTZ,
    listen         JSON,                  -- {enabled, since, stopped_at}
    source_format  VARCHAR NOT NULL,      -- envloop | inspect | mlflow | table | notebook
    source_path    VARCHAR,
    extra          JSON,
    loaded_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS exp_evaluators (
    experiment_id    VARCHAR NOT NULL,
    name             VARCHAR NOT NULL,
    position         INTEGER NOT NULL,
    kind             VARCHAR,             -- preset | custom | local (a notebook function)
    needs_reference  BOOLEAN NOT NULL,
    version          VARCHAR,
    judge_model      VARCHAR,
    scale_min        DOUBLE NOT NULL,
    scale_max        DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS exp_cases (
    experiment_id     VARCHAR NOT NULL,
    trace_id          VARCHAR NOT NULL,
    position          INTEGER NOT NULL,   -- order of addition
    agent             VARCHAR,
    parent_trace_id   VARCHAR,
    status            VARCHAR,            -- success | error | running (the trace's run)
    trace_started_at  TIMESTAMPTZ,
    ingested_at       TIMESTAMPTZ,
    input             VARCHAR,            -- text, or a ChatML list as JSON text
    input_is_chat     BOOLEAN NOT NULL,
    output            VARCHAR,            -- text, or a list as JSON text
    reference         VARCHAR,
    reference_source  VARCHAR,            -- manual | dataset | NULL
    added_by          VARCHAR,            -- selection | listen | append
    tags              JSON
);

CREATE TABLE IF NOT EXISTS exp_results (
    experiment_id  VARCHAR NOT NULL,
    result_id      VARCHAR NOT NULL,
    trace_id       VARCHAR NOT NULL,
    evaluator      VARCHAR NOT NULL,
    run            INTEGER NOT NULL,      -- 1, +1 per re-evaluation; the highest counts
    status         VARCHAR NOT NULL,      -- pending | running | succeeded | failed
    score          DOUBLE,                -- the machine score (kept under a correction)
    reason         VARCHAR,
    points         JSON,
    error          VARCHAR,               -- why a failed row failed (never a 0)
    evaluated_at   TIMESTAMPTZ,
    origin         VARCHAR NOT NULL       -- source (the loaded file) | local (this workspace)
);

CREATE TABLE IF NOT EXISTS exp_corrections (
    experiment_id  VARCHAR NOT NULL,
    seq            INTEGER NOT NULL,      -- order made
    result_id      VARCHAR NOT NULL,
    trace_id       VARCHAR NOT NULL,
    evaluator      VARCHAR NOT NULL,
    run            INTEGER NOT NULL,      -- the run corrected; a higher run clears it
    score          DOUBLE NOT NULL,
    reason         VARCHAR NOT NULL,
    "by"           VARCHAR,
    "at"           TIMESTAMPTZ,
    undone_by      VARCHAR,
    undone_at      TIMESTAMPTZ,
    origin         VARCHAR NOT NULL       -- source | local
);

-- An experiment case's trajectory (an MLflow trace's spans): the columns of ``steps``,
-- owned by the experiment instead of a job; ``task`` is the case's trace_id and
-- ``attempt`` is always 0 (a case is one run). Its own table, so a job and an experiment
-- that share an id never see or delete each other's steps.
CREATE TABLE IF NOT EXISTS exp_steps (
    experiment_id  VARCHAR NOT NULL,
    task           VARCHAR NOT NULL,
    attempt        INTEGER NOT NULL,
    step           INTEGER NOT NULL,
    turn           INTEGER,
    parent_step    INTEGER,
    agent          VARCHAR,
    role           VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,
    tool           VARCHAR,
    call_id        VARCHAR,
    arguments      JSON,
    content        VARCHAR,
    is_error       BOOLEAN NOT NULL,
    tokens_in      BIGINT,
    tokens_out     BIGINT,
    tokens_cached  BIGINT,
    cost_usd       DOUBLE,
    model          VARCHAR,
    started_at     TIMESTAMPTZ,
    duration_s     DOUBLE,
    copied         BOOLEAN NOT NULL,
    extra          JSON,
    source_place   VARCHAR
);

-- Display names given with ws.rename (the job id when absent). Not a job table: a
-- reload keeps the name; ws.remove deletes it.
CREATE TABLE IF NOT EXISTS job_names (
    job_id      VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    renamed_at  TIMESTAMPTZ NOT NULL
);

-- Saved job snapshots (ws.save_to_leaderboard); not a job table: snapshots outlive jobs.
CREATE TABLE IF NOT EXISTS leaderboard (
    snapshot_id       VARCHAR NOT NULL,   -- job_id@fingerprint[:12] (+ /policy/threshold)
    job_id            VARCHAR NOT NULL,
    fingerprint       VARCHAR NOT NULL,   -- sha256 of attempts of record, tasks+digests, k
    saved_at          TIMESTAMPTZ NOT NULL,
    model             VARCHAR,
    status            VARCHAR,
    dataset_name      VARCHAR,
    dataset_version   VARCHAR,
    dataset_revision  VARCHAR,
    runner            VARCHAR,
    k                 INTEGER,
    policy            VARCHAR NOT NULL,
    threshold         DOUBLE,
    score             DOUBLE,
    pass              DOUBLE,
    pass_at_k         DOUBLE,
    pass_hat_k        DOUBLE,
    total             BIGINT,
    scored            BIGINT,
    missing           BIGINT,
    complete_members  BIGINT,
    total_members     BIGINT,
    summary           JSON
);
""".replace("__ROWS_SELECT__", ROWS_SELECT)


def table_sql(name: str) -> str:
    """The schema's ``CREATE TABLE IF NOT EXISTS`` statement of one table.

    Examples
    --------
    >>> table_sql("meta")
    'CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);'
    """
    import re

    found = re.search(rf"CREATE TABLE IF NOT EXISTS {re.escape(name)} \(.*?\);", SCHEMA_SQL, re.S)
    if found is None:
        raise KeyError(f"no table {name!r} in the workspace schema")
    return found[0]


def missing_tables_sql(existing: set[str]) -> list[str]:
    """``CREATE TEMP TABLE`` statements for the schema's tables a (read-only) workspace
    file does not have yet — an older file opened read-only still answers every query,
    with those tables empty for the session.

    Examples
    --------
    >>> [s.split("(")[0].strip() for s in missing_tables_sql(set())][:2]
    ['CREATE TEMP TABLE IF NOT EXISTS meta', 'CREATE TEMP TABLE IF NOT EXISTS jobs']
    """
    import re

    out = []
    for found in re.finditer(r"CREATE TABLE IF NOT EXISTS (\w+) \(.*?\);", SCHEMA_SQL, re.S):
        if found[1] not in existing:
            out.append(found[0].replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
    return out
