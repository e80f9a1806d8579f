"""altair, imported at a third of its cost (every chart module imports it through here).

Importing altair imports ``jsonschema``, whose format module imports ``rfc3987_syntax``
when it is installed, and that compiles 38 Lark grammars at import: 1–4 s of the first
chart in a fresh kernel (issue 37), for the ``iri`` format checks, which the Vega-Lite
schema never uses (its formats: ``uri``, ``uri-reference``, ``color-hex``). So when
neither altair nor jsonschema is imported yet, :func:`altair` imports them with
``rfc3987_syntax`` hidden, and puts the module back afterwards (a later
``import rfc3987_syntax`` works). The one effect outside altair: in this process
jsonschema's ``FormatChecker`` does not check the ``iri`` / ``iri-reference`` formats,
as when ``rfc3987_syntax`` is not installed.
"""

from __future__ import annotations

import sys
from types import ModuleType

__all__ = ["altair"]

_HIDDEN = "rfc3987_syntax"


def altair() -> ModuleType:
    """The ``altair`` module, imported without building ``rfc3987_syntax``'s grammars
    (see the module docstring).

    Examples
    --------
    >>> altair().Chart.__name__
    'Chart'
    """
    done = sys.modules.get("altair")
    if done is not None:
        return done
    hide = "jsonschema" not in sys.modules and _HIDDEN not in sys.modules
    if hide:
        sys.modules[_HIDDEN] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        import altair as alt
    finally:
        if hide and sys.modules.get(_HIDDEN, False) is None:
            del sys.modules[_HIDDEN]
    return alt
