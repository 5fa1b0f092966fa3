"""The measured process of the finders workload (bench/workloads.toml, bench/README.md).

    python -I -S bench/apps/runner.py CONFIG SCRIPT [ARG ...]

Installs CONFIG's finder, executes SCRIPT as __main__ and prints `bench setup_ns=N import_ns=N`.
With BENCH_VERIFY=1 (the run that checks a configuration) it fails unless the finder under test
served what SCRIPT imported: no module left to the stock SourceFileLoader. It imports nothing
that startup has not loaded or that is not built in: a stdlib module it imported would be served
by the stock finder before the one under test.
"""

import _frozen_importlib as _boot
import _frozen_importlib_external as _ext
import marshal
import sys
import time

_clock = time.perf_counter_ns


class FloorFinder:
    """The least an in-memory finder can do: one read() of a blob (make_artifacts.py: b"INGFLOOR",
    u64 LE index length, marshal of {name: (is_package, origin, package_dir, offset, length)}, the
    marshal bytes of the code objects), a dict lookup in find_spec, marshal.loads + exec."""

    def __init__(self, path, use_mmap=False):
        with open(path, "rb") as f:
            if use_mmap:
                import mmap  # an extension module

                data = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            else:
                data = f.read()
        if data[:8] != b"INGFLOOR":
            raise ImportError(f"not a floor blob: {path!r}")
        n = int.from_bytes(data[8:16], "little")
        self._mv = memoryview(data)
        self._index = marshal.loads(self._mv[16 : 16 + n])
        self._base = 16 + n

    def find_spec(self, name, path=None, target=None):
        entry = self._index.get(name)
        if entry is None:
            return None
        spec = _boot.ModuleSpec(name, self, origin=entry[1], is_package=entry[0])
        if entry[0]:
            spec.submodule_search_locations = [entry[2]]
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        entry = self._index[module.__spec__.name]
        off = self._base + entry[3]
        exec(marshal.loads(self._mv[off : off + entry[4]]), module.__dict__)

    def invalidate_caches(self):
        pass


def _load_extension(name, path):
    loader = _ext.ExtensionFileLoader(name, path)
    spec = _boot.spec_from_loader(name, loader)
    module = _boot.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def _setup(config, args):
    if config == "stock":
        return
    if config == "zipimport":
        sys.path.insert(0, args[0])
        # `encodings` was imported from the stdlib directory during startup, so its
        # submodules would be looked up on its __path__ only; put the zip first there, as
        # if the interpreter had started from this zip (as it does from pythonXY.zip).
        sys.modules["encodings"].__path__.insert(0, args[0] + "/encodings")
        return
    if config in ("floor", "floor-mmap"):
        sys.meta_path.insert(0, FloorFinder(args[0], use_mmap=config == "floor-mmap"))
        return
    if config == "oxidized":
        oi = _load_extension("oxidized_importer", args[0])
        finder = oi.OxidizedFinder()
        finder.index_file_memory_mapped(args[1])
        sys.meta_path.insert(0, finder)
        return
    if config == "ingot":
        sys.path.insert(0, args[0])
        import ingot

        del sys.path[0]
        sys.meta_path.insert(0, ingot.IngotFinder(args[1]))
        return
    sys.stderr.write(f"runner.py: unknown config {config!r}\n")
    raise SystemExit(2)


def _loader(module):
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    loader = loader or getattr(module, "__loader__", None)
    return loader if isinstance(loader, type) else type(loader)


def _check(config, setup_modules):
    """Fails unless the finder under test served what the script imported."""
    skip = setup_modules | {"__mp_main__"}
    late = {n: _loader(m).__name__ for n, m in sys.modules.items() if n not in skip}
    stray = sorted(n for n, loader in late.items() if loader == "SourceFileLoader")
    if config != "stock" and stray:
        sys.stderr.write(
            f"runner.py: {config}: the stock finder served {len(stray)}: {stray[:5]}\n"
        )
        raise SystemExit(1)
    if len(late) < 100:
        sys.stderr.write(f"runner.py: {config}: the script imported {len(late)} modules\n")
        raise SystemExit(1)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        raise SystemExit(2)
    config, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec", dont_inherit=True)
    namespace = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
    t0 = _clock()
    _setup(config, args)
    t1 = _clock()
    setup_modules = set(sys.modules)
    exec(code, namespace)
    t2 = _clock()
    import os  # the script imported it already

    if os.environ.get("BENCH_VERIFY"):
        _check(config, setup_modules)
    sys.stdout.write(f"bench setup_ns={t1 - t0} import_ns={t2 - t1}\n")


main()
