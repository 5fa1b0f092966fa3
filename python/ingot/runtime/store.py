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

import datetime
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ingot.runtime.toolchain as toolchain_module
from ingot.elf import glibc_floor
from ingot.errors import IngotError
from ingot.runtime import recipes
from ingot.runtime.toolchain import GLIBC_FLOOR, Toolchain, find_zig

__all__ = [
    "Runtime",
    "RuntimeError_",
    "build_runtime",
    "find_runtime",
    "list_runtimes",
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


def recipes_fingerprint() -> str:
    """A hash of how runtimes are built (the recipes and the toolchain's wrappers): a runtime
    built otherwise is built again rather than reused."""
    digest = hashlib.sha256()
    for module in (recipes.__file__, toolchain_module.__file__):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()[:16]


def _read(path: Path) -> Runtime | None:
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
        and (runtime := _read(entry)) is not None
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


# --- sources --------------------------------------------------------------------------------------

_URL = re.compile(r"^(https?://[^#]+)#sha256=([0-9a-fA-F]{64})$")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fetch(url: str, sha256: str, downloads: Path) -> Path:
    """Downloads ``url`` once into ``downloads`` and checks it against ``sha256``."""
    name = url.rstrip("/").rsplit("/", 1)[-1] or "download"
    target = downloads / name
    if target.exists() and _sha256(target) == sha256.lower():
        return target
    downloads.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        if isinstance(error, urllib.error.HTTPError):
            error.close()  # its response
        partial.unlink(missing_ok=True)
        raise RuntimeError_(
            f"cannot download {url}: {error}",
            hint="download it yourself and give the file (--source NAME=PATH, "
            "or put it in a directory given with --sources DIR)",
        ) from error
    got = _sha256(partial)
    if got != sha256.lower():
        partial.unlink()
        raise RuntimeError_(
            f"{url}: sha256 {got}, expected {sha256.lower()}",
            hint="check the URL and the hash you gave",
        )
    partial.replace(target)
    return target


#: The pinned upstream releases (``runtime_sources.toml``): what a runtime is built from when
#: nothing else is given.
PINNED_SOURCES = Path(__file__).with_name("runtime_sources.toml")


def pinned_sources(
    python_version: str | None, table: Path = PINNED_SOURCES
) -> dict[str, tuple[str, str]]:
    """``{name: (url, sha256)}`` of the pinned upstream releases: every library, and CPython if
    ``python_version`` (``3.13``) has an entry."""
    from ingot.build.project import tomllib_for

    data = tomllib_for(table).loads(table.read_text())
    pinned = {
        name: (entry["url"], entry["sha256"]) for name, entry in data.get("libraries", {}).items()
    }
    if python_version is not None and python_version in data.get("python", {}):
        entry = data["python"][python_version]
        pinned["python"] = (entry["url"], entry["sha256"])
    return pinned


def resolve_sources(
    given: dict[str, str],
    directories: Iterable[Path],
    downloads: Path,
    python_version: str | None = None,
    pinned: dict[str, tuple[str, str]] | None = None,
    say: Callable[[str], None] = lambda message: None,
) -> dict[str, Path]:
    """The source release of CPython (``python``) and of every library: given by name (a path or
    ``URL#sha256=HEX``), or found in ``directories`` by the recipes' patterns (for CPython, the
    release of ``python_version`` when the directories hold several), else downloaded from its
    ``pinned`` URL (checked against its sha256)."""
    names = ["python", *recipes.LIBRARIES]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise RuntimeError_(
            f"unknown source name(s): {', '.join(unknown)}",
            hint=f"the sources a runtime is built from: {', '.join(names)}",
        )
    patterns = {
        "python": recipes.PYTHON_PATTERNS,
        **{name: recipe.patterns for name, recipe in recipes.LIBRARIES.items()},
    }
    files = [
        path
        for directory in directories
        for path in sorted(Path(directory).iterdir())
        if path.is_file()
    ]
    found: dict[str, Path] = {}
    missing = []
    for name in names:
        if name in given:
            value = given[name]
            match = _URL.match(value)
            if match:
                found[name] = _fetch(match.group(1), match.group(2), downloads)
            elif "://" in value:
                raise RuntimeError_(
                    f"--source {name}={value}: an URL needs the sha256 of the file",
                    hint=f"--source {name}={value}#sha256=<64 hex digits>",
                )
            elif not Path(value).is_file():
                raise RuntimeError_(f"--source {name}={value}: no such file")
            else:
                found[name] = Path(value).resolve()
            continue
        candidates = [
            path
            for path in files
            if any(fnmatch.fnmatchcase(path.name, pattern) for pattern in patterns[name])
            and not path.name.endswith((".asc", ".sig", ".dsc"))
        ]
        if name == "python" and python_version and len(candidates) > 1:
            version = re.compile(rf"(^|[^0-9.]){re.escape(python_version)}([._-]|$)")
            candidates = [path for path in candidates if version.search(path.name)] or candidates
        if candidates:
            found[name] = candidates[-1].resolve()  # sorted: the newest-looking name
        elif pinned and name in pinned:
            url, sha256 = pinned[name]
            say(f"  {name}: {url}")
            found[name] = _fetch(url, sha256, downloads)
        else:
            missing.append(name)
    if missing:
        raise RuntimeError_(
            f"no source release for {', '.join(missing)}"
            + (f" in {', '.join(str(d) for d in directories)}" if directories else "")
            + (" and none pinned" if pinned is not None else ""),
            hint="give each with --source NAME=PATH (or NAME=URL#sha256=HEX), or a directory "
            "holding them with --sources DIR (Debian's `apt-get source --download-only` "
            "files work: scripts/runtime-sources fetches them)",
        )
    return found


def _unpack(archive: Path, into: Path) -> Path:
    """Unpacks a source tarball into ``into``; returns its top directory."""
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            tops = {member.name.split("/", 1)[0] for member in members}
            if len(tops) != 1:
                raise RuntimeError_(
                    f"{archive}: not a source release (expected one top "
                    f"directory, found {len(tops)})"
                )
            tar.extractall(into, filter="data") if hasattr(
                tarfile, "data_filter"
            ) else tar.extractall(into)
    except (tarfile.TarError, OSError) as error:
        raise RuntimeError_(f"cannot unpack {archive}: {error}") from None
    return into / tops.pop()


# --- the build ------------------------------------------------------------------------------------


class _Builder:
    """Runs one runtime build's commands, each logged, with the toolchain's environment."""

    def __init__(self, toolchain: Toolchain, log: Path, say: Callable[[str], None]):
        self.toolchain = toolchain
        self.log_path = log
        self.say = say

    def runner(self, build: Path, prefix: Path) -> Callable[..., None]:
        environment = self.toolchain.environment(build, prefix)

        def run(argv: list[str], cwd: Path, extra: dict[str, str] | None = None) -> None:
            env = dict(environment, **(extra or {}))
            argv = [
                re.sub(
                    r"\$([A-Z_]+)", lambda match: env.get(match.group(1), match.group(0)), argument
                )
                for argument in argv
            ]
            with open(self.log_path, "a") as log:
                log.write(f"\n$ (cd {cwd}) {' '.join(argv)}\n")
                log.flush()
                started = time.monotonic()
                try:
                    done = subprocess.run(
                        argv,
                        cwd=cwd,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                except OSError as error:
                    raise RuntimeError_(
                        f"cannot run `{' '.join(argv)}` in {cwd}: {error}",
                        hint="is the source release complete (a release "
                        "tarball, not a repository snapshot)?",
                    ) from None
                log.write(f"# exit {done.returncode} after {time.monotonic() - started:.1f} s\n")
            if done.returncode != 0:
                tail = self.log_path.read_text(errors="replace").splitlines()[-25:]
                raise RuntimeError_(
                    f"`{' '.join(argv)}` failed (exit {done.returncode}) in {cwd}:\n  "
                    + "\n  ".join(tail),
                    hint=f"the whole log: {self.log_path}",
                )

        return run


def build_runtime(
    sources: dict[str, str],
    directories: Iterable[Path] = (),
    *,
    wanted: str | None = None,
    jobs: int | None = None,
    force: bool = False,
    keep_build: bool = False,
    say: Callable[[str], None] = print,
) -> Runtime:
    """Builds a runtime from the given sources and stores it; returns it. ``wanted`` (``3.11``)
    must match the CPython source's version."""
    directories = [Path(directory) for directory in directories]
    zig = find_zig()
    toolchain = Toolchain(zig)
    root = store()
    root.mkdir(parents=True, exist_ok=True)
    pinned = pinned_sources(".".join(wanted.split(".")[:2]) if wanted else None)
    if wanted and wanted.count(".") == 2 and f"-{wanted}." not in pinned.get("python", ("",))[0]:
        pinned.pop("python", None)  # a patch release other than the pinned one
    found = resolve_sources(
        sources, directories, root / ".downloads", wanted, pinned=pinned, say=say
    )
    jobs = jobs or os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        source_root = work / "src"
        python_source = _unpack(found["python"], source_root)
        version = ".".join(str(part) for part in recipes.python_version_of(python_source))
        if wanted and version != wanted and not version.startswith(wanted + "."):
            raise RuntimeError_(
                f"the CPython source {found['python'].name} is {version}, not {wanted}",
                hint="give the source release of that version",
            )
        minor = tuple(int(part) for part in version.split(".")[:2])
        if not (3, 10) <= minor <= (3, 15):
            raise RuntimeError_(f"CPython {version} is not supported (3.10 to 3.15 are)")
        name = f"cpython-{version}-{toolchain.target}"
        final = root / name
        if final.exists() and not force:
            existing = _read(final)
            if existing is not None and existing.info.get("recipes") == recipes_fingerprint():
                say(f"runtime {name} is already built ({final}); --force rebuilds it")
                return existing
            if existing is not None:
                say(f"runtime {name} was built with other recipes: building it again")
        stage = work / name
        prefix = stage / "python"
        libraries = work / "libraries"
        log = stage / "build.log"
        stage.mkdir(parents=True)
        builder = _Builder(toolchain, log, say)
        started = time.monotonic()
        timings = {}
        say(f"building runtime {name} with zig {toolchain.version()} ({jobs} jobs); log: {log}")
        for library, recipe in recipes.LIBRARIES.items():
            begun = time.monotonic()
            say(f"  {library} ({recipe.purpose}) from {found[library].name}")
            source = _unpack(found[library], source_root)
            recipe.build(source, libraries, builder.runner(source, libraries), jobs)
            timings[library] = round(time.monotonic() - begun, 1)
        begun = time.monotonic()
        say(f"  CPython {version} from {found['python'].name}")
        arguments, environment = recipes.python_configure_arguments(prefix, libraries)
        run = builder.runner(python_source, libraries)
        run(["./configure", *arguments], cwd=python_source, extra=environment)
        run(["make", f"-j{jobs}"], cwd=python_source)
        run(["make", "install"], cwd=python_source)
        timings["python"] = round(time.monotonic() - begun, 1)
        _check_modules(prefix, minor, run, python_source)
        floor = glibc_floor(_elf_images(prefix))
        if floor.version is not None and floor.version > toolchain.glibc:
            raise RuntimeError_(
                f"the runtime needs {floor}, above its target glibc "
                f"{toolchain.glibc[0]}.{toolchain.glibc[1]}",
                hint=f"a library linked something of the build machine; see {log}",
            )
        info: dict[str, Any] = {
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
                key: {"file": path.name, "sha256": _sha256(path)} for key, path in found.items()
            },
            "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "build_seconds": {**timings, "total": round(time.monotonic() - started, 1)},
        }
        launcher = build_launcher(stage, prefix, toolchain, builder)
        launcher_floor = glibc_floor([(launcher.name, launcher.read_bytes())])
        if launcher_floor.version is not None and launcher_floor.version > toolchain.glibc:
            raise RuntimeError_(
                f"the runtime's launcher needs {launcher_floor}, above glibc "
                f"{toolchain.glibc[0]}.{toolchain.glibc[1]}",
                hint=f"see {log}",
            )
        info["launcher"] = {
            "file": str(launcher.relative_to(stage)),
            "glibc_floor": ".".join(map(str, launcher_floor.version))
            if launcher_floor.version
            else None,
        }
        (stage / "runtime.json").write_text(json.dumps(info, indent=2) + "\n")
        relocate(prefix, final / "python")
        if final.exists():
            doomed = root / f".replaced-{name}-{os.getpid()}"
            final.rename(doomed)
            shutil.rmtree(doomed)
        stage.rename(final)
        say(f"runtime {name}: {final} ({floor}; {info['build_seconds']['total']:.0f} s)")
        return Runtime(final, info)
    finally:
        if keep_build:
            say(f"build directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


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


def build_with(
    wanted: str,
    argv: list[str],
    *,
    launcher: str | None = None,
    build_missing: bool = False,
    say: Callable[[str], None] = print,
) -> int:
    """Runs ``ingot build`` (``argv``) under the runtime of Python ``wanted`` (built first if
    there is none and ``build_missing``): its interpreter runs this ingot (only this package is
    put on its path), with the runtime's launcher, and pip (of the Python ingot runs under)
    installs dependencies as wheels for that version and for manylinux (glibc 2.17) platforms.
    A console script is resolved here, where it is installed."""
    found = find_runtime(wanted)
    if found is None and build_missing:
        directories = [
            Path(d) for d in os.environ.get("INGOT_RUNTIME_SOURCES", "").split(os.pathsep) if d
        ]
        say(
            f"no runtime for Python {wanted} in {store()}: building it first (several minutes, "
            "once; sources from "
            + (", ".join(map(str, directories)) + " and " if directories else "")
            + "ingot's pinned upstream releases)"
        )
        found = build_runtime({}, directories, wanted=wanted, say=say)
    if found is None:
        raise RuntimeError_(
            f"no runtime for Python {wanted} in {store()}",
            hint=f"build it first: ingot runtime build {wanted} --sources DIR "
            "(scripts/runtime-sources DIR fetches the sources)",
        )
    launcher_file = found.info.get("launcher", {}).get("file")
    runtime_launcher = launcher or (str(found.path / launcher_file) if launcher_file else None)
    if runtime_launcher is None or not Path(runtime_launcher).is_file():
        raise RuntimeError_(
            f"the runtime {found.path} has no launcher",
            hint=f"rebuild it: ingot runtime build {wanted} --force ...",
        )
    package = Path(__file__).resolve().parents[1]
    importer = sorted((found.path / "launcher").glob("_ingot.*.so"))
    if not importer:
        raise RuntimeError_(
            f"the runtime {found.path} has no ingot extension module for its interpreter",
            hint=f"rebuild it: ingot runtime build {wanted} --force ...",
        )
    with tempfile.TemporaryDirectory(prefix="ingot-runtime-path-") as path:
        # This ingot's Python code, with the extension module built for the runtime.
        shadow = Path(path) / "ingot"
        shadow.mkdir()
        for item in package.iterdir():
            if not (
                item.name.startswith("_ingot.") and item.name.endswith(".so")
            ) and item.name not in ("_launcher", "__pycache__"):
                (shadow / item.name).symlink_to(item)
        (shadow / importer[0].name).symlink_to(importer[0])
        arguments = [
            arg
            for index, arg in enumerate(argv)
            if not (
                arg == "--python"
                or arg.startswith("--python=")
                or (index > 0 and argv[index - 1] == "--python")
            )
        ]
        if launcher is None:
            arguments += ["--launcher", runtime_launcher]
        code = (
            "import sys; sys.path.insert(0, sys.argv.pop(1)); from ingot.cli import main; "
            "sys.exit(main(sys.argv[1:]))"
        )
        environment = dict(os.environ, INGOT_IN_RUNTIME=found.name, INGOT_PIP_PYTHON=sys.executable)
        script = _console_script_argument(arguments)
        if script is not None:
            environment["INGOT_CONSOLE_SCRIPT"] = json.dumps(_console_script(script))
        return subprocess.run(
            [str(found.python), "-I", "-c", code, path, *arguments], env=environment
        ).returncode


def _console_script_argument(argv: list[str]) -> str | None:
    for index, arg in enumerate(argv):
        if arg.startswith("--console-script="):
            return arg.split("=", 1)[1]
        if arg == "--console-script" and index + 1 < len(argv):
            return argv[index + 1]
    return None


def _console_script(name: str) -> dict[str, str | list[str]]:
    """The console script ``name`` as installed where ingot runs: its entry point and its
    distribution's requirements pinned to the installed versions (what the build under the
    runtime, which sees none of this environment, installs)."""
    from ingot.build.sources import console_script_entry

    return dict(zip(("name", "entry", "requirements"), (name, *console_script_entry(name))))


#: Text files of an installed CPython that record its prefix (sysconfig's data, the Makefile
#: python3.X-config and pkg-config read).
_PREFIX_FILES = (
    "lib/python3.*/_sysconfigdata_*.py",
    "lib/python3.*/config-3.*/Makefile",
    "bin/python3.*-config",
    "lib/pkgconfig/*.pc",
)


def relocate(prefix: Path, new: Path) -> None:
    """Rewrites the prefix recorded in an installed CPython's text files (sysconfig's
    ``LIBPL``, ``prefix``, ...) from ``prefix`` to ``new``, where the tree is about to be moved,
    so that sysconfig (and the launcher's build, which asks it for ``libpython3.X.a``) finds its
    files there. The interpreter itself finds its prefix from its own location."""
    old_text, new_text = str(prefix), str(new)
    for pattern in _PREFIX_FILES:
        for path in prefix.glob(pattern):
            if path.is_symlink() or not path.is_file():
                continue
            text = path.read_text()
            if old_text in text:
                path.write_text(text.replace(old_text, new_text))
    for cached in prefix.glob("lib/python3.*/__pycache__/_sysconfigdata_*"):
        cached.unlink()


def source_tree() -> Path | None:
    """ingot's source tree (the launcher's crate): ``$INGOT_SOURCE_TREE``, the checkout this ingot
    runs from, or the copy an installed wheel carries (``ingot/_source``)."""
    here = Path(__file__).resolve()
    candidates = [os.environ.get("INGOT_SOURCE_TREE"), here.parents[3], here.parents[1] / "_source"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "crates" / "ingot-launcher" / "Cargo.toml").is_file():
            return Path(candidate)
    return None


def build_launcher(stage: Path, prefix: Path, toolchain: Toolchain, builder: _Builder) -> Path:
    """Builds the launcher against the runtime's ``libpython3.X.a``, linked by zig for the
    runtime's glibc (cargo-zigbuild), into ``stage/launcher/``."""
    tree = source_tree()
    cargo_zigbuild = shutil.which("cargo-zigbuild") or str(
        Path(sys.executable).parent / "cargo-zigbuild"
    )
    if tree is None:
        raise RuntimeError_(
            "building a runtime's launcher needs ingot's source tree (its Rust "
            "crates), which this installation does not have",
            hint="set INGOT_SOURCE_TREE to a checkout of ingot",
        )
    if not os.access(cargo_zigbuild, os.X_OK) or shutil.which("cargo") is None:
        raise RuntimeError_(
            "building a runtime's launcher needs cargo and cargo-zigbuild",
            hint="install Rust (rustup) and `pip install cargo-zigbuild`",
        )
    python = next(iter(sorted((prefix / "bin").glob("python3.*[0-9]"))))
    # Kept in the store between builds: relinking after a change of ingot is incremental.
    target_dir = store() / ".cargo-target" / stage.name
    run = builder.runner(stage.parent, prefix)
    rust_target = "x86_64-unknown-linux-gnu"

    def zigbuild(*package: str) -> None:
        """``cargo zigbuild --release`` of ``package`` for the runtime's glibc and Python."""
        run(
            [
                cargo_zigbuild,
                "zigbuild",
                "--release",
                "--quiet",
                *package,
                "--target",
                f"{rust_target}.{toolchain.glibc[0]}.{toolchain.glibc[1]}",
            ],
            cwd=tree,
            extra={
                "PYO3_PYTHON": str(python),
                "CARGO_TARGET_DIR": str(target_dir),
                "CARGO_ZIGBUILD_ZIG_PATH": str(toolchain.zig),
            },
        )

    zigbuild("-p", "ingot-launcher")
    version = python.name.removeprefix("python")
    destination = stage / "launcher" / f"ingot-launcher-{version}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(target_dir / rust_target / "release" / "ingot-launcher", destination)
    # ingot's own extension module for the runtime's interpreter: `ingot build --python` runs
    # ingot under it, whatever Python ingot itself was installed for.
    zigbuild("-p", "ingot-importer", "--lib", "--features", "extension-module")
    suffix = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.copy2(
        target_dir / rust_target / "release" / "libingot_importer.so",
        stage / "launcher" / f"_ingot{suffix}",
    )
    return destination


def rebuild_launcher(wanted: str, say: Callable[[str], None] = print) -> Runtime:
    """Builds the launcher and ingot's extension module of an existing runtime again, from this
    ingot's source tree (after a change of ingot; the interpreter and libraries stay)."""
    found = find_runtime(wanted)
    if found is None:
        raise RuntimeError_(
            f"no runtime {wanted} in {store()}",
            hint="`ingot runtime list` shows the runtimes there are",
        )
    toolchain = Toolchain(find_zig())
    work = Path(tempfile.mkdtemp(prefix=".relink-", dir=store()))
    try:
        builder = _Builder(toolchain, found.path / "build.log", say)
        staged = work / found.name
        staged.mkdir()
        launcher = build_launcher(staged, found.path / "python", toolchain, builder)
        floor = glibc_floor([(launcher.name, launcher.read_bytes())])
        if floor.version is not None and floor.version > toolchain.glibc:
            raise RuntimeError_(
                f"the launcher needs {floor}, above glibc {toolchain.glibc[0]}.{toolchain.glibc[1]}"
            )
        for built in (staged / "launcher").iterdir():
            os.replace(built, found.path / "launcher" / built.name)
        found.info["launcher"] = {
            "file": f"launcher/{launcher.name}",
            "glibc_floor": ".".join(map(str, floor.version)) if floor.version else None,
        }
        (found.path / "runtime.json").write_text(json.dumps(found.info, indent=2) + "\n")
        say(f"runtime {found.name}: launcher rebuilt ({floor})")
        return found
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_modules(
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


def _elf_images(prefix: Path) -> Iterable[tuple[str, bytes]]:
    for path in sorted(prefix.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as file:
                if file.read(4) != b"\x7fELF":
                    continue
            yield str(path.relative_to(prefix)), path.read_bytes()
