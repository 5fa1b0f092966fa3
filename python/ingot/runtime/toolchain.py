"""The C toolchain runtimes are built with: ``zig cc`` (from the ``ziglang`` wheel on PyPI) aimed at
an old glibc.

Why zig: it carries the headers and link stubs of every glibc version, so ``-target
x86_64-linux-gnu.2.17`` makes objects and executables that ask for no symbol version newer than
glibc 2.17, on any build machine, without a sysroot or an old distribution (the alternative,
building on or against an old system, is what PyInstaller asks of its users). It is a compiler
and linker in one self-contained wheel, pinned like any Python dependency. Its sysroot does not
see the build machine's ``/usr/include`` or ``/usr/lib``: every library a runtime uses is built
with it (see :mod:`ingot.runtime.recipes`), and nothing of the host leaks in.

Each build gets wrapper scripts (``cc``, ``c++``, ``ar``, ``ranlib``; ``clang`` and ``llvm-ar``, the
same, under the names CPython's configure wants for link-time optimization) in a directory of its
own, and its own zig compile cache (the local one; the global one, with what zig builds of its
own for the target, is shared by the builds beside it): zig's compile cache keys on the source
path and flags, not the working directory, so one source compiled in two build directories with different generated
headers would otherwise come back as the first object. The caches live beside the source tree,
not in it: CPython's profile-guided build runs ``make clean``, which deletes every ``*.o`` and
``*.a`` under the tree, the cache's included.

zig's clang instruments code for profile-guided optimization (``-fprofile-generate``) but,
unlike clang's own driver, links no profile runtime: with ``INGOT_PROFILE_RUNTIME`` set (compiler-rt's
``libclang_rt.profile.a``, see :data:`ingot.runtime.recipes.PROFILE_RUNTIME`), the compiler adds it
to every such link. Each binary keeps its own copy (the runtime is compiled with hidden
visibility): an extension module's counters are written by its own copy, not the interpreter's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ingot.errors import IngotError
from ingot.machine import Machine, host_machine

__all__ = ["GLIBC_FLOOR", "Toolchain", "ToolchainError", "find_llvm_profdata", "find_zig"]

#: The oldest glibc a runtime supports: RHEL/CentOS 7, Debian 8, Ubuntu 14.04 and every later one.
GLIBC_FLOOR = (2, 17)


class ToolchainError(IngotError):
    """No usable C toolchain for building a runtime."""


def find_zig() -> Path:
    """The ``zig`` executable of the ``ziglang`` package installed with this Python."""
    try:
        import ziglang  # type: ignore[import-not-found]
    except ImportError:
        raise ToolchainError(
            "building a runtime needs zig, from the `ziglang` package, which this Python "
            f"({sys.executable}) does not have",
            hint="pip install ziglang (or: pip install 'ingot[runtime]')",
        ) from None
    zig = Path(ziglang.__file__).parent / "zig"
    if not os.access(zig, os.X_OK):
        raise ToolchainError(
            f"{zig} is not an executable (a damaged `ziglang` install?)",
            hint="pip install --force-reinstall ziglang",
        )
    return zig


#: The oldest LLVM whose llvm-profdata reads the raw profiles zig's clang writes (raw profile
#: format 10, written by LLVM 19 to 22).
PROFDATA_OLDEST = 19


def _llvm_major(argv: list[str]) -> int | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"(?:LLVM|clang) version (\d+)\.", done.stdout)
    return int(match[1]) if done.returncode == 0 and match else None


def find_llvm_profdata() -> tuple[Path, int]:
    """The ``llvm-profdata`` that merges a profile-guided build's raw profiles, and its LLVM
    major version: ``$LLVM_PROFDATA``, else the newest ``llvm-profdata-N`` on ``PATH``, else
    ``llvm-profdata``; of LLVM :data:`PROFDATA_OLDEST` or later."""
    given = os.environ.get("LLVM_PROFDATA")
    if given:
        candidates = [given]
    else:
        versioned = sorted(
            (int(name.rsplit("-", 1)[1]), name)
            for directory in os.environ.get("PATH", "").split(os.pathsep)
            if directory and os.path.isdir(directory)
            for name in os.listdir(directory)
            if re.fullmatch(r"llvm-profdata-\d+", name)
        )
        candidates = [name for _, name in reversed(versioned)] + ["llvm-profdata"]
    seen = []
    for candidate in candidates:
        path = shutil.which(candidate)
        if path is None:
            continue
        major = _llvm_major([path, "--version"])
        seen.append(f"{path} (LLVM {major})" if major else path)
        if major is not None and major >= PROFDATA_OLDEST:
            return Path(path), major
    raise ToolchainError(
        "a profile-guided runtime build needs llvm-profdata of LLVM "
        f"{PROFDATA_OLDEST} or later, to read the profiles zig's clang writes; "
        + (f"found only {', '.join(seen)}" if seen else "there is none on PATH")
        + (" ($LLVM_PROFDATA)" if given else ""),
        hint=f"Debian 12: apt install llvm-{PROFDATA_OLDEST} (or set LLVM_PROFDATA); "
        "or build without profile-guided optimization: --no-pgo",
    )


@dataclass
class Toolchain:
    """``zig cc`` for ``<machine>-linux-gnu.<glibc>``, as the commands a build system expects."""

    zig: Path
    glibc: tuple[int, int] = GLIBC_FLOOR
    machine: Machine = field(default_factory=host_machine)

    @property
    def target(self) -> str:
        return f"{self.machine.name}-linux-gnu.{self.glibc[0]}.{self.glibc[1]}"

    @property
    def cross(self) -> bool:
        """Whether it builds for another machine than this one (nothing built can run here)."""
        return self.machine != host_machine()

    def version(self) -> str:
        done = subprocess.run([str(self.zig), "version"], capture_output=True, text=True)
        return done.stdout.strip()

    def clang_major(self) -> int | None:
        """The LLVM major version of zig's clang (``zig cc --version``)."""
        return _llvm_major([str(self.zig), "cc", "--version"])

    def wrappers(self, directory: Path) -> dict[str, str]:
        """Writes ``cc``, ``c++``, ``ar``, ``ranlib``, ``clang``, ``llvm-ar`` into ``directory``;
        returns the variables a configure script or a Makefile takes (``CC``, ``CXX``, ``AR``,
        ``RANLIB``), and ``CLANG`` and ``LLVM_AR``."""
        directory.mkdir(parents=True, exist_ok=True)
        zig = shlex.quote(str(self.zig))
        # Build scripts add the host's directories on their own (CPython 3.10/3.11's setup.py adds
        # /usr/include/<multiarch> and /usr/local/include): the compiler drops them, so that no
        # host header or library mixes with zig's glibc.
        host = (
            "-I/usr/include|-I/usr/include/*|-I/usr/local/include|-I/usr/local/include/*|"
            "-L/usr/lib|-L/usr/lib/*|-L/usr/lib64|-L/usr/lib64/*|-L/usr/local/lib|"
            "-L/usr/local/lib/*|-L/lib|-L/lib/*|-L/lib64|-L/lib64/*"
        )
        drop = (
            f'for arg do shift; case "$arg" in {host}) continue ;; esac; set -- "$@" "$arg"; done'
        )
        # An instrumented link (-fprofile-instr-generate, the front end's, or -fprofile-generate,
        # the IR's; not -c/-E/-S/-M) gets the profile runtime, when the build gives one.
        profile = (
            'link=yes; instrumented=no\nfor arg do case "$arg" in -c|-E|-S|-M|-MM) link=no ;; '
            "-fprofile-instr-generate|-fprofile-generate|-fprofile-generate=*) "
            "instrumented=yes ;; esac; done\n"
            'if [ -n "${INGOT_PROFILE_RUNTIME:-}" ] && [ $link = yes ] && [ $instrumented = yes ]; '
            'then set -- "$@" -Wl,-u,__llvm_profile_runtime '
            '"$INGOT_PROFILE_RUNTIME"; fi'
        )
        compiler = f'{drop}\n{profile}\nexec {zig} cc -target {self.target} "$@"'
        commands = {
            "cc": compiler,
            "c++": f'{drop}\n{profile}\nexec {zig} c++ -target {self.target} "$@"',
            "ar": f'exec {zig} ar "$@"',
            "ranlib": f'exec {zig} ranlib "$@"',
            # The same compiler and archiver under the names CPython's configure looks for when
            # it links with LTO (`--with-lto`: a compiler named *clang*, and llvm-ar).
            "clang": compiler,
            "llvm-ar": f'exec {zig} ar "$@"',
        }
        for name, command in commands.items():
            path = directory / name
            path.write_text(f"#!/bin/sh\n{command}\n")
            path.chmod(0o755)
        return {
            "CC": str(directory / "cc"),
            "CXX": str(directory / "c++"),
            "AR": str(directory / "ar"),
            "RANLIB": str(directory / "ranlib"),
            "CLANG": str(directory / "clang"),
            "LLVM_AR": str(directory / "llvm-ar"),
        }

    def environment(self, build: Path, prefix: Path) -> dict[str, str]:
        """The environment of one library's build in ``build``, installing into ``prefix``: the
        wrappers, zig caches of its own, and only ``prefix`` for pkg-config (no host library)."""
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(
                (
                    "PKG_CONFIG",
                    "CFLAGS",
                    "CPPFLAGS",
                    "LDFLAGS",
                    "CC",
                    "CXX",
                    "LD_LIBRARY_PATH",
                    "PYTHON",
                )
            )
        }
        environment.update(self.wrappers(build / ".toolchain"))
        environment.update(
            # (the global cache holds what zig builds of its own for the target, glibc's stubs and
            # compiler-rt, which no build's flags change: one for all the builds beside this one,
            # instead of each library building them again)
            ZIG_GLOBAL_CACHE_DIR=str(build.parent / ".zig-caches" / "global"),
            ZIG_LOCAL_CACHE_DIR=str(build.parent / ".zig-caches" / build.name / "local"),
            PKG_CONFIG_LIBDIR=str(prefix / "lib" / "pkgconfig"),
            PKG_CONFIG_PATH="",
            LC_ALL="C",
        )
        return environment
