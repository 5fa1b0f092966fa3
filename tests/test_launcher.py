"""The launcher (crates/ingot-launcher): an executable with an archive appended runs the app in it,
importing everything from the archive.

The launcher is built once per session (`cargo build -p ingot-launcher`), or taken from
`INGOT_LAUNCHER`. Archives are packed by a Python of the version the launcher embeds (this one,
or the one `INGOT_TEST_PYTHONS` lists for it) with `ingot.build.archive.pack.pack`, plus the
launch configuration `__ingot__/launch.json`.
"""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ingot
from ingot.build.resolve.launcher import launcher_facts
from ingot.errors import BuildError

import proclimit
from helpers import ROOT, interpreters, python_for

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

APP = {
    "app/__init__.py": "",
    "app/cli.py": """
        import json
        import sys

        def square(x):
            return x * x

        def main():
            what = sys.argv[1] if len(sys.argv) > 1 else "hello"
            if what == "hello":
                print("hello, world")
            elif what == "return":
                return int(sys.argv[2]) if sys.argv[2].lstrip("-").isdigit() else sys.argv[2]
            elif what == "exit":
                sys.exit(sys.argv[2] if len(sys.argv) > 2 else None)
            elif what == "raise":
                raise ValueError("boom")
            elif what == "interrupt":
                raise KeyboardInterrupt
            elif what == "info":
                print(json.dumps({"executable": sys.executable, "argv": sys.argv,
                                  "path": sys.path, "prefix": sys.prefix}))
            elif what == "modules":
                import json as _json, ssl, sqlite3, decimal, email.message, xml.dom.minidom
                outside = {}
                for name, module in sorted(sys.modules.items()):
                    spec = getattr(module, "__spec__", None)
                    loader = getattr(spec, "loader", None) or getattr(module, "__loader__", None)
                    label = loader.__name__ if isinstance(loader, type) else type(loader).__name__
                    file = getattr(module, "__file__", None)
                    if label not in ("IngotFinder", "BuiltinImporter", "FrozenImporter") and (
                            spec is not None or file is not None):
                        outside[name] = label
                    elif file is not None and not file.startswith(sys.executable + "/"):
                        outside[name] = file
                print(_json.dumps(outside))
            elif what == "native":
                import ssl, sqlite3
                context = ssl.create_default_context()
                connection = sqlite3.connect(":memory:")
                connection.execute("create table t (x)")
                connection.executemany("insert into t values (?)", [(1,), (2,), (3,)])
                print(ssl.OPENSSL_VERSION.split()[0], context.verify_mode == ssl.CERT_REQUIRED,
                      connection.execute("select sum(x) from t").fetchone()[0])
            elif what == "shutdown":
                import atexit, threading, time
                atexit.register(lambda: print("atexit ran"))
                threading.Thread(target=lambda: (time.sleep(0.2), print("thread joined"))).start()
                sys.stdout.write("buffered, no newline|")
            elif what == "fsimport":
                import importlib.machinery
                directory = sys.argv[2]
                sys.path.append(directory)
                import diskmod, diskpkg.sub
                spec = importlib.machinery.PathFinder.find_spec("diskmod", [directory])
                print(diskmod.__file__, diskpkg.sub.VALUE, spec and spec.origin)
            elif what == "hooks":
                for hook in sys.path_hooks:
                    name = getattr(hook, "__name__", None)
                    if getattr(hook, "__self__", None) is not None and "ingot" in repr(hook).lower():
                        name = "archive"
                    print(name or type(hook).__name__)
            elif what == "regexes":
                import re
                name = "re._compiler" if sys.version_info >= (3, 11) else "sre_compile"
                compiler = sys.modules[name].compile
                before = (compiler.hits, compiler.misses)
                word = re.compile(r"(?P<word>[a-z]+)-(\\d+)", re.IGNORECASE)
                dynamic = re.compile("x+" + sys.argv[2])
                after = (compiler.hits - before[0], compiler.misses - before[1])
                plain = compiler.original(r"(?P<word>[a-z]+)-(\\d+)", int(re.IGNORECASE))
                print(json.dumps([type(compiler).__name__, after,
                                  [word.pattern, word.flags, word.groupindex] ==
                                  [plain.pattern, plain.flags, plain.groupindex],
                                  word.match("Abc-12").groups(), bool(dynamic.match("xxy"))]))
            elif what == "spawn":
                import multiprocessing
                with multiprocessing.get_context("spawn").Pool(2) as pool:
                    print(pool.map(square, range(5)))
            else:
                raise SystemExit(f"unknown {what}")
    """,
    "app/__main__.py": """
        import sys
        if sys.argv[1:] == ["shutdown"]:
            import app.cli
            app.cli.main()
        else:
            print("module", __name__, __spec__.name, "runpy" in sys.modules, sys.argv[1:])
        if sys.argv[1:] == ["fail"]:
            sys.exit(4)
    """,
}

FUNCTION = {"version": 1, "run": {"kind": "function", "module": "app.cli", "function": "main"}}
MODULE = {"version": 1, "run": {"kind": "module", "module": "app"}, "fast_exit": False}
SEALED = dict(FUNCTION, filesystem_imports=False)

PACK = """
import sys
import ingot.build.archive.pack as pack

output, site, launch = sys.argv[1:]
Writer = pack.ArchiveWriter

class WithLaunchConfig:
    # Adds __ingot__/launch.json to what `ingot pack` writes.
    def __init__(self, **options):
        self.writer = Writer(**options)
    def __len__(self):
        return len(self.writer)
    def __getattr__(self, name):
        return getattr(self.writer, name)
    def write(self, path):
        self.writer.add_data_file("__ingot__/launch.json", launch.encode())
        return self.writer.write(path)

pack.ArchiveWriter = WithLaunchConfig
pack.pack(output, directories=[site])
"""


def build_launcher(env=None):
    """`cargo build -p ingot-launcher` (debug: it shares the build of `cargo test --workspace`;
    libpython itself is optimized either way); returns the executable."""
    environment = dict(os.environ, **(env or {}))
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "ingot-launcher"], cwd=ROOT, check=True, env=environment
    )
    target = Path(environment.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "ingot-launcher"


def launcher_python_version(launcher):
    """The Python version the launcher embeds (from its .ingot.launcher section)."""
    return launcher_facts(launcher)["python"]


@pytest.fixture(scope="session")
def launcher():
    """The launcher executable (no archive appended): `INGOT_LAUNCHER`, or built for the Python
    pyo3 finds (`PYO3_PYTHON` or `python3`); if no test Python has that version, built again in
    a target directory of its own for this Python."""
    if os.environ.get("INGOT_LAUNCHER"):
        return Path(os.environ["INGOT_LAUNCHER"])
    if shutil.which("cargo") is None:
        pytest.skip("cargo is needed to build the launcher (or set INGOT_LAUNCHER)")
    path = build_launcher()
    if launcher_python_version(path) in interpreters() or os.environ.get("PYO3_PYTHON"):
        return path
    version = "%d.%d" % sys.version_info[:2]
    base = getattr(sys, "_base_executable", sys.executable)
    return build_launcher(
        {"PYO3_PYTHON": base, "CARGO_TARGET_DIR": str(ROOT / "target" / f"launcher-{version}")}
    )


@pytest.fixture(scope="session")
def launcher_python(launcher):
    """A Python of the version the launcher embeds, with ingot installed: it packs the archives."""
    version = launcher_python_version(launcher)
    if version == "%d.%d" % sys.version_info[:2]:
        return sys.executable
    return python_for(version)


def make_app(tmp_path, launcher, python, launch, name="app", files=None):
    """An executable: the launcher with an archive of `files` (default APP) and `launch`."""
    site = tmp_path / f"{name}-site"
    for relative, source in (APP if files is None else files).items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(textwrap.dedent(source))
    archive = tmp_path / f"{name}.ingot"
    subprocess.run(
        [python, "-c", PACK, archive, site, json.dumps(launch)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    app = tmp_path / name
    with open(app, "wb") as out:
        out.write(launcher.read_bytes())
        out.write(archive.read_bytes())
    app.chmod(0o755)
    return app


@pytest.fixture(scope="session")
def function_app(tmp_path_factory, launcher, launcher_python):
    return make_app(tmp_path_factory.mktemp("function"), launcher, launcher_python, FUNCTION)


@pytest.fixture(scope="session")
def module_app(tmp_path_factory, launcher, launcher_python):
    return make_app(tmp_path_factory.mktemp("module"), launcher, launcher_python, MODULE)


@pytest.fixture(scope="session")
def sealed_app(tmp_path_factory, launcher, launcher_python):
    return make_app(tmp_path_factory.mktemp("sealed"), launcher, launcher_python, SEALED)


def run(app, *args, env=None, timeout=60):
    """Runs the app under a process-count limit (tests/support/proclimit.py) and a timeout."""
    result = proclimit.run([str(app), *args], max_processes=16, env=env, timeout=timeout)
    assert not result.timed_out, f"timed out after {timeout} s: {result.stderr[-2000:]}"
    assert result.limit_hit == 0, f"hit the process limit: {result.stderr[-2000:]}"
    return result


def test_hello_world(function_app):
    result = run(function_app)
    assert (result.returncode, result.stdout, result.stderr) == (0, "hello, world\n", "")


@pytest.mark.parametrize(
    "args, code, stderr",
    [
        (["return", "3"], 3, ""),
        (["return", "0"], 0, ""),
        (["return", "not a number"], 1, "not a number\n"),
        (["exit"], 0, ""),
        (["exit", "the message"], 1, "the message\n"),
    ],
)
def test_exit_codes(function_app, args, code, stderr):
    result = run(function_app, *args)
    assert (result.returncode, result.stderr) == (code, stderr)


def test_uncaught_exception_prints_traceback_with_source(function_app):
    result = run(function_app, "raise")
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert f'File "{function_app}/app/cli.py"' in result.stderr
    assert 'raise ValueError("boom")' in result.stderr  # the source line, from the archive
    assert result.stderr.endswith("ValueError: boom\n")


def test_keyboard_interrupt_ends_by_sigint(function_app):
    result = run(function_app, "interrupt")
    assert result.returncode == -signal.SIGINT
    assert result.stderr.endswith("KeyboardInterrupt\n")


def test_module_kind_runs_as_main(module_app):
    result = run(module_app, "a", "b")
    # Run as `python -m app` would, through app.__main__, without importing runpy.
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "module __main__ app.__main__ False ['a', 'b']\n",
        "",
    )
    assert run(module_app, "fail").returncode == 4


def test_regular_expressions_come_compiled_from_the_archive(function_app):
    # The app's literal pattern is in the archive's table; the one it builds from argv is not.
    result = run(function_app, "regexes", "y")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["PrecompiledRegexes", [1, 1], True, ["Abc", "12"], True]


def test_executable_argv_and_path(function_app):
    result = run(function_app, "info", "x y")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["executable"] == str(function_app)
    assert info["argv"] == [str(function_app), "info", "x y"]
    assert info["path"] == [str(function_app)]


def test_every_module_comes_from_the_archive(function_app):
    result = run(function_app, "modules")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}


def test_ssl_and_sqlite3(function_app):
    result = run(function_app, "native")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "OpenSSL True 6\n"


@pytest.mark.parametrize("fast_exit", [True, False])
def test_exit_joins_threads_runs_atexit_and_flushes(function_app, module_app, fast_exit):
    # The function app exits fast (the default), the module app through Py_FinalizeEx.
    result = run(function_app if fast_exit else module_app, "shutdown")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "buffered, no newline|thread joined\natexit ran\n"


def test_environment_is_ignored(function_app, tmp_path):
    (tmp_path / "os.py").write_text("raise SystemExit('imported from PYTHONPATH')\n")
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path),
        PYTHONHOME="/junk/home",
        PYTHONSTARTUP=str(tmp_path / "os.py"),
        PYTHONOPTIMIZE="2",
        PYTHONINSPECT="1",
    )
    result = run(function_app, "info", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == [str(function_app)]


def test_multiprocessing_spawn(function_app):
    result = run(function_app, "spawn", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[0, 1, 4, 9, 16]\n"


@pytest.fixture
def disk_modules(tmp_path):
    """A directory with a module and a package, for an app to put on sys.path."""
    directory = tmp_path / "on-disk"
    (directory / "diskpkg").mkdir(parents=True)
    (directory / "diskmod.py").write_text("")
    (directory / "diskpkg" / "__init__.py").write_text("")
    (directory / "diskpkg" / "sub.py").write_text("VALUE = 'sub from disk'\n")
    return directory


def test_by_default_imports_come_from_directories_the_app_adds_after_the_archive(
    function_app, disk_modules
):
    result = run(function_app, "fsimport", str(disk_modules))
    assert result.returncode == 0, result.stderr
    module = disk_modules / "diskmod.py"
    # importlib.machinery.PathFinder.find_spec (pytest's assertion rewriter calls it) works too.
    assert result.stdout == f"{module} sub from disk {module}\n"
    # sys.path still starts as the archive alone; the archive still comes first.
    info = run(function_app, "info")
    assert json.loads(info.stdout)["path"] == [str(function_app)]
    assert run(function_app, "modules").stdout == "{}\n"
    # The standard path hooks in their usual order, after the archive's.
    hooks = run(function_app, "hooks")
    assert hooks.stdout.split() == ["archive", "zipimporter", "path_hook_for_FileFinder"], (
        hooks.stderr
    )


def test_no_filesystem_imports_when_sealed(sealed_app, disk_modules):
    result = run(sealed_app, "fsimport", str(disk_modules))
    assert result.returncode == 1
    # (3.15 adds a hint on a line of its own after the message)
    assert "ModuleNotFoundError: No module named 'diskmod'" in result.stderr


def test_ingot_build_filesystem_imports_option_and_key(tmp_path):
    from ingot import cli
    from ingot.build.resolve.project import load_project

    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "__init__.py").write_text("")
    (tool / "__main__.py").write_text("")
    for options, expected in (([], None), (["--no-filesystem-imports"], False)):
        out = tmp_path / "tool.ingot"
        assert (
            cli.main(
                [
                    "build",
                    str(tool),
                    "--archive-only",
                    "-q",
                    "--exclude",
                    "[!t]*",
                    "-o",
                    str(out),
                    *options,
                ]
            )
            == 0
        )
        launch = json.loads(ingot.IngotFinder(str(out))._read("__ingot__/launch.json"))
        assert launch.get("filesystem_imports") is expected
    (tmp_path / "pyproject.toml").write_text("[tool.ingot]\nfilesystem-imports = false\n")
    assert load_project(tmp_path).settings.filesystem_imports is False


# Runs in a mount namespace where /proc is an empty tmpfs: the app started by an absolute path, a
# relative path, a PATH search (through a symbolic link), and with an argv[0] that names nothing.
NO_PROC = """
import json, os, subprocess, sys
app, bin = sys.argv[1:]
def run(args, **options):
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, **options)
    return [done.returncode, done.stdout, done.stderr]
print(json.dumps({
    "proc": os.listdir("/proc"),
    "hello": run([app]),
    "absolute": run([app, "info"]),
    "relative": run(["./" + os.path.basename(app), "info"], cwd=os.path.dirname(app)),
    "path": run(["linked-app", "info"], env={"PATH": "/nonexistent:" + bin}),
    "nowhere": run(["no-such-app"], executable=app, env={"PATH": bin}),
}))
"""


def test_runs_without_proc(function_app, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("running without /proc needs root and unshare (INGOT_REQUIRE_PYTHONS)")
        pytest.skip("running without /proc needs root and unshare (a mount namespace)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "linked-app").symlink_to(function_app)
    script = 'mount -t tmpfs none /proc && exec "$@"'
    result = subprocess.run(
        [
            "unshare",
            "--mount",
            "--fork",
            "sh",
            "-c",
            script,
            "sh",
            sys.executable,
            "-I",
            "-c",
            NO_PROC,
            str(function_app),
            str(tmp_path / "bin"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 and "unshare" in result.stderr + result.stdout:
        pytest.skip(f"unshare --mount is not permitted here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["proc"] == []
    assert seen["hello"] == [0, "hello, world\n", ""]
    for how, argv0 in (
        ("absolute", str(function_app)),
        ("relative", f"./{function_app.name}"),
        ("path", "linked-app"),
    ):
        code, out, err = seen[how]
        assert (code, err) == (0, ""), (how, err)
        info = json.loads(out)
        assert info["executable"] == str(function_app.resolve()), how
        assert info["argv"] == [argv0, "info"] and info["path"] == [info["executable"]], how
    code, out, err = seen["nowhere"]
    assert (code, out) == (1, "")
    assert err.startswith("ingot: cannot find its own executable: /proc/self/exe: "), err
    assert 'argv[0] "no-such-app": no executable of that name on PATH' in err, err


def test_launcher_facts_from_its_elf_section(launcher, launcher_python, tmp_path):
    import importlib.metadata

    facts = launcher_facts(launcher)
    code = (
        "import importlib.util, sys; print('%d.%d' % sys.version_info[:2], "
        "importlib.util.MAGIC_NUMBER.hex(), sys.version.split()[0])"
    )
    python, magic, release = subprocess.run(
        [launcher_python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert (facts["python"], facts["bytecode_magic"]) == (python, magic)
    assert facts["python_release"] == release
    assert facts["ingot"] == importlib.metadata.version("pyingot")
    assert facts["format"] == 1 and facts["launch_config"] == [1]
    # The bare launcher says the same.
    bare = run(launcher)
    assert f"this is the ingot launcher for Python {python}" in bare.stderr
    # Read without running it: a launcher that is not executable is read all the same.
    copy = tmp_path / "not-executable"
    shutil.copyfile(launcher, copy)
    copy.chmod(0o644)
    assert launcher_facts(copy) == facts


def test_launcher_facts_of_other_files_are_clear_errors(launcher, tmp_path):
    true = shutil.which("true")
    with pytest.raises(
        BuildError,
        match=r"is not an ingot launcher: it has no \.ingot\.launcher "
        "section",
    ):
        launcher_facts(true)
    data = launcher.read_bytes()
    for name, content, reason in (
        ("half", data[: len(data) // 2], "it is truncated"),  # the section table is at the end
        ("header", data[:40], "it is truncated"),
        ("empty", b"", "it is not an ELF file"),
        ("text", b"#!/bin/sh\necho hello\n", "it is not an ELF file"),
    ):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(BuildError, match=f"{name} is not an ingot launcher: {reason}"):
            launcher_facts(tmp_path / name)
    with pytest.raises(BuildError, match="cannot read the launcher"):
        launcher_facts(tmp_path / "missing")


@pytest.mark.parametrize(
    "change", ["python", "python_release", "bytecode_magic", "launch_config", "format"]
)
def test_ingot_build_refuses_a_launcher_it_cannot_use(launcher, tmp_path, capsys, change):
    # The launcher with one of its facts changed in place (same length, so the ELF stays valid).
    from ingot import cli

    facts = launcher_facts(launcher)
    here = "%d.%d" % sys.version_info[:2]
    old = json.dumps({change: facts[change]})[1:-1].encode()
    release = facts["python_release"]
    other_release = release[:-1] + str((int(release[-1]) + 1) % 10)  # 3.11.7 -> 3.11.8
    new = {
        "python": f'"python": "{9 if here[-1] != "9" else 8}.{here[2:]}"',
        "python_release": f'"python_release": "{other_release}"',
        "bytecode_magic": '"bytecode_magic": "00000000"',
        "launch_config": '"launch_config": [7]',
        "format": '"format": 9',
    }[change].encode()
    data = launcher.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    changed = tmp_path / "changed-launcher"
    changed.write_bytes(data.replace(old, new))
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "__init__.py").write_text("")
    (tool / "__main__.py").write_text("")
    code = cli.main(
        ["build", str(tool), "--launcher", str(changed), "-q", "-o", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    if change != "format" and facts["python"] != here:  # refused for that first
        assert code == 1 and f"embeds Python {facts['python']}, but this is Python {here}" in err
        return
    assert code == 1, err
    assert {
        "python": f"embeds Python {new.decode()[11:-1]}, but this is Python {here}",
        "python_release": f"embeds Python {other_release}, but this is Python {release}: the "
        "executable would run one release's interpreter with the other's standard library",
        "bytecode_magic": "with bytecode magic 00000000, but this one's is",
        "launch_config": "reads launch configuration versions [7], not 1",
        "format": "is a launcher of a newer ingot",
    }[change] in err, err


def test_the_launcher_is_checked_once_and_its_bytes_held_to_that(launcher, tmp_path):
    # Resolution checks the launcher and records its sha256; the pipeline takes those bytes
    # only: a launcher replaced between the two is refused, not put into the executable.
    import shutil

    from ingot.build.pipeline import build
    from ingot.build.resolve.launcher import check_launcher
    from ingot.build.resolve.settings import Request, Settings
    from ingot.build.resolve.spec import resolve

    mine = tmp_path / "launcher"
    shutil.copyfile(launcher, mine)
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "__init__.py").write_text("")
    (tool / "__main__.py").write_text("")
    request = Request(source=str(tool), launcher=str(mine), settings=Settings(python="local"))
    spec = resolve(request)
    assert spec.target.launcher_sha256 is not None
    with mine.open("ab") as grown:
        grown.write(b"\0")
    with pytest.raises(BuildError, match="changed after the build was resolved"):
        build(dataclasses.replace(spec, plan=dataclasses.replace(spec.plan, output=tmp_path / "o")))
    assert not (tmp_path / "o").exists()
    # A runtime's launcher is held to its runtime's release (its interpreter is the child's).
    release = launcher_facts(launcher)["python_release"]
    check_launcher(launcher, None, release)
    with pytest.raises(BuildError, match=r"but its runtime is CPython 3\.0\.0"):
        check_launcher(launcher, None, "3.0.0")


def test_ingot_build_refuses_a_launcher_without_facts(tmp_path, capsys):
    from ingot import cli

    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "__init__.py").write_text("")
    (tool / "__main__.py").write_text("")
    assert (
        cli.main(
            [
                "build",
                str(tool),
                "--launcher",
                shutil.which("true"),
                "-q",
                "-o",
                str(tmp_path / "out"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "is not an ingot launcher: it has no .ingot.launcher section" in err, err
    assert not (tmp_path / "out").exists()


def tree_state(root):
    """Every path under ``root`` with its type, size and modification time."""
    state = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            info = os.lstat(path)
            state[os.path.relpath(path, root)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return state


def test_ingot_build_leaves_a_setuptools_project_as_it_was(launcher, tmp_path):
    project = tmp_path / "greet"
    (project / "src" / "greet").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "greet"
        version = "0.1"
        [project.scripts]
        greet = "greet:main"
    """)
    )
    (project / "src" / "greet" / "__init__.py").write_text(
        "import sys\ndef main():\n    print('greet', sys.argv[1:])\n"
    )
    # What the copy pip builds leaves out; they must be left alone, and not end up in the archive.
    for junk in (
        ".git/HEAD",
        ".venv/pyvenv.cfg",
        "env/pyvenv.cfg",
        "src/greet/__pycache__/x.pyc",
        "build/lib/stale.py",
        "dist/old.whl",
    ):
        (project / junk).parent.mkdir(parents=True, exist_ok=True)
        (project / junk).write_text("")
    before = tree_state(project)
    same_python = launcher_facts(launcher)["python"] == "%d.%d" % sys.version_info[:2]
    out = tmp_path / "greet-app"
    options = ["--launcher", str(launcher)] if same_python else ["--archive-only"]
    run_build = subprocess.run(
        [sys.executable, "-m", "ingot", "build", ".", "-o", str(out), "-q", *options],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=600,
    )
    if (
        run_build.returncode != 0
        and "pip could not install" in run_build.stderr
        and ("NewConnectionError" in run_build.stderr or "No matching" in run_build.stderr)
    ):
        pytest.skip(f"pip could not reach PyPI: {run_build.stderr[-300:]}")
    assert run_build.returncode == 0, run_build.stderr
    assert tree_state(project) == before  # no build/, no greet.egg-info, nothing touched
    names = {name for _, name, _ in ingot.IngotFinder(str(out)).entries()}
    assert "greet" in names and "greet-0.1.dist-info/METADATA" in names
    assert not [name for name in names if "stale" in name or name.startswith(("env", "build"))]
    if same_python:
        result = run(out, "a")
        assert (result.returncode, result.stdout) == (0, "greet ['a']\n"), result.stderr


def damaged(tmp_path, app, name, change):
    data = bytearray(app.read_bytes())
    change(data)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    path.chmod(0o755)
    return path


def index_offset(app):
    """The file offset of the archive's entry table (inside the index checksum)."""
    data = app.read_bytes()
    archive_size = int.from_bytes(data[-16:-8], "little")  # the trailer (docs/format.md)
    start = len(data) - archive_size
    entries_offset = int.from_bytes(data[start + 24 : start + 32], "little")
    return start + entries_offset


@pytest.fixture(scope="session")
def launcher_magic(launcher_python):
    code = "import importlib.util; print(importlib.util.MAGIC_NUMBER.hex())"
    return bytes.fromhex(
        subprocess.run(
            [launcher_python, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
    )


def small_app(tmp_path, launcher, name, magic, version, launch=None):
    """The launcher with a one-module archive (and `launch` as its launch configuration)."""
    writer = ingot.ArchiveWriter(bytecode_magic=magic, python_version=version)
    writer.add_module("app", source=b"")
    if launch is not None:
        writer.add_data_file("__ingot__/launch.json", launch.encode())
    archive = tmp_path / f"{name}.ingot"
    writer.write(str(archive))
    return damaged(tmp_path, launcher, name, lambda data: data.extend(archive.read_bytes()))


@pytest.mark.parametrize(
    "how",
    ["truncated", "cut-trailer", "index-byte", "bare", "no-config", "bad-config", "other-python"],
)
def test_damaged_app_fails_cleanly(
    tmp_path, function_app, launcher, launcher_python, launcher_magic, how
):
    version = tuple(
        map(int, re.search(r"(\d+)\.(\d+)", launcher_python_version(launcher)).groups())
    )
    if how == "truncated":
        app = damaged(
            tmp_path, function_app, how, lambda data: data.__delitem__(slice(-100_000, -16))
        )
    elif how == "cut-trailer":
        app = damaged(tmp_path, function_app, how, lambda data: data.__delitem__(slice(-10, None)))
    elif how == "index-byte":
        offset = index_offset(function_app) + 30
        app = damaged(
            tmp_path, function_app, how, lambda data: data.__setitem__(offset, data[offset] ^ 0xFF)
        )
    elif how == "bare":
        app = launcher
    elif how == "no-config":
        app = small_app(tmp_path, launcher, how, launcher_magic, version)
    elif how == "bad-config":
        app = small_app(
            tmp_path, launcher, how, launcher_magic, version, '{"version": 1, "run": {}}'
        )
    else:
        app = small_app(tmp_path, launcher, how, b"\0\0\r\n", (3, 99), json.dumps(FUNCTION))
    result = run(app)
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert re.fullmatch(r"ingot: [^\n]+: [^\n]+\n", result.stderr), result.stderr
    if how == "other-python":
        assert "was built for Python 3.99" in result.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_no_module_is_read_from_the_file_system(function_app, launcher_python, tmp_path):
    log = tmp_path / "strace.log"
    result = subprocess.run(
        [
            "strace",
            "-f",
            "-o",
            str(log),
            "-e",
            "trace=openat,open,stat,lstat,newfstatat,statx,access",
            str(function_app),
            "modules",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0 and "ptrace" in result.stderr:
        pytest.skip(f"strace cannot trace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    stdlib = subprocess.run(
        [launcher_python, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = re.findall(r'"([^"]*)"', log.read_text())
    assert paths, "strace logged no file access"
    offending = [
        path
        for path in paths
        if (
            path.endswith((".py", ".pyc", ".so"))
            and not path.startswith("/proc/self/fd/")
            and not re.search(r"/lib[^/]*\.so[.\d]*$", path)
        )
        or path.startswith(stdlib)
        or "site-packages" in path
        or "__pycache__" in path
    ]
    assert offending == []
    # The path configuration reads nothing either (3.10's would look for a pyvenv.cfg).
    assert [path for path in paths if path.endswith("pyvenv.cfg")] == []
