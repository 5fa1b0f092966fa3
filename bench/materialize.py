"""The extraction cache writing the standard library as a `files` tree against PyInstaller onefile
unpacking it (issue 4); the configurations and the method: bench/README.md. Needs root."""

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
CALL, WALL, CALL_CPU = "call_ns", "wall_ns", "call_cpu_ns"
# (label, configuration a, configuration b, metric): the median over rounds of a / b
PAIRS = [
    ("mmap/stream", "write-mmap", "write-stream", CALL),
    ("mmap/stream 1cpu", "write-mmap-1cpu", "write-stream-1cpu", CALL),
    ("stream 1cpu/2cpu", "write-stream-1cpu", "write-stream", CALL),
    ("mmap 1cpu/2cpu", "write-mmap-1cpu", "write-mmap", CALL),
    ("py-write-stream/write-stream", "py-write-stream", "write-stream", CALL),
    ("py-write-mmap/py-write-stream", "py-write-mmap", "py-write-stream", CALL),
    ("verify/write-stream", "verify", "write-stream", CALL),
    ("verify 1cpu/2cpu", "verify-1cpu", "verify", CALL),
    ("py-verify/verify", "py-verify", "verify", CALL),
    ("mmap/stream (whole process)", "write-mmap", "write-stream", WALL),
    ("mmap/stream (call CPU time)", "write-mmap", "write-stream", CALL_CPU),
    ("py-write-stream/write-stream (call CPU time)", "py-write-stream", "write-stream", CALL_CPU),
    ("stream 1cpu/2cpu (call CPU time)", "write-stream-1cpu", "write-stream", CALL_CPU),
]


def collect(stdlib_dir: str, with_pyc: bool) -> list[tuple[str, bytes]]:
    """The workload's files as (tree-relative path, bytes), sorted by path."""
    out = []
    tag = sys.implementation.cache_tag
    for dirpath, dirnames, filenames in os.walk(stdlib_dir):
        rel_dir = os.path.relpath(dirpath, stdlib_dir)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in SKIP_TOP and not d.startswith("config-")]
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            pyc = os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{tag}.pyc")
            pairs = [(prefix + name, path)]
            if with_pyc and name.endswith(".py") and os.path.isfile(pyc):
                pairs.append((f"{prefix}__pycache__/{name[:-3]}.{tag}.pyc", pyc))
            for rel, p in pairs if os.path.isfile(path) and not os.path.islink(path) else ():
                with open(p, "rb") as f:
                    out.append((rel, f.read()))
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
        for src in (os.path.join(dirpath, fn) for fn in filenames):
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


def remove_tree(parent: str, tree_id: str) -> None:
    shutil.rmtree(os.path.join(parent, tree_id), ignore_errors=True)
    for name in os.listdir(parent):
        if name.startswith(".tmp-"):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def cells(name, workload, argv, temps, work, env=None, check=None, tree=None, warm=None) -> list:
    """One cell per temperature. A write configuration has ``tree`` (parent, id): before each
    run its tree is removed; ``warm``: the argv of the untimed run before a hot one (for writes
    the baseline child: it reads the same blob, .so and interpreter, writes nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "INGOT_WRITE_STRATEGY"} | (env or {})
    key = f"{workload}/{name}"

    def prepare(warm_run: bool) -> tuple[list, dict]:
        if tree and not warm_run:
            remove_tree(*tree)
        os.sync()
        return (warm if warm and warm_run else argv), env

    def after(run: h.Run) -> dict:
        out = {"cpu_ns": int(run.cpu_s * 1e9)}
        if CHILD in argv:
            line = [x for x in run.out.splitlines() if x.startswith("matbench ")]
            if not line:
                raise SystemExit(f"{key}: no result line:\n{run.out}\n{run.err}")
            out |= {k: int(v) for k, v in (p.split("=") for p in line[-1].split()[1:])}
        if check:
            check()
        return out

    capture = os.path.join(work, "run")
    return [
        h.Cell(
            f"{key}@{t}", argv, env, os.getcwd(), t == "cold", t == "hot", capture, prepare, after
        )
        for t in temps
    ]


def fs_info(path: str) -> dict:
    def out(cmd: list) -> str:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()

    mount = out(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "--target", path])
    return {"path": path, "stat_f_type": out(["stat", "-f", "-c", "%T", path]), "mount": mount}


def workload_cells(args, wl: str, files: list, ctx: dict) -> list[h.Cell]:
    """Stores the workload's blob and source tree, writes the tree the verify configurations
    read (checked byte for byte), builds the PyInstaller onefiles; the workload's cells."""
    work, parent, so, cache_root = ctx["work"], ctx["parent"], ctx["so"], ctx["cache"]
    blob = os.path.join(work, f"{wl}.marshal")
    with open(blob, "wb") as f:
        f.write(marshal.dumps(files))
    src_tree = os.path.join(work, "src", wl)
    shutil.rmtree(src_tree, ignore_errors=True)
    for rel, data in files:
        os.makedirs(os.path.dirname(os.path.join(src_tree, rel)), exist_ok=True)
        with open(os.path.join(src_tree, rel), "wb") as f:
            f.write(data)
    safe = wl.replace("+", "-")
    vid = f"v-{safe}"
    vtree = os.path.join(parent, vid)

    def child(mode: str, tree: str) -> list:
        return [ctx["python"], "-I", "-S", CHILD, mode, so, blob, cache_root, tree]

    remove_tree(parent, vid)
    subprocess.run(child("ingot", vid), check=True, capture_output=True)
    for rel, data in files:
        with open(os.path.join(vtree, rel), "rb") as f:
            if f.read() != data:
                raise SystemExit(f"{vtree}/{rel} differs from the workload")
    vino = os.stat(vtree).st_ino

    def check_verify() -> None:
        if os.stat(vtree).st_ino != vino:
            raise SystemExit(f"{vtree} was replaced during a verify run")

    def written(tree_id: str):
        def check() -> None:
            count = sum(len(fs) for _, _, fs in os.walk(os.path.join(parent, tree_id)))
            if count != len(files):
                raise SystemExit(f"{parent}/{tree_id}: {count} files, expected {len(files)}")

        return check

    def add(name: str, argv: list, temps=("hot", "cold"), **kw) -> None:
        if not args.configs or name in args.configs:
            out.extend(cells(name, wl, argv, [t for t in args.temps if t in temps], work, **kw))

    one, out = [shutil.which("taskset") or "/usr/bin/taskset", "-c", "0"], []
    for strategy in ("stream", "mmap"):
        for name, prefix, mode in [
            (f"write-{strategy}", [], "ingot"),
            (f"write-{strategy}-1cpu", one, "ingot"),
            (f"py-write-{strategy}", [], f"py-write-{strategy}"),
        ]:
            tid = f"{name}-{safe}"
            env = {"INGOT_WRITE_STRATEGY": strategy} if mode == "ingot" else None
            kw = {"check": written(tid), "tree": (parent, tid), "warm": child("baseline", vid)}
            add(name, prefix + child(mode, tid), env=env, **kw)
    add("verify", child("ingot", vid), check=check_verify)
    add("verify-1cpu", one + child("ingot", vid), check=check_verify)
    add("py-verify", child("py-verify", vid))
    add("baseline", child("baseline", vid))
    add("binding", child("binding", vid), temps=("hot",))
    for stored in (False, True) if ctx["pyi"] else ():
        name = f"pyi-{safe}" + ("-stored" if stored else "")
        b = build_pyinstaller(ctx["pyi"], work, name, src_tree, stored)
        expected = ctx["pyi_builds"]["nodata"]["extracted_files"] + len(files)
        if b["extracted_files"] != expected:
            raise SystemExit(f"{name} extracts {b['extracted_files']} files, expected {expected}")
        ctx["pyi_builds"][name] = b
        add("pyi-data-stored" if stored else "pyi-data", [b["exe"]], env={"TMPDIR": ctx["tmp"]})
    return out


def summarize(samples: dict) -> dict:
    def q(xs):
        return [x / 1e6 for x in statistics.quantiles(xs, n=4)[::2]] if len(xs) >= 4 else []

    summary = {}
    for cell, s in samples.items():
        row = {"runs": len(s[WALL]), "wall_ms": h.med(s[WALL], 1e-6), "wall_q_ms": q(s[WALL])}
        row["cpu_ms"] = h.med(s["cpu_ns"], 1e-6)
        if s.get(CALL):
            row["call_cpu_ms"] = h.med(s[CALL_CPU], 1e-6)
            row["call_ms"] = h.med(s[CALL], 1e-6)
            row["call_q_ms"] = q(s[CALL])
            row["call_min_ms"] = min(s[CALL]) / 1e6
            row["setup_ms"] = h.med(s["setup_ns"], 1e-6)
        summary[cell] = row
    return summary


def comparisons(samples: dict, workloads: list, temps: list) -> dict:
    def per_round(a, b, metric, op=lambda x, y: x / y):
        sa, sb = samples.get(a, {}).get(metric), samples.get(b, {}).get(metric)
        return statistics.median(h.paired(sa, sb, op)) if sa and sb else None

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
                    cell(name), cell("baseline"), WALL, diff
                )
            for pyi in ("pyi-data", "pyi-data-stored"):
                d = per_round(cell(pyi), cell("pyi-nodata"), WALL, diff)
                if d is None:
                    continue
                c[f"{pyi} wall - pyi-nodata wall (ms)"] = d
                sa, sb = samples[cell(pyi)][WALL], samples[cell("pyi-nodata")][WALL]
                for name in ("write-stream", "verify"):
                    if sc := samples.get(cell(name), {}).get(CALL):
                        vals = [(x - y) / z for x, y, z in zip(sa, sb, sc)]
                        c[f"({pyi} - pyi-nodata) / {name} call"] = statistics.median(vals)
            out[f"{wl}@{t}"] = {k: v for k, v in c.items() if v is not None}
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15, help="rounds")
    ap.add_argument("--workloads", default="stdlib,stdlib+pyc")
    ap.add_argument("--configs", default="", help="configurations to keep (default: all)")
    ap.add_argument("--temps", default="hot,cold")
    ap.add_argument("--work", default=os.path.join(h.REPO, "build", "materialize"), help="a disk")
    ap.add_argument("--fs-dir", help="the cache root's and PyInstaller's TMPDIR's file system")
    ap.add_argument("--python", help="the measured processes' CPython 3.11 (default: pyenv's)")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(h.REPO, "python"))
    ap.add_argument("--no-pyinstaller", action="store_true")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (children inherit)")
    ap.add_argument("--json", help="default: bench/results/materialize-<utc>.json")
    args = ap.parse_args()
    args.configs, args.temps = set(filter(None, args.configs.split(","))), args.temps.split(",")
    return args


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
    pyi = None
    if not args.no_pyinstaller:
        h.create_venvs(work, python, {"pyinstaller": [PYINSTALLER]}, {})
        pyi = os.path.join(work, "venv-pyinstaller", "bin", "pyinstaller")
    code = "import sysconfig; print(sysconfig.get_paths()['stdlib'])"
    stdlib_dir = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True)
    stdlib_dir = stdlib_dir.stdout.strip()
    cache_root = os.path.join(args.fs_dir or work, "cache")
    parent = os.path.join(cache_root, "trees")
    pyi_tmp = os.path.join(args.fs_dir, "tmp") if args.fs_dir else "/tmp"
    os.makedirs(pyi_tmp, exist_ok=True)
    os.chmod(pyi_tmp, 0o1777)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    os.chmod(cache_root, 0o700)
    ctx = {"work": work, "parent": parent, "python": python, "so": so, "cache": cache_root}
    ctx |= {"pyi": pyi, "tmp": pyi_tmp, "pyi_builds": {}}
    all_cells, workloads = [], {}
    if pyi:
        b = ctx["pyi_builds"]["nodata"] = build_pyinstaller(pyi, work, "pyi-nodata", None, False)
        if not args.configs or "pyi-nodata" in args.configs:
            all_cells += cells("pyi-nodata", "-", [b["exe"]], args.temps, work, {"TMPDIR": pyi_tmp})
    names = [w for w in args.workloads.split(",") if w]
    for wl in names:
        if wl not in ("stdlib", "stdlib+pyc"):
            raise SystemExit(f"unknown workload {wl}")
        files = collect(stdlib_dir, wl == "stdlib+pyc")
        workloads[wl] = describe(files)
        h.log(f"{wl}: {len(files)} files, {workloads[wl]['bytes'] / 1e6:.1f} MB")
        all_cells += workload_cells(args, wl, files, ctx)
    h.log(f"{len(all_cells)} cells x {args.runs} rounds")
    mei_before = len(glob.glob(os.path.join(pyi_tmp, "_MEI*")))
    load_before, started = os.getloadavg(), time.time()
    data = h.measure(all_cells, args.runs, warmup=1, stride=7, alternate=True)
    load_after = os.getloadavg()
    samples = {}
    for cell in all_cells:
        d = data[cell.name]
        if d["failures"]:
            raise SystemExit(f"{cell.name}: {d['failures']} runs failed")
        samples[cell.name] = {k: d.get(k, []) for k in (WALL, "cpu_ns", CALL, CALL_CPU, "setup_ns")}
    summary = summarize(samples)
    comps = comparisons(samples, names, args.temps)
    result = h.result_header(
        python,
        extension={"source": so_src, **h.file_info(so)},
        filesystems={
            "cache": fs_info(cache_root),
            "PyInstaller TMPDIR": fs_info(pyi_tmp),
            "workdir (blobs, executables)": fs_info(work),
        },
        runs=args.runs,
        loadavg_before=load_before,
        loadavg_after=load_after,
        seconds=round(time.time() - started),
        leftover_MEI_dirs=len(glob.glob(os.path.join(pyi_tmp, "_MEI*"))) - mei_before,
        workloads=workloads,
        pyinstaller={"version": PYINSTALLER, "builds": ctx["pyi_builds"]} if pyi else None,
        summary=summary,
        comparisons=comps,
        samples=samples,
    )
    result |= {"stamp": result["utc"], "repo_commit": result["machine"]["repo_commit"]}
    result["python"] = {"path": python, "version": result["python_version"], "stdlib": stdlib_dir}
    h.write_result("materialize", result, args.json)

    def ms(r: dict, key: str) -> list[str]:
        quartiles = "-".join(f"{x:.1f}" for x in r.get(f"{key}_q_ms") or [])
        return [h.fmt(r.get(f"{key}_ms")), quartiles]

    rows = [
        [c, *ms(r, "call"), h.fmt(r.get("call_cpu_ms")), *ms(r, "wall"), h.fmt(r["cpu_ms"])]
        for c, r in summary.items()
    ]
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
