"""The finder-steps workload's child (bench/workloads.toml): the per-module cost of each step
importlib takes, with module bodies that do nothing (`X = 1`), in this one process.

    python bench/apps/finder_steps.py ingot|oxidized      # ingot: with ingot on PYTHONPATH

Packs 1,000 trivial modules into an ingot archive (or PyOxidizer's packed resources), then times
`find_spec`, `module_from_spec` (importlib's `_init_module_attrs`), `exec_module` and a whole
first `__import__`, each the best of 5 passes over the modules, and prints
`bench find_ns=N create_ns=N exec_ns=N import_ns=N`: nanoseconds for all 1,000 modules, so the
milliseconds the report shows are microseconds per module.
"""

import importlib._bootstrap as bootstrap
import importlib.util
import marshal
import os
import sys
import tempfile
import time

COUNT = 1000


def best(function) -> int:
    out = []
    for _ in range(5):
        started = time.perf_counter_ns()
        function()
        out.append(time.perf_counter_ns() - started)
    return min(out)


def finder(kind: str, directory: str, codes: dict):
    path = os.path.join(directory, "tiny")
    if kind == "ingot":
        import ingot

        magic, version = importlib.util.MAGIC_NUMBER, sys.version_info[:2]
        writer = ingot.ArchiveWriter(bytecode_magic=magic, python_version=version)
        for name, code in codes.items():
            writer.add_module(name, bytecode={0: code})
        writer.write(path)
        return ingot.IngotFinder(path)
    import oxidized_importer as oi

    resources = []
    for name, code in codes.items():
        resource = oi.OxidizedResource()
        resource.is_module, resource.name, resource.in_memory_bytecode = True, name, code
        resources.append(resource)
    packer = oi.OxidizedFinder()
    packer.add_resources(resources)
    with open(path, "wb") as f:
        f.write(packer.serialize_indexed_resources())
    found = oi.OxidizedFinder()
    found.index_file_memory_mapped(path)
    return found


def main() -> None:
    names = [f"tiny_{i:05d}" for i in range(COUNT)]
    codes = {n: marshal.dumps(compile("X = 1\n", f"{n}.py", "exec")) for n in names}
    with tempfile.TemporaryDirectory() as directory:
        f = finder(sys.argv[1], directory, codes)
        specs = [f.find_spec(n, None) for n in names]
        modules = [bootstrap.module_from_spec(s) for s in specs]
        find = best(lambda: [f.find_spec(n, None) for n in names])
        create = best(lambda: [bootstrap.module_from_spec(s) for s in specs])
        execute = best(lambda: [f.exec_module(m) for m in modules])
        sys.meta_path.insert(0, f)
        started = time.perf_counter_ns()
        for name in names:
            __import__(name)
        whole = time.perf_counter_ns() - started
    print(f"bench find_ns={find} create_ns={create} exec_ns={execute} import_ns={whole}")


main()
