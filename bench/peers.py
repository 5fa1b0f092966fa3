"""ingot executables against their peers: start-to-exit time of three workloads built by each tool.

    nice -n -15 python3 bench/peers.py                      # prepare (venvs, builds) + measure
    python3 bench/peers.py --no-measure                     # only prepare
    nice -n -15 python3 bench/peers.py --no-build           # only measure what builds.json lists
    build/peers/venv-plot/bin/python bench/plot.py bench/results/peers-<utc>.json   # docs/img/peers.png

Workloads: `hello` (bench/apps/hello.py prints one line), `import_stdlib` (bench/import_stdlib.py
imports 449 stdlib modules), `http` (httpie 3.2.4's `http --version`). Configurations, each one
workload's row:

    bare                 python -I -S -c pass (the stock interpreter doing nothing)
    stock                python -I -S SCRIPT (hello, import_stdlib)
    venv                 the app's venv: VENV/bin/python SCRIPT; VENV/bin/http --version
    ingot                ingot build SCRIPT / ingot build --console-script http
    pyinstaller-onedir   PyInstaller --onedir (size: the directory)
    pyinstaller-onefile  PyInstaller --onefile (unpacks to /tmp on every start)
    nuitka-onefile       Nuitka --onefile (skipped with the reason if the build exceeds --build-timeout)
    shiv                 shiv zipapp, shebang: an empty 3.11 venv's python -sE; cache under WORK/shiv-root

Preparation (peers_build.py) writes everything under --work (default build/peers/, git-ignored) and
records each build's command, wall time and output size in WORK/builds.json; builds are reused
unless --rebuild or their command changed. Every output is run once and must exit 0 with the
expected stdout and no stderr before it is timed.

Measurement, per workload: hot, --warmup discarded runs of every configuration, then --hot-runs
rounds; cold, --cold-runs rounds where every run is preceded by `sync` and
`echo 3 > /proc/sys/vm/drop_caches` (root). In both, a round runs every configuration once,
in an order rotated each round, so a ratio is the median over rounds of (config / baseline in the
same round). A run is posix_spawn to wait4 of the process, stdin/stdout/stderr on /dev/null, cwd an
empty directory, environment PATH/HOME/LANG=C.UTF-8 only. Another process's drop_caches (the
drop_pagecache counter of /proc/vmstat moved) during a run repeats the run, and since a hot
configuration's previous run adds a discarded warming run first (counted in the JSON).
Peak RSS: after the timed runs, --rss-runs more hot rounds (default 5, 0: none), each run under
`/usr/bin/time -f %M`, which reports its child's ru_maxrss from wait4; the median, in MiB. Not the
ru_maxrss this harness's own wait4 gets: a process's maxrss keeps the high-water mark of the memory
it had before exec, here this Python process's (posix_spawn and fork alike), so that of a small
program would read as the harness's. Size: an executable's file size, a directory's or a venv's
files (the installed environment).
Results: bench/results/peers-<utc>.json and a markdown report (stdout and WORK/peers-<utc>.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import peers_build as pb

HERE = pb.HERE
REPO = pb.REPO
DEFAULT_PYTHON = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")

ORDER = ["bare", "stock", "venv", "ingot", "ingot-baseline", "ingot-runtime", "pyinstaller-onedir", "pyinstaller-onefile", "nuitka-onefile", "shiv"]
LABELS = {
    "bare": "python -I -S -c pass",
    "stock": "python -I -S",
    "venv": "app venv",
    "ingot": "ingot",
    "ingot-baseline": "ingot (baseline)",
    "ingot-runtime": "ingot (runtime)",
    "pyinstaller-onedir": "PyInstaller onedir",
    "pyinstaller-onefile": "PyInstaller onefile",
    "nuitka-onefile": "Nuitka onefile",
    "shiv": "shiv",
}
EXPECT = {"hello": "hello, world\n", "import_stdlib": "", "http": "3.2.4\n"}
# (workload, baseline, hot target, cold target): ingot's ratio to baseline must be <= target
TARGETS = [
    ("hello", "bare", 1.00, None),
    ("import_stdlib", "stock", 0.80, 0.60),
    ("http", "venv", 0.70, 0.70),
    ("http", "pyinstaller-onedir", 0.50, 0.50),
]
BASELINES = {"hello": ["bare", "stock"], "import_stdlib": ["stock", "bare"], "http": ["venv", "pyinstaller-onedir"]}


def log(msg: str) -> None:
    pb.log(msg)


# ---------------------------------------------------------------- configurations

def configurations(work: str, python: str, workload: str, state: dict) -> tuple[dict, dict]:
    """name -> {argv, size_bytes, build_s, note}; and name -> reason for what is not there."""
    src = os.path.join(work, "src")
    script = {"hello": os.path.join(src, "hello.py"), "import_stdlib": os.path.join(src, "import_stdlib.py")}
    venv = os.path.join(work, "venv-app")
    venv_info = state.get("venvs", {}).get("venv-app", {})
    cfgs: dict[str, dict] = {}
    missing: dict[str, str] = {}
    cfgs["bare"] = {"argv": [python, "-I", "-S", "-c", "pass"], "size_bytes": None, "build_s": None, "expect": ""}
    if workload in script:
        cfgs["stock"] = {"argv": [python, "-I", "-S", script[workload]], "size_bytes": None, "build_s": None}
        cfgs["venv"] = {"argv": [os.path.join(venv, "bin", "python"), script[workload]],
                        "size_bytes": venv_info.get("size_bytes"), "build_s": venv_info.get("seconds")}
    else:
        cfgs["venv"] = {"argv": [os.path.join(venv, "bin", "http")] + pb.RUN_ARGS[workload],
                        "size_bytes": venv_info.get("size_bytes"), "build_s": venv_info.get("seconds")}
    for tool in pb.BUILT_TOOLS + ["ingot-baseline", "ingot-runtime"]:
        b = state.get("builds", {}).get(f"{workload}/{tool}")
        if not b:
            if tool not in ("ingot-baseline", "ingot-runtime"):  # only there when asked for
                missing[tool] = "not built"
        elif b["status"] != "ok":
            missing[tool] = f"{b['status']}: {b.get('reason', '')}"
        else:
            cfgs[tool] = {"argv": b["argv"], "size_bytes": b["size_bytes"], "build_s": b["build_s"]}
    return cfgs, missing


# ---------------------------------------------------------------- timing

DEVNULL_ACTIONS = [
    (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
    (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
    (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0),
]


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def resident_bytes(path: str) -> int | None:
    """Bytes of `path` in the page cache: mincore() over a fresh read-only mapping."""
    import ctypes

    try:
        size = os.path.getsize(path)
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    try:
        if size == 0:
            return 0
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            if libc.mincore(addr, size, vec) != 0:
                return None
            return sum(v & 1 for v in vec) * page
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def residency_after_drop(paths: list[str]) -> dict:
    """What drop_caches leaves in memory: pages that running processes (ours or other users')
    have mapped stay resident, e.g. a libpython that another Python process uses."""
    drop_caches()
    return {p: {"resident": resident_bytes(p), "size": os.path.getsize(p)} for p in paths if os.path.exists(p)}


def shared_files(python: str) -> list[str]:
    """The stock interpreter's shared objects and the system libraries its import of ssl maps."""
    code = ("import sysconfig, os, _ssl, _hashlib; print(os.path.join(sysconfig.get_config_var('LIBDIR'), "
            "sysconfig.get_config_var('INSTSONAME') or '')); print(_ssl.__file__)")
    out = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True).stdout.split()
    libs = []
    for so in out[1:]:
        for line in subprocess.run(["ldd", so], capture_output=True, text=True).stdout.splitlines():
            if "=>" in line and ("libssl" in line or "libcrypto" in line or "libc.so" in line):
                libs.append(line.split("=>")[1].split()[0])
    return [os.path.realpath(python)] + out + sorted(set(libs))


TIME = "/usr/bin/time"  # GNU time: -f %M is its child's ru_maxrss in KiB


def run_once(argv: list[str], env: dict, cwd: str, rss_out: str | None = None) -> tuple[int, float, int]:
    """(wall ns, user+sys CPU s, raw wait status) of one run, spawn to reaped. With ``rss_out``
    the run is TIME's, which writes the program's peak RSS there (read_rss); its wall and CPU
    time are then not the program's alone."""
    if rss_out:
        argv = [TIME, "-f", "%M", "-o", rss_out] + argv
    old = os.getcwd()
    os.chdir(cwd)
    try:
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=DEVNULL_ACTIONS)
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter_ns()
    finally:
        os.chdir(old)
    return t1 - t0, ru.ru_utime + ru.ru_stime, status


def read_rss(rss_out: str) -> int:
    """The peak RSS in KiB that TIME wrote (its last line) for a run of run_once."""
    with open(rss_out) as f:
        return int(f.read().split()[-1])


def drop_count() -> int:
    """How many times anyone has dropped the page cache since boot (/proc/vmstat drop_pagecache)."""
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("drop_pagecache "):
                return int(line.split()[1])
    return -1


def guarded_run(argv: list[str], env: dict, cwd: str, cold: bool, stats: dict,
                rss_out: str | None = None) -> tuple[int, float, int]:
    """One run that no other process's drop_caches touched. On a shared machine another
    benchmark's drop_caches would make a hot run cold (observed here: bench/materialize.py drops
    caches before each of its runs). Hot: if the page cache was dropped since this
    configuration's previous run, first run it once, discarded, to warm its files again; a run
    during which the cache was dropped is repeated (after a warming run). Cold: a run during which
    another drop happened is repeated. At most 20 tries."""
    for _ in range(20):
        if cold:
            drop_caches()
        elif drop_count() != stats.get("_last_drop_count"):
            if "_last_drop_count" in stats:
                stats["rewarmed_after_foreign_drop"] = stats.get("rewarmed_after_foreign_drop", 0) + 1
            run_once(argv, env, cwd)
        before = drop_count()
        wall, cpu, status = run_once(argv, env, cwd, rss_out)
        after = drop_count()
        stats["_last_drop_count"] = after
        if after == before:
            return wall, cpu, status
        stats["repeated_foreign_drop"] = stats.get("repeated_foreign_drop", 0) + 1
    raise SystemExit("the page cache was dropped by another process during 20 runs in a row; "
                     "measure when no other benchmark drops caches")


def measure(cfgs: dict, env: dict, cwd: str, rounds: int, warmup: int, cold: bool, rss_out: str | None = None) -> dict:
    """Runs per configuration; with ``rss_out`` (see run_once) their peak RSS too."""
    names = list(cfgs)
    data = {n: {"wall_ns": [], "cpu_s": [], "maxrss_kib": [], "failures": 0} for n in names}
    if not cold:
        for _ in range(warmup):
            for n in names:
                run_once(cfgs[n]["argv"], env, cwd)
                data[n]["_last_drop_count"] = drop_count()
    for i in range(rounds):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            wall, cpu, status = guarded_run(cfgs[n]["argv"], env, cwd, cold, data[n], rss_out)
            if status != 0:
                data[n]["failures"] += 1
                data[n]["wall_ns"].append(None)
                data[n]["cpu_s"].append(None)
                data[n]["maxrss_kib"].append(None)
                continue
            data[n]["wall_ns"].append(wall)
            data[n]["cpu_s"].append(cpu)
            data[n]["maxrss_kib"].append(read_rss(rss_out) if rss_out else None)
    return data


def summarize(data: dict, baselines: list[str]) -> dict:
    out = {}
    for n, d in data.items():
        walls = [w for w in d["wall_ns"] if w is not None]
        cpus = [c for c in d["cpu_s"] if c is not None]
        rss = [r for r in d.get("maxrss_kib", []) if r is not None]
        s = {
            "runs": len(walls),
            "failures": d["failures"],
            "repeated_foreign_drop": d.get("repeated_foreign_drop", 0),
            "rewarmed_after_foreign_drop": d.get("rewarmed_after_foreign_drop", 0),
            "wall_ms_median": statistics.median(walls) / 1e6 if walls else None,
            "wall_ms_quartiles": [q / 1e6 for q in statistics.quantiles(walls, n=4)] if len(walls) > 1 else None,
            "cpu_ms_median": statistics.median(cpus) * 1e3 if cpus else None,
            "peak_rss_mib_median": statistics.median(rss) / 1024 if rss else None,
            "ratio": {},
            "ratio_of_medians": {},
            "ratio_quartiles": {},
        }
        for b in baselines:
            if b not in data:
                continue
            pairs = [a / c for a, c in zip(d["wall_ns"], data[b]["wall_ns"]) if a is not None and c is not None]
            bw = [w for w in data[b]["wall_ns"] if w is not None]
            if pairs:
                s["ratio"][b] = statistics.median(pairs)
                s["ratio_quartiles"][b] = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else None
            if walls and bw:
                s["ratio_of_medians"][b] = statistics.median(walls) / statistics.median(bw)
        s["wall_ns"] = d["wall_ns"]
        s["cpu_s"] = d["cpu_s"]
        if rss:
            s["maxrss_kib"] = d["maxrss_kib"]
        out[n] = s
    return out


# ---------------------------------------------------------------- report

def fmt(x, spec=".1f", none="–") -> str:
    return none if x is None else format(x, spec)


def mib(n) -> str:
    return "–" if n is None else (f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB")


def secs(s) -> str:
    return "–" if s is None else (f"{s:.1f} s" if s < 100 else f"{s / 60:.1f} min")


def report(result: dict) -> str:
    lines = []
    m = result["machine"]
    lines.append(f"### Executables vs peers: run `{result['utc']}`\n")
    lines.append(f"{m['cpu']} x {m['nproc']}, {m['uname']}; repo at {m['repo_commit']}; "
                 f"hot: {result['warmup']} warm-up + {result['hot_runs']} rounds, cold: {result['cold_runs']} rounds "
                 f"(drop_caches before every run), peak RSS: {result.get('rss_runs', 0)} hot rounds under {TIME}; niceness {result['niceness']}; load average "
                 f"{result['loadavg_before'][0]:.2f} before, {result['loadavg_after'][0]:.2f} after.\n")
    res = result.get("residency_after_drop_caches", {})
    if res:
        before, after = res["before"], res.get("after", {})
        parts = []
        for p, b in before.items():
            a = after.get(p, {}).get("resident")
            if b["resident"] or a:
                parts.append(f"{os.path.basename(p)} {b['resident'] / 2**20:.1f} / {fmt(a and a / 2**20)} of "
                             f"{b['size'] / 2**20:.1f} MiB")
        lines.append("Resident right after drop_caches, before / after the runs (pages mapped by running "
                     "processes stay): " + ("; ".join(parts) if parts else "none of the watched files") + ".\n")
    guard = [(w, n, ph, c[ph]["repeated_foreign_drop"], c[ph]["rewarmed_after_foreign_drop"])
             for w, wr in result["workloads"].items() for n, c in wr["configs"].items()
             for ph in ("hot", "cold") if c.get(ph)]
    rep = sum(g[3] for g in guard)
    rew = sum(g[4] for g in guard)
    lines.append(f"Another process dropped the page cache during {rep} runs (repeated) and between "
                 f"{rew} hot runs (re-warmed first).\n")
    for w, wr in result["workloads"].items():
        bl = BASELINES[w]
        lines.append(f"#### {w}\n")
        head = ("| configuration | hot median ms | " + " | ".join(f"hot vs {LABELS[b]}" for b in bl)
                + " | cold median ms | " + " | ".join(f"cold vs {LABELS[b]}" for b in bl)
                + " | hot CPU ms | peak RSS MiB | size MiB | build time |")
        lines.append(head)
        lines.append("|---|" + "---:|" * (5 + 2 * len(bl) + 1))
        for n in ORDER:
            if n not in wr["configs"]:
                continue
            c = wr["configs"][n]
            h, k = c["hot"], c.get("cold")
            name = f"**{LABELS[n]}**" if n == "ingot" else LABELS[n]
            row = [name, fmt(h["wall_ms_median"])]
            row += [fmt(h["ratio"].get(b), ".2f") for b in bl]
            row += [fmt(k["wall_ms_median"]) if k else "–"]
            row += [fmt(k["ratio"].get(b), ".2f") if k else "–" for b in bl]
            rss = c.get("rss")
            row += [fmt(h["cpu_ms_median"]), fmt(rss and rss["peak_rss_mib_median"]),
                    fmt(c["size_bytes"] and c["size_bytes"] / 2**20), secs(c["build_s"])]
            if any(x["failures"] for x in [h] + ([k] if k else [])):
                row[0] += f" ({h['failures']}+{k['failures'] if k else 0} failed runs)"
            lines.append("| " + " | ".join(row) + " |")
        for n, why in wr["missing"].items():
            lines.append(f"| {LABELS[n]} | {why.splitlines()[0][:200]} |" + " |" * (5 + 2 * len(bl)))
        lines.append("")
    lines.append("#### Targets (ingot's same-round ratio, median over rounds)\n")
    lines.append("| workload | vs | hot | target | met | cold | target | met |")
    lines.append("|---|---|---:|---:|---|---:|---:|---|")
    for t in result["targets"]:
        lines.append(f"| {t['workload']} | {LABELS[t['baseline']]} | {fmt(t['hot'], '.2f')} | "
                     f"<= {t['hot_target']:.2f} | {yes(t['hot_met'])} | {fmt(t['cold'], '.2f')} | "
                     f"{'<= %.2f' % t['cold_target'] if t['cold_target'] else '–'} | {yes(t['cold_met'])} |")
    return "\n".join(lines) + "\n"


def yes(v) -> str:
    return "–" if v is None else ("yes" if v else "**no**")


def evaluate_targets(workloads: dict) -> list:
    out = []
    for w, base, hot_t, cold_t in TARGETS:
        if w not in workloads:
            continue
        cf = workloads[w]["configs"]
        if "ingot" not in cf or base not in cf:
            continue
        hot = cf["ingot"]["hot"]["ratio"].get(base)
        cold = cf["ingot"].get("cold", {}).get("ratio", {}).get(base) if cf["ingot"].get("cold") else None
        out.append({"workload": w, "baseline": base, "hot": hot, "hot_target": hot_t,
                    "hot_met": None if hot is None else hot <= hot_t,
                    "cold": cold, "cold_target": cold_t,
                    "cold_met": None if (cold is None or cold_t is None) else cold <= cold_t})
    return out


# ---------------------------------------------------------------- provenance

def machine_info() -> dict:
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with open("/proc/meminfo") as f:
        mem = f.readline().split(":", 1)[1].strip()
    repo = pb.repo_state()
    return {"uname": " ".join(platform.uname()), "cpu": cpu, "nproc": os.cpu_count(), "mem": mem,
            "repo_commit": repo["commit"], "ingot_sources_dirty": repo["ingot_sources_dirty"]}


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(REPO, "build", "peers"))
    ap.add_argument("--python", default=DEFAULT_PYTHON, help="stock CPython 3.11 (venvs, baselines)")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(REPO, "python"),
                    help="directory holding the ingot package with its compiled _ingot and launcher")
    ap.add_argument("--baseline-ingot", metavar="PYTHONPATH",
                    help="another such directory (e.g. main before a change, pip install --target DIR): "
                         "adds the configuration ingot-baseline, built and measured like ingot")
    ap.add_argument("--runtime", metavar="VERSION",
                    help="adds the configuration ingot-runtime: ingot build --python VERSION (a runtime "
                         "in the store, docs/runtimes.md), built and measured like ingot")
    ap.add_argument("--workloads", default=",".join(pb.WORKLOADS))
    ap.add_argument("--tools", default=",".join(pb.BUILT_TOOLS))
    ap.add_argument("--build-timeout", type=float, default=1800.0, help="seconds per build (default 1800)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild even if builds.json has the output")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-measure", action="store_true")
    ap.add_argument("--hot-runs", type=int, default=40)
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--rss-runs", type=int, default=5,
                    help="hot rounds run under /usr/bin/time for the peak RSS (0: none)")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness before timing (root: e.g. -15)")
    ap.add_argument("--json", help="default: bench/results/peers-<utc>.json")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    workloads = [w for w in args.workloads.split(",") if w]
    tools = [t for t in args.tools.split(",") if t]
    for w in workloads:
        if w not in pb.WORKLOADS:
            ap.error(f"unknown workload {w}")
    optional = {"ingot-baseline": args.baseline_ingot, "ingot-runtime": args.runtime}
    for tool, wanted in optional.items():
        if wanted and tool not in tools:
            tools.insert(tools.index("ingot") + 1 if "ingot" in tools else 0, tool)
    for t in tools:
        if t not in pb.BUILT_TOOLS and not optional.get(t):
            ap.error(f"unknown tool {t}" + (" (it needs --baseline-ingot or --runtime)" if t in optional else ""))
    pythonpaths = {"ingot": os.path.abspath(args.ingot_pythonpath),
                   "ingot-runtime": os.path.abspath(args.ingot_pythonpath), "runtime-version": args.runtime}
    if args.baseline_ingot:
        pythonpaths["ingot-baseline"] = os.path.abspath(args.baseline_ingot)
    os.makedirs(work, exist_ok=True)
    run_cwd = os.path.join(work, "run-cwd")
    os.makedirs(run_cwd, exist_ok=True)
    state = pb.load_state(work)

    if not args.no_build:
        pb.ensure_venvs(work, args.python, state)
        pb.save_state(work, state)
        pb.build_all(work, workloads, tools, args.build_timeout, pythonpaths,
                     state, EXPECT, run_cwd, args.rebuild)
        pb.save_state(work, state)
    if args.no_measure:
        return 0

    if args.nice:
        os.nice(args.nice)
    env = pb.build_env(work)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    cold = not args.no_cold
    if cold and os.geteuid() != 0:
        log("not root: no cold-cache runs")
        cold = False
    rss_runs = args.rss_runs
    if rss_runs and not os.access(TIME, os.X_OK):
        log(f"no {TIME} (GNU time): no peak RSS")
        rss_runs = 0
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    watch = shared_files(args.python) + [b["output"] for k, b in sorted(state.get("builds", {}).items())
                                         if k.endswith("/ingot") and b.get("status") == "ok"]
    residency = {"before": residency_after_drop(watch)} if cold else {}
    load_before = os.getloadavg()
    results = {}
    for w in workloads:
        cfgs, missing = configurations(work, args.python, w, state)
        cfgs = {n: cfgs[n] for n in ORDER if n in cfgs and not (n in optional and not optional[n])}
        for n in list(cfgs):
            why = pb.check_run(cfgs[n]["argv"], env, run_cwd, cfgs[n].get("expect", EXPECT[w]))
            if why:
                log(f"{w}/{n}: does not run right, left out: {why}")
                missing[n] = f"does not run right: {why}"
                del cfgs[n]
        log(f"{w}: hot, {args.warmup} warm-up + {args.hot_runs} rounds x {len(cfgs)} configurations")
        hot = summarize(measure(cfgs, env, run_cwd, args.hot_runs, args.warmup, cold=False), BASELINES[w])
        cold_res = None
        if cold:
            log(f"{w}: cold, {args.cold_runs} rounds x {len(cfgs)} configurations (drop_caches before each run)")
            cold_res = summarize(measure(cfgs, env, run_cwd, args.cold_runs, 0, cold=True), BASELINES[w])
        rss_res = None
        if rss_runs:
            log(f"{w}: peak RSS, {rss_runs} rounds x {len(cfgs)} configurations under {TIME}")
            rss_res = summarize(measure(cfgs, env, run_cwd, rss_runs, 0, cold=False,
                                        rss_out=os.path.join(work, "maxrss.txt")), [])
        results[w] = {
            "configs": {n: {"argv": cfgs[n]["argv"], "size_bytes": cfgs[n]["size_bytes"],
                            "build_s": cfgs[n]["build_s"], "hot": hot[n],
                            "cold": cold_res[n] if cold_res else None,
                            "rss": ({k: rss_res[n][k] for k in ("runs", "failures", "peak_rss_mib_median", "maxrss_kib")
                                     if k in rss_res[n]} if rss_res else None)} for n in cfgs},
            "missing": missing,
        }
        for n in cfgs:
            log(f"  {w}/{n}: hot {hot[n]['wall_ms_median']:.1f} ms"
                + (f", cold {cold_res[n]['wall_ms_median']:.1f} ms" if cold_res and cold_res[n]['wall_ms_median'] else "")
                + (f", peak RSS {rss_res[n]['peak_rss_mib_median']:.1f} MiB" if rss_res and rss_res[n]['peak_rss_mib_median'] else ""))
    load_after = os.getloadavg()
    if cold:
        residency["after"] = residency_after_drop(watch)

    result = {
        "utc": stamp,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "machine": machine_info(),
        "python": args.python,
        "python_version": subprocess.run([args.python, "-VV"], capture_output=True, text=True).stdout.strip(),
        "niceness": os.nice(0),
        "hot_runs": args.hot_runs, "cold_runs": args.cold_runs if cold else 0, "warmup": args.warmup,
        "rss_runs": rss_runs,
        "loadavg_before": load_before, "loadavg_after": load_after,
        "ingot": {"pythonpath": args.ingot_pythonpath, **pb.ingot_files(args.ingot_pythonpath)},
        "ingot_baseline": ({"pythonpath": args.baseline_ingot, **pb.ingot_files(args.baseline_ingot)}
                           if args.baseline_ingot else None),
        "venvs": {k: {kk: vv for kk, vv in v.items()} for k, v in state.get("venvs", {}).items()},
        "builds": state.get("builds", {}),
        "targets_spec": TARGETS,
        "labels": LABELS,
        "baselines": BASELINES,
        "workloads": results,
        "residency_after_drop_caches": residency,
    }
    result["targets"] = evaluate_targets(results)
    text = report(result)
    print(text)
    json_path = args.json or os.path.join(HERE, "results", f"peers-{stamp}.json")
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
    md_path = os.path.join(work, f"peers-{stamp}.md")
    with open(md_path, "w") as f:
        f.write(text)
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
