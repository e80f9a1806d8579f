"""Which files of an lm-evaluation-harness output folder are one run.

lm-eval's ``EvaluationTracker`` (``lm_eval/loggers/evaluation_tracker.py``) names all the
files of a run by one ``date_id`` (``datetime.now().isoformat().replace(":", "-")``, which
holds no ``_``): ``<output_path>/<model_name_sanitized>/results_<date_id>.json`` and, with
``--log_samples``, ``samples_<task>_<date_id>.jsonl`` per task in the same folder
(``--output_path x.json``: ``x_<date_id>.json``, the samples beside it). Runs written into
one output path (a rerun, several checkpoints of one model name) sit side by side; a run's
files are those with its ``date_id``, the text after the name's last ``_`` (lm-eval's own
``get_file_datetime``).

Examples
--------
>>> run_stamp(Path("results_2026-12-01T12-08-14.897201.json"))
'2026-12-01T12-08-14.897201'
>>> run_stamp(Path("samples_arc_easy_2026-12-01T12-08-14.897201.jsonl"))
'2026-12-01T12-08-14.897201'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._errors import LoadError

__all__ = [
    "has_samples",
    "orphan_samples",
    "results_path",
    "run_files",
    "run_stamp",
    "samples_path",
    "stray_samples",
]


def run_stamp(path: Path) -> str:
    """The run's ``date_id`` in a results or samples file name."""
    return path.stem.rsplit("_", 1)[-1]


def run_files(folder: Path) -> list[Path]:
    """The results files of the runs in ``folder`` or, when it holds none, in the folders
    one level below it (``<output_path>/<model>/``), in name order."""
    return sorted(folder.glob("results_*.json")) or sorted(folder.glob("*/results_*.json"))


def _shown(paths: list[Path], root: Path) -> str:
    names = [str(p.relative_to(root)) for p in paths[:5]]
    return ", ".join(names) + (f", ... ({len(paths)} in all)" if len(paths) > 5 else "")


def results_path(source: str | Path) -> Path:
    """The ``results_*.json`` to load: ``source`` itself, or the one run in the folder
    ``source`` or in one folder below it (several runs: load each with ``ws.load_all``)."""
    path = Path(source)
    if not path.is_dir():
        if not path.is_file():
            raise LoadError(path, None, "file not found: expected an lm-eval results JSON")
        return path
    found = run_files(path)
    if not found:
        raise LoadError(
            path,
            None,
            "no results_*.json here: lm-eval writes <output_path>/<model>/results_<time>.json",
        )
    if len(found) > 1:
        raise LoadError(
            path,
            None,
            f"the folder holds {len(found)} lm-eval runs ({_shown(found, path)}): load them "
            "with ws.load_all(path), one job each, or pass one results_*.json file",
        )
    return found[0]


def samples_path(path: Path, task: str) -> Path:
    """Where lm-eval wrote the samples of ``task`` for the run of results file ``path``."""
    return path.with_name(f"samples_{task}_{run_stamp(path)}.jsonl")


def has_samples(path: Path, doc: dict[str, Any]) -> bool:
    """Whether any task of the results has a samples file of this run beside them (else
    the file is loaded as results only)."""
    configs = doc.get("configs")
    if not isinstance(configs, dict):
        return False  # lm-eval 0.3: results, versions and config only
    return any(samples_path(path, str(name)).is_file() for name in configs)


def _samples_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("samples_*.jsonl") if p.is_file())


def stray_samples(path: Path, used: set[Path], lenient: bool) -> list[str]:
    """Samples files of this run (``samples_<task>_<time>.jsonl``) whose task the results
    do not configure (not in ``used``): refused (lenient: listed, not loaded), never
    ignored quietly."""
    stamp = run_stamp(path)
    stray = []
    for other in _samples_files(path.parent):
        if run_stamp(other) != stamp or other in used:
            continue
        task = other.name.removeprefix("samples_").removesuffix(f"_{stamp}.jsonl")
        problem = f"task {task!r} is not in the results' configs ({path.name})"
        if not lenient:
            raise LoadError(other, None, f"{problem}: its samples cannot be scored as lm-eval did")
        stray.append(f"{other}: {problem}")
    return stray


def orphan_samples(path: Path, lenient: bool) -> list[str]:
    """Samples files beside the results ``path`` whose time is no run's in the folder (no
    results file of it there, named as ``path`` is): they cannot be scored with their own
    run's results, nor with another's. Refused (lenient: listed, not loaded)."""
    prefix, sep, _ = path.stem.rpartition("_")
    runs = [path] + [
        p
        for p in sorted(path.parent.glob("*.json"))
        if sep and p != path and p.stem.rpartition("_")[0] == prefix
    ]
    stamps = {run_stamp(p) for p in runs}
    orphans = []
    for other in _samples_files(path.parent):
        stamp = run_stamp(other)
        if stamp in stamps:
            continue
        problem = (
            f"its time {stamp!r} matches no results file in the folder "
            f"({_shown(runs, path.parent)})"
        )
        if not lenient:
            raise LoadError(
                other,
                None,
                f"{problem}; lm-eval names a run's results and samples by one time, so these "
                "samples have no results to be scored with",
            )
        orphans.append(f"{other}: {problem}")
    return orphans
