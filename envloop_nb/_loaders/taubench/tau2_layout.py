"""Where τ²-bench keeps a run's files, and its leaderboard's ``submission.json``.

**Two forms of one run** (τ²'s ``Results.load`` / ``save`` in
``src/tau2/data_model/simulation.py``):

* ``json``: one ``results.json`` holding ``simulations``;
* ``dir``: ``results.json`` without ``simulations`` (its ``simulation_index`` lists
  them) and one ``simulations/<simulation id>.json`` each. It is the form when the path
  is a folder or when a ``simulations/`` folder sits beside the file; the simulations
  are read in file-name order, and when the index is there the files must be exactly
  its ids (τ²'s own integrity check).

**The leaderboard's** ``submission.json`` (``tau2 submit prepare``; its model is
``src/tau2/scripts/leaderboard/submission.py``): ``results.<domain>.pass_1`` ..
``pass_4`` in percent (``pass^k × 100`` of ``compute_metrics``, null when not computed),
beside the run's ``trajectories/``. Its numbers become the run's source numbers (τ²'s
recipe: pass^k per task over the simulations without an infrastructure error, a pass
is a reward within 1e-6 of 1, the mean over the tasks that ran), read as rounded to the
decimals written. Alone it is no job: it states no task list and no trial count.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..._store.source_numbers import SourceNumber
from ..common.values import is_number, read_json_file

__all__ = [
    "SIMULATIONS_DIR",
    "SUBMISSION_FILE",
    "find_submission",
    "is_submission",
    "is_submission_head",
    "read_simulations",
    "results_path",
    "submission_alone",
    "submission_numbers",
]

#: τ²'s ``SIMULATIONS_DIR``: the dir form's folder of simulation files.
SIMULATIONS_DIR = "simulations"
#: The leaderboard's file name (``SUBMISSION_FILE_NAME``).
SUBMISSION_FILE = "submission.json"
#: The rule shown beside the submission's numbers.
RULE = (
    "τ²-bench's leaderboard: pass^k in percent, infrastructure errors left out, a pass "
    "is a reward within 1e-6 of 1, averaged over the tasks that ran"
)


def results_path(source: Path) -> tuple[Path, Path | None]:
    """``(results.json, simulations folder or None)`` of a run, as τ² resolves them."""
    if source.is_dir():
        return source / "results.json", source / SIMULATIONS_DIR
    sims = source.parent / SIMULATIONS_DIR
    return source, sims if sims.is_dir() else None


def read_simulations(
    path: Path, doc: dict[str, Any], sims_dir: Path | None
) -> list[tuple[Path, str, Any]]:
    """Each simulation as ``(file, place, object)``: from ``$.simulations`` of the json
    form, or from the dir form's ``simulations/*.json`` checked against its index."""
    inline = doc.get("simulations")
    if sims_dir is None:
        if not isinstance(inline, list):
            hint = (
                f": the dir form's {SIMULATIONS_DIR}/ folder is missing beside it"
                if inline is None and "simulation_index" in doc
                else ""
            )
            raise LoadError(
                path, "$.simulations", f"expected an array, got {type(inline).__name__}{hint}"
            )
        return [(path, f"simulations[{i}]", sim) for i, sim in enumerate(inline)]
    if inline:  # τ² would read the folder and drop these: say so rather than choose
        raise LoadError(
            path,
            "$.simulations",
            f"holds simulations, and a {SIMULATIONS_DIR}/ folder sits beside it too: "
            "which are the run's is unclear",
        )
    if not sims_dir.is_dir():
        raise LoadError(sims_dir, None, "no such folder: the dir form keeps its simulations here")
    files = sorted(sims_dir.glob("*.json"))
    index = doc.get("simulation_index")
    if index is not None:
        if not isinstance(index, list) or not all(
            isinstance(e, dict) and isinstance(e.get("id"), str) for e in index
        ):
            raise LoadError(path, "$.simulation_index", "expected an array of {id, ...} objects")
        listed, on_disk = {e["id"] for e in index}, {f.stem for f in files}
        problems = [
            f"{what}: {sorted(ids)[:5]}"
            for what, ids in (
                (f"listed but no file in {SIMULATIONS_DIR}/", listed - on_disk),
                (f"a file in {SIMULATIONS_DIR}/ but not listed", on_disk - listed),
            )
            if ids
        ]
        if problems:
            raise LoadError(path, "$.simulation_index", "; ".join(problems))
    out = []
    for f in files:
        out.append((f, f"{SIMULATIONS_DIR}/{f.name}", read_json_file(f, "a τ²-bench simulation")))
    return out


def is_submission(doc: Any) -> bool:
    """A leaderboard ``submission.json`` (not a results file)?"""
    return (
        isinstance(doc, dict)
        and "info" not in doc
        and isinstance(doc.get("results"), dict)
        and any(key in doc for key in ("model_organization", "submitting_organization"))
    )


def is_submission_head(head: bytes) -> bool:
    """:func:`is_submission` from a file's first bytes."""
    return (
        head.startswith(b"{")
        and b'"info"' not in head
        and any(k in head for k in (b'"model_organization"', b'"submitting_organization"'))
    )


def submission_alone(path: object) -> LoadError:
    """The error for a ``submission.json`` loaded by itself."""
    return LoadError(
        path,
        None,
        "a τ²-bench leaderboard submission.json holds only pass^1..4 per domain, no task "
        "list and no trial count, so it is no job by itself: load the domain's τ²-bench "
        "results (the run's results.json or folder, in the submission's trajectories/; "
        "ws.load_all(<submission folder>) loads them all), and these numbers are checked "
        "against them (job.source_agreement())",
    )


def find_submission(results: Path) -> Path | None:
    """The ``submission.json`` of a run: beside its ``results.json``, or above the
    ``trajectories/`` folder holding it (a file in it, or a dir-form run folder)."""
    here = results.parent
    candidates = [here / SUBMISSION_FILE]
    for up in (here, here.parent):
        if up.name == "trajectories":
            candidates.append(up.parent / SUBMISSION_FILE)
    return next((c for c in candidates if c.is_file()), None)


def _decimals(value: float) -> int:
    """How many decimals ``value`` was written with (Python's shortest round trip)."""
    exponent = Decimal(repr(value)).as_tuple().exponent
    return max(0, -int(exponent)) if isinstance(exponent, int) else 0


def submission_numbers(
    path: Path, *, domain: str | None, results: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The submission's pass^k of ``domain`` as source-number dicts, and what the job's
    ``extra["submission"]`` keeps of it. No numbers when it states none for the domain.

    Raises
    ------
    LoadError
        Not a submission, a domain that is not an object, a pass^k that is not a
        percentage, or a ``trajectory_files`` entry naming ``results`` for another domain.
    """
    doc = read_json_file(path, "a τ²-bench submission.json")
    if not is_submission(doc):
        raise LoadError(path, "$", "expected a τ²-bench leaderboard submission object")
    files = doc.get("trajectory_files") or {}
    if not isinstance(files, dict):
        raise LoadError(path, "$.trajectory_files", f"expected an object, got {files!r:.60}")
    named = [d for d, f in files.items() if isinstance(f, str) and f in (results.name, results.parent.name)]  # fmt: skip
    if domain is not None and named and domain not in named:
        raise LoadError(
            path,
            f"$.trajectory_files.{named[0]}",
            f"names {files[named[0]]!r} for domain {named[0]!r}, but its results are of "
            f"domain {domain!r}",
        )
    keep = {
        "path": str(path),
        **{key: doc.get(key) for key in ("model_name", "model_organization", "submission_date")},
    }
    entry = doc["results"].get(domain) if domain is not None else None
    if entry is None:
        return [], keep
    place = f"$.results.{domain}"
    if not isinstance(entry, dict):
        raise LoadError(path, place, f"expected an object, got {entry!r:.60}")
    nums = []
    for k in (1, 2, 3, 4):
        value = entry.get(f"pass_{k}")
        if value is None:
            continue
        if not is_number(value) or not 0 <= value <= 100:
            raise LoadError(
                path,
                f"{place}.pass_{k}",
                f"expected a percentage 0..100 or null, got {value!r:.60}",
            )
        nums.append(
            SourceNumber(
                f"submission pass^{k} ({domain}, %)", float(value), of="reward",
                reducer="pass_k", k=k, statistic="mean", policy="unknown", rule=RULE,
                scale=100.0, decimals=0 if isinstance(value, int) else _decimals(value),
            ).as_dict()
        )  # fmt: skip
    keep["cost"] = entry.get("cost")
    return nums, keep
