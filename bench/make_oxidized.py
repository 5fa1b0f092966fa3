"""Build a PyOxidizer packed-resources file of the 3.10 stdlib for OxidizedFinder.

    /work/venv310/bin/python bench/make_oxidized.py [--out bench/out]

Needs ``oxidized_importer==0.6.0`` (PyPI; wheels stop at CPython 3.10) in the
running interpreter, e.g. ``python3.10 -m venv /work/venv310 &&
/work/venv310/bin/pip install oxidized_importer==0.6.0``.

Every module of the packed set (stdlib_files.py) becomes one in-memory
OxidizedResource whose ``in_memory_bytecode`` is ``marshal.dumps(code)`` of
the code object compiled here at optimize 0, the same bytes as in the floor
blob and the zip.  (The resources are built directly rather than through
``find_resources_in_path`` + ``OxidizedResourceCollector.add_in_memory`` +
``oxidize()``, so the bytecode is exactly ours; ``--collector`` builds it the
collector way instead, for comparison.)  Modules served frozen are left out.
Output: ``stdlib-3.10.oxidized`` (``OxidizedFinder.serialize_indexed_resources()``),
loaded in the measured process with ``OxidizedFinder().index_file_memory_mapped(path)``.
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import sys
import sysconfig

import oxidized_importer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stdlib_files import compile_module, is_frozen, iter_stdlib_modules  # noqa: E402


def resources_direct(modules):
    out = []
    for name, path, is_pkg in modules:
        r = oxidized_importer.OxidizedResource()
        r.is_module = True
        r.name = name
        r.is_package = is_pkg
        r.in_memory_bytecode = marshal.dumps(compile_module(path))
        out.append(r)
    return out


def resources_collector(stdlib, names):
    collector = oxidized_importer.OxidizedResourceCollector(allowed_locations=["in-memory"])
    for res in oxidized_importer.find_resources_in_path(stdlib):
        if type(res).__name__ in ("PythonModuleSource", "PythonModuleBytecode") and res.module in names:
            if type(res).__name__ == "PythonModuleBytecode" and res.optimize_level != 0:
                continue
            collector.add_in_memory(res)
    resources, _file_installs = collector.oxidize()
    return resources


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--collector", action="store_true", help="use find_resources_in_path + collector.oxidize()")
    args = ap.parse_args()
    if sys.version_info[:2] != (3, 10):
        print("make_oxidized.py: oxidized_importer 0.6.0 only exists for CPython <= 3.10", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    stdlib = sysconfig.get_path("stdlib")
    modules = [m for m in iter_stdlib_modules(stdlib) if not is_frozen(m[0])]

    if args.collector:
        resources = resources_collector(stdlib, {m[0] for m in modules})
    else:
        resources = resources_direct(modules)

    finder = oxidized_importer.OxidizedFinder()
    finder.add_resources(resources)
    data = finder.serialize_indexed_resources()
    path = os.path.join(args.out, "stdlib-3.10.oxidized")
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    info = {"path": path, "bytes": len(data), "modules": len(resources), "collector": args.collector,
            "oxidized_importer": oxidized_importer.__file__}
    with open(os.path.join(args.out, "stdlib-3.10.oxidized.json"), "w") as f:
        json.dump(info, f, indent=2)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
