"""Reading a project's build settings: ``[tool.ingot]`` (and ``[project]``) of ``pyproject.toml``.

    from ingot.build.project import load_project
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
include         list[str]   module-name globs to carry although nothing imports them or the
                            stdlib defaults leave them out (``*``: everything)
exclude         list[str]   module-name globs to leave out (stdlib and dependencies)
output          str         the executable to write, relative to the project
fast-exit       bool        exit without finalizing the interpreter (launch.json ``fast_exit``)
filesystem-     bool        import from directories the app puts on ``sys.path``, after the
  imports                   archive (default true; false: the archive alone; launch.json
                            ``filesystem_imports``)
precompile-     bool        store the regular expressions the modules compile, compiled at build
  regexes                   time (default true; see ingot.build.regexes)
optimize        list[int]   bytecode optimization levels (0, 1, 2)
compress        int|false   zstd level of the blobs a start does not read (default: 19);
                            false stores every blob as is
files           list[str]   top-level packages materialized as real files in the extraction
                            cache (the ``files`` policy; see ingot.build.policy for the built-in ones)
python          str         the runtime to build with (``"3.11"``: see ingot.runtime.store; built first
                            if missing), or ``"local"``: the Python ingot runs under (by
                            default: its version's runtime if one is built, else local)
memory          list[str]   top-level packages kept in memory although ingot.build.policy's built-in
                            table lists them for ``files``
=============== =========== ====================================================================
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Protocol, TypeGuard

from ingot.errors import IngotError

__all__ = [
    "Config",
    "ConfigError",
    "Project",
    "check_config",
    "is_str_list",
    "load_project",
    "load_toml",
    "parse_entry",
    "tomllib_for",
]


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
    filesystem_imports: bool | None = None
    precompile_regexes: bool | None = None
    optimize: list[int] | None = None
    compress: int | bool | None = None  # None: DEFAULT_COMPRESSION; False: stored as is
    files: list[str] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)
    python: str | None = None


#: The zstd level ``ingot build`` compresses with by default: the blobs a start reads stay stored
#: as is (zero-copy), so only size and build time depend on it (see docs/benchmarks.md).
DEFAULT_COMPRESSION = 19


def is_str_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


#: TOML key -> (what it must be, check).
_KEYS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "entry": ("a string 'module:function'", lambda v: isinstance(v, str)),
    "module": ("a string (a module name)", lambda v: isinstance(v, str)),
    "script": ("a string (a path)", lambda v: isinstance(v, str)),
    "packages": ("a list of strings (paths)", is_str_list),
    "dependencies": ("a list of requirement strings", is_str_list),
    "requirements": ("a string (a path)", lambda v: isinstance(v, str)),
    "include": ("a list of strings (module-name globs)", is_str_list),
    "exclude": ("a list of strings (module-name globs)", is_str_list),
    "output": ("a string (a path)", lambda v: isinstance(v, str)),
    "fast-exit": ("true or false", lambda v: isinstance(v, bool)),
    "filesystem-imports": ("true or false", lambda v: isinstance(v, bool)),
    "precompile-regexes": ("true or false", lambda v: isinstance(v, bool)),
    "optimize": (
        "a list of 0, 1, 2",
        lambda v: (
            isinstance(v, list) and all(type(item) is int and item in (0, 1, 2) for item in v)
        ),
    ),
    "compress": (
        "an integer zstd level (-7 to 22), or false",
        lambda v: v is False or (type(v) is int and -7 <= v <= 22),
    ),
    "files": ("a list of strings (top-level package names)", is_str_list),
    "memory": ("a list of strings (top-level package names)", is_str_list),
    "python": (
        "a string, a Python version such as '3.11', or 'local'",
        lambda v: (
            isinstance(v, str) and (v == "local" or re.fullmatch(r"3\.\d+(\.\d+)?", v) is not None)
        ),
    ),
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


class TomlParser(Protocol):
    """What ingot uses of ``tomllib`` (and ``tomli``, the same API)."""

    @property
    def TOMLDecodeError(self) -> type[ValueError]: ...  # the modules' exception class
    def load(self, fp: IO[bytes], /) -> dict[str, Any]: ...
    def loads(self, s: str, /) -> dict[str, Any]: ...


def tomllib_for(path: Path) -> TomlParser:
    """``tomllib``, or ``tomli`` on Python 3.10 (ConfigError naming ``path`` if it is missing)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    else:  # (an else: mypy skips it quietly when it checks for 3.11+)
        try:
            # Installed for Python 3.10 only: mypy, which checks for 3.10, may not find it.
            import tomli  # type: ignore[import-not-found, unused-ignore]

            parser: TomlParser = tomli
            return parser
        except ImportError:
            raise ConfigError(
                f"cannot read {path}: Python {sys.version_info[0]}.{sys.version_info[1]}"
                " has no TOML parser (tomllib is 3.11+)",
                hint="pip install tomli, or run ingot with Python 3.11+",
            ) from None


def load_toml(path: Path) -> dict[str, Any]:
    """Parses the TOML file at ``path``."""
    tomllib = tomllib_for(path)
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
        raise ConfigError(
            f"{where}: {text!r} is not an entry point 'module:function'", hint="e.g. 'app.cli:main'"
        )
    module, function = text.split(":")
    return module, function


def check_config(table: object, where: str) -> Config:
    """A :class:`Config` from a ``[tool.ingot]`` table; ConfigError names ``where`` and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.ingot] must be a table")
    config = Config()
    for key, value in table.items():
        if key not in _KEYS:
            close = [known for known in _KEYS if known.replace("-", "_") == key.replace("-", "_")]
            raise ConfigError(
                f"{where}: unknown key {key!r} in [tool.ingot]",
                hint=f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(_KEYS),
            )
        expected, check = _KEYS[key]
        if not check(value):
            raise ConfigError(f"{where}: [tool.ingot] {key} must be {expected}, not {value!r}")
        setattr(config, key.replace("-", "_"), value)
    if config.entry is not None:
        parse_entry(config.entry, f"{where}: [tool.ingot] entry")
    chosen = [key for key in ("entry", "module", "script") if getattr(config, key) is not None]
    if len(chosen) > 1:
        raise ConfigError(
            f"{where}: [tool.ingot] sets {' and '.join(chosen)}; give one of entry, module, script"
        )
    return config


def load_project(path: str | os.PathLike[str]) -> Project:
    """Reads ``path`` (a project directory or its ``pyproject.toml``)."""
    path = Path(path)
    pyproject = path / "pyproject.toml" if path.is_dir() else path
    if not pyproject.is_file():
        raise ConfigError(
            f"{path}: no pyproject.toml there",
            hint="give a project directory, a package directory or a script",
        )
    data = load_toml(pyproject)
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError(f"{pyproject}: [project] must be a table")
    scripts = project.get("scripts", {})
    if not isinstance(scripts, dict) or not all(isinstance(v, str) for v in scripts.values()):
        raise ConfigError(f"{pyproject}: [project.scripts] must map names to 'module:function'")
    dependencies = project.get("dependencies")
    if dependencies is not None and not is_str_list(dependencies):
        raise ConfigError(f"{pyproject}: [project] dependencies must be a list of strings")
    tool = data.get("tool", {})
    table = tool.get("ingot", {}) if isinstance(tool, dict) else {}
    name = project.get("name")
    return Project(
        root=pyproject.parent,
        pyproject=pyproject,
        name=name if isinstance(name, str) else None,
        config=check_config(table, str(pyproject)),
        scripts=dict(scripts),
        project_dependencies=dependencies,
    )
