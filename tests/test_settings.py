"""What `ingot build` is asked, resolved without building: `[tool.ingot]` and its errors, the
project's dependencies, what a project, a script, a package directory or a console script
resolves to, and the options that override the project's settings. Nothing here runs pip or
writes an executable."""

from pathlib import Path

import pytest

from ingot.build.resolve.inputs import console_script_plan
from ingot.build.resolve.project import load_project
from ingot.build.resolve.settings import Request, Settings
from ingot.build.stages.packing import stdlib_excludes
from ingot.errors import BuildError, ConfigError

from helpers import EXAMPLES, plan, write_project

pytestmark = pytest.mark.fast


# --- [tool.ingot] ------------------------------------------------------------------------------


def test_config_reads_every_key(tmp_path):
    project = write_project(
        tmp_path,
        """
        [project]
        name = "demo"
        dependencies = ["six"]
        [tool.ingot]
        entry = "demo.cli:main"
        packages = ["src/demo"]
        dependencies = ["rich==13.7.1"]
        requirements = "requirements.txt"
        include = ["tkinter"]
        exclude = ["xml.*"]
        output = "out/demo"
        fast-exit = true
        optimize = [0, 2]
        compress = 3
    """,
    )
    loaded = load_project(project)
    assert loaded.name == "demo" and loaded.dependencies == ["rich==13.7.1"]
    config = loaded.settings
    assert (config.entry, config.packages, config.requirements) == (
        "demo.cli:main",
        ["src/demo"],
        "requirements.txt",
    )
    assert (config.include, config.exclude, config.output) == (["tkinter"], ["xml.*"], "out/demo")
    assert (config.fast_exit, config.optimize, config.compress) == (True, [0, 2], 3)


def test_project_dependencies_are_the_default(tmp_path):
    project = write_project(tmp_path, '[project]\nname = "d"\ndependencies = ["six>=1"]\n')
    assert load_project(project).dependencies == ["six>=1"]


@pytest.mark.parametrize(
    "line, key",
    [
        ('entyr = "a:b"', "entyr"),
        ("fast_exit = true", "fast_exit"),
    ],
)
def test_unknown_key_is_an_error_naming_file_and_key(tmp_path, line, key):
    project = write_project(tmp_path, f"[tool.ingot]\n{line}\n")
    with pytest.raises(ConfigError) as error:
        load_project(project)
    assert str(project / "pyproject.toml") in error.value.message
    assert f"unknown key {key!r}" in error.value.message
    if key == "fast_exit":
        assert "'fast-exit'" in error.value.hint


@pytest.mark.parametrize(
    "line, key",
    [
        ("entry = 1", "entry"),
        ('packages = "src"', "packages"),
        ('fast-exit = "yes"', "fast-exit"),
        ("optimize = [3]", "optimize"),
        ('compress = "3"', "compress"),
        ("compress = 99", "compress"),
        ('dependencies = ["a", 1]', "dependencies"),
        ("output = []", "output"),
    ],
)
def test_type_errors_name_file_and_key(tmp_path, line, key):
    project = write_project(tmp_path, f"[tool.ingot]\n{line}\n")
    with pytest.raises(ConfigError) as error:
        load_project(project)
    assert str(project / "pyproject.toml") in error.value.message
    assert f"[tool.ingot] {key} must be" in error.value.message


def test_bad_entry_and_two_run_keys_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="not an entry point 'module:function'"):
        load_project(write_project(tmp_path / "a", '[tool.ingot]\nentry = "app.main"\n'))
    with pytest.raises(ConfigError, match="sets entry and module"):
        load_project(write_project(tmp_path / "b", '[tool.ingot]\nentry = "a:b"\nmodule = "a"\n'))
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_project(write_project(tmp_path / "c", "[tool.ingot\n"))
    with pytest.raises(ConfigError, match=r"no pyproject\.toml"):
        load_project(tmp_path / "d-missing")


# --- what to build -----------------------------------------------------------------------------


def test_bare_project_with_one_script_runs_it():
    resolved = plan(EXAMPLES / "hello")
    assert resolved.run == {"kind": "function", "module": "hello", "function": "main"}
    assert resolved.name == "hello" and resolved.pip_project == EXAMPLES / "hello"
    assert resolved.output == Path("dist/hello") and resolved.requirements == ()
    assert plan(EXAMPLES / "hello", archive_only=True).output == Path("dist/hello.ingot")


def test_several_scripts_ask_to_choose_with_entry(tmp_path):
    project = write_project(
        tmp_path,
        """
        [project]
        name = "multi"
        [project.scripts]
        one = "multi.a:main"
        two = "multi.b:run"
    """,
    )
    with pytest.raises(ConfigError) as error:
        plan(project)
    assert "one, two" in error.value.message and "--entry" in error.value.hint
    chosen = plan(project, entry="two")
    assert chosen.name == "two" and chosen.run["function"] == "run"
    assert plan(project, entry="multi.c:go").run["module"] == "multi.c"
    assert plan(project, module="multi").run == {"kind": "module", "module": "multi"}


def test_options_override_tool_ingot_and_paths_are_relative_to_the_project(tmp_path):
    project = write_project(
        tmp_path / "p",
        """
        [project]
        name = "p"
        dependencies = ["six"]
        [tool.ingot]
        module = "p"
        output = "bin/p"
        requirements = "reqs.txt"
    """,
    )
    (project / "reqs.txt").write_text("rich\n")
    resolved = plan(project)
    assert resolved.run == {"kind": "module", "module": "p"}
    assert resolved.output == project / "bin" / "p"
    assert resolved.requirement_files == (project / "reqs.txt",)
    assert resolved.requirements == ("six",)
    overridden = plan(
        project, entry="p.cli:main", output=str(tmp_path / "x"), dependencies=["click"]
    )
    assert overridden.run == {"kind": "function", "module": "p.cli", "function": "main"}
    assert overridden.output == tmp_path / "x" and overridden.requirements == ("click",)


def test_script_source_with_inline_dependencies(tmp_path):
    script = tmp_path / "my-tool.py"
    script.write_text("# /// script\n# dependencies = ['six==1.16.0']\n# ///\nimport six\n")
    resolved = plan(script)
    assert resolved.run == {"kind": "module", "module": "my_tool"}
    assert resolved.copies == (("my_tool.py", script),) and resolved.requirements == (
        "six==1.16.0",
    )
    called = plan(script, entry="my_tool:main", dependencies=["rich"])
    assert called.run == {"kind": "function", "module": "my_tool", "function": "main"}
    assert called.copies == (("my_tool.py", script),) and called.requirements == ("rich",)
    (tmp_path / "json.py").write_text("")
    with pytest.raises(ConfigError, match="standard library"):
        plan(tmp_path / "json.py")


def test_package_directory_source(tmp_path):
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "__init__.py").write_text("")
    with pytest.raises(ConfigError, match=r"no __main__\.py"):
        plan(tmp_path / "tool")
    (tmp_path / "tool" / "__main__.py").write_text("print('tool')\n")
    resolved = plan(tmp_path / "tool")
    assert resolved.run == {"kind": "module", "module": "tool"}
    with pytest.raises(ConfigError, match="is not a script"):
        plan(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        plan(tmp_path / "missing.py")


def test_console_script_pins_the_installed_distributions():
    import importlib.metadata

    resolved = console_script_plan("pytest", Request())
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="pytest")
    assert resolved.run == {"kind": "function", "module": entry.module, "function": entry.attr}
    assert resolved.name == "pytest" and resolved.output == Path("dist/pytest")
    assert f"pytest=={importlib.metadata.version('pytest')}" in resolved.requirements
    assert f"pluggy=={importlib.metadata.version('pluggy')}" in resolved.requirements
    with pytest.raises(ConfigError, match="no console script 'no-such-command'"):
        console_script_plan("no-such-command", Request())
    if "file://" in (importlib.metadata.distribution("pyingot").read_text("direct_url.json") or ""):
        with pytest.raises(ConfigError, match=r"pyingot .* is installed from file://") as error:
            console_script_plan("ingot", Request())  # installed from this checkout
        assert "ingot build " in error.value.hint


def test_include_re_admits_default_stdlib_exclusions():
    excludes = stdlib_excludes(Settings(include=["tkinter", "test.support"], exclude=["xml.*"]))
    assert "tkinter" not in excludes and "test" not in excludes and "idlelib" in excludes
    assert excludes[-1] == "xml.*"


# --- bad input: a clean error before any work (issue 40) -------------------------------------------


@pytest.mark.parametrize("given", ["3.9", "banana", "2.7", "3.16", "4.0"])
def test_an_unsupported_python_is_refused_naming_those_supported(given, capsys):
    from ingot import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["build", "x.py", "--python", given])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"{given!r} is not a Python version ingot builds for: 3.10 to 3.15" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("given", "meant"), [("python3.12", "3.12"), ("cp313", "3.13"), ("3.13.5", "3.13.5")]
)
def test_python_versions_are_read_as_people_write_them(given, meant):
    from ingot.build.resolve.settings import parse_python

    assert parse_python(given) == meant
    assert parse_python("local") == "local"


def test_a_pep723_block_left_open_is_an_error_naming_its_line(tmp_path):
    script = tmp_path / "app.py"
    script.write_text('"""doc"""\n# /// script\n# dependencies = ["six"]\nimport six\n')
    with pytest.raises(ConfigError, match=r"app\.py:2: the '# /// script' block is never closed"):
        plan(script)


def test_requires_python_that_excludes_the_target_is_an_error_naming_both(tmp_path):
    from ingot.build.resolve.spec import resolve

    script = tmp_path / "app.py"
    script.write_text('# /// script\n# requires-python = ">=3.99"\n# ///\nprint(1)\n')
    request = Request(source=str(script), archive_only=True)
    with pytest.raises(BuildError, match=r"requires-python '>=3\.99' excludes Python 3\.\d+"):
        resolve(request)
    script.write_text('# /// script\n# requires-python = ">=3.10"\n# ///\nprint(1)\n')
    assert resolve(request).plan.requires_python[0] == ">=3.10"
    project = write_project(
        tmp_path / "proj",
        """
        [project]
        name = "p"
        version = "1"
        requires-python = "<3.10"
        [project.scripts]
        p = "p:main"
        """,
    )
    with pytest.raises(BuildError, match=r"proj/pyproject\.toml \[project\]: requires-python"):
        resolve(Request(source=str(project), archive_only=True))


def test_a_misspelled_command_or_key_names_the_one_meant(tmp_path, capsys):
    from ingot import cli

    assert cli.main(["buidl", "x.py"]) == 2
    assert "unknown command 'buidl'; did you mean 'build'?" in capsys.readouterr().err
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert "quick start:" in err and "ingot build hello.py" in err and "runtime" in err
    project = write_project(tmp_path / "p", '[tool.ingot]\npyhton = "3.12"\n')
    with pytest.raises(ConfigError, match="unknown key 'pyhton'") as error:
        load_project(project)
    assert error.value.hint == "did you mean 'python'?"


def test_build_help_is_grouped_and_ends_with_examples(capsys):
    from ingot import cli

    with pytest.raises(SystemExit):
        cli.main(["build", "--help"])
    shown = capsys.readouterr().out
    titles = ["what to run:", "dependencies:", "what to carry:", "output:", "runtime:"]
    assert [shown.index(title) for title in titles] == sorted(shown.index(t) for t in titles)
    assert shown.rstrip().splitlines()[-1].lstrip().startswith("ingot build")
    assert "examples:" in shown


# --- what the defaults leave out of the standard library (issue 37, item 7) -----------------------


def _layout(root, with_tkinter):
    from ingot.build.archive.stdlib_layout import Layout

    stdlib, dynload = root / "lib", root / "lib" / "lib-dynload"
    (stdlib / "tkinter").mkdir(parents=True)
    (stdlib / "tkinter" / "__init__.py").write_text("import enum\nimport _tkinter\n")
    (stdlib / "turtle.py").write_text("import tkinter\n")
    dynload.mkdir()
    if with_tkinter:
        (dynload / "_tkinter.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    return Layout(
        stdlib, dynload, (".cpython-311-x86_64-linux-gnu.so", ".so"), "x86_64", "a Python"
    )


def test_what_the_defaults_leave_out_is_carried_when_the_app_imports_it(tmp_path):
    from ingot.build.stages.selection import _default_excluded_imports

    app = tmp_path / "app"
    app.mkdir()
    (app / "gui.py").write_text("import json\ndef main():\n    import tkinter.ttk\n")
    found = _default_excluded_imports(app, _layout(tmp_path / "with", True))
    assert found == ["_tkinter", "tkinter.ttk"]
    (app / "gui.py").write_text("import json\n")
    assert _default_excluded_imports(app, _layout(tmp_path / "again", True)) == []
    # The app's own module of a name the standard library has (its test.py) is its own.
    (app / "gui.py").write_text("import test\nimport turtle\n")
    (app / "test.py").write_text("")
    # (turtle needs tkinter, which needs _tkinter: all carried)
    assert _default_excluded_imports(app, _layout(tmp_path / "own", True)) == [
        "_tkinter",
        "tkinter",
        "turtle",
    ]


def test_a_module_the_target_lacks_stops_the_build(tmp_path):
    # A runtime's CPython is built without Tcl/Tk: `import tkinter` would fail at start.
    from ingot.build.stages.selection import _default_excluded_imports

    app = tmp_path / "app"
    app.mkdir()
    (app / "gui.py").write_text("import tkinter\n")
    with pytest.raises(
        BuildError,
        match=r"gui\.py:1 imports `tkinter`, but `tkinter` needs "
        r"`_tkinter`, which the target \(a Python\) was built without",
    ):
        _default_excluded_imports(app, _layout(tmp_path / "without", False))


@pytest.mark.parametrize("action", ["build", "install", "export", "remove", "launcher"])
def test_a_runtime_command_refuses_a_version_it_cannot_make(action, capsys):
    from ingot import cli

    for given in ("banana", "2.7", "local"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["runtime", action, given])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert f"{given!r} is not a Python version ingot makes runtimes of: 3.10 to 3.15" in err
        assert "Traceback" not in err
