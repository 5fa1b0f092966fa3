"""Interrupts of a build, and what they leave (docs/security.md, "Builds"; issue 53, item 6).

``timeout`` and a CI's cancel send SIGTERM, a closed terminal SIGHUP: :func:`interrupts_stop`
makes them stop ``ingot build`` as ^C does (:class:`Interrupted`, a ``KeyboardInterrupt``), so
that what it made goes on the way out (the staging directory, the output's temporary file,
the child build). A build under a runtime's interpreter (:mod:`ingot.build.under`) ends with
its parent: the child watches a pipe the parent holds (:func:`watch_parent`), which closes
when the parent ends, killed or not. What a killed build left anyway (SIGKILL, a power cut)
the next build removes: the temporaries carry their writer's pid, and those whose writer is
gone go (:func:`remove_stale`, the extraction cache's rule: :func:`ingot._ingot.writer_gone`,
the importer's).

    with interrupts_stop():
        ...  # SIGTERM or SIGHUP here raises Interrupted

A temporary directory is made with :func:`scratch_directory`: an interrupt that arrives while
it is being made is held until its removal is sure to follow (a signal sent the moment the
directory appears, as ``timeout`` may, left it behind).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from ingot._ingot import WRITER_GONE_AFTER, writer_gone

__all__ = [
    "STAGING_PREFIXES",
    "Interrupted",
    "interrupts_stop",
    "remove_stale",
    "scratch_directory",
    "temporary_name",
    "watch_parent",
]

#: The signals that stop a build as ^C does.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The temporary directories of builds, in TMPDIR: ``<prefix><pid>-<random>``.
STAGING_PREFIXES = ("ingot-build-", "ingot-runtime-path-", "ingot-pack-")


class Interrupted(KeyboardInterrupt):
    """A build stopped by a signal; ``status`` is the exit status the shell would show for
    it (128 + the signal's number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self) -> int:
        return 128 + self.signum


class _Held:
    """The interrupts held while something that must be removed is being made (in the main
    thread, where Python runs signal handlers): how deep, and the first signal held."""

    depth = 0
    pending: int | None = None


def _stop(signum: int, frame: FrameType | None) -> None:
    if _Held.depth:
        if _Held.pending is None:
            _Held.pending = signum
        return
    # Once: a second signal must not cut short the way out (what the first one started).
    for number in SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupts_stop() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` in the ``with`` block (in the main
    thread; elsewhere, nothing changes); a signal the caller ignores (``nohup``) stays ignored.
    The handlers are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in SIGNALS}
    try:
        for number, handler in previous.items():
            if handler != signal.SIG_IGN:
                signal.signal(number, _stop)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def _release() -> None:
    """Ends a hold; the interrupt held, if any, is raised now."""
    _Held.depth -= 1
    if _Held.depth == 0 and _Held.pending is not None:
        signum, _Held.pending = _Held.pending, None
        _stop(signum, None)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch_directory(prefix: str, remove: Callable[[Path], None] = _remove_tree) -> Iterator[Path]:
    """A new directory in TMPDIR, ``<prefix><pid>-<random>`` (:func:`remove_stale` knows it once
    its process is gone, for a prefix in :data:`STAGING_PREFIXES`), which ``remove`` removes on
    the way out. An interrupt (:func:`interrupts_stop`) that arrives while it is being made is
    raised once its removal is sure to follow."""
    holding = threading.current_thread() is threading.main_thread()
    if holding:
        _Held.depth += 1
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    except BaseException:
        if holding:
            _release()
        raise
    try:
        if holding:
            _release()  # (raises what arrived meanwhile: here, the directory goes)
        yield path
    finally:
        remove(path)


def watch_parent(fd: int) -> None:
    """In a child build: when the pipe ``fd`` (whose writing end only the parent holds) closes,
    the parent has ended (even killed): this process is sent SIGTERM, which ends it as it
    ends ``ingot build`` (:func:`interrupts_stop`)."""

    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="ingot-parent-watch", daemon=True).start()


def temporary_name(output: Path, kind: str) -> str:
    """The name of a temporary file beside ``output``: ``.<name>.<kind>-<pid>-<random>``,
    which :func:`remove_stale` recognizes once its writer is gone."""
    return f".{output.name}.{kind}-{os.getpid()}-{os.urandom(4).hex()}"


#: What earlier ingots named their temporaries beside the output: ``.<name>.<pid>.<hex>.tmp``.
_LEGACY = re.compile(r"(?P<pid>\d+)\.[0-9a-f]{8}\.(tmp|probe)\Z")


def _stale_beside(output: Path) -> list[Path]:
    found = []
    prefix = f".{output.name}."
    try:
        names = os.listdir(output.parent)
    except OSError:
        return []
    for name in names:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :]
        legacy = _LEGACY.match(rest)
        if legacy:
            rest = f"tmp-{legacy['pid']}-0"  # (the same rule, for the pid the old name holds)
        if rest.startswith(("tmp-", "probe-")) and writer_gone(rest):
            found.append(output.parent / name)
    return found


def _stale_staging() -> list[Path]:
    directory = Path(tempfile.gettempdir())
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [
        directory / name
        for name in names
        if name.startswith(STAGING_PREFIXES)
        and writer_gone(name)  # (<prefix><pid>-<random>: tempfile's random part has no dash)
    ]


def remove_stale(output: Path) -> list[Path]:
    """Removes what builds whose process is gone left: temporary files beside ``output`` and
    staging directories in TMPDIR, of this user, more than :data:`ingot._ingot.
    WRITER_GONE_AFTER` seconds old. Returns what it removed."""
    removed = []
    now = time.time()
    for path in [*_stale_beside(output), *_stale_staging()]:
        try:
            info = path.lstat()
        except OSError:
            continue
        if info.st_uid != os.geteuid() or now - info.st_mtime < WRITER_GONE_AFTER:
            continue
        try:
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed
