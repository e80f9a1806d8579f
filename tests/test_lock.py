"""The locks in ``requirements/`` are fresh against ``pyproject.toml``.

``.ci/lock`` writes them (uv, pinned with hashes); ``.ci/setup`` and ``.ci/lab`` install
exactly them. A dependency added, removed or re-ranged in ``pyproject.toml`` without
running ``.ci/lock`` fails here, without asking any registry.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
# lock file -> the extras it is compiled with (as .ci/lock says)
LOCKS = {"dev.txt": ("dev",), "lab.txt": ("lab",), "bench.txt": ("dev", "bench")}
# a lock is universal; its markers are read for the environment CI and the README create
ENV = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "implementation_name": "cpython", "platform_python_implementation": "CPython",
       "extra": ""}  # fmt: skip
_ENTRY = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)(?:\s*;\s*([^\\]+?))?\s*\\?$"
)


def _pins(text: str) -> dict[str, list[tuple[Version, str | None, list[str]]]]:
    """name -> [(version, marker, via)] of every entry of a uv requirements file."""
    pins: dict[str, list[tuple[Version, str | None, list[str]]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _ENTRY.match(line)
        if not m:
            continue
        via: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].startswith(" "):
            comment = lines[j].strip()
            if comment.startswith("# via "):
                via.append(comment[len("# via ") :])
            elif comment.startswith("#   "):
                via.append(comment[len("#   ") :])
            j += 1
        hashes = sum("--hash=sha256:" in lines[k] for k in range(i, j))
        assert hashes, f"{line}: no hash"
        name = canonicalize_name(m.group(1))
        pins.setdefault(name, []).append((Version(m.group(3)), m.group(4), via))
    return pins


def _wanted(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate(ENV)]


def _for_env(entries: list[tuple[Version, str | None, list[str]]]) -> list[Version]:
    return [v for v, marker, _ in entries if marker is None or Marker(marker).evaluate(ENV)]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_requirement_is_pinned_within_its_range(lock: str) -> None:
    pins = _pins((ROOT / "requirements" / lock).read_text())
    for req in _wanted(LOCKS[lock]):
        versions = _for_env(pins.get(canonicalize_name(req.name), []))
        assert len(versions) == 1, f"{lock}: {req.name} is not pinned (run bash .ci/lock)"
        assert req.specifier.contains(versions[0], prereleases=True), (
            f"{lock}: {req.name}=={versions[0]} is outside {req.specifier} (run bash .ci/lock)"
        )


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_nothing_is_pinned_for_a_requirement_that_is_gone(lock: str) -> None:
    """An entry pulled in only by the project must still be one of its requirements."""
    pins = _pins((ROOT / "requirements" / lock).read_text())
    wanted = {canonicalize_name(r.name) for r in _wanted(LOCKS[lock])}
    for name, entries in pins.items():
        for _, _, via in entries:
            if via and all(v.startswith("envloop-nb") for v in via):
                assert name in wanted, f"{lock}: {name} is locked for nothing (run bash .ci/lock)"


def test_the_build_is_locked_too() -> None:
    """The package is built with the locked setuptools, not the newest release."""
    pins = _pins((ROOT / "requirements" / "build.txt").read_text())
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    for req in map(Requirement, system["requires"]):
        versions = _for_env(pins.get(canonicalize_name(req.name), []))
        assert len(versions) == 1 and req.specifier.contains(versions[0]), req
    assert "--build-constraints requirements/build.txt" in (ROOT / ".ci" / "setup").read_text()


def test_the_install_scripts_use_the_locks() -> None:
    setup = (ROOT / ".ci" / "setup").read_text()
    assert "requirements/dev.txt" in setup and "pip sync" in setup and "--require-hashes" in setup
    assert "ENB_LOCK=requirements/lab.txt" in (ROOT / ".ci" / "lab").read_text()
    lock = (ROOT / ".ci" / "lock").read_text()
    for name, extras in LOCKS.items():
        assert f"compile {name} {' '.join(extras)}\n" in lock


def test_the_parser_reads_what_uv_writes() -> None:
    """A test of the two tests above: the parser finds entries, markers and via lines."""
    text = (
        "numpy==2.4.6 ; python_full_version < '3.12' \\\n    --hash=sha256:ab\n"
        "    # via\n    #   envloop-nb (pyproject.toml)\n    #   pandas\n"
        "numpy==2.5.5 ; python_full_version >= '3.12' \\\n    --hash=sha256:cd\n"
        "zstandard==0.23.0 \\\n    --hash=sha256:ef\n    # via envloop-nb (pyproject.toml)\n"
    )
    pins = _pins(text)
    assert _for_env(pins["numpy"]) == [Version("2.4.6")]
    assert pins["numpy"][0][2] == ["envloop-nb (pyproject.toml)", "pandas"]
    assert pins["zstandard"][0][2] == ["envloop-nb (pyproject.toml)"]
    with pytest.raises(AssertionError, match="no hash"):
        _pins("six==1.16.0\n")
