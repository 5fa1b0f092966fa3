"""ingot executables against their peers: start-to-exit time, peak RSS and size of the workloads
of bench/workloads.toml, each built by every peer.

    nice -n -15 python3 bench/peers.py                      # prepare (venvs, builds) + measure
    python3 bench/peers.py --no-measure                     # only prepare
    nice -n -15 python3 bench/peers.py --no-build           # only measure what builds.json lists
    nice -n -15 python3 bench/peers.py --workloads black-version,black-format,black-format-nocache
    nice -n -15 python3 bench/peers.py --workloads http --no-build --no-measure --probe

Default workloads: hello, import_stdlib, http (results: bench/results/peers-<utc>.json, which
bench/plot.py draws); the black-* workloads write black-<utc>.json, numpy numpy-<utc>.json.
Everything is built under --work (default build/peers/, git-ignored); WORK/builds.json records
each build's command, wall time and output size, and a build is reused unless --rebuild or its
command changed. Every output is run once and must exit 0 with the expected stdout and no stderr
before it is timed.

Measurement, per workload (bench/harness.py): hot, --warmup discarded runs of every configuration,
then --hot-runs rounds; cold (root), --cold-runs rounds where every run is preceded by `sync` and
`echo 3 > /proc/sys/vm/drop_caches`. A round runs every configuration once, in an order rotated
each round, so a ratio is the median over rounds of (config / baseline in the same round). A run
is posix_spawn to wait4, stdio on /dev/null, cwd an empty directory, environment PATH, HOME,
LANG=C.UTF-8 only. Peak RSS: --rss-runs more hot rounds under `/usr/bin/time -f %M`; the median.
Size: an executable's file size, a directory's or a venv's files.

--probe: where the time of a workload with a phase probe (http, black-*) goes: the probe script
run by the app's venv and built by ingot, phase by phase in interleaved rounds, and -X importtime
of the app's imports in both import systems.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import harness as h

DATA = h.load_data()
DEFAULT_WORKLOADS = "hello,import_stdlib,http"
GROUP_TITLES = {"peers": "Executables vs peers", "black": "black", "numpy": "numpy"}


def expand(template, v: dict):
    """Fill a template of workloads.toml: "{key}" of a list value is spliced into a list."""
    if isinstance(template, list):
        out = []
        for item in template:
            m = re.fullmatch(r"\{(\w+)\}", item)
            value = v.get(m.group(1)) if m else None
            out += expand(value, v) if isinstance(value, list) else [expand(item, v)]
        return out
    return re.sub(r"\{(\w+)\}", lambda m: expand(v[m.group(1)], v), str(template))


def variables(args, app: str, peer: str) -> dict:
    a = DATA["apps"][app]
    build_peer = DATA["peers"][peer].get("same_build", peer)
    return {
        **a,
        "work": args.work,
        "bench": h.HERE,
        "python": args.python,
        "ingot_pythonpath": args.ingot_pythonpath,
        "baseline_ingot": args.baseline_ingot or "",
        "runtime": args.runtime or "",
        "name": app,
        "dir": os.path.join(args.work, build_peer, app),
        "venv": os.path.join(args.work, "venv-" + a["venv"]),
        "tools": os.path.join(args.work, "venv-" + a.get("tools", "tools")),
        "requirements": DATA["venvs"][a["venv"]],
        "site": os.path.join(args.work, "src", f"shiv-site-{app}"),
        "input": "",
    }


def stage_sources(work: str, apps: set) -> None:
    """Copy the apps' files into WORK/src, and each shiv site-packages directory's files."""
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    for app in apps:
        a = DATA["apps"][app]
        for rel in a["files"]:
            dst = os.path.join(src, os.path.basename(rel))
            if os.path.isdir(os.path.join(h.HERE, rel)):
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(os.path.join(h.HERE, rel), dst)
            else:
                shutil.copyfile(os.path.join(h.HERE, rel), dst)
        if a.get("site"):
            site = os.path.join(src, f"shiv-site-{app}")
            shutil.rmtree(site, ignore_errors=True)
            os.makedirs(site)
            for rel in a["site"]:
                shutil.copyfile(
                    os.path.join(h.HERE, rel), os.path.join(site, os.path.basename(rel))
                )


def check_workload(app: str) -> dict:
    """The workload a build of ``app`` is checked with: its first one without an input file."""
    return next(w for w in DATA["workloads"].values() if w["app"] == app and "input" not in w)


def run_env(work: str, home: str | None = None) -> dict:
    env = dict(h.build_env(work), PATH=h.RUN_PATH)
    if home:
        env["HOME"] = home
    return env


def build_all(args, apps: list[str], tools: list[str], state: dict) -> None:
    stage_sources(args.work, set(apps))
    builds = state.setdefault("builds", {})
    check_cwd = os.path.join(args.work, "run-cwd")
    for app in apps:
        for tool in tools:
            p = DATA["peers"][tool]
            if "build" not in p:
                continue
            v = variables(args, app, tool)
            key, cmd, output = f"{app}/{tool}", expand(p["build"], v), expand(p["output"], v)
            pins = DATA["venvs"][DATA["apps"][app].get("tools", "tools")]
            old = builds.get(key)
            if (
                not args.rebuild
                and old
                and old.get("status") == "ok"
                and os.path.exists(output)
                and (old.get("command"), old.get("tools")) == (cmd, pins)
            ):
                log_reuse = f"{key}: reusing {output} (built in {old['build_s']:.1f} s)"
                h.log(log_reuse)
                continue
            cwd = os.path.dirname(v["dir"] + "/")
            os.makedirs(cwd, exist_ok=True)
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
            argv = expand(p["run"], v) + check_workload(app).get("args", [])
            rec = {
                "command": cmd,
                "env": extra_env,
                "cwd": cwd,
                "build_s": dt,
                "log": log_path,
                "tools": pins,
                "output": output,
                "argv": argv,
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
            else:
                w = check_workload(app)
                argv = expand(p["run"], v) + w.get("args", [])
                why = h.check_run(argv, run_env(args.work), check_cwd, w.get("expect"))
                if why:
                    rec.update(status="failed", reason=f"built, but does not run right: {why}")
                else:
                    rec.update(status="ok", size_bytes=h.tree_size(output))
            builds[key] = rec
            size = rec.get("size_bytes")
            h.log(
                f"{key}: {rec['status']} in {dt:.1f} s, "
                + (f"{size / 2**20:.1f} MiB" if size else rec.get("reason", "")[:300])
            )
            h.save_state(args.work, state)


class Config:
    """One configuration of a workload: its argv, size, build time, and (own_home) its HOME,
    working directory and input file under the run directory."""

    def __init__(self, args, wname: str, name: str, argv: list, size, build_s):
        self.w = DATA["workloads"][wname]
        self.name, self.argv, self.size_bytes, self.build_s = name, argv, size, build_s
        p = DATA["peers"][name]
        v = variables(args, self.w["app"], name)
        self.env = run_env(args.work)
        self.env.update({k: expand(x, v) for k, x in p.get("run_env", {}).items()})
        self.cwd = os.path.join(args.work, "run-cwd")
        base = os.path.join(args.run_dir, "rows", name)
        self.file = os.path.join(base, "in", "input.py")
        if self.w.get("own_home"):
            self.env["HOME"] = os.path.join(base, "home")
            self.cwd = os.path.join(base, "cwd")
        self.first_root = os.path.join(args.run_dir, "first-caches", name)
        self.fresh_cache = p.get("fresh_cache", False)
        self.counter = 0
        for d in (self.cwd, os.path.dirname(self.file), self.env["HOME"]):
            os.makedirs(d, exist_ok=True)
        self.input = None
        if "input" in self.w:
            with open(os.path.join(h.HERE, self.w["input"])) as f:
                self.input = f.read()

    def next_run(self, warm: bool = False) -> tuple[list, dict]:
        """Before a run, outside the timing: a fresh unformatted input; for a first start, a new
        empty cache directory."""
        env = dict(self.env)
        if self.input is not None:
            with open(self.file, "w") as f:  # same inode, new mtime and content: black reformats
                f.write(self.input)
        if self.fresh_cache:
            self.counter += 1
            env["INGOT_CACHE_DIR"] = os.path.join(self.first_root, f"{self.counter:05d}")
        return [a.replace("{input}", self.file) for a in self.argv], env

    def output(self) -> str | None:
        if self.input is None:
            return None
        with open(self.file) as f:
            return f.read()

    def cell(self, cold: bool, expected: str | None) -> h.Cell:
        def after(run: h.Run) -> dict:
            return {"wrong_output": self.output() != expected} if self.input else {}

        return h.Cell(
            self.name, self.argv, self.env, self.cwd, cold, prepare=self.next_run, after=after
        )


def configurations(args, wname: str, state: dict, wanted: set) -> tuple[dict, dict]:
    """name -> Config of what is there to measure; name -> why not, for the rest."""
    w = DATA["workloads"][wname]
    app = w["app"]
    cfgs, missing = {}, {}
    for name in w["configs"] + [t for t in args.optional if t not in w["configs"]]:
        p = DATA["peers"][name]
        if name not in wanted:
            continue
        v = variables(args, app, name)
        argv = expand(p["run"], v) + ([] if p.get("no_args") else w.get("args", []))
        b = state.get("builds", {}).get(f"{app}/{p.get('same_build', name)}")
        if "build" not in p and "same_build" not in p:
            venv = state.get("venvs", {}).get("venv-" + DATA["apps"][app]["venv"], {})
            sized = name == "venv"
            size, secs = (venv.get("size_bytes"), venv.get("seconds")) if sized else (None, None)
            cfgs[name] = Config(args, wname, name, argv, size, secs)
        elif not b:
            missing[name] = "not built"
        elif b["status"] != "ok":
            missing[name] = f"{b['status']}: {b.get('reason', '')}"
        else:
            cfgs[name] = Config(args, wname, name, argv, b["size_bytes"], b["build_s"])
    return cfgs, missing


def check_configs(cfgs: dict, missing: dict, w: dict) -> str | None:
    """Run every configuration once; leave out what does not run right. The expected content
    of the input file afterwards: what the first configuration (the venv) wrote."""
    expected = None
    for n, c in list(cfgs.items()):
        argv, env = c.next_run()
        why = h.check_run(argv, env, c.cwd, w.get("expect") if n != "bare" else "")
        if not why and c.input is not None:
            out = c.output()
            expected = out if expected is None else expected
            if out == c.input or out != expected:
                why = "the input file is not formatted as the first configuration formats it"
        if why:
            h.log(f"{n}: does not run right, left out: {why}")
            missing[n] = f"does not run right: {why}"
            del cfgs[n]
    return expected


def measure_workload(args, wname: str, cfgs: dict, cold: bool, pause: dict, expected) -> dict:
    w = DATA["workloads"][wname]
    pattern = re.compile(args.wait_for) if args.wait_for else None

    def before_round() -> bool:
        return bool(pattern) and h.wait_for_others(pattern, pause)

    def run(phase_cold: bool, rounds: int, warmup: int, rss_out=None) -> dict:
        cells = [c.cell(phase_cold, expected) for c in cfgs.values()]
        data = h.measure(cells, rounds, warmup, rss_out, before_round=before_round)
        summary = h.summarize(data, w["baselines"] if not rss_out else [])
        summary["_loadavg_per_round"] = data["_loadavg_per_round"]
        return summary

    n = len(cfgs)
    h.log(f"{wname}: hot, {args.warmup} warm-up + {args.hot_runs} rounds x {n} configurations")
    before_round()
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
        configs[name] = {
            "argv": c.argv,
            "size_bytes": c.size_bytes,
            "build_s": c.build_s,
            "hot": hot[name],
            "cold": cold_res[name] if cold_res else None,
            "rss": rss,
        }
        r = configs[name]
        h.log(
            f"  {wname}/{name}: hot {h.fmt(r['hot']['wall_ms_median'])} ms, cold "
            f"{h.fmt(r['cold'] and r['cold']['wall_ms_median'])} ms, peak RSS "
            f"{h.fmt(rss and rss['peak_rss_mib_median'])} MiB"
        )
    load = {"hot": hot["_loadavg_per_round"], "cold": cold_res and cold_res["_loadavg_per_round"]}
    return {"configs": configs, "loadavg_per_round": load}


def report(result: dict) -> str:
    m, labels = result["machine"], result["labels"]
    lines = [f"### {GROUP_TITLES.get(result['group'], result['group'])}: run `{result['utc']}`\n"]
    lines.append(
        f"{m['cpu']} x {m['nproc']}, {m['uname']}; repo at {m['repo_commit']}; hot: "
        f"{result['warmup']} warm-up + {result['hot_runs']} rounds, cold: {result['cold_runs']} "
        f"rounds (drop_caches before every run), peak RSS: {result['rss_runs']} hot rounds under "
        f"{h.TIME}; niceness {result['niceness']}; load average "
        f"{result['loadavg_before'][0]:.2f} before, {result['loadavg_after'][0]:.2f} after.\n"
    )
    parts = []
    res = result.get("residency_after_drop_caches") or {}
    for p, b in res.get("before", {}).items():
        a = res.get("after", {}).get(p, {}).get("resident")
        if b["resident"] or a:
            parts.append(
                f"{os.path.basename(p)} {b['resident'] / 2**20:.1f} / {h.fmt(a and a / 2**20)} "
                f"of {b['size'] / 2**20:.1f} MiB"
            )
    if res:
        lines.append(
            "Resident right after drop_caches, before / after the runs (pages mapped by running "
            "processes stay): " + ("; ".join(parts) or "none of the watched files") + ".\n"
        )
    runs = [
        c[ph]
        for wr in result["workloads"].values()
        for c in wr["configs"].values()
        for ph in ("hot", "cold")
        if c.get(ph)
    ]
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
            name = f"**{labels[n]}**" if n == "ingot" else labels[n]
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
            rows.append([labels[n], why.splitlines()[0][:200]] + [""] * (len(head) - 2))
        lines += [f"#### {w}\n", *h.table(head, rows), ""]
    if result["targets"]:
        lines += h.targets_table(result)
    return "\n".join(lines) + "\n"


def probe(args, wname: str, state: dict) -> dict:
    """Phases of the app's probe script: run by its venv's python and built by ingot (with the
    venv's pip freeze as requirements), in interleaved rounds; then -X importtime of its imports
    (the venv, and python -I -S with ingot.install() of the probe executable's archive)."""
    w = DATA["workloads"][wname]
    app = w["app"]
    v = variables(args, app, "ingot")
    venv_py, script = os.path.join(v["venv"], "bin", "python"), expand(v["probe"], v)
    pdir = os.path.join(args.work, "probe")
    os.makedirs(pdir, exist_ok=True)
    exe, freeze = os.path.join(pdir, f"{app}_probe"), os.path.join(pdir, f"{app}-requirements.txt")
    with open(freeze, "w") as f:
        f.write("\n".join(h.pip_freeze(venv_py)) + "\n")
    cmd = [venv_py, "-m", "ingot", "build", script, "-r", freeze, "-o", exe, "--force", "-q"]
    h.log("building " + " ".join(cmd))
    env = dict(h.build_env(args.work), PYTHONPATH=args.ingot_pythonpath)
    subprocess.run(cmd, check=True, env=env, cwd=pdir)
    row = Config(args, wname, "ingot", ["probe", *w.get("args", [])], None, None)
    configs = {"venv": [venv_py, script], "ingot": [exe]}
    if args.gc_off:
        configs |= {f"{n}-gc-off": argv for n, argv in configs.items()}
    phases = {n: {} for n in configs}

    def once(name: str, record: bool) -> None:
        for _ in range(20):
            argv, env = row.next_run()
            extra = ["--gc-off"] if name.endswith("gc-off") else []
            before, t0 = h.drop_count(), time.monotonic_ns()
            r = h.spawn_probe([*configs[name], str(t0), *extra, *argv[1:]], env, row.cwd, t0)
            if h.drop_count() == before:
                break
        if record:
            for k, x in r.items():
                phases[name].setdefault(k, []).append(x)

    for _ in range(3):
        for n in configs:
            once(n, False)
    names = list(configs)
    for i in range(args.probe_runs):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            once(n, True)
    med = {
        n: {k: statistics.median(x) / (1e-3 if k in ("user", "sys") else 1e6) for k, x in p.items()}
        for n, p in phases.items()
    }
    rows = [
        [k, *(f"{med[n][k]:.1f}" for n in names), f"{med['ingot'][k] - med['venv'][k]:+.1f}"]
        for k in ("startup", "imports", "main", "exit", "total", "user", "sys")
    ]
    lines = [f"### {wname} by phase, medians of {args.probe_runs} interleaved rounds (ms)\n"]
    lines += h.table(["phase", *names, "ingot - venv"], rows)
    code = f"import sys; sys.path.insert(0, {args.ingot_pythonpath!r}); import ingot; "
    code += f"sys.path.pop(0); ingot.install({exe!r}); {v['probe_imports']}"
    it = {}
    for name, argv in [
        ("venv", [venv_py, "-X", "importtime", "-c", v["probe_imports"]]),
        ("ingot", [venv_py, "-I", "-S", "-X", "importtime", "-c", code]),
    ]:
        r = subprocess.run(argv, capture_output=True, text=True, env=row.env, cwd=row.cwd)
        it[name] = h.parse_importtime(r.stderr)
    a, b = it["venv"], it["ingot"]
    top = sorted(a, key=lambda k: -a[k][0])[:15]
    lines += [
        f"\n-X importtime, one run each: {len(a)} imports (venv), {len(b)} (ingot); sum of self "
        f"times: venv {sum(x[0] for x in a.values()) / 1e3:.1f} ms, "
        f"ingot {sum(x[0] for x in b.values()) / 1e3:.1f} ms\n",
        *h.table(
            ["module", "venv self ms", "ingot self ms"],
            [[m, f"{a[m][0] / 1e3:.1f}", f"{b.get(m, (0, 0))[0] / 1e3:.1f}"] for m in top],
        ),
    ]
    print("\n".join(lines) + "\n", flush=True)
    return {"phases_ms": med, "raw": phases, "importtime": it}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--work", default=os.path.join(h.REPO, "build", "peers"))
    ap.add_argument(
        "--run-dir",
        default=os.path.join("/var/tmp" if os.path.isdir("/var/tmp") else "/tmp", "ingot-bench"),
        help="HOMEs, input files and first-start caches (outside the repository, so that black's "
        "project-root search finds nothing)",
    )
    ap.add_argument("--python", help="stock CPython 3.11 (default: pyenv's newest, else PATH)")
    ap.add_argument(
        "--ingot-pythonpath",
        default=os.path.join(h.REPO, "python"),
        help="directory holding the ingot package with its compiled _ingot and launcher",
    )
    ap.add_argument("--baseline-ingot", metavar="PYTHONPATH", help="adds ingot-baseline")
    ap.add_argument("--runtime", metavar="VERSION", help="adds ingot-runtime")
    ap.add_argument(
        "--workloads", default=DEFAULT_WORKLOADS, help=f"of {','.join(DATA['workloads'])}"
    )
    built = [n for n, p in DATA["peers"].items() if "build" in p and not p.get("optional")]
    ap.add_argument(
        "--tools",
        default=",".join(built),
        help="peers to build; optional ones named here are measured too",
    )
    ap.add_argument("--configs", help="measure only these configurations")
    ap.add_argument("--build-timeout", type=float, default=1800.0, help="seconds per build")
    ap.add_argument("--rebuild", action="store_true", help="even if builds.json has the output")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-measure", action="store_true")
    ap.add_argument("--hot-runs", type=int, default=40)
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--rss-runs", type=int, default=5, help="hot rounds under /usr/bin/time")
    ap.add_argument("--nice", type=int, default=0, help="add to the niceness (root: e.g. -15)")
    ap.add_argument(
        "--wait-for",
        metavar="REGEX",
        help="before a round, wait while a matching "
        "process runs, e.g. 'bench/(peers|materialize|finders)|pytest'",
    )
    ap.add_argument("--probe", action="store_true", help="also: where ingot's time goes")
    ap.add_argument("--probe-runs", type=int, default=30)
    ap.add_argument("--gc-off", action="store_true", help="probe also with the GC off at start")
    ap.add_argument("--json", help="default: bench/results/GROUP-<utc>.json")
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
        for t, on in [("ingot-baseline", args.baseline_ingot), ("ingot-runtime", args.runtime)]
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
    if not args.no_build:
        venvs = {DATA["apps"][a]["venv"] for a in apps}
        if any("{tools}" in " ".join(DATA["peers"][t].get("build", [])) for t in args.tools):
            venvs |= {DATA["apps"][a].get("tools", "tools") for a in apps} | {"bare", "plot"}
        h.create_venvs(args.work, args.python, {n: DATA["venvs"][n] for n in venvs}, state)
        h.save_state(args.work, state)
        tools = [*args.tools, *(DATA["peers"][t].get("same_build") for t in args.tools)]
        build_all(args, apps, list(dict.fromkeys(t for t in tools if t)), state)
    for t in args.tools:
        if "prepare" in DATA["peers"][t]:
            v = variables(args, apps[0], t)
            subprocess.run(expand(DATA["peers"][t]["prepare"], v), check=True)
    if args.no_measure and not args.probe:
        return 0
    if args.nice:
        os.nice(args.nice)
    cold = not args.no_cold and not args.no_measure
    if cold and os.geteuid() != 0:
        h.log("not root: no cold-cache runs")
        cold = False
    if args.rss_runs and not os.access(h.TIME, os.X_OK):
        h.log(f"no {h.TIME} (GNU time): no peak RSS")
        args.rss_runs = 0
    wanted = {n for n, p in DATA["peers"].items() if "build" not in p and "same_build" not in p}
    wanted |= {n for n, p in DATA["peers"].items() if not p.get("optional")} | set(args.optional)
    if args.configs:
        wanted &= set(args.configs.split(","))
    groups: dict = {}
    for wname in args.workloads:
        groups.setdefault(DATA["workloads"][wname]["group"], []).append(wname)
    for group, wnames in groups.items():
        result = measure_group(args, group, wnames, state, wanted, cold)
        if args.probe:
            result["probe"] = {
                w: probe(args, w, state)
                for w in wnames
                if "probe" in DATA["apps"][DATA["workloads"][w]["app"]]
            }
        if not args.no_measure or args.probe:
            h.write_result(group, result, args.json)
    return 0


def shared_files(python: str) -> list[str]:
    """The stock interpreter, its libpython and _ssl, and the system libraries _ssl maps."""
    code = "import sysconfig as s, _ssl; print(s.get_config_var('LIBDIR'), s.get_config_var("
    code += "'INSTSONAME'), _ssl.__file__)"
    r = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True)
    libdir, soname, ssl = r.stdout.split()
    libs = []
    for line in subprocess.run(["ldd", ssl], capture_output=True, text=True).stdout.splitlines():
        if "=>" in line and ("libssl" in line or "libcrypto" in line or "libc.so" in line):
            libs.append(line.split("=>")[1].split()[0])
    return [os.path.realpath(python), os.path.join(libdir, soname), ssl, *sorted(set(libs))]


def measure_group(args, group: str, wnames: list, state: dict, wanted: set, cold: bool) -> dict:
    stamp = h.utc_stamp()
    result = {
        "utc": stamp,
        "group": group,
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "machine": h.machine_info(),
        "python": args.python,
        "python_version": h.python_version(args.python),
        "niceness": os.nice(0),
        "hot_runs": args.hot_runs,
        "cold_runs": args.cold_runs if cold else 0,
        "warmup": args.warmup,
        "rss_runs": args.rss_runs,
        "ingot": {"pythonpath": args.ingot_pythonpath, **h.ingot_files(args.ingot_pythonpath)},
        "ingot_baseline": args.baseline_ingot
        and {"pythonpath": args.baseline_ingot, **h.ingot_files(args.baseline_ingot)},
        "venvs": state.get("venvs", {}),
        "builds": state.get("builds", {}),
        "targets_spec": [
            [t["workload"], t["baseline"], t["hot"], t.get("cold")]
            for t in DATA["targets"]
            if t["workload"] in wnames
        ],
        "labels": {n: p["label"] for n, p in DATA["peers"].items()},
        "baselines": {w: DATA["workloads"][w]["baselines"] for w in wnames},
        "workloads": {},
        "targets": [],
    }
    if args.no_measure:
        return result
    ingot_outputs = [
        b["output"]
        for k, b in sorted(state.get("builds", {}).items())
        if k.endswith("/ingot") and b.get("status") == "ok"
    ]
    shared = shared_files(args.python) + ingot_outputs
    residency = {"before": h.residency_after_drop(shared)} if cold else {}
    result["loadavg_before"] = os.getloadavg()
    pause: dict = {}
    for wname in wnames:
        cfgs, missing = configurations(args, wname, state, wanted)
        expected = check_configs(cfgs, missing, DATA["workloads"][wname])
        result["workloads"][wname] = measure_workload(args, wname, cfgs, cold, pause, expected)
        result["workloads"][wname]["missing"] = missing
    result["loadavg_after"] = os.getloadavg()
    if cold:
        residency["after"] = h.residency_after_drop(shared)
    result["residency_after_drop_caches"] = residency
    result["pause"] = pause
    specs = [t for t in DATA["targets"] if t["workload"] in wnames]
    result["targets"] = h.evaluate_targets(specs, result["workloads"])
    text = report(result)
    print(text, flush=True)
    with open(os.path.join(args.work, f"{group}-{stamp}.md"), "w") as f:
        f.write(text)
    return result


if __name__ == "__main__":
    sys.exit(main())
