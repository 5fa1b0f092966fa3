"""What ``ingot cache list`` and ``ingot cache prune`` print: an entry a line (its section, size,
files, age and state), then the total."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ingot.build import report
from ingot.cachedir import CacheEntry

__all__ = ["show_entries", "show_removed"]


def show_entries(entries: Sequence[CacheEntry], root: Path) -> None:
    for entry in entries:
        state = "temporary" if entry.temporary else "in use" if entry.in_use else ""
        print(
            f"{entry.section:<7}{report.size(entry.size):>11}{entry.files:>7} files"
            f"{entry.age / 86400:>8.1f} days  {entry.path.name}  {state}".rstrip()
        )
    print(f"{len(entries)} entries, {report.size(sum(e.size for e in entries))} in {root}")


def show_removed(removed: Sequence[CacheEntry], *, dry_run: bool) -> None:
    verb = "would remove" if dry_run else "removed"
    for entry in removed:
        what = f"{entry.files} build cache segments in " if entry.section == "build" else ""
        print(f"{verb} {what}{entry.path} ({report.size(entry.size)})")
    print(f"{verb} {len(removed)} entries, {report.size(sum(e.size for e in removed))}")
