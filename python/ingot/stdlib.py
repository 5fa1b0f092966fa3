"""The standard library's modules an executable leaves out unless the application imports them:
shared by the build (:mod:`ingot.build.archive.collect`) and the runtime wheels
(:mod:`ingot.runtime.wheel`), which ship the rest."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

__all__ = ["DEFAULT_STDLIB_EXCLUDES", "is_excluded"]

#: Left out of the standard library by default (``fnmatch`` patterns on dotted names; a pattern
#: that matches a package leaves out everything in it).
DEFAULT_STDLIB_EXCLUDES = (
    "test",
    "*.test",
    "*.tests",
    "*.idle_test",
    "idlelib",
    "tkinter",
    "_tkinter",
    "turtle",
    "turtledemo",
    "ensurepip",
    "__phello__",
    "__hello__",
    "_test*",
    "_xxtest*",
    "_ctypes_test",
    "xxlimited*",
    "xxsubtype",
)


def is_excluded(name: str, patterns: Iterable[str]) -> bool:
    """Whether dotted ``name`` or one of its parent packages matches one of ``patterns``."""
    parts = name.split(".")
    prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatchcase(prefix, p) for prefix in prefixes for p in patterns)
