"""The build cache: what a build derives from inputs that did not change, kept for the next.

A rebuild after an edit of the application's own code redoes only what that edit changed. Each
entry is keyed by everything its value depends on, so a build with the cache writes the same
bytes as a build without it (tested):

- the dependencies pip installed, for the same requirements (and requirement files' contents,
  or the lock's content and the files it chose), target Python and platforms, pip and pip's configuration (``PIP_*``, its configuration files):
  a directory under ``<cache>/build/deps/<key>``, with the hash of every file it holds, checked
  before each use. ``--refresh`` installs them again (an unpinned requirement's newer release);
- per module, by its content and name: the bytecode at the levels asked for, what it imports
  and the regular expressions it compiles, the names its strings hold, the files-policy scan,
  and what the reach analysis reads of a standard library module (with the answers it depended
  on);
- the import probe's answer, by the packages asked and the contents of the directories it
  imports them from;
- in the archive writer (Rust), by their bytes, level and dictionary: compressed blobs and the
  trained dictionary, which is trained without the application's own modules so that editing
  them leaves it, and every blob compressed with it, as it was.

Entries live under ``<cache>/build/entries`` (``ingot._ingot.BuildCache``: records appended to
a segment file per process that writes, each with its checksum; a damaged one is computed again,
never used). Keys start from a salt:
the interpreter's version and bytecode magic, ingot's version and the source of the build's own
modules, so a change of any of them misses every entry. ``ingot cache list`` shows the build
cache's size, ``ingot cache prune`` removes entries not used for ``--older-than`` days.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ingot import __version__
from ingot._ingot import BuildCache
from ingot.build.analysis.firstuse import imports_in_source

__all__ = [
    "NO_CACHE",
    "BuildMemo",
    "cached_imports",
    "file_digest",
    "open_memo",
    "tree_digest",
]

T = TypeVar("T")

#: How many values of one :meth:`BuildMemo.with_present` key are kept.
VARIANTS = 4

#: Sections of ``<cache>/build``: the entries store, and the installed dependencies.
ENTRIES, DEPS = "entries", "deps"


def _salt() -> bytes:
    """What every key depends on: the interpreter and ingot, its build code included."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (sys.version, importlib.util.MAGIC_NUMBER.hex(), __version__):
        digest.update(part.encode() + b"\0")
    build = Path(__file__).resolve().parents[1]  # ingot/build
    ingot = build.parent
    for path in sorted([*build.rglob("*.py"), ingot / "elf.py", ingot / "stdlib.py"]):
        digest.update(path.relative_to(ingot).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.digest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """The blake2b-128 of a file's bytes."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> :func:`file_digest` of each regular file under ``root`` (symbolic links
    as ``->target``), less ``__pycache__`` directories (which a build never reads)."""
    found: dict[str, str] = {}
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__")
        for name in sorted(
            [*names, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))]
        ):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                found[relative] = "->" + os.readlink(path)
            elif os.path.isfile(path):
                found[relative] = file_digest(path)
    return found


def open_memo(root: Path | None) -> BuildMemo:
    """The memo of the build cache at ``root`` (:data:`NO_CACHE` for None: ``--no-cache``), its
    directories made private if missing; CacheError if they are not this user's private
    directories (another user could put bytecode in an executable)."""
    if root is None:
        return NO_CACHE
    from ingot.cachedir import CacheError, make_directories

    # As the extraction cache's root: each directory made relative to a checked descriptor of its
    # parent, so that no other user can put one of theirs in its way (in /tmp, say) and then
    # entries, bytecode among them, where this build reads them.
    try:
        for path in (root.parent, root, root / ENTRIES, root / DEPS):
            make_directories(path, 0o700)
    except CacheError as error:
        raise CacheError(
            f"refusing the build cache: {error}",
            hint="set INGOT_CACHE_DIR to a directory only you (or root) can write and that no "
            "other user's directory holds, or build with --no-cache",
        ) from None
    return BuildMemo.open(root)


class _Recording:
    """A set whose membership answers are recorded (name -> answer)."""

    def __init__(self, inner: set[str]) -> None:
        self.inner = inner
        self.asked: dict[str, bool] = {}

    def __contains__(self, name: object) -> bool:
        answer = name in self.inner
        if isinstance(name, str):
            self.asked[name] = answer
        return answer


class BuildMemo:
    """Values computed once per key (:meth:`remember`), kept in the build cache's store; with no
    store (``--no-cache``), each is computed every time."""

    def __init__(
        self, store: BuildCache | None, salt: bytes | None = None, root: Path | None = None
    ) -> None:
        self.store = store
        #: The build cache's directory (``entries/``, ``deps/``); None without a store.
        self.root = root
        #: The counts of the build's other processes (ingot.build.archive.prefetch): what they put in
        #: the store is a hit when the packer reads it, but nothing was reused.
        self.elsewhere: dict[str, int] = {}
        self.salt = salt if salt is not None else (_salt() if store is not None else b"")

    @classmethod
    def open(cls, root: Path) -> BuildMemo:
        """The memo of the store under ``root`` (created private if missing)."""
        return cls(BuildCache(str(root / ENTRIES)), root=root)

    def key(self, kind: str, *parts: bytes | str) -> str:
        digest = hashlib.blake2b(self.salt + kind.encode() + b"\0", digest_size=16)
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
        return digest.hexdigest()

    def remember(
        self,
        kind: str,
        parts: Iterable[bytes | str],
        compute: Callable[[], T],
        keep: Callable[[T], bool] = lambda value: True,
    ) -> T:
        """The value of ``compute()``, taken from the store when it has one for ``parts``
        (kept only if ``keep(value)``). Values are what :mod:`marshal` writes (bytes, str,
        numbers, containers of them)."""
        if self.store is None:
            return compute()
        key = self.key(kind, *parts)
        found = self._get(key)
        if found is not _MISSING:
            return found  # type: ignore[no-any-return]
        value = compute()
        if keep(value):
            self._put(key, value)
        return value

    def _get(self, key: str) -> Any:
        assert self.store is not None
        raw = self.store.get(key)
        if raw is None:
            return _MISSING
        try:
            return marshal.loads(raw)
        except (EOFError, ValueError, TypeError):
            return _MISSING  # (the store's checksum held: another salt's format)

    def _put(self, key: str, value: Any) -> None:
        assert self.store is not None
        self.store.put(key, marshal.dumps(value))

    def with_present(
        self,
        kind: str,
        parts: Iterable[bytes | str],
        present: set[str],
        compute: Callable[[Any], T],
    ) -> T:
        """Like :meth:`remember` for a ``compute(present)`` that asks whether names are in the
        set ``present``: the value is kept with the answers it got, and taken again only when
        ``present`` gives the same answers. Up to :data:`VARIANTS` values with different
        answers are kept under one key (the standard library's pool, started before pip, and the
        packer ask with different sets: one value each)."""
        if self.store is None:
            return compute(present)
        key = self.key(kind, *parts)
        found = self._get(key)
        variants = [
            variant
            for variant in (found if isinstance(found, list) else [])
            if isinstance(variant, tuple) and len(variant) == 2 and isinstance(variant[1], dict)
        ]
        for value, asked in variants:
            if all((name in present) == answer for name, answer in asked.items()):
                return value  # type: ignore[no-any-return]
        recording = _Recording(present)
        value = compute(recording)
        self._put(key, [*variants[-(VARIANTS - 1) :], (value, recording.asked)])
        return value

    def stats(self) -> dict[str, int]:
        """The store's counts, with the build's other processes' damaged entries and failed
        writes; ``reused`` of ``looked`` (up): the hits on entries earlier builds wrote, of the
        lookups, by any of this build's processes."""
        if self.store is None:
            return {}
        counts = dict(self.store.stats())
        other = self.elsewhere
        counts["reused"] = counts["hits"] - counts["fresh"]
        counts["reused"] += other.get("hits", 0) - other.get("fresh", 0)
        counts["looked"] = counts["hits"] + counts["misses"]
        counts["looked"] += other.get("hits", 0) + other.get("misses", 0)
        for name in ("damaged", "failed"):
            counts[name] += other.get(name, 0)
        return counts

    def flush(self) -> None:
        """Waits until the store has written every entry put so far (a thread of its own
        writes them)."""
        if self.store is not None:
            self.store.flush()


_MISSING = object()

#: The memo of a build without the cache.
NO_CACHE = BuildMemo(None)


def cached_imports(
    memo: BuildMemo, source: bytes, name: str, is_package: bool, as_main: bool = False
) -> dict[str, list[str]]:
    """:func:`ingot.build.analysis.firstuse.imports_in_source`, through the build cache."""
    kind = "package" if is_package else "module"
    return memo.remember(
        "imports",
        [name, f"{kind} as __main__" if as_main else kind, source],
        lambda: imports_in_source(source, name, is_package, as_main),
    )
