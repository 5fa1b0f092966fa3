"""Per-package file policy: which top-level packages are served from memory (the default) and
which are materialized as real files into the extraction cache (``files``).

    from ingot.build.analysis.policy import resolve_policy
    decision = resolve_policy(present={"certifi", "rich"}, files=[], memory=[])
    decision.files        # {"certifi"}: the built-in table knows it needs real files
    decision.reasons      # {"certifi": "built-in: ..."}

A package needs ``files`` when its code opens paths built from ``__file__``, lists its own
directory, or hands a path to C code (OpenSSL's CA file, a shared library for ctypes). ``ingot
build`` warns about such code (:mod:`ingot.build.analysis.filescan`); the table below covers known cases so that
they need no configuration. ``[tool.ingot] memory = [...]`` overrides the table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ingot.errors import IngotError

__all__ = [
    "KNOWN_FILES_PACKAGES",
    "PREPARATIONS",
    "READ_ONLY_FILES_PACKAGES",
    "PolicyDecision",
    "PolicyError",
    "Preparation",
    "resolve_policy",
    "top_level_names",
]

#: Packages known to need real files, and why. Each was checked against the package's code.
KNOWN_FILES_PACKAGES: dict[str, str] = {
    "certifi": "certifi.where() returns the path of cacert.pem, which is handed to OpenSSL "
    "(ssl.create_default_context(cafile=...), requests' verify=)",
    "blib2to3": "black's parser loads Grammar.txt by its path next to __file__ (without it, it "
    "asks pkgutil.get_data for a pickle under an absolute cache path, which fails)",
    "pytz": "pytz.open_resource() opens zoneinfo files under os.path.dirname(__file__)",
    "botocore": "botocore loads its service models from a data directory next to __file__",
    "babel": "babel reads its locale data from os.path.dirname(__file__)/locale-data",
    "matplotlib": "matplotlib finds mpl-data (fonts, styles) next to __file__",
}

#: Packages of the table that only read their files (open, os.listdir, os.path.exists; matplotlib
#: hands its fonts to FreeType as Python file objects): an
#: executable answers those reads from the archive (the launcher's ``serve_archive_paths``), so
#: they need the ``files`` policy only in an archive run by python.
READ_ONLY_FILES_PACKAGES = frozenset({"pytz", "babel", "matplotlib"})


@dataclass(frozen=True)
class Preparation:
    """A step ``ingot build`` runs for a ``files`` package, to create files the package would
    otherwise create (or do without) at every start. ``code`` is Python run by the build
    interpreter (the launcher's Python) with ``-S -s``, ``PYTHONHASHSEED=0`` (the same output
    on every build), confined (:mod:`ingot.build.sandbox`), with ``sys.argv[1]`` the staged
    directory that holds the package (to read: first on ``sys.path``) and ``sys.argv[2]`` a
    directory of its own: the regular files it leaves there whose names match ``makes`` are
    put into the package's directory (never over a file it holds)."""

    why: str
    code: str
    makes: str


#: Known preparations, by top-level package. Each uses the package's own tool for the job.
PREPARATIONS: dict[str, Preparation] = {
    "blib2to3": Preparation(
        why="black builds its grammar tables from Grammar.txt at every import (~10 ms) unless "
        "pickles made by the same Python sit next to it; blib2to3's driver writes them (next "
        "to copies of the grammars)",
        code=(
            "import os, shutil, sys\n"
            "from blib2to3.pgen2 import driver\n"
            "base, out = os.path.join(sys.argv[1], 'blib2to3'), sys.argv[2]\n"
            "names = [n for n in ('Grammar.txt', 'PatternGrammar.txt') "
            "if os.path.isfile(os.path.join(base, n))]\n"
            "for name in names:\n"
            "    shutil.copyfile(os.path.join(base, name), os.path.join(out, name))\n"
            "sys.exit(0 if not names or driver.main(*[os.path.join(out, n) for n in names]) "
            "else 1)\n"
        ),
        makes="*.pickle",
    ),
}

_NAME = re.compile(r"[A-Za-z_]\w*")


class PolicyError(IngotError):
    """A file-policy setting is unusable."""


@dataclass
class PolicyDecision:
    files: set[str] = field(default_factory=set)
    #: package -> why it is under the files policy ("configured" or the table's reason).
    reasons: dict[str, str] = field(default_factory=dict)


def resolve_policy(
    present: Iterable[str],
    files: Iterable[str] = (),
    memory: Iterable[str] = (),
    *,
    executable: bool = False,
) -> PolicyDecision:
    """The ``files`` packages of a build: the configured ones, plus the table's known cases that
    the build holds (in an ``executable``, not those of :data:`READ_ONLY_FILES_PACKAGES`), minus
    those configured ``memory``. ``present`` holds the top-level names the build collects."""
    files, memory, present = list(files), list(memory), set(present)
    for name in files + memory:
        if not _NAME.fullmatch(name):
            raise PolicyError(
                f"{name!r} is not a top-level package name",
                hint="the files and memory policies take import names, e.g. 'certifi'",
            )
    both = sorted(set(files) & set(memory))
    if both:
        raise PolicyError(
            f"{', '.join(map(repr, both))} set to both the files and the memory policy",
            hint="keep each package in one of [tool.ingot] files / memory",
        )
    missing = sorted(set(files) - present)
    if missing:
        raise PolicyError(
            f"the files policy names {', '.join(map(repr, missing))}, which the build "
            "does not collect",
            hint="give top-level import names of collected packages (e.g. 'yaml' for PyYAML)",
        )
    decision = PolicyDecision()
    for name in files:
        decision.files.add(name)
        decision.reasons[name] = "configured"
    for name, reason in KNOWN_FILES_PACKAGES.items():
        if executable and name in READ_ONLY_FILES_PACKAGES:
            continue
        if name in present and name not in memory and name not in decision.files:
            decision.files.add(name)
            decision.reasons[name] = f"built-in: {reason}"
    return decision


def top_level_names(root: str | os.PathLike[str]) -> set[str]:
    """The top-level import names a directory of packages (a site-packages) provides."""
    names = set()
    for child in Path(root).iterdir():
        name = child.name
        if child.is_dir():
            if _NAME.fullmatch(name) and not name.endswith((".dist-info", ".data")):
                names.add(name)
        elif name.endswith(".py") and _NAME.fullmatch(name[:-3]):
            names.add(name[:-3])
        elif ".cpython-" in name or name.endswith((".abi3.so", ".so")):
            stem = name.split(".")[0]
            if _NAME.fullmatch(stem):
                names.add(stem)
    return names
