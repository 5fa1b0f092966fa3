"""The environment variables ingot reads, in one table (:data:`VARIABLES`, rendered into
docs/environment.md by :func:`markdown_table`), and the snapshot a build takes of the environment
while it resolves (:class:`Environment`): after resolution nothing of a build reads
``os.environ``; its stages read the snapshot the spec carries (a build under a runtime gets it
in the spec's JSON).

``tests/test_structure.py`` fails when code reads a variable the table lacks, and when a module
of the build outside :mod:`ingot.build.resolve` reads the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ingot.runtime.store import store

__all__ = ["VARIABLES", "Environment", "Variable", "markdown_table", "snapshot"]


@dataclass(frozen=True)
class Variable:
    """An environment variable ingot reads (``name``; ``PREFIX*`` for a family), who reads it
    and what it does."""

    name: str
    reader: str
    meaning: str


#: Who reads a variable.
BUILD = "`ingot build`, `ingot pack`"
EXECUTABLE = "an executable (the launcher, the importer)"
IMPORTER = "the importer (in an executable, or `ingot.install` in a Python)"
RUNTIMES = "`ingot runtime`, and `ingot build` when it installs or builds a runtime"
COMPILING = "compiling ingot (`pip install .`, `cargo build`)"

#: Every environment variable ingot reads.
VARIABLES: tuple[Variable, ...] = (
    Variable(
        "INGOT_CACHE_DIR",
        f"{IMPORTER}; {BUILD}",
        "the cache root (an absolute path): the files policy's trees, native code written to "
        "disk, the build cache (`build/`); checked to be this user's and private. Like every "
        "variable the importer reads, ignored by a privileged (set-user-ID) start",
    ),
    Variable(
        "XDG_CACHE_HOME",
        f"{IMPORTER}; {BUILD}; {RUNTIMES}",
        "the cache root's parent when `INGOT_CACHE_DIR` is unset (`$XDG_CACHE_HOME/ingot`), and "
        "the runtimes store's (`$XDG_CACHE_HOME/ingot/runtimes`)",
    ),
    Variable(
        "HOME",
        f"{IMPORTER}; {BUILD}",
        "`~/.cache/ingot` when neither variable above is set; pip's configuration files under it",
    ),
    Variable(
        "XDG_RUNTIME_DIR",
        IMPORTER,
        "the cache root's last choice before `/tmp/ingot-<uid>` (a read-only home)",
    ),
    Variable(
        "INGOT_NATIVE",
        IMPORTER,
        "where extension modules and shared libraries are loaded from: `memory` (memory files, "
        "the default) or `cache` (written to the cache, then loaded by path)",
    ),
    Variable(
        "INGOT_WRITE_STRATEGY",
        IMPORTER,
        "how the cache's files are written: `stream` (the default) or `mmap`",
    ),
    Variable(
        "LD_LIBRARY_PATH",
        f"{IMPORTER}; {BUILD}",
        "directories searched for shared libraries: by an executable before its own copies "
        "of the system's libraries, by a build for the libraries extension modules need",
    ),
    Variable(
        "INGOT_PARENT",
        EXECUTABLE,
        "the proof that a process of the executable started this one "
        "(`<pid>:<depth>:<uid>:<secret>`; crates/ingot-launcher/README.md, Self-calls); set "
        "by the launcher for its children, never by a person",
    ),
    Variable(
        "PATH",
        f"{EXECUTABLE}; {BUILD}",
        "where the launcher looks for itself when /proc/self/exe cannot be read, and for a "
        "self-call's first argument that names a command; where a build looks for `uv`, "
        "which exports a project's `uv.lock`",
    ),
    Variable(
        "SSL_CERT_FILE",
        EXECUTABLE,
        "OpenSSL's CA bundle: when neither it nor `SSL_CERT_DIR` is set, the launcher sets it to "
        "the system's bundle for the application",
    ),
    Variable("SSL_CERT_DIR", EXECUTABLE, "OpenSSL's CA directory (see `SSL_CERT_FILE`)"),
    Variable(
        "INGOT_LAUNCHER",
        BUILD,
        "the launcher binary to build with (as `--launcher`): one built for a Python of this "
        "machine, which `--python local` builds use",
    ),
    Variable(
        "INGOT_RUNTIMES",
        RUNTIMES,
        "the runtimes store (default `$XDG_CACHE_HOME/ingot/runtimes`)",
    ),
    Variable(
        "INGOT_RUNTIME_SOURCES",
        RUNTIMES,
        "directories of source releases (`os.pathsep`-separated): a runtime the store lacks is "
        "built from them instead of installed from its wheel",
    ),
    Variable(
        "INGOT_SOURCE_TREE",
        RUNTIMES,
        "ingot's source tree, whose crates a runtime's launcher is compiled from (default: the "
        "one an installed ingot carries)",
    ),
    Variable(
        "LLVM_PROFDATA",
        RUNTIMES,
        "the llvm-profdata (LLVM 19 or later) a profile-guided runtime build merges its training "
        "run's profiles with (default: the newest `llvm-profdata-N` on `PATH`, else `llvm-profdata`)",
    ),
    Variable(
        "INGOT_PROFILE_RUNTIME",
        RUNTIMES,
        "set by a profile-guided runtime build for its compiler wrappers: the profile runtime "
        "(`libclang_rt.profile.a`) an instrumented link gets",
    ),
    Variable(
        "SOURCE_DATE_EPOCH",
        RUNTIMES,
        "the timestamp of the files in a runtime wheel (`ingot runtime export`)",
    ),
    Variable(
        "PIP_*",
        BUILD,
        "pip's own settings (`PIP_INDEX_URL`, `PIP_FIND_LINKS`, ...): pip runs with them, and "
        "the build cache's key of installed dependencies holds them (and the listing of local "
        "`PIP_FIND_LINKS` directories)",
    ),
    Variable(
        "PIP_CONFIG_FILE",
        BUILD,
        "pip's configuration file: its contents are part of the dependency cache's key",
    ),
    Variable(
        "XDG_CONFIG_HOME",
        BUILD,
        "where pip's user configuration is (`$XDG_CONFIG_HOME/pip/pip.conf`), for the same key",
    ),
    Variable(
        "VIRTUAL_ENV",
        BUILD,
        "the active virtual environment, whose `pip.conf` is part of the same key",
    ),
    Variable(
        "PYTHON*",
        BUILD,
        "not passed to the Python processes a build starts to import packages (the import "
        "probe, a package's build-time preparation), which get an environment made from "
        "scratch (`ingot.build.sandbox`: of the build's, `LD_LIBRARY_PATH` alone)",
    ),
    Variable(
        "TERM",
        BUILD,
        "`dumb`: the progress is printed as lines, not redrawn on a status line",
    ),
    Variable(
        "CC, CXX, CFLAGS, CPPFLAGS, LDFLAGS, PKG_CONFIG*",
        RUNTIMES,
        "ignored: a runtime's libraries and CPython are compiled with zig's toolchain and "
        "flags of ingot's recipes only (as are `LD_LIBRARY_PATH` and `PYTHON*`)",
    ),
    Variable(
        "CARGO_TARGET_DIR",
        f"{COMPILING}; {RUNTIMES}",
        "cargo's output directory, where the launcher binary is taken from",
    ),
    Variable(
        "PYO3_PYTHON",
        COMPILING,
        "the Python the launcher embeds and `_ingot` is built for",
    ),
    Variable(
        "INGOT_LAUNCHER_SHARED",
        COMPILING,
        "link the launcher against `libpython3.X.so` instead of the static library",
    ),
    Variable(
        "INGOT_LAUNCHER_*",
        COMPILING,
        "set by the launcher's build script for the compiler (`INGOT_LAUNCHER_PYTHON_VERSION`, "
        "`..._PYTHON_RELEASE`, `..._BYTECODE_MAGIC`, `..._LINKAGE`): what the launcher says it "
        "embeds",
    ),
)


def markdown_table(variables: tuple[Variable, ...] = VARIABLES) -> str:
    """The table of docs/environment.md: variable, who reads it, what it does."""
    lines = ["| variable | read by | what it does |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.reader} | {v.meaning} |" for v in variables]
    return "\n".join(lines) + "\n"


#: Pip's configuration files, besides ``PIP_CONFIG_FILE`` and those under the home and the
#: virtual environment.
_SYSTEM_PIP_FILES = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf")


@dataclass(frozen=True)
class Environment:
    """The environment of a build, as it was when the build was resolved."""

    variables: dict[str, str] = field(default_factory=dict)
    #: What of pip's configuration an install depends on: ``PIP_*`` variables, the contents of
    #: its configuration files, the listing of local ``PIP_FIND_LINKS`` directories (the
    #: build cache's key of installed dependencies holds it).
    pip_configuration: tuple[str, ...] = ()

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.variables.get(name, default)

    @property
    def launcher(self) -> str | None:
        """``INGOT_LAUNCHER`` (None when unset or empty)."""
        return self.variables.get("INGOT_LAUNCHER") or None

    @property
    def runtimes(self) -> Path:
        """The runtimes store these variables name (:func:`ingot.runtime.store.store`)."""
        return store(self.variables)

    @property
    def runtime_sources(self) -> tuple[Path, ...]:
        """``INGOT_RUNTIME_SOURCES``: directories of source releases."""
        value = self.variables.get("INGOT_RUNTIME_SOURCES", "")
        return tuple(Path(d) for d in value.split(os.pathsep) if d)

    @property
    def plain_progress(self) -> bool:
        """``TERM=dumb``: progress as lines, never redrawn."""
        return self.variables.get("TERM") == "dumb"

    @property
    def library_path(self) -> str | None:
        """``LD_LIBRARY_PATH``, as the loader reads it (:func:`ingot.elf.find_library`)."""
        return self.variables.get("LD_LIBRARY_PATH") or None


def _pip_configuration(variables: dict[str, str]) -> tuple[str, ...]:
    parts = [f"{name}={value}" for name, value in sorted(variables.items()) if name[:4] == "PIP_"]
    home = Path(variables.get("HOME") or Path.home())
    config = Path(variables.get("XDG_CONFIG_HOME") or home / ".config")
    files = [
        variables.get("PIP_CONFIG_FILE", ""),
        *_SYSTEM_PIP_FILES,
        str(home / ".pip" / "pip.conf"),
        str(config / "pip" / "pip.conf"),
        os.path.join(variables.get("VIRTUAL_ENV", ""), "pip.conf"),
    ]
    for name in files:
        if name and os.path.isfile(name):
            parts.append(f"{name}:{Path(name).read_text(errors='replace')}")
    for link in variables.get("PIP_FIND_LINKS", "").split():
        if os.path.isdir(link):
            for entry in sorted(os.scandir(link), key=lambda entry: entry.name):
                info = entry.stat()
                parts.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    return tuple(parts)


def snapshot() -> Environment:
    """The environment now: what a build reads of it from here on."""
    variables = dict(os.environ)
    return Environment(variables, _pip_configuration(variables))
