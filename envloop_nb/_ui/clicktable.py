"""A page of rows whose rows can be clicked: a tiny anywidget around ready-made HTML.

The HTML is built by pure functions (``_cases.page_html``); rows carry ``data-row="i"``.
A click sets ``clicked`` to that row and bumps ``clicks`` (so clicking the same row
twice is still an event); the panel observes ``clicks`` and opens the row's detail.
anywidget's front end ships with the package, so this works offline like the charts.
"""

from __future__ import annotations

import anywidget
import traitlets

__all__ = ["ClickableTable"]

_ESM = """
function render({ model, el }) {
  // the detail the click opens is drawn by Python a moment later, below the table:
  // bring it into view once it changed (it may sit below the fold)
  const scrollToDetail = () => {
    const panel = el.closest(".enb-job-panel, .enb-exp-panel") || el.parentElement;
    const detail = () => panel && panel.querySelector(".enb-detail");
    const before = detail() ? detail().innerHTML : null;
    let tries = 0;
    const look = () => {
      const d = detail();
      if (d && d.innerHTML !== before) {
        d.scrollIntoView({ block: "nearest", behavior: "smooth" });
      } else if (tries++ < 40) {
        setTimeout(look, 100);
      }
    };
    setTimeout(look, 100);
  };
  const draw = () => {
    el.innerHTML = model.get("value");
    el.querySelectorAll("tbody tr[data-row]").forEach((tr) => {
      tr.addEventListener("click", () => {
        model.set("clicked", Number(tr.dataset.row));
        model.set("clicks", model.get("clicks") + 1);
        model.save_changes();
        scrollToDetail();
      });
    });
  };
  model.on("change:value", draw);
  draw();
}
export default { render };
"""


class ClickableTable(anywidget.AnyWidget):
    """HTML table widget reporting row clicks (``clicked`` row index, ``clicks`` count).

    Examples
    --------
    >>> t = ClickableTable(value='<table><tbody><tr data-row="0"><td>a</td></tr></tbody></table>')
    >>> t.clicked, t.clicks
    (-1, 0)
    """

    _esm = _ESM
    value = traitlets.Unicode("").tag(sync=True)
    clicked = traitlets.Int(-1).tag(sync=True)
    clicks = traitlets.Int(0).tag(sync=True)

    def __repr__(self) -> str:
        return f"<ClickableTable clicked={self.clicked}>"
