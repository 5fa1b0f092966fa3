"""What each step of :func:`ingot.build.archive.pack.pack` hands to the next: one frozen product
per step, each made from the one before it, and :class:`ingot.build.archive.result.PackResult`
assembled once from them at the end (:func:`pack_result`). No step writes into another's.

    collected -> reached -> linked -> compiled -> tabled -> written

A plan (``(name space, name) -> Item``) is a step's own dict: the next step that changes what
goes in copies it first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ingot import elf
from ingot._ingot import KINDS
from ingot.build.archive.collect import Collection, Item
from ingot.build.archive.entries import Scan
from ingot.build.archive.result import ManifestEntry, PackResult

__all__ = [
    "Collected",
    "Compiled",
    "Linked",
    "Plan",
    "Reached",
    "Tabled",
    "pack_result",
]

#: What goes into an archive: (name space, name) -> the item.
Plan = Mapping[tuple[str, str], Item]


@dataclass(frozen=True)
class Collected:
    """What the directories and the standard library hold (the standard library first)."""

    collections: tuple[Collection, ...]
    plan: Plan  # one item per name, the first collection's winning
    names: frozenset[str]  # the top-level names collected
    own: frozenset[str]  # the real paths of the application's own directories
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Reached:
    """What the application can reach (all that was collected, when not pruning)."""

    plan: Plan
    imports: Mapping[str, dict[str, list[str]]]  # the imports read on the way
    files_packages: tuple[str, ...]  # the top-level packages under the files policy
    left_out: Mapping[str, tuple[str, int, int]]
    whole_only: frozenset[str]
    named_only: Mapping[str, tuple[str, int]]


@dataclass(frozen=True)
class Linked:
    """The reached plan with the shared libraries its native code needs."""

    plan: Plan
    supplied: Mapping[str, str]  # libraries ingot itself carries -> their package URL
    desktop_libraries: Mapping[str, str]
    plugin_needs: Mapping[str, str]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Compiled:
    """The plan's items added to the writer: one manifest entry each (the ones left out are
    warnings), the trees of the files packages, and what the scan of the modules found."""

    manifest: tuple[ManifestEntry, ...]
    trees: Mapping[str, Mapping[str, bytes]]
    scan: Scan
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Tabled:
    """ingot's own entries added: the tables, the bill of materials, the regular expressions and
    the first-use list."""

    manifest: tuple[ManifestEntry, ...]  # the data files ingot wrote
    native_needs: tuple[elf.VersionNeeds, ...]
    system_first: Mapping[str, list[str]]
    regexes: int
    regexes_size: int


def pack_result(
    output: Path,
    size: int,
    seconds: float,
    collected: Collected,
    reached: Reached,
    linked: Linked,
    compiled: Compiled,
    tabled: Tabled,
) -> PackResult:
    """The result of a pack, from its products."""
    manifest = [*compiled.manifest, *tabled.manifest]
    counts = Counter(entry.kind for entry in manifest)
    sizes: Counter[str] = Counter()
    for entry in manifest:
        sizes[entry.kind] += entry.size
    return PackResult(
        output=output,
        size=size,
        counts={kind: counts[kind] for kind in KINDS},
        sizes={kind: sizes[kind] for kind in KINDS},
        warnings=[*collected.warnings, *linked.warnings, *compiled.warnings],
        manifest=manifest,
        seconds=seconds,
        regexes=tabled.regexes,
        regexes_size=tabled.regexes_size,
        left_out=dict(reached.left_out),
        native_needs=list(tabled.native_needs),
        desktop_libraries=dict(linked.desktop_libraries),
        whole_only=set(reached.whole_only),
        named_only=dict(reached.named_only),
        plugin_needs=dict(linked.plugin_needs),
        system_first=dict(tabled.system_first),
    )
