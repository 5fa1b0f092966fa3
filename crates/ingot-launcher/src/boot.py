# The launcher's Python half: compiled by build.rs with the embedded interpreter, unmarshalled and
# run by the launcher after the interpreter's main initialization, in a namespace of its own (not
# a module in sys.modules). The launcher calls its functions.

import sys


def seal_import_system(finder, filesystem_imports=True):
    """Puts the archive's finder first on sys.meta_path and its path hook first in
    sys.path_hooks, and makes the archive the one sys.path entry (for pkgutil & co).

    With ``filesystem_imports`` (the default), importlib's PathFinder stays on sys.meta_path
    after the archive's finder and the standard path hooks stay after the archive's, so that
    modules are imported from directories the application puts on sys.path, as under python
    (sys.path starts as just the archive: nothing on disk is searched until the application
    adds a directory). Without it the archive is the only source of modules."""
    path_finders = [entry for entry in sys.meta_path
                    if getattr(entry, "__name__", None) == "PathFinder"]
    sys.meta_path[:] = [entry for entry in sys.meta_path if entry not in path_finders]
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    sys.meta_path.insert(0, finder)
    hooks = [finder.path_hook]
    if filesystem_imports:
        sys.meta_path.extend(path_finders)
        hooks += [hook for hook in sys.path_hooks if hook is not finder.path_hook]
        if not any(getattr(hook, "__name__", None) == "path_hook_for_FileFinder"
                   for hook in hooks):  # not where CPython 3.10-3.15 put it: add one
            import _frozen_importlib_external as external
            hooks.append(external.FileFinder.path_hook(*external._get_supported_file_loaders()))
    sys.path_hooks[:] = hooks
    sys.path_importer_cache.clear()
    sys.path[:] = [finder.path]


def serve_archive_paths(finder):
    """Read-only answers for the paths under the executable's own path, where the modules'
    ``__file__`` point (``<exe>/pkg/mod.py``): ``os.stat``/``lstat``/``access``, ``os.listdir``/
    ``scandir`` (hence ``os.walk``, ``glob``, ``os.path.exists``/``isfile``/``isdir``/
    ``getmtime``, ``pathlib``) and ``open``/``os.open`` for reading, so that a package that reads
    a file next to its modules works from memory.

    Only paths the system would refuse are answered: the executable is a file, so every path
    below it fails with ENOTDIR. Anything else (other paths, file descriptors, ``dir_fd``,
    writing, code that calls the system from C) goes to the system as before. The wrappers
    replace the functions of ``posix`` (which ``os`` copies when it is imported, later) and
    ``open`` of ``builtins`` and ``io``."""
    import builtins
    import io
    import posix

    root = finder.path
    prefix = root + "/"
    fspath, encoding = posix.fspath, sys.getfilesystemencoding()
    real = {name: getattr(posix, name)
            for name in ("stat", "lstat", "access", "listdir", "scandir", "open", "listxattr")}
    real_open = io.open
    read_only = ~(posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND
                  | getattr(posix, "O_DIRECTORY", 0))

    def inside(path):
        """The archive-relative path of ``path`` if it lies below the executable, else None."""
        if path.__class__ is not str:
            if path.__class__ is int or path is None:
                return None
            try:
                path = fspath(path)
            except TypeError:
                return None
            if path.__class__ is bytes:
                path = path.decode(encoding, "surrogateescape")
        if not path.startswith(prefix):
            return None
        parts = []
        for part in path[len(prefix):].split("/"):
            if part == "..":
                if not parts:
                    return None
                parts.pop()
            elif part and part != ".":
                parts.append(part)
        return "/".join(parts) if parts else None

    def kind(relative):
        """'file', 'dir' or None (not in the archive)."""
        if finder._isfile(relative):
            return "file"
        return "dir" if finder._isdir(relative) else None

    def missing(relative, path):
        return FileNotFoundError(2, "No such file or directory (in the executable)", path)

    def stat_of(relative, path):
        what = kind(relative)
        if what is None:
            raise missing(relative, path)
        exe = real["stat"](root)
        size = len(finder.get_data(prefix + relative)) if what == "file" else 0
        mode = 0o100444 if what == "file" else 0o40555
        times = {name: getattr(exe, name) for name in (
            "st_atime", "st_mtime", "st_ctime", "st_atime_ns", "st_mtime_ns", "st_ctime_ns")}
        times.update(st_blksize=4096, st_blocks=(size + 511) // 512)
        return posix.stat_result((mode, hash(relative) & 0x7FFFFFFFFFFF | 1 << 47, exe.st_dev,
                                  2 if what == "dir" else 1, exe.st_uid, exe.st_gid, size,
                                  int(exe.st_atime), int(exe.st_mtime), int(exe.st_ctime)), times)

    def names(relative, path):
        if kind(relative) != "dir":
            raise (missing(relative, path) if kind(relative) is None else
                   NotADirectoryError(20, "Not a directory (in the executable)", path))
        listed = finder._listdir(relative)
        if isinstance(path, bytes) or not isinstance(path, str) and isinstance(fspath(path), bytes):
            return [(name.encode(encoding, "surrogateescape"), is_dir) for name, is_dir in listed]
        return listed

    def content_fd(relative, path):
        """A descriptor of a memory file holding the file's bytes, positioned at its start."""
        if kind(relative) != "file":
            raise (missing(relative, path) if kind(relative) is None else
                   IsADirectoryError(21, "Is a directory (in the executable)", path))
        data = finder.get_data(prefix + relative)
        fd = posix.memfd_create(relative.rpartition("/")[2] or "ingot", posix.MFD_CLOEXEC)
        try:
            view, done = memoryview(data), 0
            while done < len(data):
                done += posix.write(fd, view[done:])
            posix.lseek(fd, 0, 0)
        except BaseException:
            posix.close(fd)
            raise
        return fd

    def stat(path, *, dir_fd=None, follow_symlinks=True):
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                return stat_of(relative, path)
        return real["stat"](path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    def lstat(path, *, dir_fd=None):
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                return stat_of(relative, path)
        return real["lstat"](path, dir_fd=dir_fd)

    def access(path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True):
        if dir_fd is None:
            relative = inside(path)
            if relative is not None:
                what = kind(relative)
                return what is not None and not mode & 2 and (what == "dir" or not mode & 1)
        return real["access"](path, mode, dir_fd=dir_fd, effective_ids=effective_ids,
                              follow_symlinks=follow_symlinks)

    def listdir(path=None):
        relative = inside(path)
        if relative is not None:
            return [name for name, _ in names(relative, path)]
        return real["listdir"]() if path is None else real["listdir"](path)

    def scandir(path=None):
        relative = inside(path)
        if relative is not None:
            return _ArchiveScandir(path, [(name, is_dir, stat) for name, is_dir in names(relative, path)])
        return real["scandir"]() if path is None else real["scandir"](path)

    def open_fd(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is None and not flags & ~read_only:
            relative = inside(path)
            if relative is not None:
                return content_fd(relative, path)
        return real["open"](path, flags, mode, dir_fd=dir_fd)

    def listxattr(path=None, *, follow_symlinks=True):
        relative = inside(path)
        if relative is not None:
            stat_of(relative, path)  # it exists; archive entries have no extended attributes
            return []
        return real["listxattr"](path, follow_symlinks=follow_symlinks)

    def open_file(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
                  closefd=True, opener=None):
        if opener is None and mode.__class__ is str and not set(mode) - set("rbtU"):
            relative = inside(file)
            if relative is not None:
                opened = real_open(content_fd(relative, file), mode, buffering, encoding, errors,
                                   newline)
                raw = getattr(getattr(opened, "buffer", opened), "raw", opened)
                raw.name = fspath(file)
                return opened
        return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)

    for function, name in ((stat, "stat"), (lstat, "lstat"), (access, "access"),
                           (listdir, "listdir"), (scandir, "scandir"), (open_fd, "open"),
                           (listxattr, "listxattr")):
        function.__name__ = function.__qualname__ = name
        function.__doc__ = real[name].__doc__
        setattr(posix, name, function)
    open_file.__name__ = open_file.__qualname__ = "open"
    open_file.__doc__ = real_open.__doc__
    builtins.open = io.open = open_file


class _ArchiveScandir:
    """``os.scandir``'s iterator over a directory of the executable's archive."""

    def __init__(self, path, entries):
        self._entries = iter([_ArchiveEntry(path, *entry) for entry in entries])

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def close(self):
        self._entries = iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _ArchiveEntry:
    """``os.DirEntry`` for an entry of a directory of the executable's archive."""

    __slots__ = ("name", "path", "_is_dir", "_stat")

    def __init__(self, directory, name, is_dir, stat):
        import posix

        directory = posix.fspath(directory)
        separator = b"/" if isinstance(directory, bytes) else "/"
        self.name, self._is_dir, self._stat = name, is_dir, stat
        self.path = directory + name if directory.endswith(separator) else directory + separator + name

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"<DirEntry {self.name!r}>"

    def is_dir(self, *, follow_symlinks=True):
        return self._is_dir

    def is_file(self, *, follow_symlinks=True):
        return not self._is_dir

    def is_symlink(self):
        return False

    def is_junction(self):
        return False

    def stat(self, *, follow_symlinks=True):
        return self._stat(self.path)

    def inode(self):
        return self._stat(self.path).st_ino


def run_module(name):
    """``python -m name``, as ``runpy._run_module_as_main(name, alter_argv=False)`` does it, without
    importing runpy and the two dozen modules it needs (about 2 ms of every start)."""
    spec = _main_spec(name)
    code = spec.loader.get_code(spec.name)
    if code is None:
        sys.exit(f"{sys.executable}: No code object available for {spec.name}")
    namespace = sys.modules["__main__"].__dict__
    namespace.update(__name__="__main__", __file__=spec.origin, __cached__=None, __doc__=None,
                     __loader__=spec.loader, __package__=spec.parent, __spec__=spec)
    exec(code, namespace)


def _main_spec(name):
    """The spec of the module ``-m name`` runs: ``name``, or ``name.__main__`` for a package."""
    import _frozen_importlib as bootstrap

    package = name.rpartition(".")[0]
    path = None
    if package:
        __import__(package)
        path = getattr(sys.modules[package], "__path__", None)
    spec = bootstrap._find_spec(name, path)
    if spec is None:
        sys.exit(f"{sys.executable}: No module named {name}")
    if spec.submodule_search_locations is not None:
        if name == "__main__" or name.endswith(".__main__"):
            sys.exit(f"{sys.executable}: Cannot use package as __main__ module")
        __import__(name)
        return _main_spec(name + ".__main__")
    return spec


def mark_forked_children(variable, depth, uid):
    """A forked child names itself, not its parent, in the variable that tells the processes it
    starts that the application started them (`<pid>:<depth>:<uid>`, as selfcall.rs writes it;
    read where /proc cannot tell)."""
    import posix  # built in and imported already, unlike os; putenv leaves os.environ alone

    def mark():
        posix.putenv(variable, f"{posix.getpid()}:{depth}:{uid}")

    posix.register_at_fork(after_in_child=mark)


def module_is_missing(name):
    """True if `python -m name` would find no module: neither in the archive nor (through the
    path finder) on sys.path. False when unsure (a parent package fails to import): runpy then
    says what is wrong."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except Exception:
        return False


def run_frozen_fork(argv):
    """``EXE --multiprocessing-fork name=value ...``, as multiprocessing.freeze_support() does."""
    kwds = {}
    for arg in argv[2:]:
        name, value = arg.split("=")
        kwds[name] = None if value == "None" else int(value)
    from multiprocessing.spawn import spawn_main
    spawn_main(**kwds)


def shutdown():
    """What Py_FinalizeEx does first, before the launcher finalizes live objects and flushes the
    standard streams: wait for non-daemon threads, run atexit handlers."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # as Py_FinalizeEx: reported, then on with the exit
            import traceback
            print("Exception ignored on threading shutdown:", file=sys.stderr)
            traceback.print_exc()
    import atexit
    atexit._run_exitfuncs()
