"""The measured process of bench/materialize.py (run as `python -I -S`)."""

import marshal
import os
import sys
import time

clock = time.perf_counter_ns


def load_ext(path):
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    loader = ExtensionFileLoader("_ingot", path)
    module = module_from_spec(spec_from_loader("_ingot", loader))
    loader.exec_module(module)
    return module


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
    mode, so, blob, root, tree_id = sys.argv[1:6]
    t0 = clock()
    ext = load_ext(so)
    with open(blob, "rb") as f:
        files = marshal.loads(f.read())
    manifest = None
    if mode == "py-verify":
        manifest = [(rel, len(data), ext.content_hash(data)) for rel, data in files]
    c1 = time.process_time_ns()
    t1 = clock()
    if mode == "ingot":
        ext.write_tree(root, tree_id, files)
    elif mode == "binding":
        try:
            ext.write_tree(root, "..", files)
        except OSError as e:
            if "unsafe path" not in str(e):
                raise
        else:
            raise SystemExit("binding: write_tree accepted id '..'")
    elif mode == "py-write-stream":
        py_write(files, os.path.join(root, "trees"), tree_id, False)
    elif mode == "py-write-mmap":
        py_write(files, os.path.join(root, "trees"), tree_id, True)
    elif mode == "py-verify":
        py_verify(manifest, os.path.join(root, "trees", tree_id), ext.content_hash)
    elif mode != "baseline":
        raise SystemExit(f"unknown mode {mode!r}")
    t2 = clock()
    c2 = time.process_time_ns()
    sys.stdout.write(f"matbench setup_ns={t1 - t0} call_ns={t2 - t1} call_cpu_ns={c2 - c1}\n")


main()
