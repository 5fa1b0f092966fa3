r"""Materializing the standard library as a `files` tree: ingot's cache writer against PyInstaller onefile.

    nice -n -15 /work/venv311/bin/python bench/materialize.py [--runs 15] [--workloads stdlib,stdlib+pyc]
        [--workdir /var/tmp/ingot-matbench] [--fs-dir DIR] [--keep-trees] [--no-pyinstaller] [--make-pyi-venv]
        [--strace] [--steady N] [--pyi-spaced N --spacing 40] [--out bench/results/materialize-<stamp>.json]

The runs behind docs/benchmarks.md (root; the first on a journaled ext4 made for it, because this
VM's root file system is ext4 without a journal, see the doc):

    truncate -s 6G /var/tmp/ingot-matbench/ext4j.img && mkfs.ext4 -q -F /var/tmp/ingot-matbench/ext4j.img
    mkdir -p /mnt/ingot-matbench && mount "$(losetup --direct-io=on -f --show /var/tmp/ingot-matbench/ext4j.img)" /mnt/ingot-matbench
    nice -n -15 python bench/materialize.py --runs 20 --fs-dir /mnt/ingot-matbench --strace
    nice -n -15 python bench/materialize.py --runs 15 --keep-trees                  # root fs: /var/tmp, /tmp
    nice -n -15 python bench/materialize.py --runs 6 --temps hot --configs pyi-nodata,pyi-data \
        --pyi-spaced 6 --spacing 40 --fs-dir /var/tmp/ingot-matbench/native
    nice -n -15 python bench/materialize.py --runs 0 --no-pyinstaller --steady 15 --fs-dir /mnt/ingot-matbench

What it measures (results and discussion: docs/benchmarks.md, "Materializing files (issue 4)"):

* Workloads, read into memory as ``[(relpath, bytes), ...]`` and stored as one marshal blob:
  ``stdlib``: every file under the interpreter's stdlib directory except ``test/``, ``idlelib/``,
  ``tkinter/``, ``turtledemo/``, ``ensurepip/``, ``site-packages/``, ``config-3.11-*/`` (libpython.a)
  and ``__pycache__/`` (``lib-dynload/*.so`` included); ``stdlib+pyc``: the same plus the
  ``__pycache__/*.cpython-311.pyc`` of those modules that exist (the issue's ~1,500-file scale).
* Every timed run is a fresh process (``python -I -S`` on a small child script written into the
  work directory) that loads the ingot extension module by path (a private copy of the ``.so``,
  so a rebuild during the run changes nothing), reads the blob, then times one operation with
  ``time.perf_counter_ns`` (``call``); the harness times the whole process from spawn to exit
  (``wall``). Configurations (``*-1cpu``: the child runs under ``taskset -c 0``; the cache writer
  sizes its thread pool from ``available_parallelism()``, which follows the affinity mask, so it
  then uses one writer thread, and its closer thread shares the same CPU):

    write-stream[-1cpu]    ingot._ingot.write_tree into an empty cache, INGOT_WRITE_STRATEGY=stream
    write-mmap[-1cpu]      the same, INGOT_WRITE_STRATEGY=mmap
    verify[-1cpu]          write_tree on the existing tree: the second start (size + XXH3 of every file)
    py-write-stream        reference: pure Python, one thread: os.open/os.write/os.close per file
                           into a temporary directory, then rename (no hashing)
    py-write-mmap          the same with ftruncate + mmap copy instead of write
    py-verify              reference: pure Python, one thread: open, fstat, read, XXH3 (ingot's
                           content_hash) per file against a manifest computed before the timer
    binding                write_tree with an invalid id: only the binding's own work (copying the
                           Python bytes into Rust, hashing them for the manifest), which the importer
                           does not do (its manifest comes from the archive); hot only
    baseline               the child without any call (process start + blob load)
    pyi-nodata             PyInstaller onefile of a trivial script (unpacks its runtime to /tmp/_MEI*)
    pyi-<workload>         the same with the workload's files added as data: unpacks them too, at
                           every start, and removes them at exit
    pyi-<workload>-stored  the same with the data stored (cdict DATA uncompressed) instead of zlib 9

* Temperatures: ``hot`` (an untimed run of the same configuration right before, so the blob, the
  .so, the interpreter and the destination's parent are in the page cache) and ``cold`` (``sync``,
  ``echo 3 > /proc/sys/vm/drop_caches`` right before the run). Before every run the destination
  tree of a write configuration is removed and ``sync`` is called (outside any timing), so no run
  pays for the writeback of an earlier one. Nothing here calls fsync: the times are to the page
  cache, as for the importer and for PyInstaller.
* Each round runs every (configuration, temperature) once in a rotated order; ratios are computed
  per round and their median reported, next to the medians of each configuration.

Needs root (drop_caches, nice) and, for the PyInstaller rows, a venv with
``pyinstaller==6.22.3`` (``--pyi-venv``, created with ``--make-pyi-venv`` if missing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import marshal
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYINSTALLER = "pyinstaller==6.22.3"

SKIP_TOP = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages"})

# The measured process. Runs under `python -I -S`; imports only what startup already has (or is frozen)
# plus the extension module, loaded by path.
CHILD = r'''
import marshal, os, sys, time
clock = time.perf_counter_ns


def load_ext(path):
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_loader
    loader = ExtensionFileLoader("_ingot", path)
    module = module_from_spec(spec_from_loader("_ingot", loader))
    loader.exec_module(module)
    return module


def py_write(files, parent, tree_id, use_mmap):
    tmp = os.path.join(parent, ".tmp-py-%s-%d" % (tree_id, os.getpid()))
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
                view = view[os.write(fd, view):]
        os.close(fd)
    os.rename(tmp, os.path.join(parent, tree_id))


def py_verify(manifest, tree, content_hash):
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    for rel, size, digest in manifest:
        fd = os.open(os.path.join(tree, rel), flags)
        try:
            st = os.fstat(fd)
            if (st.st_mode & 0o170000) != 0o100000 or st.st_size != size:
                raise SystemExit("py-verify: %s: wrong type or size" % rel)
            data = os.read(fd, size + 1)
            while len(data) < size:
                more = os.read(fd, size + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if len(data) != size or content_hash(data) != digest:
            raise SystemExit("py-verify: %s: content differs" % rel)


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
    elif mode == "steady":
        # one process, tree_id iterations of each: the writers without first-touch costs
        import json, shutil
        parent = os.path.join(root, "trees")
        res = {"binding": [], "ingot": [], "py-write-stream": []}
        for _ in range(int(tree_id)):
            for m in res:
                shutil.rmtree(os.path.join(parent, "steady"), ignore_errors=True)
                os.sync()
                c = time.process_time_ns()
                t = clock()
                if m == "ingot":
                    ext.write_tree(root, "steady", files)
                elif m == "binding":
                    try:
                        ext.write_tree(root, "..", files)
                    except OSError:
                        pass
                else:
                    py_write(files, parent, "steady", False)
                res[m].append((clock() - t, time.process_time_ns() - c))
        shutil.rmtree(os.path.join(parent, "steady"), ignore_errors=True)
        sys.stdout.write("matbench-steady " + json.dumps(res) + "\n")
    elif mode != "baseline":
        raise SystemExit("unknown mode %r" % mode)
    t2 = clock()
    c2 = time.process_time_ns()
    sys.stdout.write("matbench setup_ns=%d call_ns=%d call_cpu_ns=%d\n" % (t1 - t0, t2 - t1, c2 - c1))


main()
'''

PYI_APP = r'''
import os, sys
if os.environ.get("MATBENCH_COUNT"):
    print(sum(len(files) for _, _, files in os.walk(sys._MEIPASS)))
'''

PYI_SPEC = r'''
# Generated by bench/materialize.py. The data entries are added after Analysis, so PyInstaller
# takes them as DATA as given (no binary reclassification or dependency analysis of the .so files):
# the onefile unpacks exactly the workload's files, under stdlib/.
import json
with open({datas_json!r}) as f:
    extra = [tuple(entry) for entry in json.load(f)]
a = Analysis([{script!r}], pathex=[], binaries=[], datas=[], hiddenimports=[], hookspath=[],
             hooksconfig={{}}, runtime_hooks=[], excludes=[], noarchive=False)
a.datas += extra
pyz = PYZ(a.pure)
exe = EXE(pyz, a.scripts, a.binaries, a.datas, [], name={name!r}, debug=False,
          bootloader_ignore_signals=False, strip=False, upx=False, console=True,
          runtime_tmpdir=None{cdict})
'''

STORED_CDICT = {"EXTENSION": True, "DATA": False, "BINARY": True, "EXECUTABLE": True, "PYSOURCE": True,
                "PYMODULE": True, "SPLASH": True, "PYZ": False, "SYMLINK": False}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# ---------------------------------------------------------------------------------------------
# workloads


def collect(stdlib_dir: str, with_pyc: bool) -> list[tuple[str, bytes]]:
    """The workload's files as (tree-relative path, bytes), sorted by path."""
    out = []
    for dirpath, dirnames, filenames in os.walk(stdlib_dir):
        rel_dir = os.path.relpath(dirpath, stdlib_dir)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in SKIP_TOP and not d.startswith("config-")]
            rel_dir = ""
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            with open(path, "rb") as f:
                out.append((rel, f.read()))
            if with_pyc and name.endswith(".py"):
                tag = sys.implementation.cache_tag
                pyc = os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{tag}.pyc")
                if os.path.isfile(pyc):
                    with open(pyc, "rb") as f:
                        out.append((f"{rel_dir + '/' if rel_dir else ''}__pycache__/{name[:-3]}.{tag}.pyc", f.read()))
    out.sort()
    return out


def describe(files) -> dict:
    sizes = [len(b) for _, b in files]
    ext = {}
    for rel, b in files:
        e = os.path.splitext(rel)[1] or "(none)"
        n, s = ext.get(e, (0, 0))
        ext[e] = (n + 1, s + len(b))
    return {
        "files": len(files),
        "bytes": sum(sizes),
        "directories": len({rel.rsplit("/", 1)[0] for rel, _ in files if "/" in rel}),
        "median_file_bytes": statistics.median(sizes),
        "largest": sorted(((len(b), rel) for rel, b in files), reverse=True)[:5],
        "by_extension": {k: {"files": v[0], "bytes": v[1]} for k, v in sorted(ext.items(), key=lambda kv: -kv[1][1])},
    }


# ---------------------------------------------------------------------------------------------
# PyInstaller


def ensure_pyi_venv(venv: str, make: bool) -> str | None:
    exe = os.path.join(venv, "bin", "pyinstaller")
    if os.path.exists(exe):
        return exe
    if not make:
        return None
    log(f"creating {venv} with {PYINSTALLER}")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", PYINSTALLER], check=True)
    return exe


def build_pyinstaller(pyi: str, workdir: str, name: str, src_tree: str | None, stored: bool) -> dict:
    pdir = os.path.join(workdir, "pyi")
    os.makedirs(pdir, exist_ok=True)
    script = os.path.join(pdir, "app.py")
    with open(script, "w") as f:
        f.write(PYI_APP)
    datas = []
    if src_tree:
        for dirpath, _, filenames in os.walk(src_tree):
            for fn in filenames:
                src = os.path.join(dirpath, fn)
                datas.append(("stdlib/" + os.path.relpath(src, src_tree), src, "DATA"))
    datas.sort()
    datas_json = os.path.join(pdir, f"{name}.datas.json")
    with open(datas_json, "w") as f:
        json.dump(datas, f)
    spec = os.path.join(pdir, f"{name}.spec")
    with open(spec, "w") as f:
        f.write(PYI_SPEC.format(datas_json=datas_json, script=script, name=name,
                                cdict=f", cdict={STORED_CDICT!r}" if stored else ""))
    exe = os.path.join(pdir, "dist", name)
    t0 = time.perf_counter()
    r = sh([pyi, "--noconfirm", "--clean", "--log-level", "WARN", "--distpath", os.path.join(pdir, "dist"),
            "--workpath", os.path.join(pdir, "build", name), spec], cwd=pdir)
    seconds = time.perf_counter() - t0
    if r.returncode != 0 or not os.path.exists(exe):
        raise SystemExit(f"PyInstaller build {name} failed:\n{r.stdout}\n{r.stderr}")
    env = dict(os.environ, MATBENCH_COUNT="1")
    count = int(sh([exe], env=env, check=True).stdout.strip())
    return {"exe": exe, "size": os.path.getsize(exe), "build_seconds": round(seconds, 1),
            "extracted_files": count, "data_files": len(datas), "stored": stored}


# ---------------------------------------------------------------------------------------------
# runs


class Config:
    """One measured configuration. A write configuration has ``tree_id``: its argv holds the
    placeholder ``{id}``; before each run the tree is removed, or, with ``--keep-trees``,
    each run writes a new id and the trees are removed at the end. ``warm`` is the argv of the
    untimed run before a hot run (for write configurations the baseline child: it reads the same
    blob, extension module and interpreter, and writes nothing)."""

    def __init__(self, name, workload, kind, argv, env=None, temps=("hot", "cold"), check=None,
                 tree_id=None, parent=None, warm=None):
        self.name, self.workload, self.kind, self.argv = name, workload, kind, argv
        self.env, self.temps, self.check = env or {}, temps, check
        self.tree_id, self.parent, self.warm = tree_id, parent, warm
        self.serial = 0

    @property
    def key(self):
        return f"{self.workload}/{self.name}"

    def next_id(self, keep: bool) -> str | None:
        if self.tree_id is None:
            return None
        if not keep:
            remove_tree(self.parent, self.tree_id)
            return self.tree_id
        self.serial += 1
        return f"{self.tree_id}-{self.serial}"


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def remove_tree(parent: str, tree_id: str) -> None:
    shutil.rmtree(os.path.join(parent, tree_id), ignore_errors=True)
    for name in os.listdir(parent):
        if name.startswith(".tmp-"):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def run_once(cfg: Config, temp: str, keep: bool = False, warm: bool = False) -> dict:
    tree_id = None if warm else cfg.next_id(keep)
    argv = cfg.warm if warm and cfg.warm else cfg.argv
    argv = [a.replace("{id}", tree_id or "unused") for a in argv]
    if temp == "cold":
        drop_caches()
    else:
        os.sync()
    env = dict(os.environ)
    env.pop("INGOT_WRITE_STRATEGY", None)
    env.update(cfg.env)
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(argv, env=env, stdout=out_f, stderr=err_f)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter_ns() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        stdout, stderr = out_f.read(), err_f.read()
    if proc.returncode != 0:
        raise SystemExit(f"{cfg.key} ({temp}) failed ({proc.returncode}):\n{stdout}\n{stderr}")
    # CPU time of the process and the children it waited for (PyInstaller's onefile parent waits for its child)
    out = {"wall_ns": wall, "cpu_ns": int((usage.ru_utime + usage.ru_stime) * 1e9)}
    if cfg.kind == "child":
        line = [l for l in stdout.splitlines() if l.startswith("matbench ")]
        if not line:
            raise SystemExit(f"{cfg.key}: no result line:\n{stdout}\n{stderr}")
        for part in line[-1].split()[1:]:
            k, v = part.split("=")
            out[k] = int(v)
    if cfg.check and not warm:
        cfg.check(tree_id)
    return out


def quart(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return None
    q = statistics.quantiles(xs, n=4)
    return [q[0], q[2]]


def ms(ns):
    return None if ns is None else ns / 1e6


def fs_info(path: str) -> dict:
    r = sh(["stat", "-f", "-c", "%T", path])
    m = sh(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "--target", path])
    return {"path": path, "stat_f_type": r.stdout.strip(), "mount": m.stdout.strip()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="rounds (each runs every configuration once per temperature)")
    ap.add_argument("--workloads", default="stdlib,stdlib+pyc")
    ap.add_argument("--configs", default="", help="comma-separated configuration names to keep (default: all)")
    ap.add_argument("--temps", default="hot,cold")
    ap.add_argument("--workdir", default="/var/tmp/ingot-matbench",
                    help="blobs, cache root, PyInstaller builds (a real disk: /var/tmp, not a tmpfs)")
    ap.add_argument("--fs-dir", default=None,
                    help="directory on the file system under test: the cache root (<fs-dir>/cache) and PyInstaller's "
                         "TMPDIR (<fs-dir>/tmp) go there (default: the work directory and /tmp)")
    ap.add_argument("--keep-trees", action="store_true",
                    help="write every first-materialization run into a new tree id and remove the trees only at the end "
                         "(for ext4 without a journal, where re-creating files within ~30 s of deleting others is slow)")
    ap.add_argument("--python", default="/work/venv311/bin/python", help="the interpreter of the measured processes")
    ap.add_argument("--so", default=None, help="the ingot extension module (default: the one `import ingot._ingot` finds)")
    ap.add_argument("--pyi-venv", default="/tmp/pyi-venv")
    ap.add_argument("--make-pyi-venv", action="store_true", help=f"create --pyi-venv with {PYINSTALLER} if missing")
    ap.add_argument("--no-pyinstaller", action="store_true")
    ap.add_argument("--strace", action="store_true", help="also one `strace -f -c` and one `strace -f -T -e close` per write/verify config (hot)")
    ap.add_argument("--pyi-spaced", type=int, default=0, metavar="N",
                    help="after the rounds, N times per workload: sleep --spacing seconds (no file deleted meanwhile "
                         "by this harness), then pyi-nodata and pyi-data once each (hot)")
    ap.add_argument("--spacing", type=float, default=40.0)
    ap.add_argument("--steady", type=int, default=0, metavar="N",
                    help="also, per workload and strategy, with 2 CPUs and with taskset -c 0: one process that times "
                         "N x (binding, write_tree, py-write-stream) after one another (memory reused: no first-touch costs)")
    ap.add_argument("--nice", type=int, default=0, help="add to the harness's niceness (children inherit it)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    if os.geteuid() != 0:
        raise SystemExit("needs root (drop_caches)")
    if args.nice:
        os.nice(args.nice)
    workdir = args.workdir
    os.makedirs(workdir, exist_ok=True)
    os.chmod(workdir, 0o700)

    # The extension module: a private copy, so that a rebuild during the run changes nothing.
    so_src = args.so or sh([args.python, "-c", "import ingot._ingot as m; print(m.__file__)"], check=True).stdout.strip()
    so = os.path.join(workdir, "_ingot.so")
    shutil.copyfile(so_src, so)
    with open(so, "rb") as f:
        so_sha = hashlib.sha256(f.read()).hexdigest()
    so_info = {"source": so_src, "sha256": so_sha, "size": os.path.getsize(so),
               "mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(so_src)))}
    child = os.path.join(workdir, "child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    stdlib_dir = sh([args.python, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                    check=True).stdout.strip()
    py_version = sh([args.python, "-I", "-c", "import sys; print(sys.version.split()[0])"], check=True).stdout.strip()

    fs_dir = args.fs_dir or workdir
    os.makedirs(fs_dir, exist_ok=True)
    cache_root = os.path.join(fs_dir, "cache")
    pyi_tmp = os.path.join(fs_dir, "tmp") if args.fs_dir else "/tmp"
    os.makedirs(pyi_tmp, exist_ok=True)
    os.chmod(pyi_tmp, 0o1777)
    os.makedirs(os.path.join(cache_root, "trees"), mode=0o700, exist_ok=True)
    os.chmod(cache_root, 0o700)
    os.chmod(os.path.join(cache_root, "trees"), 0o700)
    parent = os.path.join(cache_root, "trees")

    pyi = None if args.no_pyinstaller else ensure_pyi_venv(args.pyi_venv, args.make_pyi_venv)
    if not args.no_pyinstaller and pyi is None:
        raise SystemExit(f"no PyInstaller in {args.pyi_venv} (pass --make-pyi-venv or --no-pyinstaller)")

    keep = set(filter(None, args.configs.split(",")))
    temps = [t for t in args.temps.split(",") if t]
    configs: list[Config] = []
    workloads = {}
    pyi_builds = {}
    base = [args.python, "-I", "-S", child]
    if pyi:
        pyi_builds["nodata"] = build_pyinstaller(pyi, workdir, "pyi-nodata", None, False)
        log(f"built pyi-nodata: {pyi_builds['nodata']}")
        configs.append(Config("pyi-nodata", "-", "pyi", [pyi_builds["nodata"]["exe"]], {"TMPDIR": pyi_tmp}))
    for wl in filter(None, args.workloads.split(",")):
        if wl not in ("stdlib", "stdlib+pyc"):
            raise SystemExit(f"unknown workload {wl}")
        files = collect(stdlib_dir, wl == "stdlib+pyc")
        info = describe(files)
        workloads[wl] = info
        log(f"{wl}: {info['files']} files, {info['bytes'] / 1e6:.1f} MB, {info['directories']} directories")
        blob = os.path.join(workdir, f"{wl}.marshal")
        with open(blob, "wb") as f:
            f.write(marshal.dumps(files))
        # the same tree on disk, as PyInstaller's input
        src_tree = os.path.join(workdir, "src", wl)
        shutil.rmtree(src_tree, ignore_errors=True)
        for rel, data in files:
            path = os.path.join(src_tree, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        safe = wl.replace("+", "-")
        # the tree the verify configurations read: written once here, checked byte for byte
        vid = f"v-{safe}"
        remove_tree(parent, vid)
        r = sh(base + ["ingot", so, blob, cache_root, vid], check=True)
        vtree = os.path.join(parent, vid)
        for rel, data in files:
            with open(os.path.join(vtree, rel), "rb") as f:
                if f.read() != data:
                    raise SystemExit(f"{vtree}/{rel} differs from the workload")
        vino = os.stat(vtree).st_ino

        def check_verify(_id, vtree=vtree, vino=vino):
            if os.stat(vtree).st_ino != vino:
                raise SystemExit(f"{vtree} was replaced during a verify run")

        def check_written(tree_id, n=len(files)):
            tree = os.path.join(parent, tree_id)
            count = sum(len(fs) for _, _, fs in os.walk(tree))
            if count != n:
                raise SystemExit(f"{tree}: {count} files, expected {n}")

        one = ["taskset", "-c", "0"]
        warm = base + ["baseline", so, blob, cache_root, vid]
        for strategy in ("stream", "mmap"):
            env = {"INGOT_WRITE_STRATEGY": strategy}
            for suffix, prefix in (("", []), ("-1cpu", one)):
                name = f"write-{strategy}{suffix}"
                configs.append(Config(name, wl, "child", prefix + base + ["ingot", so, blob, cache_root, "{id}"], env,
                                      check=check_written, tree_id=f"{name}-{safe}", parent=parent, warm=warm))
            name = f"py-write-{strategy}"
            configs.append(Config(name, wl, "child", base + [name, so, blob, cache_root, "{id}"],
                                  check=check_written, tree_id=f"{name}-{safe}", parent=parent, warm=warm))
        configs.append(Config("verify", wl, "child", base + ["ingot", so, blob, cache_root, vid], check=check_verify))
        configs.append(Config("verify-1cpu", wl, "child", one + base + ["ingot", so, blob, cache_root, vid], check=check_verify))
        configs.append(Config("py-verify", wl, "child", base + ["py-verify", so, blob, cache_root, vid]))
        configs.append(Config("baseline", wl, "child", base + ["baseline", so, blob, cache_root, vid]))
        configs.append(Config("binding", wl, "child", base + ["binding", so, blob, cache_root, vid], temps=("hot",)))
        if pyi:
            for stored in (False, True):
                name = f"pyi-{safe}" + ("-stored" if stored else "")
                b = build_pyinstaller(pyi, workdir, name, src_tree, stored)
                expected = pyi_builds["nodata"]["extracted_files"] + len(files)
                if b["extracted_files"] != expected:
                    raise SystemExit(f"{name} extracts {b['extracted_files']} files, expected {expected}")
                pyi_builds[name] = b
                log(f"built {name}: {b}")
                configs.append(Config("pyi-data-stored" if stored else "pyi-data", wl, "pyi", [b["exe"]], {"TMPDIR": pyi_tmp}))
    if keep:
        configs = [c for c in configs if c.name in keep]

    cells = [(c, t) for c in configs for t in temps if t in c.temps]
    log(f"{len(cells)} cells x {args.runs} rounds")

    # one untimed pass (also checks that everything runs)
    if args.runs:
        for c, t in cells:
            run_once(c, "hot", args.keep_trees)

    samples: dict[str, dict[str, list]] = {f"{c.key}@{t}": {"wall_ns": [], "cpu_ns": [], "call_ns": [], "call_cpu_ns": [], "setup_ns": []} for c, t in cells}
    mei_before = len([n for n in os.listdir(pyi_tmp) if n.startswith("_MEI")])
    load_before = os.getloadavg()
    started = time.time()
    for rnd in range(args.runs):
        k = (rnd * 7) % len(cells)
        order = cells[k:] + cells[:k]
        if rnd % 2:
            order.reverse()
        for c, t in order:
            if t == "hot":
                run_once(c, "hot", warm=True)  # everything this run reads is in the page cache
            res = run_once(c, t, args.keep_trees)
            for key, v in res.items():
                samples[f"{c.key}@{t}"][key].append(v)
        log(f"round {rnd + 1}/{args.runs} done ({time.time() - started:.0f} s, load {os.getloadavg()[0]:.2f})")
    load_after = os.getloadavg()
    mei_after = len([n for n in os.listdir(pyi_tmp) if n.startswith("_MEI")])

    # summaries
    summary = {}
    for cell, s in samples.items():
        if not s["wall_ns"]:
            continue
        row = {"runs": len(s["wall_ns"]), "wall_ms": ms(statistics.median(s["wall_ns"])),
               "wall_q_ms": [ms(x) for x in quart(s["wall_ns"]) or []], "cpu_ms": ms(statistics.median(s["cpu_ns"]))}
        if s["call_ns"]:
            row["call_cpu_ms"] = ms(statistics.median(s["call_cpu_ns"]))
            row["call_ms"] = ms(statistics.median(s["call_ns"]))
            row["call_q_ms"] = [ms(x) for x in quart(s["call_ns"]) or []]
            row["call_min_ms"] = ms(min(s["call_ns"]))
            row["setup_ms"] = ms(statistics.median(s["setup_ns"]))
        summary[cell] = row

    def per_round(a, b, metric, op):
        sa, sb = samples.get(a), samples.get(b)
        if not sa or not sb or not sa[metric] or not sb[metric]:
            return None
        vals = [op(x, y) for x, y in zip(sa[metric], sb[metric])]
        return statistics.median(vals)

    ratio = lambda x, y: x / y
    diff = lambda x, y: (x - y) / 1e6
    comparisons = {}
    for wl in workloads:
        safe = wl
        for t in temps:
            def cell(name, w=safe, t=t):
                return f"{w}/{name}@{t}" if not name.startswith("pyi-nodata") else f"-/{name}@{t}"
            pairs = [
                ("mmap/stream", "write-mmap", "write-stream", "call_ns"),
                ("mmap/stream 1cpu", "write-mmap-1cpu", "write-stream-1cpu", "call_ns"),
                ("stream 1cpu/2cpu", "write-stream-1cpu", "write-stream", "call_ns"),
                ("mmap 1cpu/2cpu", "write-mmap-1cpu", "write-mmap", "call_ns"),
                ("py-write-stream/write-stream", "py-write-stream", "write-stream", "call_ns"),
                ("py-write-mmap/py-write-stream", "py-write-mmap", "py-write-stream", "call_ns"),
                ("verify/write-stream", "verify", "write-stream", "call_ns"),
                ("verify 1cpu/2cpu", "verify-1cpu", "verify", "call_ns"),
                ("py-verify/verify", "py-verify", "verify", "call_ns"),
                ("mmap/stream (whole process)", "write-mmap", "write-stream", "wall_ns"),
                ("mmap/stream (call CPU time)", "write-mmap", "write-stream", "call_cpu_ns"),
                ("py-write-stream/write-stream (call CPU time)", "py-write-stream", "write-stream", "call_cpu_ns"),
                ("stream 1cpu/2cpu (call CPU time)", "write-stream-1cpu", "write-stream", "call_cpu_ns"),
            ]
            out = {}
            for label, a, b, metric in pairs:
                v = per_round(cell(a), cell(b), metric, ratio)
                if v is not None:
                    out[label] = v
            # whole-process extra over the baseline child (same blob load, no call)
            for name in ("write-stream", "write-mmap", "verify"):
                v = per_round(cell(name), cell("baseline"), "wall_ns", diff)
                if v is not None:
                    out[f"{name} wall - baseline wall (ms)"] = v
            for pyi_name in ("pyi-data", "pyi-data-stored"):
                v = per_round(cell(pyi_name), cell("pyi-nodata"), "wall_ns", diff)
                if v is None:
                    continue
                out[f"{pyi_name} wall - pyi-nodata wall (ms)"] = v
                for name in ("write-stream", "verify"):
                    sa, sb, sc = samples.get(cell(pyi_name)), samples.get(cell("pyi-nodata")), samples.get(cell(name))
                    if sc and sc["call_ns"]:
                        vals = [(x - y) / z for x, y, z in zip(sa["wall_ns"], sb["wall_ns"], sc["call_ns"])]
                        out[f"({pyi_name} - pyi-nodata) / {name} call"] = statistics.median(vals)
            comparisons[f"{wl}@{t}"] = out

    spaced = {}
    if args.pyi_spaced and pyi:
        nodata = next(c for c in configs if c.name == "pyi-nodata")
        for wl in workloads:
            data = next(c for c in configs if c.name == "pyi-data" and c.workload == wl)
            rows = {"nodata_wall_ns": [], "data_wall_ns": []}
            for i in range(args.pyi_spaced):
                time.sleep(args.spacing)
                rows["nodata_wall_ns"].append(run_once(nodata, "hot")["wall_ns"])
                rows["data_wall_ns"].append(run_once(data, "hot")["wall_ns"])
                log(f"spaced {wl} {i + 1}/{args.pyi_spaced}")
            rows["spacing_s"] = args.spacing
            rows["nodata_ms"] = ms(statistics.median(rows["nodata_wall_ns"]))
            rows["data_ms"] = ms(statistics.median(rows["data_wall_ns"]))
            rows["data_minus_nodata_ms"] = statistics.median(
                [(a - b) / 1e6 for a, b in zip(rows["data_wall_ns"], rows["nodata_wall_ns"])])
            spaced[wl] = rows
            log(f"spaced {wl}: {rows['nodata_ms']:.1f} / {rows['data_ms']:.1f} ms, difference {rows['data_minus_nodata_ms']:.1f} ms")

    steady = {}
    if args.steady:
        for wl in workloads:
            blob = os.path.join(workdir, f"{wl}.marshal")
            for strategy in ("stream", "mmap"):
                for label, prefix in (("2cpu", []), ("1cpu", ["taskset", "-c", "0"])):
                    os.sync()
                    env = dict(os.environ, INGOT_WRITE_STRATEGY=strategy)
                    r = sh(prefix + base + ["steady", so, blob, cache_root, str(args.steady)], env=env, check=True)
                    line = [l for l in r.stdout.splitlines() if l.startswith("matbench-steady ")][-1]
                    res = json.loads(line.split(" ", 1)[1])
                    row = {m: {"wall_ms": ms(statistics.median(w for w, _ in v)), "cpu_ms": ms(statistics.median(c for _, c in v)),
                               "samples_ns": v} for m, v in res.items()}
                    steady[f"{wl}/{strategy}/{label}"] = row
                    log(f"steady {wl}/{strategy}/{label}: " + ", ".join(
                        f"{m} {row[m]['wall_ms']:.1f} ms (cpu {row[m]['cpu_ms']:.1f})" for m in row))

    straces = {}
    if args.strace:
        for c in configs:
            if c.kind != "child" or c.name in ("baseline", "binding") or c.name.endswith("1cpu"):
                continue
            env = dict(os.environ, **c.env)
            entry = {}
            for what, flags in (("summary", ["-c"]), ("close", ["-T", "-e", "trace=close"])):
                tree_id = c.next_id(args.keep_trees)
                argv = [a.replace("{id}", tree_id or "unused") for a in c.argv]
                os.sync()
                tfile = os.path.join(workdir, f"strace-{what}.txt")
                sh(["strace", "-f", "-o", tfile] + flags + argv, env=env, check=True)
                with open(tfile) as f:
                    text = f.read()
                if what == "summary":
                    entry["strace_c"] = text
                    continue
                closes = []
                for line in text.splitlines():
                    if "close(" in line and line.endswith(">") and "<" in line:
                        try:
                            closes.append(float(line.rsplit("<", 1)[1][:-1]))
                        except ValueError:
                            pass
                closes.sort()
                entry["close_calls"] = len(closes)
                entry["close_us"] = {"median": closes[len(closes) // 2] * 1e6 if closes else None,
                                     "p99": closes[int(len(closes) * 0.99)] * 1e6 if closes else None,
                                     "max": closes[-1] * 1e6 if closes else None,
                                     "total_ms": sum(closes) * 1e3}
            straces[c.key] = entry
            log(f"strace {c.key}: {entry['close_calls']} closes, median {entry['close_us']['median']} us")

    if args.keep_trees:
        for name in os.listdir(parent):
            if not name.startswith("v-"):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    commit = sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]).stdout.strip()
    cache_rs = sh(["git", "-C", REPO, "hash-object", "crates/ingot-importer/src/cache.rs"]).stdout.strip()
    cache_rs_head = sh(["git", "-C", REPO, "rev-parse", "HEAD:crates/ingot-importer/src/cache.rs"]).stdout.strip()
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    result = {
        "stamp": stamp,
        "command": " ".join([sys.executable] + sys.argv),
        "machine": {"uname": " ".join(platform.uname()), "cpu": cpu, "nproc": os.cpu_count(),
                    "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "repo_commit": commit,
        "cache_rs": {"worktree_blob": cache_rs, "head_blob": cache_rs_head, "modified": cache_rs != cache_rs_head},
        "extension": so_info,
        "python": {"path": args.python, "version": py_version, "stdlib": stdlib_dir},
        "filesystems": {"cache": fs_info(cache_root), "PyInstaller TMPDIR": fs_info(pyi_tmp), "workdir (blobs, executables)": fs_info(workdir)},
        "keep_trees": args.keep_trees,
        "runs": args.runs,
        "niceness": os.nice(0),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "seconds": round(time.time() - started),
        "leftover_MEI_dirs": mei_after - mei_before,
        "workloads": workloads,
        "pyinstaller": {"version": PYINSTALLER, "builds": pyi_builds} if pyi else None,
        "summary": summary,
        "comparisons": comparisons,
        "pyi_spaced": spaced,
        "steady": steady,
        "strace": straces,
        "samples": samples,
    }
    out = args.out or os.path.join(HERE, "results", f"materialize-{stamp}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    # table
    print(f"\nrun {stamp}: {args.runs} rounds, load {load_before[0]:.2f} -> {load_after[0]:.2f}, niceness {os.nice(0)}")
    print(f"{'cell':44} {'call ms':>9} {'q1-q3':>17} {'cpu':>7} {'wall ms':>9} {'q1-q3':>17} {'cpu':>7}")
    for cell, row in summary.items():
        cq = row.get("call_q_ms") or []
        wq = row.get("wall_q_ms") or []
        call = f"{row['call_ms']:9.1f}" if "call_ms" in row else f"{'':9}"
        ccpu = f"{row['call_cpu_ms']:7.1f}" if "call_cpu_ms" in row else f"{'':7}"
        cqs = f"{cq[0]:7.1f}-{cq[1]:<7.1f}" if cq else ""
        wqs = f"{wq[0]:7.1f}-{wq[1]:<7.1f}" if wq else ""
        print(f"{cell:44} {call} {cqs:>17} {ccpu} {row['wall_ms']:9.1f} {wqs:>17} {row['cpu_ms']:7.1f}")
    for k, v in comparisons.items():
        print(f"\n{k}")
        for label, x in v.items():
            print(f"  {label:48} {x:8.3f}")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
