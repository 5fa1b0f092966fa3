"""The first-use order of an archive (python/ingot/build/analysis/firstuse.py, ArchiveWriter.set_first_use):
what a start is predicted to read goes first in the data region."""

import os
import platform
import shutil
import sysconfig
from pathlib import Path

import pytest

import ingot
from ingot.build.analysis.firstuse import (
    BOOT_MODULES,
    FALLBACK,
    LAZY,
    TOP,
    first_use_order,
    imports_in_source,
)
from ingot.build.archive.bytecode import compile_module
from ingot.build.archive.pack import pack
from ingot.elf import elf_machine
from ingot.inspection import describe

import proclimit
from helpers import pip_build, strace_calls

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

SOURCE = b'''"""A module.

import in_a_docstring
"""
import os, sys as system
from . import sibling
from ..up import (one,
                  two as deux)
try:
    import json
except ImportError:
    import simplejson
if __name__ == "__main__":
    import doctest
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import typing_extensions
if sys.platform == "win32":
    import winreg
elif system.platform == "linux":
    import fcntl


def main():
    from .cli import run
    return run()


class Config:
    import configparser


def __call__(self, label="fast",
             verbose=1):
    """A signature over two lines."""
    from numpy.distutils import cpuinfo


async def fetch(url,
                timeout):
    import asyncio


try:
    import fast
except (ImportError,
        AttributeError):
    import slow
'''


@pytest.fixture
def launcher():
    """The launcher `ingot build` uses here, if it embeds this Python (the executable tests)."""
    from ingot.build.resolve.launcher import launcher_python

    from helpers import HERE, real_launcher

    found = real_launcher()
    if found is None or launcher_python(found) != HERE:
        pytest.skip("needs a launcher for this Python (set INGOT_LAUNCHER)")
    if elf_machine(found) != platform.machine():
        pytest.skip(f"the launcher {found} is for {elf_machine(found)}, not {platform.machine()}")
    return found


def test_the_main_block_runs_with_the_module_run_as_main():
    source = (
        b"import os\nif __name__ == '__main__':\n    import json\nif TYPE_CHECKING:\n    import x\n"
    )
    assert imports_in_source(source, "m", is_package=False)[TOP] == ["os"]
    assert imports_in_source(source, "m", is_package=False, as_main=True)[TOP] == ["os", "json"]


def test_imports_are_found_in_order_and_sorted_by_where_they_run():
    found = imports_in_source(SOURCE, "pkg.sub.mod", is_package=False)
    assert found[TOP] == [
        "os",
        "sys",
        "pkg.sub",
        "pkg.sub.sibling",
        "pkg.up",
        "pkg.up.one",
        "pkg.up.two",
        "json",
        "typing",
        "typing.TYPE_CHECKING",
        "fcntl",
        "configparser",
        "fast",
    ]
    assert found[LAZY] == [
        "pkg.sub.cli",
        "pkg.sub.cli.run",
        "numpy.distutils",
        "numpy.distutils.cpuinfo",
        "asyncio",
    ]
    assert found[FALLBACK] == ["simplejson", "slow"]


def test_imports_after_a_semicolon_or_in_a_one_line_block_are_found():
    # An import the scan misses is one a pruned build leaves out: `x = 1; import ctypes` ran
    # into ModuleNotFoundError in the executable.
    source = (
        b"x = 1; import ctypes\n"
        b"if sys.version_info < (3, 8): import importlib_metadata as metadata\n"
        b"try: import ujson as json\n"
        b"except ImportError: import json\n"
        b"if TYPE_CHECKING: import typing_only\n"
        b"def f(): from . import lazy_one\n"
        b"class C: import in_class; from .sub import item\n"
        b"print('no; import here' if x else 0)\n"
    )
    found = imports_in_source(source, "pkg.mod", is_package=False)
    assert found[TOP] == [
        "ctypes",
        "importlib_metadata",
        "ujson",
        "in_class",
        "pkg.sub",
        "pkg.sub.item",
        "here",  # (in a string: a module named so would be carried; a false import costs size only)
    ]
    assert found[FALLBACK] == ["json"]
    assert found[LAZY] == ["pkg", "pkg.lazy_one"]
    assert "typing_only" not in [name for names in found.values() for name in names]


def test_relative_imports_of_a_package_start_from_the_package_itself():
    found = imports_in_source(b"from . import a\nfrom .b import c\n", "pkg", is_package=True)
    assert found[TOP] == ["pkg", "pkg.a", "pkg.b", "pkg.b.c"]


def test_order_is_depth_first_parents_first_with_libraries_before_extensions():
    kinds = {
        "app": "module",
        "app.cli": "module",
        "lib": "package",
        "lib.core": "module",
        "lib._speedups": "extension-module",
        "unused": "module",
        "json": "package",
    }
    imports = {
        "app": {TOP: ["json"], LAZY: ["app.cli"]},
        "app.cli": {TOP: ["lib.core", "missing.module"], LAZY: ["unused"]},
        "lib": {TOP: [], LAZY: []},
        "lib.core": {TOP: ["lib._speedups", "json"], LAZY: []},
    }
    needed = {"lib._speedups": ["libfast.so.1"], "libfast.so.1": ["libbase.so.2"]}
    companions = {"lib.core": [("files", "__ingot__/re/0123456789abcdef")]}
    order = first_use_order(["app"], imports, kinds, needed, companions, lazy=["app"])
    assert order == [
        ("modules", "app"),
        ("modules", "json"),
        ("modules", "app.cli"),
        ("modules", "lib"),
        ("modules", "lib.core"),
        ("files", "__ingot__/re/0123456789abcdef"),
        ("libraries", "libbase.so.2"),
        ("libraries", "libfast.so.1"),
        ("modules", "lib._speedups"),
    ]  # `unused` is imported in a function of app.cli, which is not an entry module


def test_an_extension_module_leads_to_the_modules_of_its_package_its_strings_name():
    """Issue 42: C code imports by name, which no Python source shows (scipy.special._ufuncs
    imports scipy.special._ufuncs_cxx; Cython's cimports are imports of the module that exports
    the functions): the dotted names of the module's own package among an extension module's
    strings are followed, those of other packages (Cython's `asyncio.coroutines`) are not."""
    from ingot.build.archive.entries import Scan, package_imports

    image = (
        b"\x7fELF\x00pkg._ext\x00pkg.sub\x00asyncio.coroutines\x00pkg.sub.attr\x00numpy\x00"
        b"a docstring naming pkg.other\x00pkg.later\x00"
    )
    assert package_imports("pkg._ext", image) == ["pkg.later", "pkg.sub", "pkg.sub.attr"]
    scan = Scan(imports={"pkg._ext": {TOP: ["pkg.first"]}})
    scan.native("extension-module", "pkg._ext", image)
    assert scan.imports["pkg._ext"][TOP] == ["pkg.first", "pkg.later", "pkg.sub", "pkg.sub.attr"]
    kinds = {
        "pkg": "package",
        "pkg._ext": "extension-module",
        "pkg.first": "module",
        "pkg.sub": "module",
        "pkg.later": "module",
        "pkg.other": "module",
        "asyncio": "package",
        "asyncio.coroutines": "module",
    }
    order = first_use_order(["pkg._ext"], scan.imports, kinds, {})
    assert order == [
        ("modules", "pkg"),
        ("modules", "pkg._ext"),
        ("modules", "pkg.first"),
        ("modules", "pkg.later"),
        ("modules", "pkg.sub"),
    ]


def test_pack_puts_the_entry_modules_import_graph_first(tmp_path):
    site = tmp_path / "site"
    (site / "app").mkdir(parents=True)
    (site / "app" / "__init__.py").write_text("import app.zeta\n")
    (site / "app" / "zeta.py").write_text("import json\n")
    (site / "app" / "alpha.py").write_text("X = 1\n")
    ordered, plain = tmp_path / "ordered.ingot", tmp_path / "plain.ingot"
    pack(ordered, directories=[site], entry_modules=["app"])
    pack(plain, directories=[site])
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = {
        "encodings": stdlib / "encodings" / "__init__.py",
        "app": site / "app" / "__init__.py",
        "app.zeta": site / "app" / "zeta.py",
        "json": stdlib / "json" / "__init__.py",
        "app.alpha": site / "app" / "alpha.py",
    }
    roots = {"encodings": stdlib, "json": stdlib}
    at = {name: _offset(ordered, path, roots.get(name, site)) for name, path in files.items()}
    assert at["encodings"] < at["app"] < at["app.zeta"] < at["json"] < at["app.alpha"]
    assert _offset(plain, files["app.alpha"], site) < _offset(plain, files["app.zeta"], site)
    # The same entries, plus the list the launcher's read-ahead thread follows.
    listing = ingot.IngotFinder(str(ordered))._read("__ingot__/first-use").decode().splitlines()
    assert listing[0] == "f __ingot__/first-use"
    modules = [line[2:] for line in listing if line.startswith("m ")]
    # The launcher's modules (and what they import first: 3.14's io imports _collections_abc),
    # then the entry module's graph.
    boot = modules[: modules.index("app")]
    assert [name for name in boot if name in BOOT_MODULES] == list(BOOT_MODULES)
    assert modules[len(boot) : len(boot) + 4] == ["app", "app.zeta", "json", "json.decoder"]
    assert "app.alpha" not in modules
    extra = ("data-file", "__ingot__/first-use", len("\n".join(listing)) + 1)
    assert sorted(ingot.IngotFinder(str(ordered)).entries()) == sorted(
        [*ingot.IngotFinder(str(plain)).entries(), extra]
    )


def _offset(archive, source, root):
    """Where the bytecode of the module at ``source`` starts in ``archive`` (ingot compiles the
    same bytes every time: builds are reproducible)."""
    relpath = source.relative_to(root).as_posix()
    bytecode = compile_module(source.read_bytes(), relpath, (0,))[0]
    return archive.read_bytes().index(bytecode)


def test_the_launcher_imports_only_boot_modules_before_the_application(tmp_path, launcher):
    """BOOT_MODULES lists what an executable imports from its archive before the application's
    own code (they lead the first-use order); an application that imports nothing sees no
    others."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "print(' '.join(sorted(name for name, module in list(sys.modules.items()) if "
        "type(getattr(getattr(module, '__spec__', None), 'loader', None)).__name__ "
        "== 'IngotFinder')))\n"
    )
    out = tmp_path / "probe"
    pip_build(tmp_path, script, "--launcher", launcher, "-o", out, "-q")
    run = proclimit.run([str(out)], max_processes=16, timeout=60)
    assert not run.timed_out and run.limit_hit == 0 and run.returncode == 0, run.stderr
    seen = set(run.stdout.split()) - {"__main__"}
    assert seen and seen <= set(BOOT_MODULES), seen - set(BOOT_MODULES)


def test_read_ahead_runs_on_a_second_cpu_only(tmp_path, launcher):
    """The launcher starts its read-ahead thread when the process may use two CPUs or more, and
    not when it is bound to one (the thread would only take turns with the interpreter)."""
    if shutil.which("strace") is None or shutil.which("taskset") is None:
        pytest.skip("needs strace and taskset")
    if elf_machine(Path(shutil.which("strace"))) != platform.machine():
        # This interpreter is emulated (qemu-user): strace would count the emulator's threads.
        pytest.skip(f"strace is for {elf_machine(Path(shutil.which('strace')))}, not this machine")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this machine gives the tests one CPU")
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\n")
    out = tmp_path / "hello"
    pip_build(tmp_path, script, "--launcher", launcher, "-o", out, "-q")
    threads = {}
    for name, prefix in (("two", []), ("one", ["taskset", "-c", "0"])):
        log = tmp_path / f"{name}.strace"
        run = proclimit.run(
            [*prefix, "strace", "-f", "-qq", "-o", str(log), "-e", "trace=clone,clone3", str(out)],
            max_processes=16,
            timeout=60,
        )
        assert not run.timed_out and run.limit_hit == 0, run.stderr
        assert run.returncode == 0 and run.stdout == "hello\n", run.stderr
        threads[name] = len([line for line in strace_calls(log) if "clone" in line])
    assert threads["two"] >= 1 and threads["one"] == 0, threads


@pytest.mark.parametrize("options", [[], ["--compress-start"]], ids=["default", "compress-start"])
def test_a_process_forked_while_reading_ahead_imports_native_code(tmp_path, launcher, options):
    """A child forked at once (the read-ahead thread most likely still at work, and not copied
    into the child) loads extension modules, and with `--compress-start` decompresses the
    bytecode, itself, neither waiting for that thread nor using its half-made state."""
    script = tmp_path / "forker.py"
    script.write_text(
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    import decimal, json\n"
        "    print('child', decimal.Decimal('1.5') + 1, json.dumps([1]), flush=True)\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "import decimal\n"
        "print('parent', decimal.Decimal('2.5'), os.waitstatus_to_exitcode(status))\n"
    )
    out = tmp_path / "forker"
    pip_build(tmp_path, script, "--launcher", launcher, "-o", out, "-q", *options)
    for _ in range(5):
        run = proclimit.run([str(out)], max_processes=16, timeout=60)
        assert not run.timed_out and run.limit_hit == 0 and run.returncode == 0, run.stderr
        assert run.stdout == "child 2.5 [1]\nparent 2.5 0\n"


def test_compress_start_compresses_the_bytecode_a_start_reads(tmp_path, launcher):
    """Issue 42: by default a start hands marshal the bytecode in place (stored as is);
    `--compress-start` stores it compressed too, for a smaller executable that runs the same."""
    from ingot._ingot import IngotFinder

    script = tmp_path / "hello.py"
    # The pause lets the read-ahead thread get ahead of the imports after it, as it does while
    # a larger application starts; the finder then says whether imports took bytecode it
    # decompressed.
    script.write_text(
        "import sys, time\ntime.sleep(0.3)\nimport json, email.message\n"
        "print(json.dumps({'hello': 1}))\n"
        "finder = next(f for f in sys.meta_path if type(f).__name__ == 'IngotFinder')\n"
        "print(finder._prefetched()[0] > 0)\n"
    )
    outputs = {}
    for name, options in (("in-place", []), ("compressed", ["--compress-start"])):
        out = tmp_path / name
        pip_build(tmp_path, script, "--launcher", launcher, "-o", out, "-q", *options)
        run = proclimit.run([str(out)], max_processes=16, timeout=60)
        assert not run.timed_out and run.limit_hit == 0 and run.returncode == 0, run.stderr
        # Compressed, the start's bytecode is decompressed on the read-ahead thread.
        prefetched = "True" if options else "False"
        assert run.stdout == '{"hello": 1}\n' + prefetched + "\n", (name, run.stdout)
        sizes = {name: (size, stored) for _, name, size, stored in IngotFinder(out).entry_sizes()}
        outputs[name] = (out.stat().st_size, sizes)
        # `ingot inspect` says how much of the start's bytecode is read in place.
        in_place = describe(out)["bytecode_read_in_place"]
        assert ("email.message" in in_place) == (not options), (name, sorted(in_place))
    (in_place, before), (compressed, after) = outputs["in-place"], outputs["compressed"]
    assert compressed < in_place, (compressed, in_place)
    # email.message is read by the start; its bytecode (most of it) shrinks; its size does not.
    assert after["email.message"][0] == before["email.message"][0]
    assert after["email.message"][1] < before["email.message"][1] * 0.8, (before, after)


def test_inspect_sizes_names_the_bytecode_a_start_reads_in_place_from_a_mebibyte():
    """`ingot inspect --sizes` says how much bytecode a start reads in place, when there is
    1 MiB or more of it, and that --compress-start would store it compressed."""
    from ingot.output.inspect_text import _could_shrink

    lines = _could_shrink([], {"big": 1 << 20, "small": 100})
    assert lines == [
        "bytecode a start reads, stored as is: 1.0 MiB in 2 modules (read in place; "
        "--compress-start stores it compressed, decompressed ahead of the imports)"
    ], lines
    assert _could_shrink([], {"small": (1 << 20) - 1}) == []
