"""Collecting the standard library and directories of packages, packing them, and `ingot pack`."""

from __future__ import annotations

import glob
import importlib.machinery
import marshal
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ingot import cli, elf
from ingot.build.archive.bytecode import canonical_marshal, compile_module
from ingot.build.archive.pack import KINDS, PackOptions, collect_directory, collect_stdlib, pack
from ingot.errors import CollectError, IngotError, PackError
from ingot.stdlib import is_excluded

from helpers import needed_by_stdlib_module

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def kinds(collection) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for item in collection.items:
        found[item.kind].add(item.name)
    return found


@pytest.fixture(scope="session")
def pip_target(tmp_path_factory) -> Path:
    """six (a module), certifi (a package with data), rich: installed by pip from PyPI."""
    target = tmp_path_factory.mktemp("target")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--target",
            str(target),
            "--no-deps",
            "--disable-pip-version-check",
            "--quiet",
            "six",
            "certifi",
            "rich",
        ],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        pytest.skip(f"pip could not install from PyPI: {run.stderr.strip()[-300:]}")
    return target


@pytest.fixture(scope="session")
def stdlib_pack(tmp_path_factory):
    output = tmp_path_factory.mktemp("stdlib") / "stdlib.ingot"
    return pack(output)


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


# --- the standard library ------------------------------------------------------------------------


def test_stdlib_collection_leaves_out_tests_idlelib_and_tkinter():
    found = kinds(collect_stdlib())
    modules = found["module"] | found["package"] | found["extension-module"]
    for left_out in (
        "test",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "ensurepip",
        "__phello__",
        "__hello__",
        "_testcapi",
        "_tkinter",
        "xxlimited",
    ):
        assert not any(m == left_out or m.startswith(left_out + ".") for m in modules), left_out
    assert not any(
        ".test." in f".{m}." or ".tests." in f".{m}." or "idle_test" in m for m in modules
    )
    assert not any(
        name.startswith(("test/", "idlelib/", "tkinter/")) for name in found["data-file"]
    )


def test_stdlib_collection_includes_json_email_and_lib_dynload_extensions():
    found = kinds(collect_stdlib())
    assert {"json", "email", "email.mime", "importlib", "encodings"} <= found["package"]
    assert {"os", "json.decoder", "email.message", "pydoc_data.topics"} <= found["module"]
    # Those this interpreter builds as shared modules (Debian builds math and _json into
    # libpython: they are built-in there, not files in lib-dynload).
    shared = {"math", "_ssl", "_sqlite3", "_json"} - set(sys.builtin_module_names)
    assert {"_ssl", "_sqlite3"} <= shared
    assert shared <= found["extension-module"]
    assert not any(
        name.startswith("site-packages") or "config-" in name
        for names in found.values()
        for name in names
    )


def test_stdlib_data_files_are_package_relative_paths():
    data = kinds(collect_stdlib())["data-file"]
    assert "pydoc_data/_pydoc.css" in data
    assert "email/architecture.rst" in data
    if (STDLIB / "lib2to3").is_dir():  # removed in 3.13
        assert "lib2to3/Grammar.txt" in data
    assert not any(name.endswith((".py", ".pyc")) or "__pycache__" in name for name in data)


def test_stdlib_has_no_invented_namespace_packages():
    assert kinds(collect_stdlib())["namespace-package"] == set()


def test_stdlib_exclude_patterns_are_configurable():
    found = kinds(collect_stdlib(exclude=("xml", "*.test", "_test*", "json.*")))
    assert not any(name == "xml" or name.startswith("xml.") for name in found["package"])
    assert "json" in found["package"] and "json.decoder" not in found["module"]
    everything = kinds(collect_stdlib(exclude=()))
    assert "test.support" in everything["package"]
    assert "_testcapi" in everything["extension-module"]


def test_is_excluded_matches_a_name_or_any_parent_package():
    assert is_excluded("unittest.test.testmock", ["*.test"])
    assert is_excluded("test", ["test"]) and is_excluded("test.support", ["test"])
    assert not is_excluded("pytest", ["test"]) and not is_excluded("contest.x", ["test"])


def test_stdlib_pack_has_ssl_and_sqlite_libraries_but_not_libc(stdlib_pack):
    libraries = stdlib_pack.names("shared-library")
    # The libraries this interpreter's _ssl and _sqlite3 link (none in a runtime's: static).
    wanted = {
        name
        for name in needed_by_stdlib_module("_ssl") | needed_by_stdlib_module("_sqlite3")
        if name.startswith(("libssl", "libcrypto", "libsqlite3"))
    }
    assert wanted <= libraries
    assert not any(elf.is_host_library(name) for name in libraries)
    assert "libc.so.6" not in libraries


def test_stdlib_pack_result_counts_and_sizes(stdlib_pack):
    assert stdlib_pack.counts["module"] > 400 and stdlib_pack.counts["extension-module"] > 30
    assert sum(stdlib_pack.counts.values()) == len(stdlib_pack.manifest)
    assert stdlib_pack.size == stdlib_pack.output.stat().st_size
    data = stdlib_pack.output.read_bytes()
    assert data.startswith(b"\x89INGOT\r\n") and data.endswith(b"INGOTEND")
    assert stdlib_pack.warnings == []


def test_packing_twice_gives_identical_bytes(stdlib_pack, pip_target, tmp_path):
    first = pack(tmp_path / "a.ingot", directories=[pip_target], optimize_levels=(0, 2))
    # Interning these one-letter identifiers changes what plain marshal.dumps writes for
    # html/entities.py; the archive must not change.
    held = compile("\u00fe = 1; \u00f8 = 2; \u00df = 3; \u00d0 = 4", "perturb.py", "exec")
    second = pack(tmp_path / "b.ingot", directories=[pip_target], optimize_levels=(0, 2))
    assert first.output.read_bytes() == second.output.read_bytes() and held
    again = pack(tmp_path / "c.ingot")
    assert again.output.read_bytes() == stdlib_pack.output.read_bytes()


# --- bytecode ------------------------------------------------------------------------------------


def test_canonical_marshal_loads_back_to_equal_code():
    source = (STDLIB / "html" / "entities.py").read_bytes()
    code = compile(source, "html/entities.py", "exec", dont_inherit=True)
    data = canonical_marshal(code)
    assert marshal.loads(data) == code
    assert len(data) <= len(marshal.dumps(code))


def test_canonical_marshal_does_not_depend_on_what_the_process_holds():
    # In a fresh interpreter: compile html/entities.py, intern a few one-letter strings it
    # holds as constants (by using them as identifiers), compile it again. Plain marshal.dumps
    # changes (CPython 3.10 to 3.12); the canonical form must not.
    script = (
        "import marshal, sys\n"
        "from ingot.build.archive.bytecode import canonical_marshal\n"
        "src = open(sys.argv[1], 'rb').read()\n"
        "before = canonical_marshal(compile(src, 'e.py', 'exec'))\n"
        "held = compile('\\u00fe = 1; \\u00f8 = 2; \\u00df = 3', 'x.py', 'exec')\n"
        "after = canonical_marshal(compile(src, 'e.py', 'exec'))\n"
        "print(before == after)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(STDLIB / "html" / "entities.py")],
        capture_output=True,
        text=True,
    )
    assert run.stdout.strip() == "True", run.stderr


def test_canonical_marshal_rewrites_every_stdlib_module():
    # A marshal type the re-encoder does not know (3.14's slice constants, ':') made it fall
    # back to plain marshal.dumps, whose output depends on the process: builds were not
    # reproducible on 3.14 and 3.15. Every module of the standard library must be re-encoded.
    from ingot import _ingot
    from ingot.build.archive import bytecode

    left_as_is = []
    for path in sorted(STDLIB.glob("*.py")):
        try:
            code = compile(path.read_bytes(), path.name, "exec", dont_inherit=True)
        except SyntaxError:
            continue
        layout = (bytecode._CODE, bytecode._NAME_TUPLES, bytecode._NAME)
        result = _ingot.canonical_marshal(marshal.dumps(code), *layout)
        if result is None:
            left_as_is.append(f"{path.name}: not laid out as expected")
        elif marshal.loads(result) != code:
            left_as_is.append(f"{path.name}: does not load back to equal code")
    assert left_as_is == []


def test_canonical_marshal_is_the_same_for_any_compilation_order():
    sources = {
        name: (STDLIB / name).read_bytes()
        for name in ("html/entities.py", "ftplib.py", "abc.py", "typing.py")
    }
    forward = {name: compile_module(src, name, (0, 1)) for name, src in sources.items()}
    backward = {name: compile_module(src, name, (0, 1)) for name, src in reversed(sources.items())}
    assert forward == backward


def test_compile_module_raises_syntax_error_without_warnings():
    with pytest.raises(SyntaxError):
        compile_module(b"print 'python 2'\n", "old.py", (0,))
    assert compile_module(b"x = '\\d'\n", "escape.py", (0,))  # SyntaxWarning in 3.12+: silent


# --- directories of packages ---------------------------------------------------------------------


def test_pip_target_directory_gives_modules_packages_data_and_dist_info(pip_target):
    collection = collect_directory(pip_target)
    found = kinds(collection)
    assert "six" in found["module"]
    assert {"certifi", "rich"} <= found["package"]
    assert {"certifi.core", "rich.console", "rich.text"} <= found["module"]
    assert "certifi/cacert.pem" in found["data-file"]
    dist_info = found["dist-info-file"]
    for project in ("six", "certifi", "rich"):
        assert any(
            name.startswith(f"{project}-") and name.endswith(".dist-info/METADATA")
            for name in dist_info
        ), project
    everything = {name for names in found.values() for name in names}
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in everything)
    assert all(
        item.relpath == f"{item.name.replace('.', '/')}.py"
        for item in collection.items
        if item.kind == "module"
    )
    assert collection.warnings == []


def test_namespace_package_is_detected(tmp_path):
    make_tree(
        tmp_path,
        {
            "nsp/sub/mod.py": "x = 1\n",
            "nsp/deep/er/leaf.py": "y = 2\n",
            "nsp/regular/__init__.py": "",
            "nsp/regular/data/table.csv": "a,b\n",
        },
    )
    found = kinds(collect_directory(tmp_path))
    assert {"nsp", "nsp.sub", "nsp.deep", "nsp.deep.er"} <= found["namespace-package"]
    assert {"nsp.sub.mod", "nsp.deep.er.leaf"} <= found["module"]
    assert "nsp.regular" in found["package"]
    assert "nsp.regular.data" not in found["namespace-package"]  # a plain data directory
    assert "nsp/regular/data/table.csv" in found["data-file"]


def test_plain_data_directory_at_top_level_is_not_a_package(tmp_path):
    make_tree(tmp_path, {"share/doc/readme.txt": "hi", "README.txt": "top", "ok.py": ""})
    found = kinds(collect_directory(tmp_path))
    assert found["namespace-package"] == set() and found["data-file"] == set()
    assert found["module"] == {"ok"}


def test_package_wins_over_module_of_the_same_name_with_a_warning(tmp_path):
    make_tree(tmp_path, {"dup/__init__.py": "", "dup.py": "", "solo.py": ""})
    collection = collect_directory(tmp_path)
    assert kinds(collection)["package"] == {"dup"} and kinds(collection)["module"] == {"solo"}
    assert any("dup.py" in warning and "left out" in warning for warning in collection.warnings)


def test_pth_files_are_reported_and_bin_and_data_dirs_skipped(tmp_path):
    make_tree(
        tmp_path,
        {
            "extra.pth": "/somewhere\n",
            "bin/tool": "#!/bin/sh\n",
            "pkg-1.0.data/scripts/x.py": "",
            "pkg/__init__.py": "",
        },
    )
    collection = collect_directory(tmp_path)
    assert any(
        "extra.pth" in warning and "not supported" in warning for warning in collection.warnings
    )
    assert [item.name for item in collection.items] == ["pkg"]


def test_wheel_libs_directory_gives_shared_libraries(tmp_path):
    libz = elf.ld_cache().get("libz.so.1", (None,))[0]
    if libz is None:
        pytest.skip("no libz.so.1 in the ld.so cache")
    make_tree(tmp_path, {"fake/__init__.py": ""})
    (tmp_path / "fake.libs").mkdir()
    shutil.copy(libz, tmp_path / "fake.libs" / "libz-0a1b2c3d.so.1.2.13")
    found = kinds(collect_directory(tmp_path))
    assert found["shared-library"] == {"libz-0a1b2c3d.so.1.2.13"}
    result = pack(tmp_path / "out.ingot", stdlib=False, directories=[tmp_path])
    assert result.names("shared-library") == {"libz-0a1b2c3d.so.1.2.13"}


def shared_stdlib_module():
    """(name, file) of a small standard-library extension module this interpreter has as a file
    in lib-dynload (which ones are built into the interpreter varies: Debian builds _json and
    _bisect in)."""
    dynload = os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")
    for name in ("_bisect", "_json", "_heapq", "_queue", "_lsprof", "_asyncio"):
        files = glob.glob(os.path.join(dynload, f"{name}.cpython-*.so"))
        if files:
            return name, files[0]
    raise AssertionError(f"no small extension module file in {dynload}")


def test_extension_modules_are_named_without_their_suffix(tmp_path):
    name, file = shared_stdlib_module()
    shutil.copy(file, tmp_path / os.path.basename(file))
    make_tree(tmp_path, {"pkg/__init__.py": "", "pkg/libhelper.so": b"\x7fELF not a module"})
    shutil.copy(file, tmp_path / "pkg" / f"{name}.abi3.so")
    found = kinds(collect_directory(tmp_path))
    assert found["extension-module"] == {name, f"pkg.{name}"}
    assert "pkg/libhelper.so" in found["data-file"]  # no PyInit_libhelper: not a module


def test_a_package_given_as_a_directory_of_packages_is_reported(tmp_path):
    make_tree(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": ""})
    collection = collect_directory(tmp_path / "pkg")
    assert any("did you mean its parent" in warning for warning in collection.warnings)


def test_first_directory_wins_a_name_clash(tmp_path):
    first = make_tree(tmp_path / "first", {"mod.py": "x = 1\n"})
    second = make_tree(tmp_path / "second", {"mod.py": "x = 2\n", "other.py": ""})
    result = pack(tmp_path / "out.ingot", stdlib=False, directories=[first, second])
    assert result.names("module") == {"mod", "other"}
    assert any(str(second / "mod.py") in warning for warning in result.warnings)


def test_module_that_does_not_compile_is_left_out_with_a_warning(tmp_path):
    src = make_tree(tmp_path / "src", {"good.py": "x = 1\n", "bad.py": "print 'py2'\n"})
    result = pack(tmp_path / "out.ingot", stdlib=False, directories=[src])
    assert result.names("module") == {"good"}
    assert any("bad.py:1: does not compile" in warning for warning in result.warnings)


def test_pack_takes_an_options_object_and_keywords_override_its_fields(tmp_path):
    src = make_tree(tmp_path / "src", {"m.py": "x = 1\n", "n.py": "y = 2\n"})
    options = PackOptions.here(stdlib=False, directories=[src], exclude=("n",))
    assert pack(tmp_path / "a.ingot", options).names("module") == {"m"}
    assert pack(tmp_path / "b.ingot", options, exclude=()).names("module") == {"m", "n"}
    assert options.exclude == ("n",)  # the caller's object is left as it was
    assert (tmp_path / "a.ingot").read_bytes() == pack(
        tmp_path / "c.ingot", stdlib=False, directories=[src], exclude=("n",)
    ).output.read_bytes()


def test_source_and_levels_are_configurable(tmp_path):
    src = make_tree(tmp_path / "src", {"m.py": "assert True\n'''doc'''\n" * 50})
    with_source = pack(tmp_path / "a.ingot", stdlib=False, directories=[src])
    without = pack(
        tmp_path / "b.ingot",
        stdlib=False,
        directories=[src],
        include_source=False,
        optimize_levels=(0, 1, 2),
    )
    size = len((src / "m.py").read_bytes())
    bytecode = compile_module((src / "m.py").read_bytes(), "m.py", (0, 1, 2))
    assert with_source.manifest[0].size == size + len(bytecode[0])
    assert without.manifest[0].size == sum(map(len, bytecode.values()))


def test_bad_inputs_raise_ingot_errors(tmp_path):
    with pytest.raises(CollectError, match="does not exist"):
        collect_directory(tmp_path / "missing")
    with pytest.raises(PackError, match="does not exist"):
        pack(tmp_path / "no" / "out.ingot", stdlib=False)
    with pytest.raises(PackError, match="0, 1 or 2"):
        pack(tmp_path / "out.ingot", stdlib=False, optimize_levels=(3,))
    with pytest.raises(PackError, match="neither bytecode nor source"):
        pack(tmp_path / "out.ingot", stdlib=False, optimize_levels=(), include_source=False)
    assert issubclass(CollectError, IngotError) and issubclass(PackError, IngotError)


# --- the command line ----------------------------------------------------------------------------


def test_cli_pack_writes_an_archive_and_a_summary(tmp_path, capsys):
    src = make_tree(tmp_path / "src", {"app/__init__.py": "", "app/main.py": "print('hi')\n"})
    out = tmp_path / "app.ingot"
    assert (
        cli.main(
            [
                "pack",
                "-o",
                str(out),
                "--no-stdlib",
                "--path",
                str(src),
                "--optimize",
                "0,2",
                "--compress",
                "3",
            ]
        )
        == 0
    )
    assert out.read_bytes().startswith(b"\x89INGOT\r\n")
    err = capsys.readouterr().err
    assert "module" in err and "wrote" in err and str(out) in err


def test_cli_bad_path_exits_1_with_error(tmp_path, capsys):
    out, missing = tmp_path / "x.ingot", tmp_path / "nope"
    assert cli.main(["pack", "-o", str(out), "--path", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope" in err and "hint: " in err
    assert not (tmp_path / "x.ingot").exists()


def test_cli_bad_arguments_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["pack", "-o", str(tmp_path / "x.ingot"), "--optimize", "3"])
    assert exit_info.value.code == 2
    assert cli.main([]) == 2  # (the commands and a quick start, on stderr)


def test_pack_and_build_take_the_archive_options_from_one_table(tmp_path, capsys):
    # Issue 38: --optimize, --compress, --files, --no-precompile-regexes and -o of `ingot pack`
    # are the settings table's, as for `ingot build`: one meaning, one range check.
    from dataclasses import fields

    from ingot.build.resolve.settings import PACK_SETTINGS, Settings

    with pytest.raises(SystemExit):
        cli.main(["pack", "--help"])
    shown = capsys.readouterr().out
    for field in fields(Settings):
        if field.name in PACK_SETTINGS:
            for flag in field.metadata["option"].flags:
                assert flag in shown, flag
    assert "--no-compress" in shown
    for command in (["pack", "-o", str(tmp_path / "x.ingot")], ["build", "x.py"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main([*command, "--compress", "23"])
        assert exit_info.value.code == 2
        assert "'23' is not a zstd level (-7 to 22)" in capsys.readouterr().err
    # The default compresses, as a build's does (an archive has no first-use region: every blob
    # is one a start does not read); --no-compress stores as is.
    src = make_tree(tmp_path / "src", {"big.py": "x = 1\n" * 20000})
    sizes = {}
    for options in ([], ["--no-compress"]):
        out = tmp_path / f"a{len(options)}.ingot"
        assert (
            cli.main(["pack", "-q", "-o", str(out), "--no-stdlib", "--path", str(src), *options])
            == 0
        )
        sizes[len(options)] = out.stat().st_size
    assert sizes[0] < sizes[1] / 4, sizes


def test_python_dash_m_ingot_runs_the_cli(tmp_path):
    src = make_tree(tmp_path / "src", {"m.py": ""})
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ingot",
            "pack",
            "-o",
            str(tmp_path / "m.ingot"),
            "--no-stdlib",
            "--path",
            str(src),
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == "" and (tmp_path / "m.ingot").is_file()


def test_bytecode_does_not_depend_on_the_hash_seed(tmp_path):
    # CPython 3.10 marshals frozenset constants in hash order; the canonical form sorts them.
    source = "def f(x):\n    return x in {'alpha', 'beta', 'gamma', 'delta', 'epsilon', b'x', 1, 2.5, ('t', 1)}\n"
    script = (
        "import sys; from ingot.build.archive.bytecode import compile_module; "
        "sys.stdout.write(compile_module(sys.argv[1].encode(), 'm.py', (0,))[0].hex())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script, source],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(outputs) == 1


def test_source_beside_its_compiled_module_is_left_out_quietly(tmp_path):
    # mypyc and Cython wheels ship mod.py beside mod.cpython-*.so: Python imports the .so.
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    name, source = shared_stdlib_module()
    make_tree(tmp_path, {"pkg/__init__.py": "", f"pkg/{name}.py": "x = 1\n"})
    shutil.copy(source, tmp_path / "pkg" / f"{name}{suffix}")
    collection = collect_directory(tmp_path)
    assert kinds(collection)["extension-module"] == {f"pkg.{name}"}
    assert f"pkg.{name}" not in kinds(collection)["module"]
    assert collection.warnings == []


def test_package_with_a_compiled_init_is_an_extension_package(tmp_path):
    # As mypyc/Cython wheels ship them (black): __init__.py beside __init__.cpython-*.so, which
    # Python imports. `_bisect` (or another small module) as a package: its PyInit__bisect is
    # the package's init.
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    name, source = shared_stdlib_module()
    make_tree(
        tmp_path,
        {
            f"{name}/__init__.py": "raise ImportError('the .py was imported')\n",
            f"{name}/helper.py": "VALUE = 5\n",
        },
    )
    shutil.copy(source, tmp_path / name / f"__init__{suffix}")
    collection = collect_directory(tmp_path)
    found = kinds(collection)
    assert found["extension-package"] == {name}
    assert found["package"] == set() and found["extension-module"] == set()
    assert found["module"] == {f"{name}.helper"} and found["data-file"] == set()
    assert collection.warnings == []


def test_tcl_and_tk_script_libraries_go_with_tkinter_under_the_files_policy(tmp_path):
    """A runtime keeps Tcl's and Tk's script libraries beside its standard library
    (lib/tcl8.6, lib/tk8.6); Tcl reads them by path. Collected with tkinter (as its data,
    tkinter/tcl8.6/...), they put tkinter under the files policy, and the build says why; without
    tkinter, or without them (a distribution's Python), nothing is added."""
    from ingot.build.archive.stdlib_layout import Layout

    prefix = make_tree(
        tmp_path / "python",
        {
            "lib/python3.11/os.py": "",
            "lib/python3.11/tkinter/__init__.py": "import _tkinter\n",
            "lib/tcl8.6/init.tcl": "# init\n",
            "lib/tcl8.6/encoding/utf-8.enc": "",
            "lib/tk8.6/tk.tcl": "# tk\n",
        },
    )
    layout = Layout(
        stdlib=prefix / "lib" / "python3.11",
        lib_dynload=None,
        extension_suffixes=tuple(importlib.machinery.EXTENSION_SUFFIXES),
        machine=elf.machine_of_elf(elf.read_elf(sys.executable).machine),
        owner="a runtime",
    )
    data = kinds(collect_stdlib(exclude=(), layout=layout))["data-file"]
    assert {"tkinter/tcl8.6/init.tcl", "tkinter/tcl8.6/encoding/utf-8.enc"} <= data
    assert "tkinter/tk8.6/tk.tcl" in data
    assert not kinds(collect_stdlib(exclude=("tkinter",), layout=layout))["data-file"]
    said = []
    result = pack(
        tmp_path / "a.ingot", stdlib_exclude=(), stdlib_layout=layout, progress=said.append
    )
    assert "files policy: tkinter (Tcl and Tk read their script libraries by path)" in said
    assert result.counts["data-file"] >= 3
    from ingot._ingot import IngotFinder

    assert IngotFinder(str(tmp_path / "a.ingot")).files_packages() == ["tkinter"]
    shutil.rmtree(prefix / "lib" / "tcl8.6")
    data = kinds(collect_stdlib(exclude=(), layout=layout))["data-file"]
    assert not any(name.startswith("tkinter/tk") for name in data)


def test_pack_options_read_no_interpreter_nor_environment_unless_asked():
    # Issue 54: a build's options come from its spec; a default read now (the running
    # interpreter, os.environ) would silently stand in for a field a stage forgot.
    with pytest.raises(TypeError, match=r"stdlib_layout|environment"):
        PackOptions()
    from ingot.build.archive.stdlib_layout import running
    from ingot.build.resolve.environment import snapshot

    here = PackOptions.here(stdlib=False)
    assert here.stdlib is False
    assert here.stdlib_layout == running() and here.environment == snapshot()
