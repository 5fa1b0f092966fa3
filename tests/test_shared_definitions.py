"""Formats both languages read are defined once, in Rust, and Python takes them from
``ingot._ingot`` (issue 23): the entry kinds (``ingot_format::Kind``, the native ones among them),
the tree manifest of a ``files`` package (``crates/ingot-importer/src/files.rs``), the smallest
native image a default build compresses, and which temporaries killed writers left. Each test
fails when the two sides drift apart. A rule the build applies in several places is defined once
too (issue 54, item 4): which code never runs on Linux, which modules are a package's tests, the
name of a ``*.dist-info`` directory's distribution; each test fails when a copy comes back."""

import ast
import glob
import importlib.machinery
import json
import os
import re
import shutil
import sysconfig
from pathlib import Path

import pytest

from ingot import _ingot, cachedir, elf
from ingot.build import interrupt
from ingot.build.analysis.firstuse import imports_in_source, never_on_linux
from ingot.build.archive import import_tables
from ingot.build.archive import pack as pack_module
from ingot.build.archive import reach as reach_module
from ingot.build.archive import tables as tables_module
from ingot.build.archive.collect import distribution_name
from ingot.build.archive.import_tables import in_test_package, suite_of_file
from ingot.build.archive.pack import pack
from ingot.build.archive.reach import stdlib_imports
from ingot.build.stages import selection
from ingot.output import inspect_text

from helpers import dead_pid

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

REPOSITORY = Path(__file__).resolve().parent.parent
PYTHON_PACKAGE = REPOSITORY / "python" / "ingot"
NAMESPACES = ("modules", "files", "libraries")  # in the order of their tags (docs/format.md)


def test_pack_takes_the_kinds_from_the_format():
    assert pack_module.KINDS is _ingot.KINDS
    assert len(set(_ingot.KINDS)) == len(_ingot.KINDS) == 8
    assert set(_ingot.KIND_NAMESPACES) == set(_ingot.KINDS)
    assert set(_ingot.KIND_NAMESPACES.values()) == set(NAMESPACES)
    # Summaries list kinds by name space, as the format orders its entry table.
    ranks = [NAMESPACES.index(_ingot.KIND_NAMESPACES[kind]) for kind in _ingot.KINDS]
    assert ranks == sorted(ranks)


def test_every_kind_name_the_python_code_spells_is_a_kind_of_the_format():
    # Entry kinds are hyphenated names ending in -module, -package, -file or -library; a kind
    # renamed or removed in Rust leaves its old spelling here.
    looks_like_a_kind = re.compile(r"[a-z]+(-[a-z]+)*-(module|package|file|library)")
    spelled = {}
    for path in PYTHON_PACKAGE.rglob("*.py"):
        if "_source" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and looks_like_a_kind.fullmatch(node.value)
            ):
                spelled.setdefault(node.value, f"{path}:{node.lineno}")
    assert {"extension-module", "shared-library", "dist-info-file"} <= set(spelled)
    unknown = {kind: where for kind, where in spelled.items() if kind not in _ingot.KINDS}
    assert unknown == {}


def _two_extension_modules():
    dynload = os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")
    found = []
    for name in ("_bisect", "_json", "_heapq", "_queue", "_lsprof", "_asyncio", "_csv"):
        files = glob.glob(os.path.join(dynload, f"{name}.cpython-*.so"))
        if files:
            found.append((name, files[0]))
    if len(found) < 2:
        pytest.skip(f"fewer than two small extension module files in {dynload}")
    return found[:2]


def test_every_kind_pack_writes_round_trips_through_the_reader(tmp_path):
    libz = elf.ld_cache().get("libz.so.1", (None,))[0]
    if libz is None:
        pytest.skip("no libz.so.1 in the ld.so cache")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (module, module_file), (package, package_file) = _two_extension_modules()
    site = tmp_path / "site"
    for path, text in {
        "mod.py": "X = 1\n",
        "pkg/__init__.py": "",
        "pkg/data.txt": "data\n",
        "nspkg/inner.py": "",
        f"{package}/__init__.py": "",
        "demo-1.0.dist-info/METADATA": "Name: demo\nVersion: 1.0\n",
    }.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    shutil.copy(module_file, site / f"{module}{suffix}")
    shutil.copy(package_file, site / package / f"__init__{suffix}")
    (site / "pkg.libs").mkdir()
    shutil.copy(libz, site / "pkg.libs" / "libz-0a1b2c3d.so.1")

    result = pack(tmp_path / "all.ingot", stdlib=False, directories=[site])
    assert result.warnings == []
    assert [kind for kind in _ingot.KINDS if result.counts[kind] == 0] == []
    written = sorted((entry.kind, entry.name) for entry in result.manifest)
    read = [(kind, name) for kind, name, _ in _ingot.IngotFinder(result.output).entries()]
    assert sorted(read) == written
    # The reader's entry table is sorted by (name space, name): the name space pack.py gives each
    # kind is the format's.
    keys = [(NAMESPACES.index(_ingot.KIND_NAMESPACES[kind]), name.encode()) for kind, name in read]
    assert keys == sorted(keys)
    assert {name: kind for kind, name in read if name in (package, "nspkg", "mod")} == {
        package: "extension-package",
        "nspkg": "namespace-package",
        "mod": "module",
    }


# Paths of a package's tree that JSON escapes: a quote, DEL, a tab, non-ASCII (two bytes, three,
# and outside the BMP: a surrogate pair). The archive refuses backslashes and newlines in names.
AWKWARD_FILES = {
    "pkg/plain.py": b"X = 1\n",
    'pkg/q"t\x7f\t.txt': b"xy",
    "pkg/donn\u00e9es/\u00e9t\u00e9.txt": b"",
    "pkg/\u2028\ufffd\U0001f389/z": b"z" * 1000,
}


def test_the_files_manifest_is_written_by_the_readers_definition():
    assert tables_module.files_manifest is _ingot.files_manifest
    files = {**AWKWARD_FILES, "pkg/a\\b\n\x01": b"", "pkg.py": b"", "\u00e9": b"x"}
    # The bytes ingot pack wrote when Python wrote manifests (archives keep their bytes).
    listing = [
        [path, len(data), f"{_ingot.content_hash(data):016x}"]
        for path, data in sorted(files.items())
    ]
    document = {"version": 1, "package": "pkg", "files": listing}
    expected = json.dumps(document, separators=(",", ":")).encode()
    assert _ingot.files_manifest("pkg", files) == expected
    assert _ingot.files_manifest("pkg", {}) == b'{"version":1,"package":"pkg","files":[]}'


def test_a_files_package_with_awkward_paths_materializes_from_its_manifest(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for path, data in AWKWARD_FILES.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(data)
    (site / "pkg" / "__init__.py").write_text("")
    result = pack(tmp_path / "f.ingot", stdlib=False, directories=[site], files_packages=["pkg"])
    assert result.warnings == []
    manifest = _ingot.IngotFinder(result.output)._read("__ingot__/files/pkg.json")
    assert b"\\u00e9" in manifest and b"\\ud83c\\udf89" in manifest  # escaped as json.dumps does
    monkeypatch.setenv("INGOT_CACHE_DIR", str(tmp_path / "cache"))
    root = Path(_ingot.IngotFinder(result.output)._tree("pkg"))
    found = {
        str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }
    assert found == {**AWKWARD_FILES, "pkg/__init__.py": b""}


def _python_trees():
    for path in sorted(PYTHON_PACKAGE.rglob("*.py")):
        if "_source" not in path.parts:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _where(path, node):
    return f"{path.relative_to(REPOSITORY)}:{node.lineno}"


def _files(places):
    return [place.rpartition(":")[0] for place in places]


def _displayed_strings(node):
    """The strings a tuple, list or set display holds."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set()
    return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _rust_constant(path, name):
    """The value of ``const NAME: usize = EXPR;`` in a Rust source, the constants it names
    resolved (integers, ``<<``, ``*``, ``+``)."""
    text = path.read_text(encoding="utf-8")

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return _rust_constant(path, node.id)
        operators = {ast.LShift: int.__lshift__, ast.Mult: int.__mul__, ast.Add: int.__add__}
        assert isinstance(node, ast.BinOp) and type(node.op) in operators, ast.dump(node)
        return operators[type(node.op)](value(node.left), value(node.right))

    match = re.search(rf"const {name}: usize = ([^;]+);", text)
    assert match, f"no `const {name}: usize` in {path}"
    return value(ast.parse(match.group(1), mode="eval").body)


def test_the_native_kinds_are_the_formats_and_written_nowhere_else():
    assert _ingot.NATIVE_KINDS == ("extension-module", "extension-package", "shared-library")
    # In listing order, and the modules among them are the extension kinds.
    assert (
        tuple(kind for kind in _ingot.KINDS if kind in _ingot.NATIVE_KINDS) == _ingot.NATIVE_KINDS
    )
    assert (
        tuple(kind for kind in _ingot.NATIVE_KINDS if _ingot.KIND_NAMESPACES[kind] == "modules")
        == _ingot.EXTENSION_KINDS
    )
    copies = [
        _where(path, node)
        for path, tree in _python_trees()
        for node in ast.walk(tree)
        if len(_displayed_strings(node) & set(_ingot.NATIVE_KINDS)) >= 2
    ]
    assert copies == []
    # Rust asks Kind::is_native and Kind::is_extension (ingot-format's lib.rs); writer.rs's
    # allowed_roles gives each kind its roles in a match the compiler holds complete.
    alternation = re.compile(
        r"Kind::Extension(Module|Package) \| Kind::(ExtensionModule|ExtensionPackage|SharedLibrary)"
    )
    spelled = [
        (str(path.relative_to(REPOSITORY)), line.strip())
        for path in sorted(REPOSITORY.glob("crates/*/src/**/*.rs"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if alternation.search(line)
    ]
    assert spelled == [
        (
            "crates/ingot-format/src/lib.rs",
            "matches!(self, Kind::ExtensionModule | Kind::ExtensionPackage)",
        ),
        (
            "crates/ingot-format/src/writer.rs",
            "Kind::ExtensionModule | Kind::ExtensionPackage => &[Role::Content, Role::Needed],",
        ),
    ]


def test_the_smallest_native_image_a_build_compresses_is_the_formats():
    writer_rs = REPOSITORY / "crates" / "ingot-format" / "src" / "writer.rs"
    assert _rust_constant(writer_rs, "NATIVE_BLOB_MIN") == _ingot.NATIVE_BLOB_MIN
    # `ingot inspect --sizes` goes by it...
    raw = {"kind": "shared-library", "name": "libx.so"}
    below = {**raw, "size": _ingot.NATIVE_BLOB_MIN - 1, "stored": _ingot.NATIVE_BLOB_MIN - 1}
    at = {**raw, "size": _ingot.NATIVE_BLOB_MIN, "stored": _ingot.NATIVE_BLOB_MIN}
    assert "of it in images of" not in inspect_text._could_shrink([below], {})[0]
    assert (
        f"in images of {_ingot.NATIVE_BLOB_MIN // 1024} KiB or more"
        in (inspect_text._could_shrink([below, at], {})[0])
    )
    # ... and no Python module writes the number itself, as a constant or in a comparison.
    # (These constants are the same number for other reasons.)
    others = {
        "DICTIONARY_SIZE": "the largest zstd dictionary pack trains",
        "_MAX_LENGTH": "the longest regular expression the scan builds",
    }

    def number(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift | ast.Mult):
            left, right = number(node.left), number(node.right)
            if left is not None and right is not None:
                if isinstance(node.op, ast.Mult):
                    return left * right
                return left << right if 0 <= right < 64 else None
        return None

    copies = []
    for path, tree in _python_trees():
        constants = [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            and node.value is not None
            and ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
            not in others
        ]
        compared = [
            operand
            for node in ast.walk(tree)
            if isinstance(node, ast.Compare)
            for operand in [node.left, *node.comparators]
        ]
        copies += [
            _where(path, node)
            for node in constants + compared
            if number(node) == _ingot.NATIVE_BLOB_MIN
        ]
    assert copies == []


# Conditions of an `if`, and whether its block never runs on Linux.
NEVER_ON_LINUX = {
    "TYPE_CHECKING": True,
    "typing.TYPE_CHECKING": True,
    "t.TYPE_CHECKING": True,  # (import typing as t: click, werkzeug)
    'sys.platform == "win32"': True,
    "sys.platform == 'darwin'": True,
    '_sys.platform == "cygwin"': True,
    'sys.platform.startswith("win")': True,
    'os.name == "nt"': True,
    'sys.platform == "win32" and sys.version_info >= (3, 8)': True,
    "not TYPE_CHECKING": False,
    "TYPE_CHECKING or sys.flags.dev_mode": False,
    'sys.platform == "win32" or sys.platform == "emscripten"': False,
    'sys.platform != "win32"': False,
    'sys.platform == "linux"': False,
    'sys.platform.startswith("linux")': False,
    'os.name == "posix"': False,
    "HAVE_WIN32": False,
}


@pytest.mark.parametrize(("condition", "never"), NEVER_ON_LINUX.items())
def test_both_scans_of_imports_skip_the_same_code_that_never_runs_on_linux(condition, never):
    # The textual scan (firstuse, every module but the standard library's) and the syntax
    # tree's (reach, the standard library's).
    source = f"import first\nif {condition}:\n    import guarded\n".encode()
    assert never_on_linux(condition) is never
    found = imports_in_source(source, "mod", is_package=False)
    assert ("guarded" in [name for names in found.values() for name in names]) is not never
    assert ("guarded" in stdlib_imports(source, "mod", False, set())) is not never


def test_the_code_that_never_runs_on_linux_is_spelled_in_one_place():
    spelled = []
    for path, tree in _python_trees():
        documentation = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in documentation:
                continue
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if isinstance(text, str) and re.search(r"TYPE_CHECKING|win32|darwin|cygwin", text):
                spelled.append(_where(path, node))
    assert _files(spelled) == ["python/ingot/build/analysis/firstuse.py"]


def test_which_modules_are_a_packages_tests_is_one_rule():
    modules = {
        "pkg.tests": True,
        "pkg.tests.test_a": True,
        "pkg.testing": True,
        "pkg.sub.test": True,
        "tests": False,  # (a top-level package is an application's own, or a distribution)
        "tests.helpers": False,
        "pkg.mytests": False,
        "pkg.test_data": False,
    }
    for name, expected in modules.items():
        assert in_test_package(name) is expected, name
        assert inspect_text._in_test_suite({"kind": "module", "name": name}) is expected, name
        assert selection._in_tests(name.replace(".", "/") + ".py") is expected, name
    assert selection._in_tests("pkg/tests/__init__.py")
    files = {
        "pkg/tests/data/x.npz": "pkg.tests",
        "pkg/sub/testing/a.json": "pkg.sub.testing",
        "pkg/tests.txt": None,
        "tests/data.txt": None,
        "pkg/data/x.txt": None,
    }
    for path, suite in files.items():
        assert suite_of_file(path) == suite, path
        assert inspect_text._in_test_suite({"kind": "data-file", "name": path}) is (
            suite is not None
        )
    assert not inspect_text._in_test_suite({"kind": "shared-library", "name": "libtest.so.1"})
    spelled = [
        _where(path, node)
        for path, tree in _python_trees()
        for node in ast.walk(tree)
        if len(_displayed_strings(node) & set(import_tables.TEST_PACKAGES)) >= 2
    ]
    assert _files(spelled) == ["python/ingot/build/archive/import_tables.py"]


def test_a_dist_info_directorys_distribution_name_is_read_in_one_place():
    assert distribution_name("nbconvert-7.1.0.dist-info") == "nbconvert"
    assert distribution_name("Foo_Bar-1.0.dist-info") == "Foo_Bar"
    assert tables_module.distribution_name is distribution_name
    # For a distribution whose RECORD lists no module, the name it likely imports as.
    assert reach_module._import_name_guess("Foo_Bar-1.0.dist-info") == "foo_bar"
    assert reach_module._import_name_guess("zope.interface-6.0.dist-info") == "zope_interface"
    # Two functions of that name returned different things (issue 54, item 4).
    named = [
        _where(path, node)
        for path, tree in _python_trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.strip("_") == "dist_name"
    ]
    assert named == []


def _rust_seconds(path, name):
    match = re.search(
        rf"const {name}: Duration = Duration::from_secs\((\d+)\);", path.read_text("utf-8")
    )
    assert match, f"no `const {name}: Duration` in {path}"
    return float(match.group(1))


def test_which_temporaries_killed_writers_left_is_the_importers_rule():
    assert cachedir.stale_temporary is _ingot.stale_temporary
    assert cachedir.writer_gone is interrupt.writer_gone is _ingot.writer_gone
    cache_rs = REPOSITORY / "crates" / "ingot-importer" / "src" / "cache.rs"
    assert _ingot.STALE_TEMPORARY_AFTER == _rust_seconds(cache_rs, "STALE_AFTER") == 3600
    assert _ingot.WRITER_GONE_AFTER == _rust_seconds(cache_rs, "WRITER_GONE_AFTER") == 10
    assert f'TEMPORARY_PREFIX: &str = "{_ingot.TEMPORARY_PREFIX}";' in cache_rs.read_text("utf-8")
    dead = dead_pid()
    gone = f"{_ingot.TEMPORARY_PREFIX}{'a' * 32}-{dead}-1"
    alive = f"{_ingot.TEMPORARY_PREFIX}{'b' * 32}-{os.getpid()}-2"
    assert _ingot.writer_gone(gone) and not _ingot.writer_gone(alive)
    assert [_ingot.stale_temporary(gone, age) for age in (5, 11, 3601)] == [False, True, True]
    assert [_ingot.stale_temporary(alive, age) for age in (11, 3599, 3601)] == [False, False, True]
    assert not _ingot.stale_temporary(alive, -7200.0)  # (modified in the future)
    for name in (".tmp-x", ".tmp-x-0-1", ".tmp-x-99999999999-1", ".tmp-x--1", "x-\udcff-1"):
        assert not _ingot.writer_gone(name), name
    # No Python module asks on its own whether a process exists (`os.kill(pid, 0)`).
    asking = [
        _where(path, node)
        for path, tree in _python_trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) == "os.kill"
        and ast.unparse(node.args[-1]) == "0"
    ]
    assert asking == []
