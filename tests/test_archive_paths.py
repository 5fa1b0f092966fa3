"""Paths under an executable (`<exe>/pkg/data.txt`, where `__file__` points) answered read-only
from the archive (boot.py `serve_archive_paths`): a package that reads, lists or tests the files
next to its modules gets what python gives it from a site-packages directory.

The same probe runs twice: as an executable built with the launcher, and under this checkout's
python from the directory the archive was packed from. Its output names paths relative to the
package, so the two must be equal.
"""

import gzip
import json
import subprocess
import sys

import pytest

from test_launcher import PACK, launcher, launcher_python, run  # noqa: F401 (fixtures)

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

PROBE = r"""
import glob, gzip, json, os, pathlib, shutil, stat, sys, tempfile, zipfile

from reader.attempt import attempt, out
here = pathlib.Path(__file__).parent
data = here / "data"
rel = lambda path: os.path.relpath(path, here)

attempt("read_text", lambda: (data / "notes.txt").read_text(encoding="utf-8"))
attempt("read_bytes", lambda: (data / "sub" / "blob.bin").read_bytes().hex())
attempt("open_text", lambda: open(os.path.join(os.path.dirname(__file__), "data", "notes.txt")).readlines())
attempt("open_binary_name", lambda: rel(open(data / "notes.txt", "rb").name))
attempt("open_unbuffered", lambda: open(data / "notes.txt", "rb", buffering=0).read(4).decode())
attempt("open_bytes_path", lambda: open(os.fsencode(data / "notes.txt"), "rb").read(4).decode())
attempt("stat", lambda: [stat.S_ISREG((data / "notes.txt").stat().st_mode),
                         (data / "notes.txt").stat().st_size, os.path.getsize(data / "sub" / "blob.bin"),
                         stat.S_ISDIR(os.stat(data).st_mode), os.path.getmtime(data / "notes.txt") > 0])
attempt("tests", lambda: [os.path.exists(data / "notes.txt"), os.path.isfile(data / "notes.txt"),
                          os.path.isdir(data / "sub"), os.path.isdir(data / "notes.txt"),
                          os.path.exists(data / "nothing"), os.path.exists(data / ".." / "data" / "notes.txt"),
                          (data / "sub").is_dir(), (data / "nothing").exists(),
                          os.access(data / "notes.txt", os.R_OK), os.access(data / "sub", os.X_OK)])
attempt("listdir", lambda: sorted(os.listdir(data)))
attempt("listdir_bytes", lambda: sorted(name.decode() for name in os.listdir(os.fsencode(data))))
attempt("listdir_package", lambda: sorted(name for name in os.listdir(here) if not name.startswith("__pycache__")))
attempt("iterdir", lambda: sorted(path.name for path in data.iterdir()))
attempt("scandir", lambda: sorted((entry.name, entry.is_dir(), entry.is_file(), rel(entry.path))
                                  for entry in os.scandir(data)))
attempt("walk", lambda: sorted((rel(top), sorted(dirs), sorted(files)) for top, dirs, files in os.walk(data)))
attempt("glob", lambda: sorted(rel(path) for path in glob.glob(str(data / "**" / "*"), recursive=True)))
attempt("pathlib_glob", lambda: sorted(rel(path) for path in data.glob("*.txt")))
attempt("gzip", lambda: gzip.open(data / "compressed.gz").read().decode())
attempt("realpath", lambda: rel(os.path.realpath(data / "sub" / ".." / "notes.txt")))


def directory_as_file():
    # As humanize finds its locale directory: the path, kept after the block.
    import importlib.resources
    with importlib.resources.as_file(importlib.resources.files("reader") / "data") as directory:
        kept = directory
    return [sorted(os.listdir(kept)), (kept / "notes.txt").read_text(encoding="utf-8")]


attempt("as_file_directory", directory_as_file)

with tempfile.TemporaryDirectory() as scratch:
    attempt("copyfile", lambda: open(shutil.copyfile(data / "sub" / "blob.bin", os.path.join(scratch, "b")), "rb").read().hex())
    attempt("copytree", lambda: sorted(os.listdir(shutil.copytree(data, os.path.join(scratch, "tree")))))
    attempt("make_zip", lambda: sorted(zipfile.ZipFile(shutil.make_archive(os.path.join(scratch, "z"), "zip", data)).namelist()))

def load_plugins():
    # A plugin system: list the package's plugin directory, then load each file by its path
    # (importlib's SourceFileLoader reads through io.open_code; issue 37).
    import importlib.util
    found = []
    for name in sorted(os.listdir(here / "plugins")):
        if name.endswith(".py"):
            path = here / "plugins" / name
            spec = importlib.util.spec_from_file_location("plugin_" + name[:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found.append([module.NAME, rel(module.__file__)])
    return found


attempt("plugins_by_path", load_plugins)
attempt("open_code", lambda: __import__("io").open_code(str(here / "plugins" / "alpha.py")).read().decode())
# An "install directory" computed as dirname(pkg.__file__)/..: the executable, in one (a file
# missing below it is missing, not NotADirectoryError).
attempt("below_the_install_directory", lambda: open(here.parent / "reader.cfg").read())

# What stays an error: a file that is not there, a directory opened as a file.
attempt("missing", lambda: open(data / "nothing.txt"))
attempt("is_a_directory", lambda: open(data / "sub").read())
attempt("not_a_directory", lambda: os.listdir(data / "notes.txt"))
print(json.dumps(out, sort_keys=True))
"""

EXECUTABLE_ONLY = r"""
import os, pathlib, sys
from reader.attempt import attempt, out
here = pathlib.Path(__file__).parent
# Writing is refused as the system refuses it (the executable is a file, not a directory).
attempt("write", lambda: open(here / "data" / "new.txt", "w"))
attempt("append", lambda: open(here / "data" / "notes.txt", "a"))
attempt("os_open_write", lambda: os.open(here / "data" / "notes.txt", os.O_WRONLY))
attempt("mkdir", lambda: (here / "data" / "made").mkdir())
out["access_write"] = os.access(here / "data" / "notes.txt", os.W_OK)
# C code reads it too (the launcher's `open`: issue 52): io.FileIO is not served by Python.
import io
attempt("fileio", lambda: io.FileIO(here / "data" / "notes.txt").read().decode())
# A path that climbs out of the executable is the system's again (which refuses it: the
# executable is a file); the executable itself is a file.
attempt("climb", lambda: os.path.isdir(str(here) + "/../../.."))
attempt("exe_is_file", lambda: os.path.isfile(sys.executable))
# A name no archive can hold (a lone surrogate) is the system's question too.
attempt("surrogate", lambda: os.path.exists(str(here / "data") + "/x\udc80"))
# A real descriptor: fstat, mmap, sendfile.
import mmap
with open(here / "data" / "notes.txt", "rb") as file:
    out["fstat_size"] = os.fstat(file.fileno()).st_size
    out["mmap"] = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)[:5].decode()
fd = os.open(here / "data" / "notes.txt", os.O_RDONLY)
out["os_open"] = os.read(fd, 5).decode()
# What was opened for reading cannot be written through, nor cut (a sealed memory file).
attempt("os_open_then_write", lambda: os.write(fd, b"changed"))
attempt("os_open_then_truncate", lambda: os.ftruncate(fd, 0))
os.close(fd)
# The functions keep their names for introspection, and os.DirEntry's interface.
out["names"] = [os.stat.__name__, os.listdir.__name__, open.__name__]
entry = next(iter(os.scandir(here / "data")))
out["entry"] = [hasattr(entry, "inode"), os.fspath(entry) == entry.path]
import json
print(json.dumps(out, sort_keys=True))
"""


# What both probes share: `attempt(key, function)` records the result, or the OSError's type and
# errno, under `key` in `out`.
ATTEMPT = """
out = {}

def attempt(key, function):
    try:
        out[key] = function()
    except OSError as error:
        out[key] = [type(error).__name__, error.errno]
"""

FILES = {
    "reader/__init__.py": "",
    "reader/attempt.py": ATTEMPT,
    "reader/__main__.py": "import sys\nfrom reader import probe, only_exe  # noqa\n",
    "reader/probe.py": PROBE,
    "reader/only_exe.py": EXECUTABLE_ONLY,
    "reader/data/notes.txt": "first line\nsecond line, café\n",
    "reader/data/sub/blob.bin": b"\x00\x01binary",
    "reader/data/compressed.gz": gzip.compress(b"unzipped", mtime=0),
    "reader/plugins/alpha.py": 'NAME = "alpha"\n',
}


@pytest.fixture(scope="module")
def reader_app(tmp_path_factory, launcher, launcher_python):
    """(executable, site): the package above, packed from `site` into an executable that runs
    `reader.probe`, or `reader.only_exe` when its first argument says so."""
    tmp_path = tmp_path_factory.mktemp("archive-paths")
    site = tmp_path / "site"
    for relative, content in FILES.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (site / relative).write_bytes(content)
        else:
            (site / relative).write_text(content, encoding="utf-8")
    (site / "reader" / "__main__.py").write_text(
        "import sys\nif sys.argv[1:] == ['only-exe']:\n    import reader.only_exe\n"
        "else:\n    import reader.probe\n"
    )
    archive = tmp_path / "reader.ingot"
    launch = {"version": 1, "run": {"kind": "module", "module": "reader"}}
    subprocess.run(
        [launcher_python, "-c", PACK, archive, site, json.dumps(launch)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    app = tmp_path / "reader"
    app.write_bytes(launcher.read_bytes() + archive.read_bytes())
    app.chmod(0o755)
    return app, site


def test_reading_next_to_modules_matches_python(reader_app):
    app, site = reader_app
    executable = run(app)
    assert executable.returncode == 0, executable.stderr
    stock = subprocess.run(
        [sys.executable, "-m", "reader"], cwd=site, capture_output=True, text=True, timeout=60
    )
    assert stock.returncode == 0, stock.stderr
    got, expected = json.loads(executable.stdout), json.loads(stock.stdout)
    # Spelled out where it matters, so that a probe that breaks both ways still fails.
    assert expected["read_text"] == "first line\nsecond line, café\n"
    assert expected["walk"] == [
        ["data", ["sub"], ["compressed.gz", "notes.txt"]],
        ["data/sub", [], ["blob.bin"]],
    ]
    assert expected["gzip"] == "unzipped"
    assert expected["missing"] == ["FileNotFoundError", 2]
    assert expected["plugins_by_path"] == [["alpha", "plugins/alpha.py"]]
    assert expected["below_the_install_directory"] == ["FileNotFoundError", 2]
    assert {
        key: (value, expected.get(key)) for key, value in got.items() if value != expected.get(key)
    } == {}
    assert got.keys() == expected.keys()


def test_writing_and_c_code_get_the_systems_answer(reader_app):
    app, _ = reader_app
    result = run(app, "only-exe")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    enotdir = ["NotADirectoryError", 20]
    assert got == {
        "write": enotdir,
        "access_write": False,
        "append": enotdir,
        "os_open_write": enotdir,
        "mkdir": enotdir,
        "fileio": FILES["reader/data/notes.txt"],
        "climb": False,
        "exe_is_file": True,
        "surrogate": False,
        "fstat_size": len(FILES["reader/data/notes.txt"].encode()),
        "mmap": "first",
        "os_open": "first",
        "os_open_then_write": ["PermissionError", 1],
        "os_open_then_truncate": ["PermissionError", 1],
        "names": ["stat", "listdir", "open"],
        "entry": [True, True],
    }


def test_files_are_opened_without_os_memfd_create(tmp_path):
    # A CPython configured for glibc 2.17 (a runtime's) has no os.memfd_create: opening a file
    # next to a module must not need it (the importer makes the memory file by system call).
    site = tmp_path / "site"
    (site / "reader" / "data").mkdir(parents=True)
    (site / "reader" / "__init__.py").write_text("")
    (site / "reader" / "data" / "notes.txt").write_text("from the archive\n")
    archive = tmp_path / "app.ingot"
    from ingot.build.archive.pack import PackOptions, pack

    pack(archive, PackOptions.here(stdlib=False, directories=[site]))
    code = (
        "import os, posix, sys; del posix.memfd_create, os.memfd_create\n"
        "import ingot; finder = ingot.IngotFinder(sys.argv[1]); ingot.serve_archive_paths(finder)\n"
        "print(open(sys.argv[1] + '/reader/data/notes.txt').read(), end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(archive)], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "from the archive\n", "")
