"""The one driver of bench/: builds what the chosen workloads of bench/workloads.toml need with
every peer, checks it, and measures start-to-exit time, peak RSS, size and what the children
report (commands and method: bench/README.md)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

import harness as h

DATA = h.load_data()
TITLES = {"peers": "Executables vs peers", "finders": "stdlib imports per finder"}
STRACE = ["openat", "newfstatat", "read", "mmap"]


def expand(template, v: dict):
    """Fill a template of workloads.toml: "{key}" of a list value is spliced into a list."""
    if isinstance(template, list):
        out = []
        for item in template:
            m = re.fullmatch(r"\{(\w+)\}", item)
            value = v.get(m.group(1)) if m else None
            out += expand(value, v) if isinstance(value, list) else [expand(item, v)]
        return out
    # "{input}" is not a variable: Config.next_run fills it in for every run
    return re.sub(
        r"\{(\w+)\}", lambda m: m[0] if m[1] == "input" else expand(v[m[1]], v), str(template)
    )


def variables(args, app: str, peer: str) -> dict:
    a, p = DATA["apps"][app], DATA["peers"][peer]
    venv = p.get("venv", a["venv"])
    return {
        **a,
        "work": args.work,
        "bench": h.HERE,
        "python": args.python,
        "ingot_pythonpath": args.ingot_pythonpath,
        "baseline_ingot": args.baseline_ingot or "",
        "runtime": args.runtime or "",
        "cross": args.cross or "",
        "cross_root": args.cross_root or "",
        "run_dir": args.run_dir,
        "name": app,
        "peer": peer,
        "dir": os.path.join(args.work, p.get("same_build", peer), app),
        "venv": os.path.join(args.work, "venv-" + venv),
        "tools": os.path.join(args.work, "venv-" + a["tools"]),
        "requirements": DATA["venvs"][venv],
        "site": os.path.join(args.work, "src", f"shiv-site-{app}"),
        "build_args": p.get("build_args", []),
    }


def copy(rel: str, dst: str) -> None:
    src = os.path.join(h.HERE, rel)
    if os.path.isdir(src):
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)


def stage_sources(work: str, apps: set) -> None:
    """Copy the apps' files into WORK/src, and each shiv site-packages directory's files."""
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    for app in apps:
        a = DATA["apps"][app]
        for rel in a["files"]:
            copy(rel, os.path.join(src, os.path.basename(rel)))
        if a.get("site"):
            site = os.path.join(src, f"shiv-site-{app}")
            shutil.rmtree(site, ignore_errors=True)
            os.makedirs(site)
            for rel in a["site"]:
                copy(rel, os.path.join(site, os.path.basename(rel)))


def run_env(work: str) -> dict:
    return dict(h.build_env(work), PATH=h.RUN_PATH)


def build(args, app: str, tool: str, state: dict) -> None:
    """Build ``app`` with ``tool`` unless builds.json has it with the same command and pins; a
    build must then run right (as the app's first workload runs it)."""
    p, v, builds = DATA["peers"][tool], variables(args, app, tool), state.setdefault("builds", {})
    key, cmd, output = (
        f"{app}/{tool}",
        expand(p["build"], v),
        expand(p.get("output", p["run"][0]), v),
    )
    pins = DATA["venvs"][DATA["apps"][app]["tools"]]
    old = builds.get(key)
    same = old and (old.get("command"), old.get("tools"), old.get("status")) == (cmd, pins, "ok")
    if same and not args.rebuild and os.path.exists(output):
        h.log(f"{key}: reusing {output} (built in {old['build_s']:.1f} s)")
        return
    cwd = v["dir"]
    os.makedirs(cwd, exist_ok=True)
    if p.get("fresh_build_cache"):  # a first build: nothing from an earlier one
        shutil.rmtree(expand(p["fresh_build_cache"], v), ignore_errors=True)
    if os.path.isdir(output):
        shutil.rmtree(output)
    elif os.path.exists(output):
        os.unlink(output)
    extra_env = {k: expand(x, v) for k, x in p.get("env", {}).items()}
    log_path = os.path.join(args.work, "logs", f"{app}-{tool}.log")
    h.log(f"{key}: building ({' '.join(cmd)})")
    load = os.getloadavg()[0]
    env = dict(h.build_env(args.work), **extra_env)
    rc, dt = h.run_logged(cmd, log_path, env, cwd, args.build_timeout)
    wname = next(n for n, w in DATA["workloads"].items() if w["app"] == app)
    config = Config(args, wname, tool)
    rec = {
        "command": cmd,
        "env": extra_env,
        "cwd": cwd,
        "build_s": dt,
        "log": log_path,
        "tools": pins,
        "output": output,
        "argv": config.argv,
        "loadavg_before": load,
        "repo": h.repo_state(),
    }
    if "PYTHONPATH" in extra_env:
        rec.update(h.ingot_files(extra_env["PYTHONPATH"]))
    if rc is None:
        why = f"build did not finish within the {args.build_timeout:.0f} s timeout"
        rec.update(status="skipped", reason=why)
    elif rc != 0 or not os.path.exists(output):
        rec.update(status="failed", reason=f"build exited {rc}: {h.tail(log_path)}")
    elif why := config.check():
        rec.update(status="failed", reason=f"built, but does not run right: {why}")
    else:
        rec.update(status="ok", size_bytes=h.tree_size(output))
    builds[key] = rec
    size = rec.get("size_bytes")
    done = f"{size / 2**20:.1f} MiB" if size else rec.get("reason", "")[:300]
    h.log(f"{key}: {rec['status']} in {dt:.1f} s, {done}")
    h.save_state(args.work, state)


def resolve(argv: list) -> list:
    """posix_spawn does not search PATH: a bare program name (taskset) becomes its path."""
    return [argv[0] if "/" in argv[0] else shutil.which(argv[0]) or argv[0], *argv[1:]]


class Config:
    """One configuration of a workload: its argv, size, build time, and (own_home) its HOME,
    working directory and input file under the run directory."""

    def __init__(self, args, wname: str, name: str, size=None, build_s=None):
        self.w, p = DATA["workloads"][wname], DATA["peers"][name]
        self.name, self.size_bytes, self.build_s = name, size, build_s
        v = variables(args, self.w["app"], name)
        args_ = [] if p.get("no_args") else self.w.get("args", [])
        self.argv = resolve(expand(p["run"] + args_, v))
        self.warm = resolve(expand(p["warm_run"], v)) if "warm_run" in p else None
        self.before, self.prepare = (
            expand(p[k], v) if k in p else None for k in ("before_run", "prepare")
        )
        self.env = run_env(args.work) | {k: expand(x, v) for k, x in p.get("run_env", {}).items()}
        self.check_env = {k: expand(x, v) for k, x in self.w.get("check_env", {}).items()}
        self.metrics = tuple(self.w.get("metrics", [])) + (
            ("wrong_output",) if "input" in self.w else ()
        )
        self.capture = os.path.join(args.work, "run") if "metrics" in self.w else None
        self.prewarm = "warm_run" in p or self.w.get("prewarm", False)
        self.expected_output: str | None = None  # of the input file: check_configs
        if "startup_ns" in self.metrics:  # the child measures from the harness's clock at spawn
            self.env[h.SPAWN_VAR] = ""
        self.cwd = os.path.join(args.work, "run-cwd")
        base = os.path.join(args.run_dir, "rows", name)
        self.file = os.path.join(base, "in", "input.py")
        if self.w.get("own_home"):
            self.env["HOME"] = os.path.join(base, "home")
            self.cwd = os.path.join(base, "cwd")
        self.first_root = os.path.join(args.run_dir, "first-caches", name)
        self.fresh_cache, self.counter = p.get("fresh_cache", False), 0
        self.expect = p.get("expect", self.w.get("expect"))
        for d in (self.cwd, os.path.dirname(self.file), self.env["HOME"]):
            os.makedirs(d, exist_ok=True)
        self.input = None
        if "input" in self.w:
            with open(os.path.join(h.HERE, self.w["input"])) as f:
                self.input = f.read()

    def call(self, cmd: list) -> str | None:
        """Run a preparation command outside the timing; None, or why it failed."""
        r = subprocess.run(cmd, env=self.env, cwd=self.cwd, capture_output=True, text=True)
        return f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-600:]}" if r.returncode else None

    def next_run(self, warm: bool = False) -> tuple[list, dict]:
        """Outside the timing: a fresh unformatted input; for a first start, an empty cache; the
        peer's ``before_run`` command; for an untimed warming run, its ``warm_run``."""
        env = dict(self.env)
        if warm and self.warm:
            return self.warm, env
        if self.before and (why := self.call(self.before)):
            raise SystemExit(f"{self.name}: {why}")
        if self.input is not None:
            with open(self.file, "w") as f:  # same inode, new mtime and content: black reformats
                f.write(self.input)
        if self.fresh_cache:
            self.counter += 1
            env["INGOT_CACHE_DIR"] = os.path.join(self.first_root, f"{self.counter:05d}")
        return [a.replace("{input}", self.file) for a in self.argv], env

    def check(self) -> str | None:
        """The peer's ``prepare``, then one run as checked: None if it runs right, else why."""
        if self.prepare and (why := self.call(self.prepare)):
            return why
        argv, env = self.next_run()
        return h.check_run(argv, env | self.check_env, self.cwd, self.expect)

    def output(self) -> str | None:
        if self.input is None:
            return None
        with open(self.file) as f:
            return f.read()

    def after(self, run: h.Run) -> dict:
        got = h.report_line(run.out)
        return got | ({"wrong_output": self.output() != self.expected_output} if self.input else {})


def workload_configs(args, wname: str) -> list[str]:
    """The workload's configurations, and the optional peers of --tools that vary one of them."""
    listed = DATA["workloads"][wname]["configs"]
    return listed + [t for t in args.optional if DATA["peers"][t].get("like") in listed]


def configurations(args, wname: str, state: dict, wanted: set) -> tuple[dict, dict]:
    """name -> Config of what is there to measure; name -> why not, for the rest."""
    w = DATA["workloads"][wname]
    app = w["app"]
    cfgs, missing = {}, {}
    for name in workload_configs(args, wname):
        p = DATA["peers"][name]
        if name not in wanted:
            continue
        b = state.get("builds", {}).get(f"{app}/{p.get('same_build', name)}")
        if "build" not in p and "same_build" not in p:
            venv = state.get("venvs", {}).get("venv-" + DATA["apps"][app]["venv"], {})
            sized = name == "venv"
            size, secs = (venv.get("size_bytes"), venv.get("seconds")) if sized else (None, None)
            cfgs[name] = Config(args, wname, name, size, secs)
        elif not b:
            missing[name] = "not built"
        elif b["status"] != "ok":
            missing[name] = f"{b['status']}: {b.get('reason', '')}"
        else:
            cfgs[name] = Config(args, wname, name, b["size_bytes"], b["build_s"])
    return cfgs, missing


def check_configs(cfgs: dict, missing: dict) -> None:
    """Run every configuration once; leave out what does not run right. The expected content
    of the input file afterwards: what the first configuration (the venv) wrote."""
    expected = None
    for n, c in list(cfgs.items()):
        why = c.check()
        if not why and c.input is not None:
            out = c.output()
            expected = out if expected is None else expected
            if out == c.input or out != expected:
                why = "the input file is not formatted as the first configuration formats it"
        if why:
            h.log(f"{n}: does not run right, left out: {why}")
            missing[n] = f"does not run right: {why}"
            del cfgs[n]
    for c in cfgs.values():
        c.expected_output = expected


def measure_workload(args, wname: str, cfgs: dict, cold: bool) -> dict:
    w = DATA["workloads"][wname]

    def run(phase_cold: bool, rounds: int, warmup: int, rss_out=None) -> dict:
        data = h.measure(list(cfgs.values()), phase_cold, rounds, warmup, rss_out)
        baselines = w["baselines"] if not rss_out else []
        summary = h.summarize(data, baselines, tuple(w.get("metrics", ())))
        summary["_loadavg_per_round"] = data["_loadavg_per_round"]
        return summary

    n = len(cfgs)
    h.log(f"{wname}: hot, {args.warmup} warm-up + {args.hot_runs} rounds x {n} configurations")
    hot = run(False, args.hot_runs, args.warmup)
    cold_res = rss_res = None
    if cold:
        h.log(f"{wname}: cold, {args.cold_runs} rounds x {n} configurations (drop_caches)")
        cold_res = run(True, args.cold_runs, 0)
    if args.rss_runs:
        h.log(f"{wname}: peak RSS, {args.rss_runs} rounds x {n} configurations under {h.TIME}")
        rss_res = run(False, args.rss_runs, 0, os.path.join(args.work, "maxrss.txt"))
    shutil.rmtree(os.path.join(args.run_dir, "first-caches"), ignore_errors=True)
    keys = ("runs", "failures", "peak_rss_mib_median", "maxrss_kib")
    configs = {}
    for name, c in cfgs.items():
        rss = {k: rss_res[name][k] for k in keys if k in rss_res[name]} if rss_res else None
        r = configs[name] = {
            "argv": c.argv,
            "size_bytes": c.size_bytes,
            "build_s": c.build_s,
            "hot": hot[name],
            "cold": cold_res[name] if cold_res else None,
            "rss": rss,
        }
        if args.strace:
            path = os.path.join(args.work, "strace", f"{wname}-{name}.txt")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            argv, env = c.next_run()
            r["strace"] = h.strace_counts(argv, path, env)
        h.log(
            f"  {wname}/{name}: hot {h.fmt(r['hot']['wall_ms_median'])} ms, cold "
            f"{h.fmt(r['cold'] and r['cold']['wall_ms_median'])} ms, peak RSS "
            f"{h.fmt(rss and rss['peak_rss_mib_median'])} MiB"
        )
    load = {"hot": hot["_loadavg_per_round"], "cold": cold_res and cold_res["_loadavg_per_round"]}
    return {"configs": configs, "loadavg_per_round": load}


def report(result: dict) -> str:
    m, labels = result["machine"], result["labels"]
    lines = [
        f"### {TITLES.get(result['group'], result['group'])}: run `{result['utc']}`\n",
        f"{m['cpu']} x {m['nproc']}, {m['uname']}; repo at {m['repo_commit']}; hot: "
        f"{result['warmup']} warm-up + {result['hot_runs']} rounds, cold: {result['cold_runs']} "
        f"rounds (drop_caches before every run), peak RSS: {result['rss_runs']} hot rounds under "
        f"{h.TIME}; niceness {result['niceness']}; load average "
        f"{result['loadavg_before'][0]:.2f} before, {result['loadavg_after'][0]:.2f} after.\n",
    ]
    res = result["residency_after_drop_caches"]
    parts = [
        f"{os.path.basename(p)} {h.mib(b['resident'])} / "
        f"{h.mib(res['after'].get(p, {}).get('resident'))} of {h.mib(b['size'])} MiB"
        for p, b in res.get("before", {}).items()
        if b["resident"] or res["after"].get(p, {}).get("resident")
    ]
    if res:
        lines.append(
            "Resident right after drop_caches, before / after the runs (pages mapped by running "
            "processes stay): " + ("; ".join(parts) or "none of the watched files") + ".\n"
        )
    configs = [c for wr in result["workloads"].values() for c in wr["configs"].values()]
    runs = [c[ph] for c in configs for ph in ("hot", "cold") if c.get(ph)]
    rep = sum(r["repeated_foreign_drop"] for r in runs)
    rew = sum(r["rewarmed_after_foreign_drop"] for r in runs)
    lines.append(
        f"Another process dropped the page cache during {rep} runs (repeated) and between "
        f"{rew} hot runs (re-warmed first).\n"
    )
    for w, wr in result["workloads"].items():
        bl = result["baselines"][w]
        head = ["configuration", "hot median ms", *[f"hot vs {labels[b]}" for b in bl]]
        head += ["cold median ms", *[f"cold vs {labels[b]}" for b in bl]]
        head += ["hot CPU ms", "peak RSS MiB", "size MiB", "build time"]
        rows = []
        for n, c in wr["configs"].items():
            hot, cold, rss = c["hot"], c["cold"] or {}, c["rss"] or {}
            subject = n == DATA["workloads"][w]["subject"]
            name = f"**{labels[n]}**" if subject else labels[n]
            bad = hot["failures"] + cold.get("failures", 0)
            bad += hot.get("wrong_output", 0) + cold.get("wrong_output", 0)
            if bad:
                name += f" ({bad} failed or wrong runs)"
            row = [name, h.fmt(hot["wall_ms_median"])]
            row += [h.fmt(hot["ratio"].get(b), ".2f") for b in bl]
            row += [h.fmt(cold.get("wall_ms_median"))]
            row += [h.fmt(cold.get("ratio", {}).get(b), ".2f") for b in bl]
            row += [h.fmt(hot["cpu_ms_median"]), h.fmt(rss.get("peak_rss_mib_median"))]
            rows.append([*row, h.mib(c["size_bytes"]), h.secs(c["build_s"])])
        for n, why in wr["missing"].items():
            said = why.strip().splitlines() or [""]  # what failed, and its last words
            text = said[0] + (f" ... {said[-1]}" if len(said) > 1 else "")
            rows.append([labels[n], text[:240]] + [""] * (len(head) - 2))
        lines += [f"#### {w}\n", *h.table(head, rows), ""]
        metrics = DATA["workloads"][w].get("metrics", [])
        traced = any("strace" in c for c in wr["configs"].values())
        if not metrics and not traced:
            continue
        head = ["configuration", *(f"{m} ms{f', vs {labels[bl[0]]}'}" for m in metrics)]
        head += ["system calls", "failed", *STRACE] if traced else []
        rows = []
        for n, c in wr["configs"].items():
            got = [c["hot"]["metrics"].get(m) or {"median_ms": None, "ratio": {}} for m in metrics]
            row = [
                labels[n],
                *(
                    f"{h.fmt(x['median_ms'], '.2f')}, {h.fmt(x['ratio'].get(bl[0]), '.2f')}"
                    for x in got
                ),
            ]
            t = c.get("strace", {"calls": {}})
            row += [str(t.get(k, "")) for k in ("total", "errors")] if traced else []
            rows.append(row + [str(t["calls"].get(k, "")) for k in STRACE if traced])
        title = "hot medians of what the child reports" + (
            ", system calls of one run" if traced else ""
        )
        lines += [f"{w}: {title}\n", *h.table(head, rows), ""]
    if result["targets"]:
        lines += h.targets_table(result)
    return "\n".join(lines) + "\n"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", default=os.path.join(h.REPO, "build", "peers"))
    ap.add_argument("--run-dir", default="/var/tmp/ingot-bench", help="HOMEs, inputs, caches")
    ap.add_argument("--python", help="stock CPython 3.11 (default: pyenv's newest, else PATH)")
    ap.add_argument("--ingot-pythonpath", default=os.path.join(h.REPO, "python"))
    ap.add_argument("--baseline-ingot", metavar="PYTHONPATH", help="adds ingot-baseline")
    ap.add_argument("--runtime", metavar="VERSION", help="adds ingot-runtime")
    ap.add_argument(
        "--cross", metavar="ARCH", help="with --runtime: adds ingot-cross (built for ARCH)"
    )
    ap.add_argument(
        "--cross-root", metavar="DIR", help="ARCH's loader and libraries for qemu-user (a root)"
    )
    ap.add_argument(
        "--workloads", default="hello,import_stdlib,http", help=f"of {','.join(DATA['workloads'])}"
    )
    built = [n for n, p in DATA["peers"].items() if "build" in p and not p.get("optional")]
    ap.add_argument("--tools", default=",".join(built), help="peers to build (and measure)")
    ap.add_argument("--configs", help="build and measure only these configurations")
    ap.add_argument("--build-timeout", type=float, default=1800.0, help="seconds per build")
    ap.add_argument("--rebuild", action="store_true", help="even if builds.json has the output")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-measure", action="store_true")
    ap.add_argument("--hot-runs", type=int, default=40)
    ap.add_argument("--cold-runs", type=int, default=15, help="0: none")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rss-runs", type=int, default=5, help="hot rounds under /usr/bin/time")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (root: e.g. -15)")
    ap.add_argument("--strace", action="store_true", help="also: system calls of one run each")
    ap.add_argument(
        "--json", help="default: bench/results/GROUP-<utc>.json (several: JSON.GROUP.json)"
    )
    args = ap.parse_args()
    args.work, args.run_dir = os.path.abspath(args.work), os.path.abspath(args.run_dir)
    args.ingot_pythonpath = os.path.abspath(args.ingot_pythonpath)
    if args.baseline_ingot:
        args.baseline_ingot = os.path.abspath(args.baseline_ingot)
    args.python = args.python or h.find_python("3.11")
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.tools = [t for t in args.tools.split(",") if t]
    args.tools += [
        t
        for t, on in [
            ("ingot-baseline", args.baseline_ingot),
            ("ingot-runtime", args.runtime),
            ("ingot-cross", args.runtime and args.cross),
            (
                "ingot-compress-start",
                args.runtime and "ingot-compress-start" in (args.configs or "").split(","),
            ),
        ]
        if on
    ]
    for w in args.workloads:
        if w not in DATA["workloads"]:
            ap.error(f"unknown workload {w}")
    for t in args.tools:
        if t not in DATA["peers"]:
            ap.error(f"unknown peer {t}")
    args.optional = [t for t in args.tools if DATA["peers"][t].get("optional")]
    return args


def main() -> int:
    args = parse_args()
    for d in (args.work, os.path.join(args.work, "run-cwd"), args.run_dir):
        os.makedirs(d, exist_ok=True)
    state = h.load_state(args.work)
    apps = list(dict.fromkeys(DATA["workloads"][w]["app"] for w in args.workloads))
    wanted = {n for n, p in DATA["peers"].items() if not p.get("optional")} | set(args.optional)
    if args.configs:
        wanted &= set(args.configs.split(","))
    if not args.no_build:
        # the builds the chosen workloads' configurations need, in the order they list them
        tools = {DATA["peers"][t].get("same_build", t) for t in args.tools}
        chosen = [
            (DATA["workloads"][n]["app"], t)
            for n in args.workloads
            for t in workload_configs(args, n)
            if t in wanted
        ]
        needed = dict.fromkeys((a, DATA["peers"][t].get("same_build", t)) for a, t in chosen)
        builds = [(a, t) for a, t in needed if t in tools and "build" in DATA["peers"][t]]
        venvs = {DATA["apps"][a]["venv"] for a in apps}
        venvs |= {DATA["peers"][t]["venv"] for _, t in chosen if "venv" in DATA["peers"][t]}
        if any("{tools}" in " ".join(DATA["peers"][t]["build"]) for _, t in builds):
            venvs |= {DATA["apps"][a]["tools"] for a in apps}
        if any(t == "shiv" for _, t in builds):
            venvs.add("bare")  # the interpreter in shiv's shebang
        if any(DATA["workloads"][w].get("group", "peers") == "peers" for w in args.workloads):
            venvs.add("plot")  # bench/plot.py's matplotlib
        h.create_venvs(args.work, args.python, {n: DATA["venvs"][n] for n in venvs}, state)
        h.save_state(args.work, state)
        stage_sources(args.work, set(apps))
        for app, tool in builds:
            build(args, app, tool, state)
    if args.no_measure:
        return 0
    if args.nice:
        os.nice(args.nice)
    cold = args.cold_runs > 0 and not args.no_measure
    if cold and os.geteuid() != 0:
        h.log("not root: no cold-cache runs")
        cold = False
    if args.rss_runs and not os.access(h.TIME, os.X_OK):
        h.log(f"no {h.TIME} (GNU time): no peak RSS")
        args.rss_runs = 0
    groups: dict = {}
    for wname in args.workloads:
        groups.setdefault(DATA["workloads"][wname].get("group", "peers"), []).append(wname)
    for group, wnames in groups.items():
        result = measure_group(args, group, wnames, state, wanted, cold)
        path = args.json and (args.json if len(groups) == 1 else f"{args.json}.{group}.json")
        h.write_result(group, result, path)
    return 0


def shared_files(python: str) -> list[str]:
    """The stock interpreter, its libpython and _ssl, and the system libraries _ssl maps."""
    code = "import sysconfig as s, _ssl; print(s.get_config_var('LIBDIR'), s.get_config_var("
    code += "'INSTSONAME'), _ssl.__file__)"
    r = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True)
    libdir, soname, ssl = r.stdout.split()
    ldd = subprocess.run(["ldd", ssl], capture_output=True, text=True).stdout.splitlines()
    libs = {
        x.split("=>")[1].split()[0]
        for x in ldd
        if "=>" in x and re.search(r"libssl|libcrypto|libc\.so", x)
    }
    return [os.path.realpath(python), os.path.join(libdir, soname), ssl, *sorted(libs)]


def measure_group(args, group: str, wnames: list, state: dict, wanted: set, cold: bool) -> dict:
    pp, base = args.ingot_pythonpath, args.baseline_ingot
    result = h.result_header(
        args.python,
        group=group,
        hot_runs=args.hot_runs,
        cold_runs=args.cold_runs if cold else 0,
        warmup=args.warmup,
        rss_runs=args.rss_runs,
        ingot={"pythonpath": pp, **h.ingot_files(pp)},
        ingot_baseline=base and {"pythonpath": base, **h.ingot_files(base)},
        venvs=state.get("venvs", {}),
        builds=state.get("builds", {}),
        targets_spec=[
            [t["workload"], t["baseline"], t["hot"], t["cold"]]
            for t in DATA["targets"]
            if t["workload"] in wnames
        ],
        labels={n: p["label"] for n, p in DATA["peers"].items()},
        baselines={w: DATA["workloads"][w]["baselines"] for w in wnames},
        workloads={},
        targets=[],
    )
    if args.no_measure:
        return result
    builds = sorted(state.get("builds", {}).items())
    ingots = [b["output"] for k, b in builds if k.endswith("/ingot") and b.get("status") == "ok"]
    shared = shared_files(args.python) + ingots
    residency = {"before": h.residency_after_drop(shared)} if cold else {}
    result["loadavg_before"] = os.getloadavg()
    for wname in wnames:
        cfgs, missing = configurations(args, wname, state, wanted)
        check_configs(cfgs, missing)
        result["workloads"][wname] = measure_workload(args, wname, cfgs, cold)
        result["workloads"][wname]["missing"] = missing
    result["loadavg_after"] = os.getloadavg()
    if cold:
        residency["after"] = h.residency_after_drop(shared)
    result["residency_after_drop_caches"] = residency
    result["targets"] = h.evaluate_targets(
        [t for t in DATA["targets"] if t["workload"] in wnames], result["workloads"]
    )
    text = report(result)
    print(text, flush=True)
    with open(os.path.join(args.work, f"{group}-{result['utc']}.md"), "w") as f:
        f.write(text)
    return result


if __name__ == "__main__":
    sys.exit(main())
