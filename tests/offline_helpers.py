"""Checks that a chart renders with no network: no URL to a CDN in what Jupyter shows."""

from __future__ import annotations

import re
from typing import Any

#: A URL on a CDN host, or any http(s) URL a page would fetch (script/link src/href, import).
CDN_URL = re.compile(
    r"https?://(?:cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|esm\.sh"
    r"|cdn\.skypack\.dev|ga\.jspm\.io)"
    r"""|(?:src|href)\s*=\s*["']https?://"""
    r"""|\bimport\s*\(?\s*["']https?://|\bfrom\s+["']https?://"""
)
WIDGET = "application/vnd.jupyter.widget-view+json"


def _bundle(chart: Any) -> dict[str, Any]:
    bundle = chart._repr_mimebundle_()
    data: dict[str, Any] = bundle[0] if isinstance(bundle, tuple) else bundle
    return data


def cdn_urls(chart: Any, bundle: dict[str, Any] | None = None) -> list[str]:
    """CDN URLs in the chart's Jupyter mimebundle and in its ``to_html()``."""
    data = _bundle(chart) if bundle is None else bundle
    return CDN_URL.findall(str(data)) + CDN_URL.findall(chart.to_html())


def assert_renders_offline(chart: Any) -> None:
    """Displayed, ``chart`` is the offline JupyterChart widget; its HTML links no CDN."""
    data = _bundle(chart)
    assert WIDGET in data, sorted(data)
    assert cdn_urls(chart, data) == []
    chart.to_dict()  # still a valid altair chart
