"""Packages whose native code opens the package's own files by path, found without configuration
(issue 37, item 4): on shared libraries compiled here by gcc, and on real wheels in the matrix
(pyproj, pygame)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ingot.build.analysis.nativefiles import opens_own_files

#: The fast tier (scripts/test --fast).
pytestmark = [
    pytest.mark.fast,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]


def compile_library(path: Path, source: str, *, needs: Path | None = None) -> Path:
    """A real shared library compiled from C ``source`` (linked against ``needs``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    c_file = path.with_suffix(".c")
    c_file.write_text(source)
    command = ["gcc", "-shared", "-fPIC", "-o", str(path), str(c_file)]
    if needs is not None:
        command += [str(needs), "-Wl,-rpath,$ORIGIN"]
    subprocess.run(command, check=True, capture_output=True)
    c_file.unlink()
    return path


OPENER = """
#include <stdio.h>
#include <string.h>
FILE *open_table(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/share/tables.db", dir);
    return fopen(path, "rb");
}
"""


def test_a_library_naming_a_data_file_of_its_package_is_found(tmp_path):
    compile_library(tmp_path / "geo" / "lib" / "libgeo.so", OPENER)
    (tmp_path / "geo" / "share").mkdir()
    (tmp_path / "geo" / "share" / "tables.db").write_bytes(b"SQLite format 3\0")
    (tmp_path / "geo" / "__init__.py").write_text("")
    assert opens_own_files(tmp_path, "geo") == "libgeo.so names tables.db"


def test_a_library_of_the_wheels_libs_directory_counts(tmp_path):
    compile_library(tmp_path / "geo.libs" / "libproj-1234abcd.so.25", OPENER)
    (tmp_path / "geo" / "data").mkdir(parents=True)
    (tmp_path / "geo" / "data" / "tables.db").write_bytes(b"x")
    assert opens_own_files(tmp_path, "geo") == "libproj-1234abcd.so.25 names tables.db"


def test_data_no_native_string_names_is_not_a_reason(tmp_path):
    compile_library(tmp_path / "geo" / "lib" / "libgeo.so", OPENER)
    (tmp_path / "geo" / "share").mkdir()
    (tmp_path / "geo" / "share" / "other.db").write_bytes(b"x")
    # Sources and documents are not data a library opens, whatever names it holds.
    (tmp_path / "geo" / "share" / "tables.db.txt").write_text("x")
    assert opens_own_files(tmp_path, "geo") is None
    assert opens_own_files(tmp_path, "absent") is None


def test_a_plugin_directory_named_after_a_slash_is_found(tmp_path):
    """Qt's way: libQt5Gui holds "/platforms" and lists plugins/platforms for libraries no
    object needs, which it then loads."""
    host = compile_library(
        tmp_path / "toolkit" / "lib" / "libhost.so",
        'const char *plugin_kind(void) { return "/codecs"; }\n',
    )
    compile_library(tmp_path / "toolkit" / "plugins" / "codecs" / "libwav.so", "int wav;\n")
    assert opens_own_files(tmp_path, "toolkit") == "libhost.so names the plugin directory codecs/"
    # A directory of libraries that an object needs is no plugin directory.
    compile_library(
        tmp_path / "toolkit" / "lib" / "libuser.so",
        "extern int wav;\nint *user(void) { return &wav; }\n",
        needs=tmp_path / "toolkit" / "plugins" / "codecs" / "libwav.so",
    )
    assert opens_own_files(tmp_path, "toolkit") is None
    assert host.exists()


def test_cython_modules_strings_are_the_python_codes(tmp_path):
    """A Cython module's C strings are its Python code's ("roots.pem" handed to
    pkgutil.get_data, which the archive answers): not a reason."""
    compile_library(
        tmp_path / "rpc" / "_cython" / "cygrpc.cpython-311-x86_64-linux-gnu.so",
        'const char *__pyx_k_roots = "_credentials/roots.pem";\n'
        'const char *marker = "__pyx_module_is_main_rpc";\n',
    )
    (tmp_path / "rpc" / "_cython" / "_credentials").mkdir()
    (tmp_path / "rpc" / "_cython" / "_credentials" / "roots.pem").write_text("-----")
    assert opens_own_files(tmp_path, "rpc") is None
