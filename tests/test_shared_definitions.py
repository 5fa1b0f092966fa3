"""Formats both languages read are defined once, in Rust, and Python takes them from
``ingot._ingot`` (issue 23): the entry kinds (``ingot_format::Kind``) and the tree manifest of a
``files`` package (``crates/ingot-importer/src/files.rs``). Each test fails when the two sides
drift apart."""

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

from ingot import _ingot, elf
from ingot.build.archive import writer as pack_module
from ingot.build.archive.writer import pack

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

PYTHON_PACKAGE = Path(__file__).resolve().parent.parent / "python" / "ingot"
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
    assert pack_module.files_manifest is _ingot.files_manifest
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
