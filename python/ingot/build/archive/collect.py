"""Deciding what goes into an archive: walking the standard library or a directory of packages.

A collector reads no more than it needs to classify files; it returns :class:`Item` s (what,
under which name, from which file) and warnings. :mod:`ingot.build.archive.pack` reads, compiles and writes
them. Everything is walked in sorted order, so the same tree gives the same items.

Within one directory, a name resolves as Python's ``FileFinder`` would: a regular package (a
directory with ``__init__.py``) before an extension module, before a ``.py`` module, before a
namespace package; what loses is left out, with a warning.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ingot._ingot import KIND_NAMESPACES, KINDS
from ingot.build.archive.stdlib_layout import Layout, running
from ingot.errors import CollectError
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES, is_excluded

__all__ = [
    "MODULE_KINDS",
    "Collection",
    "Item",
    "collect_directory",
    "collect_stdlib",
    "distribution_name",
]

_SOURCE_SUFFIX = ".py"


@dataclass(frozen=True)
class Item:
    """One archive entry to be: ``kind`` (as in :data:`ingot._ingot.KINDS`), ``name`` (a dotted
    module name, a ``/``-separated path relative to the import root, or a library file name),
    ``path`` (the file to read; None for a namespace package) and, for modules, ``relpath``:
    the file's path relative to the import root, the filename bytecode is compiled with. For
    a compiled module shipped with its source (mypyc, Cython), ``source`` is that ``.py`` file:
    not archived, but scanned for what the module imports and the patterns it compiles."""

    kind: str
    name: str
    path: Path | None = None
    relpath: str | None = None
    source: Path | None = None
    #: For a file a wheel installs outside its packages (the ``data`` scheme, e.g.
    #: ``share/<tool>/...``, named relative to the installation prefix): the ``*.dist-info``
    #: directory of its distribution, which it is carried with.
    dist: str | None = None


#: The parts of the ``data`` scheme left out: the environment's scripts (console scripts name
#: the interpreter that installed them; an executable runs its own entry) and C headers (for
#: builds, not runs).
PREFIX_DATA_SKIPPED = ("bin", "Scripts", "include")


#: The kinds of entry named in the ``modules`` name space (the format's: ``ingot._ingot``).
MODULE_KINDS = tuple(kind for kind in KINDS if KIND_NAMESPACES[kind] == "modules")


def distribution_name(directory: str) -> str:
    """The name of the distribution a ``*.dist-info`` directory is of, as the directory spells
    it (``{name}-{version}.dist-info``, whose version holds no ``-``):
    ``nbconvert-7.1.0.dist-info``: ``nbconvert``."""
    stem = directory.removesuffix(".dist-info")
    return stem.rpartition("-")[0] or stem


def _prefix_listed(root: Path) -> list[tuple[str, str, str]]:
    """What the ``RECORD`` of each distribution in ``root`` lists outside it, in the ``data``
    scheme less :data:`PREFIX_DATA_SKIPPED`: ``(dist-info directory, name relative to the
    prefix, path as listed)``. A record's paths are relative to the directory the
    distribution's packages went to; the ones that leave it (``../../share/x`` from a
    ``--target`` directory, ``../../../share/x`` from a site-packages) went to the prefix."""
    listed = []
    for record in sorted(root.glob("*.dist-info/RECORD")):
        try:
            lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue  # the dist-info files are collected, and read, on their own
        for line in lines:
            path = line.split(",", 1)[0].strip().strip('"')
            if not path.startswith("../"):
                continue
            parts = [part for part in path.split("/") if part not in ("", ".")]
            ups = next((index for index, part in enumerate(parts) if part != ".."), len(parts))
            names = parts[ups:]
            if not names or ".." in names or names[0] in PREFIX_DATA_SKIPPED:
                continue
            if names[-1].endswith((".pyc", ".pyo")):
                continue
            listed.append((record.parent.name, "/".join(names), path))
    return listed


@dataclass
class Collection:
    """What one collector found under ``root``."""

    root: Path
    items: list[Item] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _entries(directory: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except OSError as error:
        raise CollectError(f"cannot list {directory}: {error.strerror}") from error


def _is_extension_for(path: str, name: str) -> bool:
    """Whether ``path`` is an ELF object exporting the init function of module ``name``."""
    symbol = b"PyInit_" + name.encode() if name.isascii() else b"PyInitU_"
    try:
        with open(path, "rb") as file:
            image = file.read()
    except OSError:
        return False
    return image[:4] == b"\x7fELF" and symbol in image


def _extension_init(directory: Path, package: str, suffixes: tuple[str, ...]) -> Path | None:
    """A package's compiled ``__init__`` (``__init__.cpython-311-x86_64-linux-gnu.so``), which
    Python prefers to ``__init__.py`` (extension suffixes come first in its search order)."""
    for suffix in suffixes:
        candidate = directory / f"__init__{suffix}"
        if candidate.is_file() and _is_extension_for(str(candidate), package):
            return candidate
    return None


def _extension_module(entry: os.DirEntry[str], suffixes: tuple[str, ...]) -> tuple[str, int] | None:
    """(module name, suffix rank) if ``entry`` is an extension module with one of
    ``suffixes`` (the interpreter's, in its order of preference)."""
    for rank, suffix in enumerate(suffixes):
        stem = entry.name[: -len(suffix)]
        if entry.name.endswith(suffix) and stem and "." not in stem:
            symbol = b"PyInit_" + stem.encode() if stem.isascii() else b"PyInitU_"
            try:
                with open(entry.path, "rb") as file:
                    image = file.read()
            except OSError:
                return None
            return (stem, rank) if image[:4] == b"\x7fELF" and symbol in image else None
    return None


def _has_modules(directory: str | os.PathLike[str], suffixes: tuple[str, ...]) -> bool:
    """Whether ``directory`` holds a module at some depth (what makes it a namespace package)."""
    for entry in _entries(directory):
        if entry.is_dir():
            if (
                entry.name != "__pycache__"
                and "." not in entry.name
                and _has_modules(entry.path, suffixes)
            ):
                return True
        elif entry.name.endswith(_SOURCE_SUFFIX) or entry.name.endswith(suffixes):
            return True
    return False


class _Walker:
    def __init__(
        self,
        root: Path,
        exclude: Iterable[str],
        collection: Collection,
        suffixes: tuple[str, ...],
    ) -> None:
        self.root, self.exclude, self.collection = root, tuple(exclude), collection
        self.suffixes = suffixes  # of extension modules, in the import system's order
        self.top_level_data = False

    def add(
        self,
        kind: str,
        name: str,
        path: Path | None,
        relpath: str | None = None,
        source: Path | None = None,
    ) -> None:
        self.collection.items.append(Item(kind, name, path, relpath, source))

    def warn(self, message: str) -> None:
        self.collection.warnings.append(message)

    def relative(self, path: str | os.PathLike[str]) -> str:
        return Path(path).relative_to(self.root).as_posix()

    def package(
        self,
        directory: Path,
        prefix: str,
        top_level: Callable[[os.DirEntry[str]], bool] | None = None,
    ) -> None:
        """The modules, subpackages and data files of package ``prefix`` ('' for the root).

        ``top_level(entry) -> bool``: at the root, claims entries that are no module."""
        forms: dict[str, list[tuple[tuple[int, int], str, os.DirEntry[str]]]] = {}
        for entry in _entries(directory):
            name = entry.name
            if name == "__pycache__" or (not prefix and top_level and top_level(entry)):
                continue
            if entry.is_dir():
                if name.endswith(".libs"):
                    self.libraries(Path(entry.path))
                elif "." not in name and _extension_init(Path(entry.path), name, self.suffixes):
                    forms.setdefault(name, []).append(((0, 0), "extension-package", entry))
                elif "." not in name and (Path(entry.path) / "__init__.py").is_file():
                    forms.setdefault(name, []).append(((0, 0), "package", entry))
                elif "." not in name and _has_modules(Path(entry.path), self.suffixes):
                    forms.setdefault(name, []).append(((3, 0), "namespace-package", entry))
                elif prefix or self.top_level_data:
                    self.data(Path(entry.path))
            elif entry.is_file():
                if (
                    prefix
                    and name.startswith("__init__.")
                    and name.endswith(self.suffixes)
                    and _extension_init(directory, prefix.rpartition(".")[2], self.suffixes)
                    == Path(entry.path)
                ):
                    continue  # the package's own compiled __init__: its "extension-package" entry
                extension = _extension_module(entry, self.suffixes)
                stem = name[: -len(_SOURCE_SUFFIX)]
                if extension:
                    forms.setdefault(extension[0], []).append(
                        ((1, extension[1]), "extension-module", entry)
                    )
                elif name.endswith(_SOURCE_SUFFIX) and stem and "." not in stem:
                    if stem != "__init__":
                        forms.setdefault(stem, []).append(((2, 0), "module", entry))
                elif prefix and not name.endswith((".pyc", ".pyo", _SOURCE_SUFFIX)):
                    if re.search(r"\.(cpython-\d+\S*|abi3)\.so$", name):
                        self.warn(
                            f"{self.relative(entry.path)}: an extension module for another "
                            "Python version or platform, kept as a data file"
                        )
                    self.add("data-file", self.relative(entry.path), Path(entry.path))
        for name in sorted(forms):
            full = f"{prefix}.{name}" if prefix else name
            if is_excluded(full, self.exclude):
                continue
            (_, kind, entry), *losers = sorted(forms[name], key=lambda form: form[0])
            source = None
            for _, loser_kind, loser in losers:
                if kind == "extension-module" and loser_kind == "module":
                    # Sources shipped beside their compiled form (mypyc, Cython): normal, and
                    # Python imports the extension module too.
                    source = Path(loser.path)
                    continue
                self.warn(
                    f"{self.relative(loser.path)}: left out, {full!r} is "
                    f"{self.relative(entry.path)} ({kind}), as Python would import it"
                )
            path = Path(entry.path)
            if kind == "package":
                self.add("package", full, path / "__init__.py", self.relative(path / "__init__.py"))
                self.package(path, full)
            elif kind == "extension-package":
                init = _extension_init(path, name, self.suffixes)
                assert init is not None
                self.add(
                    "extension-package",
                    full,
                    init,
                    self.relative(init),
                    path / "__init__.py" if (path / "__init__.py").is_file() else None,
                )
                self.package(path, full)
            elif kind == "namespace-package":
                if any((path / f"__init__{suffix}").exists() for suffix in self.suffixes):
                    self.warn(
                        f"{self.relative(path)}: an extension module __init__ is not "
                        "supported; collected as a namespace package"
                    )
                self.add("namespace-package", full, None)
                self.package(path, full)
            else:
                self.add(kind, full, path, self.relative(path), source)

    def data(self, directory: Path) -> None:
        """Every file below ``directory`` (no sources, no bytecode) as a data file."""
        for entry in _entries(directory):
            if entry.is_dir():
                if entry.name != "__pycache__":
                    self.data(Path(entry.path))
            elif entry.is_file() and not entry.name.endswith((".pyc", ".pyo", _SOURCE_SUFFIX)):
                self.add("data-file", self.relative(entry.path), Path(entry.path))

    def files(self, kind: str, directory: Path) -> None:
        for entry in _entries(directory):
            if entry.is_dir():
                self.files(kind, Path(entry.path))
            elif entry.is_file():
                self.add(kind, self.relative(entry.path), Path(entry.path))

    def prefix_data(self, listed: list[tuple[str, str, str]]) -> None:
        """The files each distribution's ``RECORD`` lists outside the import root (the wheel's
        ``.data/data/`` scheme), as ``(dist-info directory, name, path as listed)`` from
        :func:`_prefix_listed`: carried as data files named relative to the installation
        prefix (``share/x``), which an executable answers at ``sys.prefix/share/x``. Found
        where pip put them: beside the root's packages (``--target`` moves them there) or where
        the record points (an environment's prefix)."""
        seen = {item.name for item in self.collection.items if item.kind == "data-file"}
        modules = {item.name for item in self.collection.items if item.kind in MODULE_KINDS}
        for dist, name, path in listed:
            if name in seen:
                continue
            top = name.split("/")[0]
            if top in modules:
                self.warn(
                    f"{dist}: {name} is installed outside the packages, but {top!r} is a "
                    "module the archive holds: left out"
                )
                continue
            candidates = [self.root / name, Path(os.path.normpath(self.root / path))]
            found = next((file for file in candidates if file.is_file()), None)
            if found is not None:  # (else removed since, or named twice by the record)
                seen.add(name)
                self.collection.items.append(Item("data-file", name, found, dist=dist))

    def libraries(self, directory: Path) -> None:
        """Shared libraries a wheel ships (``numpy.libs/``, ``pkg/.libs/``), by file name."""
        for entry in _entries(directory):
            if entry.is_file() and ".so" in entry.name:
                self.add("shared-library", entry.name, Path(entry.path))


def collect_stdlib(
    exclude: Iterable[str] = DEFAULT_STDLIB_EXCLUDES, layout: Layout | None = None
) -> Collection:
    """The standard library of ``layout`` (the interpreter packed for: by default the running
    one; a cross build's is its target runtime's), ``lib-dynload`` extension modules included,
    minus the packages and modules ``exclude`` matches (see :data:`DEFAULT_STDLIB_EXCLUDES`)."""
    layout = layout or running()
    root = layout.stdlib
    if not (root / "os.py").is_file():
        raise CollectError(
            f"the standard library of {layout.owner} is not at {root} (no os.py there)",
            hint="is this a relocated or embedded Python?",
        )
    collection = Collection(root)
    walker = _Walker(root, exclude, collection, layout.extension_suffixes)

    def top_level(entry: os.DirEntry[str]) -> bool:
        return (
            entry.name in ("site-packages", "dist-packages", "lib-dynload")
            or entry.name.startswith("config-")
            or (not entry.is_dir() and not entry.name.endswith(_SOURCE_SUFFIX))
        )

    walker.package(root, "", top_level)
    dynload = layout.lib_dynload
    if dynload is None:
        collection.warnings.append(
            f"no lib-dynload directory for {layout.owner}: "
            "the archive has no stdlib extension modules"
        )
    else:
        dynload_walker = _Walker(dynload, exclude, collection, layout.extension_suffixes)
        dynload_walker.package(
            dynload, "", lambda entry: entry.is_dir() or entry.name.endswith(_SOURCE_SUFFIX)
        )
    if any(item.name == "tkinter" for item in collection.items):
        _add_tcl_libraries(root.parent, collection)
    return collection


#: The Tcl and Tk script libraries (``init.tcl``, ``tk.tcl``, encodings) of a runtime, installed
#: beside its ``lib/python3.X`` (:data:`ingot.runtime.recipes.SCRIPT_LIBRARIES`).
TCL_SCRIPT_LIBRARIES = ("tcl8.6", "tk8.6")


def _add_tcl_libraries(lib: Path, collection: Collection) -> None:
    """Carries the Tcl and Tk script libraries found in ``lib`` (a runtime's) as data of the
    ``tkinter`` package (``tkinter/tcl8.6/init.tcl``): Tcl reads them by path, so the build puts
    ``tkinter`` under the files policy, and the runtime's ``_tkinter`` looks for them beside
    the package (:func:`ingot.runtime.recipes.patch_python`). An interpreter without them (a
    distribution's, whose Tcl knows its own) carries none."""
    if not (lib / TCL_SCRIPT_LIBRARIES[0] / "init.tcl").is_file():
        return
    for library in TCL_SCRIPT_LIBRARIES:
        for path in sorted((lib / library).rglob("*")):
            if path.is_file():
                name = f"tkinter/{path.relative_to(lib).as_posix()}"
                collection.items.append(Item("data-file", name, path))


def collect_directory(
    path: str | os.PathLike[str],
    *,
    exclude: Iterable[str] = (),
    top_level_data: bool = False,
    layout: Layout | None = None,
) -> Collection:
    """A directory of packages (``site-packages``, a ``pip install --target`` directory): its
    modules, packages, namespace packages, extension modules, package data, ``*.dist-info`` (and
    ``*.egg-info``) files and the shared libraries of ``*.libs`` directories. With
    ``top_level_data`` (an application's own directory), also the files of its top-level
    directories that hold no modules (a script's ``templates/``). Extension modules are those
    of ``layout``'s interpreter (by default the running one)."""
    suffixes = (layout or running()).extension_suffixes
    root = Path(path)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a directory"
        raise CollectError(
            f"cannot collect {root}: it {what}",
            hint="give a directory of packages, e.g. made with `pip install --target DIR ...`",
        )
    collection = Collection(root)
    walker = _Walker(root, exclude, collection, suffixes)
    walker.top_level_data = top_level_data
    if (root / "__init__.py").is_file():
        walker.warn(
            f"{root} has an __init__.py: it is a package, and its modules are collected "
            f"as top-level modules; did you mean its parent, {root.resolve().parent}?"
        )

    prefix_listed = _prefix_listed(root)
    prefix_tops = {name.split("/")[0] for _, name, _ in prefix_listed}

    def top_level(entry: os.DirEntry[str]) -> bool:
        name = entry.name
        if (
            entry.is_dir()
            and name in prefix_tops
            and not (Path(entry.path) / "__init__.py").exists()
        ):
            return True  # the data scheme's `share/`...: carried by prefix_data
        if entry.is_dir():
            if name.endswith((".dist-info", ".egg-info")):
                walker.files("dist-info-file", Path(entry.path))
                return True
            return name.endswith(".data") or (
                name == "bin" and not (Path(entry.path) / "__init__.py").exists()
            )
        if name.endswith(".pth"):
            walker.warn(
                f"{name}: .pth files are not supported, left out (the paths or code it "
                "adds to sys.path are not in the archive)"
            )
        module = name.endswith(_SOURCE_SUFFIX) or _extension_module(entry, suffixes) is not None
        if top_level_data and not module and entry.is_file() and not name.endswith(".pth"):
            # (the application's own data file beside its script: answered at <exe>/NAME)
            walker.add("data-file", name, Path(entry.path))
        return not module

    walker.package(root, "", top_level)
    walker.prefix_data(prefix_listed)
    return collection
