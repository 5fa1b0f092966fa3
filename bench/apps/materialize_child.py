"""The measured process of the materialize workloads (bench/workloads.toml, bench/README.md), run
as `python -I -S materialize_child.py BLOBS ROOT MODE TREE`; BLOBS holds the workload (prepare),
ROOT is the extraction cache written into, TREE the tree's id in it.

    prepare PYTHONPATH [--pyc]   (the build) BLOBS/blob.marshal: [(path, bytes)] of the stdlib
                                 directory's files, BLOBS/src/ the same files (PyInstaller's
                                 data), BLOBS/count, BLOBS/_ingot.so: a copy of ingot's extension
    clean                        (before a timed write) check the last tree, remove it, sync
    ingot                        write_tree(ROOT, TREE, files): writes, or verifies a tree there
    binding                      write_tree with the unsafe id '..': the binding's own work
    py-write-stream, py-write-mmap, py-verify   pure-Python references, one thread
    baseline                     the same process without a call

A timed mode prints `bench setup_ns=N call_ns=N call_cpu_ns=N`; `ingot` on a tree that existed
fails if the tree was replaced (it did not verify).
"""

import marshal
import os
import sys
import time

clock = time.perf_counter_ns
# not part of the workload: what an app would not ship, and the build machine's own additions
SKIP_TOP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages"}


def load_ext(path):
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    loader = ExtensionFileLoader("_ingot", path)
    module = module_from_spec(spec_from_loader("_ingot", loader))
    loader.exec_module(module)
    return module


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def prepare(blobs, pythonpath, pyc):
    """The workload: every file of the stdlib directory but SKIP_TOP, config-*/ and __pycache__/
    (with --pyc, plus the modules' cached bytecode), sorted by path."""
    import glob
    import shutil
    import sysconfig

    stdlib, tag, files = sysconfig.get_paths()["stdlib"], sys.implementation.cache_tag, []
    for dirpath, dirnames, filenames in os.walk(stdlib):
        rel = os.path.relpath(dirpath, stdlib)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in SKIP_TOP and not d.startswith("config-")]
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        prefix = "" if rel == "." else rel + "/"
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            pairs = [(prefix + name, path)]
            cached = os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{tag}.pyc")
            if pyc and name.endswith(".py") and os.path.isfile(cached):
                pairs.append((f"{prefix}__pycache__/{name[:-3]}.{tag}.pyc", cached))
            for rel_path, p in pairs:
                with open(p, "rb") as f:
                    files.append((rel_path, f.read()))
    files.sort()
    shutil.rmtree(os.path.join(blobs, "src"), ignore_errors=True)
    for rel, data in files:
        write(os.path.join(blobs, "src", rel), data)
    write(os.path.join(blobs, "count"), str(len(files)).encode())
    (so,) = glob.glob(os.path.join(pythonpath, "ingot", "_ingot.cpython-*.so"))
    shutil.copyfile(so, os.path.join(blobs, "_ingot.so"))  # a rebuild during a run changes nothing
    write(os.path.join(blobs, "blob.marshal"), marshal.dumps(files))
    print(f"{len(files)} files, {sum(len(d) for _, d in files)} bytes from {stdlib}")


def clean(blobs, trees, tree):
    """Fails if the tree the last run wrote lacks files; removes it and leftovers; syncs."""
    import shutil

    path = os.path.join(trees, tree)
    if os.path.isdir(path):
        with open(os.path.join(blobs, "count")) as f:
            want = int(f.read())
        got = sum(len(names) for _, _, names in os.walk(path))
        if got != want:
            raise SystemExit(f"{path}: {got} files, expected {want}")
    for name in os.listdir(trees):
        if name == tree or name.startswith(".tmp-"):
            shutil.rmtree(os.path.join(trees, name))
    os.sync()


def py_write(files, parent, tree_id, use_mmap):
    tmp = os.path.join(parent, f".tmp-py-{tree_id}-{os.getpid()}")
    os.mkdir(tmp, 0o700)
    dirs = set()
    for rel, _ in files:
        at = rel.rfind("/")
        while at > 0 and rel[:at] not in dirs:
            dirs.add(rel[:at])
            at = rel.rfind("/", 0, at)
    for d in sorted(dirs):
        os.mkdir(os.path.join(tmp, d), 0o700)
    flags = os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | (os.O_RDWR if use_mmap else os.O_WRONLY)
    if use_mmap:
        import mmap
    for rel, data in files:
        fd = os.open(os.path.join(tmp, rel), flags, 0o600)
        if use_mmap:
            if data:
                os.ftruncate(fd, len(data))
                m = mmap.mmap(fd, len(data))
                m[:] = data
                m.close()
        else:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        os.close(fd)
    os.rename(tmp, os.path.join(parent, tree_id))


def py_verify(manifest, tree, content_hash):
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    for rel, size, digest in manifest:
        fd = os.open(os.path.join(tree, rel), flags)
        try:
            st = os.fstat(fd)
            if (st.st_mode & 0o170000) != 0o100000 or st.st_size != size:
                raise SystemExit(f"py-verify: {rel}: wrong type or size")
            data = os.read(fd, size + 1)
            while len(data) < size:
                more = os.read(fd, size + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if len(data) != size or content_hash(data) != digest:
            raise SystemExit(f"py-verify: {rel}: content differs")


def main():
    blobs, root, mode = sys.argv[1:4]
    trees = os.path.join(root, "trees")
    if mode == "prepare":
        return prepare(blobs, sys.argv[4], "--pyc" in sys.argv[5:])
    tree = sys.argv[4]
    os.makedirs(trees, 0o700, exist_ok=True)
    os.chmod(root, 0o700)
    if mode == "clean":
        return clean(blobs, trees, tree)
    try:
        before = os.stat(os.path.join(trees, tree)).st_ino
    except OSError:
        before = None
    t0 = clock()
    ext = load_ext(os.path.join(blobs, "_ingot.so"))
    with open(os.path.join(blobs, "blob.marshal"), "rb") as f:
        files = marshal.loads(f.read())
    if mode == "py-verify":
        manifest = [(rel, len(data), ext.content_hash(data)) for rel, data in files]
    c1 = time.process_time_ns()
    t1 = clock()
    if mode == "ingot":
        ext.write_tree(root, tree, files)
    elif mode == "binding":
        try:
            ext.write_tree(root, "..", files)
        except OSError as e:
            if "unsafe path" not in str(e):
                raise
        else:
            raise SystemExit("binding: write_tree accepted id '..'")
    elif mode in ("py-write-stream", "py-write-mmap"):
        py_write(files, trees, tree, mode == "py-write-mmap")
    elif mode == "py-verify":
        py_verify(manifest, os.path.join(trees, tree), ext.content_hash)
    elif mode != "baseline":
        raise SystemExit(f"unknown mode {mode!r}")
    t2 = clock()
    c2 = time.process_time_ns()
    if mode == "ingot" and before not in (None, os.stat(os.path.join(trees, tree)).st_ino):
        raise SystemExit(f"{trees}/{tree} was replaced: write_tree did not verify it")
    sys.stdout.write(f"bench setup_ns={t1 - t0} call_ns={t2 - t1} call_cpu_ns={c2 - c1}\n")


main()
