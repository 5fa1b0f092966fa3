"""Cold-path support for the ingot importer: ``importlib.resources`` and ``importlib.metadata``.

The finder (Rust, ``ingot._ingot``) serves imports; this module is compiled only when a program
first asks for a resource reader or for distributions. It only calls the finder's underscore
methods, which work on paths relative to the archive root.
"""

import io
import posixpath
import re

# No `typing` import at run time: this module is compiled at the start-up of executables. Mypy
# takes any module-level name `TYPE_CHECKING` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sys
    from collections.abc import Callable, Iterator
    from importlib.metadata import Distribution, DistributionFinder
    from importlib.metadata._meta import SimplePath
    from typing import IO, Any, Literal, overload

    from _typeshed import StrPath

    from ingot._ingot import IngotFinder

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable, TraversableResources
    else:
        from importlib.abc import Traversable, TraversableResources

__all__ = ["IngotDistribution", "IngotResourceReader", "IngotTraversable", "find_distributions"]


def _join(directory: str, *parts: object) -> str:
    """Joins `/`-separated parts under `directory`, refusing to climb out of the archive."""
    path = posixpath.join(directory, *(str(part) for part in parts)) if parts else directory
    normalized = posixpath.normpath(path) if path else ""
    if normalized == ".":
        return ""
    if normalized.startswith(("../", "/")) or normalized == "..":
        raise ValueError(f"path {path!r} leaves the ingot archive")
    return normalized


class IngotTraversable:
    """A file or directory inside an ingot archive (``importlib.resources.abc.Traversable``)."""

    __slots__ = ("_finder", "_path")

    def __init__(self, finder: "IngotFinder", path: str) -> None:
        self._finder = finder
        self._path = path

    @property
    def name(self) -> str:
        return posixpath.basename(self._path)

    def __str__(self) -> str:
        return f"{self._finder.path}/{self._path}" if self._path else self._finder.path

    def __repr__(self) -> str:
        return f"IngotTraversable({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IngotTraversable):
            return NotImplemented
        return self._finder is other._finder and self._path == other._path

    def __hash__(self) -> int:
        return hash((id(self._finder), self._path))

    def iterdir(self) -> "Iterator[IngotTraversable]":
        if not self.is_dir():
            raise NotADirectoryError(f"not a directory in ingot archive: {self}")
        for name, _is_dir in self._finder._listdir(self._path):
            yield IngotTraversable(self._finder, _join(self._path, name))

    def is_dir(self) -> bool:
        return self._finder._isdir(self._path)

    def is_file(self) -> bool:
        return bool(self._path) and self._finder._isfile(self._path)

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def joinpath(self, *descendants: "StrPath") -> "IngotTraversable":
        return IngotTraversable(self._finder, _join(self._path, *descendants))

    def __truediv__(self, child: "StrPath") -> "IngotTraversable":
        return self.joinpath(child)

    def read_bytes(self) -> bytes:
        if self.is_dir():
            raise IsADirectoryError(f"is a directory in ingot archive: {self}")
        return self._finder._read(self._path)

    def read_text(self, encoding: "str | None" = None, errors: "str | None" = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    if TYPE_CHECKING:

        @overload
        def open(
            self,
            mode: 'Literal["r", "rt"]' = "r",
            *,
            encoding: "str | None" = None,
            errors: "str | None" = None,
            newline: "str | None" = None,
        ) -> "IO[str]": ...
        @overload
        def open(self, mode: 'Literal["rb"]') -> "IO[bytes]": ...

    # `*args` and `**kwargs` are io.TextIOWrapper's, handed on as they are.
    def open(self, mode: str = "r", *args: "Any", **kwargs: "Any") -> "IO[str] | IO[bytes]":
        if mode not in ("r", "rb", "rt"):
            raise ValueError(f"ingot archive files are read-only; mode {mode!r} is not supported")
        stream = io.BytesIO(self.read_bytes())
        if "b" in mode:
            return stream
        if not args and "encoding" not in kwargs:
            kwargs["encoding"] = "utf-8"
        return io.TextIOWrapper(stream, *args, **kwargs)


# Mypy checks for Python 3.10 (pyproject.toml), which lacks importlib.resources.abc.
def _register_traversable() -> None:
    try:
        from importlib.resources.abc import Traversable  # type: ignore[import-not-found, unused-ignore]  # 3.11+
    except ImportError:
        from importlib.abc import Traversable  # 3.10
    Traversable.register(IngotTraversable)


def _traversable_resources() -> "type[TraversableResources]":
    try:
        from importlib.resources.abc import TraversableResources as base  # 3.11+
    except ImportError:
        from importlib.abc import TraversableResources as base  # 3.10
    return base  # type: ignore[no-any-return, unused-ignore]  # Any: the module 3.10 lacks


def _register_as_file() -> None:
    """``importlib.resources.as_file`` of a directory of the archive. Where the archive's paths
    are answered (an executable: ``serve_archive_paths``), the directory's own path below the
    archive, as for a package on disk: reads through it work, and it stays valid after the
    ``with`` block, as code that returns it from there expects (humanize's locale directory).
    Elsewhere, a temporary copy, as Python 3.12 and later make for any directory (3.10 and 3.11
    read it as a file and fail). Files are copied, as always: what asks for one may be C code."""
    import contextlib
    import importlib.resources
    import os
    import sys

    # A functools.singledispatch function (typeshed types it as a plain one).
    dispatcher: Any = importlib.resources.as_file
    fallback = dispatcher.dispatch(object)

    @contextlib.contextmanager
    def as_file(path: IngotTraversable) -> "Iterator[Any]":
        if not path.is_dir():
            with fallback(path) as file:
                yield file
            return
        import pathlib

        if os.path.isdir(str(path)):  # answered from the archive
            yield pathlib.Path(str(path))
            return
        if sys.version_info >= (3, 12):
            with fallback(path) as copy:
                yield copy
            return
        import tempfile

        with tempfile.TemporaryDirectory() as directory:
            copy = pathlib.Path(directory) / (path.name or "archive")
            _copy_tree(path, copy)
            yield copy

    dispatcher.register(IngotTraversable)(as_file)


def _copy_tree(source: IngotTraversable, destination: "Any") -> None:
    destination.mkdir()
    for child in source.iterdir():
        if child.is_dir():
            _copy_tree(child, destination / child.name)
        else:
            (destination / child.name).write_bytes(child.read_bytes())


_register_traversable()
_register_as_file()

if TYPE_CHECKING:
    _TraversableResources = TraversableResources
else:
    _TraversableResources = _traversable_resources()


class IngotResourceReader(_TraversableResources):
    """``get_resource_reader`` result: ``files()`` is the package's directory in the archive."""

    def __init__(self, finder: "IngotFinder", directory: str) -> None:
        self._finder = finder
        self._directory = directory

    def files(self) -> "Traversable":
        return IngotTraversable(self._finder, self._directory)


class FileTreeReader(_TraversableResources):
    """``get_resource_reader`` result for a package under the ``files`` policy: ``files()`` is its
    materialized directory in the extraction cache, a real ``pathlib.Path`` (so ``as_file`` hands
    out real paths without copying)."""

    def __init__(self, directory: str) -> None:
        self._directory = directory

    def files(self) -> "Traversable":
        import pathlib

        return pathlib.Path(self._directory)

    def resource_path(self, resource: str) -> str:
        # Python 3.10's importlib.resources.path() asks for this first; without it, it copies
        # the resource to a temporary file.
        import os

        path = os.path.join(self._directory, resource)
        if not os.path.isfile(path):
            raise FileNotFoundError(path)
        return path


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class IngotDistribution:
    """Placeholder replaced below by a subclass of ``importlib.metadata.Distribution``."""


def _distribution_class() -> "Callable[[IngotFinder, str], Distribution]":
    import importlib.metadata as metadata

    class IngotDistribution(metadata.Distribution):
        """A ``*.dist-info`` directory inside an ingot archive."""

        def __init__(self, finder: "IngotFinder", directory: str) -> None:
            self._finder = finder
            self._directory = directory

        def read_text(self, filename: str) -> "str | None":
            try:
                data = self._finder._read(_join(self._directory, filename))
            except (FileNotFoundError, ValueError):
                return None
            return data.decode("utf-8")

        def locate_file(self, path: "StrPath") -> "SimplePath":
            # RECORD paths are relative to the directory holding the dist-info: the archive root.
            # IngotTraversable lacks SimplePath's `parent`, which importlib.metadata does not use.
            return IngotTraversable(self._finder, _join("", str(path)))  # type: ignore[return-value]

        @property
        def _normalized_name(self) -> str:
            return _canonical(self._directory.partition("-")[0])

        def __repr__(self) -> str:
            return f"<IngotDistribution {self._directory!r} in {self._finder.path!r}>"

    return IngotDistribution


_DISTRIBUTION: "Callable[[IngotFinder, str], Distribution] | None" = None


def find_distributions(
    finder: "IngotFinder", context: "DistributionFinder.Context | None" = None
) -> "Iterator[Distribution]":
    """``DistributionFinder.find_distributions`` for an ingot finder."""
    global _DISTRIBUTION
    if _DISTRIBUTION is None:
        _DISTRIBUTION = _distribution_class()
    name = getattr(context, "name", None) if context is not None else None
    explicit_path = vars(context).get("path") if context is not None else None
    if explicit_path is not None and finder.path not in explicit_path:
        return iter(())
    wanted = _canonical(name) if name else None
    return iter(
        [
            _DISTRIBUTION(finder, directory)
            for directory in finder._dist_info_dirs()
            if wanted is None or _canonical(directory.partition("-")[0]) == wanted
        ]
    )
