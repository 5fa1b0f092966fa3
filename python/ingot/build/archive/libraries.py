"""The shared libraries an archive carries: those its native code needs (found as the dynamic
loader would, :mod:`ingot.elf`), what plugins and modules nothing imports may take, the table of
those the system provides first, and GCC's support library (:mod:`ingot.build.archive.libgcc`)."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ingot import elf
from ingot._ingot import NATIVE_KINDS
from ingot.build.archive import libgcc
from ingot.build.archive.collect import Item

__all__ = [
    "SYSTEM_FIRST_LIBRARIES",
    "add_libgcc_s",
    "add_libraries",
    "is_shared_object_name",
    "system_first_table",
]


def add_libraries(
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


#: Shared libraries an executable takes from the system when the system's copy defines every
#: symbol version the archive's code needs of it; the carried copy (the build machine's) is the
#: fallback. The C++ runtime and GCC's support library: manylinux expects both from the system
#: (the launcher itself links libgcc_s), and the build machine's copies would set the
#: executable's glibc floor to the build machine's.
SYSTEM_FIRST_LIBRARIES = ("libgcc_s.so.1", "libstdc++.so.6")


def system_first_table(
    plan: Mapping[tuple[str, str], Item], native: list[elf.VersionNeeds]
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


def is_shared_object_name(name: str) -> bool:
    """Whether a data file's name is a shared object's (``lib/x.so``, ``libz.so.1``), which a
    package loads by path (``ctypes.CDLL``)."""
    file = name.rsplit("/", 1)[-1]
    return file.endswith(".so") or ".so." in file


def add_libgcc_s(
    plan: dict[tuple[str, str], Item], machine: str, scratch: Path, say: Callable[[str], None]
) -> dict[str, str]:
    """Adds GCC's support library, which glibc itself loads (:mod:`ingot.build.archive.libgcc`),
    unless the plan has one already (a library needed it: the build machine's, or a wheel's);
    returns what the bill of materials says it was taken from, by library name. For an
    executable's archive only (one with the standard library): an archive without it runs in a
    Python of its own, which has what it needs."""
    if ("libraries", libgcc.LIBGCC_S) in plan:
        return {}
    path = libgcc.extract(machine, scratch)
    plan[("libraries", libgcc.LIBGCC_S)] = Item("shared-library", libgcc.LIBGCC_S, path)
    package = libgcc.package_of(machine)
    say(f"carrying {libgcc.LIBGCC_S} from Debian's {package.name} {package.version}, for glibc")
    return {libgcc.LIBGCC_S: package.purl}
