"""ingot's own entries of an archive: the files policy's tree manifests, the libraries the system
provides first, the files answered at ``sys.prefix``, the table of precompiled regular
expressions and the first-use list (the order a start reads entries in)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping

from ingot._ingot import (
    FILES_MANIFEST_DIR,
    FIRST_USE,
    FIRST_USE_FILE,
    FIRST_USE_LIBRARY,
    FIRST_USE_MODULE,
    PREFIX_DATA,
    RESERVED_PREFIX,
    SYSTEM_FIRST,
    ArchiveWriter,
    files_manifest,
)
from ingot.build.analysis.firstuse import BOOT_MODULES, first_use_order
from ingot.build.analysis.regexes import MAGIC_ENTRY, MODULE_ENTRY, entry_name, precompiled_entries
from ingot.build.archive.collect import MODULE_KINDS, Item, distribution_name
from ingot.build.archive.entries import Scan
from ingot.build.archive.result import ManifestEntry
from ingot.errors import PackError

__all__ = [
    "add_extra_files",
    "add_first_use_list",
    "add_new_file",
    "add_regexes",
    "first_use",
    "ingot_tables",
    "prefix_data",
]


def prefix_data(plan: Mapping[tuple[str, str], Item]) -> dict[str, list[str]]:
    """The distributions whose files installed outside their packages (``share/x``) are
    carried: ``*.dist-info`` directory -> the top directories of those files."""
    tops: dict[str, set[str]] = {}
    for item in plan.values():
        if item.dist is not None:
            tops.setdefault(item.dist, set()).add(item.name.split("/")[0])
    return {dist: sorted(names) for dist, names in sorted(tops.items())}


def ingot_tables(
    plan: Mapping[tuple[str, str], Item],
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
    outside = prefix_data(plan)
    if outside:
        extra_files[PREFIX_DATA] = json.dumps(outside, sort_keys=True).encode()
        say(
            "carrying files installed outside packages, answered at sys.prefix (the "
            "executable): "
            + ", ".join(
                f"{distribution_name(dist)} ({', '.join(tops)})" for dist, tops in outside.items()
            )
        )
    return extra_files


def add_new_file(writer: ArchiveWriter, name: str, content: bytes) -> None:
    """Adds a data file ingot writes; PackError if the archive already holds one of that name."""
    if writer.contains(name, "files"):
        raise PackError(f"cannot add {name}: the archive already holds a file of that name")
    writer.add_data_file(name, content)


def add_extra_files(writer: ArchiveWriter, extra_files: dict[str, bytes]) -> list[ManifestEntry]:
    """Adds the data files ingot writes (the caller's and the tree manifests), by name; returns
    their manifest entries."""
    added = []
    for name, content in sorted(extra_files.items()):
        add_new_file(writer, name, content)
        added.append(ManifestEntry("data-file", name, len(content)))
    return added


def add_regexes(
    writer: ArchiveWriter, scan: Scan, say: Callable[[str], None]
) -> tuple[dict[str, bytes], int]:
    """Adds the table of the regular expressions the modules compile (if they were scanned for
    them); returns its entries (name -> content) and how many expressions it holds."""
    table: dict[str, bytes] = {}
    count = 0
    if scan.patterns is not None:
        patterns = set().union(*scan.patterns.values())
        table = precompiled_entries(patterns)
        for name, content in sorted(table.items()):
            add_new_file(writer, name, content)
        count = max(len(table) - 2, 0)  # less the magic and module entries
        say(f"precompiled {count} of {len(patterns)} regular expressions found in the modules")
    return table, count


def add_first_use_list(
    writer: ArchiveWriter,
    scan: Scan,
    manifest: Iterable[ManifestEntry],
    extra_files: dict[str, bytes],
    table: dict[str, bytes],
    entry_modules: list[str],
    say: Callable[[str], None],
) -> None:
    """Adds the first-use list (:func:`first_use`) and puts its entries first in the data
    region."""
    order = first_use(scan, manifest, extra_files, table, entry_modules)
    # The list itself, read by the launcher's read-ahead thread (docs/format.md).
    order.insert(0, ("files", FIRST_USE))
    tags = {
        "modules": FIRST_USE_MODULE,
        "files": FIRST_USE_FILE,
        "libraries": FIRST_USE_LIBRARY,
    }
    listing = "".join(f"{tags[namespace]} {name}\n" for namespace, name in order).encode()
    add_new_file(writer, FIRST_USE, listing)
    writer.set_first_use(order)
    say(f"first-use order: {len(order)} entries from {', '.join(entry_modules) or 'start-up'}")


def first_use(
    scan: Scan,
    manifest: Iterable[ManifestEntry],
    extra_files: dict[str, bytes],
    table: dict[str, bytes],
    entry_modules: list[str],
) -> list[tuple[str, str]]:
    """The first-use order of the archive's entries (see :mod:`ingot.build.analysis.firstuse`): ingot's own
    files read at start-up, then the launcher's modules and the entry modules' import graph."""
    kinds = {entry.name: entry.kind for entry in manifest if entry.kind in MODULE_KINDS}
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
