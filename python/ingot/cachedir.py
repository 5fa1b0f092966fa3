"""The extraction cache from the outside: what it holds, and pruning what old builds left.

The importer writes a tree per build of an app with ``files`` packages (``<root>/trees/<id>``)
and, where memory files cannot be used, a directory per native image (``<root>/native/<id>``); it
never deletes a complete one (crates/ingot-importer/src/cache.rs). ``ingot cache list`` shows
them; ``ingot cache prune`` removes those not created or repaired for a while (the time of the
directory, which the importer sets when it renames a tree into place) that no running process
uses (has mapped or open, as ``/proc/<pid>/maps`` and ``/proc/<pid>/fd`` show for this user's
processes), and the temporary directories killed writers left. A pruned tree an executable needs
again is written again at its next start.

The build cache (:mod:`ingot.build.archive.buildcache`, ``<root>/build``) is listed and pruned with it:
each directory of installed dependencies (``deps``), and the store of the build's entries as one
(``build``), whose segment files are pruned one by one; both go by the time they were last used.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ingot._ingot import (
    STALE_TEMPORARY_AFTER,
    TEMPORARY_PREFIX,
    cache_root,
    make_cache_dirs,
    stale_temporary,
    writer_gone,
)
from ingot.errors import IngotError

__all__ = [
    "CacheEntry",
    "CacheError",
    "build_root",
    "check_private",
    "in_use",
    "list_cache",
    "make_directories",
    "prune",
    "root",
    "stale_temporary",
    "writer_gone",
]

SECTIONS = ("trees", "native")
_ID = re.compile(r"[0-9a-f]{16,32}(?:-[0-9a-f]+)?\Z")
# Which temporaries killed writers left is the importer's rule (crates/ingot-importer/src/
# cache.rs), which it applies to the ``.tmp-*`` trees before it writes one: ``stale_temporary(name,
# age)``, over STALE_TEMPORARY_AFTER seconds old (younger ones may belong to a writer still at
# work), or over WRITER_GONE_AFTER with its writer gone (``writer_gone(name)``: the pid in
# ``<anything>-<pid>-<random>``; a writer in another PID namespace is not seen). What ``ingot
# build`` removes of a killed build goes by ``writer_gone`` too
# (:func:`ingot.build.interrupt.remove_stale`).


class CacheError(IngotError):
    """The cache cannot be listed or pruned."""


@dataclass
class CacheEntry:
    path: Path
    section: str  # trees, native, deps (installed dependencies), build (the build's entries)
    size: int  # bytes of its regular files
    files: int
    age: float  # seconds since the directory was made (renamed into place)
    temporary: bool
    in_use: bool


def root() -> Path:
    """The cache root the importer uses (without creating it)."""
    try:
        return Path(cache_root())
    except ValueError as error:
        raise CacheError(str(error), hint="set INGOT_CACHE_DIR to an absolute path") from None


def make_directories(path: Path, mode: int = 0o755) -> None:
    """``mkdir -p path``, safely where other users can write (``/tmp``): each missing directory
    is made relative to a checked descriptor of its parent, the parents it makes ``0755`` at most
    whatever the umask, ``path`` itself with ``mode``; CacheError when ``path`` or a directory
    above it is, or could be replaced by, another user's (:func:`ingot._ingot.make_cache_dirs`,
    the extraction cache's rule)."""
    try:
        make_cache_dirs(path, mode)
    except ValueError as error:
        raise CacheError(
            str(error),
            hint="set INGOT_CACHE_DIR (or INGOT_RUNTIMES) to a directory only you (or root) can "
            "write, and whose parents too",
        ) from None


def build_root() -> Path:
    """``<cache>/build``: the build cache's directory (:mod:`ingot.build.archive.buildcache`),
    not created here."""
    return root() / "build"


def check_private(
    path: Path,
    what: str = "the cache",
    fallback: str = "the importer refuses such a cache too",
) -> None:
    """CacheError unless ``path`` is a directory of this user that others cannot write."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise CacheError(
            f"{path} ({what}) is not a private directory of this user",
            hint=f"fix its owner and mode (chmod 700) or set INGOT_CACHE_DIR; or {fallback}",
        )


def in_use(under: Path) -> set[Path]:
    """Paths below ``under`` that a process of this user has mapped or open."""
    prefix = str(under).rstrip("/") + "/"
    found: set[Path] = set()
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    at = line.find(prefix)
                    if at >= 0:
                        found.add(Path(line[at:].rstrip("\n").removesuffix(" (deleted)")))
        except OSError:
            pass
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(prefix):
                    found.add(Path(target))
        except OSError:
            pass
    return found


def _measure(path: Path) -> tuple[int, int]:
    size = files = 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                size += info.st_size
                files += 1
    return size, files


def list_cache(cache: Path | None = None) -> list[CacheEntry]:
    """The trees and native directories of the cache (and temporary ones), oldest first."""
    cache = cache or root()
    if not cache.exists():
        return []
    check_private(cache)
    used = in_use(cache)
    now = time.time()
    entries = []
    for section in SECTIONS:
        parent = cache / section
        if not parent.is_dir():
            continue
        check_private(parent)
        for child in sorted(parent.iterdir()):
            temporary = child.name.startswith(TEMPORARY_PREFIX)
            if not (temporary or _ID.match(child.name)) or child.is_symlink() or not child.is_dir():
                continue  # not the importer's: left alone
            size, files = _measure(child)
            entries.append(
                CacheEntry(
                    child,
                    section,
                    size,
                    files,
                    now - child.lstat().st_mtime,
                    temporary,
                    any(path == child or child in path.parents for path in used),
                )
            )
    entries += _build_entries(cache, now)
    return sorted(entries, key=lambda entry: -entry.age)


def _build_entries(cache: Path, now: float, older_than: float | None = None) -> list[CacheEntry]:
    """The build cache (:mod:`ingot.build.archive.buildcache`): each directory of installed
    dependencies, and the entries store as one; with ``older_than`` (seconds), only what was not
    used for that long (of the store, the entries themselves, with temporary files a writer
    left), found for removal."""
    build = cache / "build"  # (build_root's, under this cache)
    found: list[CacheEntry] = []
    deps = build / "deps"
    if deps.is_dir():
        check_private(deps)
        for child in sorted(deps.iterdir()):
            if child.is_symlink() or not child.is_dir():
                continue
            temporary = not _ID.match(child.name)
            age = now - child.lstat().st_mtime
            limit = max(older_than or 0.0, STALE_TEMPORARY_AFTER if temporary else 0.0)
            if older_than is None or age >= limit:
                size, files = _measure(child)
                found.append(CacheEntry(child, "deps", size, files, age, temporary, False))
    entries = build / "entries"
    if entries.is_dir():
        check_private(entries)
        size = files = 0
        oldest = 0.0
        for path, info in _entry_files(entries):
            age = now - info.st_mtime
            if older_than is None or age >= older_than or _legacy(entries, path):
                size += info.st_size
                files += 1
                oldest = max(oldest, age)
        if files or older_than is None:
            found.append(CacheEntry(entries, "build", size, files, oldest, False, False))
    return found


def _legacy(entries: Path, path: Path) -> bool:
    """Whether ``path`` is a file of an earlier ingot's store (a file per entry, in
    subdirectories), which no build reads now."""
    return path.parent != entries


def _entry_files(entries: Path) -> list[tuple[Path, os.stat_result]]:
    """The entries store's files: its segments (``*.seg``: crates/ingot-importer/src/
    buildcache.rs), and what an earlier ingot's store left in subdirectories."""
    found = []
    for path in sorted(entries.iterdir()):
        inner = sorted(path.iterdir()) if path.is_dir() and not path.is_symlink() else [path]
        for file in inner:
            try:
                info = file.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((file, info))
    return found


def _prune_entries(entries: Path, older_than: float) -> None:
    """Removes the entries store's segments not used for ``older_than`` seconds, and an earlier
    ingot's store."""
    now = time.time()
    for path, info in _entry_files(entries):
        if now - info.st_mtime >= older_than or _legacy(entries, path):
            try:
                path.unlink()
            except OSError:
                continue
    for path in entries.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def prune(
    older_than_days: float = 30.0, *, cache: Path | None = None, dry_run: bool = False
) -> list[CacheEntry]:
    """Removes (unless ``dry_run``) the cache's trees and native directories older than
    ``older_than_days`` that no process uses, and temporary directories whose writing process
    is gone (or over an hour old); returns what was (or would be) removed."""
    if older_than_days < 0:
        raise CacheError(f"--older-than {older_than_days} is negative")
    removed = []
    cache = cache or root()
    for entry in _build_entries(cache, time.time(), older_than_days * 86400.0):
        if not dry_run:
            if entry.section == "build":
                _prune_entries(entry.path, older_than_days * 86400.0)
            else:
                shutil.rmtree(entry.path)
        removed.append(entry)
    for entry in list_cache(cache):
        if entry.section in ("deps", "build"):
            continue
        if entry.in_use:
            continue
        if entry.temporary:
            if not stale_temporary(entry.path.name, entry.age):
                continue
        elif entry.age < older_than_days * 86400.0:
            continue
        if not dry_run:
            shutil.rmtree(entry.path)
        removed.append(entry)
    return removed
