"""What :func:`ingot.build.archive.pack.pack` is told to write: :class:`PackOptions`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingot.build.archive.buildcache import NO_CACHE, BuildMemo
from ingot.build.archive.prefetch import Prefetch
from ingot.build.archive.sbom import Facts
from ingot.build.archive.stdlib_layout import Layout, running
from ingot.build.progress import Ticker
from ingot.build.resolve.environment import Environment, snapshot
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES

__all__ = ["PackOptions"]


@dataclass(kw_only=True)
class PackOptions:
    """What :func:`pack` writes; each field's default is ``ingot pack``'s. The interpreter packed
    for and the build's environment have none: a build gives its target's and the environment
    it was resolved in; :meth:`here` takes the running interpreter's and this process's, now."""

    #: Carry the standard library (filtered by ``stdlib_exclude``).
    stdlib: bool = True
    #: Import roots to carry; earlier ones win a name clash, like earlier ``sys.path`` entries.
    directories: Iterable[str | os.PathLike[str]] = ()
    stdlib_exclude: Iterable[str] = DEFAULT_STDLIB_EXCLUDES
    #: Modules are compiled by the running interpreter at each of these levels.
    optimize_levels: Iterable[int] = (0,)
    #: Modules keep their source too.
    include_source: bool = True
    #: zstd level of the blobs a start does not read (None: everything stored as is).
    compression_level: int | None = None
    #: zstd level of those over 64 KiB the dictionary does not serve (None: the same).
    large_compression_level: int | None = None
    #: zstd level of the native images of 64 KiB or more a start reads (None: stored as is).
    native_compression_level: int | None = None
    #: The bytecode a start reads is compressed too (when compressing), not read in place.
    compress_start: bool = False
    #: Extension modules and shared libraries keep their debug sections.
    keep_debug_info: bool = False
    #: Globs on dotted names: modules and packages of ``directories`` left out.
    exclude: Iterable[str] = ()
    #: The interpreter packed for: its standard library and its extension modules' suffixes
    #: (the running one's, or a cross build's target runtime's).
    stdlib_layout: Layout
    #: The environment of the build, read when it was resolved: what the processes it starts
    #: get, ``LD_LIBRARY_PATH`` for the shared libraries.
    environment: Environment
    #: Data files to add (path -> content), e.g. ``__ingot__/launch.json``.
    extra_files: dict[str, bytes] | None = None
    #: Top-level packages under the ``files`` policy: their sources, data files and extension
    #: modules are also listed in a tree manifest, from which the importer materializes them into
    #: the extraction cache on first import.
    files_packages: Iterable[str] = ()
    #: Files made for the build (a files package's preparation), carried as data files as if
    #: they were in one of ``directories``: (the directory, the name relative to it, the file).
    added_files: Iterable[tuple[str | os.PathLike[str], str, Path]] = ()
    #: Add the table of regular expressions the modules compile (:mod:`ingot.build.analysis.regexes`).
    precompile_regexes: bool = True
    #: The modules an executable runs: what a start is expected to read goes first in the data
    #: region (:mod:`ingot.build.analysis.firstuse`); None leaves the archive in name order.
    entry_modules: Iterable[str] | None = None
    #: The module the executable runs as ``__main__`` (a script; ``python -m``'s module or
    #: package): its ``if __name__ == "__main__":`` block is followed when pruning.
    main_module: str | None = None
    #: The application's own code (and its top-level data directories, a script's
    #: ``templates/``): a module there that does not compile raises
    #: :class:`ingot.errors.CompileError` (elsewhere, in dependencies, it is left out with a
    #: warning).
    strict_directories: Iterable[str | os.PathLike[str]] = ()
    #: When pruning, import the packages with native code that are reached, in a sandbox, to
    #: see what their C code imports (:func:`ingot.build.archive.probe.import_probe`); false:
    #: run nothing of them, and read that from their binaries' strings alone.
    run_dependencies: bool = True
    #: Carry only what the entry modules, the application's own code and the launcher can reach
    #: (:mod:`ingot.build.archive.reach`); :attr:`PackResult.left_out` says what went.
    prune: bool = False
    #: Patterns carried anyway when pruning.
    keep: Iterable[str] = ()
    #: Receives one line per step.
    progress: Callable[[str], None] | None = None
    #: Shows the long phases as they go (:mod:`ingot.build.progress`).
    ticker: Ticker | None = None
    #: What earlier builds derived from the same inputs (:mod:`ingot.build.archive.buildcache`).
    cache: BuildMemo = NO_CACHE
    #: A pool already at work on the standard library's modules (started while pip installed:
    #: :func:`stdlib_pool`); this pack's own pool leaves them to it.
    stdlib_pool: Prefetch | None = None
    #: Write the bill of materials (:mod:`ingot.build.archive.sbom`) with these facts of the
    #: build; None: none.
    sbom: Facts | None = None

    @classmethod
    def here(cls, **fields: Any) -> PackOptions:
        """Options for packing for the running interpreter, in this process's environment as it
        is now (``ingot pack``; the API's :func:`pack` without options), with ``fields`` set."""
        fields.setdefault("stdlib_layout", running())
        fields.setdefault("environment", snapshot())
        return cls(**fields)
