"""`ingot build` and `ingot inspect`: project settings, sources, archive-only builds run with the
importer, executables (launcher + archive), output safety, reproducibility."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import ingot
from ingot import cli
from ingot.build.pipeline import build
from ingot.build.resolve import inputs as sources
from ingot.build.resolve.environment import snapshot
from ingot.build.resolve.launcher import find_launcher, launcher_python
from ingot.build.resolve.settings import Request, Settings
from ingot.build.resolve.spec import resolve
from ingot.errors import BuildError
from ingot.inspection import describe

import proclimit
from helpers import EXAMPLES, HERE, ROOT, pip_build, real_launcher, run_archive, write_project

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

# --- building ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hello_archive(tmp_path_factory):
    out = tmp_path_factory.mktemp("hello")
    run = pip_build(out, EXAMPLES / "hello", "--archive-only", "-o", "hello.ingot")
    assert "runs hello:main" in run.stderr and "shared-library" in run.stderr
    return out / "hello.ingot"


def test_hello_archive_runs_with_the_importer(hello_archive):
    assert json.loads(ingot.IngotFinder(str(hello_archive))._read("__ingot__/launch.json")) == {
        "version": 1,
        "run": {"kind": "function", "module": "hello", "function": "main"},
    }
    run = run_archive(hello_archive)
    assert run.returncode == 0, run.stderr
    assert f"Hello from memory! (hello 1.0.0 from {hello_archive}/hello/__init__.py)" in run.stdout


def test_builds_are_reproducible(hello_archive, tmp_path):
    # Another copy of the project, another time, another working directory: the same bytes.
    copy = shutil.copytree(
        EXAMPLES / "hello",
        tmp_path / "elsewhere" / "hello",
        ignore=shutil.ignore_patterns("build", "*.egg-info"),
    )
    pip_build(
        tmp_path,
        copy,
        "--archive-only",
        "-o",
        "again.ingot",
        "-q",
        env={**os.environ, "SOURCE_DATE_EPOCH": "1234567890"},
    )
    assert (tmp_path / "again.ingot").read_bytes() == hello_archive.read_bytes()
    names = {name for _, name, _ in ingot.IngotFinder(str(hello_archive)).entries()}
    assert "hello-1.0.0.dist-info/METADATA" in names
    assert not any(name.endswith("direct_url.json") for name in names)


def test_cli_app_archive_runs_click_and_rich_from_the_archive(tmp_path):
    pip_build(tmp_path, EXAMPLES / "cli-app", "--archive-only", "-o", "cli.ingot")
    archive = tmp_path / "cli.ingot"
    config = json.loads(ingot.IngotFinder(str(archive))._read("__ingot__/launch.json"))
    assert config["fast_exit"] is True and config["run"]["module"] == "cli_app"
    run = run_archive(archive, "--title", "Carried")
    assert run.returncode == 0, run.stderr
    assert "Carried" in run.stdout and "┏" in run.stdout
    for name in ("cli-app", "click", "rich", "markdown-it-py"):
        assert f"│ {name} " in run.stdout, name
    assert f"app from {archive}/cli_app/__init__.py" in run.stdout
    names = {name for _, name, _ in ingot.IngotFinder(str(archive)).entries()}
    assert "rich.console" in names and "rich._windows" not in names  # [tool.ingot] exclude


def test_import_stdlib_script_runs_from_the_archive(tmp_path):
    script = EXAMPLES / "import-stdlib" / "import_stdlib.py"
    pip_build(tmp_path, script, "--archive-only", "-o", "stdlib.ingot", "-q", "--optimize", "0,2")
    run = run_archive(tmp_path / "stdlib.ingot")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("imported ") and " modules in " in run.stdout


def test_bare_ingot_build_in_a_project_directory(tmp_path):
    project = write_project(
        tmp_path / "greet",
        """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "greet"
        version = "0.1"
        [project.scripts]
        greet = "greet:main"
    """,
    )
    (project / "greet.py").write_text("import sys\ndef main():\n    print('greet', sys.argv[1:])\n")
    pip_build(project, "--archive-only")  # no SOURCE: the current directory
    run = run_archive(project / "dist" / "greet.ingot", "a", "b")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "greet ['a', 'b']\n"


def test_script_with_inline_dependencies_and_a_requirements_file(tmp_path):
    script = tmp_path / "report.py"
    script.write_text(
        "# /// script\n# dependencies = ['six==1.16.0']\n# ///\n"
        "import certifi, six\nprint(six.__version__, certifi.__file__)\n"
    )
    (tmp_path / "requirements.txt").write_text("certifi\n")
    run = pip_build(tmp_path, script, "-r", "requirements.txt", "--archive-only")
    assert "six==1.16.0, -r requirements.txt" in run.stderr
    archive = tmp_path / "dist" / "report.ingot"
    run = run_archive(archive)
    # certifi is in the built-in files table: its files are real, in the extraction cache.
    cache = os.environ["INGOT_CACHE_DIR"]
    assert run.stdout.startswith(f"1.16.0 {cache}/trees/"), run.stderr
    assert run.stdout.endswith("/certifi/__init__.py\n")


def test_files_policy_options_and_the_file_scan_warnings(tmp_path):
    script = tmp_path / "tool.py"
    script.write_text(
        "import os, certifi\n"
        "HERE = os.path.dirname(__file__)\n"
        "def notes():\n"
        "    return open(os.path.join(HERE, 'notes.txt')).read()\n"
        "print(certifi.__file__)\n"
    )
    # --memory overrides the built-in table.
    run = pip_build(
        tmp_path,
        script,
        "--dependency",
        "certifi==2024.8.30",
        "--memory",
        "certifi",
        "--archive-only",
    )
    assert "files policy: certifi" not in run.stderr
    # The scan points at the app's own open() of a path built from __file__, with file and line.
    assert "warning: tool.py:4: open()" in run.stderr, run.stderr
    archive = tmp_path / "dist" / "tool.ingot"
    assert run_archive(archive).stdout == f"{archive}/certifi/__init__.py\n"
    run = pip_build(
        tmp_path, script, "--dependency", "certifi==2024.8.30", "--archive-only", "--force"
    )
    assert "files policy: certifi (built-in:" in run.stderr
    assert describe(archive)["files_packages"] == ["certifi"]
    bad = pip_build(
        tmp_path,
        script,
        "--dependency",
        "certifi==2024.8.30",
        "--files",
        "nothere",
        "--archive-only",
        "--force",
        check=False,
    )
    assert bad.returncode != 0
    assert "the files policy names 'nothere', which the build does not collect" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_package_directory_build_without_pip(tmp_path):
    tool = tmp_path / "src" / "tool"
    tool.mkdir(parents=True)
    (tool / "__init__.py").write_text("NAME = 'tool'\n")
    (tool / "__main__.py").write_text(
        "import json\ntry:\n    import xml.dom\nexcept ImportError:\n"
        "    pass\nfrom tool import NAME\nprint(NAME, __name__)\n"
    )
    (tool / "__pycache__").mkdir()
    (tool / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"junk")
    run = pip_build(tmp_path, tool, "--archive-only", "--exclude", "xml")
    assert "pip:" not in run.stderr
    archive = tmp_path / "dist" / "tool.ingot"
    assert run_archive(archive).stdout == "tool __main__\n"
    names = {name for _, name, _ in ingot.IngotFinder(str(archive)).entries()}
    # Reached (imported), but an exclude pattern wins; json is reached and carried.
    assert "xml" not in names and "json" in names and not any("stale" in n for n in names)
    other = tmp_path / "other" / "tool"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    with pytest.raises(BuildError, match="would both be 'tool'"):
        build(
            resolve(
                Request(
                    source=str(tool),
                    settings=Settings(packages=[str(other)], output=str(tmp_path / "t.ingot")),
                    archive_only=True,
                )
            )
        )


def test_console_script_build_runs(tmp_path):
    import importlib.metadata

    run = pip_build(tmp_path, "--console-script", "pytest", "--archive-only")
    assert f"pytest=={importlib.metadata.version('pytest')}" in run.stderr
    run = run_archive(tmp_path / "dist" / "pytest.ingot", "--version")
    assert run.returncode == 0, run.stderr
    assert f"pytest {importlib.metadata.version('pytest')}" in run.stdout + run.stderr


def test_executable_is_launcher_then_archive(hello_archive, tmp_path, capsys, monkeypatch):
    # Not a launcher (it has no facts section): the check of it is test_launcher's business.
    monkeypatch.setattr("ingot.build.resolve.launcher.check_launcher", lambda path, *args: None)
    launcher = tmp_path / "fake-launcher"
    launcher.write_bytes(b"\x7fELF not really a launcher\n" * 100)
    out = tmp_path / "hello"
    assert (
        cli.main(
            ["build", str(EXAMPLES / "hello"), "--launcher", str(launcher), "-o", str(out), "-q"]
        )
        == 0
    )
    data = out.read_bytes()
    assert data.startswith(launcher.read_bytes())
    assert data[len(launcher.read_bytes()) :] == hello_archive.read_bytes()
    assert out.stat().st_mode & 0o777 == 0o755
    info = describe(out)
    assert info["launcher_size"] == 2700 and info["launch"]["run"]["module"] == "hello"
    # an earlier ingot output is replaced without --force
    assert (
        cli.main(
            [
                "build",
                str(EXAMPLES / "hello"),
                "--launcher",
                str(launcher),
                "-o",
                str(out),
                "-q",
                "--fast-exit",
            ]
        )
        == 0
    )
    assert describe(out)["launch"]["fast_exit"] is True


def test_missing_launcher_exits_1_with_a_hint(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "no-launcher"
    assert cli.main(["build", str(EXAMPLES / "hello"), "--launcher", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: no launcher binary at {missing}") and "\nhint: " in err
    monkeypatch.setenv("INGOT_LAUNCHER", str(missing))
    with pytest.raises(BuildError, match="from INGOT_LAUNCHER"):
        find_launcher(None, snapshot())


def test_output_safety(tmp_path, capsys):
    hello = str(EXAMPLES / "hello")
    assert cli.main(["build", hello, "--archive-only", "-o", str(tmp_path)]) == 1
    assert "it is a directory" in capsys.readouterr().err
    precious = tmp_path / "notes.txt"
    precious.write_text("mine")
    assert cli.main(["build", hello, "--archive-only", "-o", str(precious)]) == 1
    assert "--force" in capsys.readouterr().err and precious.read_text() == "mine"
    # A missing directory is made (issue 27); one that is a file is an error.
    assert cli.main(["build", hello, "--archive-only", "-o", str(tmp_path / "no" / "x")]) == 0
    assert (tmp_path / "no" / "x").is_file()
    shutil.rmtree(tmp_path / "no")
    capsys.readouterr()
    assert cli.main(["build", hello, "--archive-only", "-o", str(precious / "x")]) == 1
    assert f"{precious} is not a directory" in capsys.readouterr().err
    with pytest.raises(BuildError, match="module to run, 'nosuch', is not in the archive"):
        build(
            resolve(
                Request(
                    source=hello,
                    settings=Settings(entry="nosuch:main", output=str(tmp_path / "x.ingot")),
                    archive_only=True,
                )
            )
        )
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]  # no temporary files left


def test_inspect_lists_entries_launch_config_and_python(hello_archive, capsys):
    assert cli.main(["inspect", str(hello_archive)]) == 0
    out = capsys.readouterr().out
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"Python {version}" in out and '"module": "hello"' in out
    assert any(line.startswith("package") and line.endswith(" hello") for line in out.splitlines())
    assert cli.main(["inspect", str(hello_archive), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["python"] == version and info["launcher_size"] == 0
    assert info["files_packages"] == [] and "files policy: none" in out
    # The build machine's Python: no runtime; every native file's glibc floor, by name.
    assert info["runtime"] is None and "python: the build machine's" in out
    each = info["glibc_floor"]["each"]
    assert each and "native code: " in out
    assert all(version is None or version.count(".") == 1 for version in each.values())
    launch_size = len(ingot.IngotFinder(str(hello_archive))._read("__ingot__/launch.json"))
    assert {
        "kind": "data-file",
        "name": "__ingot__/launch.json",
        "size": launch_size,
        "stored": launch_size,
    } in info["entries"]  # read at start: stored as is
    assert cli.main(["inspect", str(ROOT / "README.md")]) == 1
    assert cli.main(["build", "app.py", "--console-script", "black"]) == 1
    assert "not both" in capsys.readouterr().err


# --- end to end, with the real launcher ----------------------------------------------------------


@pytest.mark.skipif(
    real_launcher() is None,
    reason="no launcher binary (set INGOT_LAUNCHER or "
    "cargo build --release -p ingot-launcher); archive-only builds are tested",
)
def test_launcher_for_another_python_is_refused(tmp_path, capsys):
    embedded = launcher_python(real_launcher())
    assert embedded is not None, "the launcher does not say which Python it embeds"
    if embedded == HERE:
        pytest.skip(f"the launcher embeds this Python ({HERE})")
    assert (
        cli.main(
            [
                "build",
                str(EXAMPLES / "hello"),
                "--launcher",
                str(real_launcher()),
                "-o",
                str(tmp_path / "x"),
            ]
        )
        == 1
    )
    assert f"embeds Python {embedded}, but this is Python {HERE}" in capsys.readouterr().err


def test_executable_runs_end_to_end(tmp_path, launcher_here):
    out = tmp_path / "hello"
    built = pip_build(tmp_path, EXAMPLES / "hello", "--launcher", launcher_here, "-o", out)
    shutil.rmtree(tmp_path / "dist", ignore_errors=True)
    # The floor the build says (from what it packed) is the one the written file has.
    floor = describe(out)["glibc_floor"]
    assert f"runs on Linux with glibc {floor['version']} or later, set by {floor['set_by']}" in (
        built.stderr
    )
    run = proclimit.run(
        [str(out)], max_processes=8, timeout=120, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}
    )
    assert run.returncode == 0, run.stderr
    assert "Hello from memory!" in run.stdout


def test_executable_passes_argv_and_the_exit_status(tmp_path, launcher_here):
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "__init__.py").write_text(
        "import sys\ndef main():\n    print(sys.argv[1:])\n    return int(sys.argv[1])\n"
    )
    for fast_exit in ("--fast-exit", "--no-fast-exit"):
        out = tmp_path / f"tool{fast_exit}"
        pip_build(
            tmp_path,
            tool,
            "--entry",
            "tool:main",
            "--launcher",
            launcher_here,
            "-o",
            out,
            "-q",
            fast_exit,
        )
        run = proclimit.run([str(out), "3", "é x"], max_processes=8, timeout=60)
        assert (run.returncode, run.stdout) == (3, "['3', 'é x']\n"), run.stderr


def test_preparations_of_files_packages_run_in_the_staged_copy(tmp_path, monkeypatch):
    """A built-in preparation (ingot.build.analysis.policy.PREPARATIONS; black's grammar pickles) runs with the
    build interpreter, confined (ingot.build.sandbox), reading the staged copy and writing into
    a directory of its own; what it made there, of the names it declares, is archived in the
    package's tree; a failing one is a warning, and leaves the build usable."""
    from ingot.build.analysis import policy

    tool = tmp_path / "src" / "tool"
    tool.mkdir(parents=True)
    (tool / "__init__.py").write_text("")
    (tool / "__main__.py").write_text("print('tool')\n")
    make = (
        "import os, sys\n"
        "open(os.path.join(sys.argv[2], 'made.txt'), 'w').write("
        "os.environ['PYTHONHASHSEED'] + ' ' + str(sys.flags.no_site) + ' ' + sys.argv[1])\n"
        "open(os.path.join(sys.argv[2], 'other.txt'), 'w').write('not declared')\n"
        "os.symlink('/etc/passwd', os.path.join(sys.argv[2], 'linked.txt'))\n"
    )
    monkeypatch.setitem(
        policy.PREPARATIONS,
        "tool",
        policy.Preparation(why="it makes made.txt", code=make, makes="*.txt"),
    )
    result = build(
        resolve(
            Request(
                source=str(tool),
                settings=Settings(files=["tool"], output=str(tmp_path / "t.ingot")),
                archive_only=True,
            )
        )
    )
    finder = ingot.IngotFinder(str(tmp_path / "t.ingot"))
    made = finder._read("tool/made.txt").decode()
    seed, no_site, where = made.split(" ", 2)
    assert (seed, no_site) == ("0", "1") and not where.startswith(str(tmp_path))  # a copy
    assert finder._read("tool/other.txt") == b"not declared"
    with pytest.raises((OSError, KeyError, ValueError)):
        finder._read("tool/linked.txt")  # (a link is never followed out of its directory)
    assert not (tool / "made.txt").exists()  # the project is left as it was
    assert not any("preparation" in warning for warning in result.warnings)

    # The staged root (the build cache's, for a dependency) is left as staged too: what the
    # preparation made is kept beside it, and carried as if it were in it.
    from ingot.build.archive.stdlib_layout import running
    from ingot.build.stages.selection import select

    root = tmp_path / "staged"
    shutil.copytree(tool, root / "tool")
    before = sorted(path.relative_to(root) for path in root.rglob("*"))
    spec = resolve(Request(source=str(tool), settings=Settings(files=["tool"]), archive_only=True))
    layout = running()
    selection = select(spec, [root], tmp_path / "scratch", lambda message: None, layout)
    assert sorted(path.relative_to(root) for path in root.rglob("*")) == before
    assert [(kept, name) for kept, name, _ in selection.prepared] == [
        (root, "tool/made.txt"),
        (root, "tool/other.txt"),
    ]
    assert all(made.is_relative_to(tmp_path / "scratch") for _, _, made in selection.prepared)

    monkeypatch.setitem(
        policy.PREPARATIONS,
        "tool",
        policy.Preparation(
            why="it makes made.txt", code="raise SystemExit('no tables today')", makes="*"
        ),
    )
    result = build(
        resolve(
            Request(
                source=str(tool),
                settings=Settings(files=["tool"], output=str(tmp_path / "u.ingot")),
                archive_only=True,
            )
        )
    )
    assert any(
        "tool: the build-time preparation failed (no tables today); without it, it makes "
        "made.txt" in warning
        for warning in result.warnings
    )
    assert run_archive(tmp_path / "u.ingot").stdout == "tool\n"


def test_a_scripts_traceback_shows_its_source_lines(tmp_path, launcher_here):
    # The script runs as __main__: before 3.13, linecache asks its loader for the source of
    # "__main__", which the archive answers with the script's.
    script = tmp_path / "boom.py"
    script.write_text("def inner():\n    raise ValueError('boom')  # the failing line\n\ninner()\n")
    out = tmp_path / "boom"
    assert (
        cli.main(["build", str(script), "--launcher", str(launcher_here), "-o", str(out), "-q"])
        == 0
    )
    run = proclimit.run([str(out)], max_processes=8, timeout=60)
    assert run.returncode == 1
    assert "    raise ValueError('boom')  # the failing line\n" in run.stderr, run.stderr
    assert "    inner()\n" in run.stderr
    assert run.stderr.endswith("ValueError: boom\n")
    assert "<ingot boot>" not in run.stderr  # the launcher's frame is not the app's


def test_a_script_build_collects_the_code_beside_it(tmp_path, capsys):
    # A Django-like layout: manage.py names its settings in a string, the project and its app
    # are packages beside it; a helper module it imports; things that are not its code.
    site = tmp_path / "site"
    (site / "mysite").mkdir(parents=True)
    (site / "mysite" / "__init__.py").write_text("")
    (site / "mysite" / "settings.py").write_text("INSTALLED_APPS = ['polls']\n")
    (site / "polls").mkdir()
    (site / "polls" / "__init__.py").write_text("from shared import VALUE\n")
    (site / "shared").mkdir()  # a namespace package, imported by polls
    (site / "shared" / "__init__.py").unlink(missing_ok=True)
    (site / "shared" / "constants.py").write_text("")
    (site / "shared.py").write_text("VALUE = 'shared module wins over the namespace'\n")
    (site / "helper.py").write_text(
        "import os\nNOTES = os.path.join(os.path.dirname(__file__), 'notes')\n"
        "def greet():\n    return 'hi from helper'\n"
    )
    (site / "photos").mkdir()  # data the code never names: left alone
    (site / "photos" / "cat.jpg").write_bytes(b"not really")
    (site / "unused.py").write_text("raise SystemExit('not imported, not collected')\n")
    (site / "notes").mkdir()  # not a package: a data directory, collected as files
    (site / "notes" / "todo.txt").write_text("")
    (site / ".git").mkdir()  # hidden, a virtual environment, a build's output: left alone
    (site / ".git" / "HEAD").write_text("")
    (site / "venv").mkdir()
    (site / "venv" / "pyvenv.cfg").write_text("")
    (site / "dist").mkdir()
    (site / "dist" / "old.ingot").write_text("")
    (site / "scripts").mkdir()  # Python code that is not a package: not data, not imported
    (site / "scripts" / "tool.py").write_text("")
    (site / "manage.py").write_text(
        textwrap.dedent("""
        import importlib, os
        from helper import greet
        settings = importlib.import_module(os.environ.get("SETTINGS", "mysite.settings"))
        polls = importlib.import_module(settings.INSTALLED_APPS[0])
        print(greet(), polls.VALUE)
    """)
    )
    out = tmp_path / "manage.ingot"
    assert cli.main(["build", str(site / "manage.py"), "--archive-only", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "collected beside the script: helper.py, mysite/, notes/, polls/, shared.py" in err, err
    names = {name for _, name, _ in ingot.IngotFinder(str(out)).entries()}
    assert {"manage", "helper", "mysite.settings", "polls", "shared", "notes/todo.txt"} <= names
    assert not names & {
        "unused",
        "notes",
        "shared.constants",
        ".git/HEAD",
        "venv/pyvenv.cfg",
        "dist/old.ingot",
        "scripts.tool",
        "scripts/tool.py",
        "photos/cat.jpg",
    }
    run = run_archive(out)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "hi from helper shared module wins over the namespace\n"
    # --package chooses instead.
    assert (
        cli.main(
            [
                "build",
                str(site / "manage.py"),
                "--archive-only",
                "-o",
                str(out),
                "--package",
                str(site / "helper.py"),
            ]
        )
        == 0
    )
    names = {name for _, name, _ in ingot.IngotFinder(str(out)).entries()}
    assert "helper" in names and "mysite" not in names


def test_a_script_reads_the_data_directories_beside_it_from_the_executable(tmp_path, launcher_here):
    # Flask's layout: templates/ and static/ beside the script, found from its __file__.
    tmp_path, work = tmp_path / "app", tmp_path
    (tmp_path / "templates" / "mail").mkdir(parents=True)
    (tmp_path / "templates" / "mail" / "welcome.txt").write_text("Welcome, {name}!\n")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "logo.svg").write_bytes(b"<svg/>")
    (tmp_path / "big").mkdir()  # over the size limit: left out, with no error
    (tmp_path / "big" / "blob.bin").write_bytes(b"\0" * (sources.DATA_DIRECTORY_LIMITS[1] + 1))
    script = tmp_path / "mailer.py"
    script.write_text(
        textwrap.dedent("""
        import os, sys
        root = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(root, "templates", "mail", "welcome.txt")) as file:
            print(file.read().format(name=sys.argv[1]), end="")
        print(sorted(os.listdir(os.path.join(root, "static"))),
              os.path.getsize(os.path.join(root, "static", "logo.svg")),
              os.path.exists(os.path.join(root, "big")))
    """)
    )
    out = work / "mailer"
    assert (
        cli.main(["build", str(script), "--launcher", str(launcher_here), "-o", str(out), "-q"])
        == 0
    )
    run = proclimit.run([str(out), "Ada"], max_processes=8, timeout=60, cwd="/")
    assert (run.returncode, run.stdout) == (0, "Welcome, Ada!\n['logo.svg'] 6 False\n"), run.stderr


def test_an_executable_sets_no_sys_frozen_and_says_what_it_is(tmp_path, launcher_here):
    # Issue 40: the decision in docs/importer.md: no sys.frozen (code written for python runs as
    # it is), and the archive's finder, first on sys.meta_path, names the executable.
    script = tmp_path / "where.py"
    script.write_text(
        "import sys\n"
        "finder = sys.meta_path[0]\n"
        "print(hasattr(sys, 'frozen'), type(finder).__name__ == 'IngotFinder'"
        " and finder.path == sys.executable)\n"
    )
    out = tmp_path / "where"
    argv = ["build", str(script), "--launcher", str(launcher_here), "-o", str(out), "-q"]
    assert cli.main(argv) == 0
    run = proclimit.run([str(out)], max_processes=8, timeout=60, cwd="/")
    assert (run.returncode, run.stdout) == (0, "False True\n"), run.stderr


def test_an_app_importing_tkinter_gets_it_or_a_clear_refusal(tmp_path, launcher_here, capsys):
    # Issue 37: tkinter is left out by default; `import tkinter` built with exit 0 and failed at
    # start. It is carried when the code imports it (with _tkinter), and a Python built without
    # Tk is refused at build time.
    import importlib.util

    script = tmp_path / "gui.py"
    script.write_text("import tkinter\nprint(tkinter.TkVersion > 8)\n")
    out = tmp_path / "gui"
    argv = ["build", str(script), "--launcher", str(launcher_here), "-o", str(out)]
    if importlib.util.find_spec("_tkinter") is None:
        assert cli.main(argv) == 1
        assert "`tkinter` needs `_tkinter`, which the target" in capsys.readouterr().err
        return
    assert cli.main(argv) == 0
    assert "as the code imports it: _tkinter, tkinter" in capsys.readouterr().err
    run = proclimit.run([str(out)], max_processes=8, timeout=60, cwd="/")
    assert (run.returncode, run.stdout) == (0, "True\n"), run.stderr


def test_a_single_data_file_beside_a_script_is_carried(tmp_path, launcher_here):
    # Issue 40: a file the script opens next to itself, as a directory is; files it does not
    # name (an earlier executable among them) stay out.
    tmp_path, work = tmp_path / "app", tmp_path
    tmp_path.mkdir()
    (tmp_path / "greeting.txt").write_text("hello from beside the script\n")
    (tmp_path / "unrelated.csv").write_text("a,b\n")
    script = tmp_path / "greet.py"
    script.write_text(
        "from pathlib import Path\n"
        "here = Path(__file__)\n"
        "print(here.with_name('greeting.txt').read_text(), end='')\n"
        "print(here.with_name('un' + 'related.csv').exists())\n"  # (a name no string holds)
    )
    out = work / "greet"
    argv = ["build", str(script), "--launcher", str(launcher_here), "-o", str(out), "-q"]
    assert cli.main(argv) == 0
    run = proclimit.run([str(out)], max_processes=8, timeout=60, cwd="/")
    assert (run.returncode, run.stdout) == (0, "hello from beside the script\nFalse\n"), run.stderr


def test_warnings_in_an_executables_script_show_their_source_lines(tmp_path, launcher_here):
    script = tmp_path / "warner.py"
    script.write_text(
        "import warnings\nwarnings.simplefilter('always')\n"
        "def old():\n    warnings.warn('old() is going away', DeprecationWarning)\n"
        "old()\n"
    )
    out = tmp_path / "warner"
    assert (
        cli.main(["build", str(script), "--launcher", str(launcher_here), "-o", str(out), "-q"])
        == 0
    )
    run = proclimit.run([str(out)], max_processes=8, timeout=60)
    assert run.returncode == 0, run.stderr
    # linecache reads the source through the archive-path answers, as python reads the file.
    assert run.stderr == (
        f"{out}/warner.py:4: DeprecationWarning: old() is going away\n"
        "  warnings.warn('old() is going away', DeprecationWarning)\n"
    )


def test_excluding_a_module_the_app_imports_at_top_level_stops_the_build(tmp_path, capsys):
    # Issue 40: --exclude of what the app's own code imports unconditionally would make the
    # executable stop at that import; the build says so, as for a missing import.
    script = tmp_path / "tool.py"
    script.write_text("import json\nimport email.message\nprint(json.dumps(1))\n")
    out = tmp_path / "tool.ingot"
    for pattern, named in (("json", "json"), ("email.*", "email.message")):
        argv = ["build", str(script), "--archive-only", "-o", str(out), "--exclude", pattern]
        assert cli.main(argv) == 1
        err = capsys.readouterr().err
        assert (
            f"tool.py:{1 if named == 'json' else 2} (left out by --exclude) imports `{named}`"
            in err
        )
        assert "remove the --exclude" in err and not out.exists()
    assert (
        cli.main(["build", str(script), "--archive-only", "-o", str(out), "--exclude", "xml"]) == 0
    )


def test_a_module_level_import_the_build_does_not_carry_stops_it_unless_allowed(tmp_path, capsys):
    # Issue 27: the executable would die at start with ModuleNotFoundError: the build says so
    # (file and line) and fails, unless --allow-missing names the module. Optional imports (in
    # try, under if, in functions) are none of its business.
    script = tmp_path / "tool.py"
    script.write_text(
        "import json, notinstalled.sub\n"
        "try:\n    import optional_thing\nexcept ImportError:\n    pass\n"
        "if False:\n    import guarded_thing\n"
        "def later():\n    import lazy_thing\n"
        "from also_missing import x\n"
    )
    out = tmp_path / "tool.ingot"
    assert cli.main(["build", str(script), "--archive-only", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "error: the application's own code imports what the build cannot carry:\n"
        "  tool.py:10 imports `also_missing`, which the build does not carry: the executable "
        "would stop there with ModuleNotFoundError\n"
        "  tool.py:1 imports `notinstalled`, which the build does not carry"
    ), err
    assert "hint: add the distribution that provides it" in err
    assert "--allow-missing also_missing --allow-missing notinstalled" in err
    for optional in ("optional_thing", "guarded_thing", "lazy_thing", "`json`"):
        assert optional not in err, optional
    assert not out.exists()
    allowed = ["--allow-missing", "notinstalled", "--allow-missing", "also_missing"]
    assert cli.main(["build", str(script), "--archive-only", "-o", str(out), *allowed]) == 0
    err = capsys.readouterr().err
    assert "warning: tool.py:1 imports `notinstalled`, which the build does not carry" in err
    assert "(allowed: --allow-missing notinstalled)" in err


def test_the_output_is_never_an_input_or_inside_what_is_packed(tmp_path, capsys):
    script = tmp_path / "src.py"
    script.write_text("print('the only copy of my code')\n")
    assert cli.main(["build", str(script), "--archive-only", "-o", str(script), "--force"]) == 1
    err = capsys.readouterr().err
    assert f"the output {script} is an input of the build" in err and "hint:" in err
    assert script.read_text() == "print('the only copy of my code')\n"
    # Inside a package the build copies: the next build would carry this one.
    package = tmp_path / "tool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("")
    inside = package / "data" / "tool.ingot"
    inside.parent.mkdir()
    assert cli.main(["build", str(package), "--archive-only", "-o", str(inside)]) == 1
    assert (
        f"the output {inside} is inside {package}, which the build packs" in capsys.readouterr().err
    )
    assert not inside.exists()
    # Beside it is fine.
    assert (
        cli.main(
            ["build", str(package), "--archive-only", "-q", "-o", str(tmp_path / "tool.ingot")]
        )
        == 0
    )


def test_script_option_alone_builds_the_script(tmp_path, monkeypatch):
    # `ingot build --script app.py` outside a project: SOURCE defaulted to "." and failed.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.py").write_text("print('ran from the archive')\n")
    assert cli.main(["build", "--script", "app.py", "--archive-only", "-q", "-o", "app.ingot"]) == 0
    run = run_archive(tmp_path / "app.ingot")
    assert run.returncode == 0 and run.stdout == "ran from the archive\n", run.stderr


@pytest.mark.parametrize("broken", ["entry", "other"])
def test_a_syntax_error_in_the_apps_code_stops_the_build_as_python_shows_it(
    tmp_path, capsys, broken
):
    package = tmp_path / "synpkg"
    package.mkdir()
    good, bad = "def main():\n    pass\n", "def main(:\n    pass\n"
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(bad if broken == "entry" else good)
    (package / "other.py").write_text(bad if broken == "other" else good)
    out = tmp_path / "synpkg.ingot"
    assert (
        cli.main(
            ["build", str(package), "--entry", "synpkg.cli:main", "--archive-only", "-o", str(out)]
        )
        == 1
    )
    err = capsys.readouterr().err
    module = "cli" if broken == "entry" else "other"
    # The user's file, the line, the caret: not a staging path, not "not in the archive".
    assert (
        f'error: synpkg.{module} does not compile:\n  File "{package / module}.py", line 1\n' in err
    ), err
    assert "    def main(:\n" in err and "^" in err and "SyntaxError" in err
    assert f"hint: fix it, or leave it out with --exclude synpkg.{module}" in err
    assert not out.exists()
    # Excluded, it is no longer the build's business.
    if broken == "other":
        assert (
            cli.main(
                [
                    "build",
                    str(package),
                    "--entry",
                    "synpkg.cli:main",
                    "--archive-only",
                    "-q",
                    "-o",
                    str(out),
                    "--exclude",
                    "synpkg.other",
                ]
            )
            == 0
        )


def test_an_entry_function_that_does_not_exist_stops_the_build(tmp_path, capsys):
    package = tmp_path / "tool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("import sys\n\ndef main():\n    return 0\n")
    out = tmp_path / "tool.ingot"
    assert (
        cli.main(
            ["build", str(package), "--entry", "tool.cli:nofunc", "--archive-only", "-o", str(out)]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "error: the entry point tool.cli:nofunc names no function of tool.cli" in err
    assert "hint: check the function's name (tool.cli defines main, sys)" in err
    assert not out.exists()
    assert (
        cli.main(
            [
                "build",
                str(package),
                "--entry",
                "tool.cli:main",
                "--archive-only",
                "-q",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    # A module whose names cannot be known from its source is trusted.
    (package / "dyn.py").write_text("def __getattr__(name):\n    return lambda: 0\n")
    assert (
        cli.main(
            [
                "build",
                str(package),
                "--entry",
                "tool.dyn:anything",
                "--archive-only",
                "-q",
                "-o",
                str(out),
            ]
        )
        == 0
    )


def test_an_executable_cut_short_says_so(tmp_path, launcher_here, capsys):
    out = tmp_path / "hello"
    assert (
        cli.main(
            [
                "build",
                str(EXAMPLES / "hello"),
                "--launcher",
                str(launcher_here),
                "-o",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    cut = tmp_path / "hello-cut"
    cut.write_bytes(out.read_bytes()[:-4096])
    cut.chmod(0o755)
    run = proclimit.run([str(cut)], max_processes=8, timeout=60)
    assert run.returncode != 0
    assert "the file is cut short" in run.stderr, run.stderr
    assert cli.main(["inspect", str(cut)]) == 1
    assert "the file is cut short" in capsys.readouterr().err


def test_a_damaged_module_of_the_start_is_named_with_a_hint(tmp_path, launcher_here):
    # codecs is imported while Python starts: its damage failed the start with "init_fs_encoding"
    # and the checksum error only inside a traceback.
    out = tmp_path / "hello"
    assert (
        cli.main(
            [
                "build",
                str(EXAMPLES / "hello"),
                "--launcher",
                str(launcher_here),
                "-o",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    data = bytearray(out.read_bytes())
    marker = b"codecs -- Python Codec Registry, API and helpers."
    at = data.find(marker)
    while at >= 0:  # in its source and in its bytecode
        data[at + 3] ^= 0xFF
        at = data.find(marker, at + 1)
    out.write_bytes(bytes(data))
    run = proclimit.run([str(out)], max_processes=8, timeout=60)
    assert run.returncode == 1
    assert f"ingot: {out}: the executable is damaged: entry `codecs`: " in run.stderr, run.stderr
    assert "hint: build or copy it again" in run.stderr


def test_a_mistyped_option_shows_its_commands_usage_and_the_option_meant(capsys):
    from ingot import cli

    for argv, usage, said in (
        (
            ["build", "app.py", "--outptu", "x"],
            "usage: ingot build",
            "--outptu x (did you mean --output?)",
        ),
        (["runtime", "install", "3.13", "--forc"], "usage: ingot runtime install", "--forc"),
        (["inspect", "x", "--sise"], "usage: ingot inspect", "--sise (did you mean --sizes?)"),
    ):
        with pytest.raises(SystemExit) as stopped:
            cli.main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(usage), err
        assert f"error: unrecognized arguments: {said}" in err, err


def test_ingot_says_its_version_and_python(capsys):
    import importlib.metadata

    from ingot import cli

    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out == (
        f"ingot {importlib.metadata.version('pyingot')} (Python {sys.version.split()[0]} at "
        f"{sys.executable})\n"
    )
    assert ingot.__version__ == importlib.metadata.version("pyingot")


def test_an_output_directory_it_cannot_write_is_refused_before_any_work(tmp_path):
    # A read-only directory (a read-only bind mount: root writes anywhere else): refused at once,
    # with what and where, not after the build with a traceback; nothing is left in it.
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("needs root and unshare (INGOT_REQUIRE_PYTHONS)")
        pytest.skip("needs root and unshare (a mount namespace)")
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    out = tmp_path / "out"
    out.mkdir()
    build = [sys.executable, "-m", "ingot", "build", str(script), "--archive-only"]
    # sh -c COMMAND DIR BUILD...: $0 is the directory made read-only, "$@" the build.
    command = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "sh",
            "-c",
            command,
            str(out),
            *build,
            "-o",
            str(out / "app.ingot"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(
        f"error: cannot write {out / 'app.ingot'}: Read-only file system (in {out})\n"
    ), done.stderr
    assert "Traceback" not in done.stderr and "collected" not in done.stderr
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("moment", ["made", "written"])
def test_an_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch, moment):
    # ^C just after the temporary file is made (before anything could note its name), or while
    # it is written: it goes too.
    from ingot.build.stages import assemble

    real_open, real_fsync = os.open, os.fsync

    def made_then_interrupted(*args, **kwargs):
        fd = real_open(*args, **kwargs)
        if "dir_fd" not in kwargs:
            return fd  # (the output's directory)
        raise KeyboardInterrupt

    def interrupted(fd):
        raise KeyboardInterrupt

    if moment == "made":
        monkeypatch.setattr(assemble.os, "open", made_then_interrupted)
    else:
        monkeypatch.setattr(assemble.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        assemble._write(tmp_path / "app", [b"launcher", b"archive"], 0o755)
    monkeypatch.setattr(assemble.os, "open", real_open)
    monkeypatch.setattr(assemble.os, "fsync", real_fsync)
    assert list(tmp_path.iterdir()) == []


def test_the_output_is_written_and_set_through_descriptors(tmp_path, monkeypatch):
    # Issue 39, item 5: with the output's directory writable by another user, a link swapped in
    # for the temporary file between its write and a chmod by path made root's 0600 file 0755.
    # The mode is set on the descriptor and the rename is relative to the held directory: no
    # path is used after the file is made.
    from ingot.build.stages import assemble

    used = []
    for name in ("chmod", "rename", "replace"):
        real = getattr(assemble.os, name)

        def record(*args, _name=name, _real=real, **kwargs):
            used.append((_name, args, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(assemble.os, name, record)
    assert assemble._write(tmp_path / "app", [b"launcher", b"archive"], 0o755) == 15
    assert (tmp_path / "app").read_bytes() == b"launcherarchive"
    assert (tmp_path / "app").stat().st_mode & 0o777 == 0o755
    assert [name for name, _, _ in used] == ["replace"]
    assert {"src_dir_fd", "dst_dir_fd"} <= set(used[0][2]) and "/" not in used[0][1][1]


def test_a_folder_of_scripts_builds_into_one_out_directory(tmp_path, capsys):
    # Issue 27: out/ is made; each build neither refuses out/ (inside what it packs) nor carries
    # the earlier outputs, even for a script that names out/ (ingot's outputs are never data).
    (tmp_path / "a.py").write_text("print('a')\n")
    (tmp_path / "b.py").write_text("print('b')\n")
    (tmp_path / "c.py").write_text("open('out/report.txt', 'w').write('c')\n")
    (tmp_path / "photos").mkdir()  # nobody names it
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"not really")
    out = tmp_path / "out"
    for name in ("a", "b", "c"):
        target = out / f"{name}.ingot"
        assert (
            cli.main(["build", str(tmp_path / f"{name}.py"), "--archive-only", "-o", str(target)])
            == 0
        )
        names = {entry for _, entry, _ in ingot.IngotFinder(str(target)).entries()}
        assert not {entry for entry in names if entry.startswith(("out/", "photos/"))}, names
    assert sorted(path.name for path in out.iterdir()) == ["a.ingot", "b.ingot", "c.ingot"]
    assert "collected beside the script" not in capsys.readouterr().err
