"""Ready-made HTML whose paged views work: a tiny anywidget around a string of HTML.

An ``ipywidgets.HTML`` sets its value as ``innerHTML``, where no script runs, so a
transcript or side-by-side view shown there would keep only its first page. This widget
draws the same HTML and wires each paged view in it (``.enb-tr``: pages, search,
timeline, jumps) with the renderers' own script (:data:`envloop_nb._present.paged_view.PAGED_JS`).
anywidget's front end ships with the package, so it works offline.
"""

from __future__ import annotations

import anywidget
import traitlets

from .._present.paged_view import PAGED_JS

__all__ = ["HtmlView"]

_ESM = (
    "const wire = (() => {\n"
    + PAGED_JS
    + """
  return enbWirePaged;
})();
function render({ model, el }) {
  const draw = () => {
    el.innerHTML = model.get("value");
    el.querySelectorAll(".enb-tr").forEach((root) => wire(root));
  };
  model.on("change:value", draw);
  draw();
}
export default { render };
"""
)


class HtmlView(anywidget.AnyWidget):
    """An HTML string shown with its paged views wired (``value``, like ``ipywidgets.HTML``).

    Examples
    --------
    >>> HtmlView(value="<b>hi</b>").value
    '<b>hi</b>'
    """

    _esm = _ESM
    value = traitlets.Unicode("").tag(sync=True)

    def __repr__(self) -> str:
        return f"<HtmlView {len(self.value):,} characters>"
