"""Import benchmark: whole-process time of importing ~450 stdlib modules (bench/import_stdlib.py)
in a fresh `python -I -S`, per finder (was bench/import_bench.py).

    python3 bench/finders.py --python PY [--runs 15] [--configs stock,zipimport,floor,ingot]
    python3 bench/finders.py --summarize bench/results/import-bench-3.11-*.json   # side by side

Every configuration runs `PY -I -S bench/apps/runner.py CONFIG bench/import_stdlib.py ARGS`
(`bare`: `PY -I -S bench/import_stdlib.py`); CONFIGS below. Steps: build the artifacts with the
interpreter under test (bench/apps/make_artifacts.py, `python -m ingot pack`); run each
configuration once with --verify (it must exit 0 with no output; records which loader served
each module and compares the module set with stock's); one discarded warm-up run each; --runs
rounds, each running every configuration once, the order rotated every round (bench/harness.py);
then `strace -c -f` once per configuration. Prints a markdown table and writes
bench/results/import-bench-X.Y-<utc>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import harness as h

SCRIPT = os.path.join(h.HERE, "import_stdlib.py")
APPS = os.path.join(h.HERE, "apps")
RUNNER = os.path.join(APPS, "runner.py")
# config -> runner.py's arguments after CONFIG SCRIPT (templates, filled by prepare())
CONFIGS = {
    "stock": ["stock"],
    "zipimport": ["zipimport", "{zip}"],
    "floor": ["floor", "{floor}"],
    "floor-mmap": ["floor-mmap", "{floor}"],
    "oxidized": ["oxidized", "{oxidized_so}", "{oxidized}"],
    "ingot": ["ingot", "{pythonpath}", "{ingot}"],
    "ingot-pyonly": ["ingot", "{pythonpath}", "{ingot-pyonly}"],
    # the ingot archive, native code from the extraction cache instead of memory files
    "ingot-nativecache": ["ingot", "{pythonpath}", "{ingot}"],
}
DEFAULT = ["stock", "zipimport", "floor", "floor-mmap", "oxidized", "ingot", "ingot-pyonly"]
SERVED_BY = {"stock": "SourceFileLoader", "zipimport": "zipimporter", "floor": "FloorFinder"}
SERVED_BY |= {"floor-mmap": "FloorFinder", "oxidized": "OxidizedFinder"}
STRACE = ["openat", "newfstatat", "read", "mmap"]
RESULT_RE = re.compile(r"^ingot-bench setup_ns=(\d+) import_ns=(\d+)$", re.M)


def sh(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def prepare(args, ver: str) -> tuple[dict, dict, dict]:
    """Build the artifacts; the template values, the artifacts' records, and why configurations
    are skipped."""
    out, py, wanted = args.out, args.python, set(args.configs)
    v = {"pythonpath": args.ingot_pythonpath, "zip": f"{out}/stdlib-{ver}.zip"}
    v["floor"], v["oxidized"] = f"{out}/stdlib-{ver}.floor", f"{out}/stdlib-3.10.oxidized"
    skipped, artifacts = {}, {}
    if {"zipimport", "floor", "floor-mmap"} & wanted:
        if not (args.reuse_artifacts and os.path.exists(v["zip"]) and os.path.exists(v["floor"])):
            h.log(f"building zip and floor artifacts with {py}")
            sh([py, os.path.join(APPS, "make_artifacts.py"), out], check=True)
        with open(os.path.join(out, f"stdlib-{ver}.artifacts.json")) as f:
            artifacts["zip_floor"] = json.load(f)
    if "oxidized" in wanted:
        ox = args.oxidized_python
        code = (
            "import sys, oxidized_importer as o; print(o.__file__, '%d.%d' % sys.version_info[:2])"
        )
        probe = sh([ox, "-c", code]) if ox else None
        if not probe or probe.returncode != 0 or probe.stdout.split()[1] != ver:
            why = probe.stderr.strip()[-200:] if probe else "no --oxidized-python"
            skipped["oxidized"] = f"needs a CPython {ver} with oxidized_importer==0.6.0 ({why})"
        else:
            v["oxidized_so"] = probe.stdout.split()[0]
            if not (args.reuse_artifacts and os.path.exists(v["oxidized"])):
                sh([ox, os.path.join(APPS, "make_artifacts.py"), "--oxidized", out], check=True)
            with open(v["oxidized"] + ".json") as f:
                artifacts["oxidized"] = json.load(f)
    env = dict(os.environ, PYTHONPATH=args.ingot_pythonpath)
    code = "import ingot, ingot._ingot as n; ingot.IngotFinder; print(n.__file__)"
    probe = sh([py, "-c", code], env=env)
    for name in ("ingot", "ingot-pyonly"):
        if not {name, "ingot-nativecache"} & wanted or name in v:
            continue
        archive = v[name] = args.ingot_archive or f"{out}/stdlib-{ver}.ingot"
        if name == "ingot-pyonly":
            archive = v[name] = f"{out}/stdlib-{ver}-pyonly.ingot"
        cmd = [py, "-m", "ingot", "pack", "-q", "-o", archive]
        if name == "ingot-pyonly":
            excl = sh([py, "-I", "-S", os.path.join(APPS, "pyonly_excludes.py")], check=True)
            cmd += ["--stdlib-exclude", *excl.stdout.split()]
        if probe.returncode != 0:
            skipped[name] = f"no ingot.IngotFinder for {py}: {probe.stderr.strip()[-300:]}"
            continue
        if not (args.reuse_artifacts and os.path.exists(archive)):
            h.log(f"packing {archive}")
            pack = sh(cmd, env=env, cwd=h.REPO)
            if pack.returncode != 0 or not os.path.exists(archive):
                skipped[name] = f"ingot pack failed: {(pack.stderr or pack.stdout)[-300:]}"
                continue
        artifacts[name] = {"path": archive, "bytes": os.path.getsize(archive), "pack_argv": cmd}
        artifacts[name]["ingot_native_module"] = probe.stdout.strip()
    if "ingot-nativecache" in wanted and "ingot" in skipped:
        skipped["ingot-nativecache"] = skipped["ingot"]
    return v, artifacts, skipped


def verify(argv: list, env: dict, name: str, stock: set | None) -> tuple[dict | None, str | None]:
    """One run with --verify: which loader served each module; (record, why it cannot run)."""
    if name != "bare":
        argv = [*argv[:4], "--verify", *argv[4:]]
    r = sh(argv, env=env, stdin=subprocess.DEVNULL)
    if r.returncode == 3 and "ingot-bench-skip:" in r.stderr:
        return None, r.stderr.split("ingot-bench-skip:", 1)[1].strip()
    other = [x for x in r.stderr.splitlines() if not x.startswith("ingot-bench")]
    if r.returncode != 0 or r.stdout or other:
        return None, f"verify run failed (exit {r.returncode}): {(r.stdout + r.stderr)[-600:]}"
    if name == "bare":
        return {}, None
    report = json.loads(r.stderr.split("ingot-bench-verify ", 1)[1].splitlines()[0])
    counts: dict = {}
    for loader in report["modules"].values():
        counts[loader] = counts.get(loader, 0) + 1
    key = SERVED_BY.get(name) or next((k for k in counts if "ingot" in k.lower()), "?")
    early = set(report["preloaded"]) | set(report["setup_loaded"]) | {"__main__", "__mp_main__"}
    late = [ld for n, ld in report["modules"].items() if n not in early]
    names = set(report["modules"])
    rec = {
        "served": late.count(key),
        "served_by": key,
        "other_source": 0 if key == "SourceFileLoader" else late.count("SourceFileLoader"),
        "modules_total": len(names),
        "loaders": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "setup_loaded": report["setup_loaded"],
        "meta_path": report["meta_path"],
        "_names": names,
    }
    if stock is not None:
        rec["missing_vs_stock"] = sorted(stock - names)
        ignore = {"oxidized_importer", "ingot", "ingot._ingot"}
        rec["extra_vs_stock"] = sorted(names - stock - ignore)
    return rec, None


def parse_result(run: h.Run) -> dict:
    m = RESULT_RE.search(run.err)
    return {"setup_ns": int(m.group(1)), "import_ns": int(m.group(2))} if m else {}


def summarize_files(paths: list[str]) -> None:
    """Several result files of one interpreter side by side: each cell one invocation's median
    and, in parentheses, its ratio to that invocation's stock median."""
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    names = list(dict.fromkeys(n for r in runs for n in r["configs"]))
    for i, r in enumerate(runs):
        print(
            f"- run {i + 1}: `{r['utc']}`, {r['runs']} rounds, load average "
            f"{r['loadavg_before'][0]:.2f} / {r['loadavg_after'][0]:.2f}"
        )
    for title, key, ratio in [
        (
            "Whole process, median ms (ratio to stock, same run)",
            "wall_ms_median",
            "wall_ratio_vs_stock",
        ),
        (
            "Import phase, median ms (ratio to stock, same run)",
            "import_ms_median",
            "import_ratio_vs_stock",
        ),
    ]:
        rows = []
        for n in names:
            cells = []
            for r in runs:
                c = r["configs"].get(n)
                ok = c and c.get(key) is not None
                cells.append(f"{c[key]:.1f} ({c[ratio]:.2f})" if ok else h.DASH)
            rows.append([n, *cells])
        print(f"\n{title}:\n")
        print("\n".join(h.table(["config", *(f"run {i + 1}" for i in range(len(runs)))], rows)))


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--python", help="interpreter under test (default: pyenv's newest 3.11)")
    ap.add_argument("--runs", type=int, default=15, help="rounds (default 15)")
    ap.add_argument(
        "--configs", default=",".join(DEFAULT), help=f"of {','.join(['bare', *CONFIGS])}"
    )
    ap.add_argument("--out", default=os.path.join(h.REPO, "build", "finders"), help="artifacts")
    ap.add_argument("--oxidized-python", help="a CPython 3.10 with oxidized_importer==0.6.0")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(h.REPO, "python"))
    ap.add_argument("--ingot-archive", help="default: OUT/stdlib-X.Y.ingot, made by ingot pack")
    ap.add_argument("--reuse-artifacts", action="store_true")
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (children inherit)")
    ap.add_argument("--json", help="default: bench/results/import-bench-X.Y-<utc>.json")
    ap.add_argument("--summarize", nargs="+", metavar="JSON", help="only: these side by side")
    args = ap.parse_args()
    args.configs = ["stock", *(c for c in args.configs.split(",") if c and c != "stock")]
    for c in args.configs:
        if c not in CONFIGS and c != "bare":
            ap.error(f"unknown config {c}")
    args.out, args.ingot_pythonpath = (
        os.path.abspath(args.out),
        os.path.abspath(args.ingot_pythonpath),
    )
    args.python = args.python or (None if args.summarize else h.find_python("3.11"))
    return args


def main() -> int:
    args = parse_args()
    if args.summarize:
        summarize_files(args.summarize)
        return 0
    if args.nice:
        os.nice(args.nice)
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    ver = sh([args.python, "-I", "-S", "-c", code], check=True).stdout.strip()
    full_version = h.python_version(args.python)
    os.makedirs(args.out, exist_ok=True)
    v, artifacts, skipped = prepare(args, ver)
    base = [args.python, "-I", "-S"]
    cells, verified, stock_names = [], {}, None
    for name in args.configs:
        if name in skipped:
            h.log(f"SKIP {name}: {skipped[name]}")
            continue
        env = dict(os.environ)
        argv = [*base, SCRIPT] if name == "bare" else [*base, RUNNER, SCRIPT]
        if name != "bare":
            argv = [
                *base,
                RUNNER,
                *[re.sub(r"\{(\S+)\}", lambda m: v[m[1]], a) for a in CONFIGS[name]],
            ]
            argv.insert(5, SCRIPT)
        if name == "ingot-nativecache":
            cache = os.path.join(args.out, "native-cache")
            os.makedirs(cache, mode=0o700, exist_ok=True)
            env |= {"INGOT_NATIVE": "cache", "INGOT_CACHE_DIR": cache}
        rec, why = verify(argv, env, name, stock_names)
        if why:
            if name == "stock":
                raise SystemExit(f"stock does not run: {why}")
            skipped[name] = why
            h.log(f"SKIP {name}: {why}")
            continue
        names = rec.pop("_names", None)
        stock_names = names if name == "stock" else stock_names
        verified[name] = rec
        after = None if name == "bare" else parse_result
        cells.append(
            h.Cell(name, argv, env, os.getcwd(), capture=os.path.join(args.out, "run"), after=after)
        )
    load_before = os.getloadavg()
    h.log(f"timing: {args.runs} rounds x {len(cells)} configurations after one warm-up run each")
    data = h.measure(cells, args.runs, warmup=1)
    load_after = os.getloadavg()
    strace = {}
    if not args.no_strace and shutil.which("strace"):
        for c in cells:
            strace[c.name] = h.strace_counts(c.argv, f"{args.out}/strace-{ver}-{c.name}.txt", c.env)
    stock = data["stock"]

    def med(xs):
        return statistics.median(xs) if xs else None

    configs = {}
    for c in cells:
        d = data[c.name]
        if d["failures"]:
            raise SystemExit(f"{c.name}: {d['failures']} runs failed")
        wall, imp, cpu = d["wall_ns"], d.get("import_ns", []), d["cpu_s"]
        configs[c.name] = {
            "argv": c.argv,
            "wall_ms_median": med(wall) / 1e6,
            "wall_ratio_vs_stock": med(wall) / med(stock["wall_ns"]),
            "wall_ratio_vs_stock_paired": med(h.paired(wall, stock["wall_ns"])),
            "import_ms_median": med(imp) and med(imp) / 1e6,
            "import_ratio_vs_stock": med(imp) and med(imp) / med(stock["import_ns"]),
            "setup_ms_median": med(d.get("setup_ns")) and med(d["setup_ns"]) / 1e6,
            "cpu_s_median": med(cpu),
            "cpu_ratio_vs_stock": med(cpu) / med(stock["cpu_s"]),
            "wall_ms_quartiles": [q / 1e6 for q in h.quartiles(wall) or []],
            "import_ms_quartiles": [q / 1e6 for q in h.quartiles(imp) or []],
            "wall_ns": wall,
            "import_ns": imp,
            "setup_ns": d.get("setup_ns", []),
            "cpu_s": cpu,
            "verify": verified[c.name],
            "strace": strace.get(c.name, {}),
        }
    with open(SCRIPT) as f:
        modules = sum(1 for line in f if line.startswith("import "))
    result = {
        "python": args.python,
        "python_version": full_version,
        "runs": args.runs,
        "modules_in_script": modules,
        "machine": h.machine_info(),
        "utc": h.utc_stamp(),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "niceness": os.nice(0),
        "skipped": skipped,
        "artifacts": artifacts,
        "configs": configs,
    }
    print(f"### Import benchmark, {full_version} ({args.python})\n")
    print(
        f"{len(cells)} configurations x {args.runs} rounds after one discarded warm-up run; "
        f"{modules} modules; load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
        f"after; niceness {os.nice(0)}.\n"
    )
    rows = []
    for n, c in configs.items():
        vr = c["verify"]
        served = f"{vr['served']} ({vr['served_by']})" if vr else ""
        rows.append(
            [
                n,
                h.fmt(c["wall_ms_median"]),
                h.fmt(c["wall_ratio_vs_stock"], ".2f"),
                h.fmt(c["import_ms_median"]),
                h.fmt(c["import_ratio_vs_stock"], ".2f"),
                h.fmt(c["setup_ms_median"], ".2f"),
                h.fmt(c["cpu_s_median"] * 1e3, ".0f"),
                h.fmt(c["cpu_ratio_vs_stock"], ".2f"),
                served,
            ]
        )
    rows += [
        [n, "skipped", "", "", "", "", "", "", why.splitlines()[0][:160]]
        for n, why in skipped.items()
    ]
    head = ["config", "whole process ms", "vs stock", "import phase ms", "vs stock", "setup ms"]
    print(
        "\n".join(h.table([*head, "CPU ms", "vs stock", "served by the finder under test"], rows))
    )
    if strace:
        base_sys = strace["stock"]["total"]
        rows = [
            [
                n,
                str(s["total"]),
                f"{s['total'] / base_sys:.2f}",
                str(s["errors"]),
                *(str(s["calls"].get(k, 0)) for k in STRACE),
            ]
            for n, s in strace.items()
        ]
        print(
            "\n" + "\n".join(h.table(["config", "syscalls", "vs stock", "failed", *STRACE], rows))
        )
    h.write_result(f"import-bench-{ver}", result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
