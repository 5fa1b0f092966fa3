"""Acceptance: the whole pure-Python standard library imports from an archive in a process whose
import system is reduced to built-in, frozen and ingot, on each supported Python."""

import json
import subprocess

import pytest

from helpers import ROOT, python_for, run_python

IMPORT_STDLIB = ROOT / "examples" / "import-stdlib" / "stdlib_modules.py"

# Runs in a fresh `python -I -S`: imports ingot from its install directory, then removes the path
# finder and every path hook, so that nothing after this point can come from the file system.
REDUCED_PROCESS = r"""
import sys
sys.path.insert(0, sys.argv[1])
import ingot
import _frozen_importlib as bootstrap
sys.path[:] = []
sys.path_hooks[:] = []
sys.path_importer_cache.clear()
sys.meta_path[:] = [bootstrap.BuiltinImporter, bootstrap.FrozenImporter]
finder = ingot.IngotFinder(sys.argv[2])
sys.meta_path.insert(0, finder)
before = set(sys.modules)
source = open(sys.argv[3]).read()
exec(compile(source, "import_stdlib.py", "exec"), {"__name__": "import_stdlib"})
wanted = [line.split()[1] for line in source.splitlines() if line.startswith("import ")]

def origin(name):
    module = sys.modules.get(name)
    if module is None:
        return "missing"
    if module is bootstrap or module is sys.modules.get("_frozen_importlib_external"):
        return "bootstrap alias"  # importlib/__init__.py aliases importlib._bootstrap{,_external}
    try:
        spec = module.__spec__
    except AttributeError:  # pseudo-modules such as typing.io
        return "not a module"
    if spec is None:  # put in sys.modules by code, not imported (pyexpat.errors, __mp_main__)
        return "no spec"
    loader = spec.loader
    if loader is finder:
        return "ingot"
    if name in sys.builtin_module_names:
        return "builtin"
    return repr(loader)

new = sorted(set(sys.modules) - before)
import sqlite3, ssl, json
connection = sqlite3.connect(":memory:")
context = ssl.create_default_context()
report = {
    # Imported while the interpreter started, before any finder could be installed.
    "at_startup": sorted(name for name in wanted if name in before),
    "wanted": {name: origin(name) for name in wanted if name not in before},
    "new": {name: origin(name) for name in new},
    "extensions": {name: origin(name) for name in ("math", "_json", "_socket", "_ssl", "_sqlite3")},
    "extension_files": {name: sys.modules[name].__file__ for name in ("_ssl", "_sqlite3")},
    "sqlite": connection.execute("select sqlite_version()").fetchone()[0],
    "ssl": ssl.OPENSSL_VERSION,
    "maps": sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if "libssl" in line or "libsqlite3" in line}),
}
print(json.dumps(report))
"""


@pytest.fixture(scope="module", params=["3.11", "3.10", "3.12", "3.13"])
def reduced_run(request, tmp_path_factory):
    """Packs the stdlib with that Python, runs import_stdlib.py in a reduced process, and returns
    (archive, report)."""
    python = python_for(request.param)
    archive = tmp_path_factory.mktemp(f"stdlib-{request.param}") / "stdlib.ingot"
    subprocess.run(
        [python, "-m", "ingot", "pack", "-o", str(archive)], check=True, capture_output=True
    )
    site = run_python(
        python, "import ingot, os; print(os.path.dirname(os.path.dirname(ingot.__file__)))"
    )
    result = subprocess.run(
        [
            python,
            "-I",
            "-S",
            "-c",
            REDUCED_PROCESS,
            site.stdout.strip(),
            str(archive),
            str(IMPORT_STDLIB),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return archive, json.loads(result.stdout)


def test_every_stdlib_module_imports_from_the_archive(reduced_run):
    archive, report = reduced_run
    assert len(report["wanted"]) > 400
    # Only what `python -I -S` imports to start (encodings, codecs, io, abc, os, ...) was there before.
    assert len(report["at_startup"]) < 30, report["at_startup"]
    not_from_archive = {
        name: where
        for name, where in report["wanted"].items()
        if where not in ("ingot", "bootstrap alias")
    }
    assert not_from_archive == {}
    allowed = ("ingot", "builtin", "not a module", "no spec", "bootstrap alias")
    strays = {name: where for name, where in report["new"].items() if where not in allowed}
    assert strays == {}
    assert report["extensions"] == dict.fromkeys(
        ("math", "_json", "_socket", "_ssl", "_sqlite3"), "ingot"
    )
    assert all(path.startswith(f"{archive}/") for path in report["extension_files"].values())
    assert report["sqlite"] and report["ssl"].startswith("OpenSSL")


def test_shared_libraries_of_ssl_and_sqlite3_come_from_memory(reduced_run):
    _, report = reduced_run
    maps = report["maps"]
    assert maps, "libssl and libsqlite3 are not mapped at all"
    assert all(name.startswith("/memfd:ingot:") for name in maps), maps
