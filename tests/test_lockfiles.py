"""Lock files (ingot.build.resolve.lockfile): a project's pylock.toml (PEP 751), else its uv.lock
(through `uv export`), else a requirements file with hashes gives the exact files a build
installs, their hashes checked and nothing resolved. The locks are written by the real uv and
the real pip from PyPI; the project declares `six>=1.15`, which pip alone would resolve to the
newest six (1.17.0, 2024), and the locks pin 1.16.0 (2021), which the built executable must
carry. A tampered hash, a lock without a wheel for the target or for its Python stops the
build with an error naming the lock and the entry; a changed lock misses the build cache."""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ingot.build.resolve.environment import snapshot
from ingot.build.resolve.lockfile import read_lock
from ingot.build.resolve.target import Target
from ingot.errors import BuildError
from ingot.inspection import describe
from ingot.machine import machine_named

import proclimit
from helpers import write_project

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

#: The locked release, and the date the locks are made as of (six 1.17.0 came in Dec 2024). The
#: date caps the project's build requirements too: setuptools of mid-2024 builds on Python 3.13;
#: that of 2022 imports `pkgutil.ImpImporter`, gone since 3.12.
LOCKED, BEFORE = "1.16.0", "2024-06-01T00:00:00Z"

PYPROJECT = """\
[project]
name = "sixapp"
version = "0.1"
requires-python = ">=3.10"
dependencies = ["six>=1.15"]
[project.scripts]
sixapp = "sixapp:main"
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
"""

APP = 'import six\ndef main():\n    print("six", six.__version__)\n'


def _unavailable(what):
    """Skips the test for want of ``what``; fails it under INGOT_REQUIRE_PYTHONS (CI)."""
    if os.environ.get("INGOT_REQUIRE_PYTHONS"):
        pytest.fail(f"{what} (INGOT_REQUIRE_PYTHONS is set)")
    pytest.skip(what)


@pytest.fixture(scope="module")
def uv():
    """The uv of the test's environment (scripts/test installs it, pinned, from PyPI)."""
    found = shutil.which(
        "uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    if found is None:
        _unavailable(f"no uv beside {sys.executable} or on PATH (pip install uv)")
    return found


@pytest.fixture(scope="module")
def pip_lock():
    """This Python's pip, if it has `pip lock` (pip 25.1 and later)."""
    run = subprocess.run(
        [sys.executable, "-m", "pip", "lock", "--help"], capture_output=True, text=True
    )
    if run.returncode != 0:
        _unavailable(f"{sys.executable}'s pip has no `pip lock` (pip 25.1 or later)")
    return [sys.executable, "-m", "pip", "lock", "--disable-pip-version-check"]


def _tool(command, cwd):
    """Runs a locking tool (it reads PyPI); skips the test (fails it in CI) when PyPI is out of
    reach."""
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    if run.returncode != 0 and re.search(r"(?i)connect|network|resolve host|timed out", run.stderr):
        _unavailable(f"{command[0]} could not reach PyPI: {run.stderr[-300:]}")
    assert run.returncode == 0, run.stderr
    return run


def _project(root):
    write_project(root, PYPROJECT)
    (root / "sixapp").mkdir()
    (root / "sixapp" / "__init__.py").write_text(APP)
    return root


def _with_uv_on_path():
    return {**os.environ, "PATH": f"{Path(_uv_dir())}{os.pathsep}{os.environ['PATH']}"}


def _uv_dir():
    found = shutil.which(
        "uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    assert found is not None
    return Path(found).parent


def _build(project, out, *options, env=None, check=True):
    command = [sys.executable, "-m", "ingot", "build", str(project), "--python", "local"]
    command += ["-o", str(out), *options]
    run = subprocess.run(command, capture_output=True, text=True, cwd=project, timeout=600, env=env)
    if check:
        assert run.returncode == 0, run.stderr
    return run


def _carried(out):
    """The distributions (name, version) the executable ``out`` carries, as its bill of
    materials lists them (``ingot inspect --sbom``), checked against its listing's
    ``.dist-info`` entries."""
    run = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", "--sbom", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    listed = sorted(
        (component["name"], component["version"])
        for component in json.loads(run.stdout)["components"]
        if component["bom-ref"].startswith("pypi:")
    )
    names = {entry["name"].split("/")[0] for entry in describe(out)["entries"]}
    entries = sorted(
        tuple(name[: -len(".dist-info")].rsplit("-", 1))
        for name in names
        if name.endswith(".dist-info")
    )
    assert listed == entries
    return listed


def _runs_locked(out):
    run = proclimit.run([str(out)], max_processes=8, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"six {LOCKED}"


@pytest.fixture(scope="module")
def uv_project(tmp_path_factory, uv):
    """The project locked by `uv lock` (uv.lock: six 1.16.0)."""
    root = _project(tmp_path_factory.mktemp("uvlock") / "sixapp")
    _tool([uv, "lock", "--exclude-newer", BEFORE], root)
    assert f'name = "six"\nversion = "{LOCKED}"' in (root / "uv.lock").read_text()
    return root


@pytest.fixture(scope="module")
def pylock_project(tmp_path_factory, pip_lock):
    """The project locked by `pip lock` (pylock.toml: six 1.16.0, and the project itself)."""
    root = _project(tmp_path_factory.mktemp("pylock") / "sixapp")
    _tool([*pip_lock, "--uploaded-prior-to", BEFORE, "-o", "pylock.toml", "."], root)
    assert f'name = "six"\nversion = "{LOCKED}"' in (root / "pylock.toml").read_text()
    return root


def test_a_uv_project_builds_its_locked_versions(uv_project, tmp_path, launcher_here):
    out = tmp_path / "app"
    run = _build(uv_project, out, env=_with_uv_on_path())
    assert "dependencies: exactly the files of uv.lock, their hashes checked" in run.stderr
    assert f"of {uv_project / 'uv.lock'}" in run.stderr
    assert _carried(out) == [("six", LOCKED), ("sixapp", "0.1")]
    _runs_locked(out)


def test_a_pylock_project_builds_its_locked_versions(pylock_project, tmp_path, launcher_here):
    out = tmp_path / "app"
    run = _build(pylock_project, out)
    assert "dependencies: exactly the files of pylock.toml, their hashes checked" in run.stderr
    # (the project's own entry, a directory, is the project ingot installs from its directory)
    assert _carried(out) == [("six", LOCKED), ("sixapp", "0.1")]
    _runs_locked(out)


def test_pylock_comes_before_uv_lock(uv_project, pylock_project, tmp_path):
    both = shutil.copytree(pylock_project, tmp_path / "both")
    shutil.copy(uv_project / "uv.lock", both / "uv.lock")
    # (uv is not needed: the pylock.toml is read, the uv.lock left aside, and said)
    run = _build(both, tmp_path / "app.ingot", "--archive-only")
    assert "(uv.lock left aside: pylock.toml comes first)" in run.stderr
    assert _carried(tmp_path / "app.ingot") == [("six", LOCKED), ("sixapp", "0.1")]


def test_a_uv_lock_without_uv_says_so(uv_project, tmp_path):
    if shutil.which("uv", path="/usr/bin:/bin"):
        pytest.skip("uv is installed in /usr/bin or /bin")
    run = _build(
        uv_project,
        tmp_path / "app.ingot",
        "--archive-only",
        env={**os.environ, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert run.returncode != 0
    assert f"error: {uv_project / 'uv.lock'}: reading a uv.lock takes uv, which is not on PATH" in (
        run.stderr
    )
    assert "hint: install it (pip install uv)" in run.stderr


def _deps_dirs(cache):
    return sorted(
        path.name for path in (cache / "build" / "deps").iterdir() if "." not in path.name
    )


def test_a_changed_lock_rebuilds(pylock_project, tmp_path, pip_lock, monkeypatch):
    project = shutil.copytree(pylock_project, tmp_path / "sixapp")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("INGOT_CACHE_DIR", str(cache))
    out = tmp_path / "app.ingot"
    first = _build(project, out, "--archive-only")
    assert f"pip: installing the 1 file of {project / 'pylock.toml'}" in first.stderr
    keys = _deps_dirs(cache)
    assert len(keys) == 1
    again = _build(project, out, "--archive-only")
    assert "installed as on" in again.stderr and "from the build cache" in again.stderr
    assert _deps_dirs(cache) == keys
    # Locked again to another release: another key, installed anew, and carried.
    _tool([*pip_lock, "-o", "pylock.toml", "six==1.15.0"], project)
    changed = _build(project, out, "--archive-only")
    assert f"pip: installing the 1 file of {project / 'pylock.toml'}" in changed.stderr
    assert len(_deps_dirs(cache)) == 2
    assert _carried(out) == [("six", "1.15.0"), ("sixapp", "0.1")]


def _tamper(lock: Path):
    """Replaces six's wheel's sha256 in ``lock`` by another (its first hex digit changed)."""
    text = lock.read_text()
    found = re.search(r'sha256 = "([0-9a-f]{64})"', text)
    assert found, text
    digest = found[1]
    tampered = ("1" if digest[0] != "1" else "2") + digest[1:]
    lock.write_text(text.replace(digest, tampered))
    return digest, tampered


def test_a_tampered_hash_stops_the_build(pylock_project, tmp_path):
    project = shutil.copytree(pylock_project, tmp_path / "sixapp")
    digest, tampered = _tamper(project / "pylock.toml")
    out = tmp_path / "app.ingot"
    run = _build(project, out, "--archive-only", check=False)
    assert run.returncode != 0
    assert (
        f"error: {project / 'pylock.toml'}: a file pip downloaded does not have the hash the "
        "lock gives"
    ) in run.stderr
    assert tampered in run.stderr and digest in run.stderr  # (pip's Expected and Got)
    assert "hint: the file or the lock was changed since it was locked" in run.stderr
    assert not out.exists()


def test_a_tampered_uv_lock_stops_the_build(uv_project, tmp_path):
    project = shutil.copytree(uv_project, tmp_path / "sixapp")
    text = (project / "uv.lock").read_text()
    wheel = re.search(r'six-1\.16\.0-py2\.py3-none-any\.whl", hash = "sha256:([0-9a-f]{64})"', text)
    assert wheel, text
    (project / "uv.lock").write_text(text.replace(wheel[1], "0" * 64))
    run = _build(
        project, tmp_path / "app.ingot", "--archive-only", env=_with_uv_on_path(), check=False
    )
    assert run.returncode != 0
    assert (
        f"error: {project / 'uv.lock'}: a file pip downloaded does not have the hash" in run.stderr
    )


def test_a_lock_without_a_wheel_for_the_target_names_the_entry(pylock_project, tmp_path):
    # The real lock, its six entry's wheel renamed to one for another platform and Python.
    project = shutil.copytree(pylock_project, tmp_path / "sixapp")
    lock = project / "pylock.toml"
    other = f"six-{LOCKED}-cp27-cp27m-win32.whl"
    lock.write_text(lock.read_text().replace(f"six-{LOCKED}-py2.py3-none-any.whl", other))
    run = _build(project, tmp_path / "app.ingot", "--archive-only", check=False)
    assert run.returncode != 0
    assert re.search(
        rf"error: {re.escape(str(lock))}: package six {LOCKED} has no wheel for cp3\d+-\S+ "
        rf"\(its wheels: {re.escape(other)}\)",
        run.stderr,
    ), run.stderr
    assert "hint: lock a version with a wheel for CPython" in run.stderr


def test_a_lock_for_another_python_says_so(pylock_project, tmp_path):
    project = shutil.copytree(pylock_project, tmp_path / "sixapp")
    lock = project / "pylock.toml"
    lock.write_text('requires-python = "<3.10"\n' + lock.read_text())
    run = _build(project, tmp_path / "app.ingot", "--archive-only", check=False)
    assert run.returncode != 0
    assert (
        f"error: {lock}: the lock's requires-python '<3.10' does not cover Python "
        f"{'%d.%d.%d' % sys.version_info[:3]}, which the build is for"
    ) in run.stderr


def test_hashed_requirements_are_installed_in_hash_checking_mode(uv_project, uv, tmp_path):
    # A requirements file with hashes (uv export's), no lock file: pip's hash-checking mode,
    # and the project's `six>=1.15` is not resolved beside it.
    project = shutil.copytree(uv_project, tmp_path / "sixapp")
    _tool(
        [uv, "export", "--frozen", "--no-emit-project", "--format", "requirements.txt", "-o",
         "requirements.txt"],
        project,
    )  # fmt: skip
    (project / "uv.lock").unlink()
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '[tool.ingot]\nrequirements = "requirements.txt"\n'
    )
    out = tmp_path / "app.ingot"
    run = _build(project, out, "--archive-only")
    assert "dependencies: " in run.stderr and "(its hashes checked)" in run.stderr
    assert _carried(out) == [("six", LOCKED), ("sixapp", "0.1")]
    requirements = project / "requirements.txt"
    text = requirements.read_text()
    # (every hash of six's: pip takes a file that has any of them)
    tampered_text = re.sub(r"--hash=sha256:[0-9a-f]{64}", "--hash=sha256:" + "0" * 64, text)
    assert tampered_text != text, text
    requirements.write_text(tampered_text)
    tampered = _build(project, out, "--archive-only", check=False)
    assert tampered.returncode != 0
    assert "does not have the hash the lock gives" in tampered.stderr


# --- selecting for the target (no build: the lock read for a runtime's target) ---------------


MARKED = """\
[project]
name = "marked"
version = "0.1"
requires-python = ">=3.10"
dependencies = ["six==1.16.0; platform_machine == 'aarch64'", "markupsafe==2.1.5"]
"""


@pytest.fixture(scope="module")
def marked_lock(tmp_path_factory, uv):
    """A uv.lock (universal: every platform) of a dependency for aarch64 only and one with
    binary wheels for many platforms."""
    root = write_project(tmp_path_factory.mktemp("marked") / "marked", MARKED)
    _tool([uv, "lock", "--exclude-newer", "2024-06-01T00:00:00Z"], root)
    return root / "uv.lock"


def _runtime_target(machine):
    return Target(
        python="3.11",
        launcher=None,
        runtime=f"cpython-3.11.7-{machine}",
        platforms=machine_named(machine).wheel_platforms((2, 17)),
        newer_platforms=(f"manylinux_2_28_{machine}",),
        machine=machine,
    )


def test_a_lock_is_read_for_the_targets_architecture_and_glibc(marked_lock):
    environment = snapshot()
    environment.variables["PATH"] = f"{_uv_dir()}{os.pathsep}{environment.get('PATH', '')}"
    chosen = {}
    for machine in ("x86_64", "aarch64"):
        locked = read_lock(marked_lock, marked_lock.parent, _runtime_target(machine), environment)
        chosen[machine] = sorted(file.filename for file in locked.files)
        assert all(file.hashes and file.hashes[0].startswith("sha256:") for file in locked.files)
    # markupsafe's CPython 3.11 wheel for glibc 2.17 of each architecture; six only on aarch64.
    assert chosen == {
        "x86_64": ["markupsafe-2.1.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"],
        "aarch64": [
            "markupsafe-2.1.5-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "six-1.16.0-py2.py3-none-any.whl",
        ],
    }


def test_a_lock_is_read_for_the_targets_python(marked_lock):
    environment = snapshot()
    environment.variables["PATH"] = f"{_uv_dir()}{os.pathsep}{environment.get('PATH', '')}"
    target = dataclasses.replace(
        _runtime_target("x86_64"), python="3.14", runtime="cpython-3.14.0-x86_64"
    )
    # markupsafe 2.1.5 (February 2024) has no wheel for CPython 3.14, only its sdist.
    with pytest.raises(BuildError) as raised:
        read_lock(marked_lock, marked_lock.parent, target, environment)
    message = str(raised.value)
    assert message.startswith(f"{marked_lock} (exported by uv): package markupsafe 2.1.5 has no "
                              "wheel for cp314-manylinux_2_17_x86_64 (its wheels: ")  # fmt: skip
    assert "MarkupSafe-2.1.5.tar.gz, which ingot does not build" in message
    assert json.dumps(raised.value.hint).count("wheels only") == 1


def test_a_read_lock_goes_to_a_build_under_a_runtime(marked_lock):
    # (the spec's JSON, which the runtime's interpreter reads, carries the files)
    from ingot.build.resolve.spec import Spec

    from helpers import plan

    environment = snapshot()
    environment.variables["PATH"] = f"{_uv_dir()}{os.pathsep}{environment.get('PATH', '')}"
    target = _runtime_target("aarch64")
    locked = read_lock(marked_lock, marked_lock.parent, target, environment)
    spec = Spec(plan=plan(marked_lock.parent, module="marked"), target=target, locked=locked)
    assert Spec.from_json(spec.to_json()).locked == locked
