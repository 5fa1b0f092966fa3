"""Where the time of `http --version` goes: ingot executable vs the app's venv, phase by phase.

    nice -n -15 python3 bench/peers_probe.py [--work build/peers] [--runs 40]

Needs what bench/peers.py prepared (WORK/venv-app). Builds WORK/probe/http_probe with
`ingot build bench/apps/http_probe.py -r <venv-app's pip freeze>` (the same distributions as the
`--console-script http` build, plus the probe script), then runs, in interleaved rounds, that
executable and `WORK/venv-app/bin/python bench/apps/http_probe.py` (what the console script does:
the venv's python with site), each with `--version`. The probe stamps CLOCK_MONOTONIC at its first
line, after its imports and after main(); the harness stamps the spawn and the reaping. Medians of
each phase over the rounds, and of the process CPU time (user, sys). A run during which another
process dropped the page cache is repeated after a warming run (as in bench/peers.py).

With --gc-off, both also run with the cyclic GC disabled during the imports, then gc.freeze() and
enabled again (what a launcher that kept the GC off during start-up would save). With
--fast-exit, import_stdlib and `http` are built again with --no-fast-exit and timed hot against
the default builds and their baselines (what the fast exit is worth).

Then `-X importtime` for both import systems in one stock interpreter each (the launcher takes no
-X options): the venv's python (path finder, site), and `python -I -S` with `ingot.install()` of the
probe executable's archive (the importer the executable uses, in a libpython.so interpreter), with
the biggest self times side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import peers
import peers_build as pb


def parse_importtime(text: str) -> dict:
    """module -> (self us, cumulative us) from -X importtime output."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum, name = (x.strip() for x in line[len("import time:"):].split("|"))
        out[name] = (int(self_us), int(cum))
    return out


def fast_exit_experiment(work: str, benv: dict, env: dict, run_cwd: str, runs: int) -> dict:
    """import_stdlib and `http --version` built again with --no-fast-exit (Py_FinalizeEx at exit),
    timed hot in interleaved rounds against the default build and the baseline."""
    app_py = os.path.join(work, "venv-app", "bin", "python")
    out = os.path.join(work, "ingot-no-fast-exit")
    os.makedirs(out, exist_ok=True)
    for cmd in ([app_py, "-m", "ingot", "build", os.path.join(work, "src", "import_stdlib.py")],
                [app_py, "-m", "ingot", "build", "--console-script", "http"]):
        name = "http" if "http" in cmd else "import_stdlib"
        subprocess.run(cmd + ["--no-fast-exit", "-o", os.path.join(out, name), "--force", "-q"], check=True,
                       env=benv, cwd=out, stderr=subprocess.DEVNULL)
    state = pb.load_state(work)
    result = {}
    print(f"\n### Fast exit: the default build vs --no-fast-exit, hot, medians of {runs} interleaved rounds\n")
    print("| workload | baseline ms | ingot ms | ingot --no-fast-exit ms | ingot vs baseline | --no-fast-exit vs baseline |")
    print("|---|---:|---:|---:|---:|---:|")
    for w, base in [("import_stdlib", "stock"), ("http", "venv")]:
        cfgs, _ = peers.configurations(work, peers.DEFAULT_PYTHON, w, state)
        runs_cfg = {base: cfgs[base], "ingot": cfgs["ingot"],
                    "no-fast-exit": {"argv": [os.path.join(out, w)] + pb.RUN_ARGS[w]}}
        s = peers.summarize(peers.measure(runs_cfg, env, run_cwd, runs, 3, cold=False), [base])
        result[w] = {n: {k: v for k, v in s[n].items() if k not in ("wall_ns", "cpu_s")} for n in s}
        print(f"| {w} ({peers.LABELS[base]}) | {s[base]['wall_ms_median']:.1f} | {s['ingot']['wall_ms_median']:.1f} | "
              f"{s['no-fast-exit']['wall_ms_median']:.1f} | {s['ingot']['ratio'][base]:.2f} | "
              f"{s['no-fast-exit']['ratio'][base]:.2f} |", flush=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(pb.REPO, "build", "peers"))
    ap.add_argument("--ingot-pythonpath", default=os.path.join(pb.REPO, "python"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--fast-exit", action="store_true",
                    help="also time import_stdlib and http built with --no-fast-exit against the default builds")
    ap.add_argument("--gc-off", action="store_true",
                    help="also run both with the GC disabled during the imports, then gc.freeze()")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    json_path = os.path.abspath(args.json) if args.json else None
    app_py = os.path.join(work, "venv-app", "bin", "python")
    probe_src = os.path.join(pb.HERE, "apps", "http_probe.py")
    pdir = os.path.join(work, "probe")
    os.makedirs(pdir, exist_ok=True)
    exe = os.path.join(pdir, "http_probe")
    freeze = os.path.join(pdir, "requirements.txt")
    with open(freeze, "w") as f:
        f.write("\n".join(pb.pip_freeze(app_py)) + "\n")
    env = pb.build_env(work)
    benv = dict(env, PYTHONPATH=os.path.abspath(args.ingot_pythonpath))
    cmd = [app_py, "-m", "ingot", "build", probe_src, "-r", freeze, "-o", exe, "--force", "-q"]
    pb.log("building " + " ".join(cmd))
    subprocess.run(cmd, check=True, env=benv, cwd=pdir)

    if args.nice:
        os.nice(args.nice)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    run_cwd = os.path.join(work, "run-cwd")
    os.makedirs(run_cwd, exist_ok=True)
    configs = {"ingot": ([exe], []), "venv": ([app_py, probe_src], [])}
    if args.gc_off:
        configs.update({"ingot-gc-off": ([exe], ["--gc-off"]), "venv-gc-off": ([app_py, probe_src], ["--gc-off"])})
    phases = {n: {"startup": [], "imports": [], "main": [], "exit": [], "total": [], "user": [], "sys": []}
              for n in configs}

    def once(name: str, record: bool) -> None:
        for _ in range(20):
            before = peers.drop_count()
            result = once_unguarded(name)
            if peers.drop_count() == before:
                break
            once_unguarded(name)  # the page cache was dropped meanwhile: warm it again, repeat
        else:
            raise SystemExit("another process keeps dropping the page cache")
        if record:
            p = phases[name]
            for k, v in result.items():
                p[k].append(v)

    def once_unguarded(name: str) -> dict:
        t0 = time.monotonic_ns()
        argv = configs[name][0] + [str(t0)] + configs[name][1] + ["--version"]
        return pb.spawn_probe(argv, env, run_cwd, t0, name)

    os.chdir(run_cwd)
    for _ in range(3):
        for n in configs:
            once(n, False)
    names = list(configs)
    for i in range(args.runs):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            once(n, True)

    med = {n: {k: statistics.median(v) / (1e6 if k not in ("user", "sys") else 1e-3) for k, v in p.items()}
           for n, p in phases.items()}
    print(f"### `http --version` by phase, medians of {args.runs} interleaved rounds (ms)\n")
    cols = [n for n in ["venv", "ingot", "venv-gc-off", "ingot-gc-off"] if n in med]
    print("| phase | " + " | ".join(cols) + " | ingot - venv |")
    print("|---|" + "---:|" * (len(cols) + 1))
    for k in ["startup", "imports", "main", "exit", "total", "user", "sys"]:
        label = {"startup": "start-up (spawn to the script's first line)", "imports": "imports (httpie.core, httpie.cli.definition)",
                 "main": "main() (plugins, parse, print)", "exit": "exit (main() returned to reaped)",
                 "total": "total, spawn to reaped", "user": "CPU user", "sys": "CPU sys"}[k]
        print(f"| {label} | " + " | ".join(f"{med[n][k]:.1f}" for n in cols)
              + f" | {med['ingot'][k] - med['venv'][k]:+.1f} |")

    # -X importtime of both import systems
    it_venv = subprocess.run([app_py, "-X", "importtime", "-c",
                              "import httpie.core, httpie.cli.definition"],
                             capture_output=True, text=True, env=env, cwd=run_cwd)
    code = ("import sys; sys.path.insert(0, %r); import ingot; sys.path.pop(0); ingot.install(%r); "
            "import httpie.core, httpie.cli.definition") % (os.path.abspath(args.ingot_pythonpath), exe)
    it_ingot = subprocess.run([app_py, "-I", "-S", "-X", "importtime", "-c", code],
                              capture_output=True, text=True, env=env, cwd=run_cwd)
    a, b = parse_importtime(it_venv.stderr), parse_importtime(it_ingot.stderr)
    print(f"\n### -X importtime, one run each: {len(a)} imports (venv), {len(b)} (ingot.install in python -I -S)\n")
    print(f"sum of self times: venv {sum(v[0] for v in a.values()) / 1e3:.1f} ms, "
          f"ingot {sum(v[0] for v in b.values()) / 1e3:.1f} ms\n")
    print("| module | venv self ms | ingot self ms |")
    print("|---|---:|---:|")
    for name in sorted(a, key=lambda k: -a[k][0])[:15]:
        print(f"| {name} | {a[name][0] / 1e3:.1f} | {b.get(name, (0, 0))[0] / 1e3:.1f} |")
    fast_exit = fast_exit_experiment(work, benv, env, run_cwd, args.runs) if args.fast_exit else None
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"phases_ms": med, "raw": phases, "importtime": {"venv": a, "ingot": b},
                       "fast_exit": fast_exit}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
