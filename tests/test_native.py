"""Extension modules and shared libraries loaded from memory: concurrency, fork, bookkeeping."""

import glob
import json
import os
import sys
import sysconfig

import pytest

import ingot

from helpers import ArchiveBuilder, needed_by_stdlib_module, run_python

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

DYNLOAD = os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")
#: Extension modules that are files in lib-dynload in every build of CPython here (pyenv's and
#: Debian's; Debian builds math, _json, _bisect, zlib, ... into libpython).
EXTENSIONS = [
    "_queue",
    "_lsprof",
    "mmap",
    "resource",
    "termios",
    "_multibytecodec",
    "_codecs_jp",
    "_posixshmem",
    "_zoneinfo",
    "_decimal",
    "_sqlite3",
    "_bz2",
]


@pytest.fixture(scope="module")
def native_archive(tmp_path_factory):
    from ingot import elf

    builder = ArchiveBuilder()
    images = {}
    for name in EXTENSIONS:
        (path,) = glob.glob(os.path.join(DYNLOAD, f"{name}.cpython-*.so"))
        with open(path, "rb") as file:
            image = ingot.loadable_image(file.read())
        images[name] = path
        builder.writer.add_extension_module(name, image, ingot.elf_dynamic(image)["needed"])
    # The shared libraries those need, resolved as the loader would (libsqlite3, libz, ...).
    resolution = elf.resolve([elf.read_elf(path) for path in images.values()])
    for file_name, library in resolution.libraries.items():
        with open(library.path, "rb") as file:
            image = file.read()
        builder.writer.add_shared_library(
            file_name, image, soname=library.soname, needed=list(library.needed)
        )
    return builder.write(tmp_path_factory.mktemp("native") / "native.ingot")


def test_extension_modules_come_from_memfds(native_archive):
    result = run_python(
        sys.executable,
        """
        import json, sys, ingot
        finder = ingot.install(sys.argv[1])
        import _lsprof, _sqlite3, _bz2
        maps = {line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if len(line.split()) > 5}
        print(json.dumps({
            "loaders": [m.__spec__.loader is finder for m in (_lsprof, _sqlite3, _bz2)],
            "files": [m.__file__ for m in (_lsprof, _sqlite3, _bz2)],
            "memfds": sorted(m for m in maps if m.startswith("/memfd:ingot:")),
            "sqlite": _sqlite3.sqlite_version,
            "profiler": callable(_lsprof.Profiler),
        }))
    """,
        native_archive,
    )
    report = json.loads(result.stdout)
    assert report["loaders"] == [True, True, True]
    assert all(path.startswith(f"{native_archive}/") for path in report["files"])
    assert any("_lsprof.cpython" in name for name in report["memfds"])
    if any(name.startswith("libsqlite3") for name in needed_by_stdlib_module("_sqlite3")):
        assert any("libsqlite3" in name for name in report["memfds"]), report["memfds"]
    assert report["profiler"] and report["sqlite"]


def test_concurrent_extension_imports_from_threads(native_archive):
    result = run_python(
        sys.executable,
        """
        import sys, threading, importlib, ingot
        ingot.install(sys.argv[1])
        names = sys.argv[2].split(",")
        barrier = threading.Barrier(6)
        errors = []
        def work(offset):
            try:
                barrier.wait()
                for name in names[offset:] + names[:offset]:
                    importlib.import_module(name)
            except BaseException as error:
                errors.append(repr(error))
        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print("errors", errors)
        print("loaded", sorted(n for n in names if n in sys.modules))
    """,
        native_archive,
        ",".join(EXTENSIONS),
    )
    assert "errors []" in result.stdout
    assert f"loaded {sorted(EXTENSIONS)}" in result.stdout


def test_forked_child_loads_extension_modules_and_libraries(native_archive):
    result = run_python(
        sys.executable,
        """
        import os, sys, ingot
        ingot.install(sys.argv[1])
        import _lsprof                   # loaded before the fork
        pid = os.fork()
        if pid == 0:
            import _sqlite3, _decimal    # loaded after it, libsqlite3 with it
            ok = callable(_lsprof.Profiler) and _sqlite3.sqlite_version and str(_decimal.Decimal(1) / 4) == "0.25"
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
    """,
        native_archive,
    )
    assert result.stdout.strip() == "child 0"


def test_a_corrupted_extension_image_is_refused_before_it_is_loaded(native_archive, tmp_path):
    data = bytearray(native_archive.read_bytes())
    finder = ingot.IngotFinder(str(native_archive))
    size = {name: size for kind, name, size in finder.entries() if kind == "extension-module"}[
        "_queue"
    ]
    assert size > 0
    with open(glob.glob(os.path.join(DYNLOAD, "_queue.cpython-*.so"))[0], "rb") as file:
        image = ingot.loadable_image(file.read())
    offset = data.find(image[4096:4160])
    assert offset > 0
    data[offset] ^= 0xFF
    broken = tmp_path / "broken.ingot"
    broken.write_bytes(bytes(data))
    result = run_python(
        sys.executable,
        """
        import sys, ingot
        ingot.install(sys.argv[1])
        try:
            import _queue
        except ImportError as error:
            print(type(error).__name__, error)
    """,
        broken,
    )
    assert result.stdout.startswith("ArchiveError"), result.stdout
    assert "_queue" in result.stdout and "corrupted" in result.stdout


def queue_package_archive(tmp_path, files: dict[str, str], image_name: str, files_policy: bool):
    """An archive of a package `_queue` holding `files` (name -> source) and lib-dynload's
    `_queue` extension module copied as `image_name`, under the files policy or not."""
    import shutil

    from ingot.build.archive.pack import pack

    (source,) = glob.glob(os.path.join(DYNLOAD, "_queue.cpython-*.so"))
    package = tmp_path / "site" / "_queue"
    package.mkdir(parents=True)
    for name, text in files.items():
        (package / name).write_text(text)
    shutil.copy(source, package / image_name)
    return pack(
        tmp_path / "queue.ingot",
        stdlib=False,
        directories=[tmp_path / "site"],
        files_packages=["_queue"] if files_policy else (),
    ).output


@pytest.mark.parametrize("files_policy", [False, True], ids=["memory", "files"])
def test_extension_package_is_imported_from_its_compiled_init(tmp_path, files_policy):
    import importlib.machinery

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    archive = queue_package_archive(
        tmp_path,
        {"__init__.py": "raise ImportError('the .py was imported')\n", "helper.py": "VALUE = 5\n"},
        f"__init__{suffix}",
        files_policy,
    )
    result = run_python(
        sys.executable,
        """
        import json, pkgutil, sys, ingot
        finder = ingot.install(sys.argv[1])
        import _queue, _queue.helper
        print(json.dumps({"file": _queue.__file__, "path": list(_queue.__path__),
                          "queue": _queue.SimpleQueue().empty(), "helper": _queue.helper.VALUE,
                          "is_package": finder.is_package("_queue"),
                          "submodules": [m.name for m in pkgutil.iter_modules(_queue.__path__)]}))
    """,
        archive,
        env=dict(os.environ, INGOT_CACHE_DIR=str(tmp_path / "cache")),
    )
    report = json.loads(result.stdout)
    assert report["queue"] is True and report["helper"] == 5 and report["is_package"]
    assert report["file"].endswith(f"/_queue/__init__{suffix}")
    assert report["path"] == [report["file"].rsplit("/", 1)[0]]
    assert report["submodules"] == ["helper"]
    if files_policy:
        assert report["file"].startswith(str(tmp_path / "cache"))
        assert os.path.isfile(report["file"])
    else:
        assert report["file"].startswith(f"{archive}/")


@pytest.mark.parametrize("files_policy", [False, True], ids=["memory", "files"])
def test_a_package_reimporting_its_name_through_sys_path_gets_its_extension_module(
    tmp_path, files_policy
):
    """OpenCV's loader: `cv2/__init__.py` puts its directory first on sys.path, leaves
    sys.modules and imports `cv2` again, to get `cv2/cv2.abi3.so` (here `_queue` in `_queue/`)."""
    archive = queue_package_archive(
        tmp_path,
        {
            "__init__.py": (
                "import importlib, os, sys\n"
                "if hasattr(sys, 'LOADING'):\n"
                "    raise ImportError('recursion is detected')\n"
                "sys.LOADING = True\n"
                "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                "outer = sys.modules.pop('_queue')\n"
                "native = importlib.import_module('_queue')\n"
                "sys.modules['_queue'] = outer\n"
                "del sys.path[0], sys.LOADING\n"
                "SimpleQueue = native.SimpleQueue\n"
            )
        },
        "_queue.abi3.so",
        files_policy,
    )
    result = run_python(
        sys.executable,
        """
        import json, sys, ingot
        ingot.install(sys.argv[1])
        sys.path.insert(0, sys.argv[1])
        import _queue
        queue = _queue.SimpleQueue()
        queue.put(7)
        print(json.dumps({"got": queue.get(), "native": _queue.native.__file__,
                          "name": _queue.native.__name__, "outer": _queue.__file__}))
    """,
        archive,
        env=dict(os.environ, INGOT_CACHE_DIR=str(tmp_path / "cache")),
    )
    report = json.loads(result.stdout)
    assert report["got"] == 7 and report["name"] == "_queue"
    assert report["outer"].endswith("/_queue/__init__.py")
    assert report["native"].startswith(report["outer"].rsplit("/", 1)[0] + "/_queue.")


def test_a_library_the_process_already_has_is_not_loaded_twice(native_archive):
    result = run_python(
        sys.executable,
        """
        import ctypes, json, sys, ingot
        ctypes.CDLL("libsqlite3.so.0")  # the system's copy, loaded first
        ingot.install(sys.argv[1])
        import _sqlite3
        maps = {line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if len(line.split()) > 5}
        print(json.dumps({"sqlite_memfds": sorted(m for m in maps if "memfd:ingot:libsqlite3" in m),
                          "sqlite_files": sorted(m for m in maps if "libsqlite3" in m and "memfd" not in m),
                          "version": _sqlite3.sqlite_version}))
    """,
        native_archive,
    )
    report = json.loads(result.stdout)
    assert report["sqlite_memfds"] == []
    assert report["sqlite_files"] and report["version"]
