"""Errors that users see. Each names the file and the place that was wrong."""

from __future__ import annotations

__all__ = ["EnvloopError", "LoadError", "LoadWarning", "WorkspaceError"]


class EnvloopError(Exception):
    """Base class of every error envloop_nb raises on purpose."""


class LoadError(EnvloopError, ValueError):
    """A source could not be loaded; the workspace was left unchanged.

    Parameters
    ----------
    source
        The file or folder being read.
    place
        Where in it: ``"line 7"``, ``"trial tr_12"``, ``"$.job.attempts"``.
    problem
        What was wrong and what was expected.

    Examples
    --------
    >>> str(LoadError("run.jsonl", "line 3", "reward must be a number, got string '0.5'"))
    "run.jsonl, line 3: reward must be a number, got string '0.5'"
    """

    def __init__(self, source: object, place: str | None, problem: str) -> None:
        self.source = str(source)
        self.place = place
        self.problem = problem
        where = f"{self.source}, {place}" if place else self.source
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[type[LoadError], tuple[str, str | None, str]]:
        # pickled as its parts (a worker process's error reaches the caller whole)
        return type(self), (self.source, self.place, self.problem)


class LoadWarning(UserWarning):
    """Rows were skipped while loading leniently (``ws.load(..., lenient=True)``)."""


class WorkspaceError(LoadError):
    """The workspace file itself cannot be opened: another process has it, it is not a
    DuckDB database or not a workspace, or a newer envloop_nb wrote it. The message names
    the file and says what to do; the file is left unchanged.

    A :class:`LoadError` (what a newer file raised before), so code that caught that
    still catches it.

    Examples
    --------
    >>> str(WorkspaceError("evals.duckdb", None, "not a DuckDB database"))
    'evals.duckdb: not a DuckDB database'
    """
