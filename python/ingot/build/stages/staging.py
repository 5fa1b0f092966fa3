"""The stage step of a build: the application's code copied and its dependencies installed by pip (wheels
only) into a staging directory, giving the import roots the later stages collect."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ingot.build.archive.buildcache import DEPS, NO_CACHE, BuildMemo, tree_digest
from ingot.build.resolve.confine import PROJECT_COPY_IGNORES, project_copy_ignore
from ingot.build.resolve.inputs import hash_checked
from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say, this_python
from ingot.build.stages import wheels
from ingot.errors import BuildError

__all__ = ["PROJECT_COPY_IGNORES", "read_wheels", "stage", "wheels_record"]


def _run_pip(
    spec: Spec,
    target: Path,
    args: list[str],
    platforms: tuple[str, ...],
    project: bool,
    report: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    pip = spec.target.pip_python or sys.executable
    platform: list[str] = []
    if platforms and not project:
        # For another Python (a runtime's, which has no pip): wheels for its version and for the
        # platforms it runs on, the first preferred. The project itself is built from its
        # directory.
        platform = ["--python-version", spec.target.python, "--implementation", "cp"]
        platform += ["--only-binary=:all:"]
        platform += [option for name in platforms for option in ("--platform", name)]
    command = [pip, "-m", "pip", "install", *platform, "--target", str(target), "--no-compile"]
    command += ["--disable-pip-version-check", "--no-input", "--quiet", *args]
    # pip runs in the environment resolution took (its variables and configuration are the
    # build cache's key of what it installs, ingot.build.stages.staging._deps_key).
    environment = dict(spec.environment.variables)
    if report is not None:
        # What pip installed, from which files (their sha256): the bill of materials' source.
        run = subprocess.run(
            [*command, "--report", str(report)], capture_output=True, text=True, env=environment
        )
        if run.returncode == 0 or "no such option: --report" not in run.stderr:
            return run  # (a pip older than 22.2 has no --report: installed without it)
    return subprocess.run(command, capture_output=True, text=True, env=environment)


def _no_wheel(run: subprocess.CompletedProcess[str]) -> bool:
    """Whether pip failed for want of a matching wheel (not a typo, a network error, ...)."""
    return "No matching distribution found" in run.stderr + run.stdout


def _pip(
    spec: Spec,
    target: Path,
    args: list[str],
    say: Say,
    what: str,
    project: bool = False,
    record: bool = False,
) -> list[str]:
    """Installs with pip into ``target``; returns the lines said of the wheels it took
    (:mod:`ingot.build.stages.wheels`), which a build from the cached install says again. With
    ``record``, the wheels it installed are written to :func:`wheels_record` of ``target``."""
    say(f"pip: installing {what}")
    scratch = target.parent / f".wheels-{target.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        said = _pip_into(spec, target, args, say, what, project, scratch)
        if record:
            _record_wheels(scratch / "report.json", wheels_record(target))
        return said
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _pip_into(
    spec: Spec, target: Path, args: list[str], say: Say, what: str, project: bool, scratch: Path
) -> list[str]:
    keep_floor = spec.plan.settings.platform_wheels == "keep-floor"
    locked = spec.locked is not None and not project
    report = scratch / "report.json"
    platforms = spec.target.platforms
    if locked:
        # (the lock's files were chosen among these: lockfile.target_tags)
        platforms += spec.target.newer_platforms
    run = _run_pip(spec, target, [*args, "--report", str(report)], platforms, project)
    # (a lock names its files: no wheel is traded for another)
    at_floor = not locked
    newer = spec.target.newer_platforms
    if run.returncode != 0 and newer and _no_wheel(run) and not keep_floor and spec.locked is None:
        # No wheel of what is asked runs on the runtime's glibc: the newest manylinux tags the
        # build machine's glibc allows are tried next; the check stage then names the files
        # that raise the executable's floor.
        say(f"pip: no wheel for glibc 2.17 among {what}: trying newer manylinux platforms")
        platforms = spec.target.platforms + newer
        run = _run_pip(spec, target, [*args, "--report", str(report)], platforms, project)
        at_floor = False
    if run.returncode != 0 and "DO NOT MATCH THE HASHES" in run.stderr + run.stdout:
        found = re.search(r"(?s)DO NOT MATCH THE HASHES.*", run.stderr + run.stdout)
        assert found is not None
        lock = spec.locked.path if spec.locked is not None else what
        raise BuildError(
            f"{lock}: a file pip downloaded does not have the hash the lock gives "
            f"(installing {what}):\n" + "\n".join(found[0].strip().splitlines()[-12:]),
            hint="the file or the lock was changed since it was locked: lock again (uv lock, "
            "pip lock) if the change is expected; else the file is not the one tested",
        )
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-12:])
        hint = (
            "is the requirement spelled right, and is there a wheel for this platform and "
            "Python? (dependencies are installed from wheels only: --only-binary :all:)"
        )
        if spec.target.platforms:  # a runtime's: say which
            hint = (
                f"is the requirement spelled right, and is there a wheel of it for CPython "
                f"{spec.target.python} on {spec.target.machine} (manylinux, "
                f"*_{spec.target.machine}.whl)? Dependencies are installed from wheels only"
            )
        if keep_floor and newer and _no_wheel(run):
            hint += (
                "; --platform-wheels keep-floor takes no wheel for a newer glibc than the "
                "floor's (the default, prefer, tries newer manylinux platforms)"
            )
        if project and re.search(
            r"setuptools[-_]scm|hatch-vcs|versioningit", run.stderr + run.stdout, re.I
        ):
            hint = (
                "the project's version seems to come from version control, and pip builds a "
                "copy of the project without .git: set the version for the build (e.g. "
                "SETUPTOOLS_SCM_PRETEND_VERSION=1.2.3)"
            )
        raise BuildError(
            f"pip could not install {what} (exit {run.returncode}):\n{tail}", hint=hint
        )
    if project or not at_floor:
        return []

    def run_pip(
        into: Path, more: list[str], platforms: tuple[str, ...]
    ) -> subprocess.CompletedProcess[str]:
        return _run_pip(spec, into, more, platforms, False)

    return wheels.settle_pure_picks(spec, target, report, scratch, run_pip, say)


def wheels_record(root: Path) -> Path:
    """Where the wheels pip installed into the import root ``root`` are recorded (beside it)."""
    return root.with_name(f"{root.name}.wheels.json")


def _record_wheels(report: Path, record: Path) -> None:
    """The wheels of pip's installation report ``report`` (``pip install --report``), written
    to ``record``: normalized name -> name, version, the file's URL and sha256. A pip without
    ``--report`` wrote none: no wheel is recorded."""
    wheels: dict[str, dict[str, str]] = {}
    try:
        installed = json.loads(report.read_text())["install"]
    except (OSError, ValueError, KeyError, TypeError):
        installed = []
    finally:
        report.unlink(missing_ok=True)
    for entry in installed:
        metadata = entry.get("metadata", {})
        download = entry.get("download_info", {})
        hashes = download.get("archive_info", {}).get("hashes", {})
        name = str(metadata.get("name", ""))
        wheels[_normalize(name)] = {
            "name": name,
            "version": str(metadata.get("version", "")),
            "url": str(download.get("url", "")),
            "sha256": str(hashes.get("sha256", "")),
        }
    record.write_text(json.dumps(wheels, indent=1, sort_keys=True) + "\n")


def read_wheels(roots: list[Path]) -> dict[str, dict[str, str]]:
    """The wheels recorded for the import roots ``roots`` (:func:`wheels_record`), by
    normalized distribution name; the first root's win."""
    wheels: dict[str, dict[str, str]] = {}
    for root in reversed(roots):
        try:
            wheels.update(json.loads(wheels_record(root).read_text()))
        except (OSError, ValueError):
            continue  # (not installed by pip, or by a pip without --report)
    return wheels


def _normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _copy_project(project: Path, destination: Path) -> Path:
    """A copy of the project directory ``project`` at ``destination``, without
    :data:`ingot.build.resolve.confine.PROJECT_COPY_IGNORES` and without virtual environments
    (directories with a ``pyvenv.cfg``), with the files' times."""
    try:
        shutil.copytree(project, destination, ignore=project_copy_ignore())
    except (OSError, shutil.Error) as error:
        raise BuildError(f"cannot copy the project {project} for pip to build: {error}") from error
    return destination


def stage(spec: Spec, staging: Path, say: Say, memo: BuildMemo = NO_CACHE) -> list[Path]:
    """Installs the application and its dependencies under ``staging``; returns the import
    roots to collect, the application's first."""
    app, deps = staging / "app", staging / "deps"
    app.mkdir()
    roots = [app]
    copied: dict[str, Path] = {}
    for name, path in spec.plan.copies:
        if name in copied:
            raise BuildError(
                f"{path} and {copied[name]} would both be {name!r} in the archive",
                hint="rename one, or leave one out",
            )
        copied[name] = path
        try:
            if path.is_dir():
                shutil.copytree(
                    path, app / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                )
            else:
                shutil.copyfile(path, app / name)
        except OSError as error:
            raise BuildError(f"cannot copy {path}: {error}") from error
    roots += spec.plan.roots
    if spec.plan.pip_project is not None:
        # pip builds a project directory in place, and setuptools leaves build/ and *.egg-info
        # there: pip gets a copy instead, so the user's project is left as it was.
        source = _copy_project(spec.plan.pip_project, staging / "project")
        what = f"the project {spec.plan.pip_project}"
        _pip(spec, app, ["--no-deps", str(source)], say, what, project=True)
        for direct_url in app.glob("*.dist-info/direct_url.json"):
            direct_url.unlink()  # the project's absolute path: the archive would depend on it
            record = direct_url.with_name("RECORD")
            if record.is_file():
                lines = record.read_bytes().splitlines(keepends=True)
                record.write_bytes(
                    b"".join(
                        line
                        for line in lines
                        if not line.startswith(
                            f"{direct_url.parent.name}/direct_url.json,".encode()
                        )
                    )
                )
    if spec.plan.requirements or spec.plan.requirement_files or spec.locked:
        roots.append(_dependencies(spec, deps, say, memo))
    return roots


def _dependencies(spec: Spec, deps: Path, say: Say, memo: BuildMemo) -> Path:
    """The directory pip installed the requirements into: ``deps``, or the build cache's
    directory of an earlier install for the same inputs (:func:`_deps_key`), checked first."""
    args = ["--only-binary", ":all:", *_no_deps(spec), *spec.plan.requirements]
    for path in spec.plan.requirement_files:
        args += ["-r", str(path)]
    if any(hash_checked(path) for path in spec.plan.requirement_files):
        # pip's hash-checking mode: every requirement pinned, with its hashes, checked
        args.append("--require-hashes")
        if "--no-deps" not in args and all(map(_all_hashed, spec.plan.requirement_files)):
            args.append("--no-deps")  # (a lock: nothing to resolve)
    what = ", ".join(
        [*spec.plan.requirements, *[f"-r {path}" for path in spec.plan.requirement_files]]
    )
    if spec.locked is not None:
        # The lock's files, exactly: from a requirements file of URLs and hashes, in pip's
        # hash-checking mode, without their dependencies (the lock has them).
        locked = deps.parent / "locked-requirements.txt"
        locked.write_text(spec.locked.requirements_text())
        args = ["--only-binary", ":all:", "--no-deps", "--require-hashes", "-r", str(locked)]
        count = len(spec.locked.files)
        what = f"the {count} file{'s' if count != 1 else ''} of {spec.locked.path}"
        if not spec.locked.files:
            deps.mkdir()
            return deps  # (a lock of no dependencies)
    key = _deps_key(spec, memo)
    if key is None or memo.root is None:
        deps.mkdir()
        _pip(spec, deps, args, say, what, record=True)
        return deps
    cached = memo.root / DEPS / key
    recorded = wheels_record(cached / "site").is_file()
    if cached.is_dir() and not spec.refresh and recorded:
        installed = _intact(cached)
        if installed is not None:
            os.utime(cached)  # used now: `ingot cache prune` goes by this time
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(installed))
            say(
                f"pip: {what} installed as on {when}, from the build cache "
                "(--refresh installs them again)"
            )
            for line in _said(cached):
                say(line)
            return cached / "site"
        say(f"build cache: the dependencies installed for {what} were damaged: installing again")
    elif cached.is_dir() and not spec.refresh:
        # (installed by an ingot that did not record the wheels: installed again, recorded)
        say(f"build cache: installing {what} again, to record the wheels they come from")
    partial = cached.with_name(f".tmp-{key}-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "site").mkdir(parents=True)
    try:
        said = _pip(spec, partial / "site", args, say, what, record=True)
        files = tree_digest(partial / "site")
        record = {"installed": time.time(), "files": files, "said": said}
        (partial / "files.json").write_text(json.dumps(record))
        if cached.exists():
            stale = cached.with_name(f".old-{key}-{os.getpid()}")
            os.rename(cached, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(partial, cached)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return cached / "site"


#: A requirement line of a requirements file pinned to one version and hashed.
_PINNED_HASHED = re.compile(r"^[A-Za-z0-9][\w.\[\], -]*===?[^;\s]+.*--hash[=\s]")


def _all_hashed(path: Path) -> bool:
    """Whether every requirement of the requirements file ``path`` is pinned (``==``) and
    hashed, so that pip has nothing to resolve (lines continued with ``\\`` joined)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    lines = [line.split(" #")[0].strip() for line in text.replace("\\\n", " ").splitlines()]
    requirements = [line for line in lines if line and not line.startswith(("#", "-"))]
    return bool(requirements) and all(map(_PINNED_HASHED.match, requirements))


def _no_deps(spec: Spec) -> list[str]:
    """``--no-deps`` when the requirements already pin every distribution needed, for the
    target's Python version (markers were evaluated by this Python): pip's resolution, which
    reads every version each index page lists, took a quarter of httpie's install."""
    return ["--no-deps"] if spec.plan.pinned and spec.target.python == this_python() else []


def _said(cached: Path) -> list[str]:
    """What the install of a cached one said of the wheels it took (:func:`_pip`)."""
    try:
        said = json.loads((cached / "files.json").read_text()).get("said", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [line for line in said if isinstance(line, str)] if isinstance(said, list) else []


def _intact(cached: Path) -> float | None:
    """When a cached install was made, if it holds exactly the files it held then (else None)."""
    try:
        recorded = json.loads((cached / "files.json").read_text())
        intact = recorded["files"] == tree_digest(cached / "site")
        return float(recorded["installed"]) if intact else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


#: Pip options in a requirements file that keep the install out of the build cache: they name
#: files or directories whose contents the key does not cover.
_UNCACHED_OPTIONS = re.compile(
    r"^\s*(-r|-c|-e|-f|--requirement|--constraint|--editable|--find-links)\b"
)
#: A requirement that is a path or URL rather than a name from an index.
_LOCAL_REQUIREMENT = re.compile(r"[/\\]|^\s*\.|@|://|\.(whl|zip|tar\.gz)\s*$")


def _deps_key(spec: Spec, memo: BuildMemo) -> str | None:
    """The build cache's key of the install of ``spec``'s requirements: the requirements and
    requirement files' text, the target Python and platforms, the pip that installs and its
    configuration. None (not cached) without the cache, or for requirements that are paths,
    URLs or options naming other files."""
    if memo.store is None:
        return None
    parts = [spec.target.python, *spec.target.platforms, "|", *spec.target.newer_platforms]
    parts += _no_deps(spec)
    parts.append(f"platform-wheels={spec.plan.settings.platform_wheels or 'prefer'}")
    parts.append(spec.target.pip_python or sys.executable)
    if spec.locked is not None:
        # The lock's content, and the files it chose for the target.
        parts += ["lock", spec.locked.digest, spec.locked.requirements_text()]
    for requirement in spec.plan.requirements:
        if _LOCAL_REQUIREMENT.search(requirement):
            return None
        parts.append(requirement)
    for path in spec.plan.requirement_files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return None  # (pip says what is wrong with it)
        for line in text.splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):
                requirement = line.split(";")[0].split("--hash")[0]
                if _UNCACHED_OPTIONS.match(line) or (
                    not line.startswith("-") and _LOCAL_REQUIREMENT.search(requirement)
                ):
                    return None
        parts.append(text)
    return memo.key("deps", *parts, *spec.environment.pip_configuration)
