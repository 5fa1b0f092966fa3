"""Adding one planned item to the archive writer (:func:`add_item`): a module compiled to
bytecode, a native image cut to what the loader reads, a data file; and what the build learns
from each as it goes (:class:`Scan`: the regular expressions modules compile, what they import,
what native code needs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingot import elf
from ingot._ingot import (
    EXTENSION_KINDS,
    NATIVE_KINDS,
    ArchiveWriter,
    elf_version_needs,
    loadable_image,
)
from ingot.build.analysis.firstuse import TOP
from ingot.build.archive.buildcache import NO_CACHE, BuildMemo, cached_imports
from ingot.build.archive.collect import Item
from ingot.build.archive.libraries import is_shared_object_name
from ingot.build.archive.prefetch import compiled, patterns
from ingot.build.archive.reach import binary_names

__all__ = ["Scan", "add_item", "package_imports", "read_item", "tree_path"]


def read_item(item: Item) -> bytes:
    assert item.path is not None, item  # a namespace package has no file and is never read
    with open(item.path, "rb") as file:
        return file.read()


def tree_path(item: Item, suffix: str) -> str:
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


@dataclass
class Scan:
    """What ``add_item`` learns from the items it adds: per module, the regular expressions it
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


def add_item(
    writer: ArchiveWriter,
    item: Item,
    levels: tuple[int, ...],
    include_source: bool,
    keep_debug_info: bool = False,
    scan: Scan | None = None,
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
    content = read_item(item)
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
            and is_shared_object_name(item.name)
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
