"""A second user racing for a directory's name: for the tests that a cache root is never made
inside a directory another user slipped in while it was being created.

`squatting(base, name)` starts, as user `nobody`, a process that makes `base/name` (mode 0777)
and removes it again, in a tight loop, for as long as the block runs: the attack on a cache whose
parent does not exist yet under a world-writable sticky directory (``HOME=/tmp``, where
``~/.cache`` is missing). `shared_sticky_dir()` makes such a directory, as /tmp is, where that
user can reach it. Needs root (to be another user) and setpriv.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["NOBODY", "need_a_second_user", "owners_from", "shared_sticky_dir", "squatting"]

NOBODY = 65534

# mkdir, then rmdir (which fails, and the loop goes on, when the victim's directory is inside).
_LOOP = "umask 0; $d = shift; while (1) { mkdir $d, 0777; rmdir $d; }"


def need_a_second_user() -> None:
    """Skips (fails under INGOT_REQUIRE_PYTHONS) unless this test can act as another user."""
    if os.geteuid() == 0 and shutil.which("setpriv") and shutil.which("perl"):
        return
    if os.environ.get("INGOT_REQUIRE_PYTHONS"):
        pytest.fail("needs root, setpriv and perl (a second user racing)")
    pytest.skip("needs root, setpriv and perl (a second user racing)")


@contextlib.contextmanager
def shared_sticky_dir() -> Iterator[Path]:
    """A new directory of root's with /tmp's mode (1777), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="ingot-race-", dir="/tmp"))
    try:
        path.chmod(0o1777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def squatting(base: Path, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """`nobody` making and removing `base/name` in a loop while the block runs."""
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    process = subprocess.Popen([*as_nobody, "perl", "-e", _LOOP, str(base / name)])
    try:
        # Running: its directory comes and goes.
        deadline = time.monotonic() + 10
        while not (base / name).exists() and time.monotonic() < deadline:
            assert process.poll() is None, "the racing process ended"
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def owners_from(path: Path, base: Path) -> list[tuple[Path, int]]:
    """(directory, owner) for `path` and each directory above it, up to `base` excluded."""
    found = []
    while path != base:
        found.append((path, os.lstat(path).st_uid))
        path = path.parent
    return found
