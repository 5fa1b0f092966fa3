"""The exceptions ingot's tools raise: one base, :class:`IngotError`, that the CLI reports.

Each message says what went wrong, where, and what was expected; ``hint`` (optional) says what
to do about it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BuildError", "CollectError", "CompileError", "ConfigError", "IngotError", "PackError"]


class IngotError(Exception):
    """A failure the user can act on: the CLI prints it as ``error: ...`` (and ``hint: ...``)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class BuildError(IngotError):
    """The application cannot be built (no launcher, pip failed, unwritable output, ...)."""


class CollectError(IngotError):
    """An input (a directory to collect, the interpreter's standard library) is unusable."""


class ConfigError(IngotError):
    """A ``pyproject.toml`` (or an option standing for one of its keys) is unusable."""


class PackError(IngotError):
    """The archive cannot be built or written (bad option, unwritable output)."""


class CompileError(PackError):
    """A module of the application's own code (a directory ``pack`` was told is strict) does not
    compile: ``error`` is the SyntaxError, ``path`` the file."""

    def __init__(self, path: Path, name: str, error: SyntaxError) -> None:
        super().__init__(
            f"{path}:{error.lineno}: {name} does not compile ({error.msg})",
            hint="fix it, or leave the module out with --exclude",
        )
        self.path, self.name, self.error = path, name, error
