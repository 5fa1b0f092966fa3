"""The measured process of bench/finders.py (configurations: bench/README.md).

    python -I -S bench/apps/runner.py [--verify] CONFIG SCRIPT [ARG ...]

Installs CONFIG's finder, executes SCRIPT as __main__ and writes to stderr
`ingot-bench setup_ns=N import_ns=N` (--verify first: `ingot-bench-verify {JSON}`, which loader
served each module). It imports nothing that startup has not loaded or that is not built in: a
stdlib module it imported would be served by the stock finder before the one under test.
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


def _skip(message):
    sys.stderr.write(f"ingot-bench-skip: {message}\n")
    raise SystemExit(3)


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
        try:
            import ingot
        except ImportError as e:
            _skip(f"cannot import ingot from {args[0]}: {e}")
        finally:
            del sys.path[0]
        finder_type = getattr(ingot, "IngotFinder", None)
        if finder_type is None:
            _skip("ingot ({}) has no IngotFinder yet".format(getattr(ingot, "__file__", "?")))
        sys.meta_path.insert(0, finder_type(args[1]))
        return
    sys.stderr.write(f"runner.py: unknown config {config!r}\n")
    raise SystemExit(2)


def _type_name(x):
    return x.__name__ if isinstance(x, type) else type(x).__name__


def _loader_name(module):
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    loader = loader or getattr(module, "__loader__", None)
    return "None" if loader is None else _type_name(loader)


def main():
    argv = sys.argv[1:]
    verify = argv[:1] == ["--verify"]
    if verify:
        del argv[0]
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        raise SystemExit(2)
    config, script, args = argv[0], argv[1], argv[2:]

    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec", dont_inherit=True)
    namespace = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
    before = set(sys.modules) if verify else None

    t0 = _clock()
    _setup(config, args)
    t1 = _clock()
    after_setup = set(sys.modules) if verify else None
    exec(code, namespace)
    t2 = _clock()

    if verify:
        import json  # already imported by the script; costs nothing here

        report = {
            "preloaded": sorted(before),
            # stdlib modules pulled in by the finder's own setup (e.g. by `import ingot`):
            # these are served by whatever was there before, not by the finder under test
            "setup_loaded": {n: _loader_name(sys.modules[n]) for n in sorted(after_setup - before)},
            "modules": {n: _loader_name(m) for n, m in sorted(sys.modules.items())},
            "meta_path": [_type_name(f) for f in sys.meta_path],
        }
        sys.stderr.write("ingot-bench-verify " + json.dumps(report) + "\n")
    sys.stderr.write(f"ingot-bench setup_ns={t1 - t0} import_ns={t2 - t1}\n")


main()
