"""Generate the sample Harbor jobs in ``sample_data/agent_runs/`` (deterministic).

Usage (from the project root)::

    .venv/bin/python sample_data/agent_runs/generate.py            # writes beside this file
    .venv/bin/python sample_data/agent_runs/generate.py OUT_DIR    # writes into OUT_DIR

Two Harbor job folders, one per checkpoint of the same agent (``acme-agent`` 1.3.0) on
the same frozen dataset (``acme-terminal-bench`` 1.0: 12 terminal tasks, the same task
checksums and git commit), 3 attempts per task, written by Harbor 0.27.1 (``lock.json``):

- ``base/``          model ``acme/coder-base``
- ``sft-step2000/``  model ``acme/coder-sft-step2000``

The layout is Harbor's (``../shared/formats/harbor.md`` and the real job folders in
``../shared/fixtures/harbor/``): job ``config.json``, ``lock.json``, ``result.json``; one
folder per trial ``<task>__<7 chars>/`` with ``config.json``, ``result.json``,
``verifier/reward.txt`` + ``test-stdout.txt`` (no ``reward.txt`` when the verifier
failed), ``exception.txt`` on an exception, and ``agent/trajectory.json`` in ATIF-v1.7
(the shape of Harbor's own ``terminus_2`` files: agent with ``tool_definitions``, steps
1..n with ``source`` system / user / agent, ``reasoning_content``, ``tool_calls``,
``observation.results`` with ``source_call_id``, ``metrics`` and ``timestamp``;
``final_metrics`` are the sums of the steps' metrics). Tools: ``bash``, ``read_file``,
``edit_file``, ``run_tests``, ``submit`` (a final ``submit`` call has no result, as real
files do). A tool error is a result whose content starts with ``Error:`` and carries
``"extra": {"is_error": true}``.

Each attempt is written from a recipe (``PLANS``): tokens ``E0``-``E2`` explore, ``M`` an
``edit_file`` on a path that does not exist (an error), ``R`` finds the right path, ``F``
the fix, ``W`` a wrong fix, ``L<n>`` the task's looping ``bash`` call ``n`` times in a row,
``TP`` / ``TF`` tests pass / fail, ``S`` submit; the outcome is 1 or 0 (the reward), ``N``
(no reward: ``RewardFileNotFoundError``, ``verifier_result`` null) or ``T`` (reward 0 and
``AgentTimeoutError``). Steps are a pure function of the task and the recipe (the same
recipe prefix gives the same steps, metrics included, in both jobs), so two attempts of
one task share their steps up to the first token that differs: the first divergence.
Random draws (timings, trial names) come from a seeded ``numpy.random.Generator``;
timestamps are offsets from fixed instants.

What is built in (``sample_data/README.md`` says it too):

- loops (the same ``bash`` call with the same arguments 3+ times in a row): 8 base
  attempts, 1 SFT attempt; the base timeout trial loops 22 times.
- ``edit_file`` on a missing path: 9 errors in base, 3 in SFT; 3 base attempts and 1 SFT
  attempt stop right after the error.
- SFT fixes ``parse-nginx-logs``, ``sqlite-index-migration``, ``python-package-build``
  and ``port-flask-to-fastapi``; it breaks ``cron-log-rotate`` (3/3 -> 0/3: it edits
  without the dry run at step 5 and submits untested) and ``csv-dedupe-report``
  (2/3 -> 1/3: attempt 1 edits a path that does not exist at step 6 and stops).
- a verifier error (no reward) in ``json-schema-fix`` attempt 2 (base) and
  ``make-static-binary`` attempt 2 (SFT); Harbor 0.27.1 skips them in its ``mean`` and
  ``pass_at_k`` (``policy="unknown"`` reproduces ``result.json``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SEED = 20260420
HARBOR_VERSION = "0.27.1"
ATIF = "ATIF-v1.7"
DATASET = {"name": "acme-terminal-bench", "version": "1.0"}
TASKS_GIT = "https://github.com/acme/terminal-tasks.git"
TASKS_COMMIT = hashlib.sha1(b"acme-terminal-bench 1.0").hexdigest()
AGENT = {"name": "acme-agent", "version": "1.3.0"}
K = 3
CONCURRENCY = 4
AGENT_TIMEOUT_S = 900
# price per token (USD): uncached input, cached input, output
PRICE_IN, PRICE_CACHED, PRICE_OUT = 1.25e-6, 0.125e-6, 10e-6
JOBS = {
    # folder: (model, job start)
    "base": ("acme/coder-base", dt.datetime(2026, 4, 20, 9, 0, 0, tzinfo=dt.UTC)),
    "sft-step2000": ("acme/coder-sft-step2000", dt.datetime(2026, 4, 21, 9, 0, 0, tzinfo=dt.UTC)),
}

SYSTEM = (
    "You are acme-agent, an autonomous software engineer working in a Linux container. "
    "The task's files are in /app, your working directory. Use the tools to inspect files, "
    "run commands and edit code. Run the tests before you submit; call submit once, when "
    "the task is done."
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string"} for p in params},
                "required": list(params),
            },
        },
    }
    for name, description, params in [
        ("bash", "Run a shell command in /app.", ("command",)),
        ("read_file", "Return the text of a file.", ("path",)),
        (
            "edit_file",
            "Replace `old` by `new` in a file (old empty: create it).",
            ("path", "old", "new"),
        ),
        ("run_tests", "Run the task's tests.", ()),
        ("submit", "Finish the task.", ("summary",)),
    ]
]
# The chat template and the rendered tool schemas, in tokens, before the first message.
SCAFFOLD_TOKENS = 1100


# -- task content ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, str]
    out: str | None  # None: no result (a final submit)
    error: bool = False
    seconds: float | None = None  # how long the tool ran (None: drawn by kind)


@dataclass(frozen=True)
class Step:
    say: str
    calls: tuple[Call, ...]
    think: str | None = None


def bash(
    cmd: str, out: str, say: str, think: str | None = None, seconds: float | None = None
) -> Step:
    return Step(say, (Call("bash", {"command": cmd}, out, seconds=seconds),), think)


def read(path: str, out: str, say: str, think: str | None = None) -> Step:
    return Step(say, (Call("read_file", {"path": path}, out),), think)


def edit(path: str, old: str, new: str, say: str, think: str | None = None) -> Step:
    out = f"Created {path}." if old == "" else f"Edited {path}: 1 replacement."
    return Step(say, (Call("edit_file", {"path": path, "old": old, "new": new}, out),), think)


def missing(path: str, old: str, new: str, say: str) -> Step:
    out = f"Error: {path}: no such file or directory"
    return Step(say, (Call("edit_file", {"path": path, "old": old, "new": new}, out, error=True),))


@dataclass(frozen=True)
class Task:
    name: str
    instruction: str
    explore: tuple[Step, Step, Step]
    fix: tuple[Step, ...]
    wrong: tuple[Step, ...]
    miss: Step
    rec: Step
    loop: Step
    passed: str  # run_tests output when the fix is in
    failed: str
    summary: str
    tests: tuple[str, ...] = field(default=("test_task",))


def _pytest(tests: tuple[str, ...], failing: str | None, why: str = "") -> str:
    lines = [f"tests/test_outputs.py::{t} {'FAILED' if t == failing else 'PASSED'}" for t in tests]
    if failing:
        lines.append(f"E   AssertionError: {why}")
        return "\n".join(lines) + f"\n1 failed, {len(tests) - 1} passed in 0.{len(tests) + 3}1s"
    return "\n".join(lines) + f"\n{len(tests)} passed in 0.{len(tests) + 2}4s"


def task(
    name: str,
    instruction: str,
    *,
    explore: tuple[Step, Step, Step],
    fix: tuple[Step, ...],
    wrong: tuple[Step, ...],
    miss: Step,
    rec: Step,
    loop: Step,
    tests: tuple[str, ...],
    fails: str,
    why: str,
    summary: str,
) -> Task:
    return Task(
        name,
        instruction,
        explore,
        fix,
        wrong,
        miss,
        rec,
        loop,
        _pytest(tests, None),
        _pytest(tests, fails, why),
        summary,
        tests,
    )


CONFLICT = (
    "<<<<<<< HEAD\n    def get(self, url, timeout=10):\n        return self._session.get(url, timeout=timeout)\n"
    "=======\n    def get(self, url):\n        for attempt in range(3):\n            try:\n"
    "                return self._session.get(url)\n            except ConnectionError:\n"
    "                time.sleep(2 ** attempt)\n        raise ConnectionError(url)\n>>>>>>> feature/retry\n"
)
MERGED = (
    "    def get(self, url, timeout=10):\n        for attempt in range(3):\n            try:\n"
    "                return self._session.get(url, timeout=timeout)\n            except ConnectionError:\n"
    "                time.sleep(2 ** attempt)\n        raise ConnectionError(url)\n"
)
TOP_PATHS = (
    'import sys\n\n\ndef main(path):\n    raise NotImplementedError\n\n\nif __name__ == "__main__":\n'
    "    main(sys.argv[1])\n"
)
LOGROTATE = "/var/log/app/*.log {\n    daily\n    rotate 30\n}\n"
OPENSSL = "openssl req -x509 -newkey rsa:2048 -keyout certs/server.key -out certs/server.crt -days 365 -subj /CN=api.internal"

TASKS: tuple[Task, ...] = (
    task(
        "fix-git-merge-conflict",
        "The repository in /app has an unfinished merge of `feature/retry` into `main`. Resolve "
        "the conflict in `src/client.py`, keeping the retry loop from the feature branch and "
        "the `timeout` argument from main, then commit the merge.",
        explore=(
            bash(
                "git status --short",
                "UU src/client.py\nM  src/__init__.py",
                "Let me see the state of the merge.",
                think="A merge is in progress; find the conflicted files first.",
            ),
            read(
                "src/client.py",
                "import time\n\n\nclass Client:\n" + CONFLICT,
                "Reading the conflicted file.",
            ),
            bash(
                "git log --oneline -2 feature/retry",
                "9b1e0c2 Retry GET with exponential backoff\n41d7a3f Add Client.get",
                "Checking what the feature branch changed.",
            ),
        ),
        fix=(
            edit(
                "src/client.py",
                CONFLICT,
                MERGED,
                "Merging both sides: retry loop with the timeout.",
            ),
            bash(
                "git add src/client.py && git commit --no-edit",
                "[main 4f2c9e1] Merge branch 'feature/retry'",
                "Committing the merge.",
            ),
        ),
        wrong=(
            edit(
                "src/client.py",
                CONFLICT,
                "    def get(self, url, timeout=10):\n        return self._session.get(url, timeout=timeout)\n",
                "Keeping main's version to resolve the conflict.",
            ),
        ),
        miss=missing("client.py", CONFLICT, MERGED, "Editing the client to resolve the conflict."),
        rec=bash(
            "git diff --name-only --diff-filter=U",
            "src/client.py",
            "The file is elsewhere; listing the unmerged paths.",
        ),
        loop=bash(
            "git merge --continue",
            "error: Committing is not possible because you have unmerged files.\n"
            "fatal: Exiting because of an unresolved conflict.",
            "Continuing the merge.",
        ),
        tests=("test_merge_committed", "test_retry_with_timeout"),
        fails="test_retry_with_timeout",
        why="retry loop missing from Client.get",
        summary="Resolved the conflict in src/client.py and committed the merge.",
    ),
    task(
        "parse-nginx-logs",
        "Write `/app/top_paths.py` so that `python top_paths.py access.log` prints the 5 most "
        "requested paths, one per line as `<count> <path>`, most requested first. "
        "`access.log` is in nginx's combined format.",
        explore=(
            bash("ls", "access.log\ntests\ntop_paths.py", "Looking at the files."),
            read("top_paths.py", TOP_PATHS, "Reading the stub."),
            bash(
                "head -n 2 access.log",
                '10.0.0.7 - - [12/Apr/2026:10:01:02 +0000] "GET /api/items HTTP/1.1" 200 512 "-" "curl/8.5"\n'
                '10.0.0.9 - - [12/Apr/2026:10:01:03 +0000] "POST /api/login HTTP/1.1" 302 0 "-" "Mozilla/5.0"',
                "Checking the log format.",
                think="The request line is the first quoted field; the path is its second word.",
            ),
        ),
        fix=(
            edit(
                "top_paths.py",
                "    raise NotImplementedError\n",
                "    from collections import Counter\n    with open(path) as f:\n"
                "        paths = Counter(line.split('\"')[1].split()[1] for line in f if '\"' in line)\n"
                "    for p, n in paths.most_common(5):\n        print(n, p)\n",
                "Counting the path of each request line.",
            ),
        ),
        wrong=(
            edit(
                "top_paths.py",
                "    raise NotImplementedError\n",
                "    from collections import Counter\n    with open(path) as f:\n"
                "        paths = Counter(line.split()[5] for line in f)\n"
                "    for p, n in paths.most_common(5):\n        print(n, p)\n",
                "Counting the sixth field of each line.",
            ),
        ),
        miss=missing(
            "src/top_paths.py",
            "    raise NotImplementedError\n",
            "    pass\n",
            "Editing the script.",
        ),
        rec=bash(
            "find / -name top_paths.py -not -path '/proc/*' 2>/dev/null",
            "/app/top_paths.py",
            "Finding the script.",
        ),
        loop=bash(
            "python top_paths.py access.log",
            'Traceback (most recent call last):\n  File "/app/top_paths.py", line 5, in main\n'
            "    raise NotImplementedError\nNotImplementedError",
            "Running the script to see its output.",
        ),
        tests=("test_top5_counts", "test_order"),
        fails="test_top5_counts",
        why='expected "412 /api/items", got "412 "GET"',
        summary="Implemented top_paths.py with a Counter over request paths.",
    ),
    task(
        "sqlite-index-migration",
        "Queries on `orders` in `/app/shop.db` are slow. Add the migration "
        "`migrations/003_orders_customer_idx.sql` creating an index on "
        "`orders(customer_id, created_at)` and apply it with `python migrate.py`.",
        explore=(
            bash(
                "ls migrations && sqlite3 shop.db '.indexes orders'",
                "001_init.sql\n002_add_status.sql\nsqlite_autoindex_orders_1",
                "Listing migrations and existing indexes.",
            ),
            read(
                "migrate.py",
                "import sqlite3, pathlib\n\ndb = sqlite3.connect('shop.db')\nfor f in sorted(pathlib.Path('migrations').glob('*.sql')):\n"
                "    db.executescript(f.read_text())\n    print('applied', f.name)\n",
                "Reading the migration runner.",
            ),
            bash(
                "sqlite3 shop.db 'EXPLAIN QUERY PLAN SELECT * FROM orders WHERE customer_id=7 ORDER BY created_at'",
                "QUERY PLAN\n|--SCAN orders\n`--USE TEMP B-TREE FOR ORDER BY",
                "Checking the current plan.",
                think="A full scan plus a sort: a composite index fixes both.",
            ),
        ),
        fix=(
            edit(
                "migrations/003_orders_customer_idx.sql",
                "",
                "CREATE INDEX IF NOT EXISTS orders_customer_idx ON orders(customer_id, created_at);\n",
                "Writing the migration.",
            ),
            bash(
                "python migrate.py",
                "applied 001_init.sql\napplied 002_add_status.sql\napplied 003_orders_customer_idx.sql",
                "Applying it.",
            ),
        ),
        wrong=(
            edit(
                "migrations/003_orders_customer_idx.sql",
                "",
                "CREATE INDEX orders_customer_idx ON order(customer_id, created_at);\n",
                "Writing the migration.",
            ),
        ),
        miss=missing(
            "migrate/003_orders_customer_idx.sql",
            "--",
            "CREATE INDEX orders_customer_idx ON orders(customer_id, created_at);\n",
            "Adding the migration.",
        ),
        rec=bash("ls -d */", "migrations/\ntests/", "Checking the folder name."),
        loop=bash(
            "python migrate.py",
            'applied 001_init.sql\napplied 002_add_status.sql\nsqlite3.OperationalError: near "order": syntax error',
            "Applying the migrations.",
        ),
        tests=("test_index_exists", "test_plan_uses_index"),
        fails="test_index_exists",
        why="no index on orders(customer_id, created_at)",
        summary="Added migration 003 with an index on orders(customer_id, created_at) and applied it.",
    ),
    task(
        "regex-email-validator",
        "Fix `EMAIL_RE` in `/app/validate.py` so that `is_valid('a.b+tag@example.co.uk')` is true "
        "and addresses with two consecutive dots are rejected.",
        explore=(
            read(
                "validate.py",
                "import re\n\nEMAIL_RE = re.compile(r'^[a-z]+@[a-z]+\\.[a-z]+$')\n\n\ndef is_valid(s):\n"
                "    return bool(EMAIL_RE.match(s))\n",
                "Reading the validator.",
                think="The local part allows neither dots nor plus; the domain allows one label.",
            ),
            bash(
                "python -c \"from validate import is_valid; print(is_valid('a.b+tag@example.co.uk'))\"",
                "False",
                "Reproducing the failure.",
            ),
            bash("ls tests", "test_outputs.py", "Looking for the tests."),
        ),
        fix=(
            edit(
                "validate.py",
                "r'^[a-z]+@[a-z]+\\.[a-z]+$'",
                "r'^(?!.*\\.\\.)[a-z0-9._%+-]+@(?:[a-z0-9-]+\\.)+[a-z]{2,}$', re.I",
                "Allowing dots and plus, several domain labels, and no double dots.",
            ),
        ),
        wrong=(
            edit(
                "validate.py",
                "r'^[a-z]+@[a-z]+\\.[a-z]+$'",
                "r'^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$', re.I",
                "Widening the character classes.",
            ),
        ),
        miss=missing("src/validate.py", "EMAIL_RE", "EMAIL_RE", "Editing the regex."),
        rec=bash("ls *.py", "validate.py", "Finding the module."),
        loop=bash("python -m pytest -q", "2 failed in 0.12s", "Running pytest."),
        tests=("test_plus_and_subdomains", "test_double_dot_rejected"),
        fails="test_double_dot_rejected",
        why="is_valid('a..b@example.com') returned True",
        summary="Rewrote EMAIL_RE: dots and plus in the local part, multi-label domains, no '..'.",
    ),
    task(
        "python-package-build",
        "`pip install .` fails in /app. Make the package `acme_utils` build and install so that "
        "`python -c 'import acme_utils; print(acme_utils.__version__)'` prints 0.3.1.",
        explore=(
            bash(
                "pip install . 2>&1 | tail -n 3",
                "error: Multiple top-level packages discovered in a flat-layout: ['src', 'tests'].\n"
                "note: This error originates from a subprocess, and is likely not a problem with pip.",
                "Reproducing the build error.",
            ),
            bash(
                "ls -R src | head",
                "src:\nacme_utils\n\nsrc/acme_utils:\n__init__.py\ntext.py",
                "Looking at the layout.",
            ),
            read(
                "pyproject.toml",
                '[project]\nname = "acme-utils"\nversion = "0.3.1"\n\n[build-system]\n'
                'requires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n',
                "Reading the build config.",
                think="A src layout without package discovery settings; setuptools needs to be told.",
            ),
        ),
        fix=(
            edit(
                "pyproject.toml",
                "[build-system]\n",
                '[tool.setuptools.packages.find]\nwhere = ["src"]\n\n[build-system]\n',
                "Pointing package discovery at src/.",
            ),
            bash(
                "pip install . 2>&1 | tail -n 1",
                "Successfully installed acme-utils-0.3.1",
                "Installing.",
            ),
        ),
        wrong=(
            edit(
                "pyproject.toml",
                "[build-system]\n",
                '[tool.setuptools]\npackages = ["acme_utils"]\n\n[build-system]\n',
                "Listing the package explicitly.",
            ),
        ),
        miss=missing(
            "setup.py",
            "packages=find_packages()",
            "packages=find_packages('src'), package_dir={'': 'src'}",
            "Fixing package discovery in setup.py.",
        ),
        rec=bash(
            "ls",
            "README.md\npyproject.toml\nsrc\ntests",
            "There is no setup.py; listing the project.",
        ),
        loop=bash(
            "pip install .",
            "error: Multiple top-level packages discovered in a flat-layout: ['src', 'tests'].",
            "Installing.",
        ),
        tests=("test_import_version",),
        fails="test_import_version",
        why="ModuleNotFoundError: No module named 'acme_utils'",
        summary="Configured setuptools package discovery for the src layout; the package installs.",
    ),
    task(
        "cron-log-rotate",
        "Configure logrotate for `/var/log/app/*.log`: rotate weekly, keep 4 rotations, "
        "compress, and do not fail when the logs are missing. The config is "
        "`/etc/logrotate.d/app`.",
        explore=(
            bash("ls /etc/logrotate.d", "app\napt\ndpkg", "Listing logrotate configs."),
            read("/etc/logrotate.d/app", LOGROTATE, "Reading the current config."),
            bash(
                "logrotate -d /etc/logrotate.d/app 2>&1 | tail -n 2",
                "considering log /var/log/app/*.log\nerror: stat of /var/log/app/*.log failed: No such file or directory",
                "Dry-running it first.",
                think="The dry run shows the logs can be missing: missingok is needed.",
            ),
        ),
        fix=(
            edit(
                "/etc/logrotate.d/app",
                "    daily\n    rotate 30\n",
                "    weekly\n    rotate 4\n    compress\n    missingok\n",
                "Weekly, 4 rotations, compressed, tolerant of missing logs.",
            ),
        ),
        wrong=(
            edit(
                "/etc/logrotate.d/app",
                "    daily\n    rotate 30\n",
                "    weekly\n    rotate 4\n    compress\n",
                "Setting weekly rotation, 4 copies, compression.",
            ),
        ),
        miss=missing(
            "/etc/logrotate.d/app.conf", "daily", "weekly", "Editing the logrotate config."
        ),
        rec=bash("ls /etc/logrotate.d | grep app", "app", "The file has no extension."),
        loop=bash(
            "logrotate -d /etc/logrotate.d/app",
            "error: stat of /var/log/app/*.log failed",
            "Dry run.",
        ),
        tests=("test_weekly_rotate_4", "test_compress", "test_missing_logs_ok"),
        fails="test_missing_logs_ok",
        why="logrotate exited 1: stat of /var/log/app/*.log failed",
        summary="Configured /etc/logrotate.d/app: weekly, rotate 4, compress.",
    ),
    task(
        "csv-dedupe-report",
        "`/app/report.py` must write `dedup.csv`: the rows of `customers.csv` without "
        "duplicates, two rows being duplicates when their emails match case-insensitively; "
        "keep the first.",
        explore=(
            bash("ls", "customers.csv\nreport.py\ntests", "Looking at the files."),
            read(
                "report.py",
                "import csv\n\nseen = set()\nwith open('customers.csv') as f, open('dedup.csv', 'w', newline='') as out:\n"
                "    rows = csv.DictReader(f)\n    w = csv.DictWriter(out, rows.fieldnames)\n    w.writeheader()\n"
                "    for row in rows:\n        key = row['name']\n        if key not in seen:\n"
                "            seen.add(key)\n            w.writerow(row)\n",
                "Reading the script.",
            ),
            bash(
                "head -n 4 customers.csv",
                "name,email\nAda Lovelace,ada@example.com\nA. Lovelace,ADA@example.com\nAlan Turing,alan@example.com",
                "Looking at the data.",
                think="Duplicates differ in name and in email case: the key must be the lowercased email.",
            ),
        ),
        fix=(
            edit(
                "report.py",
                "key = row['name']",
                "key = row['email'].strip().lower()",
                "Keying on the lowercased email.",
            ),
            bash("python report.py && wc -l dedup.csv", "1843 dedup.csv", "Writing the report."),
        ),
        wrong=(
            edit("report.py", "key = row['name']", "key = row['email']", "Keying on the email."),
            bash("python report.py && wc -l dedup.csv", "1921 dedup.csv", "Writing the report."),
        ),
        miss=missing(
            "src/report.py",
            "key = row['name']",
            "key = row['email'].lower()",
            "Changing the key to the email.",
        ),
        rec=bash("ls *.py", "report.py", "Finding the script."),
        loop=bash("python report.py", "", "Running the script."),
        tests=("test_no_duplicate_emails", "test_first_row_kept"),
        fails="test_no_duplicate_emails",
        why="78 emails appear more than once (case-insensitive)",
        summary="report.py now dedupes on the lowercased email and keeps the first row.",
    ),
    task(
        "openssl-selfsigned-cert",
        "Create a self-signed certificate for `api.internal` valid for 365 days: key at "
        "`/app/certs/server.key` (RSA 2048), certificate at `/app/certs/server.crt`, with "
        "`api.internal` in subjectAltName.",
        explore=(
            bash(
                "ls -la",
                "total 8\ndrwxr-xr-x 2 root root 4096 .\ndrwxr-xr-x 1 root root 4096 ..\n-rw-r--r-- 1 root root  210 tests",
                "Looking at /app.",
            ),
            bash("openssl version", "OpenSSL 3.0.13 30 Jan 2024", "Checking the OpenSSL version."),
            bash("mkdir -p certs && ls", "certs\ntests", "Creating the certs folder."),
        ),
        fix=(
            bash(
                OPENSSL.replace("openssl req", "mkdir -p certs && openssl req")
                + " -nodes -addext subjectAltName=DNS:api.internal",
                "-----",
                "Generating key and certificate with the SAN.",
            ),
        ),
        wrong=(
            bash(
                OPENSSL.replace("openssl req", "mkdir -p certs && openssl req") + " -nodes",
                "-----",
                "Generating an unencrypted key and the certificate.",
            ),
        ),
        miss=missing(
            "certs/openssl.cnf",
            "[req]",
            "[req]\nreq_extensions = san",
            "Adding a SAN section to the config.",
        ),
        rec=bash("ls certs", "server.crt\nserver.key", "Listing the certs folder."),
        loop=bash(
            OPENSSL,
            "Enter PEM pass phrase:\n[no output for 30 s: command interrupted]",
            "Generating the key and certificate.",
            seconds=30.0,
        ),
        tests=("test_key_rsa2048", "test_cert_valid_365d", "test_san_api_internal"),
        fails="test_san_api_internal",
        why="subjectAltName missing from certs/server.crt",
        summary="Created certs/server.key and certs/server.crt for api.internal.",
    ),
    task(
        "json-schema-fix",
        "`/app/config.json` fails validation against `schema.json`. Fix `config.json` (not the "
        "schema) so that `python check.py` prints OK.",
        explore=(
            bash(
                "python check.py",
                "ValidationError: 'port' is a required property (at $.server)",
                "Running the check.",
            ),
            read(
                "config.json",
                '{\n  "server": {"host": "0.0.0.0", "Port": "8080"},\n  "workers": 4\n}\n',
                "Reading the config.",
                think="The key is capitalised and the value is a string; the schema wants an integer port.",
            ),
            bash(
                "grep -A3 '\"port\"' schema.json",
                '"port": {"type": "integer", "minimum": 1}',
                "Checking the schema's port.",
            ),
        ),
        fix=(
            edit(
                "config.json",
                '"Port": "8080"',
                '"port": 8080',
                "Renaming the key and making it an integer.",
            ),
            bash("python check.py", "OK", "Checking again."),
        ),
        wrong=(edit("config.json", '"Port": "8080"', '"port": "8080"', "Renaming the key."),),
        miss=missing("conf/config.json", '"Port"', '"port"', "Fixing the key."),
        rec=bash("ls *.json", "config.json\nschema.json", "Finding the config."),
        loop=bash(
            "python check.py", "ValidationError: '8080' is not of type 'integer'", "Checking."
        ),
        tests=("test_check_ok",),
        fails="test_check_ok",
        why="check.py printed ValidationError",
        summary="config.json: server.port is now the integer 8080.",
    ),
    task(
        "make-static-binary",
        "Build `/app/hello` from `hello.c` as a statically linked binary "
        "(`file hello` must say `statically linked`).",
        explore=(
            bash(
                "ls && cat Makefile",
                "Makefile\nhello.c\ntests\nhello: hello.c\n\tcc -O2 -o hello hello.c",
                "Looking at the build.",
            ),
            bash(
                "ldd --version | head -n 1", "ldd (Debian GLIBC 2.36-9) 2.36", "Checking the libc."
            ),
            bash("dpkg -l | grep -c musl", "0", "Looking for musl."),
        ),
        fix=(
            edit(
                "Makefile",
                "cc -O2 -o hello hello.c",
                "cc -O2 -static -o hello hello.c",
                "Linking statically.",
            ),
            bash(
                "make -B && file hello",
                "cc -O2 -static -o hello hello.c\nhello: ELF 64-bit LSB executable, x86-64, statically linked",
                "Building.",
            ),
        ),
        wrong=(
            edit(
                "Makefile",
                "cc -O2 -o hello hello.c",
                "cc -O2 -static-libgcc -o hello hello.c",
                "Linking libgcc statically.",
            ),
            bash(
                "make && file hello",
                "make: 'hello' is up to date.\nhello: ELF 64-bit LSB pie executable, x86-64, dynamically linked",
                "Building.",
            ),
        ),
        miss=missing("makefile", "cc -O2", "cc -O2 -static", "Adding -static to the makefile."),
        rec=bash("ls", "Makefile\nhello\nhello.c\ntests", "The Makefile is capitalised."),
        loop=bash("make", "make: 'hello' is up to date.", "Rebuilding."),
        tests=("test_hello_runs", "test_statically_linked"),
        fails="test_statically_linked",
        why="file hello: dynamically linked",
        summary="hello is now linked statically.",
    ),
    task(
        "port-flask-to-fastapi",
        "Port `/app/service.py` from Flask to FastAPI, keeping `GET /health` and `POST /items`; "
        "`uvicorn service:app` must serve them.",
        explore=(
            bash("ls", "requirements.txt\nservice.py\ntests", "Looking at the project."),
            Step(
                "Reading the service and its requirements.",
                (
                    Call(
                        "read_file",
                        {"path": "service.py"},
                        "from flask import Flask, request, jsonify\n\napp = Flask(__name__)\nITEMS = []\n\n"
                        "@app.get('/health')\ndef health():\n    return jsonify(status='ok')\n\n"
                        "@app.post('/items')\ndef add():\n    ITEMS.append(request.json)\n    return jsonify(n=len(ITEMS)), 201\n",
                    ),
                    Call(
                        "read_file",
                        {"path": "requirements.txt"},
                        "flask==3.0.3\nfastapi==0.115.0\nuvicorn==0.30.6\n",
                    ),
                ),
                think="Two routes; POST returns 201 with the count.",
            ),
            bash(
                "python -c 'import fastapi, uvicorn; print(fastapi.__version__)'",
                "0.115.0",
                "FastAPI is installed.",
            ),
        ),
        fix=(
            edit(
                "service.py",
                "from flask import Flask, request, jsonify\n\napp = Flask(__name__)\n",
                "from fastapi import FastAPI\n\napp = FastAPI()\n",
                "Switching the app object to FastAPI.",
            ),
            edit(
                "service.py",
                "@app.get('/health')\ndef health():\n    return jsonify(status='ok')\n\n"
                "@app.post('/items')\ndef add():\n    ITEMS.append(request.json)\n    return jsonify(n=len(ITEMS)), 201\n",
                "@app.get('/health')\ndef health():\n    return {'status': 'ok'}\n\n"
                "@app.post('/items', status_code=201)\ndef add(item: dict):\n    ITEMS.append(item)\n    return {'n': len(ITEMS)}\n",
                "Porting both routes.",
            ),
        ),
        wrong=(
            edit(
                "service.py",
                "from flask import Flask, request, jsonify\n\napp = Flask(__name__)\n",
                "from fastapi import FastAPI\nfrom flask import request, jsonify\n\napp = FastAPI()\n",
                "Switching the app object to FastAPI.",
            ),
        ),
        miss=missing("app/service.py", "from flask", "from fastapi", "Porting the imports."),
        rec=bash("pwd && ls *.py", "/app\nservice.py", "The service is at the top level."),
        loop=bash(
            "timeout 5 uvicorn service:app --port 8000",
            'ERROR:    Error loading ASGI app. Attribute "app" is a Flask app, not an ASGI application.',
            "Starting the server.",
        ),
        tests=("test_health", "test_post_items_201"),
        fails="test_post_items_201",
        why="POST /items returned 500: RuntimeError: Working outside of request context",
        summary="service.py is a FastAPI app with GET /health and POST /items (201).",
    ),
    task(
        "count-dataset-tokens",
        "Count the whitespace-separated tokens over all `*.txt` files under `/app/data` and "
        "write the total to `/app/answer.txt`.",
        explore=(
            bash(
                "ls data | head -n 3; ls data | wc -l",
                "part-000.txt\npart-001.txt\npart-002.txt\n24",
                "Looking at the data.",
            ),
            bash("cat data/*.txt | wc -w", "48213", "Counting the words."),
            bash(
                "file data/part-000.txt",
                "data/part-000.txt: UTF-8 Unicode text",
                "Checking the encoding.",
            ),
        ),
        fix=(
            bash(
                "cat data/*.txt | wc -w > answer.txt && cat answer.txt",
                "48213",
                "Writing the total.",
            ),
        ),
        wrong=(
            bash(
                "cat data/*.txt | wc -l > answer.txt && cat answer.txt",
                "2113",
                "Writing the count.",
            ),
        ),
        miss=missing("answer.txt", "TODO", "48213", "Writing the answer."),
        rec=bash(
            "test -e answer.txt || echo missing", "missing", "The answer file does not exist yet."
        ),
        loop=bash("cat data/*.txt | wc -w", "48213", "Counting again."),
        tests=("test_answer",),
        fails="test_answer",
        why="answer.txt holds 2113, expected 48213",
        summary="Wrote 48213 to answer.txt.",
    ),
)

# -- what each attempt does -----------------------------------------------------------------
# (recipe, outcome) for attempts 1..3: outcome 1 / 0 (reward), "N" (no reward: the verifier
# failed) or "T" (reward 0 after AgentTimeoutError).
Plan = tuple[tuple[str, int | str], tuple[str, int | str], tuple[str, int | str]]
PLANS: dict[str, dict[str, Plan]] = {
    "fix-git-merge-conflict": {
        "base": (("E0 E1 F TP S", 1), ("E0 E1 M R F TP S", 1), ("E0 E1 E2 F TP S", 1)),
        "sft-step2000": (("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1)),
    },
    "parse-nginx-logs": {
        "base": (("E0 E1 L5 W TF S", 0), ("E0 E1 L6 W TF L3 S", 0), ("E0 E1 E2 F TP S", 1)),
        "sft-step2000": (("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1)),
    },
    "sqlite-index-migration": {
        "base": (("E0 E1 W L5 TF S", 0), ("E0 E1 E2 W TF S", 0), ("E0 E1 M", 0)),
        "sft-step2000": (("E0 E1 E2 F TP S", 1), ("E0 E1 M R F TP S", 1), ("E0 E1 W TF S", 0)),
    },
    "regex-email-validator": {
        "base": (("E0 E1 F TP S", 1), ("E0 E1 E2 F TP S", 1), ("E0 W TF S", 0)),
        "sft-step2000": (("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1)),
    },
    "python-package-build": {
        "base": (("E0 E1 M", 0), ("E0 E1 E2 M", 0), ("E0 E1 M R W TF S", 0)),
        "sft-step2000": (("E0 E1 M R W TF S", 0), ("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1)),
    },
    "cron-log-rotate": {
        "base": (("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1), ("E0 E1 E2 M R F TP S", 1)),
        "sft-step2000": (("E0 E1 W S", 0), ("E0 E1 W S", 0), ("E0 E1 W TF S", 0)),
    },
    "csv-dedupe-report": {
        "base": (("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1), ("E0 E1 W TF S", 0)),
        "sft-step2000": (("E0 E1 E2 M", 0), ("E0 E1 E2 W TF S", 0), ("E0 E1 E2 F TP S", 1)),
    },
    "openssl-selfsigned-cert": {
        "base": (("E0 L6 W TF S", 0), ("E0 E1 L8 W TF S", 0), ("E0 E1 W TF L22", "T")),
        "sft-step2000": (("E0 E1 L4 W TF S", 0), ("E0 E1 W TF S", 0), ("E0 E1 E2 W TF S", 0)),
    },
    "json-schema-fix": {
        "base": (("E0 E1 F TP S", 1), ("E0 E1 F TP S", "N"), ("E0 E1 E2 F TP S", 1)),
        "sft-step2000": (("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1)),
    },
    "make-static-binary": {
        "base": (("E0 E1 E2 W TF L3 S", 0), ("E0 M R W TF S", 0), ("E0 E1 W TF S", 0)),
        "sft-step2000": (("E0 E1 E2 W TF S", 0), ("E0 E1 W TF S", "N"), ("E0 E1 E2 W TF S", 0)),
    },
    "port-flask-to-fastapi": {
        "base": (("E0 E1 L5 W TF S", 0), ("E0 E1 E2 F TP S", 1), ("E0 E1 M R W TF S", 0)),
        "sft-step2000": (("E0 E1 E2 F TP S", 1), ("E0 E1 E2 F TP S", 1), ("E0 E1 E2 W TF S", 0)),
    },
    "count-dataset-tokens": {
        "base": (("E0 E1 F TP S", 1), ("E0 E1 F TP S", 1), ("E0 E1 M R F TP S", 1)),
        "sft-step2000": (("E0 F TP S", 1), ("E0 F TP S", 1), ("E0 F TP S", 1)),
    },
}


def agent_steps(t: Task, recipe: str) -> list[Step]:
    """The agent's steps for a recipe (see the module docstring)."""
    out: list[Step] = []
    for token in recipe.split():
        if token in ("E0", "E1", "E2"):
            out.append(t.explore[int(token[1])])
        elif token == "M":
            out.append(t.miss)
        elif token == "R":
            out.append(t.rec)
        elif token == "F":
            out.extend(t.fix)
        elif token == "W":
            out.extend(t.wrong)
        elif token.startswith("L"):
            out.extend([t.loop] * int(token[1:]))
        elif token in ("TP", "TF"):
            text = t.passed if token == "TP" else t.failed
            out.append(Step("Running the tests.", (Call("run_tests", {}, text),)))
        elif token == "S":
            out.append(Step("Done.", (Call("submit", {"summary": t.summary}, None),)))
        else:
            raise ValueError(f"unknown recipe token {token!r}")
    return out


# -- writing ------------------------------------------------------------------------------


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _uuid(*parts: str) -> str:
    h = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _time(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sec(x: float) -> dt.timedelta:
    return dt.timedelta(milliseconds=round(x * 1000))


@dataclass
class Totals:
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    costs: list[float] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return round(math.fsum(self.costs), 8)


def trajectory(
    t: Task, recipe: str, model: str, session: str, t0: dt.datetime, rng: np.random.Generator
) -> tuple[dict[str, Any], Totals, dt.datetime]:
    """One attempt's ATIF document, its usage totals and when the agent stopped."""
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "timestamp": _time(t0), "source": "system", "message": SYSTEM},
        {"step_id": 2, "timestamp": _time(t0), "source": "user", "message": t.instruction},
    ]
    context = SCAFFOLD_TOKENS + _tokens(SYSTEM) + _tokens(t.instruction)
    previous = 0
    totals = Totals()
    now = t0
    for step in agent_steps(t, recipe):
        sid = len(steps) + 1
        calls = [
            {"tool_call_id": f"call_{sid:02d}_{j}", "function_name": c.tool, "arguments": c.args}
            for j, c in enumerate(step.calls, 1)
        ]
        results: list[dict[str, Any]] = []
        for call, c in zip(calls, step.calls, strict=True):
            if c.out is None:
                continue
            result: dict[str, Any] = {"source_call_id": call["tool_call_id"], "content": c.out}
            if c.error:
                result["extra"] = {"is_error": True}
            results.append(result)
        written = step.say + (step.think or "") + json.dumps(calls)
        completion = 8 + _tokens(written)
        cost = round(
            (context - previous) * PRICE_IN + previous * PRICE_CACHED + completion * PRICE_OUT, 8
        )
        now += _sec(0.8 + completion / 60 + float(rng.uniform(0.2, 2.5)))
        doc: dict[str, Any] = {"step_id": sid, "timestamp": _time(now), "source": "agent"}
        doc["message"] = step.say
        if step.think:
            doc["reasoning_content"] = step.think
        doc["tool_calls"] = calls
        if results:
            doc["observation"] = {"results": results}
        doc["metrics"] = {
            "prompt_tokens": context,
            "completion_tokens": completion,
            "cached_tokens": previous,
            "cost_usd": cost,
        }
        steps.append(doc)
        totals.prompt += context
        totals.completion += completion
        totals.cached += previous
        totals.costs.append(cost)
        previous = context
        context += completion + sum(_tokens(r["content"]) + 6 for r in results)
        for c in step.calls:
            if c.seconds is not None:
                now += _sec(c.seconds)
            elif c.tool == "run_tests":
                now += _sec(float(rng.uniform(2.5, 7.0)))
            elif c.tool == "bash":
                now += _sec(float(rng.uniform(0.2, 3.0)))
            else:
                now += _sec(float(rng.uniform(0.02, 0.2)))
    doc = {
        "schema_version": ATIF,
        "session_id": session,
        "agent": {**AGENT, "model_name": model, "tool_definitions": TOOLS},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": totals.prompt,
            "total_completion_tokens": totals.completion,
            "total_cached_tokens": totals.cached,
            "total_cost_usd": totals.cost,
            "total_steps": len(steps),
        },
    }
    return doc, totals, now


def harbor_pass_at_k(n: int, c: int, k: int) -> float:
    """Harbor's per-task pass@k: the unbiased estimator as a float product."""
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


def harbor_eval(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``stats.evals`` entry as Harbor 0.26+ computes it: trials without a reward are
    skipped in ``mean`` and ``pass_at_k`` (k = 2, 4, 8, ... and 5, 10, ... up to the fewest
    rewarded trials of a task), reward and exception lists in finishing order."""
    done = sorted(trials, key=lambda r: (r["finished_at"], r["trial_name"]))
    rewarded = [r for r in done if r["verifier_result"] is not None]
    values = [r["verifier_result"]["rewards"]["reward"] for r in rewarded]
    by_task: dict[str, list[int]] = {}
    for r in rewarded:
        by_task.setdefault(r["task_name"], []).append(
            int(r["verifier_result"]["rewards"]["reward"])
        )
    fewest = min(len(v) for v in by_task.values())
    ks = sorted({2**i for i in range(1, 12) if 2**i <= fewest} | set(range(5, fewest + 1, 5)))
    pass_at_k = {
        str(k): sum(harbor_pass_at_k(len(v), sum(v), k) for v in by_task.values()) / len(by_task)
        for k in ks
    }
    reward_stats: dict[str, list[str]] = {}
    for r in rewarded:
        reward_stats.setdefault(str(float(r["verifier_result"]["rewards"]["reward"])), []).append(
            r["trial_name"]
        )
    exception_stats: dict[str, list[str]] = {}
    for r in done:
        if r["exception_info"]:
            exception_stats.setdefault(r["exception_info"]["exception_type"], []).append(
                r["trial_name"]
            )
    return {
        "n_trials": len(rewarded),
        "n_errors": sum(1 for r in done if r["exception_info"]),
        "metrics": [{"mean": sum(values) / len(values)}],
        "pass_at_k": pass_at_k,
        "reward_stats": {"reward": reward_stats},
        "exception_stats": exception_stats,
    }


def _dump(path: Path, obj: Any, *, indent: int = 4, newline: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=indent) + ("\n" if newline else "")
    path.write_text(text, encoding="utf-8")


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def checksum(t: Task) -> str:
    return hashlib.sha256(f"{t.name}@{DATASET['version']}".encode()).hexdigest()[:16]


ALPHABET = np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))


def write_job(out: Path, job_name: str, rng: np.random.Generator) -> None:
    model, start = JOBS[job_name]
    provider, short = model.split("/", 1)
    job_id = _uuid("job", job_name)
    agent_cfg = {"name": AGENT["name"], "model_name": model}
    folder = out / job_name
    # Harbor dispatches trials in order (attempt-major), CONCURRENCY at a time.
    queue = [(a, t) for a in range(K) for t in TASKS]
    free = [start + _sec(1.0 + i * 0.5) for i in range(CONCURRENCY)]
    last_start = start
    trials: list[dict[str, Any]] = []
    for attempt, t in queue:
        recipe, outcome = PLANS[t.name][job_name][attempt]
        w = min(range(CONCURRENCY), key=lambda i: (free[i], i))
        began = max(free[w], last_start + _sec(0.25))
        last_start = began
        trial_name = f"{t.name[:32]}__{''.join(rng.choice(ALPHABET, 7))}"
        env_done = began + _sec(float(rng.uniform(6, 18)))
        setup_done = env_done + _sec(float(rng.uniform(3, 8)))
        session = _uuid("session", job_name, trial_name)
        doc, totals, agent_end = trajectory(t, recipe, model, session, setup_done, rng)
        exception = None
        if outcome == "T":
            deadline = setup_done + _sec(AGENT_TIMEOUT_S)
            assert agent_end <= deadline, (t.name, agent_end, deadline)
            agent_end = deadline
            exception = (
                "AgentTimeoutError",
                f"Agent execution timed out after {AGENT_TIMEOUT_S} seconds",
                agent_end,
            )
        else:
            agent_end += _sec(float(rng.uniform(0.5, 2.0)))
        verifier_done = agent_end + _sec(float(rng.uniform(8, 25)))
        trial_dir = folder / trial_name
        reward: int | None = None if outcome == "N" else (1 if outcome == 1 else 0)
        if reward is None:
            exception = (
                "RewardFileNotFoundError",
                f"No reward file found at jobs/{job_name}/{trial_name}/verifier/reward.txt or reward.json",
                verifier_done,
            )
            _text(
                trial_dir / "verifier" / "test-stdout.txt",
                "bash: /tests/run-tests.sh: Permission denied\n",
            )
        else:
            _text(trial_dir / "verifier" / "reward.txt", f"{reward}\n")
            _text(
                trial_dir / "verifier" / "test-stdout.txt",
                (t.passed if reward else t.failed) + "\n",
            )
        config = {
            "task": {"path": t.name, "source": DATASET["name"]},
            "trial_name": trial_name,
            "trials_dir": f"jobs/{job_name}",
            "timeout_multiplier": 1.0,
            "agent": {**agent_cfg, "kwargs": {}},
            "environment": {"type": "docker", "delete": True},
            "verifier": {"disable": False},
            "job_id": job_id,
        }
        exception_info = None
        if exception is not None:
            kind, message, when = exception
            traceback = f"Traceback (most recent call last):\n  ...\n{kind}: {message}\n"
            exception_info = {
                "exception_type": kind,
                "exception_message": message,
                "exception_traceback": traceback,
                "occurred_at": _time(when),
            }
            _text(trial_dir / "exception.txt", traceback)
        result = {
            "id": _uuid("trial", job_name, trial_name),
            "task_name": t.name,
            "trial_name": trial_name,
            "trial_uri": f"file:///home/me/jobs/{job_name}/{trial_name}",
            "task_id": {"git_url": TASKS_GIT, "git_commit_id": TASKS_COMMIT, "path": t.name},
            "source": DATASET["name"],
            "task_checksum": checksum(t),
            "config": config,
            "agent_info": {
                "name": AGENT["name"],
                "version": AGENT["version"],
                "model_info": {"name": short, "provider": provider},
            },
            "agent_result": {
                "n_input_tokens": totals.prompt,
                "n_cache_tokens": totals.cached,
                "n_output_tokens": totals.completion,
                "cost_usd": totals.cost,
                "rollout_details": None,
                "metadata": None,
            },
            "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
            "verifier_environment_mode": None,
            "exception_info": exception_info,
            "started_at": _time(began),
            "finished_at": _time(verifier_done),
            "environment_setup": {"started_at": _time(began), "finished_at": _time(env_done)},
            "agent_setup": {"started_at": _time(env_done), "finished_at": _time(setup_done)},
            "agent_execution": {"started_at": _time(setup_done), "finished_at": _time(agent_end)},
            "verifier": {"started_at": _time(agent_end), "finished_at": _time(verifier_done)},
            "step_results": None,
        }
        _dump(trial_dir / "config.json", config)
        _dump(trial_dir / "result.json", result)
        _dump(trial_dir / "agent" / "trajectory.json", doc, indent=2, newline=True)
        trials.append(result)
        free[w] = verifier_done + _sec(1.0)

    finished = max(r["finished_at"] for r in trials)
    key = f"{AGENT['name']}__{short}__{DATASET['name']}"
    errored = sum(1 for r in trials if r["exception_info"])
    _dump(
        folder / "config.json",
        {
            "job_name": job_name,
            "n_attempts": K,
            "n_concurrent_trials": CONCURRENCY,
            "agents": [agent_cfg],
            "datasets": [DATASET],
        },
    )
    _dump(
        folder / "lock.json",
        {
            "schema_version": 3,
            "created_at": _time(start),
            "harbor": {"version": HARBOR_VERSION, "git_commit_hash": None, "is_editable": False},
            "n_concurrent_trials": CONCURRENCY,
            "retry": {"max_retries": 0},
            "trials": [],
        },
    )
    _dump(
        folder / "result.json",
        {
            "id": job_id,
            "started_at": _time(start),
            "updated_at": finished,
            "finished_at": finished,
            "n_total_trials": len(trials),
            "stats": {
                "n_completed_trials": len(trials),
                "n_errored_trials": errored,
                "n_running_trials": 0,
                "n_pending_trials": 0,
                "n_cancelled_trials": 0,
                "n_retries": 0,
                "evals": {key: harbor_eval(trials)},
                "n_input_tokens": sum(r["agent_result"]["n_input_tokens"] for r in trials),
                "n_cache_tokens": sum(r["agent_result"]["n_cache_tokens"] for r in trials),
                "n_output_tokens": sum(r["agent_result"]["n_output_tokens"] for r in trials),
                "cost_usd": round(math.fsum(r["agent_result"]["cost_usd"] for r in trials), 6),
            },
        },
    )


def generate(out: Path) -> list[Path]:
    """Write both job folders into ``out`` (replacing earlier copies); return their paths."""
    out = Path(out)
    rng = np.random.default_rng(SEED)
    written = []
    for job_name in JOBS:
        folder = out / job_name
        if folder.exists():
            shutil.rmtree(folder)
        write_job(out, job_name, rng)
        written.append(folder)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for path in generate(target):
        print(path)
