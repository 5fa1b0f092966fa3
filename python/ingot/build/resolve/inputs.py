"""What to build: a source (a project, a package directory, a script, an installed console
script) and the options of ``ingot build``, resolved into a :class:`Plan`: what to run, what to
copy or pip-install, where to write. Nothing is installed or written here;
:func:`ingot.build.resolve.spec.resolve` freezes the plan, with its target, into the build's spec.

    from ingot.build.resolve.settings import Request
    from ingot.build.resolve.inputs import plan_source
    plan = plan_source(Request(source="examples/hello"))
    plan.run   # {"kind": "function", "module": "hello", "function": "main"}
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ingot.build.analysis.firstuse import imports_in_source
from ingot.build.resolve.confine import Bounds, project_copy_ignore
from ingot.build.resolve.launcher import is_ingot_file
from ingot.build.resolve.lockfile import LOCK_NAMES, find_lock
from ingot.build.resolve.project import load_project
from ingot.build.resolve.settings import (
    ConfigError,
    Request,
    Settings,
    is_str_list,
    merge,
    parse_entry,
)
from ingot.toml import tomllib_for

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    from packaging.requirements import Requirement

__all__ = [
    "Plan",
    "console_script_plan",
    "finish",
    "inline_dependencies",
    "installed_requirements",
    "plan_source",
]

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_INLINE = re.compile(r"(?m)^# /// script$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


@dataclass(frozen=True)
class Plan:
    """A build's input, resolved: what to run, what to copy or pip-install, where to write."""

    name: str
    run: dict[str, str]  # launch.json "run": kind, module (, function)
    settings: Settings  # the settings in effect (project's, overridden by options)
    output: Path
    default_output: bool = False
    copies: tuple[tuple[str, Path], ...] = ()  # (name in the app's root, source)
    roots: tuple[Path, ...] = ()  # directories of packages, collected as they are
    pip_project: Path | None = None  # pip install --no-deps this directory
    requirements: tuple[str, ...] = ()
    requirement_files: tuple[Path, ...] = ()
    #: The requirements pin every distribution needed, as this Python resolved them (a console
    #: script's, from the running environment): pip installs them without resolving again.
    pinned: bool = False
    notes: tuple[str, ...] = ()  # what the build should tell the user
    #: The Python versions the application says it runs on (PEP 723's or [project]'s
    #: ``requires-python``), and where it says so.
    requires_python: tuple[str, str] | None = None
    #: The project's lock file (:mod:`ingot.build.resolve.lockfile`), which gives the
    #: dependencies instead of ``requirements`` and ``requirement_files``.
    lock: Path | None = None


@dataclass
class _Draft:
    """A :class:`Plan` being made: the fields filled in as the source is read."""

    name: str
    run: dict[str, str]
    settings: Settings
    output: Path
    default_output: bool = False
    copies: list[tuple[str, Path]] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)
    pip_project: Path | None = None
    requirements: list[str] = field(default_factory=list)
    requirement_files: list[Path] = field(default_factory=list)
    pinned: bool = False
    notes: list[str] = field(default_factory=list)
    requires_python: tuple[str, str] | None = None
    lock: Path | None = None
    #: ``requirements`` are the project's ``[project].dependencies``, which a requirements
    #: file with hashes replaces (:func:`finish`).
    declared: bool = False
    #: Where its inputs may be (:mod:`ingot.build.resolve.confine`); None: what the command
    #: line gave.
    bounds: Bounds | None = None


def _absolute(settings: Settings, bounds: Bounds, where: str, overrides: Settings) -> Settings:
    """``settings``, a project's, with its paths made relative to the project's directory, each
    checked to stay inside it (:mod:`ingot.build.resolve.confine`); those the command line
    replaces are left as they are."""
    replaced = {key for key in ("script", "requirements", "output") if getattr(overrides, key)}
    if _chosen(overrides):
        replaced.add("script")
    paths: dict[str, object] = {
        key: str(
            bounds.project_path(
                getattr(settings, key), f"{where}: [tool.ingot] {key}", output=key == "output"
            )
        )
        for key in ("script", "requirements", "output")
        if getattr(settings, key) is not None and key not in replaced
    }
    if settings.packages is not None and not overrides.packages:
        paths["packages"] = [
            str(bounds.project_path(path, f"{where}: [tool.ingot] packages"))
            for path in settings.packages
        ]
    return dataclasses.replace(settings, **paths)  # type: ignore[arg-type]


def inline_metadata(script: Path) -> dict[str, object]:
    """A script's inline metadata (PEP 723 ``# /// script`` block), parsed; empty without one.
    ConfigError for a block that is never closed or is not TOML."""
    text = script.read_text(encoding="utf-8", errors="replace")
    block = _INLINE.search(text)
    if not block:
        opened = re.search(r"(?m)^# /// script[ \t]*$", text)
        if opened:
            line = text.count("\n", 0, opened.start()) + 1
            raise ConfigError(
                f"{script}:{line}: the '# /// script' block is never closed",
                hint="end it with a line '# ///' (PEP 723), every line between starting with '#'",
            )
        return {}
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in block.group("content").splitlines(keepends=True)
    )
    tomllib = tomllib_for(script)
    try:
        table: dict[str, object] = tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"{script}: the '# /// script' block is not valid TOML: {error}"
        ) from error
    return table


def inline_dependencies(script: Path) -> list[str]:
    """The ``dependencies`` of a script's inline metadata (PEP 723 ``# /// script`` block)."""
    dependencies = inline_metadata(script).get("dependencies", [])
    if not is_str_list(dependencies):
        raise ConfigError(f"{script}: '# /// script' dependencies must be a list of strings")
    return dependencies


def _script_requires_python(script: Path) -> str | None:
    value = inline_metadata(script).get("requires-python")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{script}: '# /// script' requires-python must be a string")
    return value


def _run(config: Settings, where: str, script_module: str | None = None) -> dict[str, str] | None:
    if config.entry is not None:
        module, function = parse_entry(config.entry, where)
        return {"kind": "function", "module": module, "function": function}
    if config.module is not None:
        if not _MODULE.fullmatch(config.module):
            raise ConfigError(f"{where}: {config.module!r} is not a module name")
        return {"kind": "module", "module": config.module}
    if script_module is not None:
        return {"kind": "module", "module": script_module}
    return None


def _script_module(path: Path) -> str:
    if not path.is_file():
        raise ConfigError(f"script {path} does not exist")
    name = re.sub(r"\W", "_", path.stem)
    name = f"_{name}" if name[:1].isdigit() else name
    if name in sys.stdlib_module_names:
        raise ConfigError(
            f"script {path} would be module {name!r}, which the standard library has",
            hint="rename the script",
        )
    return name


def beside_script(script: Path) -> list[tuple[str, Path]]:
    """The application's own code beside a script, as python would import it from the script's
    directory: every regular package there (a directory with ``__init__.py``; Django names its
    project and apps in strings, not imports), and the modules and namespace packages that the
    script or that code imports. Names the standard library has are left alone. And the data
    directories beside it (see :func:`_data_directory`) that this code names, in a string
    (``"templates/mail.txt"``, ``Path(__file__).parent / "data"``) or by a convention of a
    package it imports (:data:`CONVENTIONAL_DATA`), which the executable serves at the paths the
    script builds from its ``__file__``: not every directory beside it (a folder of scripts
    built into ``out/`` does not pack the earlier executables)."""
    directory = script.resolve().parent
    found: dict[str, Path] = {}
    for entry in sorted(directory.iterdir()):
        if (
            entry.is_dir()
            and (entry / "__init__.py").is_file()
            and entry.name.isidentifier()
            and entry.name not in sys.stdlib_module_names
        ):
            found[entry.name] = entry
    queue = [
        script.resolve(),
        *(file for package in found.values() for file in sorted(package.rglob("*.py"))),
    ]
    scanned: set[Path] = set()
    named: set[str] = set()  # path components in the code's strings, and its imports' names
    while queue:
        file = queue.pop()
        if file in scanned:
            continue
        scanned.add(file)
        try:
            source = file.read_bytes()
        except OSError:
            continue
        named |= _names_in_strings(source)
        module = (
            ".".join(file.relative_to(directory).with_suffix("").parts)
            if file.is_relative_to(directory)
            else file.stem
        )
        imports = imports_in_source(source, module, file.name == "__init__.py")
        tops = {imported.split(".")[0] for names in imports.values() for imported in names}
        named |= {directory for top in tops for directory in CONVENTIONAL_DATA.get(top, ())}
        for name in tops:
            if name in found or name in sys.stdlib_module_names or not name.isidentifier():
                continue
            module_file, package = directory / f"{name}.py", directory / name
            if module_file.is_file() and module_file != script.resolve():
                found[name] = module_file
                queue.append(module_file)
            elif package.is_dir() and any(package.rglob("*.py")):  # a namespace package
                found[name] = package
                queue += sorted(package.rglob("*.py"))
    data = {
        entry.name: entry
        for entry in sorted(directory.iterdir())
        if entry.name in named and (_data_directory(entry) or _data_file(entry, script))
    }
    found.update((name, path) for name, path in data.items() if name not in found)
    return [
        (name + (".py" if path.is_file() and path.suffix == ".py" else ""), path)
        for name, path in sorted(found.items())
    ]


#: Data directories a package's conventions name without the code naming them: Flask looks for
#: ``templates/`` and ``static/`` beside the application's module.
CONVENTIONAL_DATA = {"flask": ("templates", "static")}


def _names_in_strings(source: bytes) -> set[str]:
    """The path components of the string constants in ``source`` (``"templates/mail.txt"``,
    ``Path(__file__).parent / "data"``): the directories beside a script its code may name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {
        part
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 512
        for part in re.split(r"[/\\]", node.value)
        if part and part not in (".", "..")
    }


#: The most a data directory beside a script may hold to be collected (files, bytes).
DATA_DIRECTORY_LIMITS = (2000, 64 << 20)


def _data_directory(entry: Path) -> bool:
    """Whether ``entry``, beside a script, is a directory of data the script may read next to
    its ``__file__`` (Flask's ``templates/`` and ``static/``, ``locale/``, ``data/``): no Python
    code in it, not hidden, not a virtual environment or a build's output (ingot's executables
    and archives among them), and small (see :data:`DATA_DIRECTORY_LIMITS`)."""
    if (
        not entry.is_dir()
        or entry.is_symlink()
        or entry.name.startswith((".", "_"))
        or entry.name in ("build", "dist", "node_modules", "site-packages")
        or (entry / "pyvenv.cfg").exists()
    ):
        return False
    count = size = 0
    for top, directories, names in os.walk(entry):
        directories[:] = [name for name in directories if not name.startswith(".")]
        for name in names:
            if name.endswith((".py", ".pyc")) or name == "pyvenv.cfg":
                return False
            if is_ingot_file(Path(top, name)):  # an earlier build's output
                return False
            count += 1
            try:
                size += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                return False
            if count > DATA_DIRECTORY_LIMITS[0] or size > DATA_DIRECTORY_LIMITS[1]:
                return False
    return count > 0


def _data_file(entry: Path, script: Path) -> bool:
    """Whether ``entry``, beside a script and named by its code
    (``Path(__file__).with_name("data.txt")``), is a file of data it may read next to its
    ``__file__``: a regular file, not code, not hidden, not ingot's output, not the script, and
    small (see :data:`DATA_DIRECTORY_LIMITS`)."""
    try:
        info = entry.lstat()
    except OSError:
        return False
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_size <= DATA_DIRECTORY_LIMITS[1]
        and not entry.name.startswith(".")
        and not entry.name.endswith((".py", ".pyc", ".pth", ".so"))
        and entry.resolve() != script.resolve()
        and not is_ingot_file(entry)
    )


def _add_packages(plan: _Draft) -> None:
    for text in plan.settings.packages or []:
        path = Path(text)
        if (path / "__init__.py").is_file() or (path.is_file() and path.suffix == ".py"):
            plan.copies.append((path.name, path))
        elif path.is_dir():
            plan.roots.append(path)
        else:
            raise ConfigError(f"package {path}: no such package, module or directory")


def plan_source(request: Request) -> Plan:
    """Resolves a request for a source (a project, a script, a package directory) into a
    :class:`Plan`."""
    overrides = request.settings
    source = Path(request.source or ".")
    if (
        request.source is None
        and overrides.script is not None
        and not (source / "pyproject.toml").is_file()
    ):
        # `ingot build --script app.py` outside a project: the script is what to build.
        source = Path(overrides.script)
        overrides = dataclasses.replace(overrides, script=None)
    given = _given(request, source)
    if source.name == "pyproject.toml" or (source / "pyproject.toml").is_file():
        plan = _project_plan(source, overrides, given)
    elif source.is_file() and source.suffix == ".py":
        plan = _script_plan(source, overrides, given)
    elif (source / "__init__.py").is_file():
        plan = _package_plan(source, overrides, given)
    else:
        what = (
            "does not exist"
            if not source.exists()
            else "is not a script (.py), a package (__init__.py) or a project (pyproject.toml)"
        )
        raise ConfigError(
            f"{source} {what}",
            hint="give a script, a package directory, a "
            "project directory, or --console-script NAME",
        )
    return finish(plan, request)


def _given(request: Request, source: Path | None) -> Bounds:
    """The bounds of a build without a project: the paths the command line gave (which may be
    anywhere), and whether it allows leaving the project."""
    options = request.settings
    paths = [*(options.packages or []), options.script, options.requirements]
    return Bounds(
        None,
        tuple(Path(path) for path in [source, *paths] if path is not None),
        request.allow_outside_project,
    )


def _chosen(settings: Settings) -> bool:
    """Whether ``settings`` say what to run."""
    return any((settings.entry, settings.module, settings.script))


def _project_plan(source: Path, overrides: Settings, given: Bounds) -> _Draft:
    project = load_project(source)
    bounds = dataclasses.replace(given, project=project.root)
    where = str(project.pyproject)
    settings = merge(_absolute(project.settings, bounds, where, overrides), overrides)
    name = project.name or project.root.resolve().name
    if settings.entry in project.scripts:  # --entry NAME: one of [project.scripts]
        name, settings = (
            settings.entry,
            dataclasses.replace(settings, entry=project.scripts[settings.entry]),
        )
    elif not _chosen(settings):
        if len(project.scripts) != 1:
            names = ", ".join(sorted(project.scripts)) or "none"
            raise ConfigError(
                f"{project.pyproject}: which entry point to run? "
                f"[project.scripts] has {len(project.scripts)} ({names}) and "
                "[tool.ingot] sets none of entry, module, script",
                hint="choose with --entry NAME (or 'module:function'), --module or --script",
            )
        ((name, entry),) = project.scripts.items()
        settings = dataclasses.replace(settings, entry=entry)
    plan = _Draft(name, {}, settings, Path(), bounds=bounds)
    if project.requires_python is not None:
        plan.requires_python = (project.requires_python, f"{project.pyproject} [project]")
    if settings.packages is None:
        plan.pip_project = project.root
    plan.requirements = list(
        settings.dependencies
        if settings.dependencies is not None
        else project.project_dependencies or []
    )
    plan.declared = settings.dependencies is None
    if overrides.dependencies is None:  # (the project's: each stays inside it)
        for requirement in plan.requirements:
            bounds.requirement(requirement, f"{where}: dependencies")
    if overrides.dependencies is None and overrides.requirements is None:
        _take_lock(plan, project.root, bounds)
    return plan


def _take_lock(plan: _Draft, root: Path, bounds: Bounds) -> None:
    """The project's lock file, when it has one (:func:`ingot.build.resolve.lockfile.
    find_lock`), in place of its requirements: nothing else is installed (the command line's
    ``--dependency`` or ``--requirements`` replace the lock)."""
    lock = find_lock(root)
    if lock is None:
        return
    plan.lock = bounds.project_path(lock.name, f"{root / lock.name}")
    others = [name for name in LOCK_NAMES if name != lock.name and (root / name).is_file()]
    replaced = (
        [f"the project's {len(plan.requirements)} requirement(s)"] if plan.requirements else []
    )
    if plan.settings.requirements is not None:
        replaced.append(f"requirements file {plan.settings.requirements}")
        plan.settings = dataclasses.replace(plan.settings, requirements=None)
    plan.requirements = []
    plan.declared = False
    note = f"dependencies: exactly the files of {lock.name}, their hashes checked"
    if others:
        note += f" ({' and '.join(others)} left aside: {lock.name} comes first)"
    if replaced:
        note += f", in place of {' and '.join(replaced)}"
    plan.notes.append(note + " (--dependency or --requirements replaces the lock)")


def _script_plan(source: Path, overrides: Settings, given: Bounds) -> _Draft:
    settings, name = merge(Settings(), overrides), _script_module(source)
    if not _chosen(settings):
        # run as __main__; --entry can call a function of it instead
        settings = dataclasses.replace(settings, module=name)
    # (the script's directory is its project: what is collected beside it stays inside)
    plan = _Draft(
        name, {}, settings, Path(), bounds=dataclasses.replace(given, project=source.parent)
    )
    requires = _script_requires_python(source)
    if requires is not None:
        plan.requires_python = (requires, f"{source}'s '# /// script' block")
    plan.copies.append((f"{name}.py", source))
    if settings.packages is None:
        beside = beside_script(source)
        plan.copies += beside
        if beside:
            plan.notes.append(
                "collected beside the script: "
                + ", ".join(name + ("/" if path.is_dir() else "") for name, path in beside)
                + " (--package PATH instead chooses what to copy)"
            )
    if settings.dependencies is not None:
        plan.requirements = list(settings.dependencies)
    else:
        plan.requirements = inline_dependencies(source)
        for requirement in plan.requirements:
            assert plan.bounds is not None
            plan.bounds.requirement(requirement, f"{source}'s '# /// script' dependencies")
    return plan


def _package_plan(source: Path, overrides: Settings, given: Bounds) -> _Draft:
    settings = merge(Settings(), overrides)
    name = source.resolve().name
    if not _chosen(settings):
        if not (source / "__main__.py").is_file():
            raise ConfigError(
                f"package {source} has no __main__.py: what should run?",
                hint="give --entry 'module:function' or --module",
            )
        settings = dataclasses.replace(settings, module=name)
    plan = _Draft(name, {}, settings, Path(), bounds=dataclasses.replace(given, project=source))
    plan.copies.append((name, source))
    plan.requirements = list(settings.dependencies or [])
    return plan


def finish(plan: _Draft, request: Request) -> Plan:
    """Fills in the run config, the copied script and packages, the requirements file, output;
    the plan, frozen."""
    settings = plan.settings
    script_module = None
    if settings.script is not None:
        script_module = _script_module(Path(settings.script))
        plan.copies.append((f"{script_module}.py", Path(settings.script)))
    plan.run = _run(settings, "--entry/[tool.ingot] entry", script_module) or {}
    _add_packages(plan)
    if settings.requirements is not None:
        if not Path(settings.requirements).is_file():
            raise ConfigError(f"requirements file {settings.requirements} does not exist")
        plan.requirement_files.append(Path(settings.requirements))
        if plan.declared and plan.requirements and hash_checked(Path(settings.requirements)):
            # A requirements file with hashes is a lock: it gives the dependencies.
            plan.notes.append(
                f"dependencies: {settings.requirements} (its hashes checked), not the "
                f"project's {len(plan.requirements)} requirement(s)"
            )
            plan.requirements = []
    _check_links(plan, plan.bounds or _given(request, None))
    suffix = ".ingot" if request.archive_only else ""
    plan.default_output = settings.output is None
    plan.output = (
        Path(settings.output) if settings.output else Path("dist") / f"{plan.name}{suffix}"
    )
    return Plan(
        plan.name,
        plan.run,
        plan.settings,
        plan.output,
        plan.default_output,
        tuple(plan.copies),
        tuple(plan.roots),
        plan.pip_project,
        tuple(plan.requirements),
        tuple(plan.requirement_files),
        plan.pinned,
        tuple(plan.notes),
        plan.requires_python,
        plan.lock,
    )


def hash_checked(path: Path) -> bool:
    """Whether the requirements file ``path`` gives hashes (``--hash``): pip installs it in
    hash-checking mode, every requirement pinned and hashed."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return re.search(r"(^|\s)--hash[=\s]", text, re.M) is not None


def _check_links(plan: _Draft, bounds: Bounds) -> None:
    """ConfigError naming a symbolic link in what the build copies or collects that leads out
    of the project (:meth:`ingot.build.resolve.confine.Bounds.check_tree`)."""
    for _, path in plan.copies:
        bounds.check_tree(path)
    for root in plan.roots:
        bounds.check_tree(root)
    if plan.pip_project is not None:
        bounds.check_tree(plan.pip_project, project_copy_ignore())


def _packaging() -> tuple[type[Requirement], Callable[[str], str]]:
    """``packaging``'s Requirement and canonicalize_name (pip's copy if it is not installed)."""
    try:
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name
    except ImportError:
        # pip's copy is the same code; mypy sees other classes.
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]
        from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[assignment]
    return Requirement, canonicalize_name


def _check_from_index(dist: Distribution) -> None:
    """ConfigError if ``dist`` was installed from a local directory or file (PEP 610): pip
    could not install ``name==version`` of it from an index."""
    try:
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return
    url = origin.get("url", "") if isinstance(origin, dict) else ""
    if url.startswith("file://"):
        editable = " (editable)" if origin.get("dir_info", {}).get("editable") else ""
        raise ConfigError(
            f"{dist.metadata['Name']} {dist.version} is installed from "
            f"{url}{editable}, not from a package index",
            hint=f"build its project instead: ingot build {url[7:]}"
            if "dir_info" in origin
            else "install it from an index first",
        )


def installed_requirements(dist: Distribution) -> list[str]:
    """``name==version`` of ``dist`` and every distribution it needs, transitively, as installed
    in the running environment (markers evaluated here, extras followed)."""
    import importlib.metadata as metadata

    Requirement, canonical = _packaging()
    pins: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    queue: list[tuple[Distribution, str]] = [(dist, "")]
    while queue:
        current, extra = queue.pop()
        name = canonical(current.metadata["Name"])
        _check_from_index(current)
        pins[name] = f"{current.metadata['Name']}=={current.version}"
        if (name, extra) in done:
            continue
        done.add((name, extra))
        for text in current.requires or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
                continue
            try:
                needed = metadata.distribution(requirement.name)
            except metadata.PackageNotFoundError:
                raise ConfigError(
                    f"{current.metadata['Name']} needs {requirement}, which is not "
                    f"installed in {sys.prefix}"
                ) from None
            queue += [(needed, e) for e in sorted(requirement.extras) or [""]]
    return sorted(pins.values(), key=str.lower)


def console_script_entry(name: str) -> tuple[str, list[str]]:
    """The console script ``name`` installed in the running environment: its entry point
    (``module:function``), and its distribution and dependencies pinned to the installed
    versions."""
    import importlib.metadata as metadata

    found = [ep for ep in metadata.entry_points(group="console_scripts") if ep.name == name]
    if not found:
        raise ConfigError(
            f"no console script {name!r} is installed in {sys.prefix}",
            hint=f"pip install the project that provides it into {sys.prefix}",
        )
    entry = found[0]
    assert entry.dist is not None  # set on the entry points entry_points() finds
    return f"{entry.module}:{entry.attr}", installed_requirements(entry.dist)


def console_script_plan(name: str, request: Request) -> Plan:
    """A plan for the console script ``name`` installed in the running environment: its entry
    point, and its distribution and dependencies pinned to the installed versions."""
    entry, requirements = console_script_entry(name)
    settings = merge(Settings(entry=entry), request.settings)
    plan = _Draft(name, {}, settings, Path())
    plan.requirements = (
        requirements if settings.dependencies is None else list(settings.dependencies)
    )
    plan.pinned = settings.dependencies is None
    return finish(plan, request)
