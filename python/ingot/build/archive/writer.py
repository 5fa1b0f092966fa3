"""Packing an archive: the standard library and directories of packages, compiled, with the
shared libraries their extension modules need.

    from ingot.build.archive.writer import pack
    result = pack("app.ingot", PackOptions(directories=["build/site"], optimize_levels=(0, 2)))
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
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingot import elf
from ingot._ingot import (
    EXTENSION_KINDS,
    FILES_MANIFEST_DIR,
    FIRST_USE,
    FIRST_USE_FILE,
    FIRST_USE_LIBRARY,
    FIRST_USE_MODULE,
    KIND_NAMESPACES,
    KINDS,
    NATIVE_KINDS,
    PREFIX_DATA,
    RESERVED_PREFIX,
    SYSTEM_FIRST,
    ArchiveWriter,
    elf_version_needs,
    files_manifest,
    loadable_image,
)
from ingot.build.analysis.firstuse import BOOT_MODULES, TOP, first_use_order
from ingot.build.analysis.regexes import (
    MAGIC_ENTRY,
    MODULE_ENTRY,
    entry_name,
    precompiled_entries,
)
from ingot.build.archive import libgcc
from ingot.build.archive.buildcache import NO_CACHE, BuildMemo, cached_imports
from ingot.build.archive.collect import (
    MODULE_KINDS,
    TCL_SCRIPT_LIBRARIES,
    Collection,
    Item,
    collect_directory,
    collect_stdlib,
    distribution_name,
)
from ingot.build.archive.prefetch import Prefetch, compiled, patterns
from ingot.build.archive.reach import (
    NATIVE_IMPORTS,
    binary_names,
    cached_probe,
    import_probe,
    present_modules,
    reach,
)
from ingot.build.archive.sbom import SBOM, Carried, Facts, document
from ingot.build.archive.stdlib_layout import Layout, running
from ingot.build.progress import Ticker
from ingot.build.resolve.environment import Environment, snapshot
from ingot.build.resolve.settings import ZSTD_LEVELS
from ingot.build.sandbox import Sandbox
from ingot.elf import elf_machine
from ingot.errors import CompileError, PackError
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES

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


@dataclass(frozen=True)
class ManifestEntry:
    kind: str
    name: str
    size: int  # bytes of all its blobs, uncompressed (source + bytecode for a module)


@dataclass
class PackResult:
    output: Path
    size: int  # of the archive file
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    sizes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    warnings: list[str] = field(default_factory=list)
    manifest: list[ManifestEntry] = field(default_factory=list)
    seconds: float = 0.0
    regexes: int = 0  # precompiled regular expressions (entries under __ingot__/re/)
    regexes_size: int = 0
    #: What pruning left out (see :mod:`ingot.build.archive.reach`): group -> (origin, entries, bytes).
    left_out: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    #: The symbol versions each native file the archive holds needs (the glibc floor's input).
    native_needs: list[elf.VersionNeeds] = field(default_factory=list)
    #: Desktop libraries the native code needs and the target system provides (not carried):
    #: name -> what needs it first (:data:`ingot.elf.DESKTOP_LIBRARIES`).
    desktop_libraries: dict[str, str] = field(default_factory=dict)
    #: Modules carried only because their package is carried whole (see
    #: :attr:`ingot.build.archive.reach.Reach.whole_only`): their native code is treated as
    #: plugins are (:func:`_add_libraries`).
    whole_only: set[str] = field(default_factory=set)
    #: Modules carried only because a string names them (no import of them was seen): module ->
    #: (the module whose string names it, the bytes it brings).
    named_only: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: What plugins need that no collected directory has (left to the target system, not taken
    #: from the build machine): name -> the plugin that needs it first.
    plugin_needs: dict[str, str] = field(default_factory=dict)
    #: The carried libraries taken from the system where its copy is new enough
    #: (``__ingot__/system-first.json``): soname -> the symbol versions needed of it.
    system_first: dict[str, list[str]] = field(default_factory=dict)

    def names(self, kind: str) -> set[str]:
        return {entry.name for entry in self.manifest if entry.kind == kind}


def _merge(collections: Iterable[Collection], warnings: list[str]) -> dict[tuple[str, str], Item]:
    """One item per name, the first collection's winning, as the first ``sys.path`` entry would;
    a regular package or module replaces a namespace package (namespace portions merge)."""
    plan: dict[tuple[str, str], Item] = {}
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
    return plan


def _add_libraries(
    plan: dict[tuple[str, str], Item],
    warnings: list[str],
    *,
    only_needed: bool = False,
    library_path: str | None = None,
    within: Iterable[str] = (),
    not_imported: set[str] | frozenset[str] = frozenset(),
) -> tuple[dict[str, str], dict[str, str]]:
    """Adds the shared libraries the extension modules need, transitively (see :mod:`ingot.elf`),
    and those that shared libraries stored as data files need (a package's ``lib/lib_x.so``, which
    its code loads by path through ``ctypes``: the executable loads it from memory, after them);
    with ``only_needed``, the collected libraries nothing needs go. ``library_path``:
    ``LD_LIBRARY_PATH``, as the environment of the build had it.

    Plugins (:func:`_plugins`: Qt's ``plugins/sqldrivers/libqsqlpsql.so``) take what they need
    only from the collected directories ``within``, as the package installed by pip would: what
    they need of the build machine (libpq) is left to the target system, and a plugin whose
    needs it lacks does not load there, as without ingot.

    So are the extension modules ``not_imported`` (carried with their package, but nothing the
    application runs leads to them: PyQt5.QtNetwork, whose libQt5Network needs GSSAPI).

    Returns the desktop libraries needed, which the target system provides, and what plugins
    need and are not given (each: name -> what needs it first)."""
    roots: list[elf.ElfObject] = []
    known: list[elf.ElfObject] = []
    owner: dict[str, str] = {}
    loaded_by_path: list[tuple[Item, elf.ElfObject]] = []
    unimported: list[tuple[Item, elf.ElfObject]] = []
    for item in plan.values():
        if item.kind == "data-file" and _is_shared_object(item):
            try:
                obj = elf.read_elf(str(item.path))
            except (OSError, ValueError):
                continue
            loaded_by_path.append((item, obj))
            owner[obj.path] = f"the library {item.name} (a data file: loaded by its path)"
        elif item.kind in NATIVE_KINDS:
            try:
                obj = elf.read_elf(str(item.path))
            except (OSError, ValueError) as error:
                warnings.append(
                    f"{item.path}: not a readable ELF object ({error}); its libraries "
                    "are not collected"
                )
                continue
            if item.kind == "shared-library":
                known.append(obj)
            elif item.name in not_imported:
                unimported.append((item, obj))
            else:
                roots.append(obj)
            owner[obj.path] = f"{item.kind} {item.name!r}"
    plugins, dependents = _plugins(loaded_by_path, [*roots, *known])
    roots += [
        obj
        for item, obj in loaded_by_path
        if item.name not in plugins and item.name not in dependents
    ]
    for item, obj in unimported:
        plugins[item.name] = plugins[obj.path] = f"{item.name} (not imported)"
    resolution = elf.resolve(
        roots,
        known=known,
        library_path=library_path,
        confined=[
            *(obj for item, obj in loaded_by_path if item.name in plugins),
            *(obj for _, obj in unimported),
        ],
        within=within,
    )
    if only_needed:
        for key in [key for key in plan if key[0] == "libraries"]:
            if key[1] not in resolution.libraries:
                del plan[key]
    for name, library in resolution.libraries.items():
        plan.setdefault(("libraries", name), Item("shared-library", name, Path(library.path)))
    for requester, needed in resolution.missing:
        warnings.append(
            f"{owner.get(requester, requester)} needs {needed}, which was not found "
            f"(searched its RPATH/RUNPATH, LD_LIBRARY_PATH, the ld.so cache and "
            f"the default directories); the target system must provide it"
        )
    for name, kept, other in sorted(set(resolution.conflicts)):
        warnings.append(f"{name}: {kept} collected; some object would load {other} instead")
    return (
        {
            name: owner.get(requester, os.path.basename(requester))
            for name, requester in sorted(resolution.desktop.items())
        },
        {
            name: plugins.get(requester) or owner.get(requester, os.path.basename(requester))
            for name, requester in sorted(resolution.left_to_system.items())
        },
    )


def _plugins(
    loaded_by_path: list[tuple[Item, elf.ElfObject]], others: list[elf.ElfObject]
) -> tuple[dict[str, str], set[str]]:
    """The shared libraries among data files that no extension module needs, directly or through
    other libraries (found by listing a directory, or loaded by path through ``ctypes``), split
    in two:

    - plugins: those no other such library needs either (the tops: Qt's
      ``plugins/platforms/libqxcb.so``), where the package has at least two (a package's one
      library loaded through ``ctypes``, ``libllvmlite.so`` or ``lib/libgreet.so``, is its own
      code, which gets what it needs, its own libraries and the build machine's);
    - the libraries only those tops need (``libQt5MultimediaGstTools``, which Qt's GStreamer
      plugins need): no root of their own, resolved as what needs them is.

    Returns (archive name and path of each plugin -> archive name, the second kind's archive
    names)."""
    by_name = {os.path.basename(item.name): obj for item, obj in loaded_by_path}
    wanted = [name for obj in others for name in obj.needed]
    reached: set[str] = set()
    while wanted:
        name = os.path.basename(wanted.pop())
        if name in by_name and name not in reached:
            reached.add(name)
            wanted += by_name[name].needed
    unreached = [
        (item, obj) for item, obj in loaded_by_path if os.path.basename(item.name) not in reached
    ]
    needed_among = {os.path.basename(name) for _, obj in unreached for name in obj.needed}
    tops = [
        (item, obj) for item, obj in unreached if os.path.basename(item.name) not in needed_among
    ]
    per_package = Counter(item.name.split("/", 1)[0] for item, _ in tops)
    plugins: dict[str, str] = {}
    for item, obj in tops:
        if per_package[item.name.split("/", 1)[0]] >= 2:
            plugins[item.name] = item.name
            plugins[obj.path] = item.name
    dependents = {item.name for item, _ in unreached} - {item.name for item, _ in tops}
    return plugins, dependents


def _is_shared_object(item: Item) -> bool:
    """Whether a data file is a shared library for this machine (``lib_x.so``, ``libx.so.1``)."""
    name = item.name.rsplit("/", 1)[-1]
    if item.path is None or not (name.endswith(".so") or ".so." in name):
        return False
    return elf.elf_class(str(item.path)) == elf.elf_class(sys.executable)


def _prune(
    plan: dict[tuple[str, str], Item],
    collections: list[Collection],
    stdlib: bool,
    own: set[str],
    entry_modules: list[str] | None,
    keep: Iterable[str],
    result: PackResult,
    memo: BuildMemo = NO_CACHE,
    main: str | None = None,
    environment: Environment | None = None,
    run_dependencies: bool = True,
    say: Callable[[str], None] = lambda message: None,
) -> dict[str, dict[str, list[str]]]:
    """Leaves out of ``plan`` what the application cannot reach (:func:`ingot.build.archive.reach.reach`);
    returns the imports read on the way. ``run_dependencies``: packages with native code are
    imported by the import probe (in a sandbox, :mod:`ingot.build.sandbox`), to see what their
    C code imports."""
    origin: dict[tuple[str, str], str] = {}
    for index, collection in enumerate(collections):
        where = (
            "stdlib"
            if stdlib and index == 0
            else "app"
            if os.path.realpath(collection.root) in own
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
    sandbox = Sandbox(environment)
    probe = cached_probe(memo, paths, import_probe(paths, sandbox=sandbox))
    decided = reach(
        plan,
        origin,
        roots,
        keep=keep,
        probe=probe if run_dependencies else None,
        memo=memo,
        main=main,
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
    for key in [key for key in plan if key not in decided.kept]:
        del plan[key]
    result.left_out = decided.left_out
    result.whole_only = decided.whole_only
    result.named_only = decided.named_only
    return decided.imports


#: Shared libraries an executable takes from the system when the system's copy defines every
#: symbol version the archive's code needs of it; the carried copy (the build machine's) is the
#: fallback. The C++ runtime and GCC's support library: manylinux expects both from the system
#: (the launcher itself links libgcc_s), and the build machine's copies would set the
#: executable's glibc floor to the build machine's.
SYSTEM_FIRST_LIBRARIES = ("libgcc_s.so.1", "libstdc++.so.6")


def _prefix_data(plan: dict[tuple[str, str], Item]) -> dict[str, list[str]]:
    """The distributions whose files installed outside their packages (``share/x``) are
    carried: ``*.dist-info`` directory -> the top directories of those files."""
    tops: dict[str, set[str]] = {}
    for item in plan.values():
        if item.dist is not None:
            tops.setdefault(item.dist, set()).add(item.name.split("/")[0])
    return {dist: sorted(names) for dist, names in sorted(tops.items())}


def system_first_table(
    plan: dict[tuple[str, str], Item], native: list[elf.VersionNeeds]
) -> dict[str, list[str]]:
    """For each carried library of :data:`SYSTEM_FIRST_LIBRARIES`, the symbol versions the
    archive's native code (``native``: what each native entry needs) needs of it (what
    ``__ingot__/system-first.json`` says)."""
    carried = {name for name in SYSTEM_FIRST_LIBRARIES if ("libraries", name) in plan}
    needs: dict[str, set[str]] = {name: set() for name in carried}
    for kind, _name, found in native if carried else ():
        if kind in NATIVE_KINDS:
            for library, version in found:
                if library in needs:
                    needs[library].add(version)
    return {name: sorted(versions) for name, versions in sorted(needs.items())}


def _is_shared_object_name(name: str) -> bool:
    """Whether a data file's name is a shared object's (``lib/x.so``, ``libz.so.1``), which a
    package loads by path (``ctypes.CDLL``)."""
    file = name.rsplit("/", 1)[-1]
    return file.endswith(".so") or ".so." in file


def _read(item: Item) -> bytes:
    assert item.path is not None, item  # a namespace package has no file and is never read
    with open(item.path, "rb") as file:
        return file.read()


def _top_level(item: Item) -> str | None:
    """The top-level package an item belongs to (None for shared libraries and dist-info)."""
    if item.kind in MODULE_KINDS:
        return item.name.split(".")[0]
    if item.kind == "data-file":
        return item.name.split("/")[0] if "/" in item.name else None
    return None


def _tree_path(item: Item, suffix: str) -> str:
    """The path of an item's file in its package's tree: the archive's own virtual path
    (``suffix``: the interpreter's extension-module suffix)."""
    stem = item.name.replace(".", "/")
    if item.kind == "module":
        return stem + ".py"
    if item.kind == "package":
        return stem + "/__init__.py"
    if item.kind == "extension-module":
        return stem + suffix
    if item.kind == "extension-package":
        return stem + "/__init__" + suffix
    return item.name


def _with_mypyc_groups(files_packages: list[str], plan: dict[tuple[str, str], Item]) -> list[str]:
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
                image = _read(item)
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


@dataclass
class _Scan:
    """What ``_add`` learns from the items it adds: per module, the regular expressions it
    compiles (None: not scanned) and the modules it imports; per extension module or shared
    library, the sonames it needs."""

    patterns: dict[str, set[tuple[str | bytes, int]]] | None = field(default_factory=dict)
    imports: dict[str, dict[str, list[str]]] | None = field(default_factory=dict)
    needed: dict[str, list[str]] = field(default_factory=dict)
    memo: BuildMemo = NO_CACHE
    #: What each native entry needs of versioned symbols, as stored (the glibc floor's input).
    version_needs: list[elf.VersionNeeds] = field(default_factory=list)

    def native(self, kind: str, name: str, image: bytes) -> None:
        """Records the symbol versions the native ``image`` of entry ``name`` needs, and, of an
        extension module, what it imports of its own package (:func:`package_imports`)."""
        try:
            self.version_needs.append((kind, name, elf_version_needs(image)))
        except ValueError:
            pass  # (not an ELF object the loader could load: no floor of its own)
        if self.imports is not None and kind in EXTENSION_KINDS:
            # (after what the source shipped beside it imports, when the reach analysis read it)
            known = self.imports.get(name, {})
            top = known.get(TOP, [])
            added = [found for found in package_imports(name, image) if found not in top]
            self.imports[name] = {**known, TOP: [*top, *added]}

    def wants_sources(self) -> bool:
        return self.patterns is not None or self.imports is not None

    def source(self, name: str, source: bytes, is_package: bool) -> None:
        if self.patterns is not None:
            found = patterns(self.memo, source)
            if found:
                self.patterns[name] = found
        if self.imports is not None and name not in self.imports:
            self.imports[name] = cached_imports(self.memo, source, name, is_package)


def package_imports(name: str, image: bytes) -> list[str]:
    """The modules of its own top-level package that the extension module ``name`` may import
    when it runs, for the first-use order: the dotted names among its NUL-terminated strings
    (C code imports by name; Cython's module imports and cimports, `scipy.linalg.cython_lapack`,
    are such strings) under the same top-level name. Only those: the strings of the code
    generators' own runtime name other packages' modules that are seldom imported
    (`asyncio.coroutines`, Cython's), and a prediction too wide costs every start its reads."""
    top = name.partition(".")[0]
    return sorted(
        found
        for found in binary_names(image)
        if found != name and found.partition(".")[0] == top and "." in found
    )


def _add(
    writer: ArchiveWriter,
    item: Item,
    levels: tuple[int, ...],
    include_source: bool,
    keep_debug_info: bool = False,
    scan: _Scan | None = None,
    memo: BuildMemo = NO_CACHE,
) -> tuple[int, bytes | None]:
    """Adds one item to ``writer``; returns its size and the bytes a file of its package's tree
    would hold (None: no file). Raises OSError, ValueError, SyntaxError. What the item compiles,
    imports or needs goes to ``scan`` (if not None).

    Native images are cut after their last loadable segment unless ``keep_debug_info``: the
    loader never reads debug sections, and each extension module is copied into memory when
    imported."""
    if item.kind == "namespace-package":
        writer.add_namespace_package(item.name)
        return 0, None
    content = _read(item)
    if item.kind in ("module", "package"):
        bytecode = compiled(memo, content, item.relpath or item.name, levels)
        source = content if include_source else None
        writer.add_module(
            item.name, source=source, bytecode=bytecode or None, is_package=item.kind == "package"
        )
        if scan is not None:
            scan.source(item.name, content, item.kind == "package")
        return len(source or b"") + sum(map(len, bytecode.values())), source
    if item.kind in NATIVE_KINDS and not keep_debug_info:
        content = loadable_image(content)
    if (
        item.kind in EXTENSION_KINDS
        and scan is not None
        and scan.wants_sources()
        and item.source is not None
    ):
        # A compiled module's shipped source says what the compiled code imports and compiles.
        try:
            scan.source(item.name, item.source.read_bytes(), item.kind == "extension-package")
        except OSError:
            pass
    if scan is not None and (
        item.kind in NATIVE_KINDS
        or (
            item.kind == "data-file"
            and _is_shared_object_name(item.name)
            and content[:4] == b"\x7fELF"
        )
    ):
        scan.native(item.kind, item.name, content)
    if item.kind in EXTENSION_KINDS:
        needed = list(elf.ElfObject.from_image(str(item.path), content).needed)
        writer.add_extension_module(
            item.name, content, needed, is_package=item.kind == "extension-package"
        )
        if scan is not None:
            scan.needed[item.name] = needed
    elif item.kind == "shared-library":
        obj = elf.ElfObject.from_image(str(item.path), content)
        writer.add_shared_library(item.name, content, soname=obj.soname, needed=list(obj.needed))
        if scan is not None:
            scan.needed[item.name] = list(obj.needed)
    elif item.kind == "data-file":
        writer.add_data_file(item.name, content)
    elif item.kind == "dist-info-file":
        writer.add_dist_info_file(item.name, content)
        return len(content), None
    else:
        raise ValueError(f"unknown item kind {item.kind!r}")
    return len(content), content


def _first_use(
    scan: _Scan,
    result: PackResult,
    extra_files: dict[str, bytes],
    table: dict[str, bytes],
    entry_modules: list[str],
) -> list[tuple[str, str]]:
    """The first-use order of the archive's entries (see :mod:`ingot.build.analysis.firstuse`): ingot's own
    files read at start-up, then the launcher's modules and the entry modules' import graph."""
    kinds = {entry.name: entry.kind for entry in result.manifest if entry.kind in MODULE_KINDS}
    companions: dict[str, list[tuple[str, str]]] = {}
    for module, found in (scan.patterns or {}).items():
        names = [
            entry_name(pattern, flags)
            for pattern, flags in sorted(
                found, key=lambda pair: (type(pair[0]).__name__, pair[0], pair[1])
            )
        ]
        companions[module] = [("files", name) for name in names if name in table]
    reserved = sorted(name for name in extra_files if name.startswith(RESERVED_PREFIX))
    reserved += [name for name in (MAGIC_ENTRY, MODULE_ENTRY) if name in table]
    return [("files", name) for name in reserved] + first_use_order(
        [*BOOT_MODULES, *entry_modules],
        scan.imports or {},
        kinds,
        scan.needed,
        companions,
        lazy=entry_modules,
    )


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


@dataclass
class PackOptions:
    """What :func:`pack` writes; each field's default is ``ingot pack``'s."""

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
    #: (by default the running one's; a cross build's target runtime's).
    stdlib_layout: Layout = field(default_factory=running)
    #: The environment of the build, read when it was resolved (by default, now): what the
    #: processes it starts get, ``LD_LIBRARY_PATH`` for the shared libraries.
    environment: Environment = field(default_factory=snapshot)
    #: Data files to add (path -> content), e.g. ``__ingot__/launch.json``.
    extra_files: dict[str, bytes] | None = None
    #: Top-level packages under the ``files`` policy: their sources, data files and extension
    #: modules are also listed in a tree manifest, from which the importer materializes them into
    #: the extraction cache on first import.
    files_packages: Iterable[str] = ()
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
    #: see what their C code imports (:func:`ingot.build.archive.reach.import_probe`); false:
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


def _collect(options: PackOptions, own: set[str], say: Callable[[str], None]) -> list[Collection]:
    """The collections of ``options``' directories (each once, ``own`` ones with their top-level
    data) and, first, of the standard library."""
    collections: list[Collection] = []
    seen = set()
    for directory in options.directories:  # first: a bad directory fails before the long steps
        if os.path.realpath(directory) not in seen:
            seen.add(os.path.realpath(directory))
            collections.append(
                collect_directory(
                    directory,
                    exclude=tuple(options.exclude),
                    top_level_data=os.path.realpath(directory) in own,
                    layout=options.stdlib_layout,
                )
            )
            say(f"collected {len(collections[-1].items)} entries from {directory}")
            _check_machines(collections[-1], options.stdlib_layout.machine)
    if options.stdlib:  # the standard library comes first on sys.path: it wins name clashes
        collections.insert(0, collect_stdlib(tuple(options.stdlib_exclude), options.stdlib_layout))
        say(f"collected {len(collections[0].items)} entries from {collections[0].root}")
    return collections


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
    plan: dict[tuple[str, str], Item], collections: list[Collection], own: set[str]
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
    plan: dict[tuple[str, str], Item],
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


def _add_items(
    writer: ArchiveWriter,
    plan: dict[tuple[str, str], Item],
    levels: tuple[int, ...],
    options: PackOptions,
    scan: _Scan,
    files_packages: list[str],
    result: PackResult,
) -> dict[str, dict[str, bytes]]:
    """Adds ``plan``'s items to ``writer`` in name order, recording each in ``result`` (or a
    warning for one left out); returns the tree (path -> bytes) of each ``files`` package.
    Raises CompileError for a module of the application's own code that does not compile."""
    trees: dict[str, dict[str, bytes]] = {package: {} for package in files_packages}
    strict = [Path(directory).resolve() for directory in options.strict_directories]
    advance = options.ticker.advance if options.ticker else lambda count=1: None
    for key in sorted(plan):
        item = plan[key]
        advance()
        try:
            size, tree_bytes = _add(
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
            result.warnings.append(
                f"{item.path}:{error.lineno}: does not compile ({error.msg}); "
                f"{item.kind} {item.name!r} left out"
            )
            continue
        except (OSError, ValueError) as error:
            result.warnings.append(f"{item.path}: {item.kind} {item.name!r} left out: {error}")
            continue
        result.manifest.append(ManifestEntry(item.kind, item.name, size))
        result.counts[item.kind] += 1
        result.sizes[item.kind] += size
        top = _top_level(item)
        if top is not None and top in trees and tree_bytes is not None:
            trees[top][_tree_path(item, options.stdlib_layout.extension_suffixes[0])] = tree_bytes
    return trees


def _add_new_file(writer: ArchiveWriter, name: str, content: bytes) -> None:
    """Adds a data file ingot writes; PackError if the archive already holds one of that name."""
    if writer.contains(name, "files"):
        raise PackError(f"cannot add {name}: the archive already holds a file of that name")
    writer.add_data_file(name, content)


def _add_extra_files(
    writer: ArchiveWriter, extra_files: dict[str, bytes], result: PackResult
) -> None:
    """Adds the data files ingot writes (the caller's and the tree manifests), by name."""
    for name, content in sorted(extra_files.items()):
        _add_new_file(writer, name, content)
        result.manifest.append(ManifestEntry("data-file", name, len(content)))
        result.counts["data-file"] += 1
        result.sizes["data-file"] += len(content)


def _add_regexes(
    writer: ArchiveWriter, scan: _Scan, result: PackResult, say: Callable[[str], None]
) -> dict[str, bytes]:
    """Adds the table of the regular expressions the modules compile (if they were scanned for
    them); returns its entries (name -> content)."""
    table: dict[str, bytes] = {}
    if scan.patterns is not None:
        patterns = set().union(*scan.patterns.values())
        table = precompiled_entries(patterns)
        for name, content in sorted(table.items()):
            _add_new_file(writer, name, content)
        result.regexes = max(len(table) - 2, 0)  # less the magic and module entries
        result.regexes_size = sum(map(len, table.values()))
        say(
            f"precompiled {result.regexes} of {len(patterns)} regular expressions found in the modules"
        )
    return table


def _add_first_use_list(
    writer: ArchiveWriter,
    scan: _Scan,
    result: PackResult,
    extra_files: dict[str, bytes],
    table: dict[str, bytes],
    entry_modules: list[str],
    say: Callable[[str], None],
) -> None:
    """Adds the first-use list (:func:`_first_use`) and puts its entries first in the data
    region."""
    order = _first_use(scan, result, extra_files, table, entry_modules)
    # The list itself, read by the launcher's read-ahead thread (docs/format.md).
    order.insert(0, ("files", FIRST_USE))
    tags = {
        "modules": FIRST_USE_MODULE,
        "files": FIRST_USE_FILE,
        "libraries": FIRST_USE_LIBRARY,
    }
    listing = "".join(f"{tags[namespace]} {name}\n" for namespace, name in order).encode()
    _add_new_file(writer, FIRST_USE, listing)
    writer.set_first_use(order)
    say(f"first-use order: {len(order)} entries from {', '.join(entry_modules) or 'start-up'}")


def _write(
    writer: ArchiveWriter,
    output: Path,
    compression_level: int | None,
    result: PackResult,
    say: Callable[[str], None],
    phase: Callable[..., None] = lambda name, total=None: None,
) -> None:
    """Trains the compression dictionary (when compressing) and writes the archive."""
    if compression_level is not None:
        phase("training the zstd dictionary")
        trained = writer.train_dictionary(DICTIONARY_SIZE)
        if trained:
            say(f"trained a {trained}-byte zstd dictionary for the small modules' blobs")
    say(f"writing {len(writer)} entries to {output}")
    phase(f"writing {len(writer)} entries")
    try:
        result.size = writer.write(str(output))
    except (OSError, RuntimeError) as error:
        raise PackError(f"cannot write {output}: {error}") from error


def _start_pools(
    options: PackOptions,
    plan: dict[tuple[str, str], Item],
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
    plan: dict[tuple[str, str], Item],
    collections: list[Collection],
    own: set[str],
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


def _tables(
    plan: dict[tuple[str, str], Item],
    trees: dict[str, dict[str, bytes]],
    extra: dict[str, bytes] | None,
    system_first: dict[str, list[str]],
    say: Callable[[str], None],
) -> dict[str, bytes]:
    """ingot's own files of the archive (name -> content): the caller's ``extra`` ones, the
    files policy's tree manifests, the libraries the system provides first, the files answered
    at ``sys.prefix``."""
    extra_files = dict(extra or {})
    for package, tree in trees.items():
        # Written by the importer's own definition (ingot-importer's files.rs), which reads it.
        extra_files[f"{FILES_MANIFEST_DIR}{package}.json"] = files_manifest(package, tree)
    if system_first:
        extra_files[SYSTEM_FIRST] = json.dumps(system_first, sort_keys=True).encode()
    prefix_data = _prefix_data(plan)
    if prefix_data:
        extra_files[PREFIX_DATA] = json.dumps(prefix_data, sort_keys=True).encode()
        say(
            "carrying files installed outside packages, answered at sys.prefix (the "
            "executable): "
            + ", ".join(
                f"{distribution_name(dist)} ({', '.join(tops)})"
                for dist, tops in prefix_data.items()
            )
        )
    return extra_files


def _add_libgcc_s(
    plan: dict[tuple[str, str], Item], machine: str, scratch: Path, say: Callable[[str], None]
) -> dict[str, str]:
    """Adds GCC's support library, which glibc itself loads (:mod:`ingot.build.archive.libgcc`),
    unless the plan has one already (a library needed it: the build machine's, or a wheel's);
    returns what the bill of materials says it was taken from, by library name."""
    if ("libraries", libgcc.LIBGCC_S) in plan:
        return {}
    path = libgcc.extract(machine, scratch)
    plan[("libraries", libgcc.LIBGCC_S)] = Item("shared-library", libgcc.LIBGCC_S, path)
    package = libgcc.package_of(machine)
    say(f"carrying {libgcc.LIBGCC_S} from Debian's {package.name} {package.version}, for glibc")
    return {libgcc.LIBGCC_S: package.purl}


def _carried(
    plan: dict[tuple[str, str], Item],
    collections: list[Collection],
    result: PackResult,
    supplied: dict[str, str],
) -> Carried:
    """What the archive carries, for its bill of materials: the distributions (their METADATA),
    the shared libraries (where each was taken from, and which distribution's RECORD lists it;
    ``supplied``: those ingot itself carries, by name, with their package URL), what the native
    code needs of the target system."""
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
        native_needs=result.native_needs,
        system_first=result.system_first,
        desktop_libraries=result.desktop_libraries,
        plugin_needs=result.plugin_needs,
    )


def pack(
    output: str | os.PathLike[str], options: PackOptions | None = None, /, **fields: Any
) -> PackResult:
    """Writes an archive as ``options`` say (:class:`PackOptions`; keyword arguments set or
    override its fields) to ``output``, in steps: collect, prune (what the application can
    reach), shared libraries, compile and scan (in pools, then here), ingot's tables, write."""
    if options is None:
        options = PackOptions(**fields)
    elif fields:
        options = dataclasses.replace(options, **fields)
    started = time.perf_counter()
    output = Path(output)
    levels = _check_options(
        output, options.optimize_levels, options.include_source, options.compression_level
    )
    say = options.progress or (lambda message: None)
    entry_modules = None if options.entry_modules is None else list(options.entry_modules)
    result = PackResult(output, 0)
    own = {os.path.realpath(directory) for directory in options.strict_directories}
    phase = options.ticker.phase if options.ticker else lambda name, total=None: None
    phase("collecting modules")
    collections = _collect(options, own, say)
    for collection in collections:
        result.warnings += collection.warnings
    plan = _merge(collections, result.warnings)
    collected = {top for item in plan.values() if (top := _top_level(item)) is not None}
    prefilled_imports: dict[str, dict[str, list[str]]] = {}
    pools = _start_pools(options, plan, collections, levels)
    scratch = Path(tempfile.mkdtemp(prefix="ingot-pack-"))
    try:
        if options.prune:
            phase("finding what the application can reach")
            prefilled_imports = _prune(
                plan,
                collections,
                options.stdlib,
                own,
                entry_modules,
                options.keep,
                result,
                options.cache,
                options.main_module,
                options.environment,
                options.run_dependencies,
                say,
            )
            for pool in pools:
                pool.carry({item.name for item in plan.values()})
            say(
                f"carrying {len(plan)} entries that the application can use; left out "
                f"{sum(count for _, count, _ in result.left_out.values())}"
            )
        files_names = list(options.files_packages)
        tcl = f"tkinter/{TCL_SCRIPT_LIBRARIES[0]}/init.tcl"
        if ("files", tcl) in plan and "tkinter" not in files_names:
            say("files policy: tkinter (Tcl and Tk read their script libraries by path)")
            files_names.append("tkinter")
        files_packages = _files_packages(files_names, plan, collected, say)
        scan = _Scan(
            patterns={} if options.precompile_regexes else None,
            imports=dict(prefilled_imports) if entry_modules is not None else None,
            memo=options.cache,
        )
        phase("resolving shared libraries")
        result.desktop_libraries, result.plugin_needs = _add_libraries(
            plan,
            result.warnings,
            only_needed=options.prune,
            library_path=options.environment.library_path,
            within=[str(collection.root) for collection in collections],
            not_imported=result.whole_only,
        )
        supplied = _add_libgcc_s(plan, options.stdlib_layout.machine, scratch, say)
        say(f"resolved shared libraries: {sum(key[0] == 'libraries' for key in plan)}")
        writer = _new_writer(options, plan, collections, own)
        phase("compiling and scanning modules", sum(pool.jobs for pool in pools))
        _wait_for_pools(pools, options, say)
        phase("compiling, scanning and compressing entries", len(plan))
        trees = _add_items(writer, plan, levels, options, scan, files_packages, result)
        phase("adding ingot's tables")
        result.native_needs = sorted(scan.version_needs, key=lambda needs: needs[1])
        result.system_first = system_first_table(plan, result.native_needs)
        extra_files = _tables(plan, trees, options.extra_files, result.system_first, say)
        _add_extra_files(writer, extra_files, result)
        if options.sbom is not None:
            # (not in the first-use list: nothing reads it at start-up)
            bill = document(options.sbom, _carried(plan, collections, result, supplied))
            _add_extra_files(writer, {SBOM: bill}, result)
        table = _add_regexes(writer, scan, result, say)
        if entry_modules is not None:
            _add_first_use_list(writer, scan, result, extra_files, table, entry_modules, say)
        _write(writer, output, options.compression_level, result, say, phase)
        if options.ticker:
            options.ticker.done()
    finally:
        pools[1].stop()  # (ended already, unless something failed)
        shutil.rmtree(scratch, ignore_errors=True)
    result.seconds = time.perf_counter() - started
    return result
