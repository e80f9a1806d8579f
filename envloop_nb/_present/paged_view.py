"""A long list of blocks shown page by page, searchable, with a timeline strip (pure).

The first page is in the document, the others in inert ``<template>`` elements the
browser parses but does not lay out, so a view of 10,000 steps opens as quickly as a
short one. A small inline script (:data:`PAGED_JS`, no network) switches pages,
searches every page (matches highlighted and stepped through), follows ``data-go``
links (the timeline, "jump to first error") to a step on any page; without scripts the
first page still reads. Used by the transcript and the side-by-side view; the CSS
follows JupyterLab's theme variables (light and dark).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from .cases_html import is_missing

__all__ = [
    "FOLD_CHARS",
    "FOLD_LINES",
    "MAX_CHARS",
    "MAX_MARKS",
    "PAGED_CSS",
    "PAGED_JS",
    "as_records",
    "esc",
    "fold_text",
    "missing_as_none",
    "paged_html",
    "timeline_html",
]

#: Characters of one step's text the transcript holds (the rest: ``job.steps()``).
MAX_CHARS = 20_000
#: Text longer than this (characters or lines) folds behind "show more".
FOLD_CHARS, FOLD_LINES = 700, 12
#: At most this many marks in the timeline strip (beyond: one mark per run of steps).
MAX_MARKS = 300

PAGED_CSS = """
<style>
.enb-tr{--enb-user:var(--jp-brand-color1,#1976d2);--enb-assistant:var(--jp-success-color1,#2e7d32);
  --enb-tool:var(--jp-warn-color1,#d97706);--enb-err:var(--jp-error-color1,#d32f2f);
  --enb-reason:#8e6cc0;--enb-system:#7d8590;--enb-env:#0f8b8d;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;line-height:1.45;
  color:var(--jp-ui-font-color1,inherit);display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.enb-tr *{box-sizing:border-box}
.enb-tr-main{flex:1 1 560px;min-width:0}
.enb-tr-side{flex:0 1 320px;min-width:240px;position:sticky;top:0;border:1px solid var(--jp-border-color2,#8884);
  border-radius:6px;padding:8px 10px;max-height:90vh;overflow:auto}
.enb-tr h4{margin:0 0 6px 0;font-size:13px}
.enb-tr h5{margin:8px 0 3px 0;font-size:12px;color:var(--jp-ui-font-color2,inherit)}
div.enb-tr pre{white-space:pre-wrap;word-break:break-word;margin:0;padding:3px 6px;
  font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:11.5px;
  background:var(--jp-layout-color2,#8881);border-radius:4px;max-height:none}
.enb-tr .enb-dim{color:var(--jp-ui-font-color2,#888)}
.enb-tr-sticky{position:sticky;top:0;z-index:2;background:var(--jp-layout-color0,Canvas);padding-top:4px}
.enb-tr-bar{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:center;margin:0 0 6px 0}
.enb-tr-bar input[type=search]{font:inherit;padding:2px 6px;width:220px;color:inherit;
  background:var(--jp-layout-color1,Canvas);border:1px solid var(--jp-border-color1,#8888);border-radius:4px}
.enb-tr-bar button{font:inherit;padding:1px 7px;cursor:pointer;color:inherit;
  background:var(--jp-layout-color2,#8881);border:1px solid var(--jp-border-color1,#8888);border-radius:4px}
.enb-tr-bar button:disabled{opacity:.4;cursor:default}
.enb-tr a.enb-go{color:var(--enb-err);font-weight:600;text-decoration:none;cursor:pointer}
.enb-tr a.enb-go.enb-go-plain{color:var(--jp-brand-color1,#1976d2)}
.enb-tl{display:flex;gap:1px;height:16px;margin:2px 0 8px 0;align-items:stretch;overflow:hidden}
.enb-tl.enb-tl-dense{gap:0}
.enb-tl a{flex:1 1 0;min-width:0;max-width:18px;border-radius:2px;background:var(--enb-system);opacity:.75}
.enb-tl a:hover{opacity:1;outline:1px solid var(--jp-ui-font-color1,#888)}
.enb-tl a.enb-hit{box-shadow:inset 0 -5px 0 #f5c518;opacity:1}
.enb-tl a.enb-k-message.enb-r-user,.enb-tl a.enb-k-message.enb-r-system{background:var(--enb-user)}
.enb-tl a.enb-k-message{background:var(--enb-assistant)}
.enb-tl a.enb-k-reasoning{background:var(--enb-reason)}
.enb-tl a.enb-k-tool_call,.enb-tl a.enb-k-tool_result{background:var(--enb-tool)}
.enb-tl a.enb-k-subagent{background:var(--enb-env)}
.enb-tl a.enb-k-context_summary{background:var(--enb-system)}
.enb-tl a.enb-e{background:var(--enb-err);opacity:1}
.enb-tr mark{background:color-mix(in srgb,#f5c518 60%,transparent);color:inherit;padding:0 1px;border-radius:2px}
.enb-tr mark.enb-cur{outline:2px solid #f5c518}
.enb-tr .enb-flash{animation:enb-flash 1.6s ease-out}
@keyframes enb-flash{from{box-shadow:0 0 0 3px #f5c518}to{box-shadow:0 0 0 3px transparent}}
.enb-tr details.enb-more>summary,.enb-tr details.enb-fold>summary{cursor:pointer;
  color:var(--jp-brand-color1,#1976d2);font-size:11px;list-style:none;margin:1px 0}
.enb-tr details.enb-more>summary::-webkit-details-marker{display:none}
.enb-tr details.enb-more[open]>summary .enb-show{display:none}
.enb-tr details.enb-more:not([open])>summary .enb-hide{display:none}
.enb-tr details.enb-more>pre{border-top-left-radius:0;border-top-right-radius:0}
.enb-tr pre.enb-head-text{border-bottom-left-radius:0;border-bottom-right-radius:0}
</style>
"""

#: Pages, search, timeline and jumps of a paged view (``.enb-tr``); no network.
PAGED_JS = r"""
function enbWirePaged(root) {
  if (!root || root.dataset.wired) return;
  root.dataset.wired = "1";
  const data = JSON.parse(root.querySelector("script.enb-tr-data").textContent);
  const view = root.querySelector(".enb-tr-view");
  const pages = Array.from(root.querySelectorAll("template.enb-tr-page"));
  const label = root.querySelector(".enb-tr-pageno");
  const prev = root.querySelector(".enb-tr-prev"), next = root.querySelector(".enb-tr-next");
  const input = root.querySelector(".enb-tr-search");
  const count = root.querySelector(".enb-tr-count");
  const marks = Array.from(root.querySelectorAll(".enb-tl a"));
  let current = 0, query = "", hits = [], at = -1, index = null;
  const pageOf = (n) => data.page[n - 1] ?? 0;
  function highlight() {
    if (!query) return;
    const q = query.toLowerCase();
    view.querySelectorAll(".enb-block").forEach((block) => {
      const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
      const nodes = [];
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach((node) => {
        const text = node.nodeValue, low = text.toLowerCase();
        let i = low.indexOf(q);
        if (i < 0) return;
        const frag = document.createDocumentFragment();
        let last = 0;
        while (i >= 0) {
          frag.append(text.slice(last, i));
          const m = document.createElement("mark");
          m.textContent = text.slice(i, i + q.length);
          frag.append(m);
          last = i + q.length;
          i = low.indexOf(q, last);
        }
        frag.append(text.slice(last));
        node.replaceWith(frag);
      });
      if (block.querySelector("mark")) {
        block.querySelectorAll("details").forEach((d) => { if (d.querySelector("mark")) d.open = true; });
      }
    });
  }
  function show(k) {
    k = Math.max(0, Math.min(pages.length - 1, k));
    view.replaceChildren(pages[k].content.cloneNode(true));
    current = k;
    if (label) label.textContent = (k + 1).toLocaleString() + " / " + pages.length.toLocaleString();
    if (prev) prev.disabled = k === 0;
    if (next) next.disabled = k === pages.length - 1;
    highlight();
  }
  function go(n) {
    const k = pageOf(n);
    if (k !== current) show(k);
    const el = view.querySelector('[data-step="' + n + '"]');
    if (!el) return;
    for (let d = el.parentElement; d && d !== view; d = d.parentElement) {
      if (d.tagName === "DETAILS") d.open = true;
    }
    el.scrollIntoView({ block: "center" });
    view.querySelectorAll(".enb-flash").forEach((f) => f.classList.remove("enb-flash"));
    void el.offsetWidth;
    el.classList.add("enb-flash");
  }
  function search(q) {
    query = q.trim();
    hits = []; at = -1;
    if (query) {
      if (!index) {
        index = [];
        pages.forEach((t) => t.content.querySelectorAll(".enb-block").forEach((b) => {
          index.push([Number(b.dataset.step), b.textContent.toLowerCase()]);
        }));
      }
      const low = query.toLowerCase();
      hits = index.filter((e) => e[1].includes(low)).map((e) => e[0]);
    }
    const hit = new Set(hits);
    marks.forEach((m) => {
      let on = false;
      for (let n = Number(m.dataset.go); n <= Number(m.dataset.last || m.dataset.go); n++) {
        if (hit.has(n)) { on = true; break; }
      }
      m.classList.toggle("enb-hit", on);
    });
    if (count) count.textContent = query ? (hits.length ? hits.length.toLocaleString() + " " + data.noun + (hits.length === 1 ? "" : "s") : "no match") : "";
    show(current);
    if (hits.length) step(1);
  }
  function step(dir) {
    if (!hits.length) return;
    at = (at + dir + hits.length) % hits.length;
    go(hits[at]);
    if (count) count.textContent = (at + 1).toLocaleString() + " of " + hits.length.toLocaleString() + " " + data.noun + (hits.length === 1 ? "" : "s");
  }
  root.addEventListener("click", (ev) => {
    const a = ev.target.closest("[data-go]");
    if (a && root.contains(a)) { ev.preventDefault(); go(Number(a.dataset.go)); return; }
    const b = ev.target.closest("button[data-act]");
    if (!b) return;
    const act = b.dataset.act;
    if (act === "prev") show(current - 1);
    else if (act === "next") show(current + 1);
    else if (act === "hit-prev") step(-1);
    else if (act === "hit-next") step(1);
  });
  if (input) {
    let timer = null;
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => search(input.value), 200); });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(timer); if (input.value.trim() !== query) search(input.value); else step(ev.shiftKey ? -1 : 1); }
    });
  }
  if (prev) prev.disabled = true;
  if (next) next.disabled = pages.length < 2;
}
"""


def as_records(rows: Any) -> list[dict[str, Any]]:
    """Step rows as plain dicts: a pandas or polars frame, or a sequence of mappings."""
    if hasattr(rows, "to_dicts"):  # polars
        return list(rows.to_dicts())
    if hasattr(rows, "to_dict"):  # pandas
        return list(rows.to_dict("records"))
    return [dict(r) for r in rows]


def missing_as_none(value: Any) -> Any:
    """``None`` for every kind of missing (NaN, NA, NaT)."""
    return None if is_missing(value) else value


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fold_text(text: str | None, *, chars: int = FOLD_CHARS, lines: int = FOLD_LINES) -> str:
    """Text as escaped ``<pre>``; past ``chars`` characters or ``lines`` lines the rest folds
    behind "show more", past :data:`MAX_CHARS` it is cut with a note.

    Examples
    --------
    >>> fold_text("<b>hi</b>")
    '<pre>&lt;b&gt;hi&lt;/b&gt;</pre>'
    >>> out = fold_text("\\n".join(f"line {i}" for i in range(40)))
    >>> "show more" in out and "28 more lines" in out and out.count("<pre") == 2
    True
    """
    if text is None:
        return '<span class="enb-dim">(empty)</span>'
    cut = ""
    if len(text) > MAX_CHARS:
        cut = f"\n… {len(text) - MAX_CHARS:,} more characters not shown (job.steps() has them)"
        text = text[:MAX_CHARS]
    text_lines = text.split("\n")
    if len(text) <= chars and len(text_lines) <= lines:
        return f"<pre>{html.escape(text + cut)}</pre>"
    head = "\n".join(text_lines[:lines])[:chars]
    rest = text[len(head) :]
    if rest.startswith("\n"):
        rest = rest[1:]
    more_lines = rest.count("\n") + 1
    what = f"{more_lines:,} more lines" if more_lines > 1 else f"{len(rest):,} more characters"
    return (
        f'<pre class="enb-head-text">{html.escape(head)}</pre><details class="enb-more"><summary>'
        f'<span class="enb-show">▸ show more · {what}</span><span class="enb-hide">▾ show less'
        f"</span></summary><pre>{html.escape(rest + cut)}</pre></details>"
    )


def timeline_html(marks: Sequence[tuple[int, int, str, str]], uid: str) -> str:
    """The timeline strip: ``(first, last, classes, title)`` per mark, each a link to
    ``first`` (pure; the classes colour it, see :data:`PAGED_CSS`)."""
    items = "".join(
        f'<a class="{cls}" href="#{uid}-s{first}" data-go="{first}" data-last="{last}" '
        f'title="{esc(title)}"></a>'
        for first, last, cls, title in marks
    )
    dense = " enb-tl-dense" if len(marks) > 150 else ""
    return f'<div class="enb-tl{dense}">{items}</div>'


def paged_html(
    blocks: Sequence[tuple[Sequence[int], str]],
    *,
    uid: str,
    title: str = "",
    toolbar_extra: str = "",
    above: str = "",
    side: str = "",
    page_size: int = 200,
    noun: str = "step",
) -> str:
    """A paged view: ``blocks`` are ``(steps it shows, html)`` in order (the first step
    is its anchor), cut into pages of about ``page_size`` steps; the first page is shown,
    the others wait in ``<template>`` elements. ``title``, then the search box, pager and
    ``toolbar_extra`` links, the ``above`` strip (a timeline), the pages, and a ``side``
    panel beside them; :data:`PAGED_JS` wires it (a step's page is in its JSON data)."""
    pages: list[list[str]] = [[]]
    filled = 0
    last = max((max(steps) for steps, _ in blocks), default=0)
    page_of = [0] * last
    for steps, text in blocks:
        if filled >= page_size:
            pages.append([])
            filled = 0
        pages[-1].append(text)
        filled += len(steps)
        for n in steps:
            page_of[n - 1] = len(pages) - 1
    n_pages = len(pages)
    pager = (
        '<button class="enb-tr-prev" data-act="prev" title="previous page">‹</button>'
        f'<span class="enb-dim">page <span class="enb-tr-pageno">1 / {n_pages:,}</span></span>'
        '<button class="enb-tr-next" data-act="next" title="next page">›</button>'
        if n_pages > 1
        else ""
    )
    bar = (
        '<div class="enb-tr-bar"><input type="search" class="enb-tr-search" '
        f'placeholder="search the {noun}s…" aria-label="search">'
        '<button data-act="hit-prev" title="previous match">↑</button>'
        '<button data-act="hit-next" title="next match (Enter)">↓</button>'
        f'<span class="enb-tr-count enb-dim"></span>{toolbar_extra}{pager}</div>'
    )
    data = json.dumps({"page": page_of, "noun": noun}, separators=(",", ":")).replace("</", "<\\/")
    templates = "".join(f'<template class="enb-tr-page">{"".join(p)}</template>' for p in pages)
    aside = f'<aside class="enb-tr-side">{side}</aside>' if side else ""
    return (
        f'<div class="enb-tr" id="{uid}"><div class="enb-tr-main">{title}'
        f'<div class="enb-tr-sticky">{bar}{above}</div>'
        f'<div class="enb-tr-view">{"".join(pages[0])}</div>{templates}</div>{aside}'
        f'<script type="application/json" class="enb-tr-data">{data}</script>'
        f"<script>(function(){{{PAGED_JS}\nenbWirePaged(document.currentScript"
        f' && document.currentScript.closest(".enb-tr"));}})();</script></div>'
    )
