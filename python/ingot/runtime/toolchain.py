"""The C toolchain runtimes are built with: ``zig cc`` (from the ``ziglang`` wheel on PyPI) aimed at
an old glibc.

Why zig: it carries the headers and link stubs of every glibc version, so ``-target
x86_64-linux-gnu.2.17`` makes objects and executables that ask for no symbol version newer than
glibc 2.17, on any build machine, without a sysroot or an old distribution (the alternative,
building on or against an old system, is what PyInstaller asks of its users). It is a compiler
and linker in one self-contained wheel, pinned like any Python dependency. Its sysroot does not
see the build machine's ``/usr/include`` or ``/usr/lib``: every library a runtime uses is built
with it (see :mod:`ingot.recipes`), and nothing of the host leaks in.

Each build gets wrapper scripts (``cc``, ``c++``, ``ar``, ``ranlib``) in a directory of its own, and
its own zig caches: zig's compile cache keys on the source path and flags, not the working
directory, so one source compiled in two build directories with different generated headers
would otherwise come back as the first object.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ingot.errors import IngotError
from ingot.machine import Machine, host_machine

__all__ = ["GLIBC_FLOOR", "Toolchain", "ToolchainError", "find_zig"]

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

    def wrappers(self, directory: Path) -> dict[str, str]:
        """Writes ``cc``, ``c++``, ``ar``, ``ranlib`` into ``directory``; returns the variables a
        configure script or a Makefile takes (``CC``, ``CXX``, ``AR``, ``RANLIB``)."""
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
        commands = {
            "cc": f'{drop}\nexec {zig} cc -target {self.target} "$@"',
            "c++": f'{drop}\nexec {zig} c++ -target {self.target} "$@"',
            "ar": f'exec {zig} ar "$@"',
            "ranlib": f'exec {zig} ranlib "$@"',
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
            ZIG_GLOBAL_CACHE_DIR=str(build / ".zig-cache-global"),
            ZIG_LOCAL_CACHE_DIR=str(build / ".zig-cache-local"),
            PKG_CONFIG_LIBDIR=str(prefix / "lib" / "pkgconfig"),
            PKG_CONFIG_PATH="",
            LC_ALL="C",
        )
        return environment
