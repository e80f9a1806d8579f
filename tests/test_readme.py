"""The README's code runs: every ```python block, in order, from the project root.

The blocks run in one fresh Python process (``python -c``, cwd the project root), in one
namespace, as a reader would paste them into one notebook; the first block that raises
fails the test, naming the block and its first line. A block that must not run in a test
(it opens a panel, writes somewhere) starts with the line ``# readme: skip``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

from .conftest import ROOT

SKIP = "# readme: skip"
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

#: run in the child: each block compiled under its own name, so a traceback names it
_RUNNER = textwrap.dedent(
    """
    import json, sys, traceback
    blocks = json.loads(sys.stdin.read())
    namespace = {"__name__": "__main__"}
    for number, code in blocks:
        try:
            exec(compile(code, f"<README.md python block {number}>", "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            first = code.strip().splitlines()[0] if code.strip() else ""
            print(f"README.md python block {number} failed (it starts: {first!r})", file=sys.stderr)
            sys.exit(1)
    """
)


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """The ```python blocks (numbered from 1 in the file), without those marked to skip."""
    blocks = [m.group(1) for m in _BLOCK.finditer(markdown)]
    return [(n, code) for n, code in enumerate(blocks, 1) if not code.lstrip().startswith(SKIP)]


def run_blocks(markdown: str) -> subprocess.CompletedProcess[str]:

    return subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(python_blocks(markdown)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_readme_python_blocks_run_in_order_from_the_project_root() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert python_blocks(readme), "the README has no python block to run"
    done = run_blocks(readme)
    assert done.returncode == 0, done.stderr[-6000:]


def test_a_failing_block_fails_and_is_named() -> None:
    markdown = (
        "# t\n\n```python\nx = 1\n```\n\n```python\n# readme: skip\nraise SystemExit(0)\n```\n\n"
        "```python\nassert x == 1\n1 / 0\n```\n"
    )
    assert [n for n, _ in python_blocks(markdown)] == [1, 3]
    done = run_blocks(markdown)
    assert done.returncode == 1
    assert "README.md python block 3 failed" in done.stderr
    assert "ZeroDivisionError" in done.stderr


def test_a_skipped_block_does_not_run() -> None:
    done = run_blocks("```python\n# readme: skip\nraise RuntimeError('ran')\n```\n")
    assert done.returncode == 0, done.stderr
