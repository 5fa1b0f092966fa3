"""The check stage of a build: the archive holds what launch.json runs (before the output is
written), and the oldest glibc the written executable runs on, with what the user should know
about it."""

from __future__ import annotations

import ast
from pathlib import Path

from ingot._ingot import EXTENSION_KINDS
from ingot.build.archive.pack import PackResult
from ingot.build.resolve.spec import Spec
from ingot.elf import GlibcFloor, archive_floor
from ingot.errors import BuildError

__all__ = ["check_archive", "glibc_verdict", "newest_versions"]

#: The kinds of entry the launcher can run as a module.
RUNNABLE = ("module", "package", *EXTENSION_KINDS)


def check_archive(spec: Spec, packed: PackResult, roots: list[Path]) -> None:
    """BuildError if the module to run is not in the archive, or surely lacks the function
    (read from its source in the staged ``roots``, not from the archive written)."""
    module = spec.plan.run["module"]
    if not any(name == module for kind in RUNNABLE for name in packed.names(kind)):
        raise BuildError(
            f"the module to run, {module!r}, is not in the archive",
            hint="check the entry point's module name (and that it is not "
            "left out by an exclude pattern)",
        )
    if spec.plan.run["kind"] == "function":
        _check_function(roots, module, spec.plan.run["function"])


def glibc_verdict(
    spec: Spec, packed: PackResult, launcher: bytes
) -> tuple[GlibcFloor | None, list[str], list[str]]:
    """The oldest glibc the executable runs on (None for an archive), from what it is made of
    (the ``launcher`` image and what the ``packed`` archive's native files need), and the notes
    and warnings that go with it: a runtime's executable that needs more than 2.17 (a library
    it carries)."""
    notes: list[str] = []
    if packed.desktop_libraries:
        names = sorted(packed.desktop_libraries)
        notes.append(
            "needs from the target system (desktop libraries, not carried): "
            + ", ".join(names[:10])
            + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        )
    if packed.plugin_needs:
        by_plugin: dict[str, list[str]] = {}
        for name, plugin in sorted(packed.plugin_needs.items()):
            by_plugin.setdefault(plugin, []).append(name)
        shown = [f"{plugin} ({', '.join(names)})" for plugin, names in sorted(by_plugin.items())]
        notes.append(
            "plugins that load only where the target system has what they need (not carried): "
            + ", ".join(shown[:6])
            + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")
        )
    if spec.archive_only:
        return None, notes, []
    floor = archive_floor(launcher, packed.native_needs, packed.system_first)
    warnings: list[str] = []
    if floor.version is None:
        return floor, notes, warnings
    version = f"{floor.version[0]}.{floor.version[1]}"
    runtime = spec.target.runtime
    notes.append(
        f"runs on Linux with glibc {version} or later, set by {floor.needed_by}"
        + (f" (runtime {runtime})" if runtime else "")
    )
    for library, versions in sorted(floor.system_first.items()):
        carried = floor.each.get(library)
        notes.append(
            f"{library}: the system's where it defines {newest_versions(versions)}, else the "
            "carried copy" + (f", which needs glibc {carried[0]}.{carried[1]}" if carried else "")
        )
    if runtime and floor.version > (2, 17):
        above = sorted(
            (needed, name)
            for name, needed in floor.each.items()
            if needed is not None and needed > (2, 17) and name not in floor.system_first
        )[::-1]
        named = ", ".join(f"{name} ({needed[0]}.{needed[1]})" for needed, name in above[:8])
        warnings.append(
            f"{floor.needed_by} needs glibc {version}: the executable will not run on older "
            f"systems than that, although its runtime needs only 2.17 (above 2.17: {named}"
            + (f" and {len(above) - 8} more" if len(above) > 8 else "")
            + ")"
        )
    return floor, notes, warnings


def _source_of(roots: list[Path], module: str) -> Path | None:
    """The source file of ``module`` in the first of ``roots`` that has it (as ``sys.path``
    would find it: a package's ``__init__.py`` before a module's file), or None."""
    relative = Path(*module.split("."))
    for root in roots:
        for candidate in (root / relative / "__init__.py", root / relative.with_suffix(".py")):
            if candidate.is_file():
                return candidate
    return None


def _check_function(roots: list[Path], module: str, function: str) -> None:
    """BuildError if the entry function is surely not defined by its module: no top-level
    binding of its first name (def, class, assignment, import) in the module's source. A module
    with ``from ... import *`` or a module ``__getattr__``, or without source, is trusted."""
    source = _source_of(roots, module)
    try:
        tree = ast.parse(source.read_bytes()) if source is not None else None
    except (OSError, SyntaxError, ValueError):
        return
    if tree is None:
        return
    first = function.split(".")[0]
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return
                bound.add(alias.asname or alias.name.split(".")[0])
    if first in bound or "__getattr__" in bound:
        return
    candidates = sorted(
        name for name in bound if not name.startswith("_") and isinstance(name, str)
    )[:8]
    raise BuildError(
        f"the entry point {module}:{function} names no function of {module}: "
        f"{module} defines no {first!r}",
        hint="check the function's name"
        + (f" ({module} defines {', '.join(candidates)})" if candidates else ""),
    )


def newest_versions(versions: list[str]) -> str:
    """The newest symbol version of each family: ``GLIBCXX_3.4.19 and CXXABI_1.3.7``."""
    newest: dict[str, tuple[tuple[int, ...], str]] = {}
    for version in versions:
        family, _, number = version.partition("_")
        key = tuple(int(part) for part in number.split(".") if part.isdigit())
        if family not in newest or key > newest[family][0]:
            newest[family] = (key, version)
    shown = [version for _, version in sorted(newest.values(), key=lambda item: item[1])[::-1]]
    return " and ".join(shown) or "the library"
