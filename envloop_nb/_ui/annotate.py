"""Quick annotation: one case at a time, keyboard only.

:class:`QuickAnnotator` is a small anywidget (its front end ships with the package, so it
works offline): it shows the case, the labels with their keys and a reason box, and
sends key presses to Python — a number key picks a label (or a value of an integer
scale) and moves on, ← / → move, ``n`` jumps to the next case without an annotation,
``r`` (or a click) puts the cursor in the reason box, Enter or Esc brings it back.
:class:`QuickAnnotation` is the controller: it walks the Cases tab's current rows (its
filters and order, attempt by attempt) and writes through
:func:`envloop_nb._annotations.manual.annotate`, so a refused label changes nothing and
says why in the widget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from .._annotations.manual import (
    ManualDimension,
    annotate,
    annotated,
    current,
    manual_dimensions,
    progress,
)
from .._present.cases_html import attempt_detail_html
from .cases_detail import attempt_detail
from .cases_page import CaseQuery

if TYPE_CHECKING:
    import duckdb

    from .cases_query import CaseSource

__all__ = ["QuickAnnotation", "QuickAnnotator", "parse_manual_spec"]

_ESM = """
function render({ model, el }) {
  el.classList.add("enb-quick");
  el.tabIndex = 0;
  // the keys are ours while the card has the focus, not JupyterLab's shortcuts
  el.dataset.lmSuppressShortcuts = "true";
  el.dataset.pSuppressShortcuts = "true";
  const head = document.createElement("div");
  head.className = "enb-quick-head";
  const keys = document.createElement("div");
  keys.className = "enb-quick-keys";
  const reasonRow = document.createElement("div");
  reasonRow.className = "enb-quick-reason";
  const reason = document.createElement("textarea");
  reason.rows = 2;
  reason.placeholder = "reason (r to type, Enter or Esc to return to the keys)";
  reasonRow.appendChild(reason);
  const message = document.createElement("div");
  message.className = "enb-quick-message";
  const card = document.createElement("div");
  card.className = "enb-quick-card";
  el.append(head, keys, reasonRow, message, card);
  const send = (event) => {
    model.set("event", event);
    model.set("events", model.get("events") + 1);
    model.save_changes();
  };
  const draw = () => {
    head.innerHTML = "";
    const progress = document.createElement("b");
    progress.textContent = model.get("progress");
    const where = document.createElement("span");
    where.textContent = "  ·  " + model.get("position");
    const help = document.createElement("span");
    help.className = "enb-quick-help";
    help.textContent = "keys: 1–9 label · ← → move · n next without annotation · r reason";
    head.append(progress, where, help);
    keys.innerHTML = "";
    const current = model.get("current");
    model.get("choices").forEach((label, i) => {
      const b = document.createElement("button");
      b.className = "enb-quick-choice" + (label === current ? " enb-on" : "");
      b.textContent = (i < 9 ? (i + 1) + "  " : "") + label;
      b.addEventListener("click", () => { send({ kind: "label", index: i }); el.focus(); });
      keys.appendChild(b);
    });
    if (document.activeElement !== reason) reason.value = model.get("reason");
    message.textContent = model.get("message");
    message.className = "enb-quick-message" + (model.get("message_is_error") ? " enb-bad" : "");
    card.innerHTML = model.get("card");
  };
  reason.addEventListener("input", () => { model.set("reason", reason.value); model.save_changes(); });
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Escape" || (e.key === "Enter" && !e.shiftKey)) {
      e.preventDefault();
      e.stopPropagation();
      el.focus();
    } else {
      e.stopPropagation();  // typing a reason is not a command
    }
  });
  el.addEventListener("keydown", (e) => {
    if (e.target === reason || e.ctrlKey || e.metaKey || e.altKey) return;
    let handled = true;
    if (/^[1-9]$/.test(e.key)) send({ kind: "label", index: Number(e.key) - 1 });
    else if (e.key === "0") send({ kind: "label", index: 9 });
    else if (e.key === "ArrowRight" || e.key === "ArrowDown") send({ kind: "move", delta: 1 });
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") send({ kind: "move", delta: -1 });
    else if (e.key === "n") send({ kind: "next_open" });
    else if (e.key === "r") reason.focus();
    else handled = false;
    if (handled) { e.preventDefault(); e.stopPropagation(); }
  });
  el.addEventListener("click", (e) => { if (e.target !== reason) el.focus(); });
  ["card", "choices", "current", "progress", "position", "reason", "message", "message_is_error"].forEach(
    (name) => model.on("change:" + name, draw)
  );
  draw();
  setTimeout(() => el.focus(), 50);
}
export default { render };
"""

_CSS = """
.enb-quick{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  outline:none;border:1px solid var(--jp-border-color2,#8884);border-radius:6px;padding:8px 10px}
.enb-quick:focus{border-color:var(--jp-brand-color1,#1976d2);
  box-shadow:0 0 0 2px color-mix(in srgb,var(--jp-brand-color1,#1976d2) 25%,transparent)}
.enb-quick-head{margin-bottom:6px}
.enb-quick-help{float:right;color:var(--jp-ui-font-color2,#666)}
.enb-quick-keys{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0}
.enb-quick-choice{font:inherit;padding:4px 12px;border-radius:4px;cursor:pointer;
  border:1px solid var(--jp-border-color1,#8888);background:var(--jp-layout-color1,#fff);
  color:var(--jp-ui-font-color1,inherit)}
.enb-quick-choice.enb-on{background:var(--jp-brand-color1,#1976d2);color:#fff;
  border-color:var(--jp-brand-color1,#1976d2)}
.enb-quick-reason textarea{width:100%;box-sizing:border-box;font:inherit;margin:4px 0}
.enb-quick-message{min-height:16px;color:var(--jp-success-color1,#2e7d32)}
.enb-quick-message.enb-bad{color:var(--jp-error-color1,#c62828);font-weight:600}
"""


def parse_manual_spec(text: str) -> tuple[dict[str, float] | None, tuple[float, float] | None]:
    """The panel form's text as ``(labels, scale)``: ``"good=1, bad=0"`` or ``"1-5"``.

    Examples
    --------
    >>> parse_manual_spec("correct=1, partly=0.5, wrong=0")
    ({'correct': 1.0, 'partly': 0.5, 'wrong': 0.0}, None)
    >>> parse_manual_spec("1-5"), parse_manual_spec("0 – 1")
    ((None, (1.0, 5.0)), (None, (0.0, 1.0)))
    """
    import re

    text = text.strip()
    scale = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*[-–]\s*(-?\d+(?:\.\d+)?)", text)
    if scale:
        return None, (float(scale[1]), float(scale[2]))
    labels: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        label, eq, value = part.rpartition("=")
        if not eq or not label.strip():
            raise ValueError(
                f"write labels as label=value, separated by commas (got {part!r}), "
                "or a scale as low-high"
            )
        try:
            labels[label.strip()] = float(value)
        except ValueError:
            raise ValueError(
                f"the value of {label.strip()!r} must be a number, got {value!r}"
            ) from None
    if not labels:
        raise ValueError("write labels as label=value, separated by commas, or a scale as low-high")
    return labels, None


class QuickAnnotator(anywidget.AnyWidget):
    """The keyboard-driven annotation card (see the module docstring).

    Examples
    --------
    >>> w = QuickAnnotator(choices=["good", "bad"], progress="0/4 annotated")
    >>> w.events, w.choices
    (0, ['good', 'bad'])
    """

    _esm = _ESM
    _css = _CSS
    card = traitlets.Unicode("").tag(sync=True)
    choices = traitlets.List(traitlets.Unicode(), default_value=[]).tag(sync=True)
    current = traitlets.Unicode("").tag(sync=True)
    progress = traitlets.Unicode("").tag(sync=True)
    position = traitlets.Unicode("").tag(sync=True)
    reason = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    message_is_error = traitlets.Bool(False).tag(sync=True)
    event = traitlets.Dict(default_value={}).tag(sync=True)
    events = traitlets.Int(0).tag(sync=True)

    def __repr__(self) -> str:
        return f"<QuickAnnotator {self.progress!r} {self.position!r}>"


class QuickAnnotation:
    """Walk the Cases tab's rows one attempt at a time and annotate them by keyboard.

    Parameters
    ----------
    con, job_id
        The job.
    source
        The Cases tab's :class:`~envloop_nb._ui.cases_query.CaseSource` (its rows).
    query
        The Cases tab's current query: its filters and order (the attempt view is used).
    name
        The manual dimension to annotate (default: the first one defined).
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        job_id: str,
        source: CaseSource,
        query: CaseQuery,
        name: str | None = None,
    ) -> None:
        dims = manual_dimensions(con, job_id)
        if not dims:
            raise ValueError(
                "the job has no manual dimension to annotate: add one first "
                "(job.add_manual_dimension(name, labels) or the form above)"
            )
        self.con, self.job_id, self.source = con, job_id, source
        self.query = query.replace(view="attempt", page_size=1)
        self.dimension: ManualDimension = next((d for d in dims if d.name == name), dims[0])
        self.index = 0
        self.total = source.fetch(self.query).total
        self.widget = QuickAnnotator(choices=self._choices())
        self.widget.observe(lambda _: self._on_event(), names="events")
        self.show()

    # -- what the keys pick ------------------------------------------------------------
    def _choices(self) -> list[str]:
        if self.dimension.labels is not None:
            return self.dimension.choices
        lo, hi = self.dimension.scale or (0.0, 0.0)
        ints = [v for v in range(int(lo), int(hi) + 1) if lo <= v <= hi]
        return [str(v) for v in ints][:10] if 0 < len(ints) <= 10 else []

    def case(self) -> tuple[str, int] | None:
        """``(task, attempt)`` shown now (None when no row matches the filters)."""
        if self.total == 0:
            return None
        frame = self.source.fetch(self.query.replace(page=self.index)).frame
        if frame.empty:
            return None
        row = frame.iloc[0]
        return str(row["task"]), int(row["attempt"])

    def _current(self, task: str, attempt: int) -> tuple[str, str]:
        """The case's current (label-or-value, reason) for this dimension."""
        row = current(self.con, self.job_id, self.dimension.name, task, attempt)
        if row is None or row[1] is None:
            return "", ""
        label, value, reason = row
        return str(label if label is not None else f"{value:g}"), str(reason or "")

    def show(self, message: str = "", error: bool = False) -> None:
        """Draw the current case, the progress and ``message``."""
        done = next(
            (p for p in progress(self.con, self.job_id) if p.name == self.dimension.name), None
        )
        w = self.widget
        w.progress = (
            f"{done.annotated:,}/{done.total:,} annotated" if done is not None else ""
        ) + f" · {self.dimension.name}"
        case = self.case()
        if case is None:
            w.position, w.card, w.current, w.reason = "no case matches the filters", "", "", ""
        else:
            task, attempt = case
            w.position = f"case {self.index + 1:,} of {self.total:,}"
            w.current, w.reason = self._current(task, attempt)
            w.card = attempt_detail_html(attempt_detail(self.con, self.job_id, task, attempt))
        # the style first: the front end draws on "message" and must see it an error
        w.message_is_error = error
        w.message = message

    # -- actions (the keys call these; tests call them too) ----------------------------
    def move(self, delta: int) -> None:
        """Show the case ``delta`` rows on (clipped to the rows there are)."""
        self.index = max(0, min(self.index + int(delta), max(self.total - 1, 0)))
        self.show()

    def pick(self, index: int) -> bool:
        """Give the shown case choice ``index`` (with the reason typed) and move on.

        Returns whether it was stored; a refused one changes nothing and says why.
        """
        case = self.case()
        choices = self._choices()
        if case is None:
            self.show("no case to annotate", error=True)
            return False
        if not 0 <= index < len(choices):
            self.show(f"no label on key {index + 1}: the labels are {', '.join(choices)}", True)
            return False
        task, attempt = case
        choice = choices[index]
        kwargs: dict[str, Any] = (
            {"label": choice} if self.dimension.labels is not None else {"value": float(choice)}
        )
        try:
            annotate(
                self.con, self.job_id, self.dimension.name, task, attempt,
                reason=self.widget.reason or None, **kwargs,
            )  # fmt: skip
        except ValueError as e:
            self.show(str(e), error=True)
            return False
        said = f"{task} · attempt {attempt}: {choice}"
        if self.index < self.total - 1:
            self.index += 1
        self.show(f"saved {said}")
        return True

    def next_open(self) -> None:
        """Jump to the next case (in the rows' order, wrapping) without an annotation."""
        done = annotated(self.con, self.job_id, self.dimension.name)
        size = 256
        order = [*range(self.index + 1, self.total), *range(0, self.index + 1)]
        pages: dict[int, list[tuple[str, int]]] = {}
        for i in order:
            page = i // size
            if page not in pages:
                frame = self.source.fetch(self.query.replace(page=page, page_size=size)).frame
                pages[page] = [
                    (str(t), int(a)) for t, a in zip(frame["task"], frame["attempt"], strict=True)
                ]
            rows = pages[page]
            if i % size < len(rows) and rows[i % size] not in done:
                self.index = i
                self.show()
                return
        self.show("every case in these rows is annotated")

    def _on_event(self) -> None:
        event = dict(self.widget.event)
        kind = event.get("kind")
        if kind == "label":
            self.pick(int(event.get("index", -1)))
        elif kind == "move":
            self.move(int(event.get("delta", 0)))
        elif kind == "next_open":
            self.next_open()
