"""The project-path rule (docs/security.md, "Paths a build reads and writes"; issue 53, item 5):
what a project's own files name (pyproject.toml's [tool.ingot], its dependencies, a script's
PEP 723 block) stays inside the project's directory, and a symbolic link that leads out of
what the build copies is named, not followed; the command line may name any path, and
`--allow-outside-project` lifts the rule. For a CI that builds strangers' pull requests."""

import os
import textwrap

import pytest

import ingot
from ingot import cli
from ingot.build.resolve.inputs import plan_source
from ingot.build.resolve.settings import Request, Settings
from ingot.errors import ConfigError

from helpers import write_project

pytestmark = pytest.mark.fast

#: What a file outside the project holds: no error may show it.
SECRET = "root:$y$j9T$SECRETHASH:19000:0:99999:7:::"


@pytest.fixture
def outside(tmp_path):
    """A directory beside the project, with a secret file and a package holding a key."""
    secret = tmp_path / "secret"
    (secret / "pkg").mkdir(parents=True)
    (secret / "shadow").write_text(SECRET + "\n")
    (secret / "pkg" / "__init__.py").write_text("KEY = 'root-only'\n")
    return secret


def _project(tmp_path, extra=""):
    project = write_project(
        tmp_path / "proj",
        '[project]\nname = "app"\n[tool.ingot]\nentry = "app:main"\npackages = ["app"]\n' + extra,
    )
    (project / "app").mkdir()
    (project / "app" / "__init__.py").write_text("def main():\n    print('app')\n")
    return project


def _entries(archive):
    return {name for _, name, _ in ingot.IngotFinder(str(archive)).entries()}


@pytest.mark.parametrize(
    "key, value",
    [
        ("packages", '["app", "../secret/pkg"]'),
        ("requirements", '"../../../../../../../../../{secret}/shadow"'),
        ("output", '"{out}/x"'),
        ("script", '"../secret/run.py"'),
    ],
)
def test_a_path_in_tool_ingot_that_leaves_the_project_stops_the_build(
    tmp_path, outside, capsys, key, value
):
    (outside / "run.py").write_text("print('outside')\n")
    out = tmp_path / "elsewhere"
    out.mkdir()
    line = f"{key} = " + value.format(secret=outside, out=out)
    body = '[project]\nname = "app"\n[tool.ingot]\nentry = "app:main"\n'
    if key != "packages":
        body += 'packages = ["app"]\n'
    if key == "script":
        body = body.replace('entry = "app:main"\n', "")
    project = write_project(tmp_path / "proj", body + line + "\n")
    (project / "app").mkdir()
    (project / "app" / "__init__.py").write_text("def main():\n    print('app')\n")
    given = [] if key == "output" else ["-o", str(tmp_path / "a")]
    assert cli.main(["build", str(project), "--archive-only", *given]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {project / 'pyproject.toml'}: [tool.ingot] {key}: "), err
    assert f"leads out of the project {project}" in err and "\nhint: " in err
    assert "--allow-outside-project" in err
    assert "SECRETHASH" not in err and "root:" not in err  # (nothing of the file is shown)
    assert list(out.iterdir()) == [] and not (tmp_path / "a").exists()
    # The caller may allow it (a monorepo's shared code beside the project).
    allowed = plan_source(Request(source=str(project), allow_outside_project=True))
    assert allowed.settings.entry == "app:main" or key == "script"


def test_an_output_in_the_projects_configuration_stays_inside_it(tmp_path, capsys):
    # `output = "/usr/local/bin/x"` was written, with exit 0 and no warning; inside the project
    # it is written, and `-o` on the command line may be anywhere.
    outside_dir = tmp_path / "bin"
    project = _project(tmp_path, f'output = "{outside_dir}/x"\n')
    assert cli.main(["build", str(project), "--archive-only"]) == 1
    assert "[tool.ingot] output" in capsys.readouterr().err and not outside_dir.exists()
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text().replace(f"{outside_dir}/x", "out/x")
    )
    assert cli.main(["build", str(project), "--archive-only"]) == 0
    assert (project / "out" / "x").is_file()
    given = tmp_path / "given" / "x"
    assert cli.main(["build", str(project), "--archive-only", "-o", str(given)]) == 0
    assert given.is_file()
    # A directory of the project that is a link out of it is out of it too.
    (project / "link").symlink_to(outside_dir.parent / "made", target_is_directory=True)
    (outside_dir.parent / "made").mkdir()
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text().replace("out/x", "link/x")
    )
    with pytest.raises(ConfigError, match="output: 'link/x' leads out of the project"):
        plan_source(Request(source=str(project)))


def test_a_requirements_file_outside_the_project_is_not_read(tmp_path, outside, capsys):
    # Issue 53: `requirements = "../../../../etc/shadow"` printed its first line in pip's error.
    # Named on the command line, the same file is the caller's choice.
    project = _project(
        tmp_path, f'requirements = "{os.path.relpath(outside, tmp_path / "proj")}/shadow"\n'
    )
    assert cli.main(["build", str(project), "--archive-only", "-o", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err
    assert "[tool.ingot] requirements" in err and "SECRETHASH" not in err
    given = plan_source(
        Request(source=str(project), settings=Settings(requirements=str(outside / "shadow")))
    )
    assert given.requirement_files == (outside / "shadow",)


def test_a_projects_dependency_on_a_local_file_outside_it_is_refused(tmp_path, outside):
    project = write_project(
        tmp_path / "proj",
        f'[project]\nname = "app"\ndependencies = ["key @ file://{outside}/pkg"]\n'
        '[tool.ingot]\nentry = "app:main"\npackages = ["app"]\n',
    )
    (project / "app").mkdir()
    (project / "app" / "__init__.py").write_text("")
    with pytest.raises(ConfigError, match=r"dependencies: requirement 'key @ file://.*' leads out"):
        plan_source(Request(source=str(project)))
    script = tmp_path / "proj" / "tool.py"
    script.write_text(f"# /// script\n# dependencies = ['{outside}/pkg']\n# ///\nprint(1)\n")
    with pytest.raises(ConfigError, match=r"'# /// script' dependencies: requirement"):
        plan_source(Request(source=str(script)))
    # On the command line, the same requirement is the caller's.
    given = plan_source(
        Request(source=str(script), settings=Settings(dependencies=[f"{outside}/pkg"]))
    )
    assert given.requirements == (f"{outside}/pkg",)


def test_a_symlink_out_of_a_copied_package_is_named_not_followed(tmp_path, outside, capsys):
    # Issue 53: `app/shadow.txt -> /etc/shadow` put the file into the executable.
    project = _project(tmp_path)
    (project / "app" / "shadow.txt").symlink_to(outside / "shadow")
    (project / "app" / "inside.txt").symlink_to(project / "pyproject.toml")  # (inside: fine)
    archive = tmp_path / "a.ingot"
    assert cli.main(["build", str(project), "--archive-only", "-o", str(archive)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {project / 'app' / 'shadow.txt'} is a symbolic link to {outside / 'shadow'}, "
        f"outside the project {project}"
    ), err
    assert "--allow-outside-project" in err.split("\nhint: ")[1] and not archive.exists()
    flags = ["--archive-only", "-o", str(archive), "--allow-outside-project"]
    assert cli.main(["build", str(project), *flags]) == 0
    assert {"app/shadow.txt", "app/inside.txt"} <= _entries(archive)


def test_a_symlink_in_a_data_directory_beside_a_script_is_named(tmp_path, outside, capsys):
    app = tmp_path / "scripts"
    (app / "data").mkdir(parents=True)
    (app / "data" / "greeting.txt").write_text("hello\n")
    (app / "data" / "shadow.txt").symlink_to(outside / "shadow")
    script = app / "tool.py"
    script.write_text(
        "from pathlib import Path\nprint((Path(__file__).parent / 'data').exists())\n"
    )
    archive = tmp_path / "tool.ingot"
    assert cli.main(["build", str(script), "--archive-only", "-o", str(archive)]) == 1
    err = capsys.readouterr().err
    assert f"{app / 'data' / 'shadow.txt'} is a symbolic link to {outside / 'shadow'}" in err
    assert not archive.exists()
    # A package beside the script that is itself a link out of its directory, the same.
    (app / "data" / "shadow.txt").unlink()
    (app / "pkg").symlink_to(outside / "pkg", target_is_directory=True)
    with pytest.raises(ConfigError, match=f"{app / 'pkg'} is a symbolic link to"):
        plan_source(Request(source=str(script)))


def test_links_in_the_project_that_pip_builds_are_checked_but_not_its_virtual_environment(
    tmp_path, outside
):
    project = write_project(
        tmp_path / "proj",
        textwrap.dedent("""
            [project]
            name = "app"
            [project.scripts]
            app = "app:main"
        """),
    )
    (project / "app").mkdir()
    (project / "app" / "__init__.py").write_text("def main(): pass\n")
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    assert plan_source(Request(source=str(project))).pip_project == project
    (project / "app" / "keys").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match=f"{project / 'app' / 'keys'} is a symbolic link to"):
        plan_source(Request(source=str(project)))
    assert plan_source(Request(source=str(project), allow_outside_project=True)).pip_project
