"""The README's lab command from a fresh clone, cold (issue 37): time to JupyterLab answering,
and the size of the ``.venv`` it made.

``python -m benchmarks.bench_lab_setup [--keep]``

Clones this checkout's ``HEAD`` (``git clone``, so only committed files) into a new temporary
folder beside it (so ``../shared`` is found as in a fresh clone), points ``UV_CACHE_DIR`` at
a new empty folder (cold: every wheel is downloaded again), then starts
``bash .ci/lab --no-browser --port P`` and polls ``http://127.0.0.1:P/lab`` every 0.25 s
until it answers. What is timed is from the command's start to that first answer: the
lab's setup from its lock (compiling to bytecode included), ``jupyter trust`` and the
server's start. Target: ≤ 90 s and a ``.venv`` ≤ 1.2 GB on the project's 2-core machine.
The clone and the cache are deleted after (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status < 400)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone and the cache")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="enb-cold-lab-", dir=ROOT.parent))
    clone, cache = work / "clone", work / "uv-cache"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # beside the project, as a fresh clone has it: the clone is one level deeper
    (work / "shared").symlink_to(ROOT.parent / "shared")
    port = _free_port()
    env = {**os.environ, "UV_CACHE_DIR": str(cache)}
    log = (work / "lab.log").open("w")
    start = time.perf_counter()
    lab = subprocess.Popen(
        ["bash", ".ci/lab", "--no-browser", f"--port={port}", "--ServerApp.token="],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        while not _answers(f"http://127.0.0.1:{port}/lab"):
            if lab.poll() is not None:
                raise SystemExit(f"bash .ci/lab exited with {lab.returncode}: see {log.name}")
            time.sleep(0.25)
        seconds = time.perf_counter() - start
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait()
        log.close()
    venv = _size(clone / ".venv") / 1e9
    load = os.getloadavg()
    print(
        f"commit {subprocess.check_output(['git', '-C', str(clone), 'rev-parse', '--short', 'HEAD'], text=True).strip()}"
    )
    print(f"JupyterLab answered after {seconds:.1f} s (target <= 90 s)")
    print(f".venv {venv:.2f} GB of files (target <= 1.2 GB)")
    print(f"load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
