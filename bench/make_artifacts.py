"""Build the zipimport and floor artifacts of the running interpreter's stdlib.

    python bench/make_artifacts.py [--out bench/out]

Run it with the interpreter under test (the harness does): every code object
is compiled here, by that interpreter, at optimize 0, from the stdlib source
(same bytecode as the stock __pycache__ .pyc files, same co_filename).

Writes, for X.Y the running version:

* ``stdlib-X.Y.zip``: ``pkg/mod.pyc`` / ``pkg/__init__.pyc`` (timestamp pycs,
  no sources, ZIP_STORED), one per module of the packed set
  (stdlib_files.py).  Sourceless, so zipimport never compiles nor checks a
  source mtime.
* ``stdlib-X.Y.floor``: the blob read by runner.py's FloorFinder.  Modules
  the interpreter serves frozen (3.11: os, site, runpy, importlib.util, ...) are
  left out so FrozenImporter still serves them, as in the stock run.
* ``stdlib-X.Y.artifacts.json``: counts and sizes.
"""

from __future__ import annotations

import argparse
import importlib._bootstrap_external as bext
import json
import marshal
import os
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stdlib_files import compile_module, is_frozen, iter_stdlib_modules  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ver = "%d.%d" % sys.version_info[:2]
    stdlib = sysconfig.get_path("stdlib")
    modules = iter_stdlib_modules(stdlib)

    zip_path = os.path.join(args.out, f"stdlib-{ver}.zip")
    floor_path = os.path.join(args.out, f"stdlib-{ver}.floor")

    compiled = []
    failed = []
    for name, path, is_pkg in modules:
        try:
            code = compile_module(path)
        except (SyntaxError, ValueError, UnicodeDecodeError) as e:
            failed.append((name, str(e)))
            continue
        st = os.stat(path)
        compiled.append((name, path, is_pkg, code, st))

    tmp = zip_path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, path, is_pkg, code, st in compiled:
            rel = name.replace(".", "/") + ("/__init__.pyc" if is_pkg else ".pyc")
            pyc = bext._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)
            info = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info, bytes(pyc))
    os.replace(tmp, zip_path)

    index = {}
    payload = bytearray()
    frozen = []
    blobs = []
    for name, path, is_pkg, code, _st in compiled:
        if is_frozen(name):
            frozen.append(name)
            continue
        blobs.append((name, path, is_pkg, marshal.dumps(code)))
    for name, path, is_pkg, data in blobs:  # offsets are relative to the payload start
        index[name] = (is_pkg, path, os.path.dirname(path) if is_pkg else None, len(payload), len(data))
        payload += data
    index_bytes = marshal.dumps(index)
    with open(floor_path + ".tmp", "wb") as f:
        f.write(b"INGFLOOR")
        f.write(len(index_bytes).to_bytes(8, "little"))
        f.write(index_bytes)
        f.write(payload)
    os.replace(floor_path + ".tmp", floor_path)

    manifest = {
        "python": sys.version,
        "stdlib": stdlib,
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
    with open(os.path.join(args.out, f"stdlib-{ver}.artifacts.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(json.dumps({k: manifest[k] for k in ("modules_packed", "zip", "floor")}))
    if failed:
        print(f"warning: {len(failed)} modules did not compile: {failed}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
