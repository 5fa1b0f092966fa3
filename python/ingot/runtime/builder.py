"""Building a runtime: the libraries its standard library uses, then CPython, with
:mod:`ingot.runtime.toolchain` (zig, for glibc 2.17) and the :mod:`ingot.runtime.recipes`; then
the launcher and ingot's extension module linked against it (cargo-zigbuild). A runtime is built
in a temporary directory next to its final place and renamed into it when complete: an
interrupted build leaves no half runtime.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import ingot.runtime.toolchain as toolchain_module
from ingot.cachedir import make_directories
from ingot.elf import GlibcFloor, glibc_floor
from ingot.machine import Machine, host_machine
from ingot.runtime import pins as pinning
from ingot.runtime import recipes
from ingot.runtime.build_checks import (
    DESKTOP_MODULES,
    REQUIRED_MODULES,
    TOOLS_HINT,
    check_build_tools,
    check_modules,
    check_modules_present,
    check_snapshot_tools,
    elf_images,
)
from ingot.runtime.commands import Builder
from ingot.runtime.launcher_build import (
    build_launcher,
    check_launcher_prerequisites,
    launcher_sources_digest,
    remove_left_zig_caches,
)
from ingot.runtime.pins import source_version as pinned_version
from ingot.runtime.sources import resolve_sources, sha256_of, unpack
from ingot.runtime.store import (
    RUNTIME_FORMAT,
    Runtime,
    RuntimeError_,
    find_runtime,
    read_runtime,
    record_hashes,
    store,
)
from ingot.runtime.toolchain import (
    GLIBC_FLOOR,
    Toolchain,
    ToolchainError,
    find_llvm_profdata,
    find_zig,
)

__all__ = ["build_runtime", "libraries_fingerprint", "recipes_fingerprint", "relocate"]


#: Where a runtime build says what it is doing.
Say = Callable[[str], None]


def recipes_fingerprint() -> str:
    """A hash of how runtimes are built (what the recipes and the toolchain's wrappers do, not
    their comments or docstrings: :func:`ingot.runtime.recipes.fingerprint`): a runtime built
    otherwise is built again rather than reused."""
    return recipes.fingerprint(*_recipe_modules("libraries", "cpython"))


def libraries_fingerprint() -> str:
    """The same of the libraries' recipes alone: a change to CPython's recipe keeps them."""
    return recipes.fingerprint(*_recipe_modules("libraries"))


def _recipe_modules(*parts: str) -> list[Path]:
    directory = Path(recipes.__file__).parent
    return [*(directory / f"{part}.py" for part in parts), Path(toolchain_module.__file__)]


class SharedLibraries:
    """The libraries a runtime's CPython is built with (:data:`recipes.LIBRARIES`, and for a
    profile-guided build the profile runtime), shared by the runtime builds of one target: the
    3.11 and the 3.13 runtime build them from the same sources with the same recipes, so the
    second build takes them from the first (on a fresh machine, the test command builds both:
    about 5.5 minutes here, nearly half of a 3.13 build's time). They live in the store, ``.libraries/<target>-<key>``,
    where ``key`` hashes everything they are built from (the recipes' fingerprint, zig's version,
    the sources' sha256); they are built in place (their pkg-config and libtool files record
    their directory), ``complete`` written last, so an interrupted build's are built again.

    Tcl's and Tk's script libraries (:data:`recipes.SCRIPT_LIBRARIES`) are moved from ``lib/``
    to ``scripts/`` once the libraries are complete: Tcl looks first in the directory compiled
    into it (``<libraries>/lib/tcl8.6``), and a runtime's Tcl must find its own copy (beside its
    standard library), not one left in the store (a build directory, deleted, never had it).

    A context manager: held, a shared lock on ``<directory>.lock`` (an exclusive one while it
    builds them), so that a build of another key, which deletes the libraries of this target it
    does not use, waits for no one and deletes none in use."""

    DIRECTORY = ".libraries"
    SCRIPTS = "scripts"

    def __init__(self, root: Path, target: str, what: dict[str, Any]):
        """``what``: everything they are built from (:meth:`inputs`)."""
        key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]
        self.parent = root / self.DIRECTORY
        self.target = target
        self.path = self.parent / f"{target}-{key}"
        self.what = what
        #: Whether an earlier build left them complete (nothing to build).
        self.complete_before = False
        self._lock: IO[bytes] | None = None

    @staticmethod
    def inputs(
        toolchain: Toolchain, zig: str, digests: dict[str, str], *, profile_guided: bool
    ) -> dict[str, Any]:
        """What the libraries of a build are made from: the recipes, the target, zig's version
        (``zig``) and the sha256 of each library's source (``digests``), the profile runtime's
        for a profile-guided build."""
        names = sorted(recipes.LIBRARIES) + (
            [recipes.PROFILE_RUNTIME.name] if profile_guided else []
        )
        return {
            "recipes": libraries_fingerprint(),
            "target": toolchain.target,
            "zig": zig,
            "sources": {name: digests[name] for name in names},
        }

    def __enter__(self) -> SharedLibraries:
        make_directories(self.parent)
        self._lock = open(self.path.with_name(self.path.name + ".lock"), "wb")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self.complete_before = (self.path / "complete").is_file()
        if not self.complete_before:
            shutil.rmtree(self.path, ignore_errors=True)  # an interrupted build's
            self.path.mkdir()
        else:
            self._put_scripts_aside()  # (libraries completed before they were)
            fcntl.flock(self._lock, fcntl.LOCK_SH)
        return self

    def script_library(self, name: str) -> Path:
        """Where the script library ``name`` (``tcl8.6``) is, once they are complete."""
        return self.path / self.SCRIPTS / name

    def _put_scripts_aside(self) -> None:
        for name in recipes.SCRIPT_LIBRARIES:
            installed = self.path / "lib" / name
            if installed.is_dir():
                shutil.rmtree(self.script_library(name), ignore_errors=True)
                self.script_library(name).parent.mkdir(exist_ok=True)
                installed.rename(self.script_library(name))

    def done(self) -> None:
        """Marks them complete (after they were built; script libraries put aside), lets other
        builds use them, and deletes this target's libraries of other keys that no build is
        using."""
        self._put_scripts_aside()
        (self.path / "complete").write_text(json.dumps(self.what, indent=2) + "\n")
        assert self._lock is not None
        fcntl.flock(self._lock, fcntl.LOCK_SH)
        for other in self.parent.glob(f"{self.target}-*.lock"):
            directory = other.with_suffix("")
            if directory == self.path:
                continue
            with open(other, "wb") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # in use
                shutil.rmtree(directory, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def build_runtime(
    sources: dict[str, str],
    directories: Iterable[Path] = (),
    *,
    wanted: str | None = None,
    jobs: int | None = None,
    force: bool = False,
    keep_build: bool = False,
    machine: Machine | None = None,
    pgo: bool | None = None,
    lto: bool | None = None,
    say: Callable[[str], None] = print,
) -> Runtime:
    """Builds a runtime from the given sources and stores it; returns it. ``wanted`` (``3.11``)
    must match the CPython source's version. For another ``machine`` than this one (a cross
    build), the runtime of this machine of the same CPython release is used to build it (and
    built first, from the same sources, when the store lacks it). ``pgo``: profile-guided
    optimization (the default of a native build; a cross build cannot run its training).
    ``lto``: ThinLTO (the default; false: a quicker build, whose launcher links native code,
    for tests: a stored runtime built with it is kept)."""
    directories = [Path(directory) for directory in directories]
    link_time = _link_time(pgo, lto)
    zig = find_zig()
    toolchain = Toolchain(zig, machine=machine or host_machine())
    if wanted:
        _check_cross_version(toolchain, wanted)  # before anything is fetched
    check_build_tools()
    check_launcher_prerequisites(toolchain)  # (needed last, checked first)
    llvm_profdata = _llvm_profdata_for(pgo, toolchain, sources, directories, say)
    profile_guided = llvm_profdata is not None
    root = store()
    make_directories(root)
    remove_left_zig_caches(root)
    found = _sources_for(wanted, sources, directories, root, toolchain, profile_guided, say)
    jobs = jobs or os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    stack = contextlib.ExitStack()
    try:
        source_root = work / "src"
        python_source, version, minor = _unpack_python(found["python"], source_root, wanted)
        applied = _apply_patches(found.get("patches"), python_source, source_root, say)
        _check_cross_version(toolchain, version)
        name = f"cpython-{version}-{toolchain.target}"
        final = root / name
        digests = {key: sha256_of(path) for key, path in found.items()}
        existing = None if force else _built_already(final, say, profile_guided, digests, link_time)
        if existing is not None:
            return existing
        stage = work / name
        prefix = stage / "python"
        log = stage / "build.log"
        stage.mkdir(parents=True)
        build_python = None
        if toolchain.cross:
            build_python = _build_python(version, sources, directories, jobs, pgo, lto, say)
        zig_version = toolchain.version()
        made_of = SharedLibraries.inputs(
            toolchain, zig_version, digests, profile_guided=profile_guided
        )
        libraries = stack.enter_context(SharedLibraries(root, toolchain.target, made_of))
        builder = Builder(toolchain, log, say)
        started = time.monotonic()
        say(f"building runtime {name} with zig {zig_version} ({jobs} jobs); log: {log}")
        timings = _compile(
            builder,
            found,
            source_root,
            python_source,
            prefix,
            libraries,
            jobs,
            build_python,
            llvm_profdata,
            link_time,
        )
        floor = _check_built(builder, prefix, python_source, libraries.path, minor)
        timings["total"] = round(time.monotonic() - started, 1)
        info = _runtime_info(version, toolchain, floor, found, timings, digests)
        info["libraries"] = {"directory": libraries.path.name, "reused": libraries.complete_before}
        info["patches"] = applied
        info["optimization"] = _optimization(llvm_profdata, jobs, builder.profile, link_time)
        info["launcher"] = _launcher(stage, prefix, toolchain, builder, build_python, log)
        record_hashes(Runtime(stage, info))
        (stage / "runtime.json").write_text(json.dumps(info, indent=2) + "\n")
        _install(stage, final)
        say(f"runtime {name}: {final} ({floor}; {info['build_seconds']['total']:.0f} s)")
        return Runtime(final, info)
    finally:
        stack.close()
        if keep_build:
            say(f"build directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _link_time(pgo: bool | None, lto: bool | None) -> bool:
    """Whether a build is link-time optimized (``lto`` unset: it is); RuntimeError_ for PGO
    without it."""
    if pgo and lto is False:
        raise RuntimeError_(
            "--pgo with --no-lto: a profile-guided runtime is also link-time optimized",
            hint="leave out --no-lto (or --pgo)",
        )
    return lto is not False


def _sources_for(
    wanted: str | None,
    sources: dict[str, str],
    directories: list[Path],
    root: Path,
    toolchain: Toolchain,
    profile_guided: bool,
    say: Say,
) -> dict[str, Path]:
    """The source files of a build (the pinned ones of ``wanted``, less what ``sources``
    gives), found or downloaded and checked, with the profile runtime's for a profile-guided
    build; RuntimeError_ for a source the build's tools cannot take."""
    found = resolve_sources(
        sources,
        directories,
        root / ".downloads",
        wanted,
        pinned=_pins_for(wanted, sources),
        say=say,
        tools=[recipes.PROFILE_RUNTIME.name] if profile_guided else [],
    )
    if profile_guided:
        _check_profile_runtime(toolchain, found[recipes.PROFILE_RUNTIME.name])
    check_snapshot_tools(found)
    return found


def _pins_for(wanted: str | None, sources: dict[str, str]) -> dict[str, pinning.Pin]:
    """The pinned files a runtime of ``wanted`` (``3.13``, ``3.13.15``) is built from
    (:func:`ingot.runtime.pins.pins_for`): all of them, less CPython's (and its patches) when
    its source is given or another release of it is wanted; RuntimeError_ when CPython has no
    pin and no source is given."""
    minor = ".".join(wanted.split(".")[:2]) if wanted else None
    pins = pinning.read_pins()
    try:
        if minor is None:
            raise pinning.PinError("no version asked for")
        chosen = pinning.pins_for(minor, pins)
    except pinning.PinError as error:
        if "python" not in sources:
            raise RuntimeError_(str(error), hint=error.hint) from None
        chosen = {
            name: pin for name, pin in pins.items() if not name.startswith(("python-", "patches-"))
        }
    if "python" in sources or (
        wanted and wanted.count(".") == 2 and chosen["python"].version != wanted
    ):
        chosen.pop("python", None)  # (and its patches: they are of the pinned release)
        chosen.pop("patches", None)
    return chosen


def _apply_patches(
    series: Path | None, python_source: Path, source_root: Path, say: Say
) -> list[str]:
    """Applies to CPython's tree the patches of Debian's series (``series``: its
    ``.debian.tar.*``) that :func:`ingot.runtime.recipes.security_patches` takes; their names,
    in order. RuntimeError_ naming the patch that does not apply."""
    if series is None:
        return []
    if shutil.which("patch") is None:
        raise RuntimeError_(
            "applying CPython's patches needs GNU patch, which this machine lacks",
            hint=TOOLS_HINT,
        )
    patches = unpack(series, source_root / "debian-series") / "patches"
    chosen = recipes.security_patches(patches)
    for name in chosen:
        done = subprocess.run(
            ["patch", "-p1", "-N", "--no-backup-if-mismatch", "-i", str(patches / name)],
            cwd=python_source,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError_(
                f"{series.name}: {name} does not apply to {python_source.name}: "
                f"{(done.stdout + done.stderr).strip()[-400:]}",
                hint="pin the CPython release that series is for (sources.toml)",
            )
    say(f"  CPython: {len(chosen)} patches of {series.name} applied")
    return chosen


def _unpack_python(
    archive: Path, source_root: Path, wanted: str | None
) -> tuple[Path, str, tuple[int, ...]]:
    """Unpacks CPython's source release; its tree, version and (major, minor); an error unless
    it is the ``wanted`` version and a supported one."""
    python_source = unpack(archive, source_root)
    version = ".".join(str(part) for part in recipes.python_version_of(python_source))
    if wanted and version != wanted and not version.startswith(wanted + "."):
        raise RuntimeError_(
            f"the CPython source {archive.name} is {version}, not {wanted}",
            hint="give the source release of that version",
        )
    minor = tuple(int(part) for part in version.split(".")[:2])
    if not (3, 10) <= minor <= (3, 15):
        raise RuntimeError_(f"CPython {version} is not supported (3.10 to 3.15 are)")
    return python_source, version, minor


def _check_built(
    builder: Builder, prefix: Path, python_source: Path, libraries: Path, minor: tuple[int, ...]
) -> GlibcFloor:
    """Checks what was built: the modules the recipes promise (imported where the runtime runs
    here), and its glibc floor; returns the floor."""
    toolchain = builder.toolchain
    if toolchain.cross:
        check_modules_present(prefix, python_source, REQUIRED_MODULES + DESKTOP_MODULES)
    else:
        check_modules(prefix, minor, builder.runner(python_source, libraries), python_source)
        check_modules_present(prefix, python_source, DESKTOP_MODULES)
    floor = glibc_floor(elf_images(prefix))
    if floor.version is not None and floor.version > toolchain.glibc:
        raise RuntimeError_(
            f"the runtime needs {floor}, above its target glibc "
            f"{toolchain.glibc[0]}.{toolchain.glibc[1]}",
            hint=f"a library linked something of the build machine; see {builder.log_path}",
        )
    return floor


def _llvm_profdata_for(
    pgo: bool | None,
    toolchain: Toolchain,
    sources: dict[str, str],
    directories: Iterable[Path],
    say: Say,
) -> Path | None:
    """The llvm-profdata a build merges its training's profiles with, or None for a build without
    PGO: ``pgo`` asks for it (an error if it cannot be done) or not; unset, a native build is
    profile-guided when llvm-profdata and LLVM's source are at hand, and says why when not."""
    if pgo and toolchain.cross:
        raise RuntimeError_(
            f"a runtime for {toolchain.machine.name} cannot be built with profile-guided "
            f"optimization on {host_machine().name}: its training run would not run here",
            hint="leave out --pgo (a cross build is optimized with -O3 and ThinLTO)",
        )
    if pgo is False or (pgo is None and toolchain.cross):
        return None
    try:
        llvm_profdata = find_llvm_profdata()[0]
    except ToolchainError as error:
        if pgo:  # asked for: what it needs must be there
            raise
        say(_without_pgo(str(error), error.hint))
        return None
    if not pgo and not _llvm_source_at_hand(sources, directories):
        say(
            _without_pgo(
                "no LLVM source (for compiler-rt's profile runtime) given or in the --sources "
                "directories, and none is pinned",
                "scripts/runtime-sources DIR fetches Debian's (llvm-toolchain-22); or give "
                "--source compiler-rt=PATH",
            )
        )
        return None
    return llvm_profdata


def _without_pgo(why: str, hint: str | None) -> str:
    """What a build says when it goes on without the PGO it would do by default."""
    return (
        f"building without profile-guided optimization (its Python code runs about 8% slower): "
        f"{why}" + (f"\n  hint: {hint}" if hint else "") + "\n  (--pgo makes this an error)"
    )


def _llvm_source_at_hand(sources: dict[str, str], directories: Iterable[Path]) -> bool:
    """Whether the LLVM source of the profile runtime is given, or in one of the directories."""
    if recipes.PROFILE_RUNTIME.name in sources:
        return True
    return any(
        fnmatch.fnmatchcase(path.name, pattern)
        for directory in directories
        if Path(directory).is_dir()
        for path in Path(directory).iterdir()
        for pattern in recipes.PROFILE_RUNTIME.patterns
    )


def _optimization(
    llvm_profdata: Path | None, jobs: int, profile: dict[str, int] | None, lto: bool = True
) -> dict[str, Any]:
    """What ``runtime.json`` says of how CPython was optimized (``lto``: with ThinLTO)."""
    return {
        "cflags": "CPython's own (-O3)",
        "lto": "thin" if lto else None,
        "lto_codegen": "-O3" if lto else None,
        "pgo": {
            "instrumentation": f"IR ({recipes.PGO_GENERATE}, {recipes.PGO_USE})",
            "profile_task": recipes.PROFILE_TASK.format(jobs=jobs),
            "llvm_profdata": str(llvm_profdata),
            "counted": profile,
        }
        if llvm_profdata is not None
        else None,
    }


def _check_profile_runtime(toolchain: Toolchain, source: Path) -> None:
    """RuntimeError_ unless the LLVM source of the profile runtime is the release zig's clang
    is: instrumented code and its runtime must agree on the profile's format."""
    release = recipes.llvm_version_of(source)
    clang = toolchain.clang_major()
    if release is None or clang is None or release[0] != clang:
        raise RuntimeError_(
            f"the profile runtime's source {source.name} is LLVM "
            f"{'.'.join(map(str, release)) if release else '(unknown)'}, but zig's clang is "
            f"LLVM {clang if clang is not None else '(unknown)'}",
            hint=f"give LLVM {clang}'s source (--source compiler-rt=PATH: llvm-project-{clang}.*"
            f".src.tar.xz, or Debian's llvm-toolchain-{clang}_*.orig.tar.xz), or --no-pgo",
        )


def _built_already(
    final: Path,
    say: Callable[[str], None],
    pgo: bool,
    digests: dict[str, str],
    lto: bool = True,
) -> Runtime | None:
    """The runtime stored at ``final``, if it was built with these recipes from these sources
    (``digests``: name -> sha256), and as profile-guided and link-time optimized as wanted (one
    optimized more than wanted is kept)."""
    existing = read_runtime(final) if final.exists() else None
    if existing is not None:
        # (the profile runtime's source builds a tool of the build, nothing in the runtime)
        tool = recipes.PROFILE_RUNTIME.name
        recorded = existing.info.get("sources") or {}
        built_from = {name: entry.get("sha256") for name, entry in recorded.items() if name != tool}
        wanted = {name: sha256 for name, sha256 in digests.items() if name != tool}
        if built_from != wanted:
            changed = sorted(set(built_from.items()) ^ set(wanted.items()))
            say(
                f"runtime {final.name} was built from other sources "
                f"({', '.join(sorted({name for name, _ in changed}))}): building it again"
            )
            return None
    if (
        existing is not None
        and (existing.info.get("optimization") or {}).get("pgo") is None
        and pgo
    ):
        say(
            f"runtime {final.name} was built without profile-guided optimization: building it again"
        )
        return None
    if (
        existing is not None
        and (existing.info.get("optimization") or {}).get("lto") is None
        and lto
    ):
        say(f"runtime {final.name} was built without link-time optimization: building it again")
        return None
    if existing is not None and existing.info.get("recipes") == recipes_fingerprint():
        say(f"runtime {final.name} is already built ({final}); --force rebuilds it")
        return existing
    if existing is not None:
        say(f"runtime {final.name} was built with other recipes: building it again")
    return None


def _launcher(
    stage: Path,
    prefix: Path,
    toolchain: Toolchain,
    builder: Builder,
    build_python: Path | None,
    log: Path,
) -> dict[str, str | None]:
    """Builds the runtime's launcher, checks its glibc floor; what runtime.json says of it."""
    launcher = build_launcher(stage, prefix, toolchain, builder, build_python)
    launcher_floor = glibc_floor([(launcher.name, launcher.read_bytes())])
    if launcher_floor.version is not None and launcher_floor.version > toolchain.glibc:
        raise RuntimeError_(
            f"the runtime's launcher needs {launcher_floor}, above glibc "
            f"{toolchain.glibc[0]}.{toolchain.glibc[1]}",
            hint=f"see {log}",
        )
    return {
        "file": str(launcher.relative_to(stage)),
        "glibc_floor": ".".join(map(str, launcher_floor.version))
        if launcher_floor.version
        else None,
        "sources": launcher_sources_digest(),
    }


def _check_cross_version(toolchain: Toolchain, version: str) -> None:
    """RuntimeError_ for a cross build of CPython older than 3.11 (no --with-build-python)."""
    minor = tuple(int(part) for part in version.split(".")[:2])
    if toolchain.cross and minor < (3, 11):
        raise RuntimeError_(
            f"CPython {version} cannot be built for {toolchain.machine.name} on "
            f"{host_machine().name} (cross builds need 3.11 or later: --with-build-python)",
            hint="build a runtime of 3.11 or later for it",
        )


def _build_python(
    version: str,
    sources: dict[str, str],
    directories: list[Path],
    jobs: int,
    pgo: bool | None,
    lto: bool | None,
    say: Say,
) -> Path:
    """The interpreter a cross build of CPython ``version`` runs here: this machine's runtime of
    the same release, built first (from the same sources) when the store lacks it."""
    host = find_runtime(version, host_machine().name)
    if host is None or host.version != version:
        say(f"a cross build needs this machine's runtime of CPython {version}: building it first")
        host = build_runtime(
            sources, directories, wanted=version, jobs=jobs, pgo=pgo, lto=lto, say=say
        )
    return host.python


def _compile(
    builder: Builder,
    found: dict[str, Path],
    source_root: Path,
    python_source: Path,
    prefix: Path,
    shared: SharedLibraries,
    jobs: int,
    build_python: Path | None,
    llvm_profdata: Path | None = None,
    lto: bool = True,
) -> dict[str, float]:
    """Builds every library of the recipes into ``shared`` (unless an earlier build left them
    there), then CPython into ``prefix`` (profile-guided with ``llvm_profdata``: first the
    profile runtime); returns the seconds each took."""
    libraries = shared.path
    timings: dict[str, float] = {}
    if shared.complete_before:
        builder.say(f"  the libraries: built by an earlier runtime build, in {libraries}")
    else:
        for name, seconds in _compile_libraries(
            builder, found, source_root, libraries, jobs, llvm_profdata
        ):
            timings[name] = seconds
        shared.done()
    begun = time.monotonic()
    version = ".".join(str(part) for part in recipes.python_version_of(python_source))
    how = ("-O3, ThinLTO" if lto else "-O3, no LTO") + (
        ", profile-guided (a training run)" if llvm_profdata else ""
    )
    builder.say(f"  CPython {version} from {found['python'].name} ({how})")
    profile = recipes.build_python(
        python_source,
        prefix,
        libraries,
        builder.runner(python_source, libraries),
        jobs,
        builder.toolchain.machine,
        build_python,
        llvm_profdata,
        lto,
    )
    if profile is not None:
        builder.profile = profile
    for script_library in recipes.SCRIPT_LIBRARIES:  # Tcl's and Tk's, beside lib/python3.X
        shutil.copytree(shared.script_library(script_library), prefix / "lib" / script_library)
    timings["python"] = round(time.monotonic() - begun, 1)
    return timings


def _compile_libraries(
    builder: Builder,
    found: dict[str, Path],
    source_root: Path,
    libraries: Path,
    jobs: int,
    llvm_profdata: Path | None,
) -> Iterable[tuple[str, float]]:
    """Builds the profile runtime (for a profile-guided build) and every library of the recipes
    into ``libraries``; yields each one's name and the seconds it took."""
    machine = builder.toolchain.machine
    chosen = list(recipes.LIBRARIES.items())
    if llvm_profdata is not None:
        chosen.insert(0, (recipes.PROFILE_RUNTIME.name, recipes.PROFILE_RUNTIME))
    for library, recipe in chosen:
        begun = time.monotonic()
        builder.say(f"  {library} ({recipe.purpose}) from {found[library].name}")
        only = recipes.PROFILE_RUNTIME_MEMBERS if recipe is recipes.PROFILE_RUNTIME else ()
        source = unpack(found[library], source_root, only=only)
        recipe.build(source, libraries, builder.runner(source, libraries), jobs, machine)
        yield library, round(time.monotonic() - begun, 1)


def _runtime_info(
    version: str,
    toolchain: Toolchain,
    floor: GlibcFloor,
    found: dict[str, Path],
    timings: dict[str, float],
    digests: dict[str, str],
) -> dict[str, Any]:
    """``runtime.json``, but for its launcher: what the runtime is and how it was built
    (``digests``: the sha256 of each source in ``found``)."""
    return {
        "format": RUNTIME_FORMAT,
        "python": {"version": version, "implementation": "cpython"},
        "target": toolchain.target,
        "glibc_floor": {
            "version": ".".join(map(str, floor.version)) if floor.version else None,
            "set_by": floor.needed_by,
            "target": f"{GLIBC_FLOOR[0]}.{GLIBC_FLOOR[1]}",
        },
        "toolchain": {"zig": toolchain.version()},
        "recipes": recipes_fingerprint(),
        "sources": {
            key: {
                "file": path.name,
                "sha256": digests[key],
                # (the bill of materials of the executables built with it names these)
                "version": version if key == "python" else pinned_version(path.name, digests[key]),
            }
            for key, path in found.items()
        },
        "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": timings,
    }


def _install(stage: Path, final: Path) -> None:
    """Moves the complete runtime at ``stage`` to ``final`` in the store (replacing an older
    one there), its recorded prefix rewritten first."""
    relocate(stage / "python", final / "python")
    if final.exists():
        doomed = final.with_name(f".replaced-{final.name}-{os.getpid()}")
        final.rename(doomed)
        shutil.rmtree(doomed)
    stage.rename(final)


#: Text files of an installed CPython that record its prefix (sysconfig's data, the Makefile
#: python3.X-config and pkg-config read).
_PREFIX_FILES = (
    "lib/python3.*/_sysconfigdata_*.py",
    "lib/python3.*/config-3.*/Makefile",
    "bin/python3.*-config",
    "lib/pkgconfig/*.pc",
)


def relocate(prefix: Path, new: Path, *, recorded: str | None = None) -> None:
    """Rewrites the prefix recorded in an installed CPython's text files (sysconfig's
    ``LIBPL``, ``prefix``, ...) from ``prefix`` (or the ``recorded`` one, where the files were
    moved already) to ``new``, where the tree is about to be moved, so that sysconfig (and the
    launcher's build, which asks it for ``libpython3.X.a``) finds its files there. The
    interpreter itself finds its prefix from its own location."""
    old_text, new_text = recorded or str(prefix), str(new)
    for pattern in _PREFIX_FILES:
        for path in prefix.glob(pattern):
            if path.is_symlink() or not path.is_file():
                continue
            text = path.read_text()
            if old_text in text:
                path.write_text(text.replace(old_text, new_text))
    for cached in prefix.glob("lib/python3.*/__pycache__/_sysconfigdata_*"):
        cached.unlink()
