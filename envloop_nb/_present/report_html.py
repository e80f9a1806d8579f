"""A standalone HTML report: one self-contained file that opens in a plain browser with
no Jupyter and no network — the vega-embed bundle (with Vega and Vega-Lite) and every
chart's data are inlined; the sections are HTML made by this floor's pure renderers.

Rendered with Jinja2 (autoescaped: text is escaped unless it is ``Markup`` from our own
renderers). Light and dark (``prefers-color-scheme``) and print-friendly styling; the
JupyterLab theme variables the cards use get plain-page values here.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .js_cache import cached_bundle, vl_version

__all__ = ["ReportSection", "frame_table_html", "report_html", "vega_bundle"]


@dataclass(frozen=True)
class ReportSection:
    """A titled part of a report: ready HTML (from our renderers) and chart specs
    (Vega-Lite dicts) drawn below it."""

    title: str
    html: str = ""
    charts: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    note: str = ""


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:">
<title>{{ title }}</title>
<style>
:root{--jp-ui-font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;--jp-code-font-family:ui-monospace,Menlo,Consolas,monospace;
  --jp-ui-font-color1:#1f2328;--jp-ui-font-color2:#57606a;--jp-ui-font-color3:#8c959f;--jp-layout-color0:#fff;--jp-layout-color1:#fff;
  --jp-layout-color2:#f3f4f6;--jp-layout-color3:#e5e7eb;--jp-border-color1:#c9ced6;--jp-border-color2:#d8dde3;--jp-border-color3:#eceff2;
  --jp-brand-color1:#1976d2;--jp-error-color1:#c62828;--jp-success-color1:#2e7d32;--jp-warn-color0:#92400e;--jp-warn-color1:#d97706;
  --jp-warn-color2:#f0c36d;--jp-warn-color3:#fef3c7;color-scheme:light dark}
@media (prefers-color-scheme: dark){:root{--jp-ui-font-color1:#e6edf3;--jp-ui-font-color2:#9da7b3;--jp-ui-font-color3:#6e7681;
  --jp-layout-color0:#0d1117;--jp-layout-color1:#161b22;--jp-layout-color2:#21262d;--jp-layout-color3:#30363d;--jp-border-color1:#444c56;
  --jp-border-color2:#373e47;--jp-border-color3:#2d333b;--jp-brand-color1:#58a6ff;--jp-warn-color0:#f0b429;--jp-warn-color3:#3b2f12}}
body{margin:0;background:var(--jp-layout-color0);color:var(--jp-ui-font-color1);font-family:var(--jp-ui-font-family);font-size:14px;line-height:1.45}
main{max-width:1080px;margin:0 auto;padding:24px 28px 48px}
header h1{font-size:22px;margin:0 0 4px} header .enb-meta{color:var(--jp-ui-font-color2);font-size:13px}
header .enb-meta span+span:before{content:" · "}
section{margin-top:26px;break-inside:avoid-page} section h2{font-size:16px;margin:0 0 8px;padding-bottom:4px;border-bottom:1px solid var(--jp-border-color2)}
section .enb-section-note{color:var(--jp-ui-font-color2);font-size:12px;margin:-4px 0 8px}
.enb-charts{display:flex;flex-wrap:wrap;gap:18px;margin-top:10px}
.enb-chart{min-width:320px}
.enb-report-table,.enb-table-scroll{overflow-x:auto;max-width:100%} .enb-report-table table{border-collapse:collapse;font-size:12px}
section .enb-panel table{border-collapse:collapse} section .enb-panel th{white-space:normal}
section .enb-panel td{white-space:normal} section .enb-panel td.num{white-space:nowrap}
.enb-report-table th{text-align:left;color:var(--jp-ui-font-color2);border-bottom:1px solid var(--jp-border-color1);padding:3px 8px;white-space:nowrap}
.enb-report-table td{padding:2px 8px;border-bottom:1px solid var(--jp-border-color3);vertical-align:top}
.enb-report-table td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.enb-dim{color:var(--jp-ui-font-color2)}
footer{margin-top:36px;color:var(--jp-ui-font-color3);font-size:12px}
@media print{body{font-size:11px} main{max-width:none;padding:0} .enb-chart{break-inside:avoid} a{color:inherit}}
</style>
<script type="text/javascript">
// vega-embed bundle (Vega {{ vega_note }}), inlined: this file needs no network
{{ bundle }}
</script>
</head>
<body>
<main>
<header>
<h1>{{ title }}</h1>
<div class="enb-meta">{% for item in meta %}<span>{{ item }}</span>{% endfor %}</div>
</header>
{% for s in sections %}
<section id="s{{ loop.index }}">
<h2>{{ s.title }}</h2>
{% if s.note %}<div class="enb-section-note">{{ s.note }}</div>{% endif %}
{{ s.html }}
{% if s.charts %}<div class="enb-charts">{% for c in s.charts %}<div class="enb-chart" id="chart-{{ loop.index0 }}-{{ s.title|replace(' ', '_')|e }}" data-chart="{{ chart_ids[loop.index0 ~ '|' ~ s.title] }}"></div>{% endfor %}</div>{% endif %}
</section>
{% endfor %}
<footer>Written by {{ written_by }} on {{ generated }}. Self-contained: no network is needed to read it.</footer>
</main>
<script type="text/javascript">
const specs = {{ specs_json }};
const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
window.enbCharts = {drawn: 0, failed: 0, total: specs.length};
document.querySelectorAll("[data-chart]").forEach((el) => {
  const spec = specs[Number(el.dataset.chart)];
  vegaEmbed(el, spec, {actions: false, renderer: "svg", theme: dark ? "dark" : undefined})
    .then(() => { window.enbCharts.drawn += 1; })
    .catch((err) => { window.enbCharts.failed += 1; el.textContent = "chart failed: " + err; });
});
</script>
</body>
</html>
"""


def frame_table_html(
    frame: Any, *, columns: Sequence[str] | None = None, max_rows: int = 200
) -> str:
    """A frame as a plain table for a report: human headers (:func:`.display.header`),
    numbers right-aligned (rates in [0, 1] as percentages where the column says
    ``score``/``pass``/``rate``, differences — ``*_diff``, ``*_low``, ``*_high``, ``gap``
    — in points with their sign), missing as ``-``; at most ``max_rows`` rows, with a note
    when cut. Escaped.

    Examples
    --------
    >>> import pandas as pd
    >>> out = frame_table_html(pd.DataFrame({"job": ["<a>"], "score": [0.5], "n": [3],
    ...                                      "score_low": [-0.009804]}))
    >>> "&lt;a&gt;" in out and ">50.0%<" in out and ">3<" in out and ">−1.0 pts<" in out
    True
    >>> "score_low" in out
    False
    """
    import html as _html
    import math

    from .display import format_int, format_number, format_pct, format_points, header

    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    rate_words = ("score", "pass", "rate", "share", "coverage_rate")

    def cell(col: str, v: Any) -> tuple[str, bool]:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-", True
        if isinstance(v, bool):
            return ("yes" if v else "no"), False
        if isinstance(v, int | float) and not isinstance(v, bool):
            name = col.lower()
            if name in ("gap", "low", "high") or name.endswith(("_diff", "_low", "_high")):
                return format_points(float(v)), True
            if any(w in name for w in rate_words) and 0 <= float(v) <= 1:
                return format_pct(float(v)), True
            text = format_int(v) if isinstance(v, int) else format_number(v)
            return text, True
        return str(v), False

    head = "".join(f"<th>{_html.escape(header(c))}</th>" for c in cols)
    body = []
    for row in frame[cols].head(max_rows).itertuples(index=False, name=None):
        tds = []
        for c, v in zip(cols, row, strict=True):
            text, num = cell(str(c), v.item() if hasattr(v, "item") else v)
            tds.append(f'<td class="{"num" if num else ""}">{_html.escape(text)}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    cut = (
        f'<div class="enb-dim">the first {max_rows:,} of {len(frame):,} rows</div>'
        if len(frame) > max_rows
        else ""
    )
    return f'<div class="enb-report-table"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{cut}</div>'


@functools.cache
def vega_bundle() -> str:
    """The vega-embed JavaScript bundle (Vega, Vega-Lite, vega-embed) for altair's
    Vega-Lite version, as vl-convert ships it (no download).

    Building it takes seconds, so it is kept once per process and in a file of the user's
    cache folder (``$XDG_CACHE_HOME/envloop_nb``, else ``~/.cache/envloop_nb``), named by
    the vl-convert and Vega-Lite versions; an unreadable or unwritable cache is skipped.
    """
    from importlib.metadata import version as installed

    version = vl_version()

    def build() -> str:
        import vl_convert as vlc

        # vl-convert's stub makes ``snippet`` required; it is optional (None: the bundle alone)
        bundle: str = vlc.javascript_bundle(None, vl_version=version)  # type: ignore[arg-type]
        return bundle.replace("</script", "<\\/script")

    return cached_bundle(f"vega-embed-{installed('vl-convert-python')}-{version}.js", build)


def report_html(
    title: str,
    sections: Sequence[ReportSection],
    *,
    meta: Sequence[str] = (),
    written_by: str = "envloop_nb",
    bundle: str | None = None,
    generated: dt.datetime | None = None,
) -> str:
    """The whole report as one HTML document.

    Examples
    --------
    >>> out = report_html("T <1>", [ReportSection("Numbers", "<b>ok</b>", note="a & b")], bundle="")
    >>> "T &lt;1&gt;" in out and "<b>ok</b>" in out and "a &amp; b" in out
    True
    """
    import jinja2
    from markupsafe import Markup

    specs: list[Mapping[str, Any]] = []
    ids: dict[str, int] = {}
    for s in sections:
        for i, spec in enumerate(s.charts):
            ids[f"{i}|{s.title}"] = len(specs)
            specs.append(spec)
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(_TEMPLATE)
    when = (generated or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    specs_json = json.dumps(specs, ensure_ascii=False, default=str).replace("</", "<\\/")
    return template.render(
        title=title,
        meta=list(meta),
        sections=[
            {"title": s.title, "html": Markup(s.html), "charts": s.charts, "note": s.note}
            for s in sections
        ],
        chart_ids=ids,
        specs_json=Markup(specs_json),
        bundle=Markup(vega_bundle() if bundle is None else bundle),
        vega_note="inline",
        written_by=written_by,
        generated=when,
    )
