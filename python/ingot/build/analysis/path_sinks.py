"""The calls that need a real file system when a path built from ``__file__`` reaches them, as
:mod:`ingot.build.analysis.filescan` reads code: functions (:data:`CALL_SINKS`) and ``pathlib``
methods (:data:`PATH_METHOD_SINKS`), those of them an executable answers from its archive
(:data:`SERVED_FROM_ARCHIVE`), and the functions and methods through which a path stays one."""

from __future__ import annotations

__all__ = [
    "CALL_SINKS",
    "MODULE_PATH_NAMES",
    "NOT_PATH_ATTRIBUTES",
    "NOT_SERVED_CALLS",
    "NOT_SERVED_METHODS",
    "PATH_FUNCTIONS",
    "PATH_METHODS",
    "PATH_METHOD_SINKS",
    "SERVED_FROM_ARCHIVE",
    "SOURCE_FUNCTIONS",
]

#: Functions that need a real file (or directory) when an argument is built from ``__file__``,
#: by qualified name (``posixpath``/``ntpath`` count as ``os.path``).
CALL_SINKS = frozenset(
    {
        "open",
        "io.open",
        "io.FileIO",
        "codecs.open",
        "os.open",
        "gzip.open",
        "bz2.open",
        "lzma.open",
        "tarfile.open",
        "zipfile.ZipFile",
        "sqlite3.connect",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "os.stat",
        "os.lstat",
        "os.access",
        "os.chdir",
        "os.path.exists",
        "os.path.lexists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.islink",
        "os.path.getsize",
        "os.path.getmtime",
        "os.path.getctime",
        "os.path.getatime",
        "glob.glob",
        "glob.iglob",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.move",
        "ctypes.CDLL",
        "ctypes.PyDLL",
        "ctypes.WinDLL",
        "ctypes.OleDLL",
        "ctypes.cdll.LoadLibrary",
        "ctypes.pydll.LoadLibrary",
        "ctypes.windll.LoadLibrary",
        "ctypes.oledll.LoadLibrary",
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
        "importlib.util.spec_from_file_location",
        "importlib.machinery.SourceFileLoader",
        "importlib.machinery.ExtensionFileLoader",
        "runpy.run_path",
        "imp.load_source",
        "imp.load_dynamic",
    }
)

#: Methods that need a real file when called on a path built from ``__file__`` (reported as
#: ``pathlib.Path.<method>``).
PATH_METHOD_SINKS = frozenset(
    {
        "open",
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "iterdir",
        "glob",
        "rglob",
        "exists",
        "is_file",
        "is_dir",
        "is_symlink",
        "stat",
        "lstat",
        "readlink",
        "touch",
        "mkdir",
        "unlink",
    }
)

#: The sinks an executable answers for paths under its own path (read-only, from the archive:
#: the launcher's ``serve_archive_paths``): reading, listing and testing files, and loading a
#: shared library by path through ``ctypes`` (the launcher's ``dlopen``, from memory). The others
#: (writing, handing the path to other C code or to another process) need the ``files`` policy.
NOT_SERVED_CALLS = frozenset(
    {
        *(name for name in CALL_SINKS if name.startswith(("subprocess.", "imp."))),
        "ctypes.WinDLL",
        "ctypes.OleDLL",
        "ctypes.windll.LoadLibrary",
        "ctypes.oledll.LoadLibrary",
        "importlib.machinery.ExtensionFileLoader",
        "importlib.machinery.SourceFileLoader",
        "importlib.util.spec_from_file_location",
        "io.FileIO",
        "os.chdir",
        "os.popen",
        "os.system",
        "runpy.run_path",
        "shutil.move",
        "sqlite3.connect",
    }
)
NOT_SERVED_METHODS = frozenset(
    {"mkdir", "readlink", "touch", "unlink", "write_bytes", "write_text"}
)
SERVED_FROM_ARCHIVE = (CALL_SINKS - NOT_SERVED_CALLS) | {
    f"pathlib.Path.{method}" for method in PATH_METHOD_SINKS - NOT_SERVED_METHODS
}

# Functions whose result is a path when an argument is one.
PATH_FUNCTIONS = frozenset(
    {
        "os.path.dirname",
        "os.path.abspath",
        "os.path.realpath",
        "os.path.join",
        "os.path.normpath",
        "os.path.normcase",
        "os.path.expanduser",
        "os.path.expandvars",
        "os.path.split",
        "os.path.splitext",
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "pathlib.PurePosixPath",
        "pathlib.WindowsPath",
        "pathlib.PureWindowsPath",
        "str",
        "bytes",
        "os.fspath",
        "os.fsencode",
        "os.fsdecode",
    }
)
# Methods of a path (str or pathlib) whose result is still a path.
PATH_METHODS = frozenset(
    {
        "resolve",
        "absolute",
        "joinpath",
        "with_name",
        "with_suffix",
        "with_stem",
        "expanduser",
        "as_posix",
        "__fspath__",
        "__str__",
        "replace",
        "strip",
        "rstrip",
        "lstrip",
        "split",
        "rsplit",
        "partition",
        "rpartition",
        "removesuffix",
        "encode",
        "decode",
    }
)
# Attributes of a path that are no longer a path to a file of the package.
NOT_PATH_ATTRIBUTES = frozenset(
    {"name", "stem", "suffix", "suffixes", "anchor", "drive", "root", "parts"}
)
SOURCE_FUNCTIONS = frozenset({"inspect.getfile", "inspect.getsourcefile", "inspect.getabsfile"})
MODULE_PATH_NAMES = frozenset({"__file__", "__path__", "__cached__"})
# A file without any of these has nothing to find (checked before parsing, for speed).
