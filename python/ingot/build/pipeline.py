"""``ingot build``: an application, its dependencies and the standard library, cast into one
executable (the launcher binary followed by an archive) or, for ``--archive-only``, an archive.

    from ingot.build.pipeline import build
    from ingot.build.resolve.settings import Request
    from ingot.build.resolve.spec import resolve
    result = build(resolve(Request(source="examples/hello", archive_only=True), print))

:func:`ingot.build.resolve.spec.resolve` turns the request into one frozen spec; :func:`build` runs the
stages over it, each taking the spec and returning its product:

1. **stage** (:mod:`ingot.build.stages.staging`): the app's code copied, the project and its dependencies
   installed by pip (wheels only) into a staging directory: the import roots;
2. **select** (:mod:`ingot.build.stages.selection`): which packages need real files, and what the build
   warns about;
3. **pack** (:mod:`ingot.build.archive.pack`): what the app can reach, compiled and written into an
   archive with ``__ingot__/launch.json``, which tells the launcher what to run;
4. **check** (:mod:`ingot.build.stages.check`): the archive holds what launch.json runs;
5. **assemble** (:mod:`ingot.build.stages.assemble`): launcher + archive, written atomically; then the
   oldest glibc the result runs on.

The archive holds no timestamps, temporary paths or the project's path (pip's
``direct_url.json`` is left out): the same inputs give the same bytes, wherever the project is
and whatever ``SOURCE_DATE_EPOCH`` says (pip still sees it, for wheels it builds).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ingot.build.archive.buildcache import BuildMemo, open_memo
from ingot.build.archive.pack import PackResult, stdlib_pool
from ingot.build.interrupt import remove_stale, scratch_directory
from ingot.build.progress import Ticker
from ingot.build.resolve.launcher import read_launcher
from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say
from ingot.build.stages.assemble import assemble, prepare_output
from ingot.build.stages.check import check_archive, glibc_verdict
from ingot.build.stages.packing import base_options, pack_archive
from ingot.build.stages.selection import select
from ingot.build.stages.staging import stage
from ingot.elf import GlibcFloor

__all__ = ["BuildResult", "build"]


@dataclass
class BuildResult:
    output: Path
    size: int
    pack: PackResult
    run: dict[str, str]
    launcher: Path | None
    launcher_size: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    floor: GlibcFloor | None = None  # of an executable: the oldest glibc it runs on
    notes: list[str] = field(default_factory=list)  # what to tell the user at the end


def build(spec: Spec, say: Say = lambda message: None, ticker: Ticker | None = None) -> BuildResult:
    """Builds ``spec``; raises IngotError subclasses on problems to fix. ``ticker`` shows the
    long phases as they go (:mod:`ingot.build.progress`)."""
    started = time.perf_counter()
    for note in spec.plan.notes:
        say(note)
    prepare_output(spec)
    remove_stale(spec.plan.output)  # (what killed builds left beside it and in TMPDIR)
    head = read_launcher(spec.target.launcher, spec.target.launcher_sha256, spec.target.machine)
    memo = open_memo(spec.cache_root)
    try:
        return _build(spec, head, memo, started, say, ticker)
    finally:
        memo.flush()  # what the build derived is kept, even when it failed later


def _build(
    spec: Spec, head: bytes, memo: BuildMemo, started: float, say: Say, ticker: Ticker | None
) -> BuildResult:
    # (named with the pid: remove_stale knows it for a killed build's once this one is gone)
    with scratch_directory("ingot-build-", _remove_staging) as staging:
        return _build_in(spec, head, memo, started, say, ticker, staging)


def _remove_staging(staging: Path) -> None:
    """Removes the staging directory, again while a child that an interrupt is ending (pip, a
    pool's worker) still writes into it, for a few seconds at most."""
    deadline = time.monotonic() + 10.0
    while staging.exists() and time.monotonic() < deadline:
        shutil.rmtree(staging, ignore_errors=True)
        if staging.exists():
            time.sleep(0.1)


def _build_in(
    spec: Spec,
    head: bytes,
    memo: BuildMemo,
    started: float,
    say: Say,
    ticker: Ticker | None,
    staging: Path,
) -> BuildResult:
    # The standard library's modules are compiled and scanned meanwhile (pip uses one CPU).
    base = base_options(spec, memo)  # (the pack options the spec alone gives, made once)
    early = stdlib_pool(base)
    try:
        if ticker:
            ticker.phase("installing with pip")
        roots = stage(spec, staging, say, memo)
        if ticker:
            ticker.done()
        selection = select(spec, roots, staging / "prepared", say, base.stdlib_layout, memo)
        archive = staging / "app.ingot"
        packed = pack_archive(spec, base, roots, selection, archive, say, ticker, early)
    finally:
        early.stop()  # (ended already, unless something failed)
    check_archive(spec, packed, roots)
    size = assemble(spec, head, archive, say)
    floor, notes, warnings = glibc_verdict(spec, packed, head)
    memo.flush()
    _say_cache(memo.stats(), say)
    return BuildResult(
        output=spec.plan.output,
        size=size,
        pack=packed,
        run=dict(spec.plan.run),
        launcher=spec.target.launcher,
        launcher_size=len(head),
        seconds=time.perf_counter() - started,
        warnings=[*selection.warnings, *packed.warnings, *warnings],
        floor=floor,
        notes=notes,
    )


def _say_cache(stats: dict[str, int], say: Say) -> None:
    """One line on what the build cache gave (and any damaged entry it found)."""
    if not stats:
        return
    line = f"build cache: {stats['reused']} of {stats['looked']} results reused"
    if stats["damaged"]:
        line += f"; {stats['damaged']} damaged entries found and computed again"
    if stats["failed"]:
        line += f"; {stats['failed']} could not be written"
    say(line)
