"""The stage step of a build: the application's code copied and its dependencies installed by pip (wheels
only) into a staging directory, giving the import roots the later stages collect."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ingot.build.spec import Spec
from ingot.build.target import Say
from ingot.errors import BuildError

__all__ = ["PROJECT_COPY_IGNORES", "stage"]


def _run_pip(
    spec: Spec, target: Path, args: list[str], platforms: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    pip = spec.target.pip_python or sys.executable
    platform: list[str] = []
    if platforms and "--no-deps" not in args:
        # For another Python (a runtime's, which has no pip): wheels for its version and for the
        # platforms it runs on, the first preferred. The project itself (--no-deps) is built
        # from its directory.
        platform = ["--python-version", spec.target.python, "--implementation", "cp"]
        platform += ["--only-binary=:all:"]
        platform += [option for name in platforms for option in ("--platform", name)]
    command = [pip, "-m", "pip", "install", *platform, "--target", str(target), "--no-compile"]
    command += ["--disable-pip-version-check", "--no-input", "--quiet", *args]
    return subprocess.run(command, capture_output=True, text=True)


def _no_wheel(run: subprocess.CompletedProcess[str]) -> bool:
    """Whether pip failed for want of a matching wheel (not a typo, a network error, ...)."""
    return "No matching distribution found" in run.stderr + run.stdout


def _pip(spec: Spec, target: Path, args: list[str], say: Say, what: str) -> None:
    say(f"pip: installing {what}")
    run = _run_pip(spec, target, args, spec.target.platforms)
    if run.returncode != 0 and spec.target.newer_platforms and _no_wheel(run):
        # No wheel of what is asked runs on the runtime's glibc: the newest manylinux tags the
        # build machine's glibc allows are tried next; the check stage then names the files
        # that raise the executable's floor.
        say(f"pip: no wheel for glibc 2.17 among {what}: trying newer manylinux platforms")
        run = _run_pip(spec, target, args, spec.target.platforms + spec.target.newer_platforms)
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-12:])
        hint = (
            "is the requirement spelled right, and is there a wheel for this platform and "
            "Python? (dependencies are installed from wheels only: --only-binary :all:)"
        )
        if what.startswith("the project") and re.search(
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


#: What is left out of the copy of a project that pip builds: version control, build outputs,
#: virtual environments, caches (the usual .gitignore entries of a Python project).
PROJECT_COPY_IGNORES = (
    ".git",
    ".hg",
    ".svn",
    "build",
    "dist",
    ".venv*",
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    ".eggs",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
)


def _copy_project(project: Path, destination: Path) -> Path:
    """A copy of the project directory ``project`` at ``destination``, without
    :data:`PROJECT_COPY_IGNORES` and without virtual environments (directories with a
    ``pyvenv.cfg``), with the files' times."""
    skip = shutil.ignore_patterns(*PROJECT_COPY_IGNORES)

    def ignore(directory: str, names: list[str]) -> set[str]:
        return set(skip(directory, names)) | {
            name for name in names if os.path.isfile(os.path.join(directory, name, "pyvenv.cfg"))
        }

    try:
        shutil.copytree(project, destination, ignore=ignore)
    except (OSError, shutil.Error) as error:
        raise BuildError(f"cannot copy the project {project} for pip to build: {error}") from error
    return destination


def stage(spec: Spec, staging: Path, say: Say) -> list[Path]:
    """Installs the application and its dependencies under ``staging``; returns the import
    roots to collect, the application's first."""
    app, deps = staging / "app", staging / "deps"
    app.mkdir()
    roots = [app]
    copied: dict[str, Path] = {}
    for name, path in spec.copies:
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
    roots += spec.roots
    if spec.pip_project is not None:
        # pip builds a project directory in place, and setuptools leaves build/ and *.egg-info
        # there: pip gets a copy instead, so the user's project is left as it was.
        source = _copy_project(spec.pip_project, staging / "project")
        _pip(spec, app, ["--no-deps", str(source)], say, f"the project {spec.pip_project}")
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
    if spec.requirements or spec.requirement_files:
        deps.mkdir()
        args = ["--only-binary", ":all:", *spec.requirements]
        for path in spec.requirement_files:
            args += ["-r", str(path)]
        what = ", ".join([*spec.requirements, *[f"-r {path}" for path in spec.requirement_files]])
        _pip(spec, deps, args, say, what)
        roots.append(deps)
    return roots
