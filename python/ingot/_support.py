"""Cold-path support for the ingot importer: ``importlib.resources`` and ``importlib.metadata``.

The finder (Rust, ``ingot._ingot``) serves imports; this module is compiled only when a program
first asks for a resource reader or for distributions. It only calls the finder's underscore
methods, which work on paths relative to the archive root.
"""

import io
import posixpath
import re

__all__ = ["IngotDistribution", "IngotResourceReader", "IngotTraversable", "find_distributions"]


def _join(directory, *parts):
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

    def __init__(self, finder, path):
        self._finder = finder
        self._path = path

    @property
    def name(self):
        return posixpath.basename(self._path)

    def __str__(self):
        return f"{self._finder.path}/{self._path}" if self._path else self._finder.path

    def __repr__(self):
        return f"IngotTraversable({str(self)!r})"

    def __eq__(self, other):
        if not isinstance(other, IngotTraversable):
            return NotImplemented
        return self._finder is other._finder and self._path == other._path

    def __hash__(self):
        return hash((id(self._finder), self._path))

    def iterdir(self):
        if not self.is_dir():
            raise NotADirectoryError(f"not a directory in ingot archive: {self}")
        for name, _is_dir in self._finder._listdir(self._path):
            yield IngotTraversable(self._finder, _join(self._path, name))

    def is_dir(self):
        return self._finder._isdir(self._path)

    def is_file(self):
        return bool(self._path) and self._finder._isfile(self._path)

    def exists(self):
        return self.is_file() or self.is_dir()

    def joinpath(self, *descendants):
        return IngotTraversable(self._finder, _join(self._path, *descendants))

    def __truediv__(self, child):
        return self.joinpath(child)

    def read_bytes(self):
        if self.is_dir():
            raise IsADirectoryError(f"is a directory in ingot archive: {self}")
        return self._finder._read(self._path)

    def read_text(self, encoding=None, errors=None):
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def open(self, mode="r", *args, **kwargs):
        if mode not in ("r", "rb", "rt"):
            raise ValueError(f"ingot archive files are read-only; mode {mode!r} is not supported")
        stream = io.BytesIO(self.read_bytes())
        if "b" in mode:
            return stream
        if not args and "encoding" not in kwargs:
            kwargs["encoding"] = "utf-8"
        return io.TextIOWrapper(stream, *args, **kwargs)


def _register_traversable():
    try:
        from importlib.resources.abc import Traversable  # 3.11+
    except ImportError:
        from importlib.abc import Traversable  # 3.10
    Traversable.register(IngotTraversable)


def _traversable_resources():
    try:
        from importlib.resources.abc import TraversableResources  # 3.11+
    except ImportError:
        from importlib.abc import TraversableResources  # 3.10
    return TraversableResources


_register_traversable()


class IngotResourceReader(_traversable_resources()):
    """``get_resource_reader`` result: ``files()`` is the package's directory in the archive."""

    def __init__(self, finder, directory):
        self._finder = finder
        self._directory = directory

    def files(self):
        return IngotTraversable(self._finder, self._directory)


class FileTreeReader(_traversable_resources()):
    """``get_resource_reader`` result for a package under the ``files`` policy: ``files()`` is its
    materialized directory in the extraction cache, a real ``pathlib.Path`` (so ``as_file`` hands
    out real paths without copying)."""

    def __init__(self, directory):
        self._directory = directory

    def files(self):
        import pathlib

        return pathlib.Path(self._directory)

    def resource_path(self, resource):
        # Python 3.10's importlib.resources.path() asks for this first; without it, it copies
        # the resource to a temporary file.
        import os

        path = os.path.join(self._directory, resource)
        if not os.path.isfile(path):
            raise FileNotFoundError(path)
        return path


def _canonical(name):
    return re.sub(r"[-_.]+", "_", name).lower()


class IngotDistribution:
    """Placeholder replaced below by a subclass of ``importlib.metadata.Distribution``."""


def _distribution_class():
    import importlib.metadata as metadata

    class IngotDistribution(metadata.Distribution):
        """A ``*.dist-info`` directory inside an ingot archive."""

        def __init__(self, finder, directory):
            self._finder = finder
            self._directory = directory

        def read_text(self, filename):
            try:
                data = self._finder._read(_join(self._directory, filename))
            except (FileNotFoundError, ValueError):
                return None
            return data.decode("utf-8")

        def locate_file(self, path):
            # RECORD paths are relative to the directory holding the dist-info: the archive root.
            return IngotTraversable(self._finder, _join("", str(path)))

        @property
        def _normalized_name(self):
            return _canonical(self._directory.partition("-")[0])

        def __repr__(self):
            return f"<IngotDistribution {self._directory!r} in {self._finder.path!r}>"

    return IngotDistribution


_DISTRIBUTION = None


def find_distributions(finder, context=None):
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
