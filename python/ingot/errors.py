"""The exceptions ingot's tools raise: one base, :class:`IngotError`, that the CLI reports.

Each message says what went wrong, where, and what was expected; ``hint`` (optional) says what
to do about it.
"""

from __future__ import annotations

__all__ = ["IngotError", "CollectError", "PackError"]


class IngotError(Exception):
    """A failure the user can act on: the CLI prints it as ``error: ...`` (and ``hint: ...``)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class CollectError(IngotError):
    """An input (a directory to collect, the interpreter's standard library) is unusable."""


class PackError(IngotError):
    """The archive cannot be built or written (bad option, unwritable output)."""
