"""A real JupyterLab server and headless Chromium, for what a user sees in the browser:
shared by ``tests/test_browser.py`` (checks) and ``benchmarks/bench_browser.py`` (timings).

The server runs on a free local port, token off, with its own settings folder (autosave
and news off, every cell rendered), over ``root``; it is killed on exit.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "jupyterlab", "open_notebook"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_settings(settings: Path) -> None:
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": (
            '{"fetchNews": "false", "checkForUpdates": false}'
        ),
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": '{"autosave": false}',
    }
    for rel, text in files.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@contextmanager
def jupyterlab(root: Path, *, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run JupyterLab over ``root`` (extra environment ``env``); yield its URL."""
    settings = Path(tempfile.mkdtemp(prefix="enb-lab-settings-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        _write_settings(settings)
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
             "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=", "--allow-root",
             f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={settings}",
             f"--LabApp.workspaces_dir={settings}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})}, cwd=root,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(url + "/api", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("JupyterLab exited while starting") from None
                time.sleep(0.5)
        else:
            raise RuntimeError("JupyterLab did not start within 120 s")
        yield url
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(settings, ignore_errors=True)


def open_notebook(
    browser: Any,
    url: str,
    notebook: str,
    *,
    height: int = 1200,
    ready: str = ".jp-Notebook",
    timeout_ms: int = 90_000,
) -> Any:
    """A new 1400-wide page on ``notebook`` of the lab at ``url`` (layout reset), once
    ``ready`` shows, with the kernel chooser or any other first dialog accepted."""
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.goto(f"{url}/lab/tree/{notebook}?reset")
    page.wait_for_selector(ready, timeout=timeout_ms)
    time.sleep(3)
    for _ in range(3):  # the kernel chooser or another dialog
        if page.query_selector(".jp-Dialog"):
            page.click(".jp-Dialog-footer button.jp-mod-accept")
            time.sleep(1)
    return page
