"""The project-path rule (docs/security.md, "Paths a build reads and writes"; issue 53, item 5):
a path that the project's own files give (``pyproject.toml`` and its ``[tool.ingot]``, a
script's PEP 723 block) stays inside the project's directory, symbolic links resolved; what the
build copies or collects holds no symbolic link that leads out of the project; a path given on
the command line may be anywhere (it is the caller's choice). ``--allow-outside-project``
lifts both.

A CI that builds pull requests builds what a stranger wrote: without the rule,
``packages = ["../secret/pkg"]``, ``requirements = "/etc/shadow"``, a link ``app/shadow.txt ->
/etc/shadow`` or ``output = "/usr/local/bin/x"`` reads or writes where the project has no
business.

    from ingot.build.resolve.confine import Bounds
    bounds = Bounds(project=Path("proj"), given=(), allow=False)
    bounds.project_path("../x", "proj/pyproject.toml: [tool.ingot] packages")   # ConfigError
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ingot.errors import ConfigError

__all__ = ["ALLOW_OPTION", "PROJECT_COPY_IGNORES", "Bounds", "project_copy_ignore"]

#: The option that lifts the rule (a field of :class:`ingot.build.resolve.settings.Request`).
ALLOW_OPTION = "--allow-outside-project"

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

Ignore = Callable[[str, list[str]], set[str]]


def project_copy_ignore() -> Ignore:
    """``shutil.copytree``'s ``ignore`` for the copy of a project that pip builds:
    :data:`PROJECT_COPY_IGNORES`, and virtual environments (directories with a ``pyvenv.cfg``)."""
    skip = shutil.ignore_patterns(*PROJECT_COPY_IGNORES)

    def ignore(directory: str, names: list[str]) -> set[str]:
        return set(skip(directory, names)) | {
            name for name in names if os.path.isfile(os.path.join(directory, name, "pyvenv.cfg"))
        }

    return ignore


#: What a copied package or module leaves out (as the stage step's copy does).
COPY_IGNORE: Ignore = shutil.ignore_patterns("__pycache__", "*.pyc")

#: A requirement that names a local file or directory: ``name @ file:///...``, or a path.
_FILE_URL = re.compile(r"@\s*(file:\S+)")
_PATH = re.compile(r"^\s*(\.{1,2}/|/|~)|^[^@;:]*[/\\][^@;:]*$")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class Bounds:
    """Where a build's inputs may be: the project's directory (None: no project, as for a
    console script) and what the command line gave; ``allow``: anywhere."""

    project: Path | None
    given: tuple[Path, ...] = ()
    allow: bool = False

    def _roots(self) -> list[Path]:
        found = [_real(path) for path in self.given]
        return found + ([_real(self.project)] if self.project is not None else [])

    def _inside(self, path: Path, roots: Iterable[Path]) -> bool:
        return any(path.is_relative_to(root) for root in roots)

    def _refuse(self, what: str, to: Path) -> ConfigError:
        return ConfigError(
            f"{what} leads out of the project {self.project} (to {to})",
            hint="a path from the project's own files stays inside its directory: give it on "
            f"the command line instead, or pass {ALLOW_OPTION} if this project may read and "
            "write outside its directory",
        )

    def project_path(self, text: str, where: str, *, output: bool = False) -> Path:
        """``text``, a path the project's files give at ``where``, relative to the project;
        ConfigError if it leads out of the project (an ``output``: if its directory does; the
        output itself may be a link, which the build replaces, not follows)."""
        assert self.project is not None
        path = self.project / text
        real = _real(path.parent) / path.name if output else _real(path)
        if not self.allow and not real.is_relative_to(_real(self.project)):
            raise self._refuse(f"{where}: {text!r}", real)
        return path

    def requirement(self, text: str, where: str) -> None:
        """ConfigError if ``text``, a requirement the project's files give at ``where``, is a
        file or directory outside the project (``name @ file:///...``, ``../x.whl``): what pip
        would read. Paths are as pip sees them: relative to the working directory."""
        if self.allow or self.project is None:
            return
        found = _FILE_URL.search(text)
        if found:
            path = Path(unquote(urlparse(found[1]).path))
        elif _PATH.search(text) and "://" not in text:
            path = Path(text.split(";")[0].strip()).expanduser()
        else:
            return
        real = _real(path)
        if not real.is_relative_to(_real(self.project)):
            raise self._refuse(f"{where}: requirement {text!r}", real)

    def check_tree(self, top: Path, ignore: Ignore = COPY_IGNORE) -> None:
        """ConfigError naming the first symbolic link in ``top`` (or ``top`` itself) that leads
        out of the project and what the command line gave: the build would copy what it leads
        to. Links to directories inside are followed and their trees checked too."""
        if self.allow:
            return
        roots = self._roots()
        real = _real(top)
        if not self._inside(real, roots):
            raise self._link_error(top, real)
        stack, seen = [real], {real}
        while stack:
            directory = stack.pop()
            if not directory.is_dir():
                continue
            try:
                names = sorted(os.listdir(directory))
            except OSError:
                continue  # (the copy says what is wrong with it)
            skipped = ignore(str(directory), names)
            for name in names:
                path = directory / name
                if name in skipped:
                    continue
                target = _real(path) if path.is_symlink() else path
                if path.is_symlink() and not self._inside(target, roots):
                    raise self._link_error(path, target)
                if target.is_dir() and target not in seen:
                    seen.add(target)
                    stack.append(target)

    def _link_error(self, link: Path, target: Path) -> ConfigError:
        where = f"the project {self.project}" if self.project is not None else "what was given"
        return ConfigError(
            f"{link} is a symbolic link to {target}, outside {where}: the build would carry "
            "what it leads to",
            hint=f"remove the link or copy what it leads to into the project; or pass "
            f"{ALLOW_OPTION} to follow it",
        )
