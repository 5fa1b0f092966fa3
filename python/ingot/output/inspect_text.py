"""What ``ingot inspect`` prints of an executable or archive (its ``--json`` is
:func:`ingot.inspection.describe`'s answer as is): its sizes, launch, Python and runtime, glibc
floor, files policy and entries; with ``--sizes``, the biggest groups and entries and what a
build could store smaller."""

from __future__ import annotations

import json
import re
from typing import Any

from ingot._ingot import KIND_NAMESPACES, NATIVE_BLOB_MIN, NATIVE_KINDS, RESERVED_PREFIX
from ingot.build import report
from ingot.build.archive.import_tables import in_test_package, suite_of_file
from ingot.build.stages.check import newest_versions

__all__ = ["show"]


def show(info: dict[str, Any], *, sizes: bool) -> None:
    """Prints ``info`` (:func:`ingot.inspection.describe`'s), with the biggest entries and
    groups instead of every entry when ``sizes``."""
    print(
        f"{info['path']}: {report.size(info['size'])} (launcher {report.size(info['launcher_size'])}, "
        f"archive {report.size(info['archive_size'])}), Python {info['python']}"
        + (f", {info['machine']}" if info["machine"] else "")
    )
    print(f"launch: {json.dumps(info['launch']) if info['launch'] else 'none'}")
    runtime = info["runtime"]
    if runtime is None:
        print(f"python: the build machine's (Python {info['python']})")
    else:
        release = (
            f"CPython {runtime['python']}" if runtime["python"] else "Python " + info["python"]
        )
        target = f" for glibc {runtime['glibc']}" if runtime["glibc"] else ""
        print(f"python: runtime {runtime['name']} ({release}{target})")
    floor = info["glibc_floor"]
    print(
        f"needs glibc {floor['version']} or later (set by {floor['set_by']})"
        if floor["version"]
        else "needs no versioned glibc symbol"
    )
    _native_floors(floor["each"], (runtime or {}).get("glibc"))
    for library, versions in sorted(floor["system_first"].items()):
        carried = floor["each"].get(library)
        print(
            f"{library}: the system's where it defines {newest_versions(versions)}, else the "
            "carried copy" + (f" (glibc {carried})" if carried else "")
        )
    print(f"files policy: {', '.join(info['files_packages']) or 'none (everything from memory)'}")
    if info["prefix_data"]:
        carried = ", ".join(
            f"{directory.removesuffix('.dist-info')} ({', '.join(tops)})"
            for directory, tops in info["prefix_data"].items()
        )
        print(
            f"sys.prefix: the executable, which carries files installed outside packages: {carried}"
        )
    if sizes:
        _sizes(info["entries"], info["bytecode_read_in_place"])
        return
    kinds: dict[str, list[int]] = {}
    for entry in info["entries"]:
        counts = kinds.setdefault(entry["kind"], [0, 0])
        counts[0] += 1
        counts[1] += entry["size"]
    print(
        "; ".join(f"{count} {kind} ({report.size(size)})" for kind, (count, size) in kinds.items())
    )
    for entry in info["entries"]:
        print(f"{entry['kind']:<20}{entry['size']:>12}  {entry['name']}")


def _native_floors(each: dict[str, str | None], target: str | None, shown: int = 8) -> None:
    """The glibc floor each native file sets, highest first: those above the runtime's target
    (or, for the build machine's Python, the highest ones)."""

    def key(version: str | None) -> tuple[int, ...]:
        return tuple(int(part) for part in version.split(".")) if version else ()

    ranked = sorted(each.items(), key=lambda item: key(item[1]), reverse=True)
    if target is not None:
        ranked = [(name, version) for name, version in ranked if key(version) > key(target)]
        if not ranked:
            print(f"native code: {len(each)} files, none needs more than glibc {target}")
            return
    listed = ", ".join(f"{name} {version or '-'}" for name, version in ranked[:shown])
    more = f" and {len(ranked) - shown} more" if len(ranked) > shown else ""
    above = f" above glibc {target}" if target is not None else ""
    print(f"native code{above}: {listed}{more}")


#: Below this, the bytecode a start reads in place is not worth a line of ``inspect --sizes``.
_BYTECODE_IN_PLACE_SHOWN = 1 << 20


def _could_shrink(entries: list[dict[str, Any]], read_in_place: dict[str, int]) -> list[str]:
    """What of an archive a build could store smaller or leave out: native code stored as is,
    the bytecode a start reads stored as is, and packages' test suites."""
    lines = []
    raw = [
        entry
        for entry in entries
        if entry["kind"] in NATIVE_KINDS and entry["stored"] >= entry["size"] > 0
    ]
    # Native images at least NATIVE_BLOB_MIN large are stored compressed by a default build, even
    # those a start reads (ingot.build.resolve.settings.DEFAULT_NATIVE_COMPRESSION).
    large = [entry for entry in raw if entry["size"] >= NATIVE_BLOB_MIN]
    if raw:
        lines.append(
            f"native code stored as is: {report.size(sum(e['stored'] for e in raw))} in "
            f"{len(raw)} images"
            + (
                f" ({report.size(sum(e['stored'] for e in large))} of it in images of "
                f"{NATIVE_BLOB_MIN // 1024} KiB or more, which a build with compression on "
                "stores compressed)"
                if large
                else ""
            )
        )
    in_place = sum(read_in_place.values())
    if in_place >= _BYTECODE_IN_PLACE_SHOWN:
        lines.append(
            f"bytecode a start reads, stored as is: {report.size(in_place)} in "
            f"{len(read_in_place)} modules (read in place; --compress-start stores it "
            "compressed, decompressed ahead of the imports)"
        )
    tests = [entry for entry in entries if _in_test_suite(entry)]
    if tests:
        packages = sorted({re.split(r"[./]", entry["name"])[0] for entry in tests})
        lines.append(
            f"test suites: {report.size(sum(e['stored'] for e in tests))} in {len(tests)} "
            f"entries of {', '.join(packages[:5])}{' ...' if len(packages) > 5 else ''} "
            "(--exclude 'PACKAGE.tests' leaves them out, if the app does not run them)"
        )
    return lines


def _in_test_suite(entry: dict[str, Any]) -> bool:
    """Whether an entry is part of a package's test suite, as a build decides it (a module of a
    test package, or a file in its directories)."""
    namespace = KIND_NAMESPACES.get(entry["kind"])
    if namespace == "modules":
        return in_test_package(entry["name"])
    return namespace == "files" and suite_of_file(entry["name"]) is not None


def _sizes(entries: list[dict[str, Any]], read_in_place: dict[str, int], shown: int = 20) -> None:
    """The biggest entries and groups, by stored bytes (and what they hold once decompressed)."""
    groups: dict[str, list[int]] = {}
    for entry in entries:
        name = entry["name"]
        group = (
            "(ingot)"
            if name.startswith(RESERVED_PREFIX)
            else name
            if entry["kind"] == "shared-library"
            else re.split(r"[./]", name)[0]
        )
        counts = groups.setdefault(group, [0, 0, 0])
        counts[0] += 1
        counts[1] += entry["stored"]
        counts[2] += entry["size"]
    total_stored = sum(entry["stored"] for entry in entries)
    total = sum(entry["size"] for entry in entries)
    print(
        f"{len(entries)} entries: {report.size(total_stored)} stored ({report.size(total)} decompressed)"
    )
    for line in _could_shrink(entries, read_in_place):
        print(line)
    print(f"\nbiggest groups{'':<26}{'entries':>8}{'stored':>12}{'decompressed':>14}")
    for group, (count, stored, size) in sorted(groups.items(), key=lambda item: -item[1][1])[
        :shown
    ]:
        print(f"  {group:<38}{count:>8}{report.size(stored):>12}{report.size(size):>14}")
    print(f"\nbiggest entries{'':<25}{'kind':>8}{'stored':>12}{'decompressed':>14}")
    for entry in sorted(entries, key=lambda entry: -entry["stored"])[:shown]:
        print(
            f"  {entry['name']:<38}{entry['kind'][:8]:>8}{report.size(entry['stored']):>12}"
            f"{report.size(entry['size']):>14}"
        )
