"""Materializing the standard library as a `files` tree: ingot's cache writer against PyInstaller
onefile (issue 4; results and discussion: bench/results/HISTORY.md, "Materializing files").

    nice -n -15 python3 bench/materialize.py [--runs 15] [--workloads stdlib,stdlib+pyc]
        [--work build/materialize] [--fs-dir DIR] [--keep-trees] [--no-pyinstaller]
        [--configs a,b] [--temps hot,cold] [--json bench/results/materialize-<utc>.json]

Workloads, read into memory as [(relpath, bytes), ...] and stored as one marshal blob: `stdlib`,
every file of the interpreter's stdlib directory but test/, idlelib/, tkinter/, turtledemo/,
ensurepip/, site-packages/, config-3.11-*/ and __pycache__/; `stdlib+pyc`, the same plus the
__pycache__/*.cpython-311.pyc of those modules. Every timed run is a fresh `python -I -S
bench/apps/materialize_child.py MODE ...` that loads a private copy of the ingot extension module
by path, reads the blob, then times one operation (`call`); the harness times the whole process
(`wall`). Configurations (`*-1cpu`: under `taskset -c 0`, so the cache writer uses one thread):

    write-stream[-1cpu]  ingot._ingot.write_tree into an empty cache, INGOT_WRITE_STRATEGY=stream
    write-mmap[-1cpu]    the same, INGOT_WRITE_STRATEGY=mmap
    verify[-1cpu]        write_tree on the existing tree: the second start
    py-write-stream      reference: pure Python, one thread, os.open/os.write/os.close per file
    py-write-mmap        the same with ftruncate + mmap
    py-verify            reference: pure Python read + XXH3 per file against a manifest
    binding              write_tree with an invalid id: only the binding's own work; hot only
    baseline             the child without any call (process start + blob load)
    pyi-nodata           PyInstaller onefile of a trivial script (unpacks its runtime to TMPDIR)
    pyi-data[-stored]    the same with the workload's files added as data (stored: uncompressed)

Temperatures: hot (an untimed run right before every timed one) and cold (sync + drop_caches
right before the run). Before every run a write configuration's tree is removed and `sync` is
called, outside the timing. A round runs every (configuration, temperature) once, starting at an
offset 7 further each round and reversed every other round; ratios are medians of per-round
ratios. Needs root (drop_caches).
"""

from __future__ import annotations

import argparse
import glob
import json
import marshal
import os
import shutil
import statistics
import subprocess
import sys
import time

import harness as h

PYINSTALLER = "pyinstaller==6.22.3"
CHILD = os.path.join(h.HERE, "apps", "materialize_child.py")
SKIP_TOP = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages"})
STORED_CDICT = {"EXTENSION": True, "DATA": False, "BINARY": True, "EXECUTABLE": True}
STORED_CDICT |= {"PYSOURCE": True, "PYMODULE": True, "SPLASH": True, "PYZ": False, "SYMLINK": False}
# (label, configuration a, configuration b, metric): the median over rounds of a / b
PAIRS = [
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
    (
        "py-write-stream/write-stream (call CPU time)",
        "py-write-stream",
        "write-stream",
        "call_cpu_ns",
    ),
    ("stream 1cpu/2cpu (call CPU time)", "write-stream-1cpu", "write-stream", "call_cpu_ns"),
]


def collect(stdlib_dir: str, with_pyc: bool) -> list[tuple[str, bytes]]:
    """The workload's files as (tree-relative path, bytes), sorted by path."""
    out = []
    tag = sys.implementation.cache_tag
    for dirpath, dirnames, filenames in os.walk(stdlib_dir):
        rel_dir = os.path.relpath(dirpath, stdlib_dir)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in SKIP_TOP and not d.startswith("config-")]
            rel_dir = ""
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        prefix = rel_dir + "/" if rel_dir else ""
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as f:
                out.append((prefix + name, f.read()))
            pyc = os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{tag}.pyc")
            if with_pyc and name.endswith(".py") and os.path.isfile(pyc):
                with open(pyc, "rb") as f:
                    out.append((f"{prefix}__pycache__/{name[:-3]}.{tag}.pyc", f.read()))
    return sorted(out)


def describe(files: list) -> dict:
    sizes = [len(b) for _, b in files]
    by_ext: dict = {}
    for rel, b in files:
        e = by_ext.setdefault(os.path.splitext(rel)[1] or "(none)", {"files": 0, "bytes": 0})
        e["files"] += 1
        e["bytes"] += len(b)
    return {
        "files": len(files),
        "bytes": sum(sizes),
        "directories": len({rel.rsplit("/", 1)[0] for rel, _ in files if "/" in rel}),
        "median_file_bytes": statistics.median(sizes),
        "largest": sorted(((len(b), rel) for rel, b in files), reverse=True)[:5],
        "by_extension": dict(sorted(by_ext.items(), key=lambda kv: -kv[1]["bytes"])),
    }


def build_pyinstaller(pyi: str, work: str, name: str, src_tree: str | None, stored: bool) -> dict:
    """A onefile of bench/apps/materialize_pyi_app.py with ``src_tree``'s files as data."""
    pdir = os.path.join(work, "pyi")
    os.makedirs(pdir, exist_ok=True)
    datas = []
    for dirpath, _, filenames in os.walk(src_tree) if src_tree else ():
        for fn in filenames:
            src = os.path.join(dirpath, fn)
            datas.append(("stdlib/" + os.path.relpath(src, src_tree), src, "DATA"))
    spec = {"script": os.path.join(h.HERE, "apps", "materialize_pyi_app.py"), "name": name}
    spec |= {"datas": sorted(datas), "cdict": STORED_CDICT if stored else None}
    spec_json = os.path.join(pdir, f"{name}.json")
    with open(spec_json, "w") as f:
        json.dump(spec, f)
    cmd = [pyi, "--noconfirm", "--clean", "--log-level", "WARN", "--distpath"]
    cmd += [os.path.join(pdir, "dist"), "--workpath", os.path.join(pdir, "build", name)]
    cmd += [os.path.join(h.HERE, "apps", "materialize.spec")]
    env = dict(os.environ, MATBENCH_SPEC=spec_json)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=pdir, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    exe = os.path.join(pdir, "dist", name)
    if r.returncode != 0 or not os.path.exists(exe):
        raise SystemExit(f"PyInstaller build {name} failed:\n{r.stdout}\n{r.stderr}")
    env = dict(os.environ, MATBENCH_COUNT="1")
    count = int(subprocess.run([exe], env=env, capture_output=True, text=True).stdout)
    return {
        "exe": exe,
        "size": os.path.getsize(exe),
        "build_seconds": round(seconds, 1),
        "extracted_files": count,
        "data_files": len(datas),
        "stored": stored,
    }


class Config:
    """One measured configuration. A write configuration has ``tree_id``: its argv holds
    "{id}"; before each run its tree is removed, or, with --keep-trees, each run writes a new id
    and the trees are removed at the end. ``warm``: the argv of the untimed run before a hot run
    (for writes the baseline child: it reads the same blob, .so and interpreter, writes nothing)."""

    def __init__(self, name, workload, argv, env=None, temps=("hot", "cold"), **kw):
        self.name, self.workload, self.argv, self.env, self.temps = name, workload, argv, env, temps
        self.check, self.tree_id = kw.get("check"), kw.get("tree_id")
        self.parent, self.warm, self.keep = kw.get("parent"), kw.get("warm"), kw.get("keep")
        self.child = CHILD in argv
        self.serial = 0
        self.key = f"{workload}/{name}"

    def next_id(self) -> str | None:
        if self.tree_id is None:
            return None
        if not self.keep:
            remove_tree(self.parent, self.tree_id)
            return self.tree_id
        self.serial += 1
        return f"{self.tree_id}-{self.serial}"

    def cell(self, temp: str, work: str) -> h.Cell:
        env = {k: v for k, v in os.environ.items() if k != "INGOT_WRITE_STRATEGY"}
        env.update(self.env or {})
        last = {}

        def prepare(warm: bool) -> tuple[list, dict]:
            last["id"] = None if warm else self.next_id()
            argv = self.warm if warm and self.warm else self.argv
            if temp == "hot":
                os.sync()
            return [a.replace("{id}", last["id"] or "unused") for a in argv], env

        def after(run: h.Run) -> dict:
            out = {"cpu_ns": int(run.cpu_s * 1e9)}
            if self.child:
                line = [x for x in run.out.splitlines() if x.startswith("matbench ")]
                if not line:
                    raise SystemExit(f"{self.key}: no result line:\n{run.out}\n{run.err}")
                out |= {k: int(v) for k, v in (p.split("=") for p in line[-1].split()[1:])}
            if self.check:
                self.check(last["id"])
            return out

        capture = os.path.join(work, "run")
        name = f"{self.key}@{temp}"
        return h.Cell(
            name,
            self.argv,
            env,
            os.getcwd(),
            temp == "cold",
            temp == "hot",
            capture,
            prepare,
            after,
        )


def remove_tree(parent: str, tree_id: str) -> None:
    shutil.rmtree(os.path.join(parent, tree_id), ignore_errors=True)
    for name in os.listdir(parent):
        if name.startswith(".tmp-"):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def fs_info(path: str) -> dict:
    def out(cmd: list) -> str:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()

    mount = out(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "--target", path])
    return {"path": path, "stat_f_type": out(["stat", "-f", "-c", "%T", path]), "mount": mount}


def workload_configs(args, wl: str, files: list, ctx: dict) -> list[Config]:
    """Stores the workload's blob and source tree, writes the tree the verify configurations
    read (checked byte for byte), builds the PyInstaller onefiles; its configurations."""
    work, parent, base, so, cache_root = (ctx[k] for k in ("work", "parent", "base", "so", "cache"))
    blob = os.path.join(work, f"{wl}.marshal")
    with open(blob, "wb") as f:
        f.write(marshal.dumps(files))
    src_tree = os.path.join(work, "src", wl)
    shutil.rmtree(src_tree, ignore_errors=True)
    for rel, data in files:
        path = os.path.join(src_tree, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    safe = wl.replace("+", "-")
    vid = f"v-{safe}"
    remove_tree(parent, vid)
    subprocess.run([*base, "ingot", so, blob, cache_root, vid], check=True, capture_output=True)
    vtree = os.path.join(parent, vid)
    for rel, data in files:
        with open(os.path.join(vtree, rel), "rb") as f:
            if f.read() != data:
                raise SystemExit(f"{vtree}/{rel} differs from the workload")
    vino = os.stat(vtree).st_ino

    def check_verify(_id):
        if os.stat(vtree).st_ino != vino:
            raise SystemExit(f"{vtree} was replaced during a verify run")

    n = len(files)

    def check_written(tree_id):
        count = sum(len(fs) for _, _, fs in os.walk(os.path.join(parent, tree_id)))
        if count != n:
            raise SystemExit(f"{parent}/{tree_id}: {count} files, expected {n}")

    def child(mode: str, tree: str) -> list:
        return [*base, mode, so, blob, cache_root, tree]

    one = ["taskset", "-c", "0"]
    kw = {"parent": parent, "warm": child("baseline", vid), "keep": args.keep_trees}
    configs = []
    for strategy in ("stream", "mmap"):
        for suffix, prefix in (("", []), ("-1cpu", one)):
            name = f"write-{strategy}{suffix}"
            env = {"INGOT_WRITE_STRATEGY": strategy}
            tid = f"{name}-{safe}"
            argv = prefix + child("ingot", "{id}")
            configs.append(Config(name, wl, argv, env, check=check_written, tree_id=tid, **kw))
        name = f"py-write-{strategy}"
        argv = child(name, "{id}")
        configs.append(Config(name, wl, argv, check=check_written, tree_id=f"{name}-{safe}", **kw))
    configs.append(Config("verify", wl, child("ingot", vid), check=check_verify))
    configs.append(Config("verify-1cpu", wl, one + child("ingot", vid), check=check_verify))
    configs.append(Config("py-verify", wl, child("py-verify", vid)))
    configs.append(Config("baseline", wl, child("baseline", vid)))
    configs.append(Config("binding", wl, child("binding", vid), temps=("hot",)))
    for stored in (False, True) if ctx["pyi"] else ():
        name = f"pyi-{safe}" + ("-stored" if stored else "")
        b = build_pyinstaller(ctx["pyi"], work, name, src_tree, stored)
        expected = ctx["pyi_builds"]["nodata"]["extracted_files"] + len(files)
        if b["extracted_files"] != expected:
            raise SystemExit(f"{name} extracts {b['extracted_files']} files, expected {expected}")
        ctx["pyi_builds"][name] = b
        cname = "pyi-data-stored" if stored else "pyi-data"
        configs.append(Config(cname, wl, [b["exe"]], {"TMPDIR": ctx["pyi_tmp"]}))
    return configs


def summarize(samples: dict) -> dict:
    def ms(ns):
        return ns / 1e6

    def q(xs):
        return [ms(x) for x in statistics.quantiles(xs, n=4)[::2]] if len(xs) >= 4 else []

    summary = {}
    for cell, s in samples.items():
        if not s["wall_ns"]:
            continue
        row = {"runs": len(s["wall_ns"]), "wall_ms": ms(statistics.median(s["wall_ns"]))}
        row |= {"wall_q_ms": q(s["wall_ns"]), "cpu_ms": ms(statistics.median(s["cpu_ns"]))}
        if s.get("call_ns"):
            row["call_cpu_ms"] = ms(statistics.median(s["call_cpu_ns"]))
            row["call_ms"] = ms(statistics.median(s["call_ns"]))
            row["call_q_ms"] = q(s["call_ns"])
            row["call_min_ms"] = ms(min(s["call_ns"]))
            row["setup_ms"] = ms(statistics.median(s["setup_ns"]))
        summary[cell] = row
    return summary


def comparisons(samples: dict, workloads: list, temps: list) -> dict:
    def per_round(a, b, metric, op=lambda x, y: x / y):
        sa, sb = samples.get(a), samples.get(b)
        if not sa or not sb or not sa.get(metric) or not sb.get(metric):
            return None
        return statistics.median(h.paired(sa[metric], sb[metric], op))

    def diff(x, y):
        return (x - y) / 1e6

    out = {}
    for wl in workloads:
        for t in temps:

            def cell(name, wl=wl, t=t):
                return f"-/{name}@{t}" if name == "pyi-nodata" else f"{wl}/{name}@{t}"

            c = {label: per_round(cell(a), cell(b), m) for label, a, b, m in PAIRS}
            for name in ("write-stream", "write-mmap", "verify"):
                c[f"{name} wall - baseline wall (ms)"] = per_round(
                    cell(name), cell("baseline"), "wall_ns", diff
                )
            for pyi in ("pyi-data", "pyi-data-stored"):
                d = per_round(cell(pyi), cell("pyi-nodata"), "wall_ns", diff)
                if d is None:
                    continue
                c[f"{pyi} wall - pyi-nodata wall (ms)"] = d
                sa, sb = samples[cell(pyi)]["wall_ns"], samples[cell("pyi-nodata")]["wall_ns"]
                for name in ("write-stream", "verify"):
                    sc = samples.get(cell(name), {}).get("call_ns")
                    if sc:
                        vals = [(x - y) / z for x, y, z in zip(sa, sb, sc, strict=False)]
                        c[f"({pyi} - pyi-nodata) / {name} call"] = statistics.median(vals)
            out[f"{wl}@{t}"] = {k: v for k, v in c.items() if v is not None}
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="rounds")
    ap.add_argument("--workloads", default="stdlib,stdlib+pyc")
    ap.add_argument("--configs", default="", help="configurations to keep (default: all)")
    ap.add_argument("--temps", default="hot,cold")
    ap.add_argument(
        "--work",
        default=os.path.join(h.REPO, "build", "materialize"),
        help="blobs, cache root, PyInstaller builds (a real disk, not a tmpfs)",
    )
    ap.add_argument(
        "--fs-dir",
        help="the file system under test: the cache root (DIR/cache) and "
        "PyInstaller's TMPDIR (DIR/tmp) (default: WORK and /tmp)",
    )
    ap.add_argument(
        "--keep-trees",
        action="store_true",
        help="a new tree id for every write "
        "run, all removed at the end (ext4 without a journal is slow to re-create)",
    )
    ap.add_argument("--python", help="the measured processes' CPython 3.11 (default: pyenv's)")
    ap.add_argument(
        "--ingot-pythonpath",
        default=os.path.join(h.REPO, "python"),
        help="directory holding the ingot package with its compiled _ingot",
    )
    ap.add_argument("--no-pyinstaller", action="store_true")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (children inherit)")
    ap.add_argument("--json", help="default: bench/results/materialize-<utc>.json")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (drop_caches)")
    if args.nice:
        os.nice(args.nice)
    python = args.python or h.find_python("3.11")
    work = os.path.abspath(args.work)
    os.makedirs(work, mode=0o700, exist_ok=True)
    so_src = glob.glob(os.path.join(args.ingot_pythonpath, "ingot", "_ingot.cpython-311-*.so"))[0]
    so = os.path.join(work, "_ingot.so")  # a private copy: a rebuild during the run changes nothing
    shutil.copyfile(so_src, so)
    state: dict = {}
    pyi = None
    if not args.no_pyinstaller:
        h.create_venvs(work, python, {"pyinstaller": [PYINSTALLER]}, state)
        pyi = os.path.join(work, "venv-pyinstaller", "bin", "pyinstaller")
    code = "import sysconfig; print(sysconfig.get_paths()['stdlib'])"
    stdlib_dir = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True)
    stdlib_dir = stdlib_dir.stdout.strip()
    fs_dir = args.fs_dir or work
    cache_root = os.path.join(fs_dir, "cache")
    parent = os.path.join(cache_root, "trees")
    pyi_tmp = os.path.join(fs_dir, "tmp") if args.fs_dir else "/tmp"
    os.makedirs(pyi_tmp, exist_ok=True)
    os.chmod(pyi_tmp, 0o1777)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    os.chmod(cache_root, 0o700)
    ctx = {"work": work, "parent": parent, "base": [python, "-I", "-S", CHILD], "so": so}
    ctx |= {"cache": cache_root, "pyi": pyi, "pyi_tmp": pyi_tmp, "pyi_builds": {}}
    configs, workloads = [], {}
    if pyi:
        b = ctx["pyi_builds"]["nodata"] = build_pyinstaller(pyi, work, "pyi-nodata", None, False)
        configs.append(Config("pyi-nodata", "-", [b["exe"]], {"TMPDIR": pyi_tmp}))
    names = [w for w in args.workloads.split(",") if w]
    for wl in names:
        if wl not in ("stdlib", "stdlib+pyc"):
            raise SystemExit(f"unknown workload {wl}")
        files = collect(stdlib_dir, wl == "stdlib+pyc")
        workloads[wl] = describe(files)
        h.log(f"{wl}: {len(files)} files, {workloads[wl]['bytes'] / 1e6:.1f} MB")
        configs += workload_configs(args, wl, files, ctx)
    keep = set(filter(None, args.configs.split(",")))
    configs = [c for c in configs if not keep or c.name in keep]
    temps = [t for t in args.temps.split(",") if t]
    cells = [c.cell(t, work) for c in configs for t in temps if t in c.temps]
    h.log(f"{len(cells)} cells x {args.runs} rounds")
    mei_before = len(glob.glob(os.path.join(pyi_tmp, "_MEI*")))
    load_before, started = os.getloadavg(), time.time()
    data = h.measure(cells, args.runs, warmup=1, stride=7, alternate=True)
    load_after = os.getloadavg()
    samples = {}
    for cell in cells:
        d = data[cell.name]
        if d["failures"]:
            raise SystemExit(f"{cell.name}: {d['failures']} runs failed")
        samples[cell.name] = {"wall_ns": d["wall_ns"], "cpu_ns": d.get("cpu_ns", [])}
        samples[cell.name] |= {k: d.get(k, []) for k in ("call_ns", "call_cpu_ns", "setup_ns")}
    if args.keep_trees:
        for name in os.listdir(parent):
            if not name.startswith("v-"):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    summary = summarize(samples)
    comps = comparisons(samples, names, temps)
    machine = h.machine_info()
    result = {
        "utc": h.utc_stamp(),
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": machine,
        "repo_commit": machine["repo_commit"],
        "extension": {"source": so_src, **h.file_info(so)},
        "python": {"path": python, "version": h.python_version(python), "stdlib": stdlib_dir},
        "filesystems": {
            "cache": fs_info(cache_root),
            "PyInstaller TMPDIR": fs_info(pyi_tmp),
            "workdir (blobs, executables)": fs_info(work),
        },
        "keep_trees": args.keep_trees,
        "runs": args.runs,
        "niceness": os.nice(0),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "seconds": round(time.time() - started),
        "leftover_MEI_dirs": len(glob.glob(os.path.join(pyi_tmp, "_MEI*"))) - mei_before,
        "workloads": workloads,
        "pyinstaller": {"version": PYINSTALLER, "builds": ctx["pyi_builds"]} if pyi else None,
        "summary": summary,
        "comparisons": comps,
        "samples": samples,
    }
    result["stamp"] = result["utc"]
    h.write_result("materialize", result, args.json)
    rows = []
    for cell, r in summary.items():
        q, wq = r.get("call_q_ms") or [], r.get("wall_q_ms") or []
        rows.append(
            [
                cell,
                h.fmt(r.get("call_ms")),
                "-".join(f"{x:.1f}" for x in q),
                h.fmt(r.get("call_cpu_ms")),
                h.fmt(r["wall_ms"]),
                "-".join(f"{x:.1f}" for x in wq),
                h.fmt(r["cpu_ms"]),
            ]
        )
    head = ["cell", "call ms", "q1-q3", "call CPU ms", "wall ms", "q1-q3", "CPU ms"]
    print(
        f"\nrun {result['utc']}: {args.runs} rounds, load {load_before[0]:.2f} -> "
        f"{load_after[0]:.2f}, niceness {os.nice(0)}\n"
    )
    print("\n".join(h.table(head, rows)))
    for k, v in comps.items():
        print(f"\n{k}\n" + "\n".join(f"  {label:48} {x:8.3f}" for label, x in v.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
