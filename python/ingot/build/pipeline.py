"""``ingot build``: an application, its dependencies and the standard library, cast into one
executable (the launcher binary followed by an archive) or, with ``archive_only``, an archive.

    from ingot.build.pipeline import BuildOptions, build
    result = build(BuildOptions(source="examples/hello", archive_only=True))

The application comes from a script, a package directory, a project directory (its
``pyproject.toml``, see :mod:`ingot.build.project`) or an installed console script, resolved by
:mod:`ingot.build.sources`. Dependencies are installed by pip (wheels only) into a staging directory;
:func:`ingot.pack.pack` collects them with the standard library and adds
``__ingot__/launch.json``, which tells the launcher what to run.

The archive holds no timestamps, temporary paths or the project's path (pip's
``direct_url.json`` is left out): the same inputs give the same bytes, wherever the project is
and whatever ``SOURCE_DATE_EPOCH`` says (pip still sees it, for wheels it builds).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingot._ingot import (
    LAUNCH_CONFIG,
    LAUNCH_CONFIG_VERSION,
    LAUNCHER_FACTS_FORMAT,
    LAUNCHER_FACTS_SECTION,
    TRAILER_MAGIC,
    elf_section,
)
from ingot.build.collect import DEFAULT_STDLIB_EXCLUDES, is_excluded
from ingot.build.project import Config
from ingot.build.sources import Plan, console_script_plan, plan_source
from ingot.errors import CompileError, IngotError

if TYPE_CHECKING:
    from ingot._ingot import IngotFinder
    from ingot.build.pack import PackResult
    from ingot.elf import GlibcFloor

#: A step's progress line goes to this.
Say = Callable[[str], None]
#: JSON as read: the launcher's facts, launch.json, ``describe``'s report.
Json = dict[str, Any]

__all__ = [
    "LAUNCH_CONFIG",
    "BuildError",
    "BuildOptions",
    "BuildResult",
    "build",
    "describe",
    "find_launcher",
    "launcher_facts",
]


class BuildError(IngotError):
    """The application cannot be built (no launcher, pip failed, unwritable output, ...)."""


@dataclass
class BuildOptions:
    """What ``ingot build`` was asked; None means "not given" (the project's settings apply)."""

    source: str | None = None  # a script, package directory or project directory
    console_script: str | None = None  # an installed console script instead of a source
    config: Config = field(default_factory=Config)  # command-line overrides of [tool.ingot]
    launcher: str | None = None
    archive_only: bool = False
    force: bool = False


@dataclass
class BuildResult:
    output: Path
    size: int
    pack: PackResult
    run: Json
    launcher: Path | None
    launcher_size: int
    seconds: float
    warnings: list[str] = field(default_factory=list)


def find_launcher(option: str | None = None) -> Path:
    """The launcher binary: ``option``, else ``$INGOT_LAUNCHER``, else ingot's own."""
    if option:
        origin, path = "--launcher", Path(option)
    elif os.environ.get("INGOT_LAUNCHER"):
        origin, path = "INGOT_LAUNCHER", Path(os.environ["INGOT_LAUNCHER"])
    else:
        version = "%d.%d" % sys.version_info[:2]
        origin, path = (
            "ingot's package",
            Path(__file__).resolve().parents[1] / "_launcher" / f"ingot-launcher-{version}",
        )
    if not path.is_file():
        raise BuildError(
            f"no launcher binary at {path} (from {origin})",
            hint="build it (cargo build --release -p ingot-launcher) and pass "
            "--launcher PATH or set INGOT_LAUNCHER; or use --archive-only",
        )
    return path


def _elf_section(path: Path, name: str) -> bytes | None:
    """The contents of the section ``name`` of the ELF file at ``path`` (None if it has none);
    BuildError if the file is not a whole ELF file."""
    try:
        return elf_section(str(path), name)
    except ValueError as error:
        raise BuildError(
            f"{path} is not an ingot launcher: {error}",
            hint="give the ingot-launcher binary (cargo build --release -p "
            "ingot-launcher), or the one ingot ships (no --launcher)",
        ) from error
    except OSError as error:
        raise BuildError(f"cannot read the launcher {path}: {error.strerror or error}") from error


def launcher_facts(path: Path) -> Json:
    """What the launcher at ``path`` carries in its ``.ingot.launcher`` ELF section, without
    running it: ``python`` ("3.11"), ``bytecode_magic`` (hex), ``ingot`` (version), ``format``,
    ``launch_config`` (the launch.json versions it reads), ``linkage``. BuildError when the file
    is not an ingot launcher (not ELF, truncated, no such section) or is too new for this ingot."""
    path = Path(path)
    data = _elf_section(path, LAUNCHER_FACTS_SECTION)
    if data is None:
        raise BuildError(
            f"{path} is not an ingot launcher: it has no {LAUNCHER_FACTS_SECTION} "
            "section (an ELF file, but not ingot-launcher, or one built before "
            "launchers carried it)",
            hint="give the ingot-launcher binary (cargo build --release -p "
            "ingot-launcher), or the one ingot ships (no --launcher)",
        )
    try:
        facts = json.loads(data.decode())
        if not isinstance(facts, dict) or not isinstance(facts.get("format"), int):
            raise ValueError("not an object with a format")
    except ValueError as error:
        raise BuildError(
            f"{path}: its {LAUNCHER_FACTS_SECTION} section is unreadable: {error}"
        ) from error
    if facts["format"] > LAUNCHER_FACTS_FORMAT:
        raise BuildError(
            f"{path} is a launcher of a newer ingot ({facts.get('ingot')}; facts "
            f"format {facts['format']})",
            hint="upgrade ingot, or use the launcher it ships",
        )
    for key in ("python", "bytecode_magic", "ingot", "launch_config"):
        if key not in facts:
            raise BuildError(f"{path}: its {LAUNCHER_FACTS_SECTION} section has no {key!r}")
    return facts


def launcher_python(path: Path) -> str | None:
    """The Python version ("3.11") the launcher at ``path`` embeds (from :func:`launcher_facts`);
    None when it is not an ingot launcher."""
    try:
        python: str = launcher_facts(path)["python"]
        return python
    except BuildError:
        return None


def _check_launcher(path: Path) -> Json:
    """The launcher's facts, checked against this Python and this ingot's launch.json."""
    import importlib.util

    facts = launcher_facts(path)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    embedded, magic = facts["python"], importlib.util.MAGIC_NUMBER.hex()
    if embedded != here:
        raise BuildError(
            f"the launcher {path} embeds Python {embedded}, but this is Python "
            f"{here}: the archive's bytecode and extension modules would not match",
            hint=f"run ingot with Python {embedded} (python{embedded} -m ingot "
            "build ...), or give a launcher built for Python " + here,
        )
    if facts["bytecode_magic"] != magic:
        raise BuildError(
            f"the launcher {path} embeds a Python {here} with bytecode magic "
            f"{facts['bytecode_magic']}, but this one's is {magic}",
            hint="give a launcher built for this interpreter",
        )
    if LAUNCH_CONFIG_VERSION not in facts["launch_config"]:
        raise BuildError(
            f"the launcher {path} (ingot {facts['ingot']}) reads launch "
            f"configuration versions {facts['launch_config']}, not "
            f"{LAUNCH_CONFIG_VERSION}",
            hint="use the launcher this ingot ships",
        )
    return facts


def is_ingot_file(path: Path) -> bool:
    """Whether ``path`` ends with an ingot archive trailer (an earlier ingot output)."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            if file.tell() < 16:
                return False
            file.seek(-8, os.SEEK_END)
            return file.read(8) == TRAILER_MAGIC
    except OSError:
        return False


def _check_function(archive: Path, module: str, function: str) -> None:
    """BuildError if the entry function is surely not defined by its module: no top-level
    binding of its first name (def, class, assignment, import) in the module's source. A module
    with ``from ... import *`` or a module ``__getattr__``, or without source, is trusted."""
    import ast

    from ingot._ingot import IngotFinder

    try:
        source = IngotFinder(str(archive)).get_source(module)
        tree = ast.parse(source) if source is not None else None
    except (ImportError, SyntaxError, ValueError):
        return
    if tree is None:
        return
    first = function.split(".")[0]
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return
                bound.add(alias.asname or alias.name.split(".")[0])
    if first in bound or "__getattr__" in bound:
        return
    candidates = sorted(
        name for name in bound if not name.startswith("_") and isinstance(name, str)
    )[:8]
    raise BuildError(
        f"the entry point {module}:{function} names no function of {module}: "
        f"{module} defines no {first!r}",
        hint="check the function's name"
        + (f" ({module} defines {', '.join(candidates)})" if candidates else ""),
    )


def _compile_error(error: CompileError, app: Path, plan: Plan) -> BuildError:
    """The SyntaxError of the application's module, shown as Python shows it, at the user's
    file (the build compiles a staged copy)."""
    import traceback

    staged = Path(error.path)
    shown = staged
    for name, source in plan.copies:
        copy = app / name
        if staged == copy:
            shown = source
        elif source.is_dir() and staged.is_relative_to(copy):
            shown = source / staged.relative_to(copy)
    if shown == staged and staged.is_relative_to(app):
        where = f" (from the project {plan.pip_project})" if plan.pip_project else ""
        shown = Path(f"{staged.relative_to(app)}{where}")
    syntax = error.error
    syntax.filename = str(shown)
    text = "".join(traceback.format_exception_only(type(syntax), syntax)).rstrip("\n")
    return BuildError(
        f"{error.name} does not compile:\n{text}",
        hint=f"fix it, or leave it out with --exclude {error.name}",
    )


def _check_not_an_input(output: Path, plan: Plan) -> None:
    """The output must be none of the build's inputs, nor inside what the build packs: a copied
    directory, or a package directory of a project or a directory of packages (the next build
    would pack this one's output)."""
    target = output.resolve()
    inputs = [
        *(path for _, path in plan.copies),
        *plan.roots,
        *plan.requirement_files,
        *([plan.pip_project] if plan.pip_project is not None else []),
    ]
    for given in inputs:
        source = given.resolve()
        if target == source:
            raise BuildError(
                f"the output {output} is an input of the build ({given}): it would be overwritten",
                hint="choose another -o/--output",
            )
        if not (source.is_dir() and target.is_relative_to(source)):
            continue
        copied = any(given == path for _, path in plan.copies)
        package = next(
            (
                parent
                for parent in target.parents
                if parent.is_relative_to(source)
                and parent != source
                and (parent / "__init__.py").is_file()
            ),
            None,
        )
        if copied or package is not None:
            inside = source if copied else package
            raise BuildError(
                f"the output {output} is inside {inside}, which the build packs: "
                "the next build would pack this one's output too",
                hint="write it elsewhere, e.g. -o dist/NAME outside the package",
            )


def _check_output(output: Path, force: bool) -> None:
    if output.is_dir():
        raise BuildError(
            f"cannot write {output}: it is a directory", hint="give a file name with -o/--output"
        )
    if output.exists() and not force and not is_ingot_file(output):
        raise BuildError(
            f"{output} exists and is not an ingot output; not overwriting it",
            hint="choose another -o/--output, or pass --force",
        )
    if not output.parent.is_dir():
        raise BuildError(
            f"cannot write {output}: directory {output.parent} does not exist",
            hint=f"create it first (mkdir -p {output.parent})",
        )


#: Platforms whose wheels a build for a runtime (glibc 2.17) takes.
_RUNTIME_PLATFORMS = (
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
)


def _pip(target: Path, args: list[str], say: Callable[[str], None], what: str) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--target",
        str(target),
        "--no-compile",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        *args,
    ]
    if os.environ.get("INGOT_IN_RUNTIME") and os.environ.get("INGOT_PIP_PYTHON"):
        # Under a runtime (which has no pip): the outer Python's pip, for this version and for
        # the platforms a glibc 2.17 system runs.
        # The project itself (--no-deps) is built from its directory as usual.
        version = "%d.%d" % sys.version_info[:2]
        command[0] = os.environ["INGOT_PIP_PYTHON"]
        if "--no-deps" not in args:
            command[4:4] = [
                "--python-version",
                version,
                "--implementation",
                "cp",
                "--only-binary=:all:",
                *[option for platform in _RUNTIME_PLATFORMS for option in ("--platform", platform)],
            ]
    say(f"pip: installing {what}")
    run = subprocess.run(command, capture_output=True, text=True)
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


def _compression(level: int | bool | None) -> int | None:
    """The zstd level of a build (None: stored as is)."""
    from ingot.build.project import DEFAULT_COMPRESSION

    if level is None:
        return DEFAULT_COMPRESSION
    return None if level is False else int(level)


def _stdlib_excludes(config: Config) -> tuple[str, ...]:
    """The default stdlib exclusions minus those an ``include`` pattern names, plus ``exclude``."""
    kept = [
        pattern
        for pattern in DEFAULT_STDLIB_EXCLUDES
        if not any(is_excluded(include, (pattern,)) for include in config.include)
    ]
    return (*kept, *config.exclude)


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


def _stage(plan: Plan, staging: Path, say: Say) -> list[Path]:
    """Installs the application and its dependencies under ``staging``; returns the import
    roots to collect, the application's first."""
    app, deps = staging / "app", staging / "deps"
    app.mkdir()
    roots = [app]
    copied: dict[str, Path] = {}
    for name, path in plan.copies:
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
    roots += plan.roots
    if plan.pip_project is not None:
        # pip builds a project directory in place, and setuptools leaves build/ and *.egg-info
        # there: pip gets a copy instead, so the user's project is left as it was.
        source = _copy_project(plan.pip_project, staging / "project")
        _pip(app, ["--no-deps", str(source)], say, f"the project {plan.pip_project}")
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
    if plan.requirements or plan.requirement_files:
        deps.mkdir()
        args = ["--only-binary", ":all:", *plan.requirements]
        for path in plan.requirement_files:
            args += ["-r", str(path)]
        what = ", ".join(plan.requirements + [f"-r {path}" for path in plan.requirement_files])
        _pip(deps, args, say, what)
        roots.append(deps)
    return roots


def _write(output: Path, parts: list[bytes], mode: int) -> int:
    """Writes the concatenation of ``parts`` to ``output`` atomically (temp file + rename)."""
    fd, temp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            for part in parts:
                file.write(part)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, mode)
        os.replace(temp, output)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return sum(map(len, parts))


def _file_policy(
    config: Config, roots: list[Path], say: Say, *, executable: bool
) -> tuple[list[str], list[str]]:
    """The ``files`` packages of a build (configured + the built-in table), and warnings for code
    of the other collected packages that hands paths built from ``__file__`` to what needs real
    files: in an executable, what the launcher cannot answer from the archive (writing, C code,
    other processes); in an archive run by python, any file access."""
    from ingot.build.policy import resolve_policy, top_level_names

    present: dict[str, Path] = {}
    for root in roots:
        for name in sorted(top_level_names(root)):
            present.setdefault(name, root)
    decision = resolve_policy(
        present, files=config.files, memory=config.memory, executable=executable
    )
    for name in sorted(decision.files):
        say(f"files policy: {name} ({decision.reasons[name]})")
    warnings: list[str] = []
    try:
        from ingot.build import filescan
    except ImportError:  # pragma: no cover - the scanner ships with ingot
        return sorted(decision.files), warnings
    by_root: dict[Path, list[str]] = {}
    for name, root in present.items():
        if name not in decision.files:
            by_root.setdefault(root, []).append(name)
    findings = [
        finding
        for root, names in sorted(by_root.items())
        for finding in filescan.scan_tree(root, sorted(names))
        if not _in_tests(finding.path)
    ]
    answered = filescan.SERVED_FROM_ARCHIVE if executable else frozenset()
    served = sorted({finding.package for finding in findings if finding.call in answered})
    if served:
        say("reads files next to its modules, answered from the executable: " + ", ".join(served))
    by_package: dict[str, list[filescan.Finding]] = {}
    for finding in findings:
        if finding.call not in answered:
            by_package.setdefault(finding.package, []).append(finding)
    for package, found in sorted(by_package.items()):
        shown = found[:3]
        warnings += [
            filescan.format_finding(finding).removeprefix("warning: ") for finding in shown
        ]
        if len(found) > len(shown):
            warnings.append(f"{package}: {len(found) - len(shown)} more such uses of __file__")
    return sorted(decision.files), warnings


def _missing_imports(roots: list[Path]) -> list[str]:
    """Warnings for the modules the application's own code (``roots[0]``) imports at module
    level, unconditionally, that neither the build nor the standard library has: the executable
    would stop at that import. (Imports in ``try`` blocks or functions may be optional.)"""
    import ast

    from ingot.build.policy import top_level_names

    present = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    for root in roots:
        present |= top_level_names(root)
    app = roots[0]
    missing: dict[str, str] = {}
    for file in sorted(app.rglob("*.py")):
        relative = file.relative_to(app)
        try:
            tree = ast.parse(file.read_bytes(), str(file))
        except (OSError, SyntaxError, ValueError):
            continue
        names = [
            alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
        ]
        names += [
            node.module
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        ]
        for name in names:
            top = name.split(".")[0]
            if top not in present and top != "__future__":
                missing.setdefault(top, relative.as_posix())
    return [
        f"{where} imports `{name}`, which the build does not carry: the executable will stop "
        f"there with ModuleNotFoundError (hint: add the distribution that provides it to the "
        f"dependencies: a script's `# /// script` block, [project] dependencies, or "
        f"--dependency)"
        for name, where in sorted(missing.items())
    ]


def _in_tests(path: str) -> bool:
    """Whether a package's file is part of its test suite (``pkg/tests/...``), which an
    application does not import."""
    return any(part in ("tests", "test", "testing") for part in path.split("/")[1:-1])


def _prepare(files_packages: list[str], roots: list[Path], say: Say) -> list[str]:
    """Runs the built-in preparations (:data:`ingot.policy.PREPARATIONS`) of the ``files``
    packages in their staged directories; returns warnings for those that failed (the package
    still works, as it would without the files the step makes)."""
    from ingot.build.policy import PREPARATIONS

    warnings = []
    for package in files_packages:
        preparation = PREPARATIONS.get(package)
        root = next((root for root in roots if (root / package).is_dir()), None)
        if preparation is None or root is None:
            continue
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
        env["PYTHONHASHSEED"] = "0"
        try:
            done = subprocess.run(
                [sys.executable, "-S", "-s", "-c", preparation.code, str(root)],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            failure = (
                None
                if done.returncode == 0
                else (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            failure = str(error)
        if failure is None:
            say(f"prepared {package}: {preparation.why}")
        else:
            warnings.append(
                f"{package}: the build-time preparation failed ({failure}); "
                f"without it, {preparation.why}"
            )
    return warnings


def build(options: BuildOptions, progress: Callable[[str], None] | None = None) -> BuildResult:
    """Builds what ``options`` describe; raises IngotError subclasses on problems to fix."""
    from ingot.build.pack import PackOptions, pack

    started = time.perf_counter()
    say = progress or (lambda message: None)
    if options.console_script:
        plan = console_script_plan(options.console_script, options)
    else:
        plan = plan_source(options)
    for note in plan.notes:
        say(note)
    config = plan.config
    output = plan.output
    if output.parent == Path("dist") and not output.parent.exists() and plan.default_output:
        output.parent.mkdir()
    _check_not_an_input(output, plan)
    _check_output(output, options.force)
    launcher = None if options.archive_only else find_launcher(options.launcher)
    if launcher is not None:
        _check_launcher(launcher)
    launch = {"version": LAUNCH_CONFIG_VERSION, "run": plan.run}
    if os.environ.get("INGOT_IN_RUNTIME"):
        # Which runtime the executable carries (the launcher ignores the key; ingot inspect shows
        # it).
        launch["runtime"] = os.environ["INGOT_IN_RUNTIME"]
    if config.fast_exit is not None:
        launch["fast_exit"] = config.fast_exit
    if config.filesystem_imports is False:
        launch["filesystem_imports"] = False  # sealed: the archive alone
    launch_json = (json.dumps(launch, indent=2, sort_keys=True) + "\n").encode()
    head = launcher.read_bytes() if launcher else b""
    with tempfile.TemporaryDirectory(prefix="ingot-build-") as staging_name:
        staging = Path(staging_name)
        roots = _stage(plan, staging, say)
        files_packages, policy_warnings = _file_policy(
            config, roots, say, executable=launcher is not None
        )
        policy_warnings += _missing_imports(roots)
        policy_warnings += _prepare(files_packages, roots, say)
        try:
            pack_options = PackOptions(
                directories=roots,
                stdlib_exclude=_stdlib_excludes(config),
                exclude=tuple(config.exclude),
                optimize_levels=tuple(config.optimize or (0,)),
                compression_level=_compression(config.compress),
                extra_files={LAUNCH_CONFIG: launch_json},
                files_packages=files_packages,
                precompile_regexes=config.precompile_regexes is not False,
                entry_modules=[plan.run["module"]],
                strict_directories=roots[:1],
                prune=True,
                keep=tuple(config.include),
                progress=say,
            )
            result = pack(staging / "app.ingot", pack_options)
        except CompileError as error:
            raise _compile_error(error, staging / "app", plan) from None
        result.warnings[:0] = policy_warnings
        module = plan.run["module"]
        runnable = ("module", "package", "extension-module", "extension-package")
        if not any(name == module for kind in runnable for name in result.names(kind)):
            raise BuildError(
                f"the module to run, {module!r}, is not in the archive",
                hint="check the entry point's module name (and that it is not "
                "left out by an exclude pattern)",
            )
        if plan.run["kind"] == "function":
            _check_function(staging / "app.ingot", module, plan.run["function"])
        archive = (staging / "app.ingot").read_bytes()
    say(f"writing {output}" + (f" (launcher {launcher}, {len(head)} bytes)" if launcher else ""))
    size = _write(output, [head, archive], 0o644 if options.archive_only else 0o755)
    return BuildResult(
        output,
        size,
        result,
        plan.run,
        launcher,
        len(head),
        time.perf_counter() - started,
        list(result.warnings),
    )


def executable_glibc_floor(
    path: Path, finder: IngotFinder | None = None, launcher_size: int | None = None
) -> GlibcFloor:
    """The oldest glibc the executable (or archive) at ``path`` runs on: the newest ``GLIBC_x.y``
    its launcher or any extension module or shared library in its archive needs, and which one
    (an ``ingot.elf.GlibcFloor``)."""
    import ingot
    from ingot.elf import GlibcFloor, glibc_floor

    finder = finder or ingot.IngotFinder(str(path), any_python=True)
    if launcher_size is None:
        with open(path, "rb") as file:
            file.seek(-16, os.SEEK_END)
            launcher_size = path.stat().st_size - int.from_bytes(file.read(8), "little")
    images = []
    if launcher_size > 0:
        with open(path, "rb") as file:
            images.append(("the launcher", file.read(launcher_size)))
    floor = glibc_floor(images)
    try:
        native = finder._version_needs()
    except (ValueError, OSError, ImportError) as error:
        raise BuildError(
            f"cannot read the native code in {path}: {error}",
            hint="the archive may be damaged: rebuild it",
        ) from error
    for _kind, name, needs in native:
        versions = [
            tuple(int(part) for part in version[6:].split(".")[:2])
            for _library, version in needs
            if version.startswith("GLIBC_") and version[6:7].isdigit()
        ]
        needed = max(versions) if versions else None
        floor.each[name] = needed  # type: ignore[assignment]
        if needed is not None and (floor.version is None or needed > floor.version):
            floor = GlibcFloor(needed, name, floor.each)  # type: ignore[arg-type]
    return floor


def describe(path: str | os.PathLike[str]) -> Json:
    """What the executable or archive at ``path`` carries: entries, launch config, Python."""
    import ingot

    path = Path(path)
    try:
        finder = ingot.IngotFinder(str(path), any_python=True)
        entries = finder._entry_sizes()
    except (OSError, ImportError, ValueError) as error:
        raise BuildError(
            f"cannot read {path}: {error}",
            hint="give an executable made by `ingot build` or an archive",
        ) from error
    with open(path, "rb") as file:
        file.seek(-16, os.SEEK_END)
        archive_size = int.from_bytes(file.read(8), "little")
        file.seek(-archive_size, os.SEEK_END)
        header = file.read(96)
    try:
        launch = json.loads(finder._read(LAUNCH_CONFIG))
    except (OSError, ImportError, ValueError, KeyError):
        launch = None
    floor = executable_glibc_floor(path, finder, path.stat().st_size - archive_size)
    return {
        "path": str(path),
        "size": path.stat().st_size,
        "archive_size": archive_size,
        "launcher_size": path.stat().st_size - archive_size,
        "python": f"{header[76]}.{header[77]}",
        "launch": launch,
        "glibc_floor": {
            "version": ".".join(map(str, floor.version)) if floor.version else None,
            "set_by": floor.needed_by,
        },
        "files_packages": finder._files_packages(),
        "entries": [
            {"kind": kind, "name": name, "size": size, "stored": stored}
            for kind, name, size, stored in entries
        ],
    }
