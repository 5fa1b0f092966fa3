"""``ingot inspect``: what an executable or archive carries, and the oldest glibc it runs on."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ingot._ingot import (
    FIRST_USE,
    FIRST_USE_MODULE,
    LAUNCH_CONFIG,
    PREFIX_DATA,
    SYSTEM_FIRST,
    IngotFinder,
    archive_info,
)
from ingot.build.archive.sbom import SBOM, requirements, with_launcher
from ingot.elf import GlibcFloor, archive_floor, elf_machine
from ingot.errors import BuildError

__all__ = ["bill_of_materials", "carried_requirements", "describe", "executable_glibc_floor"]

#: ``describe``'s report.
Json = dict[str, Any]


def executable_glibc_floor(
    path: Path, finder: IngotFinder | None = None, launcher_size: int | None = None
) -> GlibcFloor:
    """The oldest glibc the executable (or archive) at ``path`` runs on: the newest ``GLIBC_x.y``
    its launcher or any extension module or shared library in its archive needs, and which one
    (an ``ingot.elf.GlibcFloor``)."""
    finder = finder or IngotFinder(str(path), any_python=True)
    if launcher_size is None:
        launcher_size = archive_info(path)["launcher_size"]
    launcher = None
    if launcher_size > 0:
        with open(path, "rb") as file:
            launcher = file.read(launcher_size)
    try:
        native = finder.version_needs()
    except (ValueError, OSError, ImportError) as error:
        raise BuildError(
            f"cannot read the native code in {path}: {error}",
            hint="the archive may be damaged: rebuild it",
        ) from error
    try:
        system_first = json.loads(finder.read(SYSTEM_FIRST))
    except (OSError, ValueError):
        system_first = {}  # (an archive without the table: every carried library counts)
    return archive_floor(launcher, native, system_first)


def describe(path: str | os.PathLike[str]) -> Json:
    """What the executable or archive at ``path`` carries: entries, launch config, Python."""
    path = Path(path)
    try:
        info = archive_info(path)
        finder = IngotFinder(str(path), any_python=True)
        entries = finder.entry_sizes()
    except (OSError, ImportError, ValueError) as error:
        raise BuildError(
            f"cannot read {path}: {error}",
            hint="give an executable made by `ingot build` or an archive",
        ) from error
    try:
        launch = json.loads(finder.read(LAUNCH_CONFIG))
    except (OSError, ImportError, ValueError, KeyError):
        launch = None
    floor = executable_glibc_floor(path, finder, info["launcher_size"])
    try:
        prefix_data = json.loads(finder.read(PREFIX_DATA))
    except (OSError, ImportError, ValueError, KeyError):
        prefix_data = {}  # (none carried: sys.prefix is the executable's directory)
    try:
        first_use = finder.read(FIRST_USE).decode("utf-8", "replace").splitlines()
    except (OSError, ImportError, ValueError, KeyError):
        first_use = []  # (an archive written without one)
    tag = f"{FIRST_USE_MODULE} "
    expected = {line[len(tag) :] for line in first_use if line.startswith(tag)}
    runtime = runtime_facts((launch or {}).get("runtime"))
    # The architecture it runs on: its launcher's; an archive's, its runtime's (else unsaid).
    machine = elf_machine(path) if info["launcher_size"] > 0 else None
    if machine is None and runtime and runtime.get("target"):
        machine = str(runtime["target"]).split("-", 1)[0]
    return {
        "path": str(path),
        "size": info["file_size"],
        "archive_size": info["archive_size"],
        "launcher_size": info["launcher_size"],
        "python": info["python"],
        "machine": machine,
        "launch": launch,
        "glibc_floor": {
            "version": _dotted(floor.version),
            "set_by": floor.needed_by,
            # The launcher's and every native file's own floor, by name.
            "each": {name: _dotted(version) for name, version in sorted(floor.each.items())},
            # Libraries taken from the system where its copy defines these versions; their
            # carried copies' floors (in "each") count only elsewhere.
            "system_first": floor.system_first,
        },
        "runtime": runtime,
        "files_packages": finder.files_packages(),
        # Distributions whose files installed outside their packages are carried (``*.dist-info``
        # -> top directories): then the executable is sys.prefix.
        "prefix_data": prefix_data,
        # The bytecode a start hands marshal in place (stored as is), by module, of the modules
        # it is expected to import (the first-use list).
        "bytecode_read_in_place": {
            name: stored for name, stored in finder.bytecode_in_place() if name in expected
        },
        "entries": [
            {"kind": kind, "name": name, "size": size, "stored": stored}
            for kind, name, size, stored in entries
        ],
    }


def _dotted(version: tuple[int, int] | None) -> str | None:
    return ".".join(map(str, version)) if version else None


#: A runtime's name: ``cpython-<version>-<machine>-linux-gnu.<glibc>`` (ingot.runtime.builder).
_RUNTIME_NAME = re.compile(r"cpython-(?P<python>\d+\.\d+\.\d+)-(?P<target>.+)\.(?P<glibc>\d+\.\d+)")


def runtime_facts(name: object) -> Json | None:
    """The runtime an executable carries, from its name in launch.json: its name, CPython release
    and target glibc (None for the build machine's Python)."""
    if not isinstance(name, str):
        return None
    match = _RUNTIME_NAME.fullmatch(name)
    if match is None:
        return {"name": name, "python": None, "glibc": None, "target": None}
    return {
        "name": name,
        "python": match["python"],
        "glibc": match["glibc"],
        "target": match["target"],
    }


def bill_of_materials(path: str | os.PathLike[str]) -> bytes:
    """The bill of materials (CycloneDX JSON) the executable or archive at ``path`` carries."""
    try:
        finder = IngotFinder(str(path), any_python=True)
    except (OSError, ImportError, ValueError) as error:
        raise BuildError(
            f"cannot read {path}: {error}",
            hint="give an executable made by `ingot build` or an archive",
        ) from error
    try:
        stored = bytes(finder.read(SBOM))
    except (OSError, ImportError, ValueError, KeyError):
        raise BuildError(
            f"{path} carries no bill of materials",
            hint="build it again with this ingot (`ingot build` writes one into every "
            "executable; `ingot pack` does not)",
        ) from None
    launcher_size = archive_info(Path(path))["launcher_size"]
    if launcher_size == 0:
        return stored  # (an archive alone)
    with open(path, "rb") as file:
        launcher = file.read(launcher_size)
    return with_launcher(
        stored, launcher, executable_glibc_floor(Path(path), finder, launcher_size)
    )


def carried_requirements(path: str | os.PathLike[str]) -> list[str]:
    """The distributions the executable at ``path`` carries, as ``name==version`` lines."""
    return requirements(bill_of_materials(path))
