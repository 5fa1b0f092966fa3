"""The target of a build: which Python the executable carries and which launcher it starts with,
this machine's Python or a runtime (:mod:`ingot.runtime`), decided once, here. A build for a
runtime runs under the runtime's interpreter (:mod:`ingot.build.under`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ingot._ingot import __version__
from ingot.build.resolve.environment import Environment
from ingot.build.resolve.launcher import find_launcher, launcher_facts
from ingot.build.resolve.settings import Request, Settings
from ingot.errors import BuildError
from ingot.machine import Machine, host_machine, machine_named
from ingot.runtime import pins, recipes
from ingot.runtime import store as runtimes
from ingot.runtime.builder import build_runtime
from ingot.runtime.store import RuntimeError_
from ingot.runtime.toolchain import GLIBC_FLOOR
from ingot.runtime.wheel import install_runtime

__all__ = [
    "RUNTIME_PLATFORMS",
    "Say",
    "Target",
    "provide_runtime",
    "provide_runtimes",
    "resolve_target",
    "runtime_target",
    "this_python",
]

#: A stage's progress line goes to this.
Say = Callable[[str], None]

#: Platforms whose wheels a build for a runtime of this machine (glibc 2.17) takes.
RUNTIME_PLATFORMS = host_machine().wheel_platforms(GLIBC_FLOOR)


@dataclass(frozen=True)
class Target:
    """The Python an executable is built for, and the launcher it starts with."""

    python: str  # "3.11": the Python whose bytecode and extension modules the archive holds
    launcher: Path | None  # None: an archive only
    runtime: str | None = None  # the runtime's name, when built with one (recorded in launch.json)
    runtime_python: Path | None = None  # its interpreter, which runs the build's stages
    runtime_importer: Path | None = None  # ingot's extension module for that interpreter
    pip_python: str | None = None  # whose pip installs the dependencies (a runtime has none)
    platforms: tuple[str, ...] = ()  # the wheel platforms that pip takes (empty: this machine's)
    #: Platforms pip may take when no wheel of ``platforms`` exists (the floor rises, said).
    newer_platforms: tuple[str, ...] = ()
    #: The architecture the executable runs on (:data:`ingot.machine.MACHINES`).
    machine: str = field(default_factory=lambda: host_machine().name)
    #: For another architecture than this machine's (a cross build): the target runtime's
    #: installed CPython, whose standard library and ``lib-dynload`` the archive takes (the
    #: build runs under this machine's runtime of the same release).
    stdlib_prefix: Path | None = None
    #: The sources the runtime is built from (its runtime.json), for the executable's bill of
    #: materials: (name, version, file, sha256, what it is for), CPython's first.
    runtime_sources: tuple[tuple[str, str, str, str, str], ...] = ()
    #: The sha256 of the launcher, checked when the build was resolved
    #: (:func:`ingot.build.resolve.launcher.checked_launcher`); the pipeline takes only those bytes.
    launcher_sha256: str | None = None

    @property
    def runtime_release(self) -> str | None:
        """The CPython release of the runtime (``3.11.2``, from its name), None without one."""
        found = re.search(r"cpython-(\d+\.\d+\.\d+)", self.runtime or "")
        return found[1] if found else None


def this_python() -> str:
    """The version of the Python running ingot, ``3.11``."""
    return "%d.%d" % sys.version_info[:2]


def _runtime_wanted(
    request: Request, settings: Settings, environment: Environment
) -> tuple[str, Machine] | None:
    """The runtime the target takes, (Python version, machine): ``--python``/``[tool.ingot]
    python`` names a runtime or ``local``; by default, the runtime of this Python's version
    (portable: glibc 2.17), unless a launcher is given (``--launcher``, ``$INGOT_LAUNCHER``: one
    built for a Python of this machine) or only an archive is asked for. ``--target``/
    ``[tool.ingot] target`` names another architecture: always with a runtime. None: this
    machine's Python."""
    wanted = settings.python
    machine = host_machine()
    if settings.target is not None:
        machine = machine_named(settings.target, where="--target / [tool.ingot] target")
    given_launcher = request.launcher or environment.launcher
    if machine != host_machine():
        if wanted == "local":
            raise BuildError(
                f"--python local builds with this machine's Python, for {host_machine().name}; "
                f"a build for {machine.name} takes a runtime",
                hint=f"leave out --python local, or name a version: --python {this_python()}",
            )
        return wanted or this_python(), machine
    if wanted is None and not given_launcher and not request.archive_only:
        wanted = this_python()  # an archive alone is for this Python, which runs it
    if wanted is not None and wanted != "local":
        return wanted, machine
    return None


def provide_runtimes(
    request: Request, settings: Settings, say: Say, environment: Environment
) -> None:
    """The step before resolution that may install or build: the runtimes the target takes (and,
    for another architecture, this machine's runtime of the same release, which runs the build)
    that the store lacks are installed from their wheels
    (:func:`ingot.runtime.wheel.install_runtime`), or built from the sources in
    ``$INGOT_RUNTIME_SOURCES`` when that is set."""
    wanted = _runtime_wanted(request, settings, environment)
    if wanted is None:
        return
    found = provide_runtime(wanted[0], say, wanted[1], environment)
    if wanted[1] != host_machine():
        provide_runtime(found.version, say, host_machine(), environment)


def resolve_target(
    request: Request, settings: Settings, say: Say, environment: Environment
) -> Target:
    """The target ``request`` and ``settings`` ask for (see :func:`_runtime_wanted`): a runtime
    from the store (:func:`provide_runtimes` put it there), or this machine's Python with the
    launcher given or ingot's own. Nothing is installed or built here."""
    wanted = _runtime_wanted(request, settings, environment)
    if wanted is not None:
        return runtime_target(wanted[0], request, wanted[1], environment.runtimes)
    launcher = None if request.archive_only else find_launcher(request.launcher, environment)
    return Target(python=this_python(), launcher=launcher)


def _stale(runtime: runtimes.Runtime) -> bool:
    """Whether the runtime's launcher is another ingot's (a runtime installed from the wheel of
    an earlier ingot, which an upgrade of ingot leaves in the store)."""
    file = runtime.info.get("launcher", {}).get("file")
    if not file:
        return False  # said below
    try:
        return launcher_facts(runtime.path / file).get("ingot") != __version__
    except BuildError:
        return False  # said when the build reads it


def provide_runtime(
    wanted: str, say: Say, machine: Machine, environment: Environment
) -> runtimes.Runtime:
    """The runtime of Python ``wanted`` for ``machine`` from the store, else installed from its
    wheel, else built from ``$INGOT_RUNTIME_SOURCES`` when that names source directories (the
    store and both variables as the build's ``environment`` has them)."""
    root = environment.runtimes
    found = runtimes.find_runtime(wanted, machine.name, root)
    if found is not None and not (_stale(found) and "wheel" in found.info):
        return found
    minor = ".".join(wanted.split(".")[:2])
    try:
        pins.pins_for(minor)
    except pins.PinError as error:
        # (no source of it: neither a wheel of this ingot's nor a build from source can give it)
        raise RuntimeError_(
            f"no runtime for Python {wanted} ({machine.name}) in {root}, and none can "
            f"be made: {error}",
            hint=error.hint,
        ) from None
    directories = list(environment.runtime_sources)
    if directories:
        say(
            f"no runtime for Python {wanted} ({machine.name}) in {root}: building it "
            f"first (several minutes, once; sources from {', '.join(map(str, directories))} and "
            "the pinned releases of Debian's mirror)"
        )
        return build_runtime({}, directories, wanted=wanted, machine=machine, say=say)
    installed = install_runtime(minor, say, machine, environment.variables)
    if installed.version != wanted and not installed.version.startswith(wanted + "."):
        raise RuntimeError_(
            f"the runtime wheel of Python {minor} holds CPython {installed.version}, not {wanted}",
            hint=f"build that release from source: ingot runtime build {wanted}; or ask for "
            f"--python {minor}",
        )
    return installed


def _stored_runtime(wanted: str, machine: Machine, root: Path) -> runtimes.Runtime:
    """The runtime of Python ``wanted`` for ``machine`` in the store ``root``; RuntimeError_ if
    it has none (or only one an earlier ingot's wheel installed)."""
    found = runtimes.find_runtime(wanted, machine.name, root)
    if found is None or (_stale(found) and "wheel" in found.info):
        raise RuntimeError_(
            f"no runtime for Python {wanted} ({machine.name}) in {root}",
            hint=f"install it: ingot runtime install {wanted}"
            + (f" --target {machine.name}" if machine != host_machine() else "")
            + f"; or build it: ingot runtime build {wanted}",
        )
    return found


def _parts(found: runtimes.Runtime, wanted: str) -> tuple[Path, Path]:
    """The launcher and ingot's extension module of a runtime; RuntimeError_ if it lacks one."""
    launcher_file = found.info.get("launcher", {}).get("file")
    launcher = found.path / launcher_file if launcher_file else None
    if launcher is None or not launcher.is_file():
        raise RuntimeError_(
            f"the runtime {found.path} has no launcher",
            hint=f"rebuild it: ingot runtime build {wanted} --force ...",
        )
    importer = sorted((found.path / "launcher").glob("_ingot.*.so"))
    if not importer:
        raise RuntimeError_(
            f"the runtime {found.path} has no ingot extension module for its interpreter",
            hint=f"rebuild it: ingot runtime build {wanted} --force ...",
        )
    return launcher, importer[0]


def runtime_target(
    wanted: str, request: Request, machine: Machine | None = None, root: Path | None = None
) -> Target:
    """The target of the runtime of Python ``wanted`` for ``machine`` (default: this one), from
    the store ``root`` (default: :func:`ingot.runtime.store.store`). For another machine, the
    build runs under this machine's runtime of the same CPython release (which nothing of the
    target runs in)."""
    machine = machine or host_machine()
    root = root or runtimes.store()
    found = _stored_runtime(wanted, machine, root)
    runtimes.verify_runtime(found)  # nothing another user could have put there or changed
    launcher = _parts(found, wanted)[0]
    builder = found
    if machine != host_machine():
        builder = _stored_runtime(found.version, host_machine(), root)
        runtimes.verify_runtime(builder)
        if builder.version != found.version:
            raise RuntimeError_(
                f"a build for {machine.name} with CPython {found.version} runs under this "
                f"machine's runtime of the same release, but the store's is {builder.version}",
                hint=f"build it: ingot runtime build {found.version}; or install both runtimes "
                "from the wheels of one ingot",
            )
    _, builder_importer = _parts(builder, wanted)
    return Target(
        python=".".join(found.version.split(".")[:2]),
        launcher=None if request.archive_only else Path(request.launcher or launcher),
        runtime=found.name,
        runtime_python=builder.python,
        runtime_importer=builder_importer,
        pip_python=sys.executable,
        platforms=machine.wheel_platforms(GLIBC_FLOOR),
        newer_platforms=newer_manylinux_platforms(machine),
        machine=machine.name,
        stdlib_prefix=found.path / "python" if found is not builder else None,
        runtime_sources=runtime_sources(found),
    )


def runtime_sources(runtime: runtimes.Runtime) -> tuple[tuple[str, str, str, str, str], ...]:
    """What ``runtime`` is built from, by its runtime.json: CPython's source (its version the
    runtime's), Debian's patches of it, and each library's, with its version (recorded by the
    runtime's build; for a runtime built before that, its pin's or its file name's)."""
    sources = runtime.info.get("sources", {})
    found = []
    for name, entry in sorted(sources.items(), key=lambda item: item[0] != "python"):
        recipe = recipes.LIBRARIES.get(name)
        if name not in ("python", "patches") and recipe is None:
            continue  # (a tool of the build, compiler-rt's profile runtime: not in the runtime)
        file, sha256 = str(entry.get("file", "")), str(entry.get("sha256", ""))
        version = runtime.version if name == "python" else entry.get("version")
        if version is None:
            version = pins.source_version(file, sha256)
        purpose = (
            recipe.purpose
            if recipe
            else "CPython"
            if name == "python"
            else "Debian's security patches of CPython"
        )
        found.append((name, version or "", file, sha256, purpose))
    return tuple(found)


def newer_manylinux_platforms(machine: Machine | None = None) -> tuple[str, ...]:
    """``manylinux_2_18_<machine>`` up to the build machine's glibc, oldest first: the wheels a
    runtime build falls back to when a requirement has none for glibc 2.17 (numpy 2.3 and later
    publish only ``manylinux_2_28``)."""
    machine = machine or host_machine()
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # not glibc
        libc = ""
    found = re.search(r"(\d+)\.(\d+)", libc)
    newest = int(found[2]) if found and found[1] == "2" else 17
    return tuple(f"manylinux_2_{minor}_{machine.name}" for minor in range(18, newest + 1))
