"""Shared fixtures: archives built with the real writer, interpreters to run them in, and a
clean import system for every test."""

import contextlib
import importlib.util
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ingot

ROOT = Path(__file__).resolve().parent.parent


class ArchiveBuilder:
    """Builds a small archive from module sources and files, compiled with this interpreter."""

    def __init__(self, python_version=None, magic=None):
        self.writer = ingot.ArchiveWriter(
            bytecode_magic=magic or importlib.util.MAGIC_NUMBER,
            python_version=python_version or sys.version_info[:2],
        )

    def module(self, name, source, *, package=False, levels=(0,), with_source=True):
        source = textwrap.dedent(source)
        relative = name.replace(".", "/") + ("/__init__.py" if package else ".py")
        bytecode = {
            level: marshal.dumps(
                compile(source, relative, "exec", dont_inherit=True, optimize=level)
            )
            for level in levels
        }
        self.writer.add_module(
            name,
            source=source.encode() if with_source else None,
            bytecode=bytecode or None,
            is_package=package,
        )
        return self

    def package(self, name, source="", **options):
        return self.module(name, source, package=True, **options)

    def namespace(self, name):
        self.writer.add_namespace_package(name)
        return self

    def data(self, path, content):
        self.writer.add_data_file(path, content if isinstance(content, bytes) else content.encode())
        return self

    def dist_info(self, path, content):
        self.writer.add_dist_info_file(path, textwrap.dedent(content).encode())
        return self

    def write(self, path):
        self.writer.write(str(path))
        return path


def _set_environment(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


@contextlib.contextmanager
def environment(name, value):
    """``os.environ[name] = value`` (unset for None) for the ``with`` block, restored after."""
    previous = os.environ.get(name)
    _set_environment(name, value)
    try:
        yield
    finally:
        _set_environment(name, previous)


@pytest.fixture(scope="session", autouse=True)
def private_extraction_cache(tmp_path_factory):
    """Every process the tests start uses a cache of its own, not the user's ~/.cache/ingot."""
    cache = tmp_path_factory.mktemp("ingot-cache")
    os.chmod(cache, 0o700)
    with environment("INGOT_CACHE_DIR", cache):
        yield cache


#: The store of runtimes the test command made (scripts/test), for the tests that build with one
#: (tests/test_old_system.py). Every other test sees an empty store: no build of theirs picks a
#: runtime by default (ingot build uses its Python version's runtime when there is one).
RUNTIMES = os.environ.get("INGOT_RUNTIMES")


@pytest.fixture(scope="session", autouse=True)
def empty_runtime_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("ingot-runtimes")
    with environment("INGOT_RUNTIMES", store):
        yield store


@pytest.fixture(scope="module")
def runtime_store():
    """The real store of runtimes (``RUNTIMES``, else the default place) for a module's tests."""
    with environment("INGOT_RUNTIMES", RUNTIMES):
        yield


def needed_by_stdlib_module(name):
    """The DT_NEEDED names of one of this interpreter's stdlib extension modules (empty for a
    runtime's, which link OpenSSL, SQLite, ... statically)."""
    module = importlib.import_module(name)
    with open(module.__file__, "rb") as file:
        return set(ingot.elf_dynamic(ingot.loadable_image(file.read()))["needed"])


@pytest.fixture
def builder():
    return ArchiveBuilder()


@pytest.fixture
def clean_imports():
    """Restores the import system and forgets modules a test imported."""
    meta_path, path_hooks, path = list(sys.meta_path), list(sys.path_hooks), list(sys.path)
    modules = set(sys.modules)
    yield
    sys.meta_path[:] = meta_path
    sys.path_hooks[:] = path_hooks
    sys.path[:] = path
    sys.path_importer_cache.clear()
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.fixture
def install(clean_imports):
    """Installs the finder of an archive for the duration of a test."""

    def install_archive(path):
        return ingot.install(str(path))

    return install_archive


def interpreters():
    """(version, python) pairs to run cross-version tests in: each a Python with ingot installed.

    `INGOT_TEST_PYTHONS` lists them (os.pathsep-separated); the running interpreter is always one.
    With `INGOT_REQUIRE_PYTHONS` set (as CI does), each listed version must be present.
    """
    found = {f"{sys.version_info.major}.{sys.version_info.minor}": sys.executable}
    for python in filter(None, os.environ.get("INGOT_TEST_PYTHONS", "").split(os.pathsep)):
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        found[version] = python
    return found


def python_for(version):
    pythons = interpreters()
    if version not in pythons:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(f"Python {version} with ingot installed is required (INGOT_TEST_PYTHONS)")
        pytest.skip(f"no Python {version} with ingot installed (set INGOT_TEST_PYTHONS)")
    return pythons[version]


def run_python(python, code, *args, env=None, check=True, cwd=None, timeout=120):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess."""
    result = subprocess.run(
        [python, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        )
    return result


def strace_calls(log):
    """The system calls in an `strace -f -o LOG` log, one line each: a call that another thread
    interrupted (`... <unfinished ...>`, later `<... name resumed> ...`) is joined back into one
    line, so that its arguments and its result are on the same line."""
    pending: dict[str, str] = {}
    calls = []
    for line in Path(log).read_text().splitlines():
        pid, _, rest = line.partition(" ")
        if line.endswith("<unfinished ...>"):
            pending[pid] = line[: -len("<unfinished ...>")].rstrip()
        elif rest.lstrip().startswith("<... ") and " resumed>" in rest:
            calls.append(pending.pop(pid, line) + rest.split(" resumed>", 1)[1])
        else:
            calls.append(line)
    return calls + list(pending.values())
