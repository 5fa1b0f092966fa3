"""The finders workload's archives of the running interpreter's stdlib, every code object compiled
here at optimize 0 from the source (as the stock __pycache__ holds them): OUT/stdlib.zip
(sourceless timestamp .pyc, stored), OUT/stdlib.floor (apps/runner.py's FloorFinder blob, less
the modules served frozen) or, with --oxidized (CPython 3.10, oxidized_importer==0.6.0),
OUT/stdlib.oxidized (the same marshal bytes as packed resources) and a copy of the extension
module; prints the counts and sizes.

    python bench/apps/make_artifacts.py [--oxidized] OUT

The packed set: every .py module and package of the stdlib directory but site-packages,
lib-dynload, test code (test/, tests/, idle_test/), and directories that are no package.
"""

from __future__ import annotations

import _imp
import importlib._bootstrap_external as bext
import json
import marshal
import os
import sys
import sysconfig
import zipfile

TEST_DIRS = frozenset({"test", "tests", "idle_test"})
SKIP_TOP = frozenset({"site-packages", "lib-dynload"})


def iter_stdlib_modules(stdlib_dir: str) -> list:
    """``(module_name, file_path, is_package)`` of the packed set, sorted by module name."""
    out = []

    def walk(directory: str, prefix: str, top: bool) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                if name == "__pycache__" or (top and name in SKIP_TOP):
                    continue
                init = os.path.join(entry.path, "__init__.py")
                if not name.isidentifier() or name in TEST_DIRS or not os.path.isfile(init):
                    continue
                out.append((prefix + name, init, True))
                walk(entry.path, prefix + name + ".", False)
            elif entry.is_file() and name.endswith(".py"):
                stem = name[:-3]
                if stem != "__init__" and "." not in stem:
                    out.append((prefix + stem, entry.path, False))

    walk(stdlib_dir, "", True)
    return sorted(out)


def compile_module(path: str):
    """Compile one module exactly as the stock path finder would (optimize 0)."""
    with open(path, "rb") as f:
        return compile(f.read(), path, "exec", dont_inherit=True, optimize=0)


def write(path: str, data: bytes) -> None:
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def zip_and_floor(out: str, compiled: list, failed: list) -> dict:
    zip_path = os.path.join(out, "stdlib.zip")
    with zipfile.ZipFile(zip_path + ".tmp", "w", compression=zipfile.ZIP_STORED) as zf:
        for name, path, is_pkg, code in compiled:
            rel = name.replace(".", "/") + ("/__init__.pyc" if is_pkg else ".pyc")
            st = os.stat(path)
            pyc = bext._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)
            zf.writestr(zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0)), bytes(pyc))
    os.replace(zip_path + ".tmp", zip_path)
    index, payload, frozen = {}, bytearray(), []
    for name, path, is_pkg, code in compiled:
        if _imp.is_frozen(name):
            frozen.append(name)
            continue
        data = marshal.dumps(code)  # offsets are relative to the payload start
        package_dir = os.path.dirname(path) if is_pkg else None
        index[name] = (is_pkg, path, package_dir, len(payload), len(data))
        payload += data
    floor_path = os.path.join(out, "stdlib.floor")
    index_bytes = marshal.dumps(index)
    write(floor_path, b"INGFLOOR" + len(index_bytes).to_bytes(8, "little") + index_bytes + payload)
    return {
        "python": sys.version,
        "stdlib": sysconfig.get_path("stdlib"),
        "modules_packed": len(compiled),
        "compile_failed": failed,
        "zip": {"path": zip_path, "bytes": os.path.getsize(zip_path), "modules": len(compiled)},
        "floor": {
            "path": floor_path,
            "bytes": os.path.getsize(floor_path),
            "modules": len(index),
            "left_to_frozen_importer": frozen,
        },
    }


def oxidized(out: str, compiled: list) -> dict:
    import oxidized_importer

    resources = []
    for name, _path, is_pkg, code in compiled:
        if _imp.is_frozen(name):
            continue
        r = oxidized_importer.OxidizedResource()
        r.is_module, r.name, r.is_package = True, name, is_pkg
        r.in_memory_bytecode = marshal.dumps(code)
        resources.append(r)
    finder = oxidized_importer.OxidizedFinder()
    finder.add_resources(resources)
    path = os.path.join(out, "stdlib.oxidized")
    write(path, finder.serialize_indexed_resources())
    with open(oxidized_importer.__file__, "rb") as f:  # the runner loads it by path
        write(os.path.join(out, "oxidized_importer.so"), f.read())
    info = {"path": path, "bytes": os.path.getsize(path), "modules": len(resources)}
    return info | {"oxidized_importer": oxidized_importer.__file__}


def main() -> int:
    args = sys.argv[1:]
    ox = args[:1] == ["--oxidized"]
    out = args[-1]
    os.makedirs(out, exist_ok=True)
    compiled, failed = [], []
    for name, path, is_pkg in iter_stdlib_modules(sysconfig.get_path("stdlib")):
        try:
            compiled.append((name, path, is_pkg, compile_module(path)))
        except (SyntaxError, ValueError, UnicodeDecodeError) as e:
            failed.append((name, str(e)))
    info = oxidized(out, compiled) if ox else zip_and_floor(out, compiled, failed)
    print(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
