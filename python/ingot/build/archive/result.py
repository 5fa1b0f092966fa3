"""What :func:`ingot.build.archive.pack.pack` returns (frozen): what the archive holds (its manifest,
counts and sizes by kind), what it left out and why, and what its native code needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingot import elf
from ingot._ingot import KINDS

__all__ = ["ManifestEntry", "PackResult"]


@dataclass(frozen=True)
class ManifestEntry:
    kind: str
    name: str
    size: int  # bytes of all its blobs, uncompressed (source + bytecode for a module)


@dataclass(frozen=True)
class PackResult:
    """What a pack wrote, made once from its steps' products
    (:func:`ingot.build.archive.products.pack_result`)."""

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
    #: plugins are (:func:`ingot.build.archive.libraries.add_libraries`).
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
