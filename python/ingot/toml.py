"""Reading TOML (``pyproject.toml``, the runtimes' pinned sources): ``tomllib``, or ``tomli`` on
Python 3.10."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any, Protocol

from ingot.errors import ConfigError

__all__ = ["TomlParser", "load_toml", "tomllib_for"]


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
