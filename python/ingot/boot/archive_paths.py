"""Read-only answers for paths under an ingot archive (``<archive>/pkg/data.txt``, where the
modules' ``__file__`` point): executables install them at start (the launcher compiles this file
after its boot.py), and a program that imports from an archive in a normal Python may call
``ingot.serve_archive_paths(finder)``.

Only names from ``sys`` and built-in modules are used at the top level: this code runs before
``os`` is imported, and the launcher compiles it into the namespace of its boot code.
"""

import sys

# No `typing` import at run time (see above). Mypy takes any module-level name `TYPE_CHECKING` as
# true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from os import DirEntry, stat_result
    from typing import IO, Any

    from _typeshed import FileDescriptorOrPath, StrOrBytesPath

    from ingot._ingot import IngotFinder


def serve_archive_paths(finder: "IngotFinder") -> None:
    """Read-only answers for the paths under the executable's own path, where the modules'
    ``__file__`` point (``<exe>/pkg/mod.py``): ``os.stat``/``lstat``/``access``, ``os.listdir``/
    ``scandir`` (hence ``os.walk``, ``glob``, ``os.path.exists``/``isfile``/``isdir``/
    ``getmtime``, ``pathlib``) and ``open``/``os.open`` for reading, so that a package that reads
    a file next to its modules works from memory. ``finder`` is an ``ingot.IngotFinder``; its
    ``path`` is the executable (or the archive file).

    Only paths the system would refuse are answered: the executable is a file, so every path
    below it fails with ENOTDIR. Anything else (other paths, file descriptors, ``dir_fd``,
    writing, code that calls the system from C) goes to the system as before. The wrappers
    replace the functions of ``posix`` (which ``os`` copies when it is imported, later; or of
    ``os`` too, if it is imported already) and ``open`` of ``builtins`` and ``io``."""
    import builtins
    import io
    import posix

    # Everything below captures the originals before any is replaced: a wrapper calls the
    # function it replaced, never its own replacement.
    tree = _ArchiveTree(finder)
    inside = _archive_inside(tree.prefix, tree.fspath, tree.encoding)
    stats = _archive_stat_wrappers(inside, tree)
    stat = stats[0][1]  # the wrapper of posix.stat, which scandir's entries call
    wrappers = stats + _archive_read_wrappers(inside, tree, stat)
    open_file = _archive_open(inside, tree)
    if sys.version_info < (3, 11):
        # 3.10's pathlib keeps os's functions and io.open as class attributes (_NormalAccessor):
        # a Python function there would be bound as a method and get the accessor as its first
        # argument, as builtin functions never do. A staticmethod (callable since 3.10) is not.
        wrappers = [(name, staticmethod(function), real) for name, function, real in wrappers]
        open_file = staticmethod(open_file)
    os_module = sys.modules.get("os")
    for name, function, real in wrappers:
        setattr(posix, name, function)
        if os_module is not None and getattr(os_module, name, None) is real:
            # os was imported already (python without -S; not an executable's start): its copy too,
            # and where os.supports_* name the original, the wrapper (which passes fds through).
            setattr(os_module, name, function)
            for group in (
                "supports_fd",
                "supports_dir_fd",
                "supports_follow_symlinks",
                "supports_effective_ids",
            ):
                members = getattr(os_module, group, None)
                if isinstance(members, set) and real in members:
                    members.add(function)
    builtins.open = io.open = open_file  # type: ignore[assignment]  # one signature for the overloads
    # io.open_code (PEP 578), which importlib's SourceFileLoader.get_data reads through: the
    # plugins a package loads by path (spec_from_file_location(name, <exe>/pkg/plugins/x.py)).
    # importlib calls it as an attribute of _io at each read.
    import _io

    real_open_code = _io.open_code

    def open_code(path: str) -> "IO[bytes]":
        if path.__class__ is str and inside(path) is not None:
            return open_file(path, "rb")
        return real_open_code(path)

    open_code.__name__ = open_code.__qualname__ = "open_code"
    _io.open_code = io.open_code = open_code


def _archive_inside(
    prefix: str, fspath: "Callable[[Any], str | bytes]", encoding: str
) -> "Callable[[FileDescriptorOrPath | None], str | None]":
    """``inside(path)``: the archive-relative path of ``path`` if it lies below ``prefix`` (the
    executable's path and ``/``), else None. Every wrapped call asks it first: it is a closure
    over its constants, and a path elsewhere costs a type check and a ``startswith``."""

    def inside(path: "FileDescriptorOrPath | None") -> "str | None":
        """The archive-relative path of ``path`` if it lies below the executable, else None."""
        if not isinstance(path, str):
            if isinstance(path, int) or path is None:
                return None
            try:
                path = fspath(path)
            except TypeError:
                return None
            if isinstance(path, bytes):
                path = path.decode(encoding, "surrogateescape")
        if not path.startswith(prefix):
            return None
        parts: list[str] = []
        for part in path[len(prefix) :].split("/"):
            if part == "..":
                if not parts:
                    return None
                parts.pop()
            elif part and part != ".":
                parts.append(part)
        relative = "/".join(parts)
        if not relative or not relative.isascii():
            try:  # archive names are UTF-8: a name with surrogates is not in it
                relative.encode("utf-8")
            except UnicodeEncodeError:
                return None
        return relative or None

    return inside


class _ArchiveTree:
    """The archive's files and directories as the wrappers answer for them, by archive-relative
    path (``inside()``'s answer); ``path`` is what the caller gave, for error messages."""

    def __init__(self, finder: "IngotFinder") -> None:
        import posix

        self.finder = finder
        self.root = finder.path
        self.prefix = self.root + "/"
        self.fspath, self.encoding = posix.fspath, sys.getfilesystemencoding()
        self.real_stat = posix.stat

    def kind(self, relative: str) -> "str | None":
        """'file', 'dir' or None (not in the archive)."""
        if self.finder._isfile(relative):
            return "file"
        return "dir" if self.finder._isdir(relative) else None

    def missing(self, path: object) -> FileNotFoundError:
        return FileNotFoundError(2, "No such file or directory (in the executable)", path)

    def stat_of(self, relative: str, path: object) -> "stat_result":
        import posix

        what = self.kind(relative)
        if what is None:
            raise self.missing(path)
        exe = self.real_stat(self.root)
        size = len(self.finder.get_data(self.prefix + relative)) if what == "file" else 0
        mode = 0o100444 if what == "file" else 0o40555
        times = {
            name: getattr(exe, name)
            for name in (
                "st_atime",
                "st_mtime",
                "st_ctime",
                "st_atime_ns",
                "st_mtime_ns",
                "st_ctime_ns",
            )
        }
        times.update(st_blksize=4096, st_blocks=(size + 511) // 512)
        return posix.stat_result(
            (
                mode,
                hash(relative) & 0x7FFFFFFFFFFF | 1 << 47,
                exe.st_dev,
                2 if what == "dir" else 1,
                exe.st_uid,
                exe.st_gid,
                size,
                int(exe.st_atime),
                int(exe.st_mtime),
                int(exe.st_ctime),
            ),
            times,
        )

    def names(
        self, relative: str, path: "FileDescriptorOrPath | None"
    ) -> "list[tuple[str, bool]] | list[tuple[bytes, bool]]":
        if self.kind(relative) != "dir":
            raise (
                self.missing(path)
                if self.kind(relative) is None
                else NotADirectoryError(20, "Not a directory (in the executable)", path)
            )
        listed = self.finder._listdir(relative)
        if isinstance(path, bytes) or (
            # inside() answered for `path`: it is no int or None
            not isinstance(path, str) and isinstance(self.fspath(path), bytes)  # type: ignore[arg-type, type-var]
        ):
            return [
                (name.encode(self.encoding, "surrogateescape"), is_dir) for name, is_dir in listed
            ]
        return listed

    def content_fd(self, relative: str, path: object) -> int:
        """A descriptor of a memory file holding the file's bytes, positioned at its start."""
        if self.kind(relative) != "file":
            raise (
                self.missing(path)
                if self.kind(relative) is None
                else IsADirectoryError(21, "Is a directory (in the executable)", path)
            )
        # (by system call in the importer: a CPython configured for glibc 2.17 has no
        # os.memfd_create)
        return self.finder._memory_file(relative)


def _archive_wrapper(
    name: str, function: "Callable[..., Any]", real: "Callable[..., Any]"
) -> "tuple[str, Callable[..., Any], Callable[..., Any]]":
    """(name, wrapper, original), the wrapper named and documented as the original."""
    function.__name__ = function.__qualname__ = name
    function.__doc__ = real.__doc__
    return name, function, real


def _archive_stat_wrappers(
    inside: "Callable[[FileDescriptorOrPath | None], str | None]", tree: _ArchiveTree
) -> "list[tuple[str, Callable[..., Any], Callable[..., Any]]]":
    """The wrappers of ``posix``'s ``stat``, ``lstat``, ``access`` and ``listxattr`` for paths of
    ``tree`` (:func:`_archive_wrapper`): closures over the originals, taken now."""
    import posix

    real_stat, real_lstat, real_access = posix.stat, posix.lstat, posix.access
    real_listxattr = posix.listxattr

    def stat(
        path: "FileDescriptorOrPath", *, dir_fd: "int | None" = None, follow_symlinks: bool = True
    ) -> "stat_result":
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                return tree.stat_of(relative, path)
        return real_stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    def lstat(path: "StrOrBytesPath", *, dir_fd: "int | None" = None) -> "stat_result":
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                return tree.stat_of(relative, path)
        return real_lstat(path, dir_fd=dir_fd)

    def access(
        path: "FileDescriptorOrPath",
        mode: int,
        *,
        dir_fd: "int | None" = None,
        effective_ids: bool = False,
        follow_symlinks: bool = True,
    ) -> bool:
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                what = tree.kind(relative)
                return what is not None and not mode & 2 and (what == "dir" or not mode & 1)
        return real_access(
            path, mode, dir_fd=dir_fd, effective_ids=effective_ids, follow_symlinks=follow_symlinks
        )

    def listxattr(
        path: "FileDescriptorOrPath | None" = None, *, follow_symlinks: bool = True
    ) -> "list[str]":
        relative = inside(path)
        if relative is not None:
            tree.stat_of(relative, path)  # it exists; archive entries have no extended attributes
            return []
        return real_listxattr(path, follow_symlinks=follow_symlinks)

    return [
        _archive_wrapper("stat", stat, real_stat),
        _archive_wrapper("lstat", lstat, real_lstat),
        _archive_wrapper("access", access, real_access),
        _archive_wrapper("listxattr", listxattr, real_listxattr),
    ]


def _archive_read_wrappers(
    inside: "Callable[[FileDescriptorOrPath | None], str | None]",
    tree: _ArchiveTree,
    stat: "Callable[..., stat_result]",
) -> "list[tuple[str, Callable[..., Any], Callable[..., Any]]]":
    """The wrappers of ``posix``'s ``listdir``, ``scandir`` and ``open`` for paths of ``tree``
    (:func:`_archive_wrapper`): closures over the originals, taken now. ``stat`` is the wrapper
    of ``posix.stat``, which ``scandir``'s entries call."""
    import posix

    real_listdir, real_scandir, real_os_open = posix.listdir, posix.scandir, posix.open
    read_only = ~(
        posix.O_WRONLY
        | posix.O_RDWR
        | posix.O_CREAT
        | posix.O_TRUNC
        | posix.O_APPEND
        | getattr(posix, "O_DIRECTORY", 0)
    )

    def listdir(
        path: "FileDescriptorOrPath | None" = None,
    ) -> "list[str] | list[bytes] | list[str | bytes]":
        relative = inside(path)
        if relative is not None:
            return [name for name, _ in tree.names(relative, path)]
        return real_listdir() if path is None else real_listdir(path)

    def scandir(
        path: "FileDescriptorOrPath | None" = None,
    ) -> "Iterator[_ArchiveEntry] | Iterator[DirEntry[str]] | Iterator[DirEntry[bytes]]":
        relative = inside(path)
        if relative is not None:
            return _ArchiveScandir(
                path,  # type: ignore[arg-type]  # inside() answered for it: no int or None
                [(name, is_dir, stat) for name, is_dir in tree.names(relative, path)],
            )
        return real_scandir() if path is None else real_scandir(path)

    def open_fd(
        path: "StrOrBytesPath", flags: int, mode: int = 0o777, *, dir_fd: "int | None" = None
    ) -> int:
        if dir_fd is None and not flags & ~read_only:
            relative = inside(path)
            if relative is not None:
                return tree.content_fd(relative, path)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    return [
        _archive_wrapper("listdir", listdir, real_listdir),
        _archive_wrapper("scandir", scandir, real_scandir),
        _archive_wrapper("open", open_fd, real_os_open),
    ]


def _archive_open(
    inside: "Callable[[FileDescriptorOrPath | None], str | None]", tree: _ArchiveTree
) -> "Callable[..., IO[Any]]":
    """The wrapper of ``open`` (``builtins`` and ``io``): a closure over the original, taken now."""
    import io

    real_open = io.open
    fspath = tree.fspath

    def open_file(
        file: "FileDescriptorOrPath",
        mode: str = "r",
        buffering: int = -1,
        encoding: "str | None" = None,
        errors: "str | None" = None,
        newline: "str | None" = None,
        closefd: bool = True,
        opener: "Callable[[str, int], int] | None" = None,
    ) -> "IO[Any]":
        if opener is None and mode.__class__ is str and not set(mode) - set("rbtU"):
            relative = inside(file)
            if relative is not None:
                opened = real_open(
                    tree.content_fd(relative, file), mode, buffering, encoding, errors, newline
                )
                raw = getattr(getattr(opened, "buffer", opened), "raw", opened)
                # The raw FileIO's name is writable (IO's is not); inside() took `file`: no int.
                raw.name = fspath(file)  # type: ignore[misc, arg-type]
                return opened
        return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)

    open_file.__name__ = open_file.__qualname__ = "open"
    open_file.__doc__ = real_open.__doc__
    return open_file


class _ArchiveScandir:
    """``os.scandir``'s iterator over a directory of the executable's archive."""

    def __init__(
        self,
        path: "StrOrBytesPath",
        entries: "list[tuple[str | bytes, bool, Callable[[str | bytes], stat_result]]]",
    ) -> None:
        self._entries = iter([_ArchiveEntry(path, *entry) for entry in entries])

    def __iter__(self) -> "_ArchiveScandir":
        return self

    def __next__(self) -> "_ArchiveEntry":
        return next(self._entries)

    def close(self) -> None:
        self._entries = iter(())

    def __enter__(self) -> "_ArchiveScandir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ArchiveEntry:
    """``os.DirEntry`` for an entry of a directory of the executable's archive."""

    __slots__ = ("_is_dir", "_stat", "name", "path")

    name: "str | bytes"
    path: "str | bytes"

    def __init__(
        self,
        directory: "StrOrBytesPath",
        name: "str | bytes",
        is_dir: bool,
        stat: "Callable[[str | bytes], stat_result]",
    ) -> None:
        import posix

        directory = posix.fspath(directory)
        separator = b"/" if isinstance(directory, bytes) else "/"
        self.name, self._is_dir, self._stat = name, is_dir, stat
        # `name` is bytes exactly when `directory` is (names() lists bytes for a bytes path).
        self.path = (
            directory + name if directory.endswith(separator) else directory + separator + name  # type: ignore[operator, arg-type]
        )

    def __fspath__(self) -> "str | bytes":
        return self.path

    def __repr__(self) -> str:
        return f"<DirEntry {self.name!r}>"

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._is_dir

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self._is_dir

    def is_symlink(self) -> bool:
        return False

    def is_junction(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> "stat_result":
        return self._stat(self.path)

    def inode(self) -> int:
        return self._stat(self.path).st_ino
