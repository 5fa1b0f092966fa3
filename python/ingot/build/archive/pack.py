"""Packing an archive: the standard library and directories of packages, compiled, with the
shared libraries their extension modules need.

    from ingot.build.archive.pack import pack
    result = pack("app.ingot", PackOptions.here(directories=["build/site"], optimize_levels=(0, 2)))
    print(result.counts, result.size, result.warnings)

:func:`collect_stdlib` and :func:`collect_directory` decide what goes in (:mod:`ingot.build.archive.collect`);
:func:`pack` reads, compiles and writes it. Problems the user must fix raise
:class:`~ingot.errors.IngotError`; problems that leave a usable archive (a module that does not
compile, a library that cannot be found) are warnings in the result. The same inputs on the same
interpreter give the same archive, byte for byte (see :mod:`ingot.build.archive.bytecode`).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ingot import elf
from ingot._ingot import (
    EXTENSION_KINDS,
    KIND_NAMESPACES,
    KINDS,
    ArchiveWriter,
)
from ingot.build.analysis.firstuse import BOOT_MODULES
from ingot.build.archive.collect import (
    MODULE_KINDS,
    TCL_SCRIPT_LIBRARIES,
    Collection,
    Item,
    collect_directory,
    collect_stdlib,
)
from ingot.build.archive.entries import Scan, add_item, read_item, tree_path
from ingot.build.archive.import_tables import NATIVE_IMPORTS
from ingot.build.archive.libraries import (
    add_libgcc_s,
    add_libraries,
    system_first_table,
)
from ingot.build.archive.options import PackOptions
from ingot.build.archive.prefetch import Prefetch
from ingot.build.archive.probe import cached_probe, import_probe
from ingot.build.archive.products import (
    Collected,
    Compiled,
    Linked,
    Plan,
    Reached,
    Tabled,
    pack_result,
)
from ingot.build.archive.reach import present_modules, reach
from ingot.build.archive.result import ManifestEntry, PackResult
from ingot.build.archive.sbom import SBOM, Carried, document
from ingot.build.archive.tables import (
    add_extra_files,
    add_first_use_list,
    add_regexes,
    ingot_tables,
)
from ingot.build.interrupt import scratch_directory
from ingot.build.resolve.settings import ZSTD_LEVELS
from ingot.build.resolve.target import Say
from ingot.build.sandbox import Sandbox
from ingot.elf import elf_machine
from ingot.errors import CompileError, PackError

__all__ = [
    "KINDS",
    "ManifestEntry",
    "PackOptions",
    "PackResult",
    "collect_directory",
    "collect_stdlib",
    "pack",
]


#: The largest zstd dictionary ``pack`` trains for the small modules' blobs when it compresses:
#: 64 KiB saved 14% of the compressed modules of a hello-world executable (docs/format.md).
DICTIONARY_SIZE = 64 << 10

# The entry kinds are the format's (``ingot_format::Kind``, exported by ``ingot._ingot``): KINDS
# lists their names in the order summaries print them, KIND_NAMESPACES gives each one's name space,
# NATIVE_KINDS those whose content is a native image and EXTENSION_KINDS the modules among them.


def _namespace(kind: str) -> str:
    return KIND_NAMESPACES[kind]


def _merge(
    collections: Iterable[Collection],
) -> tuple[dict[tuple[str, str], Item], list[str]]:
    """One item per name, the first collection's winning, as the first ``sys.path`` entry would;
    a regular package or module replaces a namespace package (namespace portions merge). Returns
    the plan and a warning for each item a clash left out."""
    plan: dict[tuple[str, str], Item] = {}
    warnings = []
    for collection in collections:
        for item in collection.items:
            key = (_namespace(item.kind), item.name)
            kept = plan.get(key)
            if kept is None or (kept.kind == "namespace-package" and item.kind != kept.kind):
                plan[key] = item
            elif item.kind != "namespace-package" and kept.path != item.path:
                warnings.append(
                    f"{item.path}: left out, {item.kind} {item.name!r} is already "
                    f"{kept.path} ({kept.kind})"
                )
    return plan, warnings


def _reach(
    collected: Collected,
    options: PackOptions,
    entry_modules: list[str] | None,
    say: Callable[[str], None],
) -> Reached:
    """What of ``collected`` the application can reach (:func:`ingot.build.archive.reach.reach`),
    with the imports read on the way. ``options.run_dependencies``: packages with native code
    are imported by the import probe (in a sandbox, :mod:`ingot.build.sandbox`), to see what
    their C code imports. Not pruning, all of it."""
    if not options.prune:
        return Reached(dict(collected.plan), {}, (), {}, frozenset(), {})
    plan, collections, stdlib = collected.plan, collected.collections, options.stdlib
    origin: dict[tuple[str, str], str] = {}
    for index, collection in enumerate(collections):
        where = (
            "stdlib"
            if stdlib and index == 0
            else "app"
            if os.path.realpath(collection.root) in collected.own
            else "env"
        )
        for item in collection.items:
            key = (_namespace(item.kind), item.name)
            if plan.get(key) is item:
                origin[key] = where
    roots = [*BOOT_MODULES, *NATIVE_IMPORTS, *(entry_modules or ())]
    paths = [
        str(collection.root)
        for index, collection in enumerate(collections)
        if not (stdlib and index == 0)
    ]
    sandbox = Sandbox(options.environment)
    probe = cached_probe(options.cache, paths, import_probe(paths, sandbox=sandbox))
    decided = reach(
        plan,
        origin,
        roots,
        keep=options.keep,
        probe=probe if options.run_dependencies else None,
        memo=options.cache,
        main=options.main_module,
    )
    if sandbox.confinement is not None:
        say(f"import probe: ran {sandbox.confinement.describe()}")
    if decided.unprobed:
        shown = ", ".join(decided.unprobed[:8])
        more = f" and {len(decided.unprobed) - 8} more" if len(decided.unprobed) > 8 else ""
        say(
            f"import probe: not run (--no-run-dependencies): what the native code of {shown}"
            f"{more} imports is read from the strings of its binaries alone (--include carries "
            "what that misses)"
        )
    return Reached(
        plan={key: item for key, item in plan.items() if key in decided.kept},
        imports=decided.imports,
        files_packages=(),
        left_out=decided.left_out,
        whole_only=frozenset(decided.whole_only),
        named_only=decided.named_only,
    )


def _top_level(item: Item) -> str | None:
    """The top-level package an item belongs to (None for shared libraries and dist-info)."""
    if item.kind in MODULE_KINDS:
        return item.name.split(".")[0]
    if item.kind == "data-file":
        return item.name.split("/")[0] if "/" in item.name else None
    return None


def _with_mypyc_groups(files_packages: list[str], plan: Plan) -> list[str]:
    """``files_packages`` and, for each mypyc-compiled group one of them belongs to, the group's
    shared library (``<hash>__mypyc``) and its other packages.

    The shared library holds the code of every module of the group and gives each the
    ``__file__`` of a file next to its own location: for those to be real files, the library and
    all the group's packages must be in the tree together."""
    if not files_packages:
        return files_packages
    groups = {
        item.name
        for item in plan.values()
        if item.kind == "extension-module"
        and item.name.endswith("__mypyc")
        and "." not in item.name
    }
    if not groups:
        return files_packages
    members: dict[str, set[str]] = {group: {group} for group in groups}
    for item in plan.values():
        if item.kind in EXTENSION_KINDS and item.name not in groups:
            try:
                image = read_item(item)
            except OSError:
                continue
            for group in groups:
                if group.encode() in image:  # the shim imports its group's library by name
                    members[group].add(item.name.split(".")[0])
    chosen = set(files_packages)
    for _group, names in sorted(members.items()):
        if names & chosen:
            chosen |= names
    return sorted(chosen)


def _check_options(
    output: Path,
    optimize_levels: Iterable[int],
    include_source: bool,
    compression_level: int | None,
) -> tuple[int, ...]:
    levels = tuple(sorted(set(optimize_levels)))
    if any(level not in (0, 1, 2) for level in levels):
        raise PackError(
            f"optimization levels are 0, 1 or 2, not {levels}",
            hint="0 keeps asserts and docstrings, 1 drops asserts, 2 also docstrings",
        )
    if not levels and not include_source:
        raise PackError(
            "modules would have neither bytecode nor source",
            hint="give at least one optimization level, or keep the source",
        )
    low, high = ZSTD_LEVELS
    if compression_level is not None and not low <= compression_level <= high:
        raise PackError(
            f"compression level {compression_level} is not a zstd level ({low} to {high})"
        )
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise PackError(
            f"cannot write {output}: directory {parent} does not exist",
            hint=f"create it first (mkdir -p {parent})",
        )
    if output.is_dir():
        raise PackError(f"cannot write {output}: it is a directory", hint="give a file name")
    return levels


def _scans(options: PackOptions) -> tuple[bool, bool]:
    """What a pool scans modules for (:meth:`Prefetch.start`): regular expressions, imports."""
    return (options.precompile_regexes, options.entry_modules is not None)


def stdlib_pool(options: PackOptions) -> Prefetch:
    """Starts a pool on the standard library's modules that :func:`pack` with ``options`` will
    collect, for a build to start before pip runs (pip leaves a CPU idle): what the reach
    analysis reads first, taking the standard library's and the built-in modules as the ones
    present (a fact that asked about another is computed again by the packer), then the
    bytecode. One process fewer than CPUs. :func:`pack` waits for it (given as
    ``options.stdlib_pool``); the caller stops it if the build fails before."""
    if not options.stdlib or options.cache.store is None:
        return Prefetch([], 0)
    collection = collect_stdlib(tuple(options.stdlib_exclude), options.stdlib_layout)
    levels = tuple(sorted(set(options.optimize_levels)))
    present = present_modules((_namespace(item.kind), item.name) for item in collection.items)
    return Prefetch.start(
        collection.items,
        options.cache,
        levels,
        _scans(options),
        (present, lambda item: True) if options.prune else None,
        spare=1,
    )


def _collect(
    options: PackOptions, own: AbstractSet[str], say: Callable[[str], None]
) -> list[Collection]:
    """The collections of ``options``' directories (each once, ``own`` ones with their top-level
    data) and, first, of the standard library."""
    collections: list[Collection] = []
    seen = set()
    for directory in options.directories:  # first: a bad directory fails before the long steps
        if os.path.realpath(directory) not in seen:
            seen.add(os.path.realpath(directory))
            collection = collect_directory(
                directory,
                exclude=tuple(options.exclude),
                top_level_data=os.path.realpath(directory) in own,
                layout=options.stdlib_layout,
            )
            collections.append(_with_added(collection, options.added_files))
            say(f"collected {len(collections[-1].items)} entries from {directory}")
            _check_machines(collections[-1], options.stdlib_layout.machine)
    if options.stdlib:  # the standard library comes first on sys.path: it wins name clashes
        collections.insert(0, collect_stdlib(tuple(options.stdlib_exclude), options.stdlib_layout))
        say(f"collected {len(collections[0].items)} entries from {collections[0].root}")
    return collections


def _with_added(
    collection: Collection, added: Iterable[tuple[str | os.PathLike[str], str, Path]]
) -> Collection:
    """``collection`` with the ``added`` files made for its directory (those of a name it
    lacks), as its data files."""
    root = os.path.realpath(collection.root)
    present = {item.name for item in collection.items if item.kind == "data-file"}
    extra = [
        Item("data-file", name, path)
        for directory, name, path in added
        if os.path.realpath(directory) == root and name not in present
    ]
    if not extra:
        return collection
    return dataclasses.replace(collection, items=[*collection.items, *extra])


def _check_machines(collection: Collection, wanted: str) -> None:
    """PackError if an extension module of ``collection`` is built for another architecture
    than ``wanted``, the one packed for (a wheel of this machine's in a cross build, or the
    reverse)."""
    for item in collection.items:
        if item.kind in EXTENSION_KINDS and item.path is not None:
            found = elf_machine(item.path)
            if found is not None and found != wanted:
                raise PackError(
                    f"{item.path} (the extension module {item.name}) is built for {found}, but "
                    f"the archive is for {wanted}",
                    hint=f"install {item.name.split('.')[0]}'s wheel for {wanted} (a project built "
                    "from source compiles for the build machine: publish or build a wheel for "
                    "the target), or leave it out with --exclude",
                )


def _own_modules(
    plan: Plan, collections: list[Collection], own: AbstractSet[str]
) -> list[tuple[str, str]]:
    """The plan's modules from the application's own directories: left out of the dictionary's
    training, so that an edit of them leaves the dictionary as it was (ingot.build.archive.buildcache)."""
    mine = {
        id(item)
        for collection in collections
        if os.path.realpath(collection.root) in own
        for item in collection.items
    }
    return [
        key
        for key, item in sorted(plan.items())
        if id(item) in mine and key[0] == _namespace("module")
    ]


def _files_packages(
    names: Iterable[str],
    plan: Plan,
    collected: set[str],
    say: Callable[[str], None],
) -> list[str]:
    """The top-level packages under the ``files`` policy (with their mypyc groups) that ``plan``
    holds; PackError for one that was never ``collected`` (a top-level name). One collected and
    then left out by the reach analysis (nothing imports it: a dependency's dependency that the
    built-in policy table names) is skipped, and said."""
    files_packages = sorted(set(names))
    present = {_top_level(item) for item in plan.values()}
    for package in files_packages:
        if package not in present and package not in collected:
            raise PackError(
                f"the files policy names package {package!r}, which is not in the archive",
                hint="give the top-level import name of a collected package",
            )
    absent = [package for package in files_packages if package not in present]
    if absent:
        say(f"files policy: {', '.join(absent)} left out (nothing imports it), so not materialized")
    return _with_mypyc_groups([name for name in files_packages if name in present], plan)


def _compile(
    writer: ArchiveWriter,
    linked: Linked,
    levels: tuple[int, ...],
    options: PackOptions,
    scan: Scan,
    files_packages: tuple[str, ...],
) -> Compiled:
    """Adds the plan's items to ``writer`` in name order: a manifest entry for each (or a warning
    for one left out), and the tree (path -> bytes) of each ``files`` package. Raises
    CompileError for a module of the application's own code that does not compile."""
    trees: dict[str, dict[str, bytes]] = {package: {} for package in files_packages}
    manifest: list[ManifestEntry] = []
    warnings: list[str] = []
    strict = [Path(directory).resolve() for directory in options.strict_directories]
    advance = options.ticker.advance if options.ticker else lambda count=1: None
    plan = linked.plan
    for key in sorted(plan):
        item = plan[key]
        advance()
        try:
            size, tree_bytes = add_item(
                writer,
                item,
                levels,
                options.include_source,
                options.keep_debug_info,
                scan,
                options.cache,
            )
        except SyntaxError as error:
            path = item.path
            if path is not None and any(path.is_relative_to(d) for d in strict):
                raise CompileError(path, item.name, error) from None
            warnings.append(
                f"{item.path}:{error.lineno}: does not compile ({error.msg}); "
                f"{item.kind} {item.name!r} left out"
            )
            continue
        except (OSError, ValueError) as error:
            warnings.append(f"{item.path}: {item.kind} {item.name!r} left out: {error}")
            continue
        manifest.append(ManifestEntry(item.kind, item.name, size))
        top = _top_level(item)
        if top is not None and top in trees and tree_bytes is not None:
            trees[top][tree_path(item, options.stdlib_layout.extension_suffixes[0])] = tree_bytes
    return Compiled(tuple(manifest), trees, scan, tuple(warnings))


def _write(
    writer: ArchiveWriter,
    output: Path,
    compression_level: int | None,
    say: Callable[[str], None],
    phase: Callable[..., None] = lambda name, total=None: None,
) -> int:
    """Trains the compression dictionary (when compressing) and writes the archive; returns its
    size."""
    if compression_level is not None:
        phase("training the zstd dictionary")
        trained = writer.train_dictionary(DICTIONARY_SIZE)
        if trained:
            say(f"trained a {trained}-byte zstd dictionary for the small modules' blobs")
    say(f"writing {len(writer)} entries to {output}")
    phase(f"writing {len(writer)} entries")
    try:
        return int(writer.write(str(output)))
    except (OSError, RuntimeError) as error:
        raise PackError(f"cannot write {output}: {error}") from error


def _start_pools(
    options: PackOptions,
    plan: Plan,
    collections: list[Collection],
    levels: tuple[int, ...],
) -> tuple[Prefetch, Prefetch]:
    """The pools that compile and scan the modules while the packer goes on: the one started
    before pip ran (``options.stdlib_pool``), and one for the rest, the application's and its
    packages' modules first (pruning leaves out mostly standard-library modules;
    :mod:`ingot.build.archive.prefetch`)."""
    stdlib_items = {id(item) for item in collections[0].items} if options.stdlib else set()
    early = options.stdlib_pool or Prefetch([], 0)
    prefetching = Prefetch.start(
        sorted(
            (item for item in plan.values() if not (early.jobs and id(item) in stdlib_items)),
            key=lambda item: id(item) in stdlib_items,
        ),
        options.cache,
        levels,
        _scans(options),
        (present_modules(plan), lambda item: id(item) in stdlib_items) if options.prune else None,
    )
    return early, prefetching


def _wait_for_pools(
    pools: tuple[Prefetch, Prefetch], options: PackOptions, say: Callable[[str], None]
) -> None:
    """Waits for the pools (their counts go to the build cache's statistics)."""
    ticker = options.ticker
    workers = 0
    for pool in pools:
        workers += pool.wait(ticker.advance) if ticker else pool.wait()
        for name, count in pool.stats.items():
            options.cache.elsewhere[name] = options.cache.elsewhere.get(name, 0) + count
    if options.cache.store is not None:
        options.cache.store.refresh()  # (what the pools appended since)
    if workers:
        processes = "process" if workers == 1 else "processes"
        jobs = sum(pool.jobs for pool in pools)
        say(f"compiled and scanned {jobs} modules in {workers} {processes}")


def _new_writer(
    options: PackOptions,
    plan: Plan,
    collections: list[Collection],
    own: AbstractSet[str],
) -> ArchiveWriter:
    writer = ArchiveWriter(
        bytecode_magic=importlib.util.MAGIC_NUMBER,
        python_version=sys.version_info[:2],
        compression_level=options.compression_level,
        large_compression_level=options.large_compression_level,
        native_compression_level=options.native_compression_level,
        compress_start=options.compress_start,
    )
    if options.cache.store is not None:
        writer.set_cache(options.cache.store)
    writer.set_untrained(_own_modules(plan, collections, own))
    return writer


def _carried(
    linked: Linked,
    collections: Iterable[Collection],
    native_needs: list[elf.VersionNeeds],
    system_first: dict[str, list[str]],
) -> Carried:
    """What the archive carries, for its bill of materials: the distributions (their METADATA),
    the shared libraries (where each was taken from, and which distribution's RECORD lists it;
    ``supplied``: those ingot itself carries, by name, with their package URL), what the native
    code needs of the target system."""
    plan, supplied = linked.plan, linked.supplied
    distributions = []
    owners: dict[str, str] = {}  # a file's path in its import root -> its *.dist-info
    for (_namespace, name), item in sorted(plan.items()):
        if item.kind != "dist-info-file" or item.path is None:
            continue
        directory, _, file = name.partition("/")
        if file == "METADATA":
            distributions.append((directory, item.path.read_bytes()))
        elif file == "RECORD":
            lines = item.path.read_text(errors="replace").splitlines()
            owners.update((row[0], directory) for row in csv.reader(lines) if row)
    libraries = []
    for (namespace, name), item in sorted(plan.items()):
        if namespace != "libraries" or item.path is None:
            continue
        root = next((c.root for c in collections if item.path.is_relative_to(c.root)), None)
        origin = item.path.relative_to(root).as_posix() if root else str(item.path)
        origin = supplied.get(name, origin)
        digest = hashlib.sha256(item.path.read_bytes()).hexdigest()
        libraries.append((name, owners.get(origin) if root else None, origin, digest))
    return Carried(
        python=platform.python_version(),  # (a cross build's target runtime's release too)
        distributions=distributions,
        libraries=libraries,
        native_needs=native_needs,
        system_first=system_first,
        desktop_libraries=dict(linked.desktop_libraries),
        plugin_needs=dict(linked.plugin_needs),
    )


def _collected(options: PackOptions, own: frozenset[str], say: Callable[[str], None]) -> Collected:
    """The first step: what the directories and the standard library hold, merged."""
    collections = _collect(options, own, say)
    plan, clashes = _merge(collections)
    return Collected(
        collections=tuple(collections),
        plan=plan,
        names=frozenset(top for item in plan.values() if (top := _top_level(item)) is not None),
        own=own,
        warnings=(*(w for collection in collections for w in collection.warnings), *clashes),
    )


def _with_files_packages(
    reached: Reached, collected: Collected, options: PackOptions, say: Callable[[str], None]
) -> Reached:
    """``reached`` with the top-level packages under the files policy that it holds (tkinter
    too, when it carries Tcl's script library)."""
    names = list(options.files_packages)
    tcl = f"tkinter/{TCL_SCRIPT_LIBRARIES[0]}/init.tcl"
    if ("files", tcl) in reached.plan and "tkinter" not in names:
        say("files policy: tkinter (Tcl and Tk read their script libraries by path)")
        names.append("tkinter")
    chosen = _files_packages(names, reached.plan, set(collected.names), say)
    return dataclasses.replace(reached, files_packages=tuple(chosen))


def _linked(
    reached: Reached, collected: Collected, options: PackOptions, scratch: Path, say: Say
) -> Linked:
    """The reached plan and the shared libraries its native code needs (GCC's support library
    too, for an executable's interpreter: :func:`add_libgcc_s`)."""
    plan = dict(reached.plan)  # (this step's own)
    warnings: list[str] = []
    desktop, plugin_needs = add_libraries(
        plan,
        warnings,
        only_needed=options.prune,
        library_path=options.environment.library_path,
        within=[str(collection.root) for collection in collected.collections],
        not_imported=reached.whole_only,
    )
    machine = options.stdlib_layout.machine
    supplied = add_libgcc_s(plan, machine, scratch, say) if options.stdlib else {}
    say(f"resolved shared libraries: {sum(key[0] == 'libraries' for key in plan)}")
    return Linked(plan, supplied, desktop, plugin_needs, tuple(warnings))


def _tabled(
    writer: ArchiveWriter,
    collected: Collected,
    linked: Linked,
    compiled: Compiled,
    options: PackOptions,
    entry_modules: list[str] | None,
    say: Say,
) -> Tabled:
    """ingot's own entries added: its tables, the bill of materials, the precompiled regular
    expressions, the first-use list."""
    scan = compiled.scan
    native_needs = sorted(scan.version_needs, key=lambda needs: needs[1])
    system_first = system_first_table(linked.plan, native_needs)
    trees = {name: dict(tree) for name, tree in compiled.trees.items()}
    extra_files = ingot_tables(linked.plan, trees, options.extra_files, system_first, say)
    added = add_extra_files(writer, extra_files)
    if options.sbom is not None:
        # (not in the first-use list: nothing reads it at start-up)
        carried = _carried(linked, collected.collections, native_needs, system_first)
        added += add_extra_files(writer, {SBOM: document(options.sbom, carried)})
    table, regexes = add_regexes(writer, scan, say)
    if entry_modules is not None:
        manifest = [*compiled.manifest, *added]
        add_first_use_list(writer, scan, manifest, extra_files, table, entry_modules, say)
    return Tabled(
        manifest=tuple(added),
        native_needs=tuple(native_needs),
        system_first=system_first,
        regexes=regexes,
        regexes_size=sum(map(len, table.values())),
    )


def pack(
    output: str | os.PathLike[str], options: PackOptions | None = None, /, **fields: Any
) -> PackResult:
    """Writes an archive as ``options`` say (:class:`PackOptions`; keyword arguments set or
    override its fields; without options, :meth:`PackOptions.here`'s) to ``output``, in steps that each return a product
    (:mod:`ingot.build.archive.products`): collected, reached, linked (shared libraries),
    compiled (in pools, then here), tabled (ingot's tables), written."""
    if options is None:
        options = PackOptions.here(**fields)
    elif fields:
        options = dataclasses.replace(options, **fields)
    started = time.perf_counter()
    output = Path(output)
    levels = _check_options(
        output, options.optimize_levels, options.include_source, options.compression_level
    )
    say = options.progress or (lambda message: None)
    entry_modules = None if options.entry_modules is None else list(options.entry_modules)
    own = frozenset(os.path.realpath(directory) for directory in options.strict_directories)
    phase = options.ticker.phase if options.ticker else lambda name, total=None: None
    phase("collecting modules")
    collected = _collected(options, own, say)
    pools = _start_pools(options, collected.plan, list(collected.collections), levels)
    try:
        with scratch_directory("ingot-pack-") as scratch:
            if options.prune:
                phase("finding what the application can reach")
            reached = _reach(collected, options, entry_modules, say)
            if options.prune:
                for pool in pools:
                    pool.carry({item.name for item in reached.plan.values()})
                say(
                    f"carrying {len(reached.plan)} entries that the application can use; left out "
                    f"{sum(count for _, count, _ in reached.left_out.values())}"
                )
            reached = _with_files_packages(reached, collected, options, say)
            phase("resolving shared libraries")
            linked = _linked(reached, collected, options, scratch, say)
            writer = _new_writer(options, linked.plan, list(collected.collections), own)
            phase("compiling and scanning modules", sum(pool.jobs for pool in pools))
            _wait_for_pools(pools, options, say)
            phase("compiling, scanning and compressing entries", len(linked.plan))
            scan = Scan(
                patterns={} if options.precompile_regexes else None,
                imports=dict(reached.imports) if entry_modules is not None else None,
                memo=options.cache,
            )
            compiled = _compile(writer, linked, levels, options, scan, reached.files_packages)
            phase("adding ingot's tables")
            tabled = _tabled(writer, collected, linked, compiled, options, entry_modules, say)
            size = _write(writer, output, options.compression_level, say, phase)
            if options.ticker:
                options.ticker.done()
    finally:
        pools[1].stop()  # (ended already, unless something failed)
    seconds = time.perf_counter() - started
    return pack_result(output, size, seconds, collected, reached, linked, compiled, tabled)
