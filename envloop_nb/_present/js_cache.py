"""JavaScript bundles built by vl-convert, kept in the user's cache folder.

vl-convert builds a bundle in seconds (Vega, Vega-Lite, vega-embed and the snippet that
uses them), so each bundle is built once per machine: a file of
``$XDG_CACHE_HOME/envloop_nb`` (else ``~/.cache/envloop_nb``) named by what it depends
on. A cached file ends with a marker, so one cut short is rebuilt; an unreadable or
unwritable cache folder is skipped (the bundle is then built in every process).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from .altair_import import altair

__all__ = ["cached_bundle", "vl_version"]

#: Marks a complete cached bundle (a file cut short lacks it and is rebuilt).
_BUNDLE_END = "\n/* envloop_nb: end of bundle */\n"


def cached_bundle(name: str, build: Callable[[], str]) -> str:
    """The text ``build()`` gives, read from the cache file ``name`` when it is there.

    ``name`` must say everything the text depends on (versions), e.g.
    ``"vega-embed-1.8.0-v5_20.js"``.

    Examples
    --------
    >>> import os, tempfile
    >>> os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp()
    >>> cached_bundle("x-1.js", lambda: "let x = 1;")
    'let x = 1;'
    >>> cached_bundle("x-1.js", lambda: "never built again")
    'let x = 1;'
    """
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envloop_nb"
    cached = root / name
    with contextlib.suppress(OSError):
        text = cached.read_text(encoding="utf-8")
        if text.endswith(_BUNDLE_END):
            return text.removesuffix(_BUNDLE_END)
    bundle = build()
    with contextlib.suppress(OSError):  # written whole, then renamed: never half a bundle
        root.mkdir(parents=True, exist_ok=True)
        part = cached.with_name(f"{cached.name}.{os.getpid()}.part")
        part.write_text(bundle + _BUNDLE_END, encoding="utf-8")
        part.replace(cached)
    return bundle


def vl_version() -> str:
    """altair's Vega-Lite version as vl-convert names it (``"v6_4"``), as altair asks it."""
    alt = altair()

    return "_".join(alt.SCHEMA_VERSION.split(".")[:2])
