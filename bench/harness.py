"""What every benchmark here shares (the method: bench/README.md). Needs Python 3.11 (tomllib)."""

from __future__ import annotations

import dataclasses
import datetime
import glob
import hashlib
import json
import os
import pathlib
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Protocol

import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
TIME = "/usr/bin/time"  # GNU time: -f %M is its child's ru_maxrss in KiB
RUN_PATH = "/usr/local/bin:/usr/bin:/bin"
DASH = "\u2013"  # for what a table cell does not have
SPAWN_VAR = "BENCH_SPAWN_NS"  # set in a run's environment: CLOCK_MONOTONIC ns right before spawn


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def load_data() -> dict:
    """workloads.toml with its shorthands resolved: `like`, app defaults, per-workload targets."""
    with open(os.path.join(HERE, "workloads.toml"), "rb") as f:
        data = tomllib.load(f)
    for kind in ("apps", "peers", "workloads"):
        for name, d in data[kind].items():
            if "like" in d:
                data[kind][name] = {**data[kind][d["like"]], **d}  # "like": what it varies
    for name, a in data["apps"].items():
        script = "{work}/src/" + os.path.basename(a["files"][0])
        data["apps"][name] = {**data["app_defaults"], "script": script, **a}
    for d in data["workloads"].values():
        d.setdefault("subject", "ingot")  # the configuration targets are about, shown in bold
    data["targets"] = [
        {"workload": w, "subject": d["subject"], "baseline": b}
        | {"hot": t[0], "cold": t[1] if len(t) > 1 else None}
        for w, d in data["workloads"].items()
        for b, t in d.get("targets", {}).items()
    ]
    return data


# ---------------------------------------------------------------- machine and repository


def find_python(version: str = "3.11") -> str:
    """pyenv's newest CPython VERSION (--enable-shared, as the results), else pythonVERSION."""
    found = glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))
    found.sort(key=lambda p: [int(x) for x in re.findall(r"\d+", p.split("/versions/")[1])[:3]])
    path = found[-1] if found else shutil.which(f"python{version}")
    if not path:
        raise SystemExit(f"no python{version} under ~/.pyenv/versions or on PATH: pass --python")
    return path


def repo_state() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--", "python", "crates").strip()
    return {
        "repo_commit": git("rev-parse", "--short", "HEAD").strip(),
        "ingot_sources_dirty": bool(dirty),
    }


def result_header(python: str, **extra) -> dict:
    """What every result JSON starts with: the command, the machine, the stock Python."""
    with open("/proc/cpuinfo") as f:
        cpu = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), "")
    with open("/proc/meminfo") as f:
        mem = f.readline().split(":", 1)[1].strip()
    machine = {"uname": " ".join(platform.uname()), "cpu": cpu, "nproc": os.cpu_count(), "mem": mem}
    version = subprocess.run([python, "-VV"], capture_output=True, text=True).stdout.strip()
    return {
        "utc": utc_stamp(),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "machine": machine | repo_state(),
        "python": python,
        "python_version": version,
        "niceness": os.nice(0),
        **extra,
    }


def ingot_files(pythonpath: str) -> dict:
    """Size, time and sha256 of the launchers and compiled importers an ingot package holds."""
    out = {}
    for path in glob.glob(os.path.join(pythonpath, "ingot", "_ingot.*.so")) + glob.glob(
        os.path.join(pythonpath, "ingot", "_launcher", "ingot-launcher-*")
    ):
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.UTC).isoformat()
        out[os.path.basename(path)] = {
            "size": os.path.getsize(path),
            "mtime": mtime,
            "sha256": digest,
        }
    return out


def tree_size(path: str) -> int:
    """Apparent size of a file, or the sum over the regular files of a directory."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    files = (os.path.join(root, n) for root, _, names in os.walk(path) for n in names)
    return sum(os.path.getsize(p) for p in files if os.path.isfile(p) and not os.path.islink(p))


# ---------------------------------------------------------------- the page cache


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def drop_count() -> int:
    """How many times anyone has dropped the page cache since boot."""
    with open("/proc/vmstat") as f:
        return next((int(x.split()[1]) for x in f if x.startswith("drop_pagecache ")), -1)


def residency_after_drop(paths: list[str]) -> dict:
    """Bytes of each file still in the page cache right after drop_caches (util-linux fincore):
    pages that running processes have mapped stay, e.g. a libpython another Python uses."""
    drop_caches()
    out = {}
    for p in filter(os.path.exists, paths):
        r = subprocess.run(["fincore", "-bn", "-o", "RES", p], capture_output=True, text=True)
        resident = int(r.stdout) if r.returncode == 0 else None
        out[p] = {"resident": resident, "size": os.path.getsize(p)}
    return out


# ---------------------------------------------------------------- runs


@dataclasses.dataclass
class Run:
    wall_ns: int
    cpu_s: float  # user + sys of the process and the children it waited for
    status: int  # raw wait status
    maxrss_kib: int | None = None
    out: str = ""  # stdout and stderr, with Config.capture
    err: str = ""
    argv: list | None = None
    ru: object = None  # the resource usage from wait4


class Config(Protocol):
    """What measure() runs: one configuration. ``next_run(warm)``: the (argv, env) of its next
    run; ``after(run)``: a timed run's ``metrics``; ``prewarm``: an untimed run before every hot
    run; ``capture``: stdout and stderr go to PREFIX.out and PREFIX.err."""

    name: str
    cwd: str
    prewarm: bool
    capture: str | None
    metrics: tuple

    def next_run(self, warm: bool) -> tuple[list, dict]: ...
    def after(self, run: Run) -> dict: ...


def run_once(argv: list, env: dict, cwd: str, capture: str | None = None, rss_out=None) -> Run:
    """One run, spawn to reaped; with ``rss_out`` under GNU time, which writes the peak RSS."""
    if rss_out:
        argv = [TIME, "-f", "%M", "-o", rss_out, *argv]
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    outs = [capture + ".out", capture + ".err"] if capture else ["/dev/null", "/dev/null"]
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    actions += [(os.POSIX_SPAWN_OPEN, fd, p, flags, 0o600) for fd, p in zip((1, 2), outs)]
    old = os.getcwd()
    os.chdir(cwd)
    try:
        if SPAWN_VAR in env:
            env = env | {SPAWN_VAR: str(time.monotonic_ns())}
        t0 = time.perf_counter_ns()
        _, status, ru = os.wait4(os.posix_spawn(argv[0], argv, env, file_actions=actions), 0)
        t1 = time.perf_counter_ns()
    finally:
        os.chdir(old)
    run = Run(t1 - t0, ru.ru_utime + ru.ru_stime, status, argv=argv, ru=ru)
    if rss_out and status == 0:
        with open(rss_out) as f:
            run.maxrss_kib = int(f.read().split()[-1])
    if capture:
        with open(outs[0], errors="replace") as f, open(outs[1], errors="replace") as g:
            run.out, run.err = f.read(), g.read()
    return run


def guarded_run(cell: Config, cold: bool, stats: dict, rss_out: str | None = None) -> Run:
    """One run that no other process's drop_caches touched: hot, an untimed run first if the
    cache was dropped since this cell's last run (or always, with ``prewarm``); cold, sync and
    drop_caches right before. A run during which someone dropped the cache is repeated."""
    for _ in range(20):
        if not cold and (cell.prewarm or drop_count() != stats.get("_last_drop_count")):
            if not cell.prewarm and "_last_drop_count" in stats:
                n = stats.get("rewarmed_after_foreign_drop", 0)
                stats["rewarmed_after_foreign_drop"] = n + 1
            run_once(*cell.next_run(warm=True), cell.cwd)
        argv, env = cell.next_run(warm=False)
        if cold:
            drop_caches()
        before = drop_count()
        run = run_once(argv, env, cell.cwd, cell.capture, rss_out)
        stats["_last_drop_count"] = after = drop_count()
        if after == before:
            run.argv = argv
            return run
        stats["repeated_foreign_drop"] = stats.get("repeated_foreign_drop", 0) + 1
    raise SystemExit("another process dropped the page cache during 20 runs in a row")


def measure(cells: list, cold: bool, rounds: int, warmup: int = 0, rss_out=None) -> dict:
    """``warmup`` untimed runs of every cell, then ``rounds`` rounds; round i runs every cell once,
    starting at cell i % n. Per cell: its samples and its metrics' (None for a failed run)."""
    data: dict = {
        c.name: {"wall_ns": [], "cpu_s": [], "maxrss_kib": [], "failures": 0} for c in cells
    }
    data["_loadavg_per_round"] = []
    for _ in range(warmup):
        for c in cells:
            run_once(*c.next_run(warm=True), c.cwd)
            data[c.name]["_last_drop_count"] = drop_count()
    for i in range(rounds):
        data["_loadavg_per_round"].append(os.getloadavg()[0])
        for c in cells[i % (len(cells) or 1) :] + cells[: i % (len(cells) or 1)]:
            d = data[c.name]
            run = guarded_run(c, cold, d, rss_out)
            ok = run.status == 0
            d["failures"] += not ok
            d["wall_ns"].append(run.wall_ns if ok else None)
            d["cpu_s"].append(run.cpu_s if ok else None)
            d["maxrss_kib"].append(run.maxrss_kib if ok else None)
            got = c.after(run) if ok else {}
            for key in c.metrics:
                d.setdefault(key, []).append(got.get(key))
    return data


def med(xs: list | None, scale: float = 1.0) -> float | None:
    """The median of the samples that are there, times ``scale``; None without any."""
    xs = [x for x in xs or [] if x is not None]
    return statistics.median(xs) * scale if xs else None


def quartiles(xs: list) -> list | None:
    return statistics.quantiles(xs, n=4) if len(xs) > 1 else None


def paired(a: list, b: list, op: Callable = lambda x, y: x / y) -> list:
    """op(a, b) of the samples of the same round, where both ran."""
    return [op(x, y) for x, y in zip(a, b, strict=False) if x is not None and y is not None]


def ratios(xs: list, data: dict, key: str, baselines: list[str]) -> dict:
    """Per baseline: the median over rounds of (this / the baseline in the same round)."""
    out = {b: paired(xs, data[b].get(key, [])) for b in baselines if b in data}
    return {b: statistics.median(p) for b, p in out.items() if p}


def summarize(data: dict, baselines: list[str], metrics: tuple = ()) -> dict:
    """Per configuration: medians, quartiles, CPU, peak RSS, the same-round ratio to each
    baseline, and each of ``metrics`` (nanoseconds the child reported): median and ratios."""
    out = {}
    for n, d in data.items():
        if n.startswith("_"):
            continue
        walls = [w for w in d["wall_ns"] if w is not None]
        rss = [r for r in d.get("maxrss_kib", []) if r is not None]
        s = {
            "runs": len(walls),
            "failures": d["failures"],
            "repeated_foreign_drop": d.get("repeated_foreign_drop", 0),
            "rewarmed_after_foreign_drop": d.get("rewarmed_after_foreign_drop", 0),
            "wall_ms_median": med(walls, 1e-6),
            "wall_ms_quartiles": [q / 1e6 for q in quartiles(walls) or []] or None,
            "cpu_ms_median": med(d["cpu_s"], 1e3),
            "peak_rss_mib_median": med(rss, 1 / 1024),
            "ratio": ratios(d["wall_ns"], data, "wall_ns", baselines),
            "wrong_output": d.get("wrong_output", []).count(True),
            "metrics": {
                m: {"median_ms": med(d[m], 1e-6), "ratio": ratios(d[m], data, m, baselines)}
                for m in metrics
                if m in d and m != "wrong_output"
            },
        }
        s |= {k: d[k] for k in ("wall_ns", "cpu_s", *metrics) if k in d}
        if rss:
            s["maxrss_kib"] = d["maxrss_kib"]
        out[n] = s
    return out


def evaluate_targets(targets: list[dict], workloads: dict) -> list[dict]:
    """The subject's same-round ratio against each target of a measured workload."""
    out = []
    for t in targets:
        cf = workloads.get(t["workload"], {}).get("configs", {})
        if t["subject"] not in cf or t["baseline"] not in cf:
            continue
        row = {"workload": t["workload"], "subject": t["subject"], "baseline": t["baseline"]}
        for ph in ("hot", "cold"):
            got = (cf[t["subject"]].get(ph) or {"ratio": {}})["ratio"].get(t["baseline"])
            met = None if got is None or t.get(ph) is None else got <= t[ph]
            row |= {ph: got, f"{ph}_target": t.get(ph), f"{ph}_met": met}
        out.append(row)
    return out


# ---------------------------------------------------------------- report


def fmt(x, spec: str = ".1f") -> str:
    return DASH if x is None else format(x, spec)


def mib(n) -> str:
    return DASH if n is None else f"{n / 2**20:.1f}"


def secs(s) -> str:
    return DASH if s is None else (f"{s:.1f} s" if s < 100 else f"{s / 60:.1f} min")


def yes(v) -> str:
    return DASH if v is None else ("yes" if v else "**no**")


def table(head: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """A markdown table; the first ``left`` columns left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * left + "---:|" * (len(head) - left)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def targets_table(result: dict) -> list[str]:
    labels = result["labels"]
    rows = [
        [
            t["workload"],
            labels[t["subject"]],
            labels[t["baseline"]],
            fmt(t["hot"], ".2f"),
            f"<= {t['hot_target']:.2f}",
            yes(t["hot_met"]),
            fmt(t["cold"], ".2f"),
            f"<= {t['cold_target']:.2f}" if t["cold_target"] else DASH,
            yes(t["cold_met"]),
        ]
        for t in result["targets"]
    ]
    head = ["workload", "subject", "vs", "hot", "target", "met", "cold", "target", "met"]
    return ["#### Targets (same-round ratio, median over rounds)\n", *table(head, rows, 3)]


def write_result(name: str, result: dict, path: str | None = None) -> str:
    """bench/results/NAME-<utc>.json (or ``path``)."""
    path = path or os.path.join(RESULTS, f"{name}-{result['utc']}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    log(f"wrote {path}")
    return path


# ---------------------------------------------------------------- preparation


def build_env(work: str) -> dict:
    """A small fixed environment for builds: no PYTHON* variables from outside."""
    env = {
        "PATH": os.pathsep.join([os.path.join(work, "venv-tools", "bin"), RUN_PATH]),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }
    if os.environ.get("INGOT_RUNTIMES"):  # where ingot-runtime's runtime is (docs/runtimes.md)
        env["INGOT_RUNTIMES"] = os.environ["INGOT_RUNTIMES"]
    return env


def run_logged(cmd: list, log_path: str, env: dict, cwd: str, timeout: float | None) -> tuple:
    """cmd in its own process group, output to log_path; (exit status, None on timeout; seconds)."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + f"\n# cwd {cwd}\n")
        f.flush()
        t0 = time.perf_counter()
        out = {"stdout": f, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}
        p = subprocess.Popen(cmd, env=env, cwd=cwd, start_new_session=True, **out)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the build's own process group only
            p.wait()
            rc = None
        dt = time.perf_counter() - t0
        f.write(f"\n# exit {rc} after {dt:.1f} s\n")
    return rc, dt


def tail(path: str, n: int = 8) -> str:
    """The last lines a logged command wrote (run_logged's own footer left out)."""
    with open(path, errors="replace") as f:
        return "".join([x for x in f if x.strip() and not x.startswith("# exit ")][-n:])


def create_venvs(work: str, python: str, specs: dict, state: dict) -> None:
    """Each venv WORK/venv-NAME of ``specs`` (NAME -> requirements; []: --without-pip), unless it
    exists with the same requirements; ``state["venvs"]``: command, time, freeze and size, or why
    it could not be made (what needs it then fails to build, and says so)."""
    venvs = state.setdefault("venvs", {})
    for name, reqs in specs.items():
        path, rec = os.path.join(work, f"venv-{name}"), venvs.setdefault(f"venv-{name}", {})
        marker = os.path.join(path, "bench-requirements.json")
        want = {"python": os.path.realpath(python), "requirements": reqs}
        if not os.path.exists(marker) or json.loads(pathlib.Path(marker).read_text()) != want:
            shutil.rmtree(path, ignore_errors=True)
            log(f"creating {path} ({', '.join(reqs) if reqs else 'empty'})")
            cmds = [[python, "-m", "venv", *([] if reqs else ["--without-pip"]), path]]
            pip = [
                f"{path}/bin/python",
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
            ]
            cmds += [[*pip, *reqs]] if reqs else []
            t0 = time.perf_counter()
            for cmd in cmds:
                r = subprocess.run(cmd, env=build_env(work), capture_output=True, text=True)
                if r.returncode:
                    rec["failed"] = f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-800:]}"
                    log(f"venv-{name}: {rec['failed']}")
                    break
            else:
                with open(marker, "w") as f:
                    json.dump(want, f)
                rec.clear()
                rec |= {
                    "seconds": time.perf_counter() - t0,
                    "command": " && ".join(map(" ".join, cmds)),
                }
        if "failed" not in rec:
            freeze = [f"{path}/bin/python", "-m", "pip", "freeze", "--all"]
            rec["freeze"] = (
                subprocess.run(freeze, capture_output=True, text=True).stdout.split()
                if reqs
                else []
            )
            rec["size_bytes"] = tree_size(path)


def report_line(out: str) -> dict:
    """The child's own measurements: its last stdout line `bench NAME=INT ...`, as a dict."""
    lines = [x for x in out.splitlines() if x.startswith("bench ")]
    return {k: int(v) for k, v in (p.split("=") for p in lines[-1].split()[1:])} if lines else {}


def check_run(argv: list, env: dict, cwd: str, expect: str | None) -> str | None:
    """Run once; None if it exits 0 with the expected stdout (less `bench ` report lines) and
    nothing on stderr, else why not."""
    try:
        io = {"capture_output": True, "text": True, "stdin": subprocess.DEVNULL}
        r = subprocess.run(argv, env=env, cwd=cwd, timeout=300, **io)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    out = "".join(x for x in r.stdout.splitlines(True) if not x.startswith("bench "))
    if r.returncode != 0 or (expect is not None and out != expect) or r.stderr.strip():
        return f"exit {r.returncode}, stdout {r.stdout[-300:]!r}, stderr {r.stderr[-600:]!r}"
    return None


def load_state(work: str) -> dict:
    path = os.path.join(work, "builds.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def save_state(work: str, state: dict) -> None:
    path = os.path.join(work, "builds.json")
    with open(path + ".tmp", "w") as f:
        json.dump(state, f, indent=1)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------- traces


def strace_counts(argv: list, path: str, env: dict | None = None) -> dict:
    """One run under ``strace -c -f``: total calls and errors, calls and failures by name."""
    cmd = ["strace", "-c", "-f", "-o", path, *argv]
    subprocess.run(cmd, stdin=subprocess.DEVNULL, env=env, capture_output=True, check=True)
    calls, failed, total, errors = {}, {}, 0, 0
    with open(path) as f:
        for parts in (line.split() for line in f):
            if not parts or parts[0].startswith(("%", "-")):
                continue
            if parts[-1] == "total":  # % time, seconds, usecs/call, calls, [errors], total
                total, errors = int(parts[3]), int(parts[4]) if len(parts) > 5 else 0
                continue
            calls[parts[-1]] = int(parts[3])
            if len(parts) == 6:
                failed[parts[-1]] = int(parts[4])
    return {"total": total, "errors": errors, "calls": calls, "failed": failed, "file": path}
