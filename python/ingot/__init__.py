"""ingot: cast a Python application into one executable that imports everything from memory.

The importer works in any Python 3.10+::

    import ingot
    ingot.install("app.ingot")   # the finder first on sys.meta_path, its path hook on sys.path_hooks
    import my_app                # served from the memory-mapped archive

``ingot pack`` (see ``python -m ingot --help``) writes archives. ``serve_archive_paths(finder)``
answers reads of paths under the archive (``open(mod.__file__)``) as executables do.
"""

import sys

from ingot._ingot import (
    FORMAT_VERSION,
    ArchiveError,
    ArchiveWriter,
    IngotFinder,
    IngotPathEntryFinder,
    __version__,
    elf_dynamic,
    loadable_image,
)
from ingot.boot.archive_paths import serve_archive_paths

# No `os` import at run time: `import ingot` in a `python -I -S` process imports only ingot's own
# modules (tests/test_stdlib.py counts on it). Mypy takes any `TYPE_CHECKING` name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

__all__ = [
    "FORMAT_VERSION",
    "ArchiveError",
    "ArchiveWriter",
    "IngotFinder",
    "IngotPathEntryFinder",
    "__version__",
    "elf_dynamic",
    "install",
    "loadable_image",
    "serve_archive_paths",
    "uninstall",
]


def install(path: "str | os.PathLike[str]", *, index: int = 0) -> IngotFinder:
    """Opens the archive at `path` and puts its finder on ``sys.meta_path`` (at `index`) and its
    path hook first on ``sys.path_hooks``. Returns the finder."""
    finder = IngotFinder(path)
    sys.meta_path.insert(index, finder)
    sys.path_hooks.insert(0, finder.path_hook)
    sys.path_importer_cache.clear()
    return finder


def uninstall(finder: IngotFinder) -> None:
    """Removes a finder installed by :func:`install`."""
    sys.meta_path[:] = [entry for entry in sys.meta_path if entry is not finder]
    sys.path_hooks[:] = [
        hook for hook in sys.path_hooks if getattr(hook, "__self__", None) is not finder
    ]
    sys.path_importer_cache.clear()
