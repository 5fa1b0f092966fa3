"""Self-calls (crates/ingot-launcher/README.md, "Self-calls"): a process a built app starts from
its own executable reads a python command line as python does, with the app's archive as its
library; anyone else starting the executable gets the app, whatever its arguments; a chain of
self-calls that never ends stops at a depth limit; the fast exit loses nothing finalization
would have written.

Every executable here runs under a process-count limit (tests/support/proclimit.py) and a timeout: a
regression in self-calls fails a test instead of filling the machine with processes.
"""

import gzip
import json
import os
import re
import shutil
import subprocess
import zipfile

import pytest

import proclimit
from test_launcher import (  # noqa: F401 (launcher and launcher_python are fixtures)
    launcher,
    launcher_python,
    launcher_python_version,
    make_app,
)

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

APP = {
    "selfapp/__init__.py": "",
    "selfapp/work.py": """
        def square(x):
            return x * x
    """,
    "selfapp/cli.py": """
        import json
        import os
        import subprocess
        import sys

        from selfapp.work import square

        def child(args, **options):
            done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                                  timeout=60, **options)
            return {"code": done.returncode, "out": done.stdout, "err": done.stderr}

        def main():
            what = sys.argv[1] if len(sys.argv) > 1 else "hello"
            if what == "hello":
                print(json.dumps({"app": sys.argv, "orig": sys.orig_argv,
                                  "environ": sorted(os.environ)}))
            elif what == "call":  # call JSON-ARGS [JSON-OPTIONS]: start sys.executable
                options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
                print(json.dumps(child(json.loads(sys.argv[2]), **options)))
            elif what in ("shell", "shellenv"):  # shell COMMAND [ARG]: $0 is the executable
                # (shellenv: with a copy of os.environ, as invoke and other task runners give)
                env = dict(os.environ) if what == "shellenv" else None
                done = subprocess.run(["sh", "-c", sys.argv[2], sys.executable, *sys.argv[3:]],
                                      capture_output=True, text=True, timeout=60, env=env)
                print(json.dumps({"code": done.returncode, "out": done.stdout,
                                  "err": done.stderr}))
            elif what == "forked":  # a forked child of the app calls sys.executable
                pid = os.fork()
                if pid == 0:
                    print(json.dumps(child(["-c", "print('python')"])), flush=True)
                    os._exit(0)
                os.waitpid(pid, 0)
            elif what == "forkexec":  # forkexec HOW: a forked child replaces itself (loky < 1.5)
                how, args = sys.argv[2], [sys.executable, "-c", "print('python')"]
                pid = os.fork()
                if pid == 0:
                    if how == "execv":
                        os.execv(sys.executable, args)
                    os.execve(sys.executable, args, {} if how == "empty" else dict(os.environ))
                _, status = os.waitpid(pid, 0)
                sys.exit(os.waitstatus_to_exitcode(status))
            elif what == "secrets":  # the variable the app's child got, then a forked child's
                code = ("print([v for v in open('/proc/self/environ').read().split('\\\\0')"
                        " if v.startswith('INGOT_PARENT=')][0][13:])")
                print(child(["-c", code])["out"], end="", flush=True)
                pid = os.fork()
                if pid == 0:
                    print(child(["-c", code])["out"], end="", flush=True)
                    os._exit(0)
                os.waitpid(pid, 0)
            elif what == "replace":  # the app replaces itself, with an environment of its making
                os.execve(sys.executable, [sys.executable, *sys.argv[2:]], dict(os.environ))
            elif what == "forkagain":  # a forked child replaces itself with the app, again
                pid = os.fork()
                if pid == 0:
                    os.execve(sys.executable, [sys.executable, *sys.argv[1:]], dict(os.environ))
                _, status = os.waitpid(pid, 0)
                sys.exit(os.waitstatus_to_exitcode(status))
            elif what == "again":  # starts itself with its own arguments, unconditionally
                env = {} if sys.argv[2:3] == ["scrubbed"] else None
                done = subprocess.run([sys.executable, *sys.argv[1:]], env=env)
                sys.exit(done.returncode)
            elif what == "pool":  # pool METHOD
                import multiprocessing
                with multiprocessing.get_context(sys.argv[2]).Pool(2) as pool:
                    print(pool.map(square, range(6)))
            elif what == "executor":
                import concurrent.futures
                with concurrent.futures.ProcessPoolExecutor(2) as executor:
                    print(list(executor.map(square, range(6))))
            elif what == "frozen":  # multiprocessing's command line for frozen executables
                import multiprocessing
                sys.frozen = True
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    print(pool.map(square, range(3)))
            elif what == "shells":  # shells N AT-ONCE: N self-calls, each through its own sh
                import concurrent.futures
                def through_a_shell(_):
                    return subprocess.run(["sh", "-c", '"$0" -c "print(42)"', sys.executable],
                                          capture_output=True, text=True, timeout=60).stdout
                count, at_once = int(sys.argv[2]), int(sys.argv[3])
                with concurrent.futures.ThreadPoolExecutor(at_once) as threads:
                    print(json.dumps(sorted(set(threads.map(through_a_shell, range(count))))))
            elif what == "pty":  # the executable on a pty, as pexpect starts it (pty.fork,
                import pty  # then os.execv in the child)
                pid, fd = pty.fork()
                if pid == 0:
                    os.execv(sys.executable, [sys.executable, "-c",
                                              "import os; print(os.isatty(1), 'done')"])
                out = b""
                while True:
                    try:
                        data = os.read(fd, 4096)
                    except OSError:  # EIO: the other side closed
                        break
                    if not data:
                        break
                    out += data
                os.waitpid(pid, 0)
                print(json.dumps(out.decode()))
            elif what == "files":  # files PREFIX: written, never closed
                import gzip, zipfile
                global kept
                plain = open(sys.argv[2] + ".txt", "w")
                plain.write("line of forty-five characters, not flushed.\\n")
                archive = gzip.open(sys.argv[2] + ".gz", "wt")
                archive.write("compressed, trailer written at close\\n")
                bundle = zipfile.ZipFile(sys.argv[2] + ".zip", "w")
                bundle.writestr("inner.txt", "central directory written at close")
                def writer():
                    with open(sys.argv[2] + ".gen", "w") as out:
                        out.write("written by a suspended generator")
                        yield
                generator = writer()
                next(generator)
                class Noisy:
                    def __del__(self):
                        print("__del__ ran")
                kept = [plain, archive, bundle, generator, Noisy()]
                print("main done")
            else:
                raise SystemExit(f"unknown {what}")
    """,
}


LAUNCH = {"version": 1, "run": {"kind": "function", "module": "selfapp.cli", "function": "main"}}


def run(app, *args, max_processes=16, timeout=120, **options):
    """Runs the app under the process limit; fails the test if the limit was hit or it timed out."""
    result = proclimit.run([app, *args], max_processes=max_processes, timeout=timeout, **options)
    assert not result.timed_out, f"timed out after {timeout} s: {result.stderr[-2000:]}"
    assert result.limit_hit == 0, (
        f"hit the limit of {max_processes} processes: {result.stderr[-2000:]}"
    )
    return result


def call(app, args, **options):
    """The app starts `[sys.executable, *args]`; what that child did."""
    result = run(app, "call", json.dumps(args), json.dumps(options))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def app(tmp_path_factory, launcher, launcher_python):
    return make_app(
        tmp_path_factory.mktemp("selfcall"),
        launcher,
        launcher_python,
        LAUNCH,
        name="selfapp",
        files=APP,
    )


@pytest.fixture(scope="module")
def app_without_python_mode(tmp_path_factory, launcher, launcher_python):
    """The same application, built with --no-python-mode (`"python_mode": false`)."""
    return make_app(
        tmp_path_factory.mktemp("no-python-mode"),
        launcher,
        launcher_python,
        {**LAUNCH, "python_mode": False},
        name="selfapp",
        files=APP,
    )


# --- python command lines -------------------------------------------------------------------------


def test_dash_c_runs_code_with_python_argv(app):
    code = "import json, sys; print(json.dumps([sys.argv, sys.orig_argv[1:], sys.path]))"
    child = call(app, ["-c", code, "a", "b"])
    assert child["code"] == 0, child["err"]
    argv, orig, path = json.loads(child["out"])
    assert argv == ["-c", "a", "b"]
    assert orig == ["-c", code, "a", "b"]
    assert path == ["", str(app)]  # as python: the current directory, then the library


def test_the_parent_variable_reaches_children_not_os_environ(app):
    code = (
        "import os; inherited = open('/proc/self/environ', 'rb').read().split(b'\\0');"
        " print([v.decode() for v in inherited if v.startswith(b'INGOT_PARENT=')],"
        " os.environ.get('INGOT_PARENT'), os.getppid())"
    )
    child = call(app, ["-c", code])
    assert child["code"] == 0, child["err"]
    variables, in_os_environ, parent = child["out"].rsplit(" ", 2)
    # <pid>:<depth>:<uid>:<the parent's secret>, 16 random bytes in hex.
    assert re.fullmatch(
        rf"\['INGOT_PARENT={parent.strip()}:0:{os.getuid()}:[0-9a-f]{{32}}'\]", variables
    ), variables
    assert in_os_environ == "None"
    assert "INGOT_PARENT" not in json.loads(run(app).stdout)["environ"]


def test_a_child_given_an_environment_of_the_apps_making_is_a_self_call(app):
    # env= replaces the environment: the variable is added for a start of sys.executable (and
    # taken out again before the child's Python sees it).
    code = "import json, os; print(json.dumps(sorted(os.environ)))"
    for env in ({}, {"PATH": os.environ["PATH"], "X": "1"}):
        child = call(app, ["-c", code], env=env)
        assert (child["code"], child["err"]) == (0, ""), env
        # Python's: what it was given (and LC_CTYPE, which its C locale coercion sets).
        assert set(json.loads(child["out"])) - {"LC_CTYPE"} == set(env), child


def test_interpreter_options_before_the_command(app):
    code = (
        "import json, sys; print(json.dumps([sys.path, sys.flags.isolated, sys.flags.no_site,"
        " sys.flags.optimize, sys.flags.dev_mode, sys.warnoptions, sys._xoptions,"
        " sys.stdout.write_through]))"
    )
    child = call(
        app, ["-IS", "-O", "-W", "error::DeprecationWarning", "-X", "dev", "-u", "-c", code]
    )
    assert child["code"] == 0, child["err"]
    path, isolated, no_site, optimize, dev, warnings, xoptions, write_through = json.loads(
        child["out"]
    )
    assert (path, isolated, no_site, optimize, dev, write_through) == (
        [str(app)],
        1,
        1,
        1,
        True,
        True,
    )
    assert warnings[-1] == "error::DeprecationWarning" and xoptions == {"dev": True}


def test_dash_m_runs_any_module_of_the_archive(app):
    child = call(app, ["-m", "json.tool", "--sort-keys"], input='{"b": 1, "a": [2]}')
    assert child == {
        "code": 0,
        "out": '{\n    "a": [\n        2\n    ],\n    "b": 1\n}\n',
        "err": "",
    }
    child = call(app, ["-m", "selfapp.work"])  # the app's own modules too
    assert (child["code"], child["err"]) == (0, "")
    child = call(app, ["-I", "-m", "http.server", "--help"])
    assert child["code"] == 0 and child["out"].startswith("usage: "), child


def test_dash_m_of_a_missing_module_says_so(app):
    child = call(app, ["-m", "no_such_module"])
    assert child["code"] == 1
    first, hint = child["err"].splitlines()
    assert first == f"{app}: No module named no_such_module"  # python's message
    assert hint.startswith("hint: `-m` runs the modules of the application's archive")


def test_a_script_runs_with_its_directory_on_sys_path(app, tmp_path):
    (tmp_path / "helper.py").write_text("WHERE = __file__\n")
    script = tmp_path / "script.py"
    script.write_text("import sys, helper\nprint(helper.WHERE, sys.argv, __name__)\n")
    child = call(app, [str(script), "x"])
    assert child == {
        "code": 0,
        "out": f"{tmp_path / 'helper.py'} {[str(script), 'x']} __main__\n",
        "err": "",
    }


def test_dash_reads_the_program_from_stdin(app):
    child = call(app, ["-", "arg"], input="import sys; print('stdin', sys.argv)")
    assert child == {"code": 0, "out": "stdin ['-', 'arg']\n", "err": ""}


def test_version_and_exit_status_as_python(app, launcher):
    version = launcher_python_version(launcher)
    child = call(app, ["-V"])
    assert child["code"] == 0 and child["out"].startswith(f"Python {version}."), child
    assert call(app, ["-c", "raise SystemExit(3)"])["code"] == 3
    failed = call(app, ["-c", "1/0"])
    assert failed["code"] == 1 and failed["err"].endswith("ZeroDivisionError: division by zero\n")


# --- what runs the app ----------------------------------------------------------------------------


def test_restart_patterns_run_the_app(app):
    # [sys.executable, sys.argv[0], *args] (werkzeug's reloader): sys.argv from argv[0] on.
    child = call(app, [str(app), "hello", "-c", "x"])
    assert json.loads(child["out"])["app"] == [str(app), "hello", "-c", "x"]
    # [sys.executable, *app_args]: the application's own arguments.
    child = call(app, ["hello", "--port", "80"])
    assert json.loads(child["out"])["app"] == [str(app), "hello", "--port", "80"]
    # [sys.executable] alone: the app.
    child = call(app, ["--flag-of-the-app"])
    assert child["code"] == 1 and "unknown --flag-of-the-app" in child["err"]


def test_a_person_gets_the_app_whatever_the_arguments(app, tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')"
    for args in (
        ["-c", code],
        ["-I", "-c", code],
        ["-c", code, "--multiprocessing-fork"],
        ["--multiprocessing-fork", "pipe_handle=0"],
        ["-m", "json.tool"],
    ):
        result = run(app, *args, env={"PATH": os.environ["PATH"]})
        assert result.returncode == 1 and "SystemExit" not in result.stderr, (args, result)
        assert result.stderr.startswith("unknown "), (args, result.stderr)
        assert not marker.exists(), args


def test_a_forged_parent_variable_is_not_enough(app, tmp_path):
    marker = tmp_path / "ran"
    for forged in (f"{os.getpid()}:0:{os.getuid()}", f"{os.getpid()}:0:{os.getuid()}:{'5e' * 16}"):
        env = {"PATH": os.environ["PATH"], "INGOT_PARENT": forged}
        result = run(app, "-c", f"open({str(marker)!r}, 'w').write('x')", env=env)
        assert result.returncode == 1 and not marker.exists(), forged


def test_a_shell_the_app_runs_passes_python_mode_on(app, tmp_path):
    # Issue 37: `subprocess.run("EXE x.py", shell=True)`, `sh -c '<sys.executable> x.py && ...'`
    # (configuration tools run their modules so): the shell stays the parent, and the variable
    # it passed on proves that the app started it.
    shell = run(app, "shell", '"$0" -c "print(42)"; echo done')  # not `exec`: sh stays the parent
    assert json.loads(shell.stdout) == {"code": 0, "out": "42\ndone\n", "err": ""}
    script = tmp_path / "tool.py"
    script.write_text("import sys; print('script', sys.argv[1:])\n")
    shell = run(app, "shell", '"$0" "$1" a && sleep 0', str(script))
    assert json.loads(shell.stdout) == {"code": 0, "out": "script ['a']\n", "err": ""}
    # A program in between that drops the environment drops the proof: the app runs.
    shell = run(app, "shell", 'env -i "$0" -c "print(42)"; echo done')
    assert json.loads(shell.stdout) == {"code": 0, "out": "done\n", "err": "unknown -c\n"}
    # The shell given an environment of the app's making (a copy of os.environ, which lacks the
    # variable: invoke does so) gets the variable as a child that inherits it would.
    shell = run(app, "shellenv", '"$0" "$1" b && sleep 0', str(script))
    assert json.loads(shell.stdout) == {"code": 0, "out": "script ['b']\n", "err": ""}


def test_sudo_gets_the_app(app, tmp_path):
    # sudo runs the command as its own child and scrubs the environment: whatever the command
    # line, the app runs, even when the app itself is what called sudo. (With -E, the app's own
    # environment, the same user: a descendant of the app's, as through a shell. Another user's
    # sudo or setpriv: tests/test_selfcall_attacks.py.)
    sudo = shutil.which("sudo")
    if sudo is None or os.geteuid() != 0:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("sudo (as root) is required (INGOT_REQUIRE_PYTHONS)")
        pytest.skip("needs sudo, as root")
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')"
    done = run(app, "shell", f'exec {sudo} -n "$0" -c "$1"', code)
    assert json.loads(done.stdout) == {"code": 1, "out": "", "err": "unknown -c\n"}
    assert not marker.exists()


def test_self_calls_through_shells_in_parallel_and_on_a_pty(app):
    # Issue 53: a self-call through a program in between reads /proc to check that every
    # process between it and the app is the app's user. 200 of them, 20 at a time (each check
    # races with the other shells' starts and exits). And one on a pty, as pexpect starts it.
    result = run(app, "shells", "200", "20", max_processes=128, timeout=300)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr[-2000:]
    assert json.loads(result.stdout) == ["42\n"]
    result = run(app, "pty")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr[-2000:]
    assert json.loads(result.stdout) == "True done\r\n"


def test_without_proc_the_variable_tells_self_calls(app):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("running without /proc needs root and unshare (INGOT_REQUIRE_PYTHONS)")
        pytest.skip("running without /proc needs root and unshare (a mount namespace)")
    no_proc = [
        "unshare",
        "--mount",
        "--fork",
        "sh",
        "-c",
        'mount -t tmpfs none /proc && exec "$@"',
        "sh",
        str(app),
    ]
    python = {"code": 0, "out": "python\n", "err": ""}
    result = proclimit.run([*no_proc, "call", json.dumps(["-c", "print('python')"])])
    assert (result.returncode, result.limit_hit) == (0, 0), result.stderr
    assert json.loads(result.stdout) == python
    # A forked child of the app names itself in the variable for its own children.
    result = proclimit.run([*no_proc, "forked"])
    assert (result.returncode, result.limit_hit) == (0, 0), result.stderr
    assert json.loads(result.stdout) == python
    # Someone else still gets the app.
    result = proclimit.run([*no_proc, "-c", "print('python')"])
    assert (result.returncode, result.stderr) == (1, "unknown -c\n")


@pytest.mark.parametrize("how", ["execve", "execv", "empty"])
def test_a_forked_child_that_replaces_itself_with_the_executable_is_a_self_call(app, how):
    # Issue 37, regression 2: loky's workers before joblib 1.5 start so (os.fork, then
    # os.execve(sys.executable, args, a copy of os.environ), which lacks the variable).
    result = run(app, "forkexec", how)
    assert (result.returncode, result.stdout, result.stderr) == (0, "python\n", "")


def test_a_process_that_replaces_itself_restarts_the_app(app):
    # Not forked: an exec of the executable is a restart, whatever the environment it is given.
    result = run(app, "replace", "-c", "print('python')")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "unknown -c\n")
    result = run(app, "replace", "hello")
    assert json.loads(result.stdout)["app"] == [str(app), "hello"]


def test_a_forked_child_makes_a_new_secret_for_its_children(app):
    # The parent's secret, which a forked child knows, would make the name of the child's
    # listener predictable (issue 39, item 6).
    result = run(app, "secrets")
    assert result.returncode == 0, result.stderr
    parent, child = (line.split(":") for line in result.stdout.split())
    assert parent[0] != child[0] and parent[1:3] == child[1:3]
    assert parent[3] != child[3] and len(child[3]) == 32


# --- no fork storm --------------------------------------------------------------------------------


def test_forked_children_replacing_themselves_stop_at_the_depth_limit(app):
    result = run(app, "forkagain", max_processes=24, timeout=60)
    assert result.returncode == 1
    assert "too many nested self-calls: this process is 9 deep" in result.stderr, result.stderr


@pytest.mark.parametrize("environment", ["inherited", "scrubbed"])
def test_a_self_call_loop_stops_at_the_depth_limit(app, environment):
    result = run(app, "again", environment, max_processes=24, timeout=60)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"ingot: {app}: too many nested self-calls: this process is 9 deep")
    assert lines[1].startswith("hint: ")
    assert len(lines) == 2, result.stderr


# --- multiprocessing --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_pools(app, method):
    result = run(app, "pool", method)
    assert (result.returncode, result.stdout, result.stderr) == (0, "[0, 1, 4, 9, 16, 25]\n", "")


def test_process_pool_executor(app):
    result = run(app, "executor")
    assert (result.returncode, result.stdout, result.stderr) == (0, "[0, 1, 4, 9, 16, 25]\n", "")


def test_multiprocessing_frozen_command_line(app):
    result = run(app, "frozen")
    assert (result.returncode, result.stdout, result.stderr) == (0, "[0, 1, 4]\n", "")


# --- exit -------------------------------------------------------------------------------------------


def test_fast_exit_finalizes_what_was_left_open(app, tmp_path):
    prefix = tmp_path / "out"
    result = run(app, "files", str(prefix))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "main done\n__del__ ran\n"
    assert (tmp_path / "out.txt").read_text() == "line of forty-five characters, not flushed.\n"
    assert (
        gzip.decompress((tmp_path / "out.gz").read_bytes())
        == b"compressed, trailer written at close\n"
    )
    with zipfile.ZipFile(tmp_path / "out.zip") as bundle:
        assert bundle.read("inner.txt") == b"central directory written at close"
    assert (tmp_path / "out.gen").read_text() == "written by a suspended generator"


def test_a_failed_flush_of_stdout_is_reported_once_and_exits_120(app):
    # As python: one report (the second flush at exit leaves a stream that failed alone).
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [app, "hello"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert done.returncode == 120
    assert done.stderr == (
        "Exception ignored in: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>\n"
        "OSError: [Errno 28] No space left on device\n"
    ), done.stderr
    # A closed pipe: the same, once.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [app, "hello"], stdout=writer, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(writer)
    assert done.returncode == 120
    assert done.stderr.count("Exception ignored in:") == 1, done.stderr
    assert "BrokenPipeError: [Errno 32] Broken pipe" in done.stderr, done.stderr


def test_without_python_mode_even_the_apps_own_children_get_the_app(app_without_python_mode):
    # A privilege boundary: -c, -m and multiprocessing's frozen form run the application too.
    for args in (["-c", "print('python')"], ["-m", "json.tool"], ["--multiprocessing-fork"]):
        child = call(app_without_python_mode, args)
        assert child == {"code": 1, "out": "", "err": f"unknown {args[0]}\n"}, args
    # A start with no arguments runs the application, as ever.
    child = call(app_without_python_mode, [])
    assert child["code"] == 0, child
    assert len(json.loads(child["out"])["app"]) == 1, child
