"""The modules' bytecode and scans, computed by several processes ahead of the packer.

Compiling a module, and scanning its source for imports and regular expressions, is Python
work under one GIL: on a machine with several CPUs, :class:`Prefetch` has a pool of processes do
it for the modules a build carries, each putting its results in the build cache under the keys
the packer then looks up (:func:`compiled`, :func:`patterns` and
:func:`ingot.build.archive.buildcache.cached_imports`, shared by both). The packer then takes them from
the cache as it would a previous build's; the archive is the same bytes. Without the cache
(``--no-cache``) or with one CPU, nothing is done here.

The pool's processes are fresh interpreters (not forks of the builder, whose progress thread
may hold locks, nor multiprocessing's children, which import the caller's ``__main__`` again):
each gets its share of the modules as JSON and shares nothing with the builder but the cache's
directory.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ingot.build.analysis.regexes import patterns_in_source
from ingot.build.archive.buildcache import BuildMemo, cached_imports
from ingot.build.archive.bytecode import compile_module
from ingot.build.archive.codestrings import code_strings
from ingot.build.archive.collect import Item
from ingot.build.archive.import_tables import in_test_package
from ingot.build.archive.reach import source_strings, stdlib_facts

__all__ = ["Prefetch", "compiled", "patterns"]

#: Fewer modules than this are compiled in the builder itself: a pool costs a fraction of a
#: second to start.
MINIMUM = 150


def compiled(
    memo: BuildMemo,
    content: bytes,
    filename: str,
    levels: tuple[int, ...],
    before: Callable[[], None] = lambda: None,
) -> Any:
    """:func:`ingot.build.archive.bytecode.compile_module`, through the build cache (``before()`` is
    called first when it has to compile)."""

    def compile_() -> Any:
        before()
        return compile_module(content, filename, levels)

    return memo.remember("bytecode", [filename, ",".join(map(str, levels)), content], compile_)


def patterns(memo: BuildMemo, source: bytes) -> Any:
    """:func:`ingot.build.analysis.regexes.patterns_in_source`, through the build cache."""
    return memo.remember("patterns", [source], lambda: patterns_in_source(source))


#: What each process runs: this ingot's code from the directory given, then :func:`serve`.
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from ingot.build.archive.prefetch import serve; serve()"


def serve() -> None:
    """A process of the pool: computes the jobs given as JSON (a line on stdin) into the build
    cache. First, when the builder is to find what the application reaches (``present``
    given), what that reads of each module (its imports and strings; of a standard-library
    module, its syntax tree's facts), ahead of the builder, which takes them from the cache as
    it gets there; then the bytecode and the other scans, writing a line per job done. A second
    line, once the builder knows what it carries, names the modules left out: their jobs are
    skipped (and the first part ends)."""
    from ingot._ingot import BuildCache

    told = _Told()
    given = json.loads(told.line(wait=True) or b"{}")
    store = BuildCache(given["root"], since=given["since"])
    memo = BuildMemo(store, bytes.fromhex(given["salt"]))
    warnings.simplefilter("ignore")
    seen: set[str] = set()
    if given["present"] is not None:
        seen = _ahead(memo, told, given["jobs"], set(given["present"]))
    later = []
    for job in given["jobs"]:
        if not _job(memo, told, given, job, seen):
            later.append(job)
    if later:
        told.wait()
        for job in later:
            _job(memo, told, given, job, set())
    memo.flush()
    sys.stdout.write("stats " + json.dumps(memo.stats()) + "\n")


class _Later(Exception):
    """A module to compile once the builder has said whether it carries it."""


def _ahead(memo: BuildMemo, told: _Told, jobs: list[Any], present: set[str]) -> set[str]:
    """What the reach analysis reads of each module, computed ahead of it (test suites last:
    the analysis leaves them out unless imported; numpy's are most of what it leaves out),
    until the builder has decided. Returns the modules whose results were all in the cache: an
    earlier build analysed them."""
    seen = set()
    assert memo.store is not None
    for path, _, name, is_package, stdlib in sorted(jobs, key=lambda job: in_test_package(job[2])):
        if told.skipped() is not None:
            break
        misses = memo.store.stats()["misses"]
        try:
            content = Path(path).read_bytes()
            cached_imports(memo, content, name, is_package)
            package = name if is_package else name.rpartition(".")[0]
            source_strings(memo, content, package, stdlib)
            code_strings(memo, content)
            if stdlib:
                stdlib_facts(memo, content, name, is_package, present)
        except (OSError, SyntaxError, ValueError):
            continue
        if memo.store.stats()["misses"] == misses:
            seen.add(name)
    return seen


def _job(
    memo: BuildMemo, told: _Told, given: dict[str, Any], job: list[Any], seen: set[str]
) -> bool:
    """Compiles and scans one module unless the builder left it out; False (nothing done) for
    one of ``seen`` whose bytecode is not in the cache while the builder has not yet said what
    it carries: an earlier build analysed it and did not carry it, most likely."""
    path, filename, name, is_package, _ = job
    want_patterns, want_imports = given["scans"]

    def hold() -> None:
        if name in seen and told.skipped() is None:
            raise _Later

    try:
        if name not in (told.skipped() or ()):
            content = Path(path).read_bytes()
            compiled(memo, content, filename, tuple(given["levels"]), hold)
            if want_patterns:
                patterns(memo, content)
            if want_imports:
                cached_imports(memo, content, name, is_package)
    except _Later:
        return False
    except (OSError, SyntaxError, ValueError):
        pass  # the packer meets it again, and says so
    sys.stdout.write("1\n")
    sys.stdout.flush()
    return True


class _Told:
    """What the builder tells a process of the pool on its stdin (read unbuffered, so that
    ``select`` sees what is left): a line of jobs, then a line of the modules to skip."""

    def __init__(self) -> None:
        self.pending = b""
        self.skip: set[str] | None = None

    def line(self, wait: bool) -> bytes | None:
        """The next line (``b""`` at the end of stdin); None if ``wait`` is false and it has
        not come whole yet."""
        while b"\n" not in self.pending:
            if not wait and not select.select([0], [], [], 0)[0]:
                return None
            chunk = os.read(0, 1 << 16)
            if not chunk:
                line, self.pending = self.pending, b""
                return line
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def wait(self) -> None:
        """Waits until the builder has said what it carries (or closed stdin)."""
        if self.skip is None:
            line = self.line(wait=True) or b""
            self.skip = set(json.loads(line)["skip"]) if line.strip() else set()

    def skipped(self) -> set[str] | None:
        """The modules to skip, once told (None before)."""
        if self.skip is None:
            line = self.line(wait=False)
            if line is not None:
                self.skip = set(json.loads(line)["skip"]) if line.strip() else set()
        return self.skip


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Prefetch:
    """A pool at work (:meth:`start`), for :meth:`wait` to see through."""

    def __init__(
        self,
        children: list[subprocess.Popen[bytes]],
        jobs: int,
        shares: list[set[str]] | None = None,
    ) -> None:
        self.children = children
        self.jobs = jobs
        self.shares = shares or []  # the modules each process was given
        self.stats: dict[str, int] = {}  # the pool's processes' (BuildCache.stats), summed

    def carry(self, carried: set[str]) -> None:
        """Tells the pool which modules the build carries (once the reach analysis has decided):
        the others are skipped."""
        for child, share in zip(self.children, self.shares):
            message = {"skip": sorted(share - carried)}
            self._tell(child, json.dumps(message).encode() + b"\n")

    @staticmethod
    def _tell(child: subprocess.Popen[bytes], line: bytes) -> None:
        """Writes ``line`` to ``child``'s stdin, then closes it (a child that ended is let be)."""
        if child.stdin is None or child.stdin.closed:
            return
        try:
            child.stdin.write(line)
            child.stdin.close()
        except OSError:
            pass

    @classmethod
    def start(
        cls,
        items: Iterable[Item],
        memo: BuildMemo,
        levels: tuple[int, ...],
        scans: tuple[bool, bool],
        reach: tuple[set[str], Callable[[Item], bool]] | None = None,
        spare: int = 0,
    ) -> Prefetch:
        """Starts compiling and scanning ``items``' modules (``scans``: for regular
        expressions, for imports), in their order, in one process per CPU (up to 8) into
        ``memo``'s cache. No process without the cache, with one CPU or few modules. With
        ``reach`` (the modules present, and which items are the standard library's), what the
        reach analysis reads is computed first (:func:`serve`). ``spare``: CPUs left to other
        work (at least one process remains).

        One per CPU although the builder works on meanwhile: with one CPU left to the builder,
        the pool was still at work after it (httpie on 2 CPUs: 2.7 s waited for it, the build
        0.9 s longer)."""
        stdlib = reach[1] if reach else lambda item: False
        jobs = [
            (
                str(item.path),
                item.relpath or item.name,
                item.name,
                item.kind == "package",
                stdlib(item),
            )
            for item in items
            if item.kind in ("module", "package") and item.path is not None
        ]
        cpus = _cpus()
        if memo.store is None or cpus < 2 or len(jobs) < MINIMUM:
            return cls([], 0)
        workers = max(1, min(cpus - spare, 8))
        # The directory holding this ingot package, not resolved: a build under a runtime has a
        # directory of links with the runtime's extension module (ingot.build.under).
        here = str(Path(os.path.abspath(__file__)).parents[3])
        children: list[subprocess.Popen[bytes]] = []
        shares: list[set[str]] = []  # each process's modules
        try:
            for share in range(workers):
                child = subprocess.Popen(
                    [sys.executable, "-I", "-c", _CHILD, here],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
                children.append(child)
                mine = jobs[share::workers]
                given = {
                    "root": str(memo.store.root),
                    "salt": memo.salt.hex(),
                    "since": memo.store.since,  # (hits on what this build wrote: not reused)
                    "levels": list(levels),
                    "scans": list(scans),
                    "present": sorted(reach[0]) if reach else None,
                    "jobs": mine,
                }
                assert child.stdin is not None
                child.stdin.write(json.dumps(given).encode() + b"\n")
                child.stdin.flush()
                shares.append({job[2] for job in mine})
        except OSError:
            cls(children, 0).stop()
            return cls([], 0)
        return cls(children, len(jobs), shares)

    def wait(self, advance: Callable[[int], None] = lambda count: None) -> int:
        """Waits for the pool to finish (``advance`` counts the jobs done); returns how many
        processes worked (0: none, the packer does it all)."""
        finished = False
        for child in self.children:
            self._tell(child, b"")  # (nothing to skip, if not told)
        try:
            with selectors.DefaultSelector() as selector:
                for child in self.children:
                    assert child.stdout is not None
                    selector.register(child.stdout, selectors.EVENT_READ)
                open_outputs = len(self.children)
                partial: dict[int, bytes] = {}
                while open_outputs:
                    for key, _ in selector.select():
                        chunk = os.read(key.fd, 4096)
                        if not chunk:
                            selector.unregister(key.fileobj)
                            open_outputs -= 1
                            continue
                        *lines, partial[key.fd] = (partial.get(key.fd, b"") + chunk).split(b"\n")
                        advance(lines.count(b"1"))
                        for line in lines:
                            if line.startswith(b"stats "):
                                for name, count in json.loads(line[6:]).items():
                                    self.stats[name] = self.stats.get(name, 0) + count
            finished = True
        except OSError:
            pass  # (the packer does what was not done)
        finally:
            self.stop(wait=finished)
        return len(self.children) if finished else 0

    def stop(self, wait: bool = False) -> None:
        """Ends the pool's processes (killed unless ``wait``: what a killed process half-wrote
        is never read)."""
        for child in self.children:
            try:
                child.wait(timeout=None if wait else 0)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None and not pipe.closed:
                    try:
                        pipe.close()
                    except OSError:
                        pass
