"""Where the standard library an archive carries is, and how its extension modules are named: the
running interpreter's, or, for a build for another architecture, the target runtime's, read from
its files (its ``_sysconfigdata``), never by running it.

A build's layout comes from its target (:func:`ingot.build.stages.packing.stdlib_layout`) and is
handed to what collects files (:class:`ingot.build.archive.pack.PackOptions`, then
:mod:`ingot.build.archive.collect`); nothing holds it in a global. Bytecode is the same for every
architecture of one CPython release, so nothing else of a build depends on it.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ingot.errors import BuildError
from ingot.machine import host_machine
from ingot.runtime.store import sysconfig_vars

__all__ = ["Layout", "for_target", "of_prefix", "running"]


@dataclass(frozen=True)
class Layout:
    """A CPython's standard library and the suffixes of its extension modules."""

    stdlib: Path  # lib/python3.X: os.py and the standard library's packages
    lib_dynload: Path | None  # its extension modules
    extension_suffixes: tuple[str, ...]  # in the import system's order of preference
    machine: str  # the architecture its extension modules are for
    #: The interpreter whose files these are (for messages).
    owner: str


def running() -> Layout:
    """The running interpreter's layout."""
    candidates = [Path(sysconfig.get_path("platstdlib")) / "lib-dynload"]
    candidates += [Path(p) for p in sys.path if os.path.basename(p) == "lib-dynload"]
    return Layout(
        stdlib=Path(sysconfig.get_paths()["stdlib"]),
        lib_dynload=next((p for p in candidates if p.is_dir()), None),
        extension_suffixes=tuple(importlib.machinery.EXTENSION_SUFFIXES),
        machine=host_machine().name,
        owner=sys.executable,
    )


def of_prefix(prefix: Path, machine: str) -> Layout:
    """The layout of the CPython installed at ``prefix`` (a runtime's ``python``), built for
    ``machine``: as its import system would have it (``EXTENSION_SUFFIXES`` on Linux: the
    interpreter's ``EXT_SUFFIX``, then ``.abi3.so``, then ``.so``)."""
    variables = sysconfig_vars(prefix)
    version = str(variables.get("VERSION", ""))
    stdlib = prefix / "lib" / f"python{version}"
    suffix = variables.get("EXT_SUFFIX")
    if not (stdlib / "os.py").is_file() or not isinstance(suffix, str):
        raise BuildError(
            f"{prefix} is not an installed CPython (no lib/python{version}/os.py or EXT_SUFFIX)",
            hint="install or build the runtime again",
        )
    if not suffix.endswith(f"-{machine}-linux-gnu.so"):
        raise BuildError(
            f"the CPython at {prefix} names its extension modules *{suffix}: not for {machine}",
            hint="install or build the runtime again",
        )
    dynload = stdlib / "lib-dynload"
    return Layout(
        stdlib=stdlib,
        lib_dynload=dynload if dynload.is_dir() else None,
        extension_suffixes=(suffix, ".abi3.so", ".so"),
        machine=machine,
        owner=str(prefix),
    )


def for_target(stdlib_prefix: Path | None, machine: str) -> Layout:
    """The standard library a target's archive takes: of the interpreter the build runs under,
    or, for another architecture, of the target runtime's CPython at ``stdlib_prefix``."""
    return of_prefix(stdlib_prefix, machine) if stdlib_prefix is not None else running()
