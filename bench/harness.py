"""The bench harness: what every benchmark here shares.

Process timing (posix_spawn to wait4; rounds that run every configuration once in a rotated
order; warm-up runs; hot and cold page cache; a run another process's drop_caches touched is
repeated), peak RSS (under GNU time), summaries (medians, quartiles, same-round ratios to
baselines), targets, markdown tables, the machine and repository, JSON results in bench/results/,
and the preparation helpers (venvs, logged builds, check runs). Needs Python 3.11 (tomllib).
"""

from __future__ import annotations

import dataclasses
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
TIME = "/usr/bin/time"  # GNU time: -f %M is its child's ru_maxrss in KiB
RUN_PATH = "/usr/local/bin:/usr/bin:/bin"
DASH = "\u2013"  # for what a table cell does not have


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def load_data() -> dict:
    with open(os.path.join(HERE, "workloads.toml"), "rb") as f:
        return tomllib.load(f)


# ---------------------------------------------------------------- machine and repository


def find_python(version: str = "3.11") -> str:
    """pyenv's newest CPython VERSION (built with --enable-shared, as the results were), else
    pythonVERSION on PATH."""
    found = glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))
    found.sort(key=lambda p: [int(x) for x in re.findall(r"\d+", p.split("/versions/")[1])[:3]])
    path = found[-1] if found else shutil.which(f"python{version}")
    if not path:
        raise SystemExit(f"no python{version} under ~/.pyenv/versions or on PATH: pass --python")
    return path


def python_version(python: str) -> str:
    return subprocess.run([python, "-VV"], capture_output=True, text=True).stdout.strip()


def repo_state() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--", "python", "crates").strip()
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip(),
        "ingot_sources_dirty": bool(dirty),
    }


def machine_info() -> dict:
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = f.readline().split(":", 1)[1].strip()
    repo = repo_state()
    return {
        "uname": " ".join(platform.uname()),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "mem": mem,
        "repo_commit": repo["commit"],
        "ingot_sources_dirty": repo["ingot_sources_dirty"],
    }


def file_info(path: str) -> dict:
    import hashlib

    try:
        st = os.stat(path)
    except OSError:
        return {"path": path, "missing": True}
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    mtime = datetime.datetime.fromtimestamp(st.st_mtime, datetime.UTC).isoformat()
    return {"path": path, "size": st.st_size, "mtime": mtime, "sha256": h.hexdigest()}


def ingot_files(pythonpath: str) -> dict:
    """The launcher and the compiled importer an ingot package directory holds."""
    package = os.path.join(pythonpath, "ingot")
    return {
        "launcher": file_info(os.path.join(package, "_launcher", "ingot-launcher-3.11")),
        "_ingot": file_info(os.path.join(package, "_ingot.cpython-311-x86_64-linux-gnu.so")),
    }


def tree_size(path: str) -> int:
    """Apparent size of a file, or the sum over the regular files of a directory."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total


# ---------------------------------------------------------------- the page cache


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def drop_count() -> int:
    """How many times anyone has dropped the page cache since boot (/proc/vmstat)."""
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("drop_pagecache "):
                return int(line.split()[1])
    return -1


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
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
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
    return {
        p: {"resident": resident_bytes(p), "size": os.path.getsize(p)}
        for p in paths
        if os.path.exists(p)
    }


# ---------------------------------------------------------------- runs


@dataclasses.dataclass
class Run:
    wall_ns: int
    cpu_s: float  # user + sys of the process and the children it waited for
    status: int  # raw wait status
    maxrss_kib: int | None = None
    out: str = ""  # stdout and stderr, with Cell.capture
    err: str = ""
    argv: list | None = None


@dataclasses.dataclass
class Cell:
    """One configuration as measured: a run executes ``argv`` in ``cwd`` with exactly ``env``.
    ``prepare(warm)`` (optional) returns the (argv, env) of the next run, e.g. after writing an
    input file; ``after(run)`` (optional) checks a timed run and returns extra samples to record.
    ``prewarm``: every hot run is preceded by an untimed one (else only after a foreign drop).
    ``capture``: a path prefix; stdout and stderr go to PREFIX.out and PREFIX.err (else
    /dev/null)."""

    name: str
    argv: list
    env: dict
    cwd: str
    cold: bool = False
    prewarm: bool = False
    capture: str | None = None
    prepare: Callable | None = None
    after: Callable | None = None

    def next_run(self, warm: bool) -> tuple[list, dict]:
        return self.prepare(warm) if self.prepare else (self.argv, self.env)


def run_once(argv: list, env: dict, cwd: str, capture: str | None = None, rss_out=None) -> Run:
    """One run, spawn to reaped. With ``rss_out`` it runs under TIME, which writes the program's
    peak RSS there (its wall and CPU time are then not the program's alone): not the ru_maxrss
    of our own wait4, which keeps the high-water mark of the memory the child had before exec,
    this Python process's."""
    if rss_out:
        argv = [TIME, "-f", "%M", "-o", rss_out, *argv]
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    outs = [capture + ".out", capture + ".err"] if capture else ["/dev/null", "/dev/null"]
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    actions += [
        (os.POSIX_SPAWN_OPEN, fd, path, flags, 0o600) for fd, path in zip((1, 2), outs, strict=True)
    ]
    old = os.getcwd()
    os.chdir(cwd)
    try:
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter_ns()
    finally:
        os.chdir(old)
    run = Run(t1 - t0, ru.ru_utime + ru.ru_stime, status, argv=argv)
    if rss_out and status == 0:
        with open(rss_out) as f:
            run.maxrss_kib = int(f.read().split()[-1])
    if capture:
        with open(outs[0], errors="replace") as f:
            run.out = f.read()
        with open(outs[1], errors="replace") as f:
            run.err = f.read()
    return run


def guarded_run(cell: Cell, stats: dict, rss_out: str | None = None) -> Run:
    """One run that no other process's drop_caches touched (another benchmark's drop would make
    a hot run cold). Hot: if the page cache was dropped since this cell's previous run (or
    always, with ``prewarm``), first an untimed run to warm its files; cold: sync and drop_caches
    right before the run. A run during which someone dropped the cache is repeated."""
    for _ in range(20):
        if not cell.cold and (cell.prewarm or drop_count() != stats.get("_last_drop_count")):
            if not cell.prewarm and "_last_drop_count" in stats:
                n = stats.get("rewarmed_after_foreign_drop", 0)
                stats["rewarmed_after_foreign_drop"] = n + 1
            argv, env = cell.next_run(warm=True)
            run_once(argv, env, cell.cwd)
        argv, env = cell.next_run(warm=False)
        if cell.cold:
            drop_caches()
        before = drop_count()
        run = run_once(argv, env, cell.cwd, cell.capture, rss_out)
        after = drop_count()
        stats["_last_drop_count"] = after
        if after == before:
            run.argv = argv
            return run
        stats["repeated_foreign_drop"] = stats.get("repeated_foreign_drop", 0) + 1
    raise SystemExit(
        "the page cache was dropped by another process during 20 runs in a row; "
        "measure when no other benchmark drops caches"
    )


def measure(
    cells: list[Cell],
    rounds: int,
    warmup: int = 0,
    rss_out: str | None = None,
    stride: int = 1,
    alternate: bool = False,
    before_round: Callable | None = None,
) -> dict:
    """``warmup`` untimed runs of every cell, then ``rounds`` rounds; round i runs every cell once,
    starting at cell (i * stride) % n (reversed on odd rounds with ``alternate``). Returns, per
    cell, its samples (None for a failed run) and the extra samples its ``after`` returned."""
    data = {c.name: {"wall_ns": [], "cpu_s": [], "maxrss_kib": [], "failures": 0} for c in cells}
    data["_loadavg_per_round"] = []

    def warm() -> None:
        for _ in range(warmup):
            for c in cells:
                argv, env = c.next_run(warm=True)
                run_once(argv, env, c.cwd)
                data[c.name]["_last_drop_count"] = drop_count()

    warm()
    for i in range(rounds):
        if before_round and before_round():
            warm()  # it waited: warm again
        data["_loadavg_per_round"].append(os.getloadavg()[0])
        k = (i * stride) % len(cells)
        order = cells[k:] + cells[:k]
        if alternate and i % 2:
            order.reverse()
        for c in order:
            d = data[c.name]
            run = guarded_run(c, d, rss_out)
            ok = run.status == 0
            d["failures"] += not ok
            d["wall_ns"].append(run.wall_ns if ok else None)
            d["cpu_s"].append(run.cpu_s if ok else None)
            d["maxrss_kib"].append(run.maxrss_kib if ok else None)
            if ok and c.after:
                for key, value in (c.after(run) or {}).items():
                    d.setdefault(key, []).append(value)
    return data


def quartiles(xs: list) -> list | None:
    return statistics.quantiles(xs, n=4) if len(xs) > 1 else None


def paired(a: list, b: list, op: Callable = lambda x, y: x / y) -> list:
    """op(a, b) of the samples of the same round, where both ran."""
    return [op(x, y) for x, y in zip(a, b, strict=False) if x is not None and y is not None]


def summarize(data: dict, baselines: list[str]) -> dict:
    """Per configuration: medians, quartiles, CPU, peak RSS, and its ratio to each baseline:
    the median over rounds of (this / baseline in the same round)."""
    out = {}
    for n, d in data.items():
        if n.startswith("_"):
            continue
        walls = [w for w in d["wall_ns"] if w is not None]
        cpus = [c for c in d["cpu_s"] if c is not None]
        rss = [r for r in d.get("maxrss_kib", []) if r is not None]
        s = {
            "runs": len(walls),
            "failures": d["failures"],
            "repeated_foreign_drop": d.get("repeated_foreign_drop", 0),
            "rewarmed_after_foreign_drop": d.get("rewarmed_after_foreign_drop", 0),
            "wall_ms_median": statistics.median(walls) / 1e6 if walls else None,
            "wall_ms_quartiles": [q / 1e6 for q in quartiles(walls) or []] or None,
            "cpu_ms_median": statistics.median(cpus) * 1e3 if cpus else None,
            "peak_rss_mib_median": statistics.median(rss) / 1024 if rss else None,
            "ratio": {},
            "ratio_of_medians": {},
            "ratio_quartiles": {},
        }
        if "wrong_output" in d:
            s["wrong_output"] = d["wrong_output"].count(True)
        for b in baselines:
            if b not in data:
                continue
            pairs = paired(d["wall_ns"], data[b]["wall_ns"])
            bw = [w for w in data[b]["wall_ns"] if w is not None]
            if pairs:
                s["ratio"][b] = statistics.median(pairs)
                s["ratio_quartiles"][b] = quartiles(pairs)
            if walls and bw:
                s["ratio_of_medians"][b] = statistics.median(walls) / statistics.median(bw)
        s["wall_ns"] = d["wall_ns"]
        s["cpu_s"] = d["cpu_s"]
        if rss:
            s["maxrss_kib"] = d["maxrss_kib"]
        out[n] = s
    return out


def evaluate_targets(targets: list[dict], workloads: dict) -> list[dict]:
    """ingot's same-round ratio against each target of a measured workload."""
    out = []
    for t in targets:
        cf = workloads.get(t["workload"], {}).get("configs", {})
        if "ingot" not in cf or t["baseline"] not in cf:
            continue
        hot = cf["ingot"]["hot"]["ratio"].get(t["baseline"])
        cold_res = cf["ingot"].get("cold")
        cold = cold_res["ratio"].get(t["baseline"]) if cold_res else None
        cold_t = t.get("cold")
        out.append(
            {
                "workload": t["workload"],
                "baseline": t["baseline"],
                "hot": hot,
                "hot_target": t["hot"],
                "hot_met": None if hot is None else hot <= t["hot"],
                "cold": cold,
                "cold_target": cold_t,
                "cold_met": None if cold is None or cold_t is None else cold <= cold_t,
            }
        )
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
            labels.get(t["baseline"], t["baseline"]),
            fmt(t["hot"], ".2f"),
            f"<= {t['hot_target']:.2f}",
            yes(t["hot_met"]),
            fmt(t["cold"], ".2f"),
            f"<= {t['cold_target']:.2f}" if t["cold_target"] else DASH,
            yes(t["cold_met"]),
        ]
        for t in result["targets"]
    ]
    head = ["workload", "vs", "hot", "target", "met", "cold", "target", "met"]
    return ["#### Targets (ingot's same-round ratio, median over rounds)\n", *table(head, rows, 2)]


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
    """Run cmd in its own process group, stdout+stderr to log_path; (exit status or None on
    timeout, seconds)."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + f"\n# cwd {cwd}\n")
        f.flush()
        t0 = time.perf_counter()
        p = subprocess.Popen(
            cmd,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
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
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def pip_freeze(python: str) -> list[str]:
    r = subprocess.run([python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def create_venvs(work: str, python: str, specs: dict, state: dict) -> None:
    """Create each venv WORK/venv-NAME of ``specs`` (NAME -> requirements; []: --without-pip)
    unless it exists with the same requirements (a marker file inside); record in
    ``state["venvs"]`` its command, time, pip freeze and size."""
    env = build_env(work)
    for name, reqs in specs.items():
        path = os.path.join(work, f"venv-{name}")
        marker = os.path.join(path, "bench-requirements.json")
        want = {"python": os.path.realpath(python), "requirements": reqs}
        if os.path.exists(marker):
            with open(marker) as f:
                if json.load(f) == want:
                    continue
        shutil.rmtree(path, ignore_errors=True)
        log(f"creating {path} ({', '.join(reqs) if reqs else 'empty'})")
        t0 = time.perf_counter()
        cmd = [python, "-m", "venv", *([] if reqs else ["--without-pip"]), path]
        subprocess.run(cmd, check=True, env=env)
        pip = [os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q"]
        pip += ["--disable-pip-version-check", *reqs]
        if reqs:
            subprocess.run(pip, check=True, env=env)
        dt = time.perf_counter() - t0
        with open(marker, "w") as f:
            json.dump(want, f)
        command = " ".join(cmd) + (" && " + " ".join(pip) if reqs else "")
        state.setdefault("venvs", {})[f"venv-{name}"] = {
            "seconds": dt,
            "command": command,
            "note": "pip's cache was warm",
        }
    for name, reqs in specs.items():
        path = os.path.join(work, f"venv-{name}")
        venv = state.setdefault("venvs", {}).setdefault(f"venv-{name}", {})
        venv["freeze"] = pip_freeze(os.path.join(path, "bin", "python")) if reqs else []
        venv["size_bytes"] = tree_size(path)


def check_run(argv: list, env: dict, cwd: str, expect: str | None) -> str | None:
    """Run once; None if it exits 0 with the expected stdout (and no stderr), else why not."""
    try:
        r = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if r.returncode != 0 or (expect is not None and r.stdout != expect) or r.stderr.strip():
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


def other_processes(pattern: re.Pattern) -> list[str]:
    """Command lines of other processes that match ``pattern``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if pattern.search(cmd):
            found.append(f"{pid}: {cmd[:200]}")
    return found


def wait_for_others(pattern: re.Pattern, stats: dict) -> bool:
    """Wait while another process matching ``pattern`` runs; True if we waited."""
    waited = False
    while others := other_processes(pattern):
        if not waited:
            log(f"waiting: another benchmark is running: {others}")
        seen = stats.setdefault("paused_for", [])
        seen.extend(o for o in others if o not in seen)
        time.sleep(15)
        stats["paused_s"] = stats.get("paused_s", 0.0) + 15
        waited = True
    return waited


# ---------------------------------------------------------------- probes and traces


def spawn_probe(argv: list, env: dict, cwd: str, t0: int) -> dict:
    """Runs a phase probe (bench/apps/*_probe.py print ``probe SPAWN START IMPORTED DONE`` in
    CLOCK_MONOTONIC ns on stderr) started at ``t0``; its phases in ns and its CPU seconds."""
    r, w = os.pipe()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, w, 2),
            (os.POSIX_SPAWN_CLOSE, r),
        ]
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    finally:
        os.chdir(old)
    _, status, ru = os.wait4(pid, 0)
    t3 = time.monotonic_ns()
    os.close(w)
    with os.fdopen(r) as f:
        err = f.read()
    line = [x for x in err.splitlines() if x.startswith("probe ")]
    if status != 0 or not line:
        raise SystemExit(f"probe {argv}: status {status}, stderr {err!r}")
    spawn, start, imported, done = (int(x) for x in line[-1].split()[1:])
    assert spawn == t0
    return {
        "startup": start - t0,
        "imports": imported - start,
        "main": done - imported,
        "exit": t3 - done,
        "total": t3 - t0,
        "user": ru.ru_utime,
        "sys": ru.ru_stime,
    }


def parse_importtime(text: str) -> dict:
    """module -> (self us, cumulative us) from -X importtime output."""
    out = {}
    for line in text.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, cum, name = (x.strip() for x in line[len("import time:") :].split("|"))
            out[name] = (int(self_us), int(cum))
    return out


def strace_counts(argv: list, path: str, env: dict | None = None, cwd: str | None = None) -> dict:
    """One run under ``strace -c -f -o path``: the total calls and errors, the calls and failures
    by name."""
    subprocess.run(
        ["strace", "-c", "-f", "-o", path, *argv],
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    calls, failed, total, errors = {}, {}, 0, 0
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith(("%", "-")):
                continue
            if parts[-1] == "total":  # % time, seconds, usecs/call, calls, [errors], total
                total, errors = int(parts[3]), int(parts[4]) if len(parts) > 5 else 0
                continue
            calls[parts[-1]] = int(parts[3])
            if len(parts) == 6:
                failed[parts[-1]] = int(parts[4])
    return {"total": total, "errors": errors, "calls": calls, "failed": failed, "file": path}
