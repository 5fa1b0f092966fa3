"""ingot's GitHub Action (action.yml, docs/ci.md), checked here where actionlint cannot (it lints
workflows, and of an action only what a workflow using it sees: scripts/test runs it on
docs/ci-workflow.yml with this checkout's action), and its steps run on this machine as a runner
runs them: each `run:` step (one sub-command of scripts/ci-action) in the action's order, by
bash, with the environment its `env:` gives, from the action's default inputs but for two:
ingot and its runtimes come from the wheels scripts/test makes (INGOT_TEST_WHEELS, the
`find-links` input), and qemu-user loads from the Debian 11 arm64 root scripts/test unpacks
(INGOT_DEBIAN11_FOREIGN_ROOT, as QEMU_LD_PREFIX) where a runner has Ubuntu's libc6-arm64-cross.
The steps that are other actions are GitHub's: setup-python is a Python of this machine here,
and of upload-artifact the test checks only that the paths it would upload exist (the upload
itself is GitHub's service).

Without the wheels, the root, qemu-aarch64-static or the Python, the end-to-end test skips, or
fails under INGOT_REQUIRE_PYTHONS (CI). Every step runs under a process-count limit and a
timeout (tests/support/proclimit.py).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml  # (scripts/test installs PyYAML into every test venv)

import proclimit
from helpers import EXAMPLES, ROOT
from test_old_system import require

ACTION = ROOT / "action.yml"
SCRIPT = ROOT / "scripts" / "ci-action"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
EXAMPLE_WORKFLOWS = (ROOT / "docs" / "ci-workflow.yml", ROOT / "docs" / "ci-steps.yml")
#: The sub-commands, in the order the action runs them (scripts/ci-action's header).
SUBCOMMANDS = ["check", "install", "qemu", "build", "run"]
RUN_LINE = re.compile(r'"\$GITHUB_ACTION_PATH/scripts/ci-action" (\w+)')
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
PINNED = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40})  # (v\d+\.\d+\.\d+)$")


def action():
    return yaml.safe_load(ACTION.read_text())


def steps():
    return action()["runs"]["steps"]


def cargo_version():
    (version,) = re.findall(r'^version = "([^"]+)"$', (ROOT / "Cargo.toml").read_text(), re.M)
    return version


# --- the action's file ---------------------------------------------------------------------


@pytest.mark.fast
def test_every_run_step_is_one_sub_command_its_inputs_in_the_environment():
    """No `${{ }}` in shell code (zizmor's template injection): each `run:` is one call of
    scripts/ci-action, in the documented order; an `env:` value is one input or one output of
    an earlier step."""
    metadata = action()
    assert metadata["runs"]["using"] == "composite"
    inputs = metadata["inputs"]
    for name, spec in inputs.items():
        assert spec.get("description") and "default" in spec, name
    seen_ids, order = set(), []
    for step in steps():
        assert step.get("name"), step
        if "run" in step:
            assert step["shell"] == "bash", step
            match = RUN_LINE.fullmatch(step["run"].strip())
            assert match, f"{step['name']}: {step['run']!r} is not one call of scripts/ci-action"
            order.append(match.group(1))
            for key, value in step.get("env", {}).items():
                (expression,) = EXPRESSION.findall(value)
                assert EXPRESSION.fullmatch(value), (key, value)
                scope, *rest = expression.split(".")
                if scope == "inputs":
                    assert rest[0] in inputs, (key, value)
                else:
                    assert scope == "steps" and rest[0] in seen_ids and rest[1] == "outputs"
        if "id" in step:
            seen_ids.add(step["id"])
    assert order == SUBCOMMANDS
    dispatch = re.search(r"^case \$\{1:-\} in\n\s+(.*?)\)", SCRIPT.read_text(), re.M).group(1)
    assert dispatch.split(" | ") == SUBCOMMANDS
    for name, output in metadata["outputs"].items():
        (expression,) = EXPRESSION.findall(output["value"])
        scope, step_id, outputs, _name = expression.split(".")
        assert (scope, outputs) == ("steps", "outputs") and step_id in seen_ids, name


def _reads(body, functions, aliases, seen):
    """The INGOT_ACTION_ variables shell code reads: its own, those of the script's variables it
    expands (project=${INGOT_ACTION_PROJECT:-.}) and those of the functions it calls."""
    found = set(re.findall(r"INGOT_ACTION_\w+", body))
    for alias, value in aliases.items():
        if alias not in seen and re.search(rf"\$\{{?{alias}\b", body):
            found |= _reads(value, functions, aliases, seen | {alias})
    for function, code in functions.items():
        called = rf"(?:^\s*|\$\(|\|\|\s*|&&\s*|;\s*|\|\s*|!\s*){function}\b"
        if function not in seen and re.search(called, body, re.M):
            found |= _reads(code, functions, aliases, seen | {function})
    return found


def script_reads():
    """{sub-command: the INGOT_ACTION_ variables it reads}, from scripts/ci-action's text."""
    text = SCRIPT.read_text()
    functions = dict(re.findall(r"^(\w+)\(\) \{\n(.*?)^\}", text, re.M | re.S))
    aliases = dict(re.findall(r"^(\w+)=(.*)$", text, re.M))
    return {name: _reads(functions[name], functions, aliases, {name}) for name in SUBCOMMANDS}


@pytest.mark.fast
def test_each_step_passes_exactly_the_variables_its_sub_command_reads():
    """A variable the step does not pass would take the script's default instead of the input
    (which the end-to-end run, on the defaults, would not notice); one it passes and the
    sub-command does not read is an input that does nothing there."""
    reads = script_reads()
    assert reads["build"] >= {"INGOT_ACTION_PROJECT", "INGOT_ACTION_TARGETS"}, reads  # (the scan)
    used_inputs = set()
    for step in steps():
        if "run" in step:
            subcommand = RUN_LINE.fullmatch(step["run"].strip()).group(1)
            assert set(step.get("env", {})) == reads[subcommand], subcommand
        text = yaml.safe_dump(step)
        used_inputs |= set(re.findall(r"inputs\.([\w-]+)", text))
    assert used_inputs == set(action()["inputs"]), "an input no step uses"
    header = SCRIPT.read_text().split("\nset -euo pipefail")[0]
    for variable in set().union(*reads.values()):
        assert f"#   {variable} " in header, f"{variable} is not described in the script's header"


@pytest.mark.fast
def test_the_actions_are_pinned_as_the_release_workflow_pins_them():
    release = {
        match.group(1): match.groups()
        for match in map(PINNED.match, RELEASE.read_text().splitlines())
        if match
    }
    for path in (ACTION, *EXAMPLE_WORKFLOWS):
        for line in path.read_text().splitlines():
            if "uses:" not in line or "<owner>/ingot@<commit>" in line:
                continue
            match = PINNED.match(line)
            assert match, f"{path.name}: {line.strip()} is not pinned by a full commit SHA"
            assert match.groups() == release[match.group(1)], f"{path.name}: {line.strip()}"
    uses = {step["uses"].split("@")[0] for step in steps() if "uses" in step}
    assert uses == {"actions/setup-python", "actions/upload-artifact"}


@pytest.mark.fast
def test_the_default_ingot_is_this_release_and_the_defaults_are_the_scripts():
    inputs = action()["inputs"]
    assert inputs["ingot"]["default"] == f"pyingot=={cargo_version()}"
    text = SCRIPT.read_text()
    for name, variable in [
        ("project", "INGOT_ACTION_PROJECT"),
        ("python-version", "INGOT_ACTION_PYTHON_VERSION"),
        ("targets", "INGOT_ACTION_TARGETS"),
        ("output-directory", "INGOT_ACTION_OUTPUT_DIRECTORY"),
    ]:
        assert f"${{{variable}:-{inputs[name]['default']}}}" in text, name


@pytest.mark.fast
def test_the_docs_show_the_example_workflows_as_they_are_linted():
    page = (ROOT / "docs" / "ci.md").read_text()
    for path in EXAMPLE_WORKFLOWS:
        assert f"```yaml\n{path.read_text()}```" in page, f"docs/ci.md does not show {path.name}"
        yaml.safe_load(path.read_text())
    # (scripts/test replaces it by `./` for actionlint, by a placeholder commit for zizmor)
    assert EXAMPLE_WORKFLOWS[0].read_text().count("uses: <owner>/ingot@<commit>") == 1


# --- the script's refusals (no build) ---------------------------------------------------------


def ci_action(subcommand, cwd, **variables):
    environment = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    environment.update(variables)
    return subprocess.run(
        ["bash", str(SCRIPT), subcommand],
        capture_output=True, text=True, timeout=60, cwd=cwd, env=environment,
    )  # fmt: skip


@pytest.mark.fast
@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"INGOT_ACTION_PYTHON_VERSION": "3.11"},
            "an aarch64 executable needs python-version 3.13",
        ),
        ({"INGOT_ACTION_PYTHON_VERSION": "3.12"}, "ingot's runtimes are for 3.11 and 3.13"),
        ({"INGOT_ACTION_TARGETS": "x86_64, riscv64"}, "target 'riscv64'"),
        ({"INGOT_ACTION_TARGETS": " , "}, "no target given"),
        ({"INGOT_ACTION_RUN": "yes"}, "run: 'true' or 'false'"),
    ],
)
def test_the_check_step_refuses_what_ingot_cannot_build(variables, message, tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("the check refuses any machine but x86-64 first")
    done = ci_action("check", tmp_path, **variables)
    assert done.returncode == 1 and message in done.stderr, done.stderr


@pytest.mark.fast
def test_the_check_step_takes_the_defaults_and_ingots_other_names(tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("the check refuses any machine but x86-64 first")
    done = ci_action("check", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ingot builds . with Python 3.13 for: x86_64 aarch64\n"
    done = ci_action("check", tmp_path, INGOT_ACTION_TARGETS="arm64,amd64\naarch64")
    assert done.stdout.endswith("for: aarch64 x86_64\n"), done.stdout + done.stderr


@pytest.mark.fast
def test_the_run_step_fails_when_an_executable_fails_or_is_no_executable(tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("copies this machine's true and false as x86-64 executables")
    good, bad, text = tmp_path / "app-ok", tmp_path / "app-fails", tmp_path / "app.txt"
    shutil.copy(shutil.which("true"), good)
    shutil.copy(shutil.which("false"), bad)
    text.write_text("not an executable\n")
    done = ci_action("run", tmp_path, INGOT_ACTION_EXECUTABLES=f"{good}\n{bad}\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"== {good} (x86_64)\n== {bad} (x86_64)\n" == done.stdout
    assert f"error: {bad} exited with status 1" in done.stderr
    done = ci_action("run", tmp_path, INGOT_ACTION_EXECUTABLES=str(text))
    assert done.returncode == 1 and "no emulator known for unknown" in done.stderr, done.stderr
    done = ci_action("run", tmp_path, INGOT_ACTION_EXECUTABLES=str(bad), INGOT_ACTION_RUN="false")
    assert done.returncode == 0 and done.stdout == "run is false: nothing runs\n", done.stderr


# --- the action's steps, run here --------------------------------------------------------------


def find_python(version):
    """A Python ``version`` of this machine, as scripts/test finds one (pyenv's, else PATH's)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [
        str(path) for path in sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))
    ]
    candidates.append(shutil.which(f"python{version}"))
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "import sys"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="module")
def wheels():
    given = os.environ.get("INGOT_TEST_WHEELS")
    require(given and Path(given).is_dir(), "INGOT_TEST_WHEELS names no folder of wheels")
    names = [path.name for path in Path(given).glob("*.whl")]
    for wanted in (
        r"pyingot-.*-cp313-.*_x86_64\.whl",
        r"pyingot_runtime_cp313-.*manylinux2014_x86_64\.whl",
        r"pyingot_runtime_cp313-.*manylinux2014_aarch64\.whl",
    ):
        require(
            any(re.fullmatch(wanted, name) for name in names),
            f"no {wanted} wheel in {given} (scripts/wheels makes them)",
        )
    return Path(given)


@pytest.fixture(scope="module")
def arm64_root():
    given = os.environ.get("INGOT_DEBIAN11_FOREIGN_ROOT")
    require(
        given and Path(given, "lib", "ld-linux-aarch64.so.1").exists(),
        "INGOT_DEBIAN11_FOREIGN_ROOT names no arm64 root (scripts/test unpacks one)",
    )
    return Path(given)


def evaluate(value, inputs, outputs):
    """A `${{ }}` value of the action: `inputs.NAME` or `steps.ID.outputs.NAME` (all it uses)."""

    def one(match):
        scope, *rest = match.group(1).split(".")
        if scope == "inputs":
            return inputs[rest[0]]
        assert scope == "steps" and rest[1] == "outputs", match.group(0)
        return outputs.get(rest[0], {}).get(rest[2], "")

    return EXPRESSION.sub(one, str(value))


def condition(text, inputs):
    """A step's `if:`: `inputs.NAME == 'literal'` or `!=` (all the action uses)."""
    match = re.fullmatch(r"inputs\.([\w-]+) (==|!=) '([^']*)'", text.strip())
    assert match, f"the test does not evaluate `if: {text}`"
    name, operator, literal = match.groups()
    return (inputs[name] == literal) == (operator == "==")


def read_outputs(path):
    """A step's $GITHUB_OUTPUT: `name=value` and `name<<DELIMITER` lines."""
    found, lines = {}, path.read_text().splitlines() if path.exists() else []
    while lines:
        line = lines.pop(0)
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value = []
            while (line := lines.pop(0)) != delimiter:
                value.append(line)
            found[name] = "\n".join(value)
        else:
            name, _, found[name] = line.partition("=")
    return found


#: (process limit, timeout in seconds) of each step.
LIMITS = {
    "check": (8, 60),
    "install": (32, 600),
    "qemu": (8, 60),
    "build": (64, 1800),
    "run": (16, 600),
}


def test_the_actions_steps_build_run_and_hand_over_both_executables(wheels, arm64_root, tmp_path):
    from ingot.elf import elf_machine

    require(os.uname().machine == "x86_64", "the action runs on x86-64 runners")
    qemu = shutil.which("qemu-aarch64-static")
    require(qemu is not None, "no qemu-aarch64-static (apt-get install qemu-user-static)")
    metadata = action()
    inputs = {name: str(spec["default"]) for name, spec in metadata["inputs"].items()}
    inputs["find-links"] = str(wheels)
    python = find_python(inputs["python-version"])
    require(python is not None, f"no Python {inputs['python-version']} here")
    # The user's repository, checked out: examples/hello (project "." by default).
    workspace = tmp_path / "hello"
    shutil.copytree(EXAMPLES / "hello", workspace)
    cache = tmp_path / "ingot-cache"
    cache.mkdir(mode=0o700)
    runner = {
        "PATH": f"{Path(qemu).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        # (the job's: a runner's libc6-arm64-cross is /usr/aarch64-linux-gnu, the default)
        "QEMU_LD_PREFIX": str(arm64_root),
        # A store and a cache of this test's: the runtimes install from the wheels.
        "INGOT_RUNTIMES": str(tmp_path / "runtimes"),
        "INGOT_CACHE_DIR": str(cache),
    }
    # pip's configuration of this machine (its certificates, proxies, folders of wheels).
    runner.update(
        (k, v) for k, v in os.environ.items() if k.startswith("PIP_") or "proxy" in k.lower()
    )
    (tmp_path / "runner-temp").mkdir()
    outputs, logs, uploaded, seconds = {}, {}, None, {}
    for index, step in enumerate(metadata["runs"]["steps"]):
        if "if" in step and not condition(step["if"], inputs):
            continue
        uses = step.get("uses", "").split("@")[0]
        if uses == "actions/setup-python":
            assert evaluate(step["with"]["python-version"], inputs, outputs) == "3.13"
            outputs[step["id"]] = {"python-path": python}
            continue
        if uses == "actions/upload-artifact":
            uploaded = evaluate(step["with"]["path"], inputs, outputs).splitlines()
            assert step["with"]["if-no-files-found"] == "error"
            assert evaluate(step["with"]["name"], inputs, outputs) == "executables"
            continue
        subcommand = RUN_LINE.fullmatch(step["run"].strip()).group(1)
        environment = dict(runner, GITHUB_OUTPUT=str(tmp_path / f"output-{index}"))
        environment.update(
            (key, evaluate(value, inputs, outputs)) for key, value in step["env"].items()
        )
        if subcommand == "install":
            environment["PIP_NO_INDEX"] = "1"  # ingot from the wheels made here, not an index
        max_processes, timeout = LIMITS[subcommand]
        started = time.monotonic()
        result = proclimit.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            max_processes=max_processes, timeout=timeout, env=environment, cwd=workspace,
        )  # fmt: skip
        seconds[subcommand] = time.monotonic() - started
        log = result.stdout + result.stderr
        assert not result.timed_out and result.limit_hit == 0, (subcommand, log)
        assert result.returncode == 0, (subcommand, log)
        logs[subcommand] = result
        if "id" in step:
            outputs[step["id"]] = read_outputs(Path(environment["GITHUB_OUTPUT"]))
    # (pytest -s shows it: what each step took here, for docs/ci.md)
    print("\n" + ", ".join(f"{name} {value:.0f} s" for name, value in seconds.items()))

    assert logs["check"].stdout == "ingot builds . with Python 3.13 for: x86_64 aarch64\n"
    assert f"ingot {cargo_version()} " in logs["install"].stdout, logs["install"].stdout
    assert "(Python 3.13." in logs["install"].stdout, logs["install"].stdout
    # qemu-user is there and the root is given: nothing installed.
    assert logs["qemu"].stdout == f"qemu-user: {qemu}\n", logs["qemu"].stdout
    build_log = logs["build"].stdout + logs["build"].stderr
    for target in ("x86_64", "aarch64"):
        assert f"installing the runtime for Python 3.13 ({target})" in build_log, build_log
    assert build_log.count("runs on Linux with glibc 2.17 or later") == 2, build_log

    built = outputs["build"]
    dist = workspace / "dist"
    assert built["executables"].splitlines() == [
        str(dist / "hello-x86_64"),
        str(dist / "hello-aarch64"),
    ]
    for target in ("x86_64", "aarch64"):
        path = Path(built[target])
        assert path == dist / f"hello-{target}" and elf_machine(path) == target, path
        assert path.stat().st_mode & stat.S_IXUSR
    ran = logs["run"].stdout.splitlines()
    assert ran[0] == f"== {dist / 'hello-x86_64'} (x86_64)", ran
    assert ran[1].startswith("Hello from memory! (hello 1.0.0 from "), ran
    assert ran[2] == f"== {dist / 'hello-aarch64'} (aarch64, under qemu-aarch64-static)", ran
    assert ran[3].startswith("Hello from memory! (hello 1.0.0 from "), ran
    assert len(ran) == 4 and logs["run"].stderr == "", logs["run"]

    # What upload-artifact would be given, and what the action hands the workflow.
    assert uploaded == built["executables"].splitlines()
    assert all(Path(path).is_file() for path in uploaded)
    handed = {
        name: evaluate(output["value"], inputs, outputs)
        for name, output in metadata["outputs"].items()
    }
    assert handed["executables"] == built["executables"]
    assert Path(handed["ingot"]) == tmp_path / "runner-temp" / "ingot-venv" / "bin" / "ingot"
    assert Path(handed["ingot"]).is_file()
