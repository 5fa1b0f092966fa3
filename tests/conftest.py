"""Shared fixtures: a private cache and an empty runtimes store for every process the tests
start, archives built with the real writer, a clean import system for every test. The helpers
are in tests/support (put on sys.path here); ``ingot`` is imported lazily, so that the tests of
the sources alone (tests/test_structure.py) run without a build of ingot."""

import os
import platform
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from helpers import (
    HERE,
    ROOT,
    RUNTIMES,
    ArchiveBuilder,
    environment,
    interpreters,
    needed_by_stdlib_module,
    python_for,
    real_launcher,
    run_python,
    strace_calls,
)

__all__ = [
    "ROOT",
    "RUNTIMES",
    "ArchiveBuilder",
    "environment",
    "interpreters",
    "needed_by_stdlib_module",
    "python_for",
    "run_python",
    "strace_calls",
]


@pytest.fixture(scope="session", autouse=True)
def private_extraction_cache(tmp_path_factory):
    """Every process the tests start uses a cache of its own, not the user's ~/.cache/ingot."""
    cache = tmp_path_factory.mktemp("ingot-cache")
    os.chmod(cache, 0o700)
    with environment("INGOT_CACHE_DIR", cache):
        yield cache


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
        import ingot

        return ingot.install(str(path))

    return install_archive


@pytest.fixture
def launcher_here():
    """The real launcher, if it embeds this Python (else the test skips)."""
    launcher = real_launcher()
    if launcher is None:
        pytest.skip(
            "no launcher binary (set INGOT_LAUNCHER or cargo build --release -p "
            "ingot-launcher); archive-only builds are tested"
        )
    from ingot.build.resolve.launcher import launcher_python
    from ingot.elf import elf_machine

    if launcher_python(launcher) != HERE:
        pytest.skip(f"the launcher embeds Python {launcher_python(launcher)}, not {HERE}")
    if elf_machine(launcher) != platform.machine():
        pytest.skip(f"the launcher is for {elf_machine(launcher)}, not {platform.machine()}")
    return launcher
