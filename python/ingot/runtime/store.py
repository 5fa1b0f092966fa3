"""Runtimes: CPython and the libraries its standard library uses, built from their source releases
with :mod:`ingot.runtime.toolchain` for glibc 2.17, and kept in the user's cache.

    ingot runtime build 3.11 --sources DIR        # or --source python=Python-3.11.9.tgz ...
    ingot runtime list
    ingot runtime remove 3.11.2

A runtime is a directory ``<store>/cpython-<version>-<machine>-linux-gnu.<glibc>/`` (``machine``:
``x86_64``, ``aarch64``; see :mod:`ingot.machine`):

    python/          the installed interpreter (``--prefix``): bin/python3.X, lib/python3.X
                     (compiled standard library, lib-dynload/*.so), lib/libpython3.X.a
    runtime.json     what it is: version, target, toolchain, sources (file names, sha256), the
                     glibc floor of every ELF file in it and which file sets it, build time
    build.log        every command of the build and its output

The store is ``$INGOT_RUNTIMES`` if set, else ``$XDG_CACHE_HOME/ingot/runtimes``, else
``~/.cache/ingot/runtimes`` (not the extraction cache, which ``ingot cache prune`` manages). A
runtime is built in a temporary directory next to its final place and renamed into it when
complete: an interrupted build leaves no half runtime.

Sources never come from the network implicitly: a file (``--source NAME=PATH``), a directory
searched by the recipes' file name patterns (``--sources DIR``), or an URL with the sha256 the
user vouches for (``--source NAME=URL#sha256=HEX``).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingot.errors import IngotError
from ingot.machine import host_machine
from ingot.runtime.pins import sha256_of

__all__ = [
    "RUNTIME_FORMAT",
    "Runtime",
    "RuntimeError_",
    "check_safe_path",
    "find_runtime",
    "list_runtimes",
    "read_runtime",
    "record_hashes",
    "remove_runtime",
    "sha256_of",
    "store",
    "sysconfig_vars",
    "trusted_files",
    "verify_runtime",
]
#: runtime.json's format version.
RUNTIME_FORMAT = 1


class RuntimeError_(IngotError):
    """A runtime cannot be built, found or removed."""


def store(variables: Mapping[str, str] | None = None) -> Path:
    """Where runtimes are kept, as ``variables`` say (``INGOT_RUNTIMES``, ``XDG_CACHE_HOME``,
    ``HOME``): a build's snapshot of the environment, taken while it resolved; None (the
    ``ingot runtime`` commands): the environment now."""
    variables = os.environ if variables is None else variables
    given = variables.get("INGOT_RUNTIMES")
    if given:
        path = Path(given)
        if not path.is_absolute():
            raise RuntimeError_(
                f"INGOT_RUNTIMES={path} is not an absolute path",
                hint="give an absolute directory, or unset it",
            )
        return path
    base = variables.get("XDG_CACHE_HOME")
    home = variables.get("HOME")
    if base and os.path.isabs(base):
        root = Path(base)
    elif home and os.path.isabs(home):
        root = Path(home) / ".cache"
    else:
        root = Path.home() / ".cache"  # (no HOME: the password database's)
    return root / "ingot" / "runtimes"


@dataclass
class Runtime:
    """A built runtime in the store."""

    path: Path
    info: dict[str, Any]  # runtime.json

    @property
    def version(self) -> str:
        return str(self.info["python"]["version"])

    @property
    def python(self) -> Path:
        """The runtime's interpreter (runs on the build machine too: its glibc is newer)."""
        minor = ".".join(self.version.split(".")[:2])
        return self.path / "python" / "bin" / f"python{minor}"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def machine(self) -> str:
        """The architecture it is built for (``x86_64``, ``aarch64``): the start of its
        target (``aarch64-linux-gnu.2.17``)."""
        return str(self.info.get("target", "")).split("-", 1)[0]

    @property
    def cross(self) -> bool:
        """Whether it is built for another architecture than this machine's: its interpreter
        cannot run here."""
        return self.machine != host_machine().name


def sysconfig_vars(prefix: Path) -> dict[str, Any]:
    """The build-time variables (``EXT_SUFFIX``, ``MULTIARCH``, ``LIBPL``, ...) of the CPython
    installed at ``prefix``, read from its ``_sysconfigdata_*.py`` as data (not run: the
    interpreter may be another machine's)."""
    found = sorted(prefix.glob("lib/python3.*/_sysconfigdata_*.py"))
    if not found:
        raise RuntimeError_(
            f"{prefix} has no lib/python3.X/_sysconfigdata_*.py: not an installed CPython",
            hint="build or install the runtime again",
        )
    tree = ast.parse(found[0].read_text(), str(found[0]))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "build_time_vars"
            for target in node.targets
        ):
            values = ast.literal_eval(node.value)
            if isinstance(values, dict):
                return values
    raise RuntimeError_(f"{found[0]} defines no build_time_vars dictionary")


def read_runtime(path: Path) -> Runtime | None:
    try:
        info = json.loads((path / "runtime.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("format") != RUNTIME_FORMAT:
        return None
    return Runtime(path, info)


def list_runtimes(root: Path | None = None) -> list[Runtime]:
    """The complete runtimes in the store (``root``, default :func:`store`), newest version
    first."""
    root = root or store()
    if not root.is_dir():
        return []
    found = [
        runtime
        for entry in sorted(root.iterdir())
        if entry.is_dir()
        and not entry.name.startswith(".")
        and (runtime := read_runtime(entry)) is not None
    ]

    def key(runtime: Runtime) -> tuple[int, ...]:
        return tuple(int(part) for part in runtime.version.split("."))

    return sorted(found, key=key, reverse=True)


def find_runtime(
    wanted: str, machine: str | None = None, root: Path | None = None
) -> Runtime | None:
    """The newest runtime for ``machine`` (default: this one's) in the store (``root``, default
    :func:`store`) whose version is ``wanted`` or starts with it (``3.11`` finds ``3.11.2``)."""
    machine = machine or host_machine().name
    for runtime in list_runtimes(root):
        if runtime.machine != machine:
            continue
        if runtime.version == wanted or runtime.version.startswith(wanted + "."):
            return runtime
    return None


def remove_runtime(wanted: str, machine: str | None = None) -> Runtime:
    runtime = find_runtime(wanted, machine)
    if runtime is None:
        raise RuntimeError_(
            f"no runtime {wanted} for {machine or host_machine().name} in {store()}",
            hint="`ingot runtime list` shows the runtimes there are",
        )
    doomed = runtime.path.with_name(f".removing-{runtime.name}-{os.getpid()}")
    runtime.path.rename(doomed)  # atomically out of the store, then deleted
    shutil.rmtree(doomed)
    return runtime


def trusted_files(runtime: Runtime) -> list[Path]:
    """The files of a runtime that ``ingot build`` runs or copies into every executable: its
    interpreter, its launcher and ingot's extension module for it."""
    files = [runtime.python]
    launcher = runtime.info.get("launcher", {}).get("file")
    if isinstance(launcher, str) and launcher:
        files.append(runtime.path / launcher)
    files.extend(sorted((runtime.path / "launcher").glob("_ingot.*.so")))
    return files


def record_hashes(runtime: Runtime) -> None:
    """Records in ``runtime.info`` (``hashes``) the sha256 of its trusted files, as they are now:
    when it is made (built, relinked, exported)."""
    runtime.info["hashes"] = {
        str(path.relative_to(runtime.path)): sha256_of(path) for path in trusted_files(runtime)
    }


def check_safe_path(path: Path) -> None:
    """RuntimeError_ unless ``path`` and every directory above it are owned by root or this user,
    and not writable by others (group or world) unless sticky (``/tmp``): no one else can
    replace what ``path`` names, as OpenSSH's StrictModes asks of ``~/.ssh``."""
    user = os.geteuid()
    current = Path(os.path.abspath(path))
    for place in [current, *current.parents]:
        try:
            info = os.lstat(place)
        except OSError as error:
            raise RuntimeError_(f"cannot check {place}: {error.strerror}") from None
        sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        problem = None
        if info.st_uid not in (0, user):
            problem = f"is owned by uid {info.st_uid}, neither root nor this user ({user})"
        elif stat.S_ISLNK(info.st_mode) and place == current:
            problem = "is a symbolic link"
        elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
            problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
        if problem:
            raise RuntimeError_(
                f"refusing the runtime at {path}: {place} {problem}, so another user could "
                "replace what ingot would run",
                hint="keep runtimes where only you (or root) can write: unset INGOT_RUNTIMES "
                "or XDG_CACHE_HOME, or fix the owner and mode of " + str(place),
            )


def verify_runtime(runtime: Runtime) -> None:
    """RuntimeError_ unless no other user can change the runtime's trusted files and they are
    those recorded when it was made (``hashes`` in runtime.json)."""
    files = trusted_files(runtime)
    for path in files:
        check_safe_path(path)
    recorded = runtime.info.get("hashes")
    if not isinstance(recorded, dict):
        raise RuntimeError_(
            f"the runtime {runtime.path} records no hashes of its files (made by an earlier ingot)",
            hint=f"remove it and build or install it again: ingot runtime remove {runtime.version}",
        )
    for path in files:
        name = str(path.relative_to(runtime.path))
        if recorded.get(name) != sha256_of(path):
            raise RuntimeError_(
                f"the runtime's {path} is not the file it was made with (its sha256 differs "
                "from runtime.json's)",
                hint=f"remove the runtime and build or install it again: ingot runtime remove "
                f"{runtime.version}",
            )
