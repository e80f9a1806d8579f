"""The Buckets & export tab: edit a rule set, apply it, export XLSX or a dataset.

Applying calls :func:`~envloop_nb._buckets.apply.job_buckets` and makes the result the
panel's current buckets (:meth:`~envloop_nb._ui.state.PanelState.set_buckets`, which the
Cases tab follows); the exports call :func:`~envloop_nb._export.job_xlsx.export_xlsx` and
:func:`~envloop_nb._datasets.export.export_dataset` with the panel's policy and threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._metrics.facts import dimension_names
from .._present.cases_html import error_box, ok_box
from .._present.panel_html import PANEL_CSS, bucket_counts_html, note_html
from .._store.ref import job_info, job_k
from .state import Guard

if TYPE_CHECKING:
    from .._buckets.apply import BucketResult
    from .._buckets.rules import BucketRules
    from .._datasets.dataset import Dataset
    from .._export.job_xlsx import ExportResult
    from .state import PanelState

__all__ = ["DEFAULT_RULES", "BucketsTab"]

DEFAULT_RULES = (("hard", 0.0, 0.25), ("medium", 0.25, 0.75), ("easy", 0.75, 1.01))


class BucketsTab:
    """Edit a rule set, apply it, see counts and warnings, export XLSX or a dataset."""

    def __init__(self, state: PanelState) -> None:
        import ipywidgets as w

        self.state = state
        self.w = w
        con, job_id = state.con, state.job_id
        self.available = True
        try:
            from .._buckets.rules import BucketRules  # noqa: F401
        except ImportError:
            self.available = False
        self.rules_data: list[dict[str, Any]] = [
            {"name": n, "low": lo, "high": hi} for n, lo, hi in DEFAULT_RULES
        ]
        dims = dimension_names(con, job_id)
        k = job_k(con, job_id)
        metrics = [("pass rate (per task)", "pass_rate"), (f"pass@{k} (per task)", f"pass@{k}"),
                   (f"pass^{k} (per task)", f"pass^{k}"), ("mean reward (per task)", "reward_mean")]  # fmt: skip
        metrics += [(f"{d} mean (per task)", d) for d in dims]
        metrics += [("reward (per attempt)", "attempt:reward")]
        metrics += [(f"{d} (per attempt)", f"attempt:{d}") for d in dims]
        self.metric = w.Dropdown(options=metrics, value="pass_rate", description="metric",
                                 layout=w.Layout(width="300px"))  # fmt: skip
        status = str(job_info(con, job_id).get("status") or "")
        self.allow_partial = w.Checkbox(
            value=False,
            description=f"allow partial (job is {status})",
            indent=False,
            layout=w.Layout(display="" if status in ("pending", "running") else "none"),
        )
        self.rules_box = w.VBox()
        self.add_button = w.Button(description="+ add bucket", layout=w.Layout(width="110px"))
        self.apply_button = w.Button(description="Apply rules", button_style="primary")
        self.rows: list[dict[str, Any]] = []
        self.counts = w.HTML()
        self.chart_box = w.Box()
        self.warnings = w.HTML()
        self.error = w.HTML()
        self.guard = Guard(self.error)
        self.result: BucketResult | None = None
        self.last_export: ExportResult | Dataset | None = None
        # export controls
        self.export_buckets = w.SelectMultiple(
            options=[], rows=4, description="buckets", layout=w.Layout(width="300px")
        )
        self.xlsx_path = w.Text(value=f"{job_id}.xlsx", description="xlsx file",
                                layout=w.Layout(width="340px"))  # fmt: skip
        self.sheet_per_bucket = w.Checkbox(
            value=False,
            description="one sheet per bucket",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.export_xlsx_button = w.Button(description="Export XLSX", icon="download")
        self.dataset_folder = w.Text(value="datasets", description="folder",
                                     layout=w.Layout(width="240px"))  # fmt: skip
        self.dataset_name = w.Text(value=f"{job_id}-hard", description="name",
                                   layout=w.Layout(width="240px"))  # fmt: skip
        self.dataset_version = w.Text(value="1", description="version",
                                      layout=w.Layout(width="160px"))  # fmt: skip
        self.dataset_format = w.Dropdown(options=["jsonl", "parquet"], value="jsonl",
                                         description="format", layout=w.Layout(width="180px"))  # fmt: skip
        self.export_dataset_button = w.Button(description="Export dataset", icon="database")
        self.export_message = w.HTML()
        self.export_guard = Guard(self.export_message)
        self.add_button.on_click(lambda _: self._edit(self._add))
        self.apply_button.on_click(lambda _: self.apply())
        self.export_xlsx_button.on_click(lambda _: self.export_xlsx())
        self.export_dataset_button.on_click(lambda _: self.export_dataset())
        self._render_rows()
        note = w.HTML()
        if not self.available:
            note.value = error_box(
                "Bucketing is not available: envloop_nb._buckets.rules is missing."
            )
            self.apply_button.disabled = True
        hint = w.HTML(
            note_html(
                "Rules apply top to bottom, first match wins; a bucket holds low ≤ value &lt; "
                "high; values matching none go to “Other (matched no rule)”; tasks whose "
                "metric is undefined (“-”) are left out."
            )
        )
        self.widget = w.VBox(
            [
                note,
                hint,
                w.HBox([self.metric, self.allow_partial]),
                self.rules_box,
                w.HBox([self.add_button, self.apply_button]),
                self.error,
                self.warnings,
                # the chart wraps below the counts when both do not fit: never clipped
                w.HBox(
                    [self.counts, self.chart_box],
                    layout=w.Layout(
                        flex_flow="row wrap", align_items="flex-start", grid_gap="12px"
                    ),
                ),
                w.HTML(f'{PANEL_CSS}<div class="enb-panel"><h4>Export</h4></div>'),
                w.HBox(
                    [
                        self.export_buckets,
                        w.HTML(
                            f'{PANEL_CSS}<div class="enb-panel enb-dim" style="max-width:260px">'
                            "Select buckets to export only their tasks (ctrl/shift-click); none "
                            "selected exports everything.</div>"
                        ),
                    ]
                ),
                w.HBox(
                    [self.xlsx_path, self.sheet_per_bucket, self.export_xlsx_button],
                    layout=w.Layout(align_items="center"),
                ),
                w.HBox(
                    [
                        self.dataset_folder,
                        self.dataset_name,
                        self.dataset_version,
                        self.dataset_format,
                        self.export_dataset_button,
                    ],
                    layout=w.Layout(align_items="center", flex_flow="row wrap"),
                ),
                self.export_message,
            ]
        )

    # -- rule editing ----------------------------------------------------------------
    def _render_rows(self) -> None:
        w = self.w
        self.rows = []
        children = []
        for i, rule in enumerate(self.rules_data):
            name = w.Text(value=rule["name"], layout=w.Layout(width="180px"))
            low = w.FloatText(value=rule["low"], step=0.05, layout=w.Layout(width="90px"))
            high = w.FloatText(value=rule["high"], step=0.05, layout=w.Layout(width="90px"))
            up = w.Button(description="↑", layout=w.Layout(width="32px"), disabled=i == 0,
                          tooltip="move up")  # fmt: skip
            down = w.Button(description="↓", layout=w.Layout(width="32px"),
                            disabled=i == len(self.rules_data) - 1, tooltip="move down")  # fmt: skip
            remove = w.Button(description="✕", layout=w.Layout(width="32px"), tooltip="remove",
                              disabled=len(self.rules_data) == 1)  # fmt: skip
            up.on_click(lambda _, i=i: self._edit(lambda: self.move(i, -1)))
            down.on_click(lambda _, i=i: self._edit(lambda: self.move(i, +1)))
            remove.on_click(lambda _, i=i: self._edit(lambda: self.remove(i)))
            for ctl, key in ((name, "name"), (low, "low"), (high, "high")):
                ctl.observe(lambda ch, i=i, key=key: self._set(i, key, ch["new"]), names="value")
            label = w.HTML(
                f'{PANEL_CSS}<div class="enb-panel num" style="width:18px">{i + 1}</div>'
            )
            between = w.HTML('<span style="opacity:.7">≤ value &lt;</span>')
            children.append(w.HBox([label, name, low, between, high, up, down, remove],
                                   layout=w.Layout(align_items="center")))  # fmt: skip
            self.rows.append({"name": name, "low": low, "high": high, "up": up, "down": down,
                              "remove": remove})  # fmt: skip
        header = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel enb-dim" style="margin-left:26px">bucket name, '
            "then its bounds: low ≤ value &lt; high</div>"
        )
        self.rules_box.children = [header, *children]

    def _set(self, i: int, key: str, value: Any) -> None:
        if 0 <= i < len(self.rules_data):
            self.rules_data[i][key] = value

    def _edit(self, fn: Callable[[], None]) -> None:
        if self.guard.run(fn):
            self._render_rows()

    def _add(self) -> None:
        last = self.rules_data[-1]["high"] if self.rules_data else 0.0
        self.add(f"bucket {len(self.rules_data) + 1}", last, last)

    def add(self, name: str, low: float, high: float) -> None:
        """Append a bucket at the bottom of the rule set."""
        self.rules_data.append({"name": name, "low": float(low), "high": float(high)})
        self._render_rows()

    def remove(self, index: int) -> None:
        """Remove the bucket at ``index`` (0-based)."""
        if len(self.rules_data) <= 1:
            raise ValueError("a rule set needs at least one bucket")
        del self.rules_data[index]
        self._render_rows()

    def move(self, index: int, step: int) -> None:
        """Move the bucket at ``index`` up (``step=-1``) or down (``+1``)."""
        j = index + step
        if not (0 <= index < len(self.rules_data) and 0 <= j < len(self.rules_data)):
            return
        self.rules_data[index], self.rules_data[j] = self.rules_data[j], self.rules_data[index]
        self._render_rows()

    def set_rules(self, rules: list[tuple[str, float, float]]) -> None:
        """Replace the rule set being edited with ``(name, low, high)`` triples."""
        self.rules_data = [{"name": n, "low": float(lo), "high": float(hi)} for n, lo, hi in rules]
        self._render_rows()

    def rules(self) -> BucketRules:
        """The :class:`envloop_nb.BucketRules` the editor describes (may raise)."""
        from .._buckets.rules import Bucket, BucketRules

        metric = self.metric.value
        level = "attempt" if metric.startswith("attempt:") else "task"
        metric = metric.removeprefix("attempt:")
        buckets = [Bucket(str(r["name"]).strip(), float(r["low"]), float(r["high"]))
                   for r in self.rules_data]  # fmt: skip
        return BucketRules(buckets, metric=metric, level=level)

    # -- apply -----------------------------------------------------------------------
    def apply(self) -> None:
        """Apply the rules to the job; show counts, chart and warnings (or an error)."""
        self.guard.run(self._apply)

    def _apply(self) -> None:
        from .._buckets.apply import job_buckets
        from .._present import charts as _charts
        from .._present.render import chart_widget

        state = self.state
        rules = self.rules()
        result = job_buckets(
            state.ref,
            rules,
            policy=state.policy,
            threshold=state.threshold,
            allow_partial=bool(self.allow_partial.value),
        )
        counts = result.counts
        chart_frame = counts[counts["bucket"] != "(excluded)"][["bucket", "count"]]
        what = "attempts" if rules.level == "attempt" else "tasks"
        chart = _charts.bucket_chart(chart_frame.reset_index(drop=True), title=f"{what} per bucket")
        state.set_buckets(result)  # the Cases tab follows (raises: nothing changed)
        # assign (everything above succeeded)
        self.result = result
        self.counts.value = self._counts_html(result, what)
        self.warnings.value = "".join(error_box(f"warning: {w}") for w in result.warnings)
        self.chart_box.children = [chart_widget(chart)]
        self.export_buckets.options = list(rules.names)

    @staticmethod
    def _counts_html(result: BucketResult, what: str) -> str:
        head = f"Buckets of {result.job_id} on {result.metric}"
        if result.partial:
            head += f" · PARTIAL (job {result.status})"
        return bucket_counts_html(result.counts, head, what)

    # -- exports ---------------------------------------------------------------------
    def _chosen(self) -> list[str] | None:
        chosen = list(self.export_buckets.value)
        return chosen or None

    def export_xlsx(self) -> None:
        """Write the XLSX workbook (all, or the selected buckets); report where and rows."""

        def run() -> None:
            from .._export.job_xlsx import export_xlsx

            state = self.state
            chosen = self._chosen()
            rules = self.result.rules if self.result is not None else None
            if chosen and rules is None:
                raise ValueError("apply bucket rules before exporting chosen buckets")
            result: ExportResult = export_xlsx(
                state.ref,
                Path(self.xlsx_path.value).expanduser(),
                rules=rules,
                buckets=chosen,
                policy=state.policy,
                threshold=state.threshold,
                sheet_per_bucket=bool(self.sheet_per_bucket.value) and rules is not None,
                allow_partial=bool(self.allow_partial.value),
            )
            self.last_export = result
            rows = ", ".join(f"{k}: {v:,}" for k, v in result.rows_per_sheet.items())
            self.export_message.value = ok_box(f"wrote {Path(result.path).resolve()} — rows {rows}")

        self.export_guard.run(run)

    def export_dataset(self) -> None:
        """Write a new dataset from the selected buckets; report where and how many rows."""

        def run() -> None:
            try:
                from .._datasets.export import export_dataset
            except ImportError as exc:
                raise RuntimeError(
                    "dataset export is not available in this version (envloop_nb._datasets.export)"
                ) from exc
            state = self.state
            if self.result is None:
                raise ValueError("apply bucket rules first: a dataset is made of chosen buckets")
            result: Dataset = export_dataset(
                state.ref,
                Path(self.dataset_folder.value).expanduser(),
                name=self.dataset_name.value.strip(),
                version=self.dataset_version.value.strip(),
                rules=self.result.rules,
                buckets=self._chosen(),
                format=self.dataset_format.value,
                policy=state.policy,
                threshold=state.threshold,
                allow_partial=bool(self.allow_partial.value),
            )
            self.last_export = result
            where = getattr(result, "path", None) or getattr(result, "folder", None)
            rows = getattr(result, "row_count", None) or getattr(result, "rows", None)
            self.export_message.value = ok_box(f"wrote {where} — {rows:,} rows"
                                                 if isinstance(rows, int) else f"wrote {result}")  # fmt: skip

        self.export_guard.run(run)
