"""Attacks on self-calls (crates/ingot-launcher/README.md, "Self-calls"): only a process the
running application started from its own executable gets python mode. A parent process that
merely runs the executable now, or an `INGOT_PARENT` variable that anyone can set, is not the
application having started it: a child forked before its parent exec'd the app, or a forged
variable where /proc cannot tell who the parent is, gets the application, not Python. And a
chain of starts that never ends stops at the depth limit even where it is not a chain of
self-calls: through a shell, or with the environment dropped where /proc is absent.

Every executable here runs under a process-count limit (tests/support/proclimit.py) and a timeout.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import proclimit
from test_launcher import (  # noqa: F401 (launcher and launcher_python are fixtures)
    launcher,
    launcher_python,
    make_app,
)

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

APP = {
    "attackapp/__init__.py": "",
    "attackapp/cli.py": """
        import json
        import os
        import pwd
        import shlex
        import subprocess
        import sys
        import time

        def main():
            what = sys.argv[1] if len(sys.argv) > 1 else ""
            if what == "reap":  # reap READY: creates READY, then waits for any child of its own
                open(sys.argv[2], "w").close()
                _pid, status = os.wait()
                print(json.dumps({"child": os.waitstatus_to_exitcode(status)}))
            elif what == "chain":  # a shell that stays the parent starts the executable, again
                command = f"{shlex.quote(sys.executable)} chain; exit $?"
                sys.exit(subprocess.run(command, shell=True).returncode)
            elif what == "as-user":  # as-user UID GID ARGS...: another user runs the executable
                # with the app's whole environment (its variable and secret included)
                uid, gid = sys.argv[2:4]
                command = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                           sys.executable, *sys.argv[4:]]
                done = subprocess.run(command, capture_output=True, text=True, timeout=60)
                print(json.dumps({"code": done.returncode, "err": done.stderr}))
            elif what == "job-as":  # job-as HOW USER SCRIPT CODE: a job as USER, by HOW, with
                # the app's whole environment, runs SCRIPT in sh ({exe} and {code} in it quoted)
                how, name, script, code = sys.argv[2:6]
                script = script.format(exe=shlex.quote(sys.executable), code=shlex.quote(code))
                entry = pwd.getpwnam(name)
                as_user = {
                    "user": [],  # subprocess.run(..., user=...)
                    "su": ["su", name, "-s", "/bin/sh", "-c", script],
                    "runuser": ["runuser", "-u", name, "--", "sh", "-c", script],
                    "setpriv": ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                                "--clear-groups", "sh", "-c", script],
                    "self": ["sh", "-c", script],  # no other user: the app's own job
                }[how] or ["sh", "-c", script]
                user = {"user": name} if how == "user" else {}
                done = subprocess.run(as_user, capture_output=True, text=True, timeout=60,
                                      cwd="/", **user)
                print(json.dumps({"code": done.returncode, "out": done.stdout,
                                  "err": done.stderr}))
            elif what == "calls":  # calls READY GO N: READY made, GO awaited, N self-calls
                open(sys.argv[2], "w").close()
                while not os.path.exists(sys.argv[3]):
                    time.sleep(0.01)
                runs = [
                    subprocess.run([sys.executable, "-c", "print('python')"], capture_output=True,
                                   text=True, timeout=60)
                    for _ in range(int(sys.argv[4]))
                ]
                print(json.dumps(sorted({run.stdout + run.stderr for run in runs})))
            elif what == "native":  # loads extension modules (memory files, or the cache)
                import _json, math, select
                print(json.dumps({"uid": os.getuid(), "euid": os.geteuid()}))
            elif what == "again-scrubbed":  # starts itself without an environment, unconditionally
                sys.exit(subprocess.run([sys.executable, "again-scrubbed"], env={}).returncode)
            else:
                raise SystemExit(f"unknown {what}")
    """,
}

LAUNCH = {"version": 1, "run": {"kind": "function", "module": "attackapp.cli", "function": "main"}}

# `python -c NOT_DUMPABLE_PARENT UID GID SUFFIX ARGS...`: a parent that is not dumpable
# (prctl(PR_SET_DUMPABLE, 0)), so that its /proc/<pid>/exe is unreadable to its child, starts
# ARGS with a variable that names it. Started as root, it first becomes the user UID:GID (root
# may read the exe of a process that is not dumpable).
NOT_DUMPABLE_PARENT = """
import ctypes, os, subprocess, sys
uid, gid, suffix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if os.getuid() != uid:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
assert ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
env = {"PATH": os.environ["PATH"], "INGOT_PARENT": f"{os.getpid()}:0:{uid}{suffix}"}
sys.exit(subprocess.run(sys.argv[4:], env=env).returncode)
"""

USER = "ingot-attack"

#: Forged variables end with no secret (as launchers before issue 26 wrote them), or a made-up
#: one: neither proves anything.
FORGED = pytest.mark.parametrize(
    "suffix", ["", ":" + "5e" * 16], ids=["without-secret", "made-up-secret"]
)

# Runs the rest of the command line in a mount namespace where /proc is an empty tmpfs.
NO_PROC = ["unshare", "--mount", "--fork", "sh", "-c", 'mount -t tmpfs none /proc && exec "$@"']


def require(available, what):
    """Skips the test if `what` is not available here; fails it under INGOT_REQUIRE_PYTHONS."""
    if not available:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(f"{what} (INGOT_REQUIRE_PYTHONS)")
        pytest.skip(what)


def run(args, max_processes=16, timeout=60, **options):
    """Runs `args` under the process limit; fails the test if the limit was hit or it timed out."""
    result = proclimit.run(args, max_processes=max_processes, timeout=timeout, **options)
    assert not result.timed_out, f"timed out after {timeout} s: {result.stderr[-2000:]}"
    assert result.limit_hit == 0, (
        f"hit the limit of {max_processes} processes: {result.stderr[-2000:]}"
    )
    return result


def writes(marker):
    """Python code that creates `marker`: proof that Python ran it."""
    return f"open({str(marker)!r}, 'w').write('x')"


@pytest.fixture(scope="module")
def app(tmp_path_factory, launcher, launcher_python):
    return make_app(
        tmp_path_factory.mktemp("attacks"),
        launcher,
        launcher_python,
        LAUNCH,
        name="attackapp",
        files=APP,
    )


@pytest.fixture
def shared(app):
    """A copy of the app that any user may run, in a directory any user may write (the test's
    tmp_path is private to its user)."""
    directory = Path(tempfile.mkdtemp(prefix="ingot-attack-"))
    try:
        directory.chmod(0o777)
        copy = directory / app.name
        shutil.copyfile(app, copy)
        copy.chmod(0o755)
        yield copy
    finally:
        shutil.rmtree(directory)


@pytest.fixture(scope="module")
def user():
    """(uid, gid) of an unprivileged user: this one, or as root the user `ingot-attack` (made if
    missing)."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    require(shutil.which("useradd"), "useradd is needed to make an unprivileged user")
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        command = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER]
        subprocess.run(command, capture_output=True, timeout=60)  # another run may make it too
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


# --- a parent that runs the executable but did not start the child -------------------------------


def test_a_child_forked_before_its_parent_became_the_app_gets_the_app(app, tmp_path):
    # The shell forks a subshell, then replaces itself with the app; the subshell, still its
    # child, waits until the app runs, then replaces itself with `app -c CODE`. Its parent runs
    # the executable, as the same user, but never started it.
    ready, marker = tmp_path / "ready", tmp_path / "ran"
    script = '( until [ -e "$1" ]; do sleep 0.05; done; exec "$0" -c "$2" ) & exec "$0" reap "$1"'
    result = run(["sh", "-c", script, app, ready, writes(marker)])
    assert not marker.exists(), "the child ran Python"
    assert (result.returncode, result.stderr) == (0, "unknown -c\n")
    assert json.loads(result.stdout) == {"child": 1}


# --- a forged variable where /proc cannot tell who the parent is ----------------------------------


@FORGED
def test_a_forged_variable_naming_a_parent_outside_the_pid_namespace_gets_the_app(
    app, tmp_path, suffix
):
    # The first process of a new pid namespace has parent 0, which has no /proc entry.
    require(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare")
    marker = tmp_path / "ran"
    new_pid_namespace = ["unshare", "--pid", "--fork", "--mount-proc"]
    forged = ["env", f"INGOT_PARENT=0:0:{os.getuid()}{suffix}"]
    result = run([*new_pid_namespace, *forged, app, "-c", writes(marker)])
    assert not marker.exists(), "the child ran Python"
    assert (result.returncode, result.stderr) == (1, "unknown -c\n")


@FORGED
def test_a_forged_variable_from_a_parent_that_is_not_dumpable_gets_the_app(shared, user, suffix):
    uid, gid = user
    marker = shared.parent / "ran"
    parent = [sys.executable, "-I", "-c", NOT_DUMPABLE_PARENT, str(uid), str(gid), suffix]
    result = run([*parent, shared, "-c", writes(marker)], cwd=shared.parent)
    assert not marker.exists(), "the child ran Python"
    assert (result.returncode, result.stderr) == (1, "unknown -c\n")


@FORGED
def test_a_forged_variable_from_a_parent_of_another_user_gets_the_app(shared, user, suffix):
    # Root (this test) starts the app as the user, with a variable that names root's process and
    # the user: the user's process may not read its parent's /proc/<pid>/exe.
    require(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    uid, gid = user
    marker = shared.parent / "ran"
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    env = {"PATH": os.environ["PATH"], "INGOT_PARENT": f"{os.getpid()}:0:{uid}{suffix}"}
    result = run([*as_user, shared, "-c", writes(marker)], env=env, cwd=shared.parent)
    assert not marker.exists(), "the child ran Python"
    assert (result.returncode, result.stderr) == (1, "unknown -c\n")


def test_the_apps_variable_passed_to_another_user_gets_the_app(shared, user, tmp_path):
    # Since issue 37 a process that carries the variable of a live ancestor, through programs in
    # between (a shell), reads a python command line. The variable, secret and all, handed to
    # another user (sudo -E to that user, setpriv, su --preserve-environment) proves nothing:
    # it names this user.
    require(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    uid, gid = user
    marker = shared.parent / "ran"
    result = run([shared, "as-user", str(uid), str(gid), "-c", writes(marker)], cwd=shared.parent)
    assert json.loads(result.stdout) == {"code": 1, "err": "unknown -c\n"}
    assert not marker.exists(), "another user ran Python with the app's variable"


@pytest.fixture
def sudo_rule(shared, user):
    """A sudoers rule that lets the unprivileged user run the shared app as root with variables
    of its choosing (`SETENV`), as an administrator may write for a job; removed afterwards."""
    require(
        os.geteuid() == 0 and shutil.which("sudo") and shutil.which("visudo"),
        "needs root, sudo and visudo",
    )
    name = pwd.getpwuid(user[0]).pw_name
    rule = Path(f"/etc/sudoers.d/ingot-test-{os.getpid()}-{shared.parent.name[-8:]}")
    rule.write_text(f"{name} ALL=(root) NOPASSWD:SETENV: {shared}\n")
    try:
        rule.chmod(0o440)
        check = subprocess.run(["visudo", "-c", "-q", "-f", rule], capture_output=True, timeout=60)
        assert check.returncode == 0, check.stderr
        yield name
    finally:
        rule.unlink()


#: What the job runs: sudo, given the app's variable, runs the app's executable as root.
SUDO_WITH_THE_APPS_VARIABLE = 'sudo -n INGOT_PARENT="$INGOT_PARENT" {exe} -c {code}'


@pytest.mark.parametrize(
    "how, script",
    [
        ("user", SUDO_WITH_THE_APPS_VARIABLE),
        ("user", "exec " + SUDO_WITH_THE_APPS_VARIABLE),  # the job itself becomes sudo
        ("su", SUDO_WITH_THE_APPS_VARIABLE),
        ("su", "exec " + SUDO_WITH_THE_APPS_VARIABLE),
        ("runuser", SUDO_WITH_THE_APPS_VARIABLE),
        ("setpriv", "exec " + SUDO_WITH_THE_APPS_VARIABLE),
    ],
)
def test_the_apps_variable_through_another_users_job_and_sudo_gets_the_app(
    shared, sudo_rule, how, script
):
    # Issue 53, item 3: a root app starts a job as another user (subprocess.run(..., user=...),
    # su, runuser, setpriv) with its environment; the job, under a sudo rule with SETENV, gives
    # the app's variable to sudo, which runs the executable as root, a descendant of the app's
    # process with the app's user and a secret that proves the app gave it. The secret passed
    # through another user's process: the app runs, not CODE.
    marker = shared.parent / "ran"
    result = run([shared, "job-as", how, sudo_rule, script, writes(marker)], cwd=shared.parent)
    assert not marker.exists(), "another user's job ran Python as root with the app's variable"
    assert json.loads(result.stdout) == {"code": 1, "out": "", "err": "unknown -c\n"}


def test_the_apps_own_job_through_sudo_as_the_same_user_is_a_self_call(shared, sudo_rule):
    # The same chain with no other user in it (root's job, root's sudo to root): the secret
    # never left the app's user, and the executable reads a python command line. (Also what
    # tells that the test above fails for the right reason.)
    marker = shared.parent / "ran"
    script = SUDO_WITH_THE_APPS_VARIABLE + "; echo done"
    result = run([shared, "job-as", "self", sudo_rule, script, writes(marker)], cwd=shared.parent)
    assert json.loads(result.stdout) == {"code": 0, "out": "done\n", "err": ""}
    assert marker.exists()


def test_a_job_of_another_user_that_starts_the_executable_itself_gets_the_app(shared, user):
    # subprocess.run([sys.executable, "-c", CODE], user=other): the variable names the app's
    # user, not the job's. The job gets the app.
    require(os.geteuid() == 0, "needs root")
    name = pwd.getpwuid(user[0]).pw_name
    marker = shared.parent / "ran"
    script = "{exe} -c {code}"
    result = run([shared, "job-as", "user", name, script, writes(marker)], cwd=shared.parent)
    assert not marker.exists(), "another user ran Python with the app's variable"
    assert json.loads(result.stdout) == {"code": 1, "out": "", "err": "unknown -c\n"}


#: `python -c FLOOD IDENTITY SECONDS`: connects to every listener of the executable whose
#: device and inode are IDENTITY (`<dev>:<ino>` in hex; the names are public, in
#: /proc/net/unix) and closes, again and again: each connection stays in the listener's queue
#: until the app drains it.
FLOOD = """
import os, socket, sys, time
identity, until = sys.argv[1], time.monotonic() + float(sys.argv[2])
names = []
count = 0
while time.monotonic() < until:
    if not names:
        names = [line.split()[-1][1:] for line in open("/proc/net/unix").read().splitlines()[1:]
                 if f"@ingot-self/{identity}/" in line]
    for name in names:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect("\\0" + name)
            count += 1
        except OSError:
            pass
        s.close()
print(len(names), count)
"""


def test_a_flood_of_connections_from_another_user_never_turns_a_self_call_into_the_app(
    app, user, tmp_path
):
    # Issue 39, item 6: anyone may connect to an abstract socket. A flood keeps the listener's
    # queue full: the app's drain is bounded, and a child that finds the queue full still
    # finds the name its parent's secret makes.
    require(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    uid, gid = user
    ready, go = tmp_path / "ready", tmp_path / "go"
    calls = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import proclimit, sys; r = proclimit.run(sys.argv[1:], "
            "max_processes=16, timeout=120); print(r.stdout, r.returncode, r.limit_hit, r.timed_out)",
            str(app),
            "calls",
            str(ready),
            str(go),
            "20",
        ],
        cwd=Path(proclimit.__file__).parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):
        if ready.exists():
            break
        time.sleep(0.05)
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    identity = f"{os.stat(app).st_dev:x}:{os.stat(app).st_ino:x}"
    # (a Python the other user may run: this one may live in root's home)
    python = next(p for p in ("/usr/bin/python3", sys.executable) if os.path.exists(p))
    floods = []
    try:
        floods = [
            subprocess.Popen(
                [*as_user, python, "-I", "-c", FLOOD, identity, "10"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        time.sleep(1)
        go.touch()
        out, _ = calls.communicate(timeout=180)
        results = [flood.communicate(timeout=60) for flood in floods]
    finally:
        for process in [calls, *floods]:
            if process.poll() is None:
                process.kill()
            process.communicate()
    flooded = []
    for flood_out, flood_err in results:
        assert flood_out.split(), f"the flooder did not run: {flood_err[-2000:]}"
        flooded.append(int(flood_out.split()[1]))
    assert sum(flooded) > 4096, flooded  # (the flood filled the listener's queue)
    assert out.rsplit(" ", 3)[1:] == ["0", "0", "False\n"], out
    assert json.loads(out.rsplit(" ", 3)[0]) == ["python\n"], out


def test_a_set_user_id_start_without_proc_never_trusts_argv0(shared, user):
    # Issue 39, item 2: without /proc, the launcher finds its own file from argv[0] and PATH,
    # which the caller chooses: `exec -a ATTACKER_EXE SUID_EXE` ran the attacker's archive with
    # the owner's privileges. A privileged start (AT_SECURE) never falls back: it stops.
    require(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    require(shutil.which("unshare") and shutil.which("bash"), "needs unshare and bash")
    uid, gid = user
    suid = shared.parent / "suid-app"
    shutil.copyfile(shared, suid)
    os.chown(suid, 0, 0)
    suid.chmod(0o4755)
    marker = shared.parent / "ran"
    as_user = f"setpriv --reuid={uid} --regid={gid} --clear-groups"
    # (the attacker's "archive" is any executable of theirs: here another copy of an app)
    command = f"exec -a {shared} {suid} reap {marker}"
    result = run([*NO_PROC, "sh", *as_user.split(), "bash", "-c", command])
    assert not marker.exists(), "the set-user-ID executable ran the caller's archive"
    assert result.returncode == 1, result
    assert "privileged start" in result.stderr and "not trusted" in result.stderr, result.stderr


def test_a_set_user_id_start_ignores_the_callers_ingot_variables_and_umask(shared, user):
    # Issue 39, item 3: INGOT_CACHE_DIR=/new/path INGOT_NATIVE=cache with umask 000 made root
    # create world-writable directories wherever the caller said. A privileged start reads no
    # INGOT_* variable (secure_getenv's rule), and makes no directory writable by others.
    require(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    uid, gid = user
    suid = shared.parent / "suid-app"
    shutil.copyfile(shared, suid)
    os.chown(suid, 0, 0)
    suid.chmod(0o4755)
    chosen = shared.parent / "chosen" / "by" / "caller"
    (shared.parent / "chosen").mkdir()
    (shared.parent / "chosen").chmod(0o777)
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    env = {"PATH": os.environ["PATH"], "INGOT_CACHE_DIR": str(chosen), "INGOT_NATIVE": "cache"}
    result = run([*as_user, "sh", "-c", 'umask 000; exec "$0" native', suid], env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"uid": uid, "euid": 0}
    assert not (shared.parent / "chosen" / "by").exists(), "root made the caller's directories"


# --- chains that are not chains of self-calls ------------------------------------------------------


def test_a_chain_through_shells_stops_at_the_depth_limit(app):
    # app -> sh -> app -> sh ...: no app is the parent of the next one, so no process is a
    # self-call, yet the chain must end as a chain of self-calls does.
    result = run([app, "chain"], max_processes=40)
    assert "too many nested self-calls" in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1


def test_a_chain_without_environment_or_proc_stops_at_the_depth_limit(app):
    # The app starts itself with env={}: neither the variable nor /proc tells the child anything.
    require(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare")
    result = run([*NO_PROC, "sh", app, "again-scrubbed"], max_processes=40)
    assert "too many nested self-calls" in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1
