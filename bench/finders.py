"""Import benchmark: a fresh `python -I -S` importing ~450 stdlib modules (examples/import-stdlib/stdlib_modules.py),
per finder; the configurations and the method: bench/README.md."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import harness as h

SCRIPT = os.path.join(h.HERE, "..", "examples", "import-stdlib", "stdlib_modules.py")
APPS = os.path.join(h.HERE, "apps")
# config -> runner.py's arguments after CONFIG SCRIPT
CONFIGS = {
    "stock": [],
    "zipimport": ["{out}/stdlib-{ver}.zip"],
    "floor": ["{out}/stdlib-{ver}.floor"],
    "floor-mmap": ["{out}/stdlib-{ver}.floor"],
    "oxidized": ["{oxidized_so}", "{out}/stdlib-3.10.oxidized"],
    "ingot": ["{pythonpath}", "{out}/stdlib-{ver}.ingot"],
    "ingot-pyonly": ["{pythonpath}", "{out}/stdlib-{ver}-pyonly.ingot"],
}
DEFAULT = ["stock", "zipimport", "floor", "floor-mmap", "oxidized", "ingot", "ingot-pyonly"]
SERVED_BY = {"stock": "SourceFileLoader", "zipimport": "zipimporter", "floor": "FloorFinder"}
SERVED_BY |= {"floor-mmap": "FloorFinder", "oxidized": "OxidizedFinder"}
STRACE = ["openat", "newfstatat", "read", "mmap"]


def sh(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def prepare(args, v: dict) -> tuple[dict, dict]:
    """Build the artifacts the configurations need; their records, and why configurations are
    skipped."""
    out, py, wanted = args.out, args.python, set(args.configs)
    skipped, artifacts = {}, {}
    if {"zipimport", "floor", "floor-mmap"} & wanted:
        h.log(f"building zip and floor artifacts with {py}")
        sh([py, os.path.join(APPS, "make_artifacts.py"), out], check=True)
        with open(os.path.join(out, f"stdlib-{v['ver']}.artifacts.json")) as f:
            artifacts["zip_floor"] = json.load(f)
    if "oxidized" in wanted:
        code = (
            "import sys, oxidized_importer as o; print(o.__file__, '%d.%d' % sys.version_info[:2])"
        )
        probe = sh([args.oxidized_python, "-c", code]) if args.oxidized_python else None
        if not probe or probe.returncode != 0 or probe.stdout.split()[1] != v["ver"]:
            why = probe.stderr.strip()[-200:] if probe else "no --oxidized-python"
            skipped["oxidized"] = (
                f"needs a CPython {v['ver']} with oxidized_importer==0.6.0 ({why})"
            )
        else:
            v["oxidized_so"] = probe.stdout.split()[0]
            make = [
                args.oxidized_python,
                os.path.join(APPS, "make_artifacts.py"),
                "--oxidized",
                out,
            ]
            sh(make, check=True)
            with open(f"{out}/stdlib-3.10.oxidized.json") as f:
                artifacts["oxidized"] = json.load(f)
    env = dict(os.environ, PYTHONPATH=args.ingot_pythonpath)
    code = "import ingot, ingot._ingot as n; ingot.IngotFinder; print(n.__file__)"
    probe = sh([py, "-c", code], env=env)
    for name in wanted & {"ingot", "ingot-pyonly"}:
        archive = CONFIGS[name][1].format(**v)
        cmd = [py, "-m", "ingot", "pack", "-q", "-o", archive]
        if name == "ingot-pyonly":
            excl = sh([py, "-I", "-S", os.path.join(APPS, "pyonly_excludes.py")], check=True)
            cmd += ["--stdlib-exclude", *excl.stdout.split()]
        if probe.returncode != 0:
            skipped[name] = f"no ingot.IngotFinder for {py}: {probe.stderr.strip()[-300:]}"
            continue
        h.log(f"packing {archive}")
        pack = sh(cmd, env=env, cwd=h.REPO)
        if pack.returncode != 0 or not os.path.exists(archive):
            skipped[name] = f"ingot pack failed: {(pack.stderr or pack.stdout)[-300:]}"
            continue
        artifacts[name] = {"path": archive, "bytes": os.path.getsize(archive), "pack_argv": cmd}
        artifacts[name]["ingot_native_module"] = probe.stdout.strip()
    return artifacts, skipped


def verify(argv: list, name: str, stock: set | None) -> tuple[dict | None, str | None]:
    """One run with --verify: which loader served each module; (record, why it cannot run)."""
    if name != "bare":
        argv = [*argv[:4], "--verify", *argv[4:]]
    r = sh(argv, stdin=subprocess.DEVNULL)
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
    """The runner's last line: ingot-bench setup_ns=N import_ns=N."""
    line = [x for x in run.err.splitlines() if x.startswith("ingot-bench setup_ns=")]
    return {k: int(x) for k, x in (p.split("=") for p in line[-1].split()[1:])} if line else {}


def summarize_files(paths: list[str]) -> None:
    """Several result files side by side: each invocation's median (its ratio to its stock)."""
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    names = list(dict.fromkeys(n for r in runs for n in r["configs"]))
    for i, r in enumerate(runs):
        load = f"{r['loadavg_before'][0]:.2f} / {r['loadavg_after'][0]:.2f}"
        print(f"- run {i + 1}: `{r['utc']}`, {r['runs']} rounds, load average {load}")
    for title, key, ratio in [
        ("Whole process", "wall_ms_median", "wall_ratio_vs_stock"),
        ("Import phase", "import_ms_median", "import_ratio_vs_stock"),
    ]:
        rows = []
        for n in names:
            cs = [r["configs"].get(n) or {} for r in runs]
            cells = [f"{c[key]:.1f} ({c[ratio]:.2f})" if c.get(key) else h.DASH for c in cs]
            rows.append([n, *cells])
        head = ["config", *(f"run {i + 1}" for i in range(len(runs)))]
        print(f"\n{title}, median ms (ratio to stock, same run):\n")
        print("\n".join(h.table(head, rows)))


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--python", help="interpreter under test (default: pyenv's newest 3.11)")
    ap.add_argument("--runs", type=int, default=15, help="rounds (default 15)")
    ap.add_argument("--configs", default=",".join(DEFAULT), help=f"of bare,{','.join(CONFIGS)}")
    ap.add_argument("--out", default=os.path.join(h.REPO, "build", "finders"), help="artifacts")
    ap.add_argument("--oxidized-python", help="a CPython 3.10 with oxidized_importer==0.6.0")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(h.REPO, "python"))
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (children inherit)")
    ap.add_argument("--json", help="default: bench/results/import-bench-X.Y-<utc>.json")
    ap.add_argument("--summarize", nargs="+", metavar="JSON", help="only: these side by side")
    args = ap.parse_args()
    args.configs = ["stock", *(c for c in args.configs.split(",") if c and c != "stock")]
    for c in args.configs:
        if c not in CONFIGS and c != "bare":
            ap.error(f"unknown config {c}")
    args.out, args.ingot_pythonpath = map(os.path.abspath, (args.out, args.ingot_pythonpath))
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
    os.makedirs(args.out, exist_ok=True)
    v = {"out": args.out, "ver": ver, "pythonpath": args.ingot_pythonpath}
    artifacts, skipped = prepare(args, v)
    base = [args.python, "-I", "-S"]
    cells, verified, stock_names = [], {}, None
    for name in (n for n in args.configs if n not in skipped):
        argv = [*base, SCRIPT]
        if name != "bare":
            runner = os.path.join(APPS, "runner.py")
            argv = [*base, runner, name.removesuffix("-pyonly"), SCRIPT]
            argv += [a.format(**v) for a in CONFIGS[name]]
        rec, why = verify(argv, name, stock_names)
        if why and name == "stock":
            raise SystemExit(f"stock does not run: {why}")
        if why:
            skipped[name] = why
            continue
        names = rec.pop("_names", None)
        stock_names = names if name == "stock" else stock_names
        verified[name] = rec
        after = None if name == "bare" else parse_result
        capture = os.path.join(args.out, "run")
        cells.append(
            h.Cell(name, argv, dict(os.environ), os.getcwd(), capture=capture, after=after)
        )
    for name, why in skipped.items():
        h.log(f"SKIP {name}: {why}")
    load_before = os.getloadavg()
    h.log(f"timing: {args.runs} rounds x {len(cells)} configurations after one warm-up run each")
    data = h.measure(cells, args.runs, warmup=1)
    load_after = os.getloadavg()
    strace = {}
    if not args.no_strace and shutil.which("strace"):
        for c in cells:
            strace[c.name] = h.strace_counts(c.argv, f"{args.out}/strace-{ver}-{c.name}.txt", c.env)
    stock = data["stock"]
    configs = {}
    for c in cells:
        d = data[c.name]
        if d["failures"]:
            raise SystemExit(f"{c.name}: {d['failures']} runs failed")
        wall, imp, cpu = d["wall_ns"], d.get("import_ns", []), d["cpu_s"]
        import_ratio = h.med(imp) and h.med(imp) / h.med(stock["import_ns"])
        configs[c.name] = {
            "argv": c.argv,
            "wall_ms_median": h.med(wall, 1e-6),
            "wall_ratio_vs_stock": h.med(wall) / h.med(stock["wall_ns"]),
            "wall_ratio_vs_stock_paired": h.med(h.paired(wall, stock["wall_ns"])),
            "import_ms_median": h.med(imp, 1e-6),
            "import_ratio_vs_stock": import_ratio,
            "setup_ms_median": h.med(d.get("setup_ns"), 1e-6),
            "cpu_s_median": h.med(cpu),
            "cpu_ratio_vs_stock": h.med(cpu) / h.med(stock["cpu_s"]),
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
    result = h.result_header(
        args.python,
        runs=args.runs,
        modules_in_script=modules,
        loadavg_before=load_before,
        loadavg_after=load_after,
        skipped=skipped,
        artifacts=artifacts,
        configs=configs,
    )
    print(f"### Import benchmark, {result['python_version']} ({args.python})\n")
    print(
        f"{len(cells)} configurations x {args.runs} rounds after one discarded warm-up run; "
        f"{modules} modules; load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
        f"after; niceness {os.nice(0)}.\n"
    )
    rows = []
    for n, c in configs.items():
        vr = c["verify"]
        row = [n, h.fmt(c["wall_ms_median"]), h.fmt(c["wall_ratio_vs_stock"], ".2f")]
        row += [h.fmt(c["import_ms_median"]), h.fmt(c["import_ratio_vs_stock"], ".2f")]
        row += [h.fmt(c["setup_ms_median"], ".2f"), h.fmt(c["cpu_s_median"] * 1e3, ".0f")]
        row += [h.fmt(c["cpu_ratio_vs_stock"], ".2f")]
        rows.append([*row, f"{vr['served']} ({vr['served_by']})" if vr else ""])
    rows += [[n, "skipped", *[""] * 6, why.splitlines()[0][:160]] for n, why in skipped.items()]
    head = ["config", "whole process ms", "vs stock", "import phase ms", "vs stock", "setup ms"]
    head += ["CPU ms", "vs stock", "served by the finder under test"]
    print("\n".join(h.table(head, rows)))
    if strace:
        base_sys = strace["stock"]["total"]
        rows = [
            [n, str(s["total"]), f"{s['total'] / base_sys:.2f}", str(s["errors"])]
            + [str(s["calls"].get(k, 0)) for k in STRACE]
            for n, s in strace.items()
        ]
        head = ["config", "syscalls", "vs stock", "failed", *STRACE]
        print("\n" + "\n".join(h.table(head, rows)))
    h.write_result(f"import-bench-{ver}", result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
