"""Finding packages whose native code opens the package's own files by path: what the files
policy is for, found without configuration (issue 37, item 4).

C cannot read from the archive: a database a C library opens (PROJ's ``proj.db``), a font an
extension module reopens by name (pygame's ``freesansbold.ttf``) or a directory of plugins a
library lists and loads (Qt's ``plugins/platforms``) must be real files. Such code names what it
opens: its C strings hold the file's name, or the plugin directory's name after a slash.

    from ingot.build.analysis.nativefiles import opens_own_files
    opens_own_files(Path("site"), "pyproj")
    # 'libproj-1eb8c554.so.25.9.5.1 names proj.db'

The scan reads the package's native images (and those of its wheel's ``<name>.libs``) with
:func:`ingot._ingot.binary_path_names` and compares the last components of their C strings with

- the names of the package's data files: not code, sources, headers or licences, with an
  extension and at least 5 characters;
- the names of its plugin directories: directories holding shared libraries that are not
  extension modules and that none of the package's images needs (``DT_NEEDED``), named after a
  slash (``"/platforms"``).

Cython modules are not read: their C strings are the Python code's (``"roots.pem"`` handed to
``pkgutil.get_data``, which the archive answers), not C's. A library a Cython module hands a path
to names the file itself (``libproj`` names ``proj.db``). The scan never fails a build: an image
that cannot be read is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from ingot._ingot import binary_path_names, elf_dynamic

__all__ = ["opens_own_files"]

#: Suffixes of files that are not data a C library opens: Python code, sources, headers, build
#: files and documents.
NOT_DATA = frozenset(
    {
        ".py", ".pyi", ".pyc", ".pyo", ".pyx", ".pxd", ".pxi", ".typed",
        ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".cu", ".f", ".f90",
        ".rs", ".go", ".java", ".js", ".ts", ".map",
        ".md", ".rst", ".txt", ".html", ".htm",
        ".a", ".o", ".lib", ".la", ".cmake", ".pc", ".in", ".sh", ".bat",
    }
)  # fmt: skip

#: Files no larger than this are not images worth reading for names (stubs, empty files).
_SMALLEST_IMAGE = 1024


def opens_own_files(root: Path, package: str) -> str | None:
    """Why the native code of top-level ``package`` (a directory in ``root``) opens its
    package's files by path (``"libproj.so.25 names proj.db"``), or None."""
    directory = root / package
    if not directory.is_dir():
        return None
    images: list[Path] = []
    data: set[str] = set()
    libraries: dict[Path, list[str]] = {}  # directory -> its shared libraries (not extensions)
    trees = [directory]
    libs = root / f"{package}.libs"
    if libs.is_dir():
        trees.append(libs)
    for tree in trees:
        for base, _dirs, files in os.walk(tree):
            for name in files:
                path = Path(base, name)
                if path.is_symlink():
                    continue
                if _is_image(path):
                    images.append(path)
                    if tree == directory and not _is_extension(name):
                        libraries.setdefault(path.parent, []).append(name)
                elif _is_data(name):
                    data.add(name)
    if not images or not (data or libraries):
        return None
    needed: set[str] = set()
    names: dict[Path, set[str]] = {}
    for image in sorted(images, key=lambda path: (path.name, str(path))):
        try:
            content = image.read_bytes()
            needed.update(os.path.basename(name) for name in elf_dynamic(content)["needed"])
        except (OSError, ValueError):
            continue
        if b"__pyx_" not in content:  # (a Cython module's strings are its Python code's)
            names[image] = binary_path_names(content)
    plugin_dirs = {
        f"{folder.name}/"
        for folder, found in libraries.items()
        if folder != directory and len(folder.name) >= 4 and not set(found) & needed
    }
    wanted = data | plugin_dirs
    for image, strings in names.items():
        named = sorted(strings & wanted)
        if named:
            shown = ", ".join(
                f"the plugin directory {name}" if name.endswith("/") else name for name in named[:3]
            )
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            return f"{image.name} names {shown}{more}"
    return None


def _is_image(path: Path) -> bool:
    name = path.name
    if not (name.endswith(".so") or ".so." in name):
        return False
    try:
        if path.stat().st_size < _SMALLEST_IMAGE:
            return False
        with path.open("rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def _is_extension(name: str) -> bool:
    return ".cpython-" in name or ".abi3." in name or name.split(".")[-2:-1] == ["pypy"]


def _is_data(name: str) -> bool:
    suffix = os.path.splitext(name)[1]
    if not suffix or len(name) < 5 or suffix.lower() in NOT_DATA:
        return False
    return not name.upper().startswith(("LICEN", "COPYING", "README", "NOTICE", "AUTHORS"))
