"""Per-module cost of a finder, with module bodies that do nothing (`X = 1`).

Builds an ingot archive (and, where `oxidized_importer` is importable, a PyOxidizer packed
resources file) of N trivial modules, then times, in this process, each step importlib takes:
`find_spec`, `module_from_spec` (importlib's `_init_module_attrs`), `exec_module`, and a whole
`__import__`. Best of 5 passes over the N modules; microseconds per module.

    python bench/finder_overhead.py [--modules 3000]   # run with the python under test
"""

import argparse
import importlib._bootstrap as bootstrap
import importlib.util
import marshal
import os
import sys
import tempfile
import time

import ingot


def best_per_module(function, count):
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best / count * 1e6


def build(directory, names):
    writer = ingot.ArchiveWriter(
        bytecode_magic=importlib.util.MAGIC_NUMBER, python_version=sys.version_info[:2]
    )
    codes = {name: marshal.dumps(compile("X = 1\n", f"{name}.py", "exec")) for name in names}
    for name, code in codes.items():
        writer.add_module(name, bytecode={0: code})
    archive = os.path.join(directory, "tiny.ingot")
    writer.write(archive)
    finders = {"ingot": ingot.IngotFinder(archive)}
    try:
        import oxidized_importer
    except ImportError:
        return finders
    resources = []
    for name, code in codes.items():
        resource = oxidized_importer.OxidizedResource()
        resource.is_module, resource.name, resource.in_memory_bytecode = True, name, code
        resources.append(resource)
    oxidized = oxidized_importer.OxidizedFinder()
    oxidized.add_resources(resources)
    packed = os.path.join(directory, "tiny.oxidized")
    with open(packed, "wb") as file:
        file.write(oxidized.serialize_indexed_resources())
    finders["oxidized"] = oxidized_importer.OxidizedFinder()
    finders["oxidized"].index_file_memory_mapped(packed)
    return finders


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        base = [f"tiny_{index:05d}" for index in range(args.modules)]
        count = args.modules
        for label, finder in sorted(build(directory, base).items()):
            specs = [finder.find_spec(name, None) for name in base]
            modules = [bootstrap.module_from_spec(spec) for spec in specs]
            steps = [
                lambda f=finder: [f.find_spec(n, None) for n in base],
                lambda s=specs: [bootstrap.module_from_spec(x) for x in s],
                lambda f=finder, m=modules: [f.exec_module(x) for x in m],
            ]
            find, create, execute = (best_per_module(step, count) for step in steps)
            sys.meta_path.insert(0, finder)
            started = time.perf_counter()
            for name in base:
                __import__(name)
            whole = (time.perf_counter() - started) / count * 1e6
            sys.meta_path.remove(finder)
            for name in base:
                sys.modules.pop(name, None)
            print(
                f"{label:9} find_spec {find:5.2f}  module_from_spec {create:5.2f}  "
                f"exec_module {execute:5.2f}  whole import (first time) {whole:5.2f}  us/module"
            )


if __name__ == "__main__":
    main()
