"""The meta-path finder and loader: specs, module attributes, loader methods."""

import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
import threading
import traceback

import pytest

import ingot

from helpers import run_python

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


@pytest.fixture
def app(builder, tmp_path):
    builder.module("plain", "import os\nHERE = os.path.dirname(__file__)\nVALUE = 1\n")
    builder.package("pkg", "from . import sub\nfrom .sub import VALUE\n")
    builder.module("pkg.sub", "VALUE = 42\n")
    builder.package("pkg.inner", "from ..sub import VALUE as PARENT_VALUE\n")
    builder.module("pkg.inner.deep", "from . import PARENT_VALUE\nfrom .. import sub\n")
    builder.namespace("ns")
    builder.module("ns.part", "PART = 'ns'\n")
    builder.module("failing", "def explode():\n    raise ValueError('boom')\n")
    builder.module("bytecode_only", "VALUE = 'no source'\n", with_source=False)
    builder.module("source_only", "VALUE = 'compiled at import'\n", levels=())
    builder.data("pkg/data.txt", "some data\n")
    return builder.write(tmp_path / "app.ingot")


def test_find_spec_returns_none_for_a_module_not_in_the_archive(app, install):
    finder = install(app)
    assert finder.find_spec("not_there") is None
    assert finder.find_spec("pkg.not_there") is None


def test_module_spec_has_virtual_origin_under_the_archive_path(app, install):
    finder = install(app)
    spec = finder.find_spec("plain")
    assert spec.name == "plain"
    assert spec.loader is finder
    assert spec.origin == f"{app}/plain.py"
    # As for frozen modules: the origin is no file a path-based loader could read.
    assert not spec.has_location
    assert spec.cached is None
    assert spec.submodule_search_locations is None


def test_package_spec_has_a_search_location_under_the_archive_path(app, install):
    spec = install(app).find_spec("pkg")
    assert spec.origin == f"{app}/pkg/__init__.py"
    assert spec.submodule_search_locations == [f"{app}/pkg"]


def test_imported_module_attributes_follow_zipimport_conventions(app, install):
    finder = install(app)
    import plain

    assert plain.__file__ == f"{app}/plain.py"
    # No cache file, as for a module python imports from source without writing a .pyc; but
    # the attribute is there (`python -m inspect MODULE --details` reads it).
    assert plain.__cached__ is None
    assert plain.__loader__ is finder
    assert plain.__spec__.name == "plain"
    assert str(app) == plain.HERE
    assert plain.__package__ == ""
    assert "__builtins__" in vars(plain)


def test_packages_subpackages_and_relative_imports(app, install):
    install(app)
    import pkg
    import pkg.inner.deep

    assert pkg.VALUE == 42
    assert pkg.sub.__file__ == f"{app}/pkg/sub.py"
    assert pkg.inner.deep.PARENT_VALUE == 42
    assert pkg.inner.deep.sub is pkg.sub
    assert pkg.__path__ == [f"{app}/pkg"]
    assert pkg.inner.__package__ == "pkg.inner"


def test_namespace_package_has_no_file_and_a_path_in_the_archive(app, install):
    install(app)
    import ns.part

    assert ns.part.PART == "ns"
    assert ns.__spec__.origin is None
    assert getattr(ns, "__file__", None) is None
    assert list(ns.__path__) == [f"{app}/ns"]


def test_bytecode_only_and_source_only_modules_import(app, install):
    install(app)
    import bytecode_only
    import source_only

    assert bytecode_only.VALUE == "no source"
    assert source_only.VALUE == "compiled at import"


def test_code_objects_carry_the_virtual_file_name(app, install):
    finder = install(app)
    code = finder.get_code("pkg.sub")
    assert code.co_filename == f"{app}/pkg/sub.py"


def test_traceback_shows_virtual_path_and_source_line(app, install):
    install(app)
    import failing

    try:
        failing.explode()
    except ValueError:
        text = traceback.format_exc()
    assert f'File "{app}/failing.py", line 2, in explode' in text
    assert "raise ValueError('boom')" in text


def test_loader_methods(app, install):
    finder = install(app)
    assert finder.is_package("pkg") is True
    assert finder.is_package("plain") is False
    assert finder.is_package("ns") is True
    assert finder.get_filename("pkg") == f"{app}/pkg/__init__.py"
    assert finder.get_source("pkg.sub") == "VALUE = 42\n"
    assert finder.get_source("bytecode_only") is None
    assert finder.get_code("plain").co_name == "<module>"


@pytest.mark.parametrize("method", ["get_code", "get_source", "is_package", "get_filename"])
def test_loader_methods_raise_import_error_naming_a_missing_module(app, install, method):
    finder = install(app)
    with pytest.raises(ImportError) as raised:
        getattr(finder, method)("missing.module")
    assert raised.value.name == "missing.module"
    assert "missing.module" in str(raised.value)


def test_get_data_reads_files_and_sources_by_virtual_path(app, install):
    finder = install(app)
    import plain

    assert finder.get_data(os.path.join(plain.HERE, "pkg", "data.txt")) == b"some data\n"
    assert finder.get_data(f"{app}/pkg/sub.py") == b"VALUE = 42\n"
    assert finder.get_data(f"{app}/pkg/../pkg/data.txt") == b"some data\n"
    with pytest.raises(FileNotFoundError):
        finder.get_data(f"{app}/pkg/missing.txt")


def test_archive_on_sys_path_works_through_the_path_hook(app, clean_imports):
    finder = ingot.IngotFinder(str(app))
    sys.path_hooks.insert(0, finder.path_hook)
    sys.path.insert(0, str(app))
    sys.path_importer_cache.clear()
    import pkg.sub

    assert pkg.sub.VALUE == 42
    assert pkg.__file__ == f"{app}/pkg/__init__.py"


#: A package that loads itself as OpenCV's does: it puts its own directory first on sys.path,
#: leaves sys.modules and imports its own name again, expecting the module of that name in its
#: directory; a second run of its __init__ is the recursion its guard refuses.
SELF_LOADER = """
import importlib, os, sys
if hasattr(sys, "SELFLOAD_LOADER"):
    raise ImportError("recursion is detected during loading of 'selfload'")
sys.SELFLOAD_LOADER = True
saved = list(sys.path)
sys.path.insert(0, os.path.dirname(__file__))
outer = sys.modules.pop("selfload")
inner = importlib.import_module("selfload")
sys.modules["selfload"] = outer
sys.path[:] = saved
del sys.SELFLOAD_LOADER
INNER = inner
"""


@pytest.fixture
def search_app(builder, tmp_path):
    builder.package("selfload", SELF_LOADER)
    builder.module(
        "selfload.selfload", "WHERE = 'inner'\ndef fail():\n    raise ValueError('inner')\n"
    )
    builder.package("pkg", "")
    builder.module("pkg.vendor.six", "WHERE = 'vendored'\n")
    builder.package("pkg.vendor.vendortools", "WHERE = 'vendored package'\n")
    builder.module("pkg.vendor.vendortools.part", "WHERE = 'vendored part'\n")
    builder.module("six", "WHERE = 'top level'\n")
    return builder.write(tmp_path / "search.ingot")


def test_a_package_that_imports_itself_again_through_sys_path_gets_the_module_there(
    search_app, install
):
    install(search_app)
    sys.path.insert(0, str(search_app))
    import selfload

    assert selfload.INNER.WHERE == "inner"
    assert selfload.INNER.__name__ == "selfload"
    assert selfload.INNER.__file__ == f"{search_app}/selfload/selfload.py"
    assert type(selfload.INNER.__loader__).__name__ == "IngotAliasLoader"
    # Its source and tracebacks are the stored module's.
    assert "WHERE = 'inner'" in inspect.getsource(selfload.INNER)
    try:
        selfload.INNER.fail()
    except ValueError as error:
        (last,) = traceback.extract_tb(error.__traceback__)[-1:]
    assert last.filename == f"{search_app}/selfload/selfload.py"
    assert last.line == "raise ValueError('inner')"


def test_directories_inside_the_archive_are_searched_in_sys_path_order(search_app, install):
    install(search_app)
    sys.path[:0] = [str(search_app)]
    sys.modules.pop("six", None)
    import six

    assert six.WHERE == "top level"  # the root comes first
    del sys.modules["six"]
    sys.path.insert(0, f"{search_app}/pkg/vendor")
    import six

    assert six.WHERE == "vendored"
    assert six.__spec__.origin == f"{search_app}/pkg/vendor/six.py"
    import vendortools.part

    assert vendortools.WHERE == "vendored package"
    assert vendortools.__path__ == [f"{search_app}/pkg/vendor/vendortools"]
    assert vendortools.part.WHERE == "vendored part"
    assert vendortools.part.__file__ == f"{search_app}/pkg/vendor/vendortools/part.py"


def test_a_directory_inside_the_archive_after_the_root_answers_what_the_root_lacks(
    search_app, install
):
    install(search_app)
    sys.path[:0] = [str(search_app)]
    sys.path.append(f"{search_app}/pkg/vendor")
    import vendortools

    assert vendortools.WHERE == "vendored package"
    with pytest.raises(ModuleNotFoundError):
        import not_anywhere  # noqa: F401


def test_path_hook_rejects_paths_outside_the_archive(app, install, tmp_path):
    finder = install(app)
    with pytest.raises(ImportError):
        finder.path_hook(str(tmp_path))
    with pytest.raises(ImportError):
        finder.path_hook(f"{app}/plain.py")


def test_reload_runs_the_module_again(app, install):
    install(app)
    import plain

    plain.VALUE = 2
    importlib.reload(plain)
    assert plain.VALUE == 1
    assert plain.__file__ == f"{app}/plain.py"


def test_concurrent_imports_from_many_threads(builder, tmp_path, clean_imports):
    for index in range(40):
        builder.module(f"threaded_{index}", f"import threaded_shared\nVALUE = {index}\n")
    builder.module("threaded_shared", "import time\ntime.sleep(0.01)\nCOUNT = 1\n")
    app = builder.write(tmp_path / "threads.ingot")
    ingot.install(str(app))
    errors, results = [], {}
    barrier = threading.Barrier(8)

    def work(worker):
        try:
            barrier.wait()
            for index in range(worker, 40, 8):
                results[index] = importlib.import_module(f"threaded_{index}").VALUE
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results == {index: index for index in range(40)}


def test_forked_child_keeps_importing(app, tmp_path):
    result = run_python(
        sys.executable,
        """
        import os, sys, ingot
        ingot.install(sys.argv[1])
        import plain
        pid = os.fork()
        if pid == 0:
            import pkg.inner.deep
            os._exit(0 if pkg.inner.deep.PARENT_VALUE == 42 else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """,
        app,
    )
    assert result.stdout.strip() == "0"


def test_optimize_flag_selects_matching_bytecode(builder, tmp_path):
    builder.module("opt", "assert False, 'asserts run'\nDOC = __doc__\n", levels=(0, 1))
    app = builder.write(tmp_path / "opt.ingot")
    code = "import sys, ingot; ingot.install(sys.argv[1]); import opt; print('imported')"
    assert "asserts run" in run_python(sys.executable, code, app, check=False).stderr
    optimized = subprocess.run(
        [sys.executable, "-O", "-c", code, str(app)], capture_output=True, text=True
    )
    assert optimized.stdout.strip() == "imported", optimized.stderr


def test_missing_optimization_level_falls_back_to_source(builder, tmp_path):
    builder.module("opt2", "assert False, 'asserts run'\n", levels=(0,))
    app = builder.write(tmp_path / "opt2.ingot")
    optimized = subprocess.run(
        [
            sys.executable,
            "-OO",
            "-c",
            "import sys, ingot; ingot.install(sys.argv[1]); import opt2; print('ok')",
            str(app),
        ],
        capture_output=True,
        text=True,
    )
    assert optimized.stdout.strip() == "ok", optimized.stderr


def test_inspect_details_of_an_archived_module(app):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import ingot, runpy, sys; ingot.install(sys.argv[1]); "
                "sys.argv = ['inspect', 'plain', '--details']; "
                "runpy.run_module('inspect', run_name='__main__', alter_sys=True)"
            ),
            str(app),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"Origin: {app}/plain.py" in done.stdout and "Cached: None" in done.stdout


def test_a_compressed_file_read_again_is_decompressed_once_and_large_ones_are_not_kept(tmp_path):
    writer = ingot.ArchiveWriter(
        bytecode_magic=importlib.util.MAGIC_NUMBER,
        python_version=sys.version_info[:2],
        compression_level=3,
    )
    small = b"certificate bundle line\n" * 4000  # 96 KB, compresses
    large = bytes(range(256)) * 5000  # 1.25 MB, over the limit of one kept file
    writer.add_data_file("pkg/cacert.pem", small)
    writer.add_data_file("pkg/model.bin", large)
    path = tmp_path / "files.ingot"
    writer.write(str(path))
    finder = ingot.IngotFinder(str(path))
    assert finder._decompressed_held() == (0, 0)
    assert finder.get_data(f"{path}/pkg/cacert.pem") == small
    assert finder._decompressed_held() == (1, len(small))
    assert finder._read("pkg/cacert.pem") == small
    assert finder._decompressed_held() == (1, len(small))
    assert finder._read("pkg/model.bin") == large
    assert finder._read("pkg/model.bin") == large
    assert finder._decompressed_held() == (1, len(small))


def test_import_ingot_imports_only_its_own_modules():
    # `python -I -S` starts without `os`; the importer as a library must not pull it in (nor
    # anything else a stdlib acceptance run would then see loaded from outside the archive).
    root = os.path.dirname(os.path.dirname(ingot.__file__))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); before = set(sys.modules); import ingot; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, root], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "ingot",
        "ingot._ingot",
        "ingot.boot",
        "ingot.boot.archive_paths",
    ]
