"""A project's lock file, read for the build's target: the exact files to install, each with its
hash, and nothing resolved.

A project directory's ``pylock.toml`` (PEP 751) comes first, then its ``uv.lock``, which
``uv export --format pylock.toml`` turns into a PEP 751 lock first (uv must be on ``PATH``).
PyPA's ``packaging`` (``packaging.pylock``, 26.1 or later; else pip's copy of it) validates the
lock and selects its packages for the target: markers evaluated for the target's Python, its
architecture and Linux, each package's wheel chosen among the tags the target takes (the
runtime's manylinux platforms, glibc 2.17 first; this Python's own tags for ``--python local``).
:func:`ingot.build.stages.staging.stage` installs the files with pip in hash-checking mode,
``--no-deps``. What cannot be installed so (a package with a source distribution only, a local
directory, a version control checkout) is an error that names the lock and the entry.

    from ingot.build.resolve.lockfile import find_lock, read_lock
    lock = find_lock(Path("app"))         # app/pylock.toml, else app/uv.lock, else None
    locked = read_lock(lock, Path("app"), spec.target, environment)
    locked.files[0].requirement()         # "six @ https://...whl --hash=sha256:..."
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingot.build.resolve.environment import Environment
from ingot.errors import BuildError
from ingot.toml import tomllib_for

if TYPE_CHECKING:
    from packaging import pylock as pylock_module
    from packaging.tags import Tag

    from ingot.build.resolve.target import Say, Target

__all__ = ["LOCK_NAMES", "Locked", "LockedFile", "find_lock", "read_lock"]

#: The lock files a project directory may hold, in the order they are honoured.
LOCK_NAMES = ("pylock.toml", "uv.lock")

#: The hashes pip checks (PEP 751 allows others; a file needs one of these).
PIP_HASHES = ("sha256", "sha384", "sha512")

#: What ``uv export`` is run with: the lock as it is (``--frozen``: nothing resolved, the lock
#: not updated), without the project itself (ingot installs it from its directory, without its
#: dependencies) and without dependency groups (``dev``: what the application needs, as pip
#: installing the project would).
UV_EXPORT = (
    "export",
    "--format",
    "pylock.toml",
    "--frozen",
    "--no-emit-project",
    "--no-default-groups",
    "--quiet",
)


@dataclass(frozen=True)
class LockedFile:
    """A file the lock selects for the target: a wheel, its location and hashes."""

    name: str
    version: str
    filename: str
    url: str  # https://..., or file:///... for a path the lock gives
    hashes: tuple[str, ...]  # "sha256:<hex>", ...

    def requirement(self) -> str:
        """The line of a requirements file that pip installs exactly this file from, its hash
        checked."""
        return f"{self.name} @ {self.url} " + " ".join(f"--hash={h}" for h in self.hashes)


@dataclass(frozen=True)
class Locked:
    """A lock read for a target: the files to install."""

    path: Path  # the lock file (pylock.toml, or uv.lock)
    digest: str  # the sha256 of its bytes
    files: tuple[LockedFile, ...] = ()

    def requirements_text(self) -> str:
        """The requirements file pip installs the files from (``--require-hashes``)."""
        return "".join(f"{file.requirement()}\n" for file in self.files)


def find_lock(root: Path) -> Path | None:
    """The lock file of the project directory ``root`` that a build honours
    (:data:`LOCK_NAMES`, the first there), or None."""
    for name in LOCK_NAMES:
        if (root / name).is_file():
            return root / name
    return None


def _packaging() -> Any:
    """``packaging`` (pip's copy when it is missing or older than 26.1, which added
    ``Pylock.select``), with its ``pylock``, ``markers``, ``tags`` and ``utils`` imported;
    BuildError when neither can select a lock's packages."""
    try:
        import packaging.markers
        import packaging.pylock
        import packaging.tags
        import packaging.utils

        if hasattr(packaging.pylock.Pylock, "select"):
            return packaging
    except ImportError:
        pass
    try:
        import pip._vendor.packaging.markers  # type: ignore[import-not-found, unused-ignore]
        import pip._vendor.packaging.pylock  # type: ignore[import-not-found, unused-ignore]
        import pip._vendor.packaging.tags  # type: ignore[import-not-found, unused-ignore]
        import pip._vendor.packaging.utils  # type: ignore[import-not-found, unused-ignore]

        vendored = pip._vendor.packaging
        if hasattr(vendored.pylock.Pylock, "select"):
            return vendored
    except ImportError:
        pass
    raise BuildError(
        f"reading a lock file takes packaging 26.1 or later, which {sys.executable} lacks",
        hint=f"{sys.executable} -m pip install 'packaging>=26.1'",
    )


def _python_full_version(target: Target) -> str:
    """The target's Python release: its runtime's (``cpython-3.11.7-...``), else this one's."""
    if target.runtime_release:
        return target.runtime_release
    here = "%d.%d.%d" % sys.version_info[:3]
    return here if here.startswith(target.python + ".") else target.python + ".0"


def target_environment(target: Target) -> dict[str, str]:
    """The marker environment (PEP 508) of the target: this Python's, with the target's Python
    release, architecture and Linux for a runtime's build."""
    environment: dict[str, str] = dict(_packaging().markers.default_environment())
    if target.runtime is None:
        return environment  # this Python is the target
    full = _python_full_version(target)
    environment.update(
        python_version=target.python,
        python_full_version=full,
        implementation_name="cpython",
        implementation_version=full,
        platform_python_implementation="CPython",
        platform_machine=target.machine,
        platform_system="Linux",
        sys_platform="linux",
        os_name="posix",
    )
    return environment


def target_tags(target: Target) -> list[Tag]:
    """The wheel tags the target takes, best first: for a runtime, CPython's of its version on
    its manylinux platforms (glibc 2.17 first, then the newer ones the build machine allows);
    else this Python's."""
    tags = _packaging().tags
    if target.runtime is None:
        return list(tags.sys_tags())
    version = tuple(int(part) for part in target.python.split("."))
    platforms = [*target.platforms, *target.newer_platforms]
    return [
        *tags.cpython_tags(version, platforms=platforms),
        *tags.compatible_tags(version, f"cp{version[0]}{version[1]}", platforms),
    ]


def _describe(target: Target, tags: list[Tag]) -> str:
    """The target's first tag, as a reader knows it: ``cp311-manylinux_2_17_x86_64``."""
    first = tags[0] if tags else None
    return f"{first.interpreter}-{first.platform}" if first else f"Python {target.python}"


def _export_uv(path: Path, environment: Environment) -> str:
    """The PEP 751 lock ``uv export`` writes of the uv.lock at ``path``."""
    uv = shutil.which("uv", path=environment.get("PATH"))
    if uv is None:
        raise BuildError(
            f"{path}: reading a uv.lock takes uv, which is not on PATH",
            hint="install it (pip install uv), or export the lock yourself: uv export "
            "--format pylock.toml --frozen --no-emit-project -o pylock.toml (a pylock.toml "
            "comes first)",
        )
    command = [uv, *UV_EXPORT]
    run = subprocess.run(
        command,
        cwd=path.parent,
        capture_output=True,
        text=True,
        env=dict(environment.variables),
    )
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-12:])
        raise BuildError(
            f"{path}: {' '.join(['uv', *UV_EXPORT])} failed (exit {run.returncode}):\n{tail}",
            hint="is uv.lock up to date with pyproject.toml? (uv lock updates it)",
        )
    return run.stdout


def read_lock(
    path: Path,
    root: Path,
    target: Target,
    environment: Environment,
    say: Say = lambda message: None,
    allow_outside: bool = False,
) -> Locked:
    """The files the lock at ``path`` (of the project directory ``root``) selects for
    ``target``; BuildError naming the lock and the entry that does not cover the target. A file
    the lock names by path stays inside ``root`` (unless ``allow_outside``:
    ``--allow-outside-project``)."""
    try:
        content = path.read_bytes()
    except OSError as error:
        raise BuildError(f"cannot read the lock file {path}: {error}") from error
    text = _export_uv(path, environment) if path.name == "uv.lock" else content.decode("utf-8")
    where = f"{path} (exported by uv)" if path.name == "uv.lock" else str(path)
    pylock = _packaging().pylock
    tomllib = tomllib_for(path)
    try:
        lock = pylock.Pylock.from_dict(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, pylock.PylockValidationError) as error:
        raise BuildError(
            f"{where}: not a valid PEP 751 lock: {error}",
            hint="write it again with its tool (pip lock, uv export --format pylock.toml)",
        ) from None
    full = _python_full_version(target)
    if lock.requires_python is not None and not lock.requires_python.contains(full, True):
        raise BuildError(
            f"{where}: the lock's requires-python {str(lock.requires_python)!r} does not cover "
            f"Python {full}, which the build is for",
            hint="lock for this Python, or build for one the lock covers: --python X.Y",
        )
    tags = target_tags(target)
    files: list[LockedFile] = []
    try:
        selected = list(lock.select(environment=target_environment(target), tags=tags))
    except pylock.PylockSelectError as error:
        raise _select_error(where, lock, target, tags, error) from None
    for package, chosen in selected:
        found = _file(where, path, root, target, tags, package, chosen, allow_outside)
        if found is not None:
            files.append(found)
    floor = set(target.platforms)
    for file in files:
        platforms = {
            tag.platform for tag in _packaging().utils.parse_wheel_filename(file.filename)[3]
        }
        if target.runtime is not None and not platforms & floor and "any" not in platforms:
            say(f"{path.name}: {file.filename} is not for glibc 2.17: it raises the floor")
    digest = hashlib.sha256(content)
    digest.update(text.encode())  # (uv's export, which its version may change)
    return Locked(path=path, digest=digest.hexdigest(), files=tuple(files))


def _wheels(package: Any) -> str:
    names = [wheel.filename for wheel in package.wheels or []]
    return ", ".join(names) if names else "none"


def _select_error(
    where: str, lock: Any, target: Target, tags: list[Tag], error: Exception
) -> BuildError:
    """The error of a selection that failed, naming the package entry when there is one."""
    entry = re.search(r"packages\[(\d+)\]", str(error))
    package = lock.packages[int(entry[1])] if entry else None
    if package is not None and "No wheel found" in str(error):
        return BuildError(
            f"{where}: package {package.name} {package.version} has no wheel for "
            f"{_describe(target, tags)} (its wheels: {_wheels(package)})",
            hint=_no_wheel_hint(target),
        )
    if package is not None and "Python version requirement" in str(error):
        return BuildError(
            f"{where}: package {package.name} {package.version}: its requires-python "
            f"{str(package.requires_python)!r} does not cover Python "
            f"{_python_full_version(target)}, which the build is for",
            hint="lock for this Python, or build for one the lock covers: --python X.Y",
        )
    if package is not None:
        return BuildError(f"{where}: package {package.name} {package.version}: {error}")
    return BuildError(
        f"{where}: the lock does not cover the target ({_describe(target, tags)}): {error}",
        hint="lock for this target (uv lock covers every platform; pip lock only its own), or "
        "build for one the lock covers",
    )


def _no_wheel_hint(target: Target) -> str:
    machine = f" on {target.machine}" if target.runtime else ""
    return (
        f"lock a version with a wheel for CPython {target.python}{machine} (manylinux: glibc "
        "2.17 or a newer one the build machine has); dependencies are installed from wheels only"
    )


def _file(
    where: str,
    path: Path,
    root: Path,
    target: Target,
    tags: list[Tag],
    package: pylock_module.Package,
    chosen: object,
    allow_outside: bool,
) -> LockedFile | None:
    """The file to install for the entry ``package`` (its ``chosen`` distribution); None for
    the project itself (a directory entry of ``root``, installed from there without its
    dependencies)."""
    pylock = _packaging().pylock
    name, version = str(package.name), str(package.version or "")
    entry = f"package {name}" + (f" {version}" if version else "")
    if isinstance(chosen, pylock.PackageDirectory):
        if (path.parent / chosen.path).resolve() == root.resolve():
            return None  # the project: installed from its directory
        raise BuildError(
            f"{where}: {entry} is the directory {chosen.path}, which has no hash to check",
            hint="build it into a wheel and lock that, or leave it out of the lock",
        )
    if isinstance(chosen, pylock.PackageVcs):
        raise BuildError(
            f"{where}: {entry} comes from {chosen.type} ({chosen.url or chosen.path}), which has "
            "no hash to check",
            hint="lock a release from an index, or a wheel built from that commit",
        )
    if isinstance(chosen, pylock.PackageSdist):
        raise BuildError(
            f"{where}: {entry} has no wheel for {_describe(target, tags)} (its wheels: "
            f"{_wheels(package)}; it has a source distribution, {chosen.filename}, which ingot "
            "does not build)",
            hint=_no_wheel_hint(target),
        )
    if isinstance(chosen, pylock.PackageArchive):
        filename = Path(chosen.path or chosen.url or "").name
        if not filename.endswith(".whl"):
            raise BuildError(
                f"{where}: {entry} is the archive {chosen.url or chosen.path}, not a wheel, "
                "which ingot does not build",
                hint="build it into a wheel and lock that",
            )
    else:
        filename = chosen.filename  # type: ignore[attr-defined]
    hashes = tuple(
        f"{algorithm}:{value}"
        for algorithm, value in sorted(chosen.hashes.items())  # type: ignore[attr-defined]
        if algorithm in PIP_HASHES
    )
    if not hashes:
        held = ", ".join(chosen.hashes) or "none"  # type: ignore[attr-defined]
        raise BuildError(
            f"{where}: {entry}: {filename} has no hash pip checks ({'/'.join(PIP_HASHES)}; "
            f"the lock has {held})",
            hint="lock it again with sha256 hashes",
        )
    url = chosen.url  # type: ignore[attr-defined]
    local = chosen.path  # type: ignore[attr-defined]
    if local is not None:
        file = (path.parent / local).resolve()
        if not allow_outside and not file.is_relative_to(root.resolve()):
            raise BuildError(
                f"{where}: {entry}: {local} leads out of the project {root} (to {file})",
                hint="a path from the project's own files stays inside its directory: pass "
                "--allow-outside-project if this project may read outside it",
            )
        url = file.as_uri()
    return LockedFile(name, version, filename, str(url), hashes)
