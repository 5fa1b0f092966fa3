"""Import benchmark: whole-process time of importing ~450 stdlib modules, per finder.

    python bench/import_bench.py --python /root/.pyenv/versions/3.11.7/bin/python3.11 --runs 15 \
        [--configs stock,zipimport,floor,ingot]

Every configuration runs ``PY -I -S bench/runner.py CONFIG bench/import_stdlib.py ...``
(``bare`` runs ``PY -I -S bench/import_stdlib.py`` itself); see bench/README.md.

Steps: build the artifacts with the interpreter under test (make_artifacts.py,
make_oxidized.py, ``python -m ingot pack``); run each configuration once with
``--verify`` (must exit 0 with no output; records which loader served each
module and compares the module set with stock's); one discarded warm-up run
each; then ``--runs`` rounds, each running every configuration once, the order
rotated every round; then ``strace -c -f`` once per configuration.  Prints a
markdown table and writes ``bench/out/import-bench-<version>-<time>.json``.
The harness itself can run under any Python 3.8+.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "import_stdlib.py")
RUNNER = os.path.join(HERE, "runner.py")
ALL_CONFIGS = ["stock", "zipimport", "floor", "floor-mmap", "oxidized", "ingot", "ingot-pyonly"]
# ingot-nativecache: the ingot archive with native code loaded from the extraction cache
# (INGOT_NATIVE=cache, cache filled by the verify run) instead of memory files.
KNOWN_CONFIGS = ALL_CONFIGS + ["bare", "ingot-nativecache"]

# run by the interpreter under test: names to pass to `ingot pack --stdlib-exclude` for ingot-pyonly
PYONLY_EXCLUDES = """
import _imp, importlib.machinery as m, os, sys
names = set()
for d in sys.path:
    if d.endswith("lib-dynload") and os.path.isdir(d):
        for f in os.listdir(d):
            for suf in m.EXTENSION_SUFFIXES:
                if f.endswith(suf):
                    names.add(f[: -len(suf)])
for n in getattr(_imp, "_frozen_module_names", lambda: ())():
    if not n.startswith("_frozen_importlib") and n != "os.path":
        names.add(n)
names.add("zipimport")
print(" ".join(sorted(names)))
"""
STRACE_SYSCALLS = ["openat", "newfstatat", "read", "mmap"]
RESULT_RE = re.compile(rb"^ingot-bench setup_ns=(\d+) import_ns=(\d+)$", re.M)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_capture(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def python_version(python: str) -> tuple[str, str]:
    out = run_capture([python, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.version)"],
                      check=True).stdout.splitlines()
    return out[0], out[1]


class Config:
    def __init__(self, name: str, argv: list[str], note: str = "", env: dict | None = None):
        self.name = name
        self.argv = argv
        self.note = note
        self.env = env
        self.wall_ns: list[int] = []
        self.cpu_s: list[float] = []
        self.setup_ns: list[int] = []
        self.import_ns: list[int] = []
        self.verify: dict = {}
        self.strace: dict = {}


def prepare(args, ver: str) -> tuple[list[Config], dict]:
    """Build artifacts and return the runnable configurations plus skip messages."""
    py = args.python
    out = args.out
    os.makedirs(out, exist_ok=True)
    skipped: dict[str, str] = {}
    artifacts: dict = {}
    wanted = args.configs

    if {"zipimport", "floor", "floor-mmap"} & set(wanted):
        zip_path = os.path.join(out, f"stdlib-{ver}.zip")
        floor_path = os.path.join(out, f"stdlib-{ver}.floor")
        if args.reuse_artifacts and os.path.exists(zip_path) and os.path.exists(floor_path):
            log(f"reusing {zip_path}, {floor_path}")
        else:
            log(f"building zip and floor artifacts with {py}")
            subprocess.run([py, os.path.join(HERE, "make_artifacts.py"), "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
        with open(os.path.join(out, f"stdlib-{ver}.artifacts.json")) as f:
            artifacts["zip_floor"] = json.load(f)

    oxidized_so = None
    if "oxidized" in wanted:
        ox_py = args.oxidized_python
        packed = os.path.join(out, "stdlib-3.10.oxidized")
        if ver != "3.10":
            skipped["oxidized"] = f"oxidized_importer 0.6.0 has wheels only up to CPython 3.10 (target is {ver})"
        elif not os.path.exists(ox_py):
            skipped["oxidized"] = f"{ox_py} not found (python3.10 -m venv /work/venv310 && " \
                                  f"/work/venv310/bin/pip install oxidized_importer==0.6.0)"
        else:
            probe = run_capture([ox_py, "-c", "import sys, oxidized_importer; "
                                 "print(oxidized_importer.__file__); print('%d.%d' % sys.version_info[:2])"])
            if probe.returncode != 0:
                skipped["oxidized"] = f"oxidized_importer not importable in {ox_py}: {probe.stderr.strip()[-200:]}"
            elif probe.stdout.split()[1] != ver:
                skipped["oxidized"] = f"{ox_py} is Python {probe.stdout.split()[1]}, target is {ver}"
            else:
                oxidized_so = probe.stdout.split()[0]
                if not (args.reuse_artifacts and os.path.exists(packed)):
                    log(f"building {packed} with {ox_py}")
                    subprocess.run([ox_py, os.path.join(HERE, "make_oxidized.py"), "--out", out], check=True,
                                   stdout=subprocess.DEVNULL)
                with open(os.path.join(out, "stdlib-3.10.oxidized.json")) as f:
                    artifacts["oxidized"] = json.load(f)

    ingot_archives = {
        "ingot": args.ingot_archive or os.path.join(out, f"stdlib-{ver}.ingot"),
        "ingot-pyonly": os.path.join(out, f"stdlib-{ver}-pyonly.ingot"),
    }
    ingot_wanted = [n for n in ingot_archives if n in wanted]
    if ingot_wanted:
        env = dict(os.environ, PYTHONPATH=args.ingot_pythonpath)
        probe = run_capture([py, "-c", "import ingot, ingot._ingot as n, os; ingot.IngotFinder; "
                             "s = os.stat(n.__file__); print(n.__file__, s.st_size, int(s.st_mtime))"], env=env)
        if probe.returncode != 0:
            for n in ingot_wanted:
                skipped[n] = ("ingot.IngotFinder is not available for this interpreter "
                              f"(PYTHONPATH={args.ingot_pythonpath}): {probe.stderr.strip().splitlines()[-1:]}")
    for name in ingot_wanted:
        if name in skipped:
            continue
        archive = ingot_archives[name]
        cmd = [py, "-m", "ingot", "pack", "-q", "-o", archive]
        if name == "ingot-pyonly":
            # leave out what the floor leaves out: extension modules (served from lib-dynload by the
            # stock path finder, as in every other config) and the modules served frozen
            excl = run_capture([py, "-I", "-S", "-c", PYONLY_EXCLUDES], check=True).stdout.split()
            cmd += ["--stdlib-exclude"] + excl
        if args.reuse_artifacts and os.path.exists(archive):
            log(f"reusing {archive}")
        else:
            log(f"packing {archive}: {' '.join(cmd[:7])}{' ...' if len(cmd) > 7 else ''}")
            pack = run_capture(cmd, env=env, cwd=REPO)
            if pack.returncode != 0 or not os.path.exists(archive):
                skipped[name] = (f"`{' '.join(cmd[:7])}` failed (exit {pack.returncode}): "
                                 f"{(pack.stderr or pack.stdout).strip().splitlines()[-1:]}")
                continue
        artifacts[name] = {"path": archive, "bytes": os.path.getsize(archive), "pack_argv": cmd,
                           "ingot_native_module": probe.stdout.strip()}

    base = [py, "-I", "-S"]
    configs = []
    for name in wanted:
        if name in skipped:
            continue
        if name == "bare":
            configs.append(Config(name, base + [SCRIPT], "python -I -S import_stdlib.py, no runner"))
        elif name == "stock":
            configs.append(Config(name, base + [RUNNER, "stock", SCRIPT]))
        elif name == "zipimport":
            configs.append(Config(name, base + [RUNNER, "zipimport", SCRIPT, os.path.join(out, f"stdlib-{ver}.zip")]))
        elif name in ("floor", "floor-mmap"):
            configs.append(Config(name, base + [RUNNER, name, SCRIPT, os.path.join(out, f"stdlib-{ver}.floor")]))
        elif name == "oxidized":
            configs.append(Config(name, base + [RUNNER, "oxidized", SCRIPT, oxidized_so,
                                                os.path.join(out, "stdlib-3.10.oxidized")]))
        elif name in ingot_archives:
            configs.append(Config(name, base + [RUNNER, "ingot", SCRIPT, args.ingot_pythonpath,
                                                ingot_archives[name]]))
        elif name == "ingot-nativecache" and "ingot" in artifacts:
            cache = os.path.join(out, "native-cache")
            os.makedirs(cache, mode=0o700, exist_ok=True)
            configs.append(Config(name, base + [RUNNER, "ingot", SCRIPT, args.ingot_pythonpath,
                                                ingot_archives["ingot"]],
                                  "ingot, native code from the extraction cache",
                                  env=dict(os.environ, INGOT_NATIVE="cache", INGOT_CACHE_DIR=cache)))
    return configs, {"skipped": skipped, "artifacts": artifacts}


def verify(cfg: Config, stock_modules: set | None) -> str | None:
    """Run once with --verify; return a reason to skip the config, or None."""
    argv = list(cfg.argv)
    if cfg.name != "bare":
        argv.insert(argv.index(RUNNER) + 1, "--verify")
    proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, env=cfg.env)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode == 3 and "ingot-bench-skip:" in err:
        return err.split("ingot-bench-skip:", 1)[1].strip()
    other = [ln for ln in err.splitlines() if not ln.startswith(("ingot-bench ", "ingot-bench-verify "))]
    if proc.returncode != 0 or proc.stdout or other:
        return f"verify run failed (exit {proc.returncode}): {(proc.stdout.decode(errors='replace') + err)[-600:]}"
    if cfg.name == "bare":
        return None
    report = json.loads(err.split("ingot-bench-verify ", 1)[1].splitlines()[0])
    counts: dict[str, int] = {}
    for loader in report["modules"].values():
        counts[loader] = counts.get(loader, 0) + 1
    names = set(report["modules"])
    key = {"stock": "SourceFileLoader", "zipimport": "zipimporter", "floor": "FloorFinder",
           "floor-mmap": "FloorFinder", "oxidized": "OxidizedFinder"}.get(cfg.name)
    early = set(report["preloaded"]) | set(report["setup_loaded"]) | {"__main__", "__mp_main__"}
    late = {n: ld for n, ld in report["modules"].items() if n not in early}
    if key is None:
        key = next((k for k in counts if "ingot" in k.lower()), "?")
    cfg.verify = {
        # modules imported by the script (not at startup, not by the finder's setup) and
        # served by the finder under test / by the stock SourceFileLoader
        "served": sum(1 for ld in late.values() if ld == key),
        "other_source": 0 if key == "SourceFileLoader" else sum(1 for ld in late.values() if ld == "SourceFileLoader"),
        "modules_total": len(names),
        "loaders": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "setup_loaded": report["setup_loaded"],
        "meta_path": report["meta_path"],
    }
    if stock_modules is not None:
        ignore = {"oxidized_importer", "ingot", "ingot._ingot"}
        cfg.verify["missing_vs_stock"] = sorted(stock_modules - names)
        cfg.verify["extra_vs_stock"] = sorted(names - stock_modules - ignore)
    cfg.verify["_names"] = names
    return None


def run_once(cfg: Config, record: bool) -> None:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(cfg.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=cfg.env)
    _, err = proc.communicate()
    t1 = time.perf_counter_ns()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cfg.name}: exit {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    if not record:
        return
    cfg.wall_ns.append(t1 - t0)
    cfg.cpu_s.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    if cfg.name != "bare":
        m = RESULT_RE.search(err)
        if not m:
            raise RuntimeError(f"{cfg.name}: no result line in stderr: {err[-300:]!r}")
        cfg.setup_ns.append(int(m.group(1)))
        cfg.import_ns.append(int(m.group(2)))


def strace_counts(cfg: Config, out_dir: str, ver: str) -> dict:
    path = os.path.join(out_dir, f"strace-{ver}-{cfg.name}.txt")
    subprocess.run(["strace", "-c", "-f", "-o", path] + cfg.argv, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    calls: dict[str, int] = {}
    errors: dict[str, int] = {}
    total = total_err = 0
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith(("%", "-")):
                continue
            if parts[-1] == "total":
                nums = [p for p in parts[:-1]]
                total = int(nums[3])
                total_err = int(nums[4]) if len(nums) > 4 else 0
                continue
            # % time, seconds, usecs/call, calls, [errors], syscall
            name = parts[-1]
            calls[name] = int(parts[3])
            if len(parts) == 6:
                errors[name] = int(parts[4])
    return {"total": total, "errors": total_err, "calls": calls, "failed": errors, "file": path}


def med_ms(xs) -> float | None:
    return statistics.median(xs) / 1e6 if xs else None


def fmt(x, spec=".1f") -> str:
    return "–" if x is None else format(x, spec)


def machine_info() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = run_capture(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]).stdout.strip()
    return {"uname": " ".join(platform.uname()), "cpu": cpu, "nproc": os.cpu_count(), "repo_commit": commit}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="interpreter under test")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per configuration (default 15)")
    ap.add_argument("--configs", default=",".join(ALL_CONFIGS),
                    help=f"comma-separated, from {','.join(KNOWN_CONFIGS)} (default: {','.join(ALL_CONFIGS)})")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--oxidized-python", default="/work/venv310/bin/python",
                    help="Python 3.10 with oxidized_importer==0.6.0 (builds the packed resources)")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(REPO, "python"),
                    help="directory holding the ingot package (default: the repo's python/)")
    ap.add_argument("--ingot-archive", help="default: OUT/stdlib-X.Y.ingot, packed by `python -m ingot pack`")
    ap.add_argument("--reuse-artifacts", action="store_true", help="do not rebuild existing artifacts")
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--nice", type=int, default=0,
                    help="add this to the harness's niceness before timing (children inherit it); "
                         "e.g. -10 as root on a shared, loaded machine")
    ap.add_argument("--json", help="output JSON path (default: OUT/import-bench-X.Y-<utc time>.json)")
    args = ap.parse_args()
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in args.configs if c not in KNOWN_CONFIGS]
    if bad:
        ap.error(f"unknown configs {bad}; known: {KNOWN_CONFIGS}")
    if "stock" not in args.configs:
        args.configs.insert(0, "stock")  # ratios are against stock measured in the same run
    args.out = os.path.abspath(args.out)
    args.ingot_pythonpath = os.path.abspath(args.ingot_pythonpath)
    if args.runs < 1:
        ap.error("--runs must be >= 1")

    if args.nice:
        os.nice(args.nice)
    ver, full_version = python_version(args.python)
    log(f"target: {args.python} ({full_version.splitlines()[0]})")
    configs, prep = prepare(args, ver)
    for name, why in prep["skipped"].items():
        log(f"SKIP {name}: {why}")

    stock = next(c for c in configs if c.name == "stock")
    why = verify(stock, None)
    if why:
        log(f"stock configuration does not run: {why}")
        return 1
    stock_names = stock.verify.pop("_names")
    runnable = []
    for cfg in configs:
        if cfg is not stock:
            why = verify(cfg, stock_names)
            if why:
                prep["skipped"][cfg.name] = why
                log(f"SKIP {cfg.name}: {why}")
                continue
            cfg.verify.pop("_names", None)
        runnable.append(cfg)
        if cfg.verify:
            v = cfg.verify
            log(f"verify {cfg.name}: {v['modules_total']} modules; loaders {v['loaders']}; "
                f"loaded by setup: {len(v['setup_loaded'])}"
                + (f"; missing vs stock {v['missing_vs_stock']}; extra {v['extra_vs_stock']}"
                   if v.get("missing_vs_stock") or v.get("extra_vs_stock") else ""))

    load_before = os.getloadavg()
    log(f"warm-up: one discarded run per configuration")
    for cfg in runnable:
        run_once(cfg, record=False)
    log(f"timing: {args.runs} rounds x {len(runnable)} configurations, round-robin, order rotated each round")
    for i in range(args.runs):
        k = i % len(runnable)
        for cfg in runnable[k:] + runnable[:k]:
            run_once(cfg, record=True)
    if not args.no_strace:
        if shutil.which("strace"):
            for cfg in runnable:
                cfg.strace = strace_counts(cfg, args.out, ver)
        else:
            log("strace not found; no syscall counts")

    load_after = os.getloadavg()
    base_wall = statistics.median(stock.wall_ns)
    base_imp = statistics.median(stock.import_ns)
    base_cpu = statistics.median(stock.cpu_s)
    base_sys = stock.strace.get("total")
    print(f"### Import benchmark, CPython {full_version.split()[0]} ({args.python})\n")
    print(f"{len(runnable)} configurations x {args.runs} runs, round-robin after one discarded warm-up run; "
          f"`{os.path.basename(SCRIPT)}` imports {count_imports()} modules; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; niceness {os.nice(0)}.\n")
    print("| config | whole process, median ms | vs stock | import phase, median ms | vs stock "
          "| finder setup, median ms | process CPU (user+sys), median ms | vs stock "
          "| modules served by the finder under test |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for cfg in runnable:
        wall = med_ms(cfg.wall_ns)
        imp = med_ms(cfg.import_ns)
        served = served_summary(cfg)
        print(f"| {cfg.name} | {fmt(wall)} | {fmt(wall * 1e6 / base_wall, '.2f')} | {fmt(imp)} | "
              f"{fmt(imp * 1e6 / base_imp, '.2f') if imp is not None else '–'} | "
              f"{fmt(med_ms(cfg.setup_ns), '.2f')} | {statistics.median(cfg.cpu_s) * 1e3:.0f} | "
              f"{statistics.median(cfg.cpu_s) / base_cpu:.2f} | {served} |")
    for name, why in prep["skipped"].items():
        print(f"| {name} | skipped | | | | | | | {why.splitlines()[0][:160]} |")
    if base_sys:
        print("\n| config | syscalls (strace -c -f) | vs stock | failed | " + " | ".join(STRACE_SYSCALLS) + " |")
        print("|---|---:|---:|---:|" + "---:|" * len(STRACE_SYSCALLS))
        for cfg in runnable:
            s = cfg.strace
            print(f"| {cfg.name} | {s['total']} | {s['total'] / base_sys:.2f} | {s['errors']} | "
                  + " | ".join(str(s["calls"].get(n, 0)) for n in STRACE_SYSCALLS) + " |")

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    json_path = args.json or os.path.join(args.out, f"import-bench-{ver}-{stamp}.json")
    result = {
        "python": args.python,
        "python_version": full_version,
        "runs": args.runs,
        "modules_in_script": count_imports(),
        "machine": machine_info(),
        "utc": stamp,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "niceness": os.nice(0),
        "skipped": prep["skipped"],
        "artifacts": prep["artifacts"],
        "configs": {
            cfg.name: {
                "argv": cfg.argv,
                "wall_ms_median": med_ms(cfg.wall_ns),
                "wall_ratio_vs_stock": statistics.median(cfg.wall_ns) / base_wall,
                # median over rounds of (this config's time / stock's time in the same round)
                "wall_ratio_vs_stock_paired": statistics.median(
                    a / b for a, b in zip(cfg.wall_ns, stock.wall_ns)),
                "import_ms_median": med_ms(cfg.import_ns),
                "import_ratio_vs_stock": (statistics.median(cfg.import_ns) / base_imp) if cfg.import_ns else None,
                "setup_ms_median": med_ms(cfg.setup_ns),
                "cpu_s_median": statistics.median(cfg.cpu_s),
                "cpu_ratio_vs_stock": statistics.median(cfg.cpu_s) / base_cpu,
                "wall_ms_quartiles": [q / 1e6 for q in quartiles(cfg.wall_ns)],
                "import_ms_quartiles": [q / 1e6 for q in quartiles(cfg.import_ns)],
                "wall_ns": cfg.wall_ns,
                "import_ns": cfg.import_ns,
                "setup_ns": cfg.setup_ns,
                "cpu_s": cfg.cpu_s,
                "verify": cfg.verify,
                "strace": cfg.strace,
            }
            for cfg in runnable
        },
    }
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
    log(f"wrote {json_path}")
    return 0


def served_summary(cfg: Config) -> str:
    v = cfg.verify
    if not v:
        return ""
    loaders = v["loaders"]
    key = {"stock": "SourceFileLoader", "zipimport": "zipimporter", "floor": "FloorFinder",
           "floor-mmap": "FloorFinder", "oxidized": "OxidizedFinder"}.get(cfg.name)
    if key is None:  # ingot: whatever class its finder/loader is
        key = next((k for k in loaders if "ingot" in k.lower()), None)
    text = f"{v['served']} ({key})" if key else "?"
    if cfg.name != "stock" and v["other_source"]:
        text += f", {v['other_source']} by SourceFileLoader"
    if v["setup_loaded"]:
        text += f"; {len(v['setup_loaded'])} imported by the setup itself"
    return text


def quartiles(xs):
    if len(xs) < 2:
        return list(xs)
    return statistics.quantiles(xs, n=4)


def count_imports() -> int:
    with open(SCRIPT) as f:
        return sum(1 for line in f if line.startswith("import "))


if __name__ == "__main__":
    sys.exit(main())
