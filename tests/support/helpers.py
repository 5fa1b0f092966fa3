"""Helpers the tests share: archives built with the real writer, interpreters to run them in,
processes run and traced. Imported by name (tests/conftest.py puts tests/support on sys.path);
``ingot`` is imported where it is used, so that tests of the sources alone run without a build."""

import contextlib
import importlib
import importlib.util
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class ArchiveBuilder:
    """Builds a small archive from module sources and files, compiled with this interpreter."""

    def __init__(self, python_version=None, magic=None):
        import ingot

        self.writer = ingot.ArchiveWriter(
            bytecode_magic=magic or importlib.util.MAGIC_NUMBER,
            python_version=python_version or sys.version_info[:2],
        )

    def module(self, name, source, *, package=False, levels=(0,), with_source=True):
        source = textwrap.dedent(source)
        relative = name.replace(".", "/") + ("/__init__.py" if package else ".py")
        bytecode = {
            level: marshal.dumps(
                compile(source, relative, "exec", dont_inherit=True, optimize=level)
            )
            for level in levels
        }
        self.writer.add_module(
            name,
            source=source.encode() if with_source else None,
            bytecode=bytecode or None,
            is_package=package,
        )
        return self

    def package(self, name, source="", **options):
        return self.module(name, source, package=True, **options)

    def namespace(self, name):
        self.writer.add_namespace_package(name)
        return self

    def data(self, path, content):
        self.writer.add_data_file(path, content if isinstance(content, bytes) else content.encode())
        return self

    def dist_info(self, path, content):
        self.writer.add_dist_info_file(path, textwrap.dedent(content).encode())
        return self

    def write(self, path):
        self.writer.write(str(path))
        return path


def _set_environment(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


@contextlib.contextmanager
def environment(name, value):
    """``os.environ[name] = value`` (unset for None) for the ``with`` block, restored after."""
    previous = os.environ.get(name)
    _set_environment(name, value)
    try:
        yield
    finally:
        _set_environment(name, previous)


#: The store of runtimes the test command made (scripts/test), for the tests that build with one
#: (tests/test_old_system.py). Every other test sees an empty store: no build of theirs picks a
#: runtime by default (ingot build uses its Python version's runtime when there is one).
RUNTIMES = os.environ.get("INGOT_RUNTIMES")


def needed_by_stdlib_module(name):
    """The DT_NEEDED names of one of this interpreter's stdlib extension modules (empty for a
    runtime's, which link OpenSSL, SQLite, ... statically)."""
    import ingot

    module = importlib.import_module(name)
    with open(module.__file__, "rb") as file:
        return set(ingot.elf_dynamic(ingot.loadable_image(file.read()))["needed"])


def interpreters():
    """(version, python) pairs to run cross-version tests in: each a Python with ingot installed.

    `INGOT_TEST_PYTHONS` lists them (os.pathsep-separated); the running interpreter is always one.
    With `INGOT_REQUIRE_PYTHONS` set (as CI does), each listed version must be present.
    """
    found = {f"{sys.version_info.major}.{sys.version_info.minor}": sys.executable}
    for python in filter(None, os.environ.get("INGOT_TEST_PYTHONS", "").split(os.pathsep)):
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        found[version] = python
    return found


def python_for(version):
    pythons = interpreters()
    if version not in pythons:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(f"Python {version} with ingot installed is required (INGOT_TEST_PYTHONS)")
        pytest.skip(f"no Python {version} with ingot installed (set INGOT_TEST_PYTHONS)")
    return pythons[version]


def run_python(python, code, *args, env=None, check=True, cwd=None, timeout=120):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess."""
    result = subprocess.run(
        [python, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        )
    return result


def strace_calls(log):
    """The system calls in an `strace -f -o LOG` log, one line each: a call that another thread
    interrupted (`... <unfinished ...>`, later `<... name resumed> ...`) is joined back into one
    line, so that its arguments and its result are on the same line."""
    pending: dict[str, str] = {}
    calls = []
    for line in Path(log).read_text().splitlines():
        pid, _, rest = line.partition(" ")
        if line.endswith("<unfinished ...>"):
            pending[pid] = line[: -len("<unfinished ...>")].rstrip()
        elif rest.lstrip().startswith("<... ") and " resumed>" in rest:
            calls.append(pending.pop(pid, line) + rest.split(" resumed>", 1)[1])
        else:
            calls.append(line)
    return calls + list(pending.values())


# Runs an archive's launch config with the importer, as the launcher would: no site-packages
# (-I -S), so the application and its dependencies can only come from the archive.
RUNNER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import ingot, importlib, json, runpy
    sys.path.pop(0)
    finder = ingot.install(sys.argv[2])
    config = json.loads(finder._read("__ingot__/launch.json"))
    run = config["run"]
    sys.argv = [sys.argv[2], *sys.argv[3:]]
    if run["kind"] == "function":
        sys.exit(getattr(importlib.import_module(run["module"]), run["function"])())
    runpy.run_module(run["module"], run_name="__main__", alter_sys=True)
""")


def run_archive(archive, *args):
    import ingot

    ingot_parent = str(Path(ingot.__file__).resolve().parent.parent)
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", RUNNER, ingot_parent, str(archive), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_project(root: Path, body: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(body))
    return root


def plan(source, archive_only=False, **overrides):
    """The plan ingot build makes of ``source`` with ``overrides`` as options."""
    from ingot.build.resolve.inputs import plan_source
    from ingot.build.resolve.settings import Request, Settings

    return plan_source(
        Request(source=str(source), settings=Settings(**overrides), archive_only=archive_only)
    )


def pip_build(tmp_path, *args, env=None, check=True):
    """`ingot build ...` in a subprocess, skipping the test when pip cannot reach PyPI."""
    run = subprocess.run(
        [sys.executable, "-m", "ingot", "build", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env=env,
    )
    if (
        run.returncode != 0
        and "pip could not install" in run.stderr
        and ("NewConnectionError" in run.stderr or "No matching distribution" in run.stderr)
    ):
        pytest.skip(f"pip could not reach PyPI: {run.stderr[-300:]}")
    if check:
        assert run.returncode == 0, run.stderr
    return run


def real_launcher():
    """The launcher the tests build with: $INGOT_LAUNCHER, else cargo's release build."""
    for candidate in (os.environ.get("INGOT_LAUNCHER"), ROOT / "target/release/ingot-launcher"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def dead_pid():
    """The pid of a process that has exited (a child run to its end), as text."""
    return subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
