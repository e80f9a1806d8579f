"""mkdocs hook: pages generated from files that live outside ``docs/``.

``benchmarks/RESULTS.md``, ``benchmarks/FINDINGS.md`` (written by ``python -m benchmarks``)
and ``ARCHITECTURE.md`` stay where their tools and readers expect them; the site shows
them as they are, at the same relative places, so their links between each other hold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
#: page in the site -> file in the repository
GENERATED = {
    "benchmarks/RESULTS.md": "benchmarks/RESULTS.md",
    "benchmarks/FINDINGS.md": "benchmarks/FINDINGS.md",
    "architecture.md": "ARCHITECTURE.md",
}


def on_files(files: Files, config: Any) -> Files:
    for page, source in GENERATED.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        if page.startswith("benchmarks/"):  # long tables: below the guide in search results
            text = "---\nsearch:\n  boost: 0.3\n---\n" + text
        files.append(File.generated(config, page, content=text))
    return files


#: A Sphinx role left in a docstring (``:class:`Job```) renders as ":class:<code>Job</code>";
#: the site shows the name alone, in code.
_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj):(?=<code>)")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    return _ROLE.sub("", html)
