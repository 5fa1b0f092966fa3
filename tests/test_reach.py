"""What a build carries: the modules the application can reach (ingot.build.archive.reach), on small trees of
real files, and through `ingot build` on the examples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingot.build.archive.collect import Item
from ingot.build.archive.reach import reach, stdlib_imports

from helpers import pip_build

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(textwrap.dedent(content))
        else:
            path.write_bytes(content)


def _plan(root: Path, where: dict[str, str]):
    """Plan keys for the files under ``root``: top directory -> origin in ``where``."""
    plan, origin = {}, {}
    for path in sorted(root.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(root)
        area, inner = rel.parts[0], Path(*rel.parts[1:])
        if inner.parts[0].endswith(".dist-info"):
            key, item = ("files", inner.as_posix()), Item("dist-info-file", inner.as_posix(), path)
        elif path.suffix == ".py":
            parts = list(inner.with_suffix("").parts)
            kind = "package" if parts[-1] == "__init__" else "module"
            name = ".".join(parts[:-1] if kind == "package" else parts)
            key, item = ("modules", name), Item(kind, name, path, inner.as_posix())
        elif path.suffix == ".so":
            name = ".".join(inner.with_suffix("").parts)
            key, item = ("modules", name), Item("extension-module", name, path)
        else:
            key, item = ("files", inner.as_posix()), Item("data-file", inner.as_posix(), path)
        plan[key] = item
        origin[key] = where[area]
    return plan, origin


def _modules(decided) -> set[str]:
    return {name for namespace, name in decided.kept if namespace == "modules"}


def test_the_standard_library_is_carried_module_by_module_as_far_as_imports_reach(tmp_path):
    _tree(
        tmp_path,
        {
            "lib/used.py": """
            import sys
            try:
                from _fast import helper
            except ImportError:
                from slow import helper
            if sys.platform == "win32":
                import winonly
            def later():
                import lazy
            def _test():
                import selftest
            if __name__ == "__main__":
                _test()
            """,
            "lib/_fast.so": b"\x7fELF\x00\x00_private_dep\x00some text\x00",
            "lib/_private_dep.py": "",
            "lib/slow.py": "",
            "lib/winonly.py": "",
            "lib/lazy.py": "",
            "lib/selftest.py": "",
            "lib/unused.py": "import lazy\n",
            "app/main.py": "import used\n",
        },
    )
    plan, origin = _plan(tmp_path, {"lib": "stdlib", "app": "app"})
    decided = reach(plan, origin, ["main"])
    assert _modules(decided) == {"main", "used", "_fast", "_private_dep", "lazy"}
    assert {name for name, (where, _, _) in decided.left_out.items() if where == "stdlib"} == {
        "slow",
        "winonly",
        "selftest",
        "unused",
    }
    # The fallback is followed when what the try imports is not there.
    del plan[("modules", "_fast")]
    assert "slow" in _modules(reach(plan, origin, ["main"]))


def test_other_packages_go_whole_without_their_tests_and_only_when_reached(tmp_path):
    _tree(
        tmp_path,
        {
            "app/main.py": """
            import importlib
            import lib_a
            BACKEND = "lib_b.backends.fast"
            def plugins():
                from importlib.metadata import entry_points
                return entry_points(group="main.plugins")
            """,
            "env/lib_a/__init__.py": "",
            "env/lib_a/loaded_by_name.py": "",
            "env/lib_a/tests/__init__.py": "",
            "env/lib_a/tests/test_a.py": "",
            "env/lib_a/tests/data/reference.npz": b"PK\x03\x04",
            "env/lib_a/sub/__init__.py": "",
            "env/lib_a/sub/tests/__init__.py": "",
            "env/lib_a/sub/tests/expected.txt": "1",
            "env/lib_a/data.json": "{}",
            "env/lib_a/testing/__init__.py": "",
            "env/lib_a/testing/tolerances.json": "{}",
            "env/lib_a/fixtures/tests/not_a_package.txt": "kept",
            "env/lib_b/__init__.py": "",
            "env/lib_b/backends/__init__.py": "",
            "env/lib_b/backends/fast.py": "",
            "env/plugin_c/__init__.py": "",
            "env/plugin_c-1.0.dist-info/entry_points.txt": "[main.plugins]\nc = plugin_c:hook\n",
            "env/plugin_c-1.0.dist-info/RECORD": "plugin_c/__init__.py,,\n",
            "env/pip/__init__.py": "",
            "env/pip/_internal.py": "",
            "env/pip-26.0.dist-info/RECORD": "pip/__init__.py,,\npip/_internal.py,,\n",
        },
    )
    plan, origin = _plan(tmp_path, {"app": "app", "env": "env"})
    decided = reach(plan, origin, ["main"])
    modules = _modules(decided)
    assert {"lib_a", "lib_a.loaded_by_name", "lib_b.backends.fast", "plugin_c"} <= modules
    assert "lib_a.tests" not in modules and "pip" not in modules
    assert ("files", "lib_a/data.json") in decided.kept
    assert ("files", "plugin_c-1.0.dist-info/entry_points.txt") in decided.kept
    assert ("files", "pip-26.0.dist-info/RECORD") not in decided.kept
    assert decided.left_out["pip"][0] == "env"
    # (a left-out part of a carried package is named as such, not as the package: issue 40)
    assert "lib_a.tests" in decided.left_out and "lib_a" not in decided.left_out
    # A test suite's data goes with its modules (issue 42: scipy's 3.1 MiB); a test package
    # something imports keeps its data, and data in a directory that is no package stays.
    assert ("files", "lib_a/tests/data/reference.npz") not in decided.kept
    assert ("files", "lib_a/sub/tests/expected.txt") not in decided.kept
    assert decided.left_out["lib_a.sub.tests"][1:] == (1, 1)
    assert decided.left_out["lib_a.tests"][1] == 3  # __init__, test_a, reference.npz
    assert ("files", "lib_a/fixtures/tests/not_a_package.txt") in decided.kept
    assert ("files", "lib_a/testing/tolerances.json") not in decided.kept
    (tmp_path / "app" / "main.py").write_text("import lib_a.testing\n")
    assert ("files", "lib_a/testing/tolerances.json") in reach(plan, origin, ["main"]).kept
    (tmp_path / "app" / "main.py").write_text("import lib_a\n")
    included = reach(plan, origin, ["main"], keep=["lib_a.tests"])
    assert ("files", "lib_a/tests/data/reference.npz") in included.kept
    # --include carries what nothing reaches.
    assert "pip._internal" in _modules(reach(plan, origin, ["main"], keep=["pip"]))
    # What only the package's going whole brings is said (its native code gets nothing of the
    # build machine's system: PyQt5.QtNetwork of an app that imports QtWidgets); what an import,
    # a name or an entry point leads to is not.
    assert decided.whole_only == {"lib_a.loaded_by_name", "lib_a.sub"}


def test_what_only_a_string_names_is_said_with_its_size_and_what_names_it(tmp_path):
    # Issue 42, item 3: a module no import leads to, carried because a string names it (a dotted
    # name in a source, a name in a binary), is worth a line in the build's report.
    from ingot.build.archive.pack import PackResult
    from ingot.build.report import summary

    _tree(
        tmp_path,
        {
            "app/main.py": """
            import used, lib_a
            BACKEND = "lib_b.backends"
            SHOWN = "lib_a.io"
            """,
            "lib/used.py": "import _ext\n",
            "lib/_ext.so": b"\x7fELF\x00\x00named_in_binary\x00",
            "lib/named_in_binary.py": "import brought_along\n",
            "lib/brought_along.py": "x = 1\n" * 100,
            "env/lib_a/__init__.py": "from . import io\n",
            "env/lib_a/io.py": "",
            "env/lib_b/__init__.py": "",
            "env/lib_b/backends.py": "#" * 3000,
            "env/lib_b/other.py": "",
        },
    )
    plan, origin = _plan(tmp_path, {"app": "app", "lib": "stdlib", "env": "env"})
    decided = reach(plan, origin, ["main"])
    assert {"named_in_binary", "brought_along", "lib_b.other", "lib_a.io"} <= _modules(decided)
    # (lib_a.io is imported too; lib_b goes whole with the module named, all of it for the name)
    assert decided.named_only == {
        "named_in_binary": ("_ext", len("import brought_along\n") + len("x = 1\n" * 100)),
        "lib_b.backends": ("main", 3000),
    }
    result = PackResult(tmp_path / "out", 0, named_only=decided.named_only)
    said: list[str] = []
    summary(result, said.append)
    assert said[-1] == (
        "carried only because a string names them (no import seen): lib_b.backends (in main: "
        "2.9 KiB), named_in_binary (in _ext: 621 B) (3.5 KiB in all; --exclude NAME leaves one "
        "out)"
    )


def test_functions_only_the_main_block_calls_are_not_followed():
    source = textwrap.dedent("""
        def main():
            import argparse
        def _helper():
            import json
        def api():
            return _helper()
        if __name__ == "__main__":
            main()
        """).encode()
    found = stdlib_imports(source, "tool", False, set())
    assert "json" in found and "argparse" not in found


def test_the_main_block_of_the_module_run_as_main_is_the_program(tmp_path):
    # Issue 37, regression 1: a script's own `if __name__ == "__main__":` block, and what the
    # functions it calls import, are carried (another module's main block still is not).
    _tree(
        tmp_path,
        {
            "lib/tool.py": """
            def main():
                import argparse
            if __name__ == "__main__":
                import json
                main()
            """,
            "lib/json.py": "",
            "lib/argparse.py": "",
            "lib/colorsys.py": "",
            "lib/csv.py": "",
            "app/script.py": """
            import tool
            def run():
                import colorsys
            if __name__ == "__main__":
                import csv
                run()
            """,
        },
    )
    plan, origin = _plan(tmp_path, {"lib": "stdlib", "app": "app"})
    assert _modules(reach(plan, origin, ["script"], main="script")) == {
        "script",
        "tool",
        "csv",
        "colorsys",
    }
    # A standard-library module run as __main__ (`--module tool`): its main block and main().
    assert _modules(reach(plan, origin, [], main="tool")) >= {"tool", "json", "argparse"}
    found = stdlib_imports(
        b"def main():\n    import a\nif __name__ == '__main__':\n    main()\n    import b\n",
        "tool",
        False,
        set(),
        as_main=True,
    )
    assert found == ["a", "b"]


def test_a_packages_own_fallback_module_is_carried():
    source = (
        b"try:\n    from _fast import Thing\nexcept ImportError:\n    from ._slow import Thing\n"
    )
    assert "pkg._slow" in stdlib_imports(source, "pkg", True, {"_fast"})
    source = (
        b"try:\n    from _fast import Thing\nexcept ImportError:\n    from other import Thing\n"
    )
    assert "other" not in stdlib_imports(source, "pkg", True, {"_fast"})


def test_packages_with_native_code_are_probed_for_what_they_import(tmp_path):
    _tree(
        tmp_path,
        {
            "app/main.py": "import fast\n",
            "env/fast/__init__.py": "from fast._core import x\n",
            "env/fast/_core.so": b"\x7fELF compressed strings only",
            "lib/colorsys.py": "",
            "lib/unrelated.py": "",
        },
    )
    plan, origin = _plan(tmp_path, {"app": "app", "env": "env", "lib": "stdlib"})
    asked = []

    def probe(tops):
        asked.append(tops)
        return {"colorsys", "fast", "not.in.the.build"}

    decided = reach(plan, origin, ["main"], probe=probe)
    assert asked == [["fast"]]
    assert "colorsys" in _modules(decided) and "unrelated" not in _modules(decided)


def test_the_import_probe_reports_what_importing_a_package_imported(tmp_path):
    from ingot.build.archive.probe import import_probe

    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "import colorsys\nprint('noise')\n",
            "broken/__init__.py": "raise RuntimeError('at import')\n",
        },
    )
    found = import_probe([str(tmp_path)])(["pkg", "broken"])
    assert {"pkg", "colorsys"} <= found and "broken" not in found


DYNAMIC_APP = """\
import importlib


def main():
    found = [importlib.import_module("json.tool").__name__,
             __import__("xml.dom.minidom", fromlist=["Node"]).__name__]
    computed = "color" + "sys"  # a name no scan can see
    try:
        found.append(importlib.import_module(computed).__name__)
    except ModuleNotFoundError as error:
        found.append(f"missing {error.name}")
    print(" ".join(found))


if __name__ == "__main__":
    main()
"""


def test_an_executable_imports_modules_named_in_strings_and_include_brings_back_the_rest(
    tmp_path,
    launcher_here,
):
    from test_launcher import run

    script = tmp_path / "dynamic.py"
    script.write_text(DYNAMIC_APP)
    built = pip_build(tmp_path, script, "--launcher", launcher_here, "-o", tmp_path / "lean")
    assert "left out, as nothing imports them, of the standard library" in built.stderr
    names = {
        entry["name"]
        for entry in json.loads(
            subprocess.run(
                [sys.executable, "-m", "ingot", "inspect", "--json", str(tmp_path / "lean")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )["entries"]
    }
    assert {"json.tool", "xml.dom.minidom", "encodings.cp1252"} <= names
    assert not names & {"colorsys", "tkinter", "idlelib", "unittest", "ensurepip", "pip"}
    result = run(tmp_path / "lean")
    assert (result.returncode, result.stdout) == (
        0,
        "json.tool xml.dom.minidom missing colorsys\n",
    ), result.stderr
    pip_build(
        tmp_path,
        script,
        "--launcher",
        launcher_here,
        "-o",
        tmp_path / "full",
        "--include",
        "colorsys",
    )
    result = run(tmp_path / "full")
    assert (result.returncode, result.stdout) == (0, "json.tool xml.dom.minidom colorsys\n"), (
        result.stderr
    )


def test_the_imports_of_code_in_strings_are_followed(tmp_path):
    # Issue 52, item 5: code for `python -c`, exec or runpy, held in a string constant.
    _tree(
        tmp_path,
        {
            "app/main.py": '''
            """The app. Its docstring shows code, which nothing runs:

                import fromdocstring
            """
            import subprocess, sys
            CHILD = "import getpassish; p = getpassish.getpass('Password: '); print(p)"
            subprocess.run([sys.executable, "-c", CHILD])
            TEMPLATE = """
                import os
                from xml.domish import minidomish
            """
            exec(TEMPLATE)
            FORMATTED = "import sys; sys.path.insert(0, {!r}); import formatted".format("/x")
            "import barestring"
            MESSAGE = "Please import notcode before use"
            BROKEN = "import notparsed; if:"
            ''',
            "lib/subprocess.py": "",
            "lib/sys.py": "",
            "lib/os.py": "",
            "lib/getpassish.py": "",
            "lib/xml/__init__.py": "",
            "lib/xml/domish/__init__.py": "",
            "lib/xml/domish/minidomish.py": "",
            "lib/formatted.py": "",
            "lib/fromdocstring.py": "",
            "lib/barestring.py": "",
            "lib/notcode.py": "",
            "lib/notparsed.py": "",
        },
    )
    plan, origin = _plan(tmp_path, {"lib": "stdlib", "app": "app"})
    kept = _modules(reach(plan, origin, ["main"]))
    assert {"getpassish", "os", "xml.domish.minidomish", "formatted"} <= kept
    assert not kept & {"fromdocstring", "barestring", "notcode", "notparsed"}
    # A module reached only by code in a string is reached as by an import, not only named.
    assert "getpassish" not in reach(plan, origin, ["main"]).named_only


def test_code_in_strings_is_parsed_only_where_a_literal_looks_like_it():
    from ingot.build.archive.codestrings import _may_hold_code, code_string_imports

    assert not _may_hold_code(b'"""Docs."""\nimport os\nx = "import"\n')
    assert _may_hold_code(b"x = 'import os; os.getcwd()'\n")
    assert _may_hold_code(b'x = """\n    from a import b\n"""\n')
    assert code_string_imports(b"x = 'from a.b import c, d as e'\n") == ["a.b", "a.b.c", "a.b.d"]
    assert code_string_imports(b"x = 'from . import c'\n") == []  # (no package in -c code)


def test_a_stdlib_module_used_only_in_a_c_string_runs_in_the_executables_self_call(
    tmp_path, launcher_here
):
    # The pexpect case of issue 52: the child the app starts from its own executable runs
    # `-c` code importing modules that nothing else of the app imports.
    from test_launcher import run

    script = tmp_path / "child.py"
    script.write_text(
        "import subprocess, sys\n"
        'CODE = "import wave, getpass; print(wave.__name__, getpass.__name__)"\n'
        'done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)\n'
        "print(done.returncode, done.stdout.strip(), done.stderr.strip()[-300:])\n"
    )
    pip_build(tmp_path, script, "--launcher", launcher_here, "-o", tmp_path / "child")
    result = run(tmp_path / "child")
    assert (result.returncode, result.stdout) == (0, "0 wave getpass \n"), result.stderr


def test_a_scripts_main_block_imports_are_carried_into_the_executable(tmp_path, launcher_here):
    from test_launcher import run

    script = tmp_path / "m.py"
    script.write_text(
        "def report():\n    import colorsys\n    return colorsys.__name__\n"
        'if __name__ == "__main__":\n    import json\n    print(json.dumps([1, report()]))\n'
    )
    pip_build(tmp_path, script, "--launcher", launcher_here, "-o", tmp_path / "m")
    result = run(tmp_path / "m")
    assert (result.returncode, result.stdout) == (0, '[1, "colorsys"]\n'), result.stderr


def test_a_frozen_module_is_never_missing(tmp_path, launcher_here):
    # Issue 37, item 8: the interpreter's frozen modules are its own, like built-in ones.
    from test_launcher import run

    script = tmp_path / "hello.py"
    script.write_text("import __hello__\n__hello__.main()\n")
    pip_build(tmp_path, script, "--launcher", launcher_here, "-o", tmp_path / "hello")
    result = run(tmp_path / "hello")
    assert (result.returncode, result.stdout) == (0, "Hello world!\n"), result.stderr


def test_module_names_in_binaries_leave_out_the_binarys_own_methods():
    from ingot.build.archive.reach import binary_names, loose_binary_names

    image = (
        b"\x00numbers\x00readline\x00readline($self, size=-1, /)\n--\n\n\x00_strptime\x00"
        b"xml.etree.ElementPath\x00"
    )
    found = binary_names(image)
    assert {"numbers", "_strptime", "xml.etree.ElementPath"} <= found and "readline" not in found
    # Rust and Cython 3 pools: no NUL around the names.
    assert {"datetime", "uuid"} <= loose_binary_names(b"\x01\x02datetime uuid\xffstr")


def _stdlib_plan():
    """Plan keys for the standard library this Python runs (its modules as ingot.build.archive.collect finds
    them), all of origin "stdlib"."""
    from ingot.build.archive.collect import collect_stdlib

    plan = {
        ("modules", item.name): item for item in collect_stdlib().items if item.kind != "data-file"
    }
    return plan, dict.fromkeys(plan, "stdlib")


def test_imports_that_only_their_target_module_runs_wait_for_that_module(tmp_path):
    plan, origin = _stdlib_plan()
    _tree(
        tmp_path,
        {
            "quiet.py": "print('hello')\n",
            "meta.py": "from importlib.metadata import version\n",
            "res.py": "import importlib.resources\n",
        },
    )
    for name in ("quiet", "meta", "res"):
        key = ("modules", name)
        plan[key], origin[key] = Item("module", name, tmp_path / f"{name}.py", f"{name}.py"), "app"
    boot = ["encodings", "codecs", "io", "abc", "zipimport", "importlib.machinery"]
    # importlib._bootstrap_external (behind importlib.machinery) and zipimport import
    # importlib.metadata and importlib.readers lazily, for importlib.metadata and
    # importlib.resources only: an application using neither carries neither.
    quiet = _modules(
        reach(
            {k: v for k, v in plan.items() if k[1] not in ("meta", "res")}, origin, ["quiet", *boot]
        )
    )
    assert "importlib._bootstrap_external" in quiet and "zipimport" in quiet
    assert not quiet & {"importlib.metadata", "importlib.readers", "email", "zipfile", "tarfile"}
    meta = _modules(
        reach({k: v for k, v in plan.items() if k[1] != "res"}, origin, ["meta", *boot])
    )
    assert {"importlib.metadata", "email", "zipfile"} <= meta
    res = _modules(reach({k: v for k, v in plan.items() if k[1] != "meta"}, origin, ["res", *boot]))
    assert {"importlib.resources", "importlib.readers", "zipfile"} <= res


def test_module_names_in_a_binarys_debug_information_are_not_imports():
    import glob
    import sysconfig

    from ingot._ingot import loadable_image
    from ingot.build.archive.reach import _loaded_part, binary_names

    found = glob.glob(f"{sysconfig.get_config_var('DESTSHARED')}/binascii*.so")
    image = Path(found[0]).read_bytes()
    loaded = _loaded_part(image)
    assert loaded == bytes(loadable_image(image))
    # What is cut is debug information (none in a stripped build: then nothing changes), where
    # an unstripped binascii names a struct field `inspect`.
    assert binary_names(loaded) <= binary_names(image)
    assert "binascii.Error" in binary_names(loaded)
    assert "inspect" not in binary_names(loaded)
    if len(loaded) < len(image):
        assert "inspect" in binary_names(image)


def test_optional_documentation_that_its_module_does_without_stays_out(tmp_path):
    _tree(
        tmp_path,
        {
            "app/main.py": "import pydoc\n",
            "lib/pydoc.py": """
            def showtopic():
                try:
                    import pydoc_data.topics
                except ImportError:
                    return "Sorry, topic documentation is not available"
            def other():
                import textwrap
            """,
            "lib/pydoc_data/__init__.py": "",
            "lib/pydoc_data/topics.py": "",
            "lib/textwrap.py": "",
        },
    )
    plan, origin = _plan(tmp_path, {"app": "app", "lib": "stdlib"})
    modules = _modules(reach(plan, origin, ["main"]))
    assert {"pydoc", "textwrap"} <= modules and "pydoc_data.topics" not in modules
    assert "pydoc_data.topics" in _modules(reach(plan, origin, ["main"], keep=["pydoc_data"]))


def test_the_names_in_native_images_are_what_the_documented_patterns_find():
    """ingot._ingot's scans of native images (Rust) against the patterns reach.py documents, on
    this Python's extension modules, its ingot extension (Rust strings, without NULs) and the
    edges of the patterns."""
    import sysconfig

    import ingot._ingot
    from ingot.build.archive import reach as module

    images = [path.read_bytes() for path in Path(sysconfig.get_path("platstdlib")).rglob("*.so")]
    images.append(Path(ingot._ingot.__file__).read_bytes())
    images += [
        b"\0numbers\0" + b"a" * 121 + b"\0\0" + b"b" * 122 + b"\0x\0",
        b"\0readline($self)\0readline\0close()\0open(\0_p(*a)\0x9(y)\0",
        b"run" * 100 + b".a..b\0\0" + b"\0" * 3,
        b"",
        b"a",
    ]
    assert len(images) > 20
    for image in images:
        documented = set(module._SIGNATURE.findall(image))
        expected = {
            match.decode()
            for match in module._BINARY_NAME.findall(image)
            if match not in documented
        }
        assert module.binary_names(image) == expected
        loose = {match.decode() for match in module._IDENTIFIER_RUN.findall(image)}
        assert module.loose_binary_names(image) == loose
