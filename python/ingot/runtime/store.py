"""Runtimes: CPython and the libraries its standard library uses, built from their source releases
with :mod:`ingot.runtime.toolchain` for glibc 2.17, and kept in the user's cache.

    ingot runtime build 3.11 --sources DIR        # or --source python=Python-3.11.9.tgz ...
    ingot runtime list
    ingot runtime remove 3.11.2

A runtime is a directory ``<store>/cpython-<version>-<machine>-linux-gnu.<glibc>/``:

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

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingot.errors import IngotError

__all__ = [
    "RUNTIME_FORMAT",
    "Runtime",
    "RuntimeError_",
    "find_runtime",
    "list_runtimes",
    "read_runtime",
    "remove_runtime",
    "store",
]
#: runtime.json's format version.
RUNTIME_FORMAT = 1


class RuntimeError_(IngotError):
    """A runtime cannot be built, found or removed."""


def store() -> Path:
    """Where runtimes are kept."""
    if os.environ.get("INGOT_RUNTIMES"):
        path = Path(os.environ["INGOT_RUNTIMES"])
        if not path.is_absolute():
            raise RuntimeError_(
                f"INGOT_RUNTIMES={path} is not an absolute path",
                hint="give an absolute directory, or unset it",
            )
        return path
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
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


def read_runtime(path: Path) -> Runtime | None:
    try:
        info = json.loads((path / "runtime.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("format") != RUNTIME_FORMAT:
        return None
    return Runtime(path, info)


def list_runtimes() -> list[Runtime]:
    """The complete runtimes in the store, newest version first."""
    root = store()
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


def find_runtime(wanted: str) -> Runtime | None:
    """The newest runtime whose version is ``wanted`` or starts with it (``3.11`` finds
    ``3.11.2``)."""
    for runtime in list_runtimes():
        if runtime.version == wanted or runtime.version.startswith(wanted + "."):
            return runtime
    return None


def remove_runtime(wanted: str) -> Runtime:
    runtime = find_runtime(wanted)
    if runtime is None:
        raise RuntimeError_(
            f"no runtime {wanted} in {store()}",
            hint="`ingot runtime list` shows the runtimes there are",
        )
    doomed = runtime.path.with_name(f".removing-{runtime.name}-{os.getpid()}")
    runtime.path.rename(doomed)  # atomically out of the store, then deleted
    shutil.rmtree(doomed)
    return runtime
