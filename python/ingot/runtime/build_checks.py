"""What a runtime build checks: the build tools it needs before it starts (:func:`check_build_tools`,
:func:`check_snapshot_tools`), and the modules a built runtime must have (:data:`REQUIRED_MODULES`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path

from ingot.runtime.store import (
    RuntimeError_,
    sysconfig_vars,
)

__all__ = [
    "DESKTOP_MODULES",
    "REQUIRED_MODULES",
    "TOOLS_HINT",
    "check_build_tools",
    "check_modules",
    "check_modules_present",
    "check_snapshot_tools",
    "elf_images",
]


#: Standard-library extension modules a runtime must have built (CPython's build skips a module
#: whose library it cannot find, and says so only in its log).
REQUIRED_MODULES = (
    "_ssl",
    "_hashlib",
    "_sqlite3",
    "_ctypes",
    "_decimal",
    "_lzma",
    "_bz2",
    "zlib",
    "_json",
    "unicodedata",
    "_socket",
    "select",
    "_posixsubprocess",
    "pyexpat",
    "_elementtree",
    "binascii",
    "_struct",
    "math",
    "_datetime",
    "_curses",
    "_curses_panel",
    "readline",
    "_uuid",
)


#: Standard-library extension modules a runtime must have built that need a desktop library of
#: the target system (``_tkinter``: libX11), which the build machine may lack: checked as files.
DESKTOP_MODULES = ("_tkinter",)


#: The Perl modules OpenSSL's Configure and build use that Debian's perl-base lacks (its perl
#: package has them all): found missing on a fresh Debian 12 (tests/test_quickstart.py).
_PERL_MODULES = (
    "FindBin",
    "IPC::Cmd",
    "File::Compare",
    "File::Copy",
    "File::Spec::Functions",
    "Getopt::Std",
)


TOOLS_HINT = (
    "on Debian or Ubuntu: sudo apt install make perl cmake tcl patch autoconf automake libtool "
    "(elsewhere the same tools from "
    "the system's packages), then run the build again"
)


def check_build_tools() -> None:
    """What the libraries' and CPython's build systems run besides the compiler: make, and a
    Perl with the modules OpenSSL's Configure uses. Checked before any work (a fresh Debian has
    neither make nor those modules); RuntimeError_ naming what is missing."""
    missing = [tool for tool in ("make", "perl") if shutil.which(tool) is None]
    if "perl" not in missing:
        done = subprocess.run(
            ["perl", *(f"-M{module}" for module in _PERL_MODULES), "-e", "1"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            lacking = re.search(r"Can't locate (\S+)\.pm", done.stderr)
            module = lacking.group(1).replace("/", "::") if lacking else done.stderr.strip()
            missing.append(f"Perl's module {module} (OpenSSL's Configure uses it)")
    if missing:
        raise RuntimeError_(
            f"building a runtime needs {' and '.join(missing)}, which this machine lacks",
            hint=TOOLS_HINT,
        )


#: Sources that are snapshots of their repository (Debian's .orig tarballs) rather than
#: releases, and the tool their recipe then needs: (source, a member only a release has, tool,
#: what for). Checked before any work.
_SNAPSHOT_TOOLS = (
    ("expat", r"[^/]+/(expat/)?configure", "cmake", "builds only with cmake"),
    ("sqlite", r"[^/]+/sqlite3\.c", "tclsh", "generates sqlite3.c with Tcl's tclsh"),
    ("libffi", r"[^/]+/configure", "autoreconf", "makes its configure script with autoreconf"),
)


def check_snapshot_tools(found: dict[str, Path]) -> None:
    """A source that is a snapshot of its repository (no configure script for expat, no
    amalgamation for SQLite: Debian's) needs a tool its release does not: checked before any
    work."""
    for name, release_member, tool, why in _SNAPSHOT_TOOLS:
        source = found.get(name)
        if source is None or shutil.which(tool) is not None:
            continue
        if not source.name.endswith((".tar.gz", ".tar.xz", ".tar.bz2", ".tgz")):
            continue
        try:
            with tarfile.open(source) as tar:
                names = tar.getnames()
        except (tarfile.TarError, OSError):
            continue  # (unpacking it says what is wrong)
        if not any(re.fullmatch(release_member, member) for member in names):
            raise RuntimeError_(
                f"{source.name} is a snapshot of {name}'s repository, not a release: it {why}, "
                f"and this machine has no {tool}",
                hint=TOOLS_HINT,
            )


def check_modules(
    prefix: Path, minor: tuple[int, ...], run: Callable[..., None], cwd: Path
) -> None:
    python = prefix / "bin" / f"python{minor[0]}.{minor[1]}"
    code = (
        "import importlib, json; missing = []\n"
        f"for name in {list(REQUIRED_MODULES)!r}:\n"
        "    try: importlib.import_module(name)\n"
        "    except ImportError as error: missing.append(f'{name}: {error}')\n"
        "assert not missing, missing"
    )
    try:
        run([str(python), "-I", "-c", code], cwd=cwd)
    except RuntimeError_ as error:
        raise RuntimeError_(
            f"the runtime lacks standard-library modules: {error.message}", hint=error.hint
        ) from None


def elf_images(prefix: Path) -> Iterable[tuple[str, bytes]]:
    for path in sorted(prefix.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as file:
                if file.read(4) != b"\x7fELF":
                    continue
            yield str(path.relative_to(prefix)), path.read_bytes()


def check_modules_present(prefix: Path, python_source: Path, names: Iterable[str]) -> None:
    """A check of modules that cannot be imported here (a cross build's, or one needing a
    desktop library): each is built into the interpreter (``Modules/config.c``) or is a file of
    ``lib-dynload`` with the runtime's extension suffix."""
    config = (python_source / "Modules" / "config.c").read_text(errors="replace")
    builtin = set(re.findall(r'\{"([A-Za-z0-9_.]+)", PyInit_', config))
    suffix = sysconfig_vars(prefix)["EXT_SUFFIX"]
    dynload = next(prefix.glob("lib/python3.*/lib-dynload"), prefix / "lib-dynload")
    missing = [
        name
        for name in names
        if name not in builtin and not (dynload / f"{name}{suffix}").is_file()
    ]
    if missing:
        raise RuntimeError_(
            f"the runtime lacks standard-library modules: {', '.join(missing)} (neither built "
            f"into the interpreter nor in {dynload})",
            hint="CPython's build left them out: its log says why (search for the module's name)",
        )
