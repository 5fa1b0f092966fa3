"""Reading a project's ``pyproject.toml``: ``[project]`` (name, scripts, dependencies) and
``[tool.ingot]`` (its keys and their checks are fields of :class:`ingot.build.resolve.settings.Settings`;
examples/README.md lists them).

    from ingot.build.resolve.project import load_project
    project = load_project("examples/hello")      # a directory or its pyproject.toml
    project.settings.entry, project.scripts, project.dependencies
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ingot.build.resolve.settings import Settings, from_table, is_str_list
from ingot.errors import ConfigError
from ingot.toml import load_toml

__all__ = [
    "Project",
    "load_project",
]


@dataclass
class Project:
    """A project directory: its ``pyproject.toml`` settings."""

    root: Path
    pyproject: Path
    name: str | None
    settings: Settings
    scripts: dict[str, str]  # [project.scripts]: command name -> "module:function"
    project_dependencies: list[str] | None  # [project].dependencies (None: not given)
    requires_python: str | None = None  # [project].requires-python

    @property
    def dependencies(self) -> list[str]:
        """``[tool.ingot].dependencies``, else ``[project].dependencies``."""
        if self.settings.dependencies is not None:
            return list(self.settings.dependencies)
        return list(self.project_dependencies or [])


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
        settings=from_table(table, str(pyproject)),
        scripts=dict(scripts),
        project_dependencies=dependencies,
        requires_python=_requires_python(project, pyproject),
    )


def _requires_python(table: dict[str, object], where: Path) -> str | None:
    value = table.get("requires-python")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: [project] requires-python must be a string, not {value!r}")
    return value
