"""Terminal-Bench 1's ``run_metadata.json``: the harness's ``RunMetadata`` written beside
``results.json`` (``Harness._write_run_metadata``), and kept with every run on the public
leaderboard. Spec: ``shared/formats/terminal-bench.md``.

It is the only place the run states its dataset, model, agent and attempts per task; the
fields read here are those of the harness's model (terminal-bench 0.2.x):

===================  =====================================================
``dataset_name``     the registry dataset (``terminal-bench-core``), or null
``dataset_version``  its version (``0.1.1``), or null
``model_name``       the model the agent used (``anthropic/claude-...``), or null
``agent_name``       the agent (``openhands``, ``terminus``)
``n_attempts``       attempts per task
``task_ids``         the tasks the run was asked to do, or null
``run_id``, ``uuid``  the run's name and id
``start_time``,      when the run started and ended
``end_time``
===================  =====================================================

Every other field (``commit_hash``, ``n_concurrent_trials``, ``accuracy``, ...) is kept
verbatim in the job's ``extra["run_metadata"]``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..common.values import INT32_MAX, is_int, parse_time, read_json_file

__all__ = ["FILE_NAME", "RunMetadata", "read_run_metadata"]

#: The file's name, beside ``results.json``.
FILE_NAME = "run_metadata.json"


@dataclass(frozen=True)
class RunMetadata:
    """The fields of a ``run_metadata.json`` the job row uses (None: not stated)."""

    path: Path
    dataset_name: str | None = None
    dataset_version: str | None = None
    model_name: str | None = None
    agent_name: str | None = None
    n_attempts: int | None = None
    task_ids: tuple[str, ...] | None = None
    run_id: str | None = None
    uuid: str | None = None
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    rest: tuple[tuple[str, Any], ...] = ()

    def extra(self) -> dict[str, Any]:
        """Every field but ``task_ids`` (the job's task list holds those), verbatim."""
        return dict(self.rest)


def _text(doc: dict[str, Any], key: str, path: Path) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    raise LoadError(path, f"$.{key}", f"expected a string or null, got {value!r:.60}")


def read_run_metadata(results: Path) -> RunMetadata | None:
    """The ``run_metadata.json`` beside ``results`` (a file named ``results.json``), or
    None when there is none. A renamed ``<run>_results.json`` has no metadata of its own.

    Raises
    ------
    LoadError
        The file is not JSON, or a field read here has the wrong type, naming the key.
    """
    path = results.parent / FILE_NAME
    if results.name != "results.json" or not path.is_file():
        return None
    doc = read_json_file(path, "a Terminal-Bench run_metadata.json")
    if not isinstance(doc, dict):
        raise LoadError(path, "$", f"expected a run_metadata object, got {type(doc).__name__}")
    n = doc.get("n_attempts")
    if n is not None and (not is_int(n) or not 1 <= n <= INT32_MAX):
        raise LoadError(path, "$.n_attempts", f"expected an integer >= 1, got {n!r:.60}")
    tasks = doc.get("task_ids")
    if tasks is not None:
        if not isinstance(tasks, list):
            raise LoadError(path, "$.task_ids", f"expected an array of task ids, got {tasks!r:.60}")
        for i, task in enumerate(tasks):
            if not isinstance(task, str) or not task:
                raise LoadError(
                    path, f"$.task_ids[{i}]", f"expected a non-empty string, got {task!r:.60}"
                )
    times = {
        key: parse_time(doc.get(key), path, f"$.{key}", key) for key in ("start_time", "end_time")
    }
    return RunMetadata(
        path=path,
        dataset_name=_text(doc, "dataset_name", path),
        dataset_version=_text(doc, "dataset_version", path),
        model_name=_text(doc, "model_name", path),
        agent_name=_text(doc, "agent_name", path),
        n_attempts=n,
        task_ids=None if tasks is None else tuple(tasks),
        run_id=_text(doc, "run_id", path),
        uuid=_text(doc, "uuid", path),
        start_time=times["start_time"],
        end_time=times["end_time"],
        rest=tuple((key, value) for key, value in doc.items() if key != "task_ids"),
    )
