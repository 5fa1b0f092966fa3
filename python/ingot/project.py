"""Reading a project's build settings: ``[tool.ingot]`` (and ``[project]``) of ``pyproject.toml``.

    from ingot.project import load_project
    project = load_project("examples/hello")      # a directory or its pyproject.toml
    project.config.entry, project.scripts, project.dependencies

Keys of ``[tool.ingot]`` (each has a command-line option of ``ingot build`` that overrides it):

=============== =========== ====================================================================
key             type        meaning
=============== =========== ====================================================================
entry           str         ``"module:function"`` to call
module          str         a module to run as ``python -m`` would
script          str         a script to run (a path relative to the project)
packages        list[str]   app package directories, copied in (default: pip-install the project)
dependencies    list[str]   requirement strings (default: ``[project].dependencies``)
requirements    str         a requirements file (``pip install -r``), relative to the project
include         list[str]   module-name globs to keep although the stdlib defaults leave them out
exclude         list[str]   module-name globs to leave out (stdlib and dependencies)
output          str         the executable to write, relative to the project
fast-exit       bool        exit without finalizing the interpreter (launch.json ``fast_exit``)
optimize        list[int]   bytecode optimization levels (0, 1, 2)
compress        int         zstd level of the archive's blobs (default: stored as is)
=============== =========== ====================================================================
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

from ingot.errors import IngotError

__all__ = ["Config", "ConfigError", "Plan", "Project", "check_config", "finish", "load_project",
           "load_toml", "merge", "parse_entry", "plan_source"]


class ConfigError(IngotError):
    """A ``pyproject.toml`` (or an option standing for one of its keys) is unusable."""


@dataclass
class Config:
    """The ``[tool.ingot]`` settings; None (or empty) when not set."""

    entry: str | None = None
    module: str | None = None
    script: str | None = None
    packages: list[str] | None = None
    dependencies: list[str] | None = None
    requirements: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    output: str | None = None
    fast_exit: bool | None = None
    optimize: list[int] | None = None
    compress: int | None = None


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


#: TOML key -> (what it must be, check).
_KEYS = {
    "entry": ("a string 'module:function'", lambda v: isinstance(v, str)),
    "module": ("a string (a module name)", lambda v: isinstance(v, str)),
    "script": ("a string (a path)", lambda v: isinstance(v, str)),
    "packages": ("a list of strings (paths)", _is_str_list),
    "dependencies": ("a list of requirement strings", _is_str_list),
    "requirements": ("a string (a path)", lambda v: isinstance(v, str)),
    "include": ("a list of strings (module-name globs)", _is_str_list),
    "exclude": ("a list of strings (module-name globs)", _is_str_list),
    "output": ("a string (a path)", lambda v: isinstance(v, str)),
    "fast-exit": ("true or false", lambda v: isinstance(v, bool)),
    "optimize": ("a list of 0, 1, 2", lambda v: isinstance(v, list) and all(
        type(item) is int and item in (0, 1, 2) for item in v)),
    "compress": ("an integer zstd level (-7 to 22)", lambda v: type(v) is int and -7 <= v <= 22),
}
assert {key.replace("-", "_") for key in _KEYS} == {f.name for f in fields(Config)}

_ENTRY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass
class Project:
    """A project directory: its ``pyproject.toml`` settings."""

    root: Path
    pyproject: Path
    name: str | None
    config: Config
    scripts: dict[str, str]  # [project.scripts]: command name -> "module:function"
    project_dependencies: list[str] | None  # [project].dependencies (None: not given)

    @property
    def dependencies(self) -> list[str]:
        """``[tool.ingot].dependencies``, else ``[project].dependencies``."""
        if self.config.dependencies is not None:
            return list(self.config.dependencies)
        return list(self.project_dependencies or [])


def _tomllib(path: Path):
    """``tomllib``, or ``tomli`` on Python 3.10 (ConfigError naming ``path`` if it is missing)."""
    if sys.version_info >= (3, 11):
        import tomllib
        return tomllib
    try:
        import tomli
        return tomli
    except ImportError:
        raise ConfigError(f"cannot read {path}: Python {sys.version_info[0]}.{sys.version_info[1]}"
                          " has no TOML parser (tomllib is 3.11+)",
                          hint="pip install tomli, or run ingot with Python 3.11+") from None


def load_toml(path: Path) -> dict:
    """Parses the TOML file at ``path``."""
    tomllib = _tomllib(path)
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from error


def parse_entry(text: str, where: str) -> tuple[str, str]:
    """``"pkg.mod:func"`` -> ``("pkg.mod", "func")``; ConfigError naming ``where`` otherwise."""
    text = text.strip()
    if not _ENTRY.fullmatch(text) or ".." in text or text.endswith("."):
        raise ConfigError(f"{where}: {text!r} is not an entry point 'module:function'",
                          hint="e.g. 'app.cli:main'")
    module, function = text.split(":")
    return module, function


def check_config(table: dict, where: str) -> Config:
    """A :class:`Config` from a ``[tool.ingot]`` table; ConfigError names ``where`` and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.ingot] must be a table")
    config = Config()
    for key, value in table.items():
        if key not in _KEYS:
            close = [known for known in _KEYS if known.replace("-", "_") == key.replace("-", "_")]
            raise ConfigError(f"{where}: unknown key {key!r} in [tool.ingot]",
                              hint=f"did you mean {close[0]!r}?" if close else
                              "known keys: " + ", ".join(_KEYS))
        expected, check = _KEYS[key]
        if not check(value):
            raise ConfigError(f"{where}: [tool.ingot] {key} must be {expected}, "
                              f"not {value!r}")
        setattr(config, key.replace("-", "_"), value)
    if config.entry is not None:
        parse_entry(config.entry, f"{where}: [tool.ingot] entry")
    chosen = [key for key in ("entry", "module", "script") if getattr(config, key) is not None]
    if len(chosen) > 1:
        raise ConfigError(f"{where}: [tool.ingot] sets {' and '.join(chosen)}; "
                          "give one of entry, module, script")
    return config


def load_project(path) -> Project:
    """Reads ``path`` (a project directory or its ``pyproject.toml``)."""
    path = Path(path)
    pyproject = path / "pyproject.toml" if path.is_dir() else path
    if not pyproject.is_file():
        raise ConfigError(f"{path}: no pyproject.toml there",
                          hint="give a project directory, a package directory or a script")
    data = load_toml(pyproject)
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError(f"{pyproject}: [project] must be a table")
    scripts = project.get("scripts", {})
    if not isinstance(scripts, dict) or not all(isinstance(v, str) for v in scripts.values()):
        raise ConfigError(f"{pyproject}: [project.scripts] must map names to 'module:function'")
    dependencies = project.get("dependencies")
    if dependencies is not None and not _is_str_list(dependencies):
        raise ConfigError(f"{pyproject}: [project] dependencies must be a list of strings")
    tool = data.get("tool", {})
    table = tool.get("ingot", {}) if isinstance(tool, dict) else {}
    name = project.get("name")
    return Project(root=pyproject.parent, pyproject=pyproject,
                   name=name if isinstance(name, str) else None,
                   config=check_config(table, str(pyproject)), scripts=dict(scripts),
                   project_dependencies=dependencies)


# --- what to build: a source and the options, resolved ----------------------------------------

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_INLINE = re.compile(r"(?m)^# /// script$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


@dataclass
class Plan:
    """A build, resolved: what to run, what to copy or pip-install, where to write."""

    name: str
    run: dict  # launch.json "run"
    config: Config  # the settings in effect (project's, overridden by options)
    output: Path
    default_output: bool = False
    copies: list[tuple[str, Path]] = field(default_factory=list)  # (name in app root, source)
    roots: list[Path] = field(default_factory=list)  # directories of packages, collected as is
    pip_project: Path | None = None  # pip install --no-deps this directory
    requirements: list[str] = field(default_factory=list)
    requirement_files: list[Path] = field(default_factory=list)


def _absolute(config: Config, root: Path) -> Config:
    """``config`` with its paths made relative to ``root`` (a project's directory)."""
    for key in ("script", "requirements", "output"):
        if getattr(config, key) is not None:
            setattr(config, key, str(root / getattr(config, key)))
    if config.packages is not None:
        config.packages = [str(root / path) for path in config.packages]
    return config


def merge(base: Config, overrides: Config) -> Config:
    """``base`` with every setting ``overrides`` gives replacing it (one of entry/module/script
    given in ``overrides`` replaces all three)."""
    merged = Config(**vars(base))
    if any(getattr(overrides, key) is not None for key in ("entry", "module", "script")):
        merged.entry = merged.module = merged.script = None
    for key, value in vars(overrides).items():
        if value is not None and value != []:
            setattr(merged, key, value)
    return merged


def inline_dependencies(script: Path) -> list[str]:
    """The ``dependencies`` of a script's inline metadata (PEP 723 ``# /// script`` block)."""
    block = _INLINE.search(script.read_text(encoding="utf-8", errors="replace"))
    if not block:
        return []
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in block.group("content").splitlines(keepends=True))
    tomllib = _tomllib(script)
    try:
        dependencies = tomllib.loads(content).get("dependencies", [])
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{script}: the '# /// script' block is not valid TOML: {error}") from error
    if not _is_str_list(dependencies):
        raise ConfigError(f"{script}: '# /// script' dependencies must be a list of strings")
    return dependencies


def _run(config: Config, where: str, script_module: str | None = None) -> dict | None:
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
        raise ConfigError(f"script {path} would be module {name!r}, which the standard library "
                          "has", hint="rename the script")
    return name


def _add_packages(plan: Plan) -> None:
    for text in plan.config.packages or []:
        path = Path(text)
        if (path / "__init__.py").is_file() or (path.is_file() and path.suffix == ".py"):
            plan.copies.append((path.name, path))
        elif path.is_dir():
            plan.roots.append(path)
        else:
            raise ConfigError(f"package {path}: no such package, module or directory")


def plan_source(options) -> Plan:
    """Resolves ``options`` (an :class:`ingot.build.BuildOptions`) into a :class:`Plan`."""
    overrides = options.config
    source = Path(options.source or ".")
    if source.name == "pyproject.toml" or (source / "pyproject.toml").is_file():
        project = load_project(source)
        config = merge(_absolute(project.config, project.root), overrides)
        name = project.name or project.root.resolve().name
        if config.entry in project.scripts:  # --entry NAME: one of [project.scripts]
            name, config.entry = config.entry, project.scripts[config.entry]
        elif not any((config.entry, config.module, config.script)):
            if len(project.scripts) != 1:
                names = ", ".join(sorted(project.scripts)) or "none"
                raise ConfigError(f"{project.pyproject}: which entry point to run? [project.scripts]"
                                  f" has {len(project.scripts)} ({names}) and [tool.ingot] sets "
                                  "none of entry, module, script",
                                  hint="choose with --entry NAME (or 'module:function'), "
                                       "--module or --script")
            (name, config.entry), = project.scripts.items()
        plan = Plan(name, {}, config, Path())
        if config.packages is None:
            plan.pip_project = project.root
        plan.requirements = list(config.dependencies if config.dependencies is not None
                                 else project.project_dependencies or [])
    elif source.is_file() and source.suffix == ".py":
        config, name = merge(Config(), overrides), _script_module(source)
        if not any((config.entry, config.module, config.script)):
            config.module = name  # run as __main__; --entry can call a function of it instead
        plan = Plan(name, {}, config, Path())
        plan.copies.append((f"{name}.py", source))
        plan.requirements = list(config.dependencies if config.dependencies is not None
                                 else inline_dependencies(source))
    elif (source / "__init__.py").is_file():
        config = merge(Config(), overrides)
        name = source.resolve().name
        if not any((config.entry, config.module, config.script)):
            if not (source / "__main__.py").is_file():
                raise ConfigError(f"package {source} has no __main__.py: what should run?",
                                  hint="give --entry 'module:function' or --module")
            config.module = name
        plan = Plan(name, {}, config, Path())
        plan.copies.append((name, source))
        plan.requirements = list(config.dependencies or [])
    else:
        what = "does not exist" if not source.exists() else \
            "is not a script (.py), a package (__init__.py) or a project (pyproject.toml)"
        raise ConfigError(f"{source} {what}", hint="give a script, a package directory, a "
                          "project directory, or --console-script NAME")
    return finish(plan, options)


def finish(plan: Plan, options) -> Plan:
    """Fills in the run config, the copied script and packages, the requirements file, output."""
    config = plan.config
    script_module = None
    if config.script is not None:
        script_module = _script_module(Path(config.script))
        plan.copies.append((f"{script_module}.py", Path(config.script)))
    plan.run = _run(config, "--entry/[tool.ingot] entry", script_module) or {}
    _add_packages(plan)
    if config.requirements is not None:
        if not Path(config.requirements).is_file():
            raise ConfigError(f"requirements file {config.requirements} does not exist")
        plan.requirement_files.append(Path(config.requirements))
    suffix = ".ingot" if options.archive_only else ""
    plan.default_output = config.output is None
    plan.output = Path(config.output) if config.output else Path("dist") / f"{plan.name}{suffix}"
    return plan
